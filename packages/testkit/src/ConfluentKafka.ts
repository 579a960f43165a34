/**
 * confluent-kafka (Confluent's Python client, its wheel bundling librdkafka 2.16) as a test peer: runs a
 * Python script that imports `confluent_kafka`, with arguments and a timeout, and parses the JSON the
 * script prints as its last line. A far newer librdkafka than Debian's kcat (2.0), so it sends newer
 * request versions (Metadata v12, Produce v10+) and the quirks that come with them.
 *
 * The interpreter is `python3`, or `$PYTHON`; `scripts/install-peers.sh` installs the package with pip.
 */
import * as Process from "./internal/Process.js"
import { ToolError } from "./TestkitError.js"

/** The version `scripts/install-peers.sh` installs. */
export const VERSION = "2.16.1"

export interface RunOptions {
  /** The script is SIGKILLed after this long (default 180 s). */
  readonly timeoutMs?: number
}

export interface RunResult<A> {
  /** The last non-empty stdout line, parsed as JSON. */
  readonly result: A
  readonly stdout: string
  readonly stderr: string
}

const DEFAULT_TIMEOUT_MS = 180_000

const python = (): string => process.env["PYTHON"] ?? "python3"

const failure = (message: string, code: number | null, timedOut: boolean, stderr: string): ToolError =>
  new ToolError({ tool: "confluent-kafka", code, timedOut, stderr, message })

/**
 * Runs `script` (Python source) with `args` as `sys.argv[1:]`. Rejects with a `ToolError` quoting the
 * script's stderr on a non-zero exit, a timeout, or a last line that is not JSON.
 */
export const run = async <A = unknown>(
  script: string,
  args: ReadonlyArray<string> = [],
  opts: RunOptions = {}
): Promise<RunResult<A>> => {
  const result = await Process.run(python(), ["-c", script, ...args], {
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  }).catch((e: unknown) => {
    throw failure(`${python()} failed to spawn: ${e instanceof Error ? e.message : String(e)}`, null, false, "")
  })
  if (result.code !== 0)
    throw failure(
      `confluent-kafka script ${result.timedOut ? "timed out" : `exited with ${result.code ?? result.signal}`}` +
        ` (install it with pip install confluent-kafka==${VERSION}):\n${result.stderr.slice(-4_000)}`,
      result.code,
      result.timedOut,
      result.stderr
    )
  const last = result.stdout.trimEnd().split("\n").pop() ?? ""
  try {
    return { result: JSON.parse(last) as A, stdout: result.stdout, stderr: result.stderr }
  } catch {
    throw failure(
      `confluent-kafka script printed no JSON result:\n${result.stdout.slice(-4_000)}`,
      0,
      false,
      result.stderr
    )
  }
}

/** The `confluent_kafka` and librdkafka versions of the installed package, e.g. `["2.16.1", "2.16.0"]`. */
export const versions = async (): Promise<readonly [string, string]> => {
  const { result } = await run<[string, string]>(
    "import json, confluent_kafka as c\nprint(json.dumps([c.__version__, c.libversion()[0]]))",
    [],
    { timeoutMs: 60_000 }
  )
  return result
}
