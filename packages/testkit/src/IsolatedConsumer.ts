/**
 * A one-shot consumer on Kafka's own Java client (`java/IsolatedConsumer.java`): it reads every partition
 * of a topic from the beginning up to the end offsets the cluster reports for an isolation level (the last
 * stable offset for `read_committed`, the high watermark for `read_uncommitted`), without a group, and
 * returns the records and those end offsets. A second, independent reader beside kcat for checking what a
 * read_committed consumer sees.
 *
 * It owns only the JVM it runs and never writes to the cluster.
 */
import * as KafkaPeer from "./KafkaPeer.js"
import * as JavaClasses from "./internal/JavaClasses.js"
import * as Process from "./internal/Process.js"
import { ToolError } from "./TestkitError.js"

export const MAIN_CLASS = "IsolatedConsumer"

export type IsolationLevel = "read_committed" | "read_uncommitted"

export interface ConsumeOptions {
  readonly bootstrap: string
  readonly topic: string
  readonly partitions: number
  readonly isolationLevel: IsolationLevel
  /** How long reading may take (default 60 s). */
  readonly timeoutMs?: number
  readonly libs?: string
  readonly version?: string
}

export interface ConsumedRecord {
  readonly partition: number
  readonly offset: number
  readonly value: string
}

export interface Consumed {
  /** By partition, then offset. */
  readonly records: ReadonlyArray<ConsumedRecord>
  /** The end offset per partition (index = partition) the consumer read up to. */
  readonly endOffsets: ReadonlyArray<number>
}

/** The values consumed, per partition (index = partition), each partition's sorted. */
export const sortedValuesByPartition = (c: Consumed, partitions: number): string[][] => {
  const out: string[][] = Array.from({ length: partitions }, () => [])
  for (const r of c.records) out[r.partition]!.push(r.value)
  return out.map((vs) => vs.sort())
}

const DEFAULT_TIMEOUT_MS = 60_000

/** Parses the consumer's output (`record <p> <offset> <value>` and `end <p> <offset>` lines). */
export const parse = (stdout: string, partitions: number): Consumed => {
  const records: ConsumedRecord[] = []
  const endOffsets: number[] = Array.from({ length: partitions }, () => -1)
  for (const line of stdout.split("\n")) {
    const record = /^record (\d+) (\d+) (.*)$/.exec(line)
    if (record !== null) {
      records.push({ partition: Number(record[1]), offset: Number(record[2]), value: record[3]! })
      continue
    }
    const end = /^end (\d+) (\d+)$/.exec(line)
    if (end !== null) endOffsets[Number(end[1])] = Number(end[2])
  }
  return { records, endOffsets }
}

/** Reads the topic; rejects with a `ToolError` if the consumer fails or does not reach the end offsets in time. */
export const consume = async (opts: ConsumeOptions): Promise<Consumed> => {
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const r = await Process.run(
    "java",
    [
      ...(await JavaClasses.javaArgs(libs, MAIN_CLASS)),
      opts.bootstrap,
      opts.topic,
      String(opts.partitions),
      opts.isolationLevel,
      String(timeoutMs)
    ],
    // The consumer stops itself at its deadline; the kill is for a JVM that hangs beyond it.
    { timeoutMs: timeoutMs + 30_000 }
  )
  if (r.code !== 0)
    throw new ToolError({
      tool: "isolated consumer",
      code: r.code,
      timedOut: r.timedOut,
      stderr: r.stderr,
      message: `isolated consumer on ${opts.topic} ${r.timedOut ? "timed out" : `exited with ${r.code ?? r.signal}`}:\n${r.stderr.slice(-4_000)}`
    })
  return parse(r.stdout, opts.partitions)
}
