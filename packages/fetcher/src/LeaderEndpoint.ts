/**
 * The port through which a fetcher talks to one partition leader (Kafka's LeaderEndPoint): Fetch at a
 * negotiated version (12+, so that `LastFetchedEpoch` and `DivergingEpoch` exist; 13+ names topics by id),
 * OffsetForLeaderEpoch, and the leader's earliest/latest offsets (ListOffsets as a replica). Implementations:
 * `MemoryLeaderEndpoint` (a leader's logs in process, for tests) and `NetworkLeaderEndpoint` (over a
 * connection). The port only carries requests; it must not interpret responses.
 */
import type { Fetch, OffsetForLeaderEpoch } from "@clustermirror/protocol"
import type { TopicPartition } from "./FetcherEvents.js"

/** Lowest Fetch version with `LastFetchedEpoch` (request) and `DivergingEpoch` (response). */
export const MIN_FETCH_VERSION = 12
/** Lowest Fetch version naming topics by id. */
export const TOPIC_ID_FETCH_VERSION = 13

/** A ListOffsets answer for one partition. */
export interface OffsetAndEpoch {
  readonly errorCode: number
  readonly offset: number
  readonly leaderEpoch: number
}

export interface LeaderEndpoint {
  /** The leader's broker id. */
  readonly leaderId: number
  /** The highest Fetch version both sides speak (>= 12). */
  readonly fetchVersion: number
  /** Sends a Fetch at `version` (default `fetchVersion`); rejects with a `LeaderRequestError`. */
  readonly fetch: (request: Fetch.Request, version?: number) => Promise<Fetch.Response>
  /** Sends an OffsetForLeaderEpoch; rejects with a `LeaderRequestError`. */
  readonly offsetForLeaderEpoch: (request: OffsetForLeaderEpoch.Request) => Promise<OffsetForLeaderEpoch.Response>
  /** The leader's log start offset of a partition (ListOffsets EARLIEST as a replica). */
  readonly fetchEarliestOffset: (tp: TopicPartition, currentLeaderEpoch: number) => Promise<OffsetAndEpoch>
  /** The leader's log end offset of a partition (ListOffsets LATEST as a replica: not bounded by the HW). */
  readonly fetchLatestOffset: (tp: TopicPartition, currentLeaderEpoch: number) => Promise<OffsetAndEpoch>
  /** Releases the connection; later calls reject. */
  readonly close: () => Promise<void>
}
