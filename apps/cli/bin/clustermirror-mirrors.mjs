#!/usr/bin/env node
// Runs the TypeScript entrypoint of the mirrors command in this process: tsx's ESM loader is registered
// here and the command's main module imported, so signals reach the command itself.
import { register } from "tsx/esm/api"

register()
await import(new URL("../src/main.ts", import.meta.url).href)
