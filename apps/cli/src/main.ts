/**
 * `clustermirror-mirrors --bootstrap-server <host:port>
 *   --create|--start|--stop|--pause|--resume|--recover|--list|--describe|--delete ...`
 *
 * The only entrypoint of the CLI app: parses the command line, runs the mirrors command against the
 * destination cluster and exits with its code (0 done, 1 refused or failed, 2 bad usage).
 */
import * as MirrorsCommand from "./MirrorsCommand.js"

const main = async (): Promise<number> => {
  const argv = process.argv.slice(2)
  if (argv.length === 0 || argv.includes("--help")) {
    process.stdout.write(`${MirrorsCommand.usage}\n`)
    return argv.length === 0 ? 2 : 0
  }
  let command: MirrorsCommand.Command
  try {
    command = MirrorsCommand.parse(argv)
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${MirrorsCommand.usage}\n`)
    return 2
  }
  return MirrorsCommand.run(command, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`)
  })
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exitCode = 1
  }
)
