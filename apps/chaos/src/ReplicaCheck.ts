/**
 * Replicas byte for byte within a cluster: the log of a partition is read from every broker's data dir
 * (its segment files `<log.dirs>/<topic>-<partition>/<20 digits>.log`, in offset order, concatenated) and
 * each replica is compared batch by batch with the first one (`MirrorCheck.compareLogs`: base offset, CRC,
 * leader epoch, bytes), to the end of both logs, so a replica that is short is a mismatch too.
 *
 * It only reads files; the cluster must be quiet (no producer) for the answer to mean anything.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { RecordBatch } from "@clustermirror/protocol"
import { MirrorCheck } from "@clustermirror/testkit"

const SEGMENT = /^\d{20}\.log$/

/** One replica's log, or `undefined` when the broker has no directory for the partition (yet). */
export const readPartitionLog = (logDir: string, topic: string, partition: number): Buffer | undefined => {
  const dir = join(logDir, `${topic}-${partition}`)
  if (!existsSync(dir)) return undefined
  const segments = readdirSync(dir)
    .filter((f) => SEGMENT.test(f))
    .sort()
  return Buffer.concat(segments.map((f) => readFileSync(join(dir, f))))
}

export interface Replica {
  readonly broker: number
  readonly log: Buffer | undefined
}

export interface PartitionResult {
  readonly topic: string
  readonly partition: number
  /** Per replica, the offset after its last complete batch (-1 without a log). */
  readonly ends: ReadonlyArray<readonly [broker: number, end: number]>
  /** Batches compared and equal on every replica. */
  readonly batches: number
  /** The first difference, in words, or null when every replica holds the same bytes. */
  readonly mismatch: string | null
}

/** The offset after the last complete batch of a log (its log start when it has none: 0 here). */
export const endOffset = (log: Buffer): number => {
  const { batches } = RecordBatch.split(log)
  const last = batches[batches.length - 1]
  return last === undefined ? 0 : RecordBatch.lastOffset(log, last.position) + 1
}

/** Compares every replica of one partition with the first. */
export const compareReplicas = (
  topic: string,
  partition: number,
  replicas: ReadonlyArray<Replica>
): PartitionResult => {
  const ends = replicas.map((r) => [r.broker, r.log === undefined ? -1 : endOffset(r.log)] as const)
  const [first, ...rest] = replicas
  if (first === undefined) return { topic, partition, ends, batches: 0, mismatch: "no replicas" }
  // A broker creates a partition's directory with its first record: no directory is an empty log.
  const bytes = (r: Replica): Buffer => r.log ?? Buffer.alloc(0)
  const named = (r: Replica): string => `broker ${r.broker}${r.log === undefined ? " (no log directory)" : ""}`
  let batches = RecordBatch.split(bytes(first)).batches.length
  for (const r of rest) {
    const c = MirrorCheck.compareLogs(bytes(first), bytes(r))
    batches = Math.min(batches, c.batches)
    if (c.firstMismatch !== null) {
      const m = c.firstMismatch
      return {
        topic,
        partition,
        ends,
        batches: c.batches,
        mismatch: `${named(first)} vs ${named(r)} at offset ${m.offset}: ${m.what} (${m.source} vs ${m.destination})`
      }
    }
  }
  return { topic, partition, ends, batches, mismatch: null }
}
