/**
 * One CreateTopics through Kafka's own Java Admin client with the retry on a controller mutation quota
 * violation off (`java/CreateTopicNoRetry.java`), so that a test sees THROTTLING_QUOTA_EXCEEDED as the
 * client's `ThrottlingQuotaExceededException` with its throttle time, where `kafka-topics` would retry
 * until the quota lets it through.
 *
 * It owns only the JVM it runs.
 */
import * as KafkaPeer from "./KafkaPeer.js"
import * as JavaClasses from "./internal/JavaClasses.js"
import * as Process from "./internal/Process.js"
import { ToolError } from "./TestkitError.js"

export const MAIN_CLASS = "CreateTopicNoRetry"

export interface CreateOptions {
  readonly bootstrap: string
  readonly clientId: string
  readonly topic: string
  readonly partitions: number
  readonly libs?: string
  readonly version?: string
}

/** What the Admin client reported: created, or the exception's class and its throttle time (-1 if none). */
export type Outcome =
  | { readonly _tag: "Created" }
  | { readonly _tag: "Failed"; readonly exception: string; readonly throttleTimeMs: number }

/** Parses the peer's one line of output. */
export const parse = (stdout: string): Outcome | undefined => {
  const line = stdout.trim()
  if (line === "created") return { _tag: "Created" }
  const m = /^error (\w+) (-?\d+)$/.exec(line)
  return m === null ? undefined : { _tag: "Failed", exception: m[1]!, throttleTimeMs: Number(m[2]) }
}

/** Creates the topic; rejects with a `ToolError` if the JVM fails or prints something else. */
export const create = async (opts: CreateOptions): Promise<Outcome> => {
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  const r = await Process.run(
    "java",
    [
      ...(await JavaClasses.javaArgs(libs, MAIN_CLASS)),
      opts.bootstrap,
      opts.clientId,
      opts.topic,
      String(opts.partitions)
    ],
    { timeoutMs: 120_000 }
  )
  const outcome = r.code === 0 ? parse(r.stdout) : undefined
  if (outcome === undefined)
    throw new ToolError({
      tool: "create topic (no retry)",
      code: r.code,
      timedOut: r.timedOut,
      stderr: r.stderr,
      message: `create topic ${opts.topic} ${r.timedOut ? "timed out" : `exited with ${r.code ?? r.signal}`}:\n${r.stdout}\n${r.stderr.slice(-4_000)}`
    })
  return outcome
}
