/**
 * The errors of the coordinator runtime and its log port, each with the Kafka error code a handler
 * answers with and whether a client should retry. A decide function's own refusals are its error type
 * `E`, not these.
 */
import { Errors } from "@clustermirror/protocol"
import { Data } from "effect"

/** This broker does not lead (or no longer leads, or leads at another epoch) the coordinator partition. */
export class NotCoordinator extends Data.TaggedError("NotCoordinator")<{
  readonly partition: number
  readonly message: string
}> {
  readonly errorCode: number = Errors.ErrorCode.NOT_COORDINATOR
  readonly retriable = true
}

/** The partition is led here but its log is still being replayed. */
export class CoordinatorLoadInProgress extends Data.TaggedError("CoordinatorLoadInProgress")<{
  readonly partition: number
  readonly message: string
}> {
  readonly errorCode: number = Errors.ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
  readonly retriable = true
}

/** An append did not commit (I/O error, the ISR shrank, timed out): nothing of the batch applies. */
export class AppendFailed extends Data.TaggedError("AppendFailed")<{
  readonly partition: number
  readonly errorCode: number
  readonly message: string
}> {
  get retriable(): boolean {
    return Errors.isRetriable(this.errorCode)
  }
}

/** Reading a coordinator partition for a load failed (unreadable or corrupt log). */
export class CoordinatorLogError extends Data.TaggedError("CoordinatorLogError")<{
  readonly partition: number
  readonly message: string
}> {
  readonly errorCode: number = Errors.ErrorCode.COORDINATOR_NOT_AVAILABLE
  readonly retriable = true
}

/** Every error a runtime write can fail with besides the decide function's own. */
export type WriteError = NotCoordinator | CoordinatorLoadInProgress | AppendFailed

/** Every error a runtime read can fail with. */
export type ReadError = NotCoordinator | CoordinatorLoadInProgress
