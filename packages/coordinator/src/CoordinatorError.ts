/**
 * The refusals of the coordinator's pure functions, one class each. They are values, not failures of
 * I/O: a refused transition is skipped by the caller (and logged), never retried blindly. Per-partition
 * failures of Read/WriteMirrorStates are not errors here; they go into the response with a Kafka code.
 */
import type { MirrorPartitionState } from "@clustermirror/protocol"
import { Data } from "effect"

/** A trigger asked for a move the state machine forbids (KIP-1279 §4.2, or the trigger's own source states). */
export class InvalidTransition extends Data.TaggedError("InvalidTransition")<{
  readonly from: MirrorPartitionState.MirrorPartitionState
  readonly to: MirrorPartitionState.MirrorPartitionState
  readonly trigger: string
  readonly message: string
}> {}

/** A FAILED partition may not be retried automatically: not FAILED, non-retryable, or out of attempts. */
export class RetryNotAllowed extends Data.TaggedError("RetryNotAllowed")<{ readonly message: string }> {}

/** RecoverMirrorTopics on a partition that is not stuck in FAILED (still retrying, or not failed at all). */
export class NotRecoverable extends Data.TaggedError("NotRecoverable")<{ readonly message: string }> {}
