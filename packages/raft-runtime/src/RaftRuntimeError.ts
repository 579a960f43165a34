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
