/**
 * The committed (hard) state of the classic group coordinator: the last persisted metadata of each
 * group, its committed offsets, and the offsets of open transactions (TxnOffsetCommit) per producer,
 * exactly what replaying `__consumer_offsets` yields. `replay` (plain records) and `replayEntry` (records
 * with their transactions and markers) are the only way it changes, for live writes and startup alike. A
 * producer's pending offsets become committed offsets when its COMMIT marker is replayed, unless the
 * partition got a commit later in the log (Kafka keeps the commit with the highest record offset), and
 * are dropped on ABORT. It holds no membership, timers or requests: those live in the coordinator runtime.
 */
import type { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import type { GroupRecords } from "@clustermirror/protocol"
import { HashMap, Option } from "effect"
import * as ConsumerGroups from "../ConsumerGroups.js"

export interface CommittedOffset {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly leaderEpoch: number
  readonly metadata: string
  readonly commitTimestamp: bigint
  /** Where the commit's record is among the offset records of the partition (the later one wins). */
  readonly recordIndex: number
}

/** Offsets per group, keyed by `partitionKey`. */
export type GroupOffsets = HashMap.HashMap<string, HashMap.HashMap<string, CommittedOffset>>

export interface State {
  /** The last persisted metadata of each group that has one. */
  readonly groups: HashMap.HashMap<string, GroupRecords.GroupMetadataValue>
  /** Committed offsets per group, keyed by `partitionKey`. */
  readonly offsets: GroupOffsets
  /** The offsets of each producer's open transaction, per group. */
  readonly pending: HashMap.HashMap<bigint, GroupOffsets>
  /** How many offset records were replayed: the `recordIndex` of the next one. */
  readonly offsetRecords: number
  /** Consumer groups of the KIP-848 protocol. */
  readonly consumerGroups: ConsumerGroups.State
}

export const empty: State = {
  groups: HashMap.empty(),
  offsets: HashMap.empty(),
  pending: HashMap.empty(),
  offsetRecords: 0,
  consumerGroups: ConsumerGroups.empty
}

/** A record of the shard's log with its transaction (the coordinator runtime's `TxnEntry`). */
export type Entry = CoordinatorLog.TxnEntry<GroupRecords.GroupRecord>

const setOffset = (offsets: GroupOffsets, group: string, key: string, o: CommittedOffset | undefined): GroupOffsets => {
  const current = Option.getOrElse(HashMap.get(offsets, group), () => HashMap.empty<string, CommittedOffset>())
  const next = o === undefined ? HashMap.remove(current, key) : HashMap.set(current, key, o)
  return HashMap.isEmpty(next) ? HashMap.remove(offsets, group) : HashMap.set(offsets, group, next)
}

const offsetFrom = (
  record: Extract<GroupRecords.GroupRecord, { type: "OffsetCommit" }>,
  recordIndex: number
): CommittedOffset | undefined => {
  const value = record.value?.data
  return value === undefined
    ? undefined
    : {
        topic: record.key.topic,
        partition: record.key.partition,
        offset: value.offset,
        leaderEpoch: value.leaderEpoch,
        metadata: value.metadata,
        commitTimestamp: value.commitTimestamp,
        recordIndex
      }
}

/** Applies an entry of the log: a plain record, a record of a producer's transaction, or its marker. */
export const replayEntry = (state: State, entry: Entry): State => {
  switch (entry._tag) {
    case "Record":
      return replay(state, entry.record)
    case "TxnRecord": {
      const record = entry.record
      if (record.type !== "OffsetCommit" || record.value === null)
        throw new Error(`producer ${entry.producerId}: only offset commits may be transactional, not ${record.type}`)
      const { group, topic, partition } = record.key
      const producerOffsets = Option.getOrElse(HashMap.get(state.pending, entry.producerId), () =>
        HashMap.empty<string, HashMap.HashMap<string, CommittedOffset>>()
      )
      const updated = setOffset(
        producerOffsets,
        group,
        partitionKey(topic, partition),
        offsetFrom(record, state.offsetRecords)
      )
      return {
        ...state,
        pending: HashMap.set(state.pending, entry.producerId, updated),
        offsetRecords: state.offsetRecords + 1
      }
    }
    case "TxnMarker": {
      const producerOffsets = HashMap.get(state.pending, entry.producerId)
      if (Option.isNone(producerOffsets)) return state
      const pending = HashMap.remove(state.pending, entry.producerId)
      if (!entry.commit) return { ...state, pending }
      let offsets = state.offsets
      for (const [group, byPartition] of producerOffsets.value)
        for (const [key, o] of byPartition) {
          const existing = Option.getOrUndefined(
            Option.flatMap(HashMap.get(offsets, group), (m) => HashMap.get(m, key))
          )
          if (existing === undefined || o.recordIndex > existing.recordIndex)
            offsets = setOffset(offsets, group, key, o)
        }
      return { ...state, offsets, pending }
    }
    default:
      return absurd(entry)
  }
}

/** Whether a producer's open transaction holds an offset of the group for the partition. */
export const hasPendingOffset = (state: State, groupId: string, topic: string, partition: number): boolean => {
  const key = partitionKey(topic, partition)
  for (const byGroup of HashMap.values(state.pending))
    if (Option.isSome(Option.flatMap(HashMap.get(byGroup, groupId), (m) => HashMap.get(m, key)))) return true
  return false
}

/** The topic-partitions of a group with an offset in some producer's open transaction. */
export const pendingPartitionsOf = (
  state: State,
  groupId: string
): ReadonlyArray<{ readonly topic: string; readonly partition: number }> => {
  const seen = new Map<string, { readonly topic: string; readonly partition: number }>()
  for (const byGroup of HashMap.values(state.pending))
    for (const o of Option.match(HashMap.get(byGroup, groupId), { onNone: () => [], onSome: HashMap.values }))
      seen.set(partitionKey(o.topic, o.partition), { topic: o.topic, partition: o.partition })
  return [...seen.values()]
}

/** Topic names cannot contain a NUL, so this key is unambiguous. */
export const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`

export const replay = (state: State, record: GroupRecords.GroupRecord): State => {
  switch (record.type) {
    case "OffsetCommit": {
      const { group, topic, partition } = record.key
      const key = partitionKey(topic, partition)
      const offsets = setOffset(state.offsets, group, key, offsetFrom(record, state.offsetRecords))
      // A tombstone (DeleteGroups, OffsetDelete) also drops the partition from open transactions: their
      // COMMIT does not bring the deleted offset back.
      const pending =
        record.value === null
          ? HashMap.map(state.pending, (byGroup) => setOffset(byGroup, group, key, undefined))
          : state.pending
      return { ...state, offsets, pending, offsetRecords: state.offsetRecords + 1 }
    }
    case "GroupMetadata": {
      const group = record.key.group
      if (record.value === null) return { ...state, groups: HashMap.remove(state.groups, group) }
      const value = record.value.data
      const previous = HashMap.get(state.groups, group)
      if (Option.isSome(previous) && value.generation < previous.value.generation)
        throw new Error(`group ${group}: generation went back from ${previous.value.generation} to ${value.generation}`)
      return { ...state, groups: HashMap.set(state.groups, group, value) }
    }
    case "ConsumerGroupMetadata":
    case "ConsumerGroupPartitionMetadata":
    case "ConsumerGroupMemberMetadata":
    case "ConsumerGroupTargetAssignmentMetadata":
    case "ConsumerGroupTargetAssignmentMember":
    case "ConsumerGroupCurrentMemberAssignment":
    case "ConsumerGroupRegularExpression":
      return { ...state, consumerGroups: ConsumerGroups.replay(state.consumerGroups, record) }
    default:
      return absurd(record)
  }
}

const absurd = (record: never): never => {
  throw new Error(`unknown group record ${String(record)}`)
}

/** The committed offsets of a group (empty when it has none). */
export const offsetsOf = (state: State, groupId: string): ReadonlyArray<CommittedOffset> =>
  Option.match(HashMap.get(state.offsets, groupId), {
    onNone: () => [],
    onSome: (m) => Array.from(HashMap.values(m))
  })

export const offsetOf = (
  state: State,
  groupId: string,
  topic: string,
  partition: number
): CommittedOffset | undefined =>
  Option.getOrUndefined(
    Option.flatMap(HashMap.get(state.offsets, groupId), (m) => HashMap.get(m, partitionKey(topic, partition)))
  )

/** Every classic group id the committed state knows (with metadata, offsets or both): not consumer groups. */
export const groupIds = (state: State): ReadonlyArray<string> => {
  const ids = new Set<string>(HashMap.keys(state.groups))
  for (const id of HashMap.keys(state.offsets)) ids.add(id)
  for (const byGroup of HashMap.values(state.pending)) for (const id of HashMap.keys(byGroup)) ids.add(id)
  for (const id of state.consumerGroups.keys()) ids.delete(id)
  return Array.from(ids)
}
