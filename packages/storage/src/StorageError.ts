/**
 * Errors of the storage package. Each carries the Kafka error code the broker answers with; the broker maps
 * `errorCode` at its one boundary. Storage never decides responses itself.
 */
import { Errors } from "@clustermirror/protocol"
import { Data } from "effect"

const { ErrorCode } = Errors

/** A batch failed structural or CRC validation (CORRUPT_MESSAGE), or is semantically invalid (INVALID_RECORD). */
export class CorruptRecordError extends Data.TaggedError("CorruptRecordError")<{
  readonly message: string
  readonly errorCode: number
}> {}

export const corrupt = (message: string): CorruptRecordError =>
  new CorruptRecordError({ message, errorCode: ErrorCode.CORRUPT_MESSAGE })

export const invalidRecord = (message: string): CorruptRecordError =>
  new CorruptRecordError({ message, errorCode: ErrorCode.INVALID_RECORD })

/** A batch larger than `max.message.bytes` (MESSAGE_TOO_LARGE). */
export class RecordTooLargeError extends Data.TaggedError("RecordTooLargeError")<{
  readonly message: string
  readonly size: number
  readonly maxMessageBytes: number
}> {
  get errorCode(): number {
    return ErrorCode.MESSAGE_TOO_LARGE
  }
}

/** A read or log-start move outside `[logStartOffset, logEndOffset]` (OFFSET_OUT_OF_RANGE). */
export class OffsetOutOfRangeError extends Data.TaggedError("OffsetOutOfRangeError")<{
  readonly message: string
  readonly offset: number
  readonly logStartOffset: number
  readonly logEndOffset: number
}> {
  get errorCode(): number {
    return ErrorCode.OFFSET_OUT_OF_RANGE
  }
}

/** An idempotent producer skipped sequence numbers (OUT_OF_ORDER_SEQUENCE_NUMBER). */
export class OutOfOrderSequenceError extends Data.TaggedError("OutOfOrderSequenceError")<{
  readonly message: string
  readonly producerId: bigint
  readonly expectedSequence: number
  readonly sequence: number
}> {
  get errorCode(): number {
    return ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
  }
}

/** A producer wrote with an epoch older than the one already seen (INVALID_PRODUCER_EPOCH). */
export class InvalidProducerEpochError extends Data.TaggedError("InvalidProducerEpochError")<{
  readonly message: string
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly currentEpoch: number
}> {
  get errorCode(): number {
    return ErrorCode.INVALID_PRODUCER_EPOCH
  }
}

/**
 * A COMMIT/ABORT marker carries a coordinator epoch older than the producer's last marker on this partition:
 * it comes from a transaction coordinator that was since replaced (TRANSACTION_COORDINATOR_FENCED).
 */
export class TransactionCoordinatorFencedError extends Data.TaggedError("TransactionCoordinatorFencedError")<{
  readonly message: string
  readonly producerId: bigint
  readonly coordinatorEpoch: number
  readonly currentCoordinatorEpoch: number
}> {
  get errorCode(): number {
    return ErrorCode.TRANSACTION_COORDINATOR_FENCED
  }
}

/**
 * The partition has no state for this producer (UNKNOWN_PRODUCER_ID). The log follows Kafka 2.5+ and accepts
 * unknown producers at any sequence, so it does not raise this itself; the broker may.
 */
export class UnknownProducerIdError extends Data.TaggedError("UnknownProducerIdError")<{
  readonly message: string
  readonly producerId: bigint
}> {
  get errorCode(): number {
    return ErrorCode.UNKNOWN_PRODUCER_ID
  }
}

/**
 * Batches given to a follower/mirror append start below the log end offset or are not in increasing order.
 * Kafka has no dedicated wire code for this (UnexpectedAppendOffsetException), so it answers
 * UNKNOWN_SERVER_ERROR.
 */
export class InvalidOffsetError extends Data.TaggedError("InvalidOffsetError")<{
  readonly message: string
  readonly offset: number
  readonly logEndOffset: number
}> {
  get errorCode(): number {
    return ErrorCode.UNKNOWN_SERVER_ERROR
  }
}

/** An I/O failure of the log directory (KAFKA_STORAGE_ERROR). */
export class KafkaStorageError extends Data.TaggedError("KafkaStorageError")<{
  readonly message: string
  readonly cause: unknown
}> {
  get errorCode(): number {
    return ErrorCode.KAFKA_STORAGE_ERROR
  }
}

export type StorageError =
  | CorruptRecordError
  | RecordTooLargeError
  | OffsetOutOfRangeError
  | OutOfOrderSequenceError
  | InvalidProducerEpochError
  | TransactionCoordinatorFencedError
  | UnknownProducerIdError
  | InvalidOffsetError
  | KafkaStorageError
