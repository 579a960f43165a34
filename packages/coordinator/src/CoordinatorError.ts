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

/**
 * A call of the mirror reconciler to something outside it (another broker's coordinator, a port of the
 * broker that does I/O) failed. Retriable: the partition's step runs again with backoff, as a FAILED
 * transition or a write retry decides; nothing in the reconciler's state changed.
 */
export class RemoteCallFailed extends Data.TaggedError("RemoteCallFailed")<{
  readonly call: string
  readonly cause: unknown
}> {
  readonly retriable = true
  override get message(): string {
    const c = this.cause
    return c instanceof Error ? c.message : String(c)
  }
}

/** A call of the mirror reconciler did not answer in time. Retriable, like a failed call. */
export class RemoteCallTimeout extends Data.TaggedError("RemoteCallTimeout")<{
  readonly call: string
  readonly timeoutMs: number
}> {
  readonly retriable = true
  override get message(): string {
    return `${this.call} timed out after ${this.timeoutMs} ms`
  }
}

/** The reconciler closed while the call waited: fatal for the call, nothing is retried. */
export class ManagerClosed extends Data.TaggedError("ManagerClosed")<{ readonly call: string }> {
  readonly retriable = false
  override get message(): string {
    return `${this.call}: the mirror reconciler closed`
  }
}

/** What a call of the reconciler can fail with. */
export type CallError = RemoteCallFailed | RemoteCallTimeout | ManagerClosed

/** Whether retrying a failed call can help. */
export const isRetriable = (e: CallError): boolean => e.retriable
