/**
 * The errors of the transaction coordinator's decisions, each carrying the Kafka error code a handler
 * answers with. Runtime errors (not the coordinator, loading, append failures) are the coordinator
 * runtime's own.
 */
import { Errors } from "@clustermirror/protocol"
import { Data } from "effect"

/** A request refused with a Kafka error code (INVALID_TXN_STATE, PRODUCER_FENCED, ...). */
export class Refused extends Data.TaggedError("Refused")<{
  readonly errorCode: number
  readonly message: string
}> {}

/**
 * InitProducerId needs a fresh producer id (a new transactional id, or an exhausted epoch): the caller
 * allocates one and decides again with it.
 */
export class NeedsProducerId extends Data.TaggedError("NeedsProducerId")<{
  readonly transactionalId: string
}> {}

export const refused = (errorCode: number, message?: string): Refused =>
  new Refused({ errorCode, message: message ?? Errors.message(errorCode) })
