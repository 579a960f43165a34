/**
 * The errors of the raft package. The core itself never fails: bad or stale messages get a Kafka
 * error code in their response. Only configuration parsing has a typed failure.
 */
import { Data } from "effect"

/** `controller.quorum.voters` is not a comma-separated list of `id@host:port` with distinct ids. */
export class InvalidQuorumVoters extends Data.TaggedError("InvalidQuorumVoters")<{
  readonly value: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid controller.quorum.voters "${this.value}": ${this.reason}`
  }
}

/** Kafka error codes the core puts in its responses. */
export const ErrorCode = {
  NONE: 0,
  NOT_LEADER_OR_FOLLOWER: 6,
  BROKER_NOT_AVAILABLE: 8,
  FENCED_LEADER_EPOCH: 74,
  UNKNOWN_LEADER_EPOCH: 75,
  INCONSISTENT_VOTER_SET: 94,
  INCONSISTENT_CLUSTER_ID: 104,
  SNAPSHOT_NOT_FOUND: 98,
  POSITION_OUT_OF_RANGE: 99
} as const
