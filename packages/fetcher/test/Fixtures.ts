/**
 * Test fixtures: batches with recognisable payloads, memory logs, a leader/follower pair wired through the
 * in-memory leader endpoint, and a readable dump of a log's batches for byte-for-byte comparisons.
 */
import { Buffer } from "node:buffer"
import { RecordBatch } from "@clustermirror/protocol"
import { type PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import type * as FetcherConfig from "../src/FetcherConfig.js"
import * as FetcherEvents from "../src/FetcherEvents.js"
import { MemoryLeader } from "../src/MemoryLeaderEndpoint.js"
import { ReplicaFetcher, type ReplicaFetcherOptions } from "../src/ReplicaFetcher.js"

export const TOPIC = "orders"
export const TOPIC_ID = "q7ZJCFmRTdWpIVpLbKp6cw"
export const TP = { topic: TOPIC, partition: 0 }

/** A batch of `count` records whose values name `tag`, so that batches of different writers differ. */
export const batch = (tag: string, count = 2, partitionLeaderEpoch = -1): Buffer =>
  RecordBatch.build({
    records: Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`${tag}#${i}`) })),
    timestamp: 1_000,
    partitionLeaderEpoch
  })

/** Appends `n` batches of `count` records as leader at `epoch`. */
export const write = (log: PartitionLog.PartitionLog, epoch: number, n: number, tag: string, count = 2): void => {
  for (let i = 0; i < n; i++) log.appendAsLeader(batch(`${tag}-${log.logEndOffset}`, count), epoch, 0)
}

/** Every batch of a log from its start, as separate buffers. */
export const batches = (log: PartitionLog.PartitionLog): Buffer[] => {
  const out: Buffer[] = []
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const { records } = log.read(offset, 1 << 20, { maxOffset: log.logEndOffset })
    const { batches: refs } = RecordBatch.split(records)
    if (refs.length === 0) break
    for (const r of refs) out.push(Buffer.from(records.subarray(r.position, r.position + r.size)))
    offset = RecordBatch.lastOffset(records, refs[refs.length - 1]!.position) + 1
  }
  return out
}

/** (epoch, start offset) pairs of a log's batches where the epoch changes: its epoch cache as seen from data. */
export const epochStarts = (log: PartitionLog.PartitionLog): Array<[number, number]> => {
  const out: Array<[number, number]> = []
  for (const b of batches(log)) {
    const epoch = RecordBatch.partitionLeaderEpoch(b)
    if (out.length === 0 || out[out.length - 1]![0] !== epoch) out.push([epoch, RecordBatch.baseOffset(b)])
  }
  return out
}

export interface Clock {
  now: number
}

export interface Pair {
  readonly clock: Clock
  readonly leaderLog: PartitionLog.PartitionLog
  readonly followerLog: PartitionLog.PartitionLog
  readonly leader: MemoryLeader
  readonly fetcher: ReplicaFetcher
  readonly events: FetcherEvents.EventQueue
}

/** A leader (broker 1) and a follower (broker 2) of `orders-0`, with a fetcher not yet given the partition. */
export const pair = (
  options: {
    readonly fetchVersion?: number
    readonly config?: Partial<FetcherConfig.FetcherConfig>
    readonly fetcher?: Partial<ReplicaFetcherOptions>
  } = {}
): Pair => {
  const clock: Clock = { now: 10_000 }
  const leaderLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
  const followerLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
  const leader = new MemoryLeader({ leaderId: 1, now: () => clock.now })
  const events = FetcherEvents.queue()
  const fetcher = new ReplicaFetcher({
    brokerId: 2,
    brokerEpoch: 7n,
    endpoint: leader.endpoint(options.fetchVersion ?? 19),
    config: { replicaFetchWaitMaxMs: 0, ...options.config },
    events: events.events,
    now: () => clock.now,
    ...options.fetcher
  })
  return { clock, leaderLog, followerLog, leader, fetcher, events }
}

/** Runs rounds until one fetches nothing new and changes nothing (or `max` rounds). */
export const runToCompletion = async (fetcher: ReplicaFetcher, max = 200): Promise<number> => {
  for (let round = 1; round <= max; round++) {
    const before = JSON.stringify(fetcher.partitionState(TP) ?? null, (k, v) => (k === "log" ? undefined : v))
    const result = await fetcher.runOnce()
    const after = JSON.stringify(fetcher.partitionState(TP) ?? null, (k, v) => (k === "log" ? undefined : v))
    if (result._tag !== "Fetched" || (result.bytes === 0 && before === after)) return round
  }
  throw new Error(`the fetcher did not settle in ${max} rounds`)
}
