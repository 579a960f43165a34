#!/usr/bin/env node
// Runs the TypeScript entrypoint of the mirrors command through tsx.
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const require = createRequire(import.meta.url)
const tsx = join(dirname(require.resolve("tsx/package.json")), "dist", "cli.mjs")
const child = spawn(process.execPath, [tsx, join(here, "..", "src", "main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit"
})
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => child.kill(s))
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
