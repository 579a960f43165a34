/**
 * The errors of the raft runtime: a quorum-state file that cannot be read or written, a log that
 * cannot be opened or written, an append on a voter that is not the leader, a peer that cannot be
 * reached. Protocol-level refusals stay error codes in the responses the core builds.
 */
import { Data } from "effect"

/** The `quorum-state` file is unreadable, torn or of an unknown version: never reset silently. */
export class QuorumStateFileError extends Data.TaggedError("QuorumStateFileError")<{
  readonly path: string
  readonly reason: string
}> {
  override get message(): string {
    return `quorum state file ${this.path}: ${this.reason}`
  }
}

/** The metadata log could not be opened, read or written. */
export class RaftLogError extends Data.TaggedError("RaftLogError")<{
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `raft log: ${this.reason}`
  }
}

/** An append on a voter that is not the leader, or whose leadership ended before the append committed. */
export class NotLeader extends Data.TaggedError("NotLeader")<{
  /** The leader this voter knows, or -1. */
  readonly leaderId: number
  readonly leaderEpoch: number
}> {
  override get message(): string {
    return `not the leader (leader ${this.leaderId} in epoch ${this.leaderEpoch})`
  }
}

/** A request to a voter that could not be sent or was not answered. */
export class TransportError extends Data.TaggedError("TransportError")<{
  readonly to: number
  readonly reason: string
}> {
  override get message(): string {
    return `raft request to voter ${this.to}: ${this.reason}`
  }
}

/** A snapshot asked for above the high watermark: only committed state is snapshotted. */
export class SnapshotAboveHighWatermark extends Data.TaggedError("SnapshotAboveHighWatermark")<{
  readonly endOffset: number
  readonly highWatermark: number
}> {
  override get message(): string {
    return `a snapshot ending at ${this.endOffset} is above the high watermark ${this.highWatermark}`
  }
}

/** A snapshot this voter cannot take: not past its log start, not on a batch boundary, or the voter stopped. */
export class InvalidSnapshot extends Data.TaggedError("InvalidSnapshot")<{
  readonly endOffset: number
  readonly reason: string
}> {
  override get message(): string {
    return `no snapshot ending at ${this.endOffset}: ${this.reason}`
  }
}

/** A read of the log below its start: those records are in the snapshot (OFFSET_OUT_OF_RANGE for a fetcher). */
export class OffsetBelowLogStart extends Data.TaggedError("OffsetBelowLogStart")<{
  readonly offset: number
  readonly logStartOffset: number
  /** The snapshot holding the records below the log start. */
  readonly snapshotId: { readonly endOffset: number; readonly epoch: number } | null
}> {
  override get message(): string {
    return `offset ${this.offset} is below the log start ${this.logStartOffset}: read the snapshot`
  }
}
