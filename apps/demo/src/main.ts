/**
 * `demo [--records N] [--rate R] [--data-dir DIR] [--verbose]`
 *
 * The only entrypoint of the demo app: parses the command line, runs the demo (`Demo.run`) and exits
 * 0 after printing `verified`, 1 when an expectation failed, 2 on bad usage, 130 when interrupted.
 * SIGINT interrupts the run, which then closes both clusters; a second SIGINT exits at once.
 */
import * as Demo from "./Demo.js"

const main = async (): Promise<number> => {
  const argv = process.argv.slice(2)
  if (argv.includes("--help")) {
    process.stdout.write(`${Demo.usage}\n`)
    return 0
  }
  let options: Demo.Options
  try {
    options = Demo.parseArgs(argv)
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${Demo.usage}\n`)
    return 2
  }
  const interrupt = new AbortController()
  let interruptedAt = 0
  process.on("SIGINT", () => {
    // A wrapper (tsx, pnpm) may pass on the terminal's Ctrl-C once more right after it arrived.
    if (interrupt.signal.aborted) {
      if (Date.now() - interruptedAt > 1_000) process.exit(130)
      return
    }
    interruptedAt = Date.now()
    process.stderr.write("interrupted: closing the clusters (Ctrl-C again to quit at once)\n")
    interrupt.abort()
  })
  try {
    await Demo.run(options, {
      out: { isTTY: process.stdout.isTTY === true, write: (text) => process.stdout.write(text) },
      err: (line) => process.stderr.write(`${line}\n`),
      signal: interrupt.signal
    })
    process.stdout.write("verified\n")
    return 0
  } catch (e) {
    if (e instanceof Demo.Interrupted) return 130
    const why = e instanceof Demo.DemoFailure ? e.message : e instanceof Error ? (e.stack ?? e.message) : String(e)
    process.stderr.write(`demo failed: ${why}\n`)
    return 1
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exit(1)
  }
)
