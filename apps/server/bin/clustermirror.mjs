#!/usr/bin/env node
// Runs the TypeScript entrypoint in this process: tsx's ESM loader is registered here and the server's
// main module imported, so the PID an operator sees is the server's and every signal reaches it.
import { register } from "tsx/esm/api"

register()
await import(new URL("../src/main.ts", import.meta.url).href)
