/**
 * What a fetcher reports to its owner (the broker): positions after a fetch, truncations, and partition
 * errors. The fetcher never decides state transitions (ISR changes, leadership); it only reports outcomes
 * here, as callbacks or through a queue the owner drains.
 */
import { Data } from "effect"

export interface TopicPartition {
  readonly topic: string
  readonly partition: number
}

/**
 * A replication quota as a fetcher uses it (KIP-73, KIP-1279 §6.1): whether to leave a partition out of the
 * next Fetch (it is throttled and the quota is exceeded; for a replica fetcher, also not in its ISR), and
 * the bytes received for a partition (counted when the partition is throttled).
 */
export interface FetchThrottle {
  readonly shouldThrottle: (tp: TopicPartition) => boolean
  readonly record: (tp: TopicPartition, bytes: number) => void
}

/** A follower's log position after a fetch round. */
export interface Position {
  readonly logEndOffset: number
  readonly highWatermark: number
  readonly logStartOffset: number
}

/**
 * `delayed`: the partition is retried after `replica.fetch.backoff.ms`; `failed`: it is no longer fetched
 * until it is added again (a new leader epoch, or after a storage failure).
 */
export type ErrorState = "delayed" | "failed"

export interface FetcherEvents {
  /** Records were appended, or the high watermark or log start moved. */
  readonly fetched: (tp: TopicPartition, position: Position) => void
  /** The log was truncated to `offset` (divergence or out-of-range handling). */
  readonly truncated: (tp: TopicPartition, offset: number) => void
  /** A partition-level error: a Kafka error code and whether fetching goes on after a backoff. */
  readonly failed: (tp: TopicPartition, errorCode: number, state: ErrorState) => void
}

export type FetcherEvent = Data.TaggedEnum<{
  Fetched: { readonly tp: TopicPartition; readonly position: Position }
  Truncated: { readonly tp: TopicPartition; readonly offset: number }
  Failed: { readonly tp: TopicPartition; readonly errorCode: number; readonly state: ErrorState }
}>

export const FetcherEvent = Data.taggedEnum<FetcherEvent>()

/** Callbacks that ignore everything. */
export const ignore: FetcherEvents = {
  fetched: () => {},
  truncated: () => {},
  failed: () => {}
}

/** A queue of events: pass `events` to the fetcher, `drain()` takes what happened since the last drain. */
export interface EventQueue {
  readonly events: FetcherEvents
  readonly drain: () => ReadonlyArray<FetcherEvent>
}

export const queue = (): EventQueue => {
  let pending: FetcherEvent[] = []
  return {
    events: {
      fetched: (tp, position) => pending.push(FetcherEvent.Fetched({ tp, position })),
      truncated: (tp, offset) => pending.push(FetcherEvent.Truncated({ tp, offset })),
      failed: (tp, errorCode, state) => pending.push(FetcherEvent.Failed({ tp, errorCode, state }))
    },
    drain: () => {
      const out = pending
      pending = []
      return out
    }
  }
}
