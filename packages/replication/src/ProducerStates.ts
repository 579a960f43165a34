/**
 * DescribeProducers (key 61) on partition leaders: the active producers of each partition from its log's
 * producer state (`kafka-transactions.sh describe-producers`). Per partition: UNKNOWN_TOPIC_OR_PARTITION
 * where this broker has no replica, NOT_LEADER_OR_FOLLOWER where it does not lead. Owns no state;
 * authorization (READ on each topic) is the request path's.
 */
import { type DescribeProducers, Errors } from "@clustermirror/protocol"
import type { ReplicaManager } from "./ReplicaManager.js"

const E = Errors.ErrorCode

/** Answers a DescribeProducers request from this broker's partitions. */
export const describeProducers = (
  replicas: ReplicaManager,
  request: DescribeProducers.Request
): DescribeProducers.Response => ({
  throttleTimeMs: 0,
  topics: request.topics.map((t) => ({
    name: t.name,
    partitions: t.partitionIndexes.map((partitionIndex) => {
      const p = replicas.get(t.name, partitionIndex)
      const errorCode =
        p === undefined ? E.UNKNOWN_TOPIC_OR_PARTITION : p.leader !== replicas.nodeId ? E.NOT_LEADER_OR_FOLLOWER : 0
      if (p === undefined || errorCode !== 0)
        return { partitionIndex, errorCode, errorMessage: Errors.message(errorCode), activeProducers: [] }
      return {
        partitionIndex,
        errorCode,
        errorMessage: null,
        activeProducers: p.log.activeProducers().map((a) => ({
          producerId: a.producerId,
          producerEpoch: a.producerEpoch,
          lastSequence: a.lastSequence,
          lastTimestamp: BigInt(a.lastTimestamp),
          coordinatorEpoch: a.coordinatorEpoch,
          currentTxnStartOffset: BigInt(a.currentTxnStartOffset)
        }))
      }
    })
  }))
})
