/**
 * Errors of the metadata-log package. Storage failures of the metadata log pass through as the
 * storage package's own errors; these cover what this package adds.
 */
import { Data } from "effect"

/**
 * A record that cannot apply to the metadata it follows (unknown topic, partition or broker, a
 * broker epoch that does not match, a leader epoch going backwards). Replay throws it: the log and
 * the image disagree, which is a defect, never a request error.
 */
export class InvalidMetadataRecord extends Data.TaggedError("InvalidMetadataRecord")<{
  readonly message: string
  readonly recordType: string
}> {}

/** Batch bytes of the metadata log that fail validation or hold undecodable records. */
export class CorruptMetadataBatch extends Data.TaggedError("CorruptMetadataBatch")<{
  readonly message: string
  /** Base offset of the batch, -1 when the header itself is unreadable. */
  readonly offset: number
}> {}

/** A snapshot that cannot be written or read. */
export class SnapshotError extends Data.TaggedError("SnapshotError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** Fetched batches that do not continue the local log (a gap or an overlap that is not a retry). */
export class DivergentFetch extends Data.TaggedError("DivergentFetch")<{
  readonly message: string
  readonly offset: number
  readonly logEndOffset: number
}> {}

/** A `meta.properties` that cannot be read or written, or that belongs to another cluster or node. */
export class MetaPropertiesError extends Data.TaggedError("MetaPropertiesError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * An append to a replicated metadata log (a controller quorum's) by a node that does not lead it, or
 * stopped leading it before the records committed: they may still commit under the next leader.
 */
export class NotLeader extends Data.TaggedError("NotLeader")<{
  readonly message: string
  /** The leader this node knows, -1 when none. */
  readonly leaderId: number
}> {}
