/**
 * WriteTxnMarkers (key 27) on a partition leader: for each marker and partition, a COMMIT or ABORT control
 * batch of the producer, at the coordinator epoch, appended as a coordinator's write with acks=all (the
 * answer waits until the high watermark passed it), so the last stable offset and the aborted-transaction
 * index follow from the log's producer state like for any other marker. The log refuses a marker of an
 * older producer epoch (INVALID_PRODUCER_EPOCH) or coordinator epoch (TRANSACTION_COORDINATOR_FENCED).
 *
 * A coordinator that keeps state of its own in a partition (the group coordinator on `__consumer_offsets`)
 * takes that partition's markers itself (`coordinatorFor`), to write and replay them in order with its
 * other writes. Owns no state; authorization (CLUSTER_ACTION) is the request path's.
 */
import { ControlRecord, Errors, type WriteTxnMarkers } from "@clustermirror/protocol"
import type { ReplicaManager } from "./ReplicaManager.js"

/** One transaction marker for one partition. */
export interface TxnMarker {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly commit: boolean
  readonly coordinatorEpoch: number
}

/** Writes the markers of a partition a coordinator owns; answers the error code once committed. */
export type CoordinatorMarkerWriter = (partition: number, marker: TxnMarker, timeoutMs: number) => Promise<number>

export interface Options {
  readonly replicas: ReplicaManager
  /** How long a marker waits for the ISR (Kafka's request.timeout.ms; default 30000). */
  readonly timeoutMs?: number
  /** The writer of a coordinator topic's markers (e.g. `__consumer_offsets`), if any. */
  readonly coordinatorFor?: (topic: string) => CoordinatorMarkerWriter | undefined
  /**
   * Whether a partition takes writes (default: all do). A mirror topic's partitions hold the source's
   * batches at the source's offsets, so no marker of this cluster may go there: READ_ONLY_TOPIC while it
   * mirrors, NOT_LEADER_OR_FOLLOWER (retried) while its stop is under way.
   */
  readonly writeState?: (topic: string, partition: number) => "writable" | "stopping" | "readOnly"
  /** The clock of the markers' timestamps (default Date.now). */
  readonly now?: () => number
}

/** Appends one marker to a partition this broker leads; the error code once replicated (0 on success). */
export const appendMarker = (
  replicas: ReplicaManager,
  topic: string,
  partition: number,
  marker: TxnMarker,
  timeoutMs: number,
  now: number
): number | Promise<number> => {
  const batch = ControlRecord.endTxnMarker({ ...marker, timestamp: now })
  const r = replicas.appendAsLeader(topic, partition, batch, false, -1, timeoutMs)
  return r instanceof Promise ? r.then((x) => x.errorCode) : r.errorCode
}

/**
 * Answers a WriteTxnMarkers request. Markers are started in request order, so two markers of one partition
 * land in that order; the answer waits for all of them.
 */
export const writeTxnMarkers = async (
  options: Options,
  request: WriteTxnMarkers.Request
): Promise<WriteTxnMarkers.Response> => {
  const timeoutMs = options.timeoutMs ?? 30_000
  const now = options.now ?? Date.now
  const refusal = (topic: string, partition: number): number | undefined => {
    const state = options.writeState?.(topic, partition) ?? "writable"
    return state === "readOnly"
      ? Errors.ErrorCode.READ_ONLY_TOPIC
      : state === "stopping"
        ? Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER
        : undefined
  }
  const markers = request.markers.map((m) => {
    const marker: TxnMarker = {
      producerId: m.producerId,
      producerEpoch: m.producerEpoch,
      commit: m.transactionResult,
      coordinatorEpoch: m.coordinatorEpoch
    }
    return {
      producerId: m.producerId,
      topics: m.topics.map((t) => {
        const coordinator = options.coordinatorFor?.(t.name)
        return {
          name: t.name,
          partitions: t.partitionIndexes.map((partition) => ({
            partition,
            errorCode:
              refusal(t.name, partition) ??
              (coordinator !== undefined
                ? coordinator(partition, marker, timeoutMs)
                : appendMarker(options.replicas, t.name, partition, marker, timeoutMs, now()))
          }))
        }
      })
    }
  })
  return {
    markers: await Promise.all(
      markers.map(async (m) => ({
        producerId: m.producerId,
        topics: await Promise.all(
          m.topics.map(async (t) => ({
            name: t.name,
            partitions: await Promise.all(
              t.partitions.map(async (p) => ({ partitionIndex: p.partition, errorCode: await p.errorCode }))
            )
          }))
        )
      }))
    )
  }
}
