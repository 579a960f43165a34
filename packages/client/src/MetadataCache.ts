/**
 * The client's view of a cluster, built from Metadata responses: brokers, cluster id, controller id
 * and, per topic, each partition's leader, leader epoch, replicas and ISR. Immutable snapshots and
 * pure functions; `ClusterClient` decides when to refresh. A cache only: never a source of truth.
 */
import { Errors, type Metadata } from "@clustermirror/protocol"

export interface BrokerNode {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  readonly rack: string | null
}

export interface PartitionInfo {
  readonly partition: number
  readonly errorCode: number
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
  readonly offlineReplicas: ReadonlyArray<number>
}

export interface TopicInfo {
  readonly name: string
  readonly topicId: string
  readonly errorCode: number
  readonly isInternal: boolean
  readonly partitions: ReadonlyMap<number, PartitionInfo>
  /** When this topic was last refreshed (ms). */
  readonly fetchedAt: number
}

export interface Snapshot {
  readonly clusterId: string | null
  readonly controllerId: number
  readonly brokers: ReadonlyMap<number, BrokerNode>
  readonly topics: ReadonlyMap<string, TopicInfo>
  /** When brokers were last refreshed (ms); 0 = never. */
  readonly fetchedAt: number
}

export const empty: Snapshot = {
  clusterId: null,
  controllerId: -1,
  brokers: new Map(),
  topics: new Map(),
  fetchedAt: 0
}

const topicInfo = (t: Metadata.Response["topics"][number], now: number): TopicInfo => ({
  name: t.name ?? "",
  topicId: t.topicId,
  errorCode: t.errorCode,
  isInternal: t.isInternal,
  fetchedAt: now,
  partitions: new Map(
    t.partitions.map((p) => [
      p.partitionIndex,
      {
        partition: p.partitionIndex,
        errorCode: p.errorCode,
        leaderId: p.leaderId,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicaNodes,
        isr: p.isrNodes,
        offlineReplicas: p.offlineReplicas
      }
    ])
  )
})

/**
 * Folds a Metadata response into a snapshot. Brokers, cluster and controller are replaced. With
 * `requested` null (all topics) the topic map is replaced; otherwise only the named topics change.
 */
export const update = (
  prev: Snapshot,
  response: Metadata.Response,
  requested: ReadonlyArray<string> | null,
  now: number
): Snapshot => {
  const topics = requested === null ? new Map<string, TopicInfo>() : new Map(prev.topics)
  for (const t of response.topics) if (t.name !== null) topics.set(t.name, topicInfo(t, now))
  return {
    clusterId: response.clusterId,
    controllerId: response.controllerId,
    brokers: new Map(
      response.brokers.map((b) => [b.nodeId, { nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }])
    ),
    topics,
    fetchedAt: now
  }
}

/** Forgets a topic, so the next lookup refreshes it. */
export const invalidate = (snapshot: Snapshot, topic: string): Snapshot => {
  if (!snapshot.topics.has(topic)) return snapshot
  const topics = new Map(snapshot.topics)
  topics.delete(topic)
  return { ...snapshot, topics }
}

export type Leader =
  | {
      readonly _tag: "Leader"
      readonly broker: BrokerNode
      readonly leaderEpoch: number
      readonly partition: PartitionInfo
    }
  /** Not known here: the Kafka error code to report (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, ...). */
  | { readonly _tag: "NoLeader"; readonly errorCode: number }
  /** The topic is not in the snapshot at all (or too old): refresh. */
  | { readonly _tag: "Unknown" }

/** The leader of a partition as the snapshot knows it. */
export const leaderOf = (
  snapshot: Snapshot,
  topic: string,
  partition: number,
  maxAgeMs?: number,
  now?: number
): Leader => {
  const t = snapshot.topics.get(topic)
  if (t === undefined) return { _tag: "Unknown" }
  if (maxAgeMs !== undefined && now !== undefined && now - t.fetchedAt > maxAgeMs) return { _tag: "Unknown" }
  if (t.errorCode !== 0) return { _tag: "NoLeader", errorCode: t.errorCode }
  const p = t.partitions.get(partition)
  if (p === undefined) return { _tag: "NoLeader", errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
  if (p.leaderId < 0)
    return { _tag: "NoLeader", errorCode: p.errorCode !== 0 ? p.errorCode : Errors.ErrorCode.LEADER_NOT_AVAILABLE }
  const broker = snapshot.brokers.get(p.leaderId)
  if (broker === undefined) return { _tag: "NoLeader", errorCode: Errors.ErrorCode.LEADER_NOT_AVAILABLE }
  return { _tag: "Leader", broker, leaderEpoch: p.leaderEpoch, partition: p }
}

/** Error codes after which the partition's leader in the cache is suspect and must be refreshed. */
export const STALE_LEADER_CODES: ReadonlySet<number> = new Set([
  Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER,
  Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  Errors.ErrorCode.FENCED_LEADER_EPOCH,
  Errors.ErrorCode.UNKNOWN_LEADER_EPOCH,
  Errors.ErrorCode.LEADER_NOT_AVAILABLE,
  Errors.ErrorCode.REPLICA_NOT_AVAILABLE,
  Errors.ErrorCode.KAFKA_STORAGE_ERROR,
  Errors.ErrorCode.NOT_CONTROLLER
])
