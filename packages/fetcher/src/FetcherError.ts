/**
 * Errors of the fetcher package. They describe why talking to a leader failed; per-partition outcomes are
 * not errors but events (`FetcherEvents`), and Kafka error codes inside responses stay codes.
 */
import { Data } from "effect"

/** A request to the leader failed as a whole (connection lost, timeout, undecodable answer). */
export class LeaderRequestError extends Data.TaggedError("LeaderRequestError")<{
  readonly api: string
  readonly message: string
  readonly cause?: unknown
}> {}

/** The leader answered a whole request (or the partition a fetcher needed) with a Kafka error code. */
export class LeaderResponseError extends Data.TaggedError("LeaderResponseError")<{
  readonly api: string
  readonly errorCode: number
}> {}

/** The leader does not speak a Fetch version with `LastFetchedEpoch`/`DivergingEpoch` (12+). */
export class UnsupportedFetchVersionError extends Data.TaggedError("UnsupportedFetchVersionError")<{
  readonly version: number
  readonly message: string
}> {}

export type FetcherError = LeaderRequestError | LeaderResponseError | UnsupportedFetchVersionError
