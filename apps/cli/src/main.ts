#!/usr/bin/env node
/**
 * `clustermirror-mirrors --bootstrap-server <host:port>
 *   --create|--start|--stop|--pause|--resume|--recover|--list|--describe|--delete ...`
 *
 * The CLI app's entrypoint: runs the mirrors command against the destination cluster and exits with its
 * code (0 done, 1 refused or failed, 2 bad usage). `clustermirror mirrors ...` runs the same command.
 */
import * as MirrorsCommand from "./MirrorsCommand.js"

MirrorsCommand.main(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`)
}).then(
  (code) => {
    process.exitCode = code
  },
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exitCode = 1
  }
)
