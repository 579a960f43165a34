/**
 * Producer-ID blocks (Kafka's `ProducerIdControlManager`): brokers ask for blocks of producer ids to
 * hand out to idempotent and transactional producers; the controller remembers only where the next
 * block starts. Owns the producer-id slice of the controller state and AllocateProducerIds.
 *
 * Decide is pure and returns a ProducerIdsRecord; `replay` is the only way the state changes.
 */
import { MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import type * as ClusterControl from "./ClusterControl.js"
import * as ControllerError from "./ControllerError.js"
import * as ControllerResult from "./ControllerResult.js"

/** Producer ids per block, as Kafka hands them out. */
export const BLOCK_SIZE = 1000n

const INT64_MAX = 9223372036854775807n

export interface State {
  /** The first producer id of the next block. */
  readonly nextProducerId: bigint
}

export const empty: State = { nextProducerId: 0n }

/** A block of producer ids: `[firstProducerId, firstProducerId + size)`. */
export interface ProducerIdsBlock {
  readonly brokerId: number
  readonly firstProducerId: bigint
  readonly size: bigint
}

/** Applies a ProducerIdsRecord. Dies when the next id does not move forward: blocks never overlap. */
export const replay = (state: State, record: MetadataRecords.MetadataRecordOf<"ProducerIdsRecord">): State => {
  if (record.data.nextProducerId <= state.nextProducerId)
    throw new Error(
      `ProducerIdsRecord next producer id ${record.data.nextProducerId} is not above ${state.nextProducerId}`
    )
  return { nextProducerId: record.data.nextProducerId }
}

/**
 * AllocateProducerIds (67): the next block of `BLOCK_SIZE` ids for the broker and a ProducerIdsRecord
 * that moves the next block past it. Fails with STALE_BROKER_EPOCH when the broker is not registered
 * with that epoch, UNKNOWN_SERVER_ERROR when the int64 id space is exhausted.
 */
export const allocateProducerIds = (
  state: State,
  brokerId: number,
  brokerEpoch: bigint,
  cluster: ClusterControl.State
): Either.Either<
  ControllerResult.ControllerResult<ProducerIdsBlock>,
  ControllerError.StaleBrokerEpoch | ControllerError.UnknownServerError
> => {
  const registration = cluster.brokers.get(brokerId)
  if (registration === undefined)
    return Either.left(
      new ControllerError.StaleBrokerEpoch({ message: `No broker registration found for broker id ${brokerId}` })
    )
  if (registration.epoch !== brokerEpoch)
    return Either.left(
      new ControllerError.StaleBrokerEpoch({
        message: `Expected broker epoch ${registration.epoch}, but got broker epoch ${brokerEpoch}`
      })
    )
  const first = state.nextProducerId
  if (first > INT64_MAX - BLOCK_SIZE)
    return Either.left(
      new ControllerError.UnknownServerError({
        message: "Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit"
      })
    )
  const record = MetadataRecords.make("ProducerIdsRecord", {
    brokerId,
    brokerEpoch,
    nextProducerId: first + BLOCK_SIZE
  })
  return Either.right(ControllerResult.of([record], { brokerId, firstProducerId: first, size: BLOCK_SIZE }))
}
