/**
 * Child-process plumbing shared by the peers: a registry that SIGKILLs every live peer when the test
 * process exits (a crashed worker must not leave JVMs holding ports), bounded output capture, waiting
 * for exit with a timeout, and running a command to completion.
 *
 * It only ever signals processes it spawned itself.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { rmSync } from "node:fs"

const live = new Set<ChildProcess>()
const scratchDirs = new Set<string>()
let exitHookInstalled = false

const installExitHook = (): void => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // Runs on a normal exit (including a test worker ending after a timed-out hook), not on a fatal signal.
  process.once("exit", () => {
    for (const c of live) c.kill("SIGKILL")
    for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true })
  })
}

/** Tracks `child` until it exits; it is SIGKILLed if the test process exits first. */
export const track = (child: ChildProcess): void => {
  installExitHook()
  live.add(child)
  child.once("exit", () => live.delete(child))
}

/** Removes the temp dir `dir` when the test process exits (a no-op if it was already removed). */
export const trackDir = (dir: string): void => {
  installExitHook()
  scratchDirs.add(dir)
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export const hasExited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null

/** Resolves with the exit status, or `undefined` if the process is still running after `timeoutMs`. */
export const waitForExit = (child: ChildProcess, timeoutMs: number): Promise<ExitInfo | undefined> => {
  if (hasExited(child)) return Promise.resolve({ code: child.exitCode, signal: child.signalCode })
  return new Promise((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer)
      resolve({ code, signal })
    }
    const timer = setTimeout(() => {
      child.off("exit", onExit)
      resolve(undefined)
    }, timeoutMs)
    child.once("exit", onExit)
  })
}

/**
 * The last `limit` characters of a process's stdout and stderr, interleaved as they arrive, plus a
 * callback per complete line (readiness markers are matched on lines, not on the truncated tail).
 */
export class OutputTail {
  private text = ""
  private partial = ""
  constructor(
    private readonly limit: number,
    private readonly onLine: (line: string) => void = () => {}
  ) {}

  push(chunk: Buffer): void {
    const s = chunk.toString("utf8")
    this.text = (this.text + s).slice(-this.limit)
    const lines = (this.partial + s).split("\n")
    this.partial = lines.pop() ?? ""
    if (this.partial.length > this.limit) this.partial = this.partial.slice(-this.limit)
    for (const line of lines) this.onLine(line)
  }

  attach(child: ChildProcess): void {
    child.stdout?.on("data", (c: Buffer) => this.push(c))
    child.stderr?.on("data", (c: Buffer) => this.push(c))
  }

  toString(): string {
    return this.text
  }
}

export interface RunOptions {
  /** Written to stdin, which is then closed; without it stdin is closed at once. */
  readonly input?: string | Buffer
  readonly timeoutMs: number
  readonly env?: NodeJS.ProcessEnv
  readonly cwd?: string
}

export interface RunResult {
  /** The exit code, or `null` when the process died from a signal (including the timeout's SIGKILL). */
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  /** Whether the process was killed because it ran past the timeout. */
  readonly timedOut: boolean
}

/** Runs `command` to completion; never rejects on a failing exit, only when it cannot be spawned. */
export const run = (command: string, args: ReadonlyArray<string>, opts: RunOptions): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: opts.env ?? process.env,
      ...(opts.cwd === undefined ? {} : { cwd: opts.cwd })
    })
    track(child)
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    child.stdout.on("data", (c: Buffer) => stdout.push(c))
    child.stderr.on("data", (c: Buffer) => stderr.push(c))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGKILL")
    }, opts.timeoutMs)
    child.once("error", (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.once("close", (code, signal) => {
      clearTimeout(timer)
      resolve({
        code,
        signal,
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
        timedOut
      })
    })
    // A tool that exits early (bad arguments) closes its stdin; its stderr says why, not the broken pipe.
    child.stdin.on("error", () => {})
    if (opts.input === undefined) child.stdin.end()
    else child.stdin.end(opts.input)
  })

export { cpuSeconds, peakRssMb, rssMb } from "../ProcStats.js"
