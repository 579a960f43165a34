/**
 * kcat (librdkafka's command-line client) as a test peer: runs `kcat` with the given arguments and
 * optional stdin, with a timeout. It is an independent client implementation, so records it reads back
 * are a check of the wire format, not of our own codecs.
 *
 * Arguments pass through unchanged; `-b <bootstrap>` is the caller's (or `forBootstrap`'s) business.
 */
import * as Process from "./internal/Process.js"
import { ToolError } from "./TestkitError.js"

export interface KcatOptions {
  /** Written to kcat's stdin in one go, then stdin is closed. */
  readonly input?: string | Buffer
  /** kcat is SIGKILLed after this long (default 180 s). */
  readonly timeoutMs?: number
}

export interface KcatResult {
  readonly stdout: string
  readonly stderr: string
}

const DEFAULT_TIMEOUT_MS = 180_000

/** Runs `kcat ...args`; rejects with a `ToolError` (quoting kcat's stderr) on a non-zero exit or timeout. */
export const kcat = async (args: ReadonlyArray<string>, opts: KcatOptions = {}): Promise<KcatResult> => {
  const result = await Process.run("kcat", args, {
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    ...(opts.input === undefined ? {} : { input: opts.input })
  }).catch((e: unknown) => {
    throw new ToolError({
      tool: "kcat",
      code: null,
      timedOut: false,
      stderr: "",
      message: `kcat failed to spawn (install it with apt-get install kcat): ${e instanceof Error ? e.message : String(e)}`
    })
  })
  if (result.code === 0) return { stdout: result.stdout, stderr: result.stderr }
  throw new ToolError({
    tool: "kcat",
    code: result.code,
    timedOut: result.timedOut,
    stderr: result.stderr,
    message: `kcat ${args.join(" ")} ${result.timedOut ? "timed out" : `exited with ${result.code ?? result.signal}`}:\n${result.stderr.slice(-4_000)}`
  })
}

/** A kcat bound to one cluster: `-b <bootstrap>` is prepended to every call. */
export const forBootstrap =
  (bootstrap: string) =>
  (args: ReadonlyArray<string>, opts?: KcatOptions): Promise<KcatResult> =>
    kcat(["-b", bootstrap, ...args], opts)

/** The earliest (`-2`) or latest (`-1`) offset of every partition of `topic` (`kcat -Q`), by partition; -1 unknown. */
export const partitionOffsets = async (
  bootstrap: string,
  topic: string,
  partitions: number,
  time: -1 | -2
): Promise<ReadonlyArray<number>> => {
  const { stdout } = await kcat([
    "-b",
    bootstrap,
    "-Q",
    ...Array.from({ length: partitions }, (_, p) => ["-t", `${topic}:${p}:${time}`]).flat()
  ])
  return parseQueriedOffsets(stdout, partitions)
}

/** The offsets of `kcat -Q` output lines (`<topic> [<partition>] offset <offset>`), by partition; -1 unknown. */
export const parseQueriedOffsets = (stdout: string, partitions: number): ReadonlyArray<number> => {
  const out = Array.from({ length: partitions }, () => -1)
  for (const m of stdout.matchAll(/^\S+ \[(\d+)\] offset (-?\d+)$/gm)) out[Number(m[1])] = Number(m[2])
  return out
}
