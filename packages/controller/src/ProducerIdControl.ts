/**
 * Producer-ID blocks (Kafka's `ProducerIdControlManager`): brokers ask for blocks of producer ids to
 * hand out to idempotent and transactional producers; the controller remembers where the next block
 * starts, and the floor below which no broker hands out ids (KIP-1279 failover: a stopped mirror
 * partition's producer ids came from another cluster's counter). Owns the producer-id slice of the
 * controller state, AllocateProducerIds and the floor a BumpLeaderEpochs asks for.
 *
 * Decide is pure and returns a ProducerIdsRecord; `replay` is the only way the state changes.
 */
import { MetadataImage } from "@clustermirror/metadata-log"
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
  /** No broker hands out an id below it, even from a block it holds; -1 when never set. */
  readonly floor: bigint
}

export const empty: State = { nextProducerId: 0n, floor: -1n }

/** A block of producer ids: `[firstProducerId, firstProducerId + size)`. */
export interface ProducerIdsBlock {
  readonly brokerId: number
  readonly firstProducerId: bigint
  readonly size: bigint
}

/**
 * Applies a ProducerIdsRecord: a block moves the next id forward, a floor (broker id -1) raises the floor
 * and the next id with it. Dies when the order breaks: blocks never overlap, floors never go down.
 */
export const replay = (state: State, record: MetadataRecords.MetadataRecordOf<"ProducerIdsRecord">): State => {
  const next = MetadataImage.replayProducerIds(state, record.data)
  if (typeof next === "string") throw new Error(`ProducerIdsRecord: ${next}`)
  return next
}

/**
 * The floor a stopping mirror partition asks for (BumpLeaderEpochs' MinProducerId): no id up to
 * `minProducerId` may be handed out again. Emits nothing when the floor is already above it; else a
 * ProducerIdsRecord of broker -1 whose next producer id is the larger of `minProducerId + 1` and the next
 * block's start, so every block handed out before lies below it and brokers drop what they hold of them.
 */
export const raiseFloor = (state: State, minProducerId: bigint): Array<MetadataRecords.MetadataRecord> => {
  if (minProducerId < 0n || minProducerId >= INT64_MAX || state.floor > minProducerId) return []
  const next = minProducerId + 1n > state.nextProducerId ? minProducerId + 1n : state.nextProducerId
  return [
    MetadataRecords.make("ProducerIdsRecord", {
      brokerId: MetadataImage.PRODUCER_ID_FLOOR_BROKER,
      brokerEpoch: -1n,
      nextProducerId: next
    })
  ]
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
