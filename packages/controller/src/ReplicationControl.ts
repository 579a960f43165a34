/**
 * Replication control: the controller's topics and partitions (replicas, ISR, leader, leader and
 * partition epochs, leader recovery state) and each topic's desired mirror state, with the decisions
 * that change them: CreateTopics (incl. v8 `MirrorInfo.TopicId`), CreatePartitions, DeleteTopics,
 * AlterPartition (ISR changes from leaders), leader election when brokers are fenced, unfenced or
 * shut down (unclean when the topic allows it), ElectLeaders, partition reassignments
 * (AlterPartitionReassignments, ListPartitionReassignments, completed by ISR changes) and KIP-1279's
 * BumpLeaderEpochs.
 *
 * Decide functions are pure: cluster facts (which brokers are registered and active, their epochs,
 * whether a topic allows unclean election) come in as parameters, ids through a context. They return
 * records and a response and never touch state. `replay` is the only way state changes; it dies on a
 * record that contradicts the state (a corrupt log). Topic configs, brokers and features belong to the
 * other control modules; this one never reads or writes them except through its parameters.
 */
import {
  type AlterPartition,
  type AlterPartitionReassignments,
  type BumpLeaderEpochs,
  type CreatePartitions,
  type CreateTopics,
  type DeleteTopics,
  type ElectLeaders,
  Errors,
  type ListPartitionReassignments,
  Hashing,
  MetadataRecords,
  Uuid
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as ControllerError from "./ControllerError.js"
import type { ControllerResult } from "./ControllerResult.js"
import * as Change from "./internal/replicationChange.js"
import * as Placement from "./internal/replicationPlacement.js"
import { PersistentMap, type TransientMap } from "./internal/PersistentMap.js"

// ---------------------------------------------------------------------------------------------------
// State

/** A partition as the controller knows it (Kafka's PartitionRegistration without directories/ELR). */
export interface PartitionRegistration {
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
  readonly removingReplicas: ReadonlyArray<number>
  readonly addingReplicas: ReadonlyArray<number>
  /** -1 when the partition has no leader. */
  readonly leader: number
  /** 0 recovered, 1 recovering from an unclean election. */
  readonly leaderRecoveryState: number
  readonly leaderEpoch: number
  readonly partitionEpoch: number
}

export interface Topic {
  readonly name: string
  readonly topicId: string
  readonly partitions: ReadonlyMap<number, PartitionRegistration>
  /** KIP-1279: the mirror the topic belongs to; null when none (or after disassociation). */
  readonly mirrorName: string | null
  /** KIP-1279: the desired MirrorPartitionState byte; -1 (UNKNOWN) when never set. */
  readonly desiredMirrorState: number
  /** KIP-1279: offset of the last MirrorTopicStateChangeRecord for the topic (optimistic locking); -1 when none. */
  readonly lastMirrorStateChangeOffset: bigint
}

export interface State {
  readonly topicsById: ReadonlyMap<string, Topic>
  readonly topicIdsByName: ReadonlyMap<string, string>
  /** Names containing '.' or '_', by their collision key, to refuse names that differ only there. */
  readonly namesByCollisionKey: ReadonlyMap<string, ReadonlyArray<string>>
}

export const empty: State = {
  topicsById: PersistentMap.empty(),
  topicIdsByName: PersistentMap.empty(),
  namesByCollisionKey: PersistentMap.empty()
}

/** A partition of a topic, by id and name. */
export interface TopicIdPartition {
  readonly topicId: string
  readonly topicName: string
  readonly partitionId: number
}

// ---------------------------------------------------------------------------------------------------
// Replay

const die = (message: string): never => {
  throw new Error(`ReplicationControl.replay: ${message}`)
}

/**
 * The state a batch of records is being replayed into. Its maps are persistent (structural sharing):
 * a change costs O(log n) and copies nothing else, so one record (a heartbeat's PartitionChangeRecord)
 * costs the same in a state of 10 topics or 100,000. Within a batch they are transient (a path
 * copied once is changed in place by later records), and a topic's partitions are collected apart and
 * put into the topic once, at `result()`. The state it started from is never changed.
 */
class Draft {
  private topics!: TransientMap<string, Topic>
  private names!: TransientMap<string, string>
  private collisions!: TransientMap<string, ReadonlyArray<string>>
  /** Partition maps of the topics this batch changed, by topic id. */
  private partitionMaps = new Map<string, TransientMap<number, PartitionRegistration>>()
  private changed = false

  constructor(private base: State) {
    this.reset(base)
  }

  private reset(base: State): void {
    this.base = base
    this.topics = PersistentMap.of(base.topicsById).transient()
    this.names = PersistentMap.of(base.topicIdsByName).transient()
    this.collisions = PersistentMap.of(base.namesByCollisionKey).transient()
    this.partitionMaps = new Map()
    this.changed = false
  }

  topic(topicId: string): Topic | undefined {
    return this.topics.get(topicId)
  }
  /** The topic's partitions as this batch left them. */
  partition(topic: Topic, partitionId: number): PartitionRegistration | undefined {
    return (this.partitionMaps.get(topic.topicId) ?? topic.partitions).get(partitionId)
  }
  hasName(name: string): boolean {
    return this.names.has(name)
  }
  setTopic(topic: Topic): void {
    this.changed = true
    this.topics.set(topic.topicId, topic)
  }
  setPartition(topic: Topic, partitionId: number, p: PartitionRegistration): void {
    this.changed = true
    let partitions = this.partitionMaps.get(topic.topicId)
    if (partitions === undefined) {
      partitions = PersistentMap.of(topic.partitions).transient()
      this.partitionMaps.set(topic.topicId, partitions)
    }
    partitions.set(partitionId, p)
  }
  addName(name: string, topicId: string): void {
    this.changed = true
    this.names.set(name, topicId)
    const key = Placement.collisionKey(name)
    if (key === null) return
    this.collisions.set(key, [...(this.collisions.get(key) ?? []), name])
  }
  removeTopic(topic: Topic): void {
    this.changed = true
    this.topics.delete(topic.topicId)
    this.partitionMaps.delete(topic.topicId)
    this.names.delete(topic.name)
    const key = Placement.collisionKey(topic.name)
    if (key === null) return
    const rest = (this.collisions.get(key) ?? []).filter((n) => n !== topic.name)
    if (rest.length === 0) this.collisions.delete(key)
    else this.collisions.set(key, rest)
  }
  /** The state so far; the draft goes on from it. */
  result(): State {
    if (!this.changed) return this.base
    for (const [topicId, partitions] of this.partitionMaps) {
      const topic = this.topics.get(topicId)
      if (topic !== undefined) this.topics.set(topicId, { ...topic, partitions: partitions.persistent() })
    }
    const state: State = {
      topicsById: this.topics.persistent(),
      topicIdsByName: this.names.persistent(),
      namesByCollisionKey: this.collisions.persistent()
    }
    this.reset(state)
    return state
  }
}

const knownTopic = (draft: Draft, topicId: string, what: string): Topic =>
  draft.topic(topicId) ?? die(`${what} for unknown topic id ${topicId}`)

/**
 * Applies one record. `offset` is the record's offset in the metadata log; only
 * MirrorTopicStateChangeRecord keeps it. Records of other control modules leave the state unchanged.
 */
export const replay = (state: State, record: MetadataRecords.MetadataRecord, offset: bigint): State => {
  const draft = new Draft(state)
  apply(draft, record, offset)
  return draft.result()
}

/**
 * Applies records in order, the i-th at offset `offsetOf(i)`: the same state as `replay` one record
 * at a time, in time linear in the batch.
 */
export const replayAll = (
  state: State,
  records: ReadonlyArray<MetadataRecords.MetadataRecord>,
  offsetOf: (index: number) => bigint
): State => {
  const draft = new Draft(state)
  for (let i = 0; i < records.length; i++) apply(draft, records[i]!, offsetOf(i))
  return draft.result()
}

/**
 * A state records are replayed into in place, batch after batch, for a decision that reads the state
 * each of its steps leaves (a start of many topics): the state it starts from is never changed, and
 * its maps are copied once in all rather than once per batch.
 */
export interface Replayer {
  /** Applies records written one after another from `firstOffset` on. */
  readonly replayAll: (records: ReadonlyArray<MetadataRecords.MetadataRecord>, firstOffset: bigint) => void
  /** The state so far. It shares the replayer's maps, so it is only read before the next `replayAll`. */
  readonly state: () => State
}

export const replayer = (state: State): Replayer => {
  const draft = new Draft(state)
  return {
    replayAll: (records, firstOffset) => {
      for (let i = 0; i < records.length; i++) apply(draft, records[i]!, firstOffset + BigInt(i))
    },
    state: () => draft.result()
  }
}

const apply = (draft: Draft, record: MetadataRecords.MetadataRecord, offset: bigint): void => {
  switch (record.type) {
    case "TopicRecord": {
      const { name, topicId } = record.data
      if (draft.topic(topicId) !== undefined) die(`TopicRecord for existing topic id ${topicId}`)
      if (draft.hasName(name)) die(`TopicRecord for existing topic name ${name}`)
      draft.addName(name, topicId)
      draft.setTopic({
        name,
        topicId,
        partitions: PersistentMap.empty(),
        mirrorName: null,
        desiredMirrorState: -1,
        lastMirrorStateChangeOffset: -1n
      })
      return
    }
    case "PartitionRecord": {
      const d = record.data
      const topic = knownTopic(draft, d.topicId, "PartitionRecord")
      const previous = draft.partition(topic, d.partitionId)
      if (previous !== undefined && d.leaderEpoch < previous.leaderEpoch)
        die(`PartitionRecord moves the leader epoch of ${topic.name}-${d.partitionId} back`)
      draft.setPartition(topic, d.partitionId, {
        replicas: d.replicas,
        isr: d.isr,
        removingReplicas: d.removingReplicas,
        addingReplicas: d.addingReplicas,
        leader: d.leader,
        leaderRecoveryState: d.leaderRecoveryState,
        leaderEpoch: d.leaderEpoch,
        partitionEpoch: d.partitionEpoch
      })
      return
    }
    case "PartitionChangeRecord": {
      const d = record.data
      const topic = knownTopic(draft, d.topicId, "PartitionChangeRecord")
      const p =
        draft.partition(topic, d.partitionId) ??
        die(`PartitionChangeRecord for unknown partition ${topic.name}-${d.partitionId}`)
      let leaderEpoch = p.leaderEpoch
      // v3 carries the new epoch; before v3 (and in v3 when absent) a leader change implies +1.
      if (record.version >= 3 && d.leaderEpoch !== -1) {
        if (d.leaderEpoch < p.leaderEpoch)
          die(`PartitionChangeRecord moves the leader epoch of ${topic.name}-${d.partitionId} back`)
        leaderEpoch = d.leaderEpoch
      } else if (d.leader !== Change.NO_LEADER_CHANGE) leaderEpoch = p.leaderEpoch + 1
      draft.setPartition(topic, d.partitionId, {
        replicas: d.replicas ?? p.replicas,
        isr: d.isr ?? p.isr,
        removingReplicas: d.removingReplicas ?? p.removingReplicas,
        addingReplicas: d.addingReplicas ?? p.addingReplicas,
        leader: d.leader === Change.NO_LEADER_CHANGE ? p.leader : d.leader,
        leaderRecoveryState:
          d.leaderRecoveryState === Change.NO_RECOVERY_STATE_CHANGE ? p.leaderRecoveryState : d.leaderRecoveryState,
        leaderEpoch,
        partitionEpoch: p.partitionEpoch + 1
      })
      return
    }
    case "RemoveTopicRecord":
      draft.removeTopic(knownTopic(draft, record.data.topicId, "RemoveTopicRecord"))
      return
    case "MirrorTopicStateChangeRecord": {
      const topic = knownTopic(draft, record.data.topicId, "MirrorTopicStateChangeRecord")
      draft.setTopic({
        ...topic,
        mirrorName: record.data.mirrorName,
        desiredMirrorState: record.data.desiredState,
        lastMirrorStateChangeOffset: offset
      })
      return
    }
    case "RegisterBrokerRecord":
    case "UnregisterBrokerRecord":
    case "ConfigRecord":
    case "FenceBrokerRecord":
    case "UnfenceBrokerRecord":
    case "FeatureLevelRecord":
    case "ProducerIdsRecord":
    case "BrokerRegistrationChangeRecord":
    case "AccessControlEntryRecord":
    case "RemoveAccessControlEntryRecord":
    case "UserScramCredentialRecord":
    case "RemoveUserScramCredentialRecord":
    case "ClientQuotaRecord":
    case "NoOpRecord":
    case "BeginTransactionRecord":
    case "EndTransactionRecord":
    case "AbortTransactionRecord":
      return
    default: {
      const unknown: never = record
      return unknown
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Queries

export const topicByName = (state: State, name: string): Topic | undefined => {
  const id = state.topicIdsByName.get(name)
  return id === undefined ? undefined : state.topicsById.get(id)
}

export const topicById = (state: State, topicId: string): Topic | undefined => state.topicsById.get(topicId)

/** Partitions whose leader is `brokerId`, by topic name then partition. */
export const partitionsLedBy = (state: State, brokerId: number): ReadonlyArray<TopicIdPartition> =>
  sortedTopics(state).flatMap((t) =>
    sortedPartitions(t)
      .filter(([, p]) => p.leader === brokerId)
      .map(([partitionId]) => ({ topicId: t.topicId, topicName: t.name, partitionId }))
  )

export interface PartitionDescription extends PartitionRegistration {
  readonly partitionIndex: number
}

export interface TopicDescription {
  readonly name: string
  readonly topicId: string
  readonly errorCode: number
  readonly mirrorName: string | null
  readonly desiredMirrorState: number
  readonly partitions: ReadonlyArray<PartitionDescription>
}

/**
 * Topics with their partitions, for the named topics (unknown ones with UNKNOWN_TOPIC_OR_PARTITION)
 * or every topic by name when `names` is absent.
 */
export const describe = (state: State, names?: ReadonlyArray<string>): ReadonlyArray<TopicDescription> => {
  const topics = names === undefined ? sortedTopics(state) : names.map((n) => topicByName(state, n) ?? n)
  return topics.map((t) =>
    typeof t === "string"
      ? {
          name: t,
          topicId: Uuid.ZERO,
          errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          mirrorName: null,
          desiredMirrorState: -1,
          partitions: []
        }
      : {
          name: t.name,
          topicId: t.topicId,
          errorCode: Errors.ErrorCode.NONE,
          mirrorName: t.mirrorName,
          desiredMirrorState: t.desiredMirrorState,
          partitions: sortedPartitions(t).map(([partitionIndex, p]) => ({ partitionIndex, ...p }))
        }
  )
}

const sortedTopics = (state: State): ReadonlyArray<Topic> =>
  [...state.topicsById.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

const sortedPartitions = (t: Topic): ReadonlyArray<readonly [number, PartitionRegistration]> =>
  [...t.partitions.entries()].sort((a, b) => a[0] - b[0])

// ---------------------------------------------------------------------------------------------------
// Decide: shared

/** What the decisions need to know of the brokers. */
export interface ClusterView {
  /** Registered, unfenced and not shutting down: where new replicas may be placed. */
  readonly liveBrokers: ReadonlyArray<number>
  /** Registered, unfenced and not in controlled shutdown: may lead and be in an ISR. */
  readonly isActive: (brokerId: number) => boolean
  /** Registered at all, fenced or not. */
  readonly isRegistered: (brokerId: number) => boolean
}

/**
 * Kafka refuses a topic created or grown by more partitions than this in one operation. Operations
 * over many topics are not capped: the runtime writes what exceeds one batch as a metadata transaction.
 */
export const MAX_RECORDS_PER_USER_OP = 10_000

const TOO_LARGE: ControllerError.ApiError = {
  errorCode: Errors.ErrorCode.POLICY_VIOLATION,
  errorMessage: "Unable to perform excessively large batch operation."
}

const apiError = (errorCode: number, errorMessage: string | null = null): ControllerError.ApiError => ({
  errorCode,
  errorMessage
})

const partitionRecord = (
  topicId: string,
  partitionId: number,
  replicas: ReadonlyArray<number>,
  isr: ReadonlyArray<number>
) =>
  MetadataRecords.make("PartitionRecord", {
    partitionId,
    topicId,
    replicas,
    isr,
    removingReplicas: [],
    addingReplicas: [],
    leader: isr[0] ?? Change.NO_LEADER,
    leaderRecoveryState: Change.RECOVERED,
    leaderEpoch: 0,
    partitionEpoch: 0
  })

/** The PartitionChangeRecord of a planned change; a leader change carries its new epoch (v3). */
const changeRecord = (topicId: string, partitionId: number, p: PartitionRegistration, c: Change.Change) =>
  MetadataRecords.make(
    "PartitionChangeRecord",
    {
      partitionId,
      topicId,
      leaderEpoch: c.leader === Change.NO_LEADER_CHANGE ? -1 : p.leaderEpoch + 1,
      isr: c.isr,
      leader: c.leader,
      leaderRecoveryState: c.leaderRecoveryState,
      ...(c.assignment === null
        ? {}
        : {
            replicas: c.assignment.replicas,
            addingReplicas: c.assignment.addingReplicas,
            removingReplicas: c.assignment.removingReplicas
          })
    },
    3
  )

/** Why a manual assignment is invalid (Kafka's messages), or null. */
const manualAssignmentError = (
  brokerIds: ReadonlyArray<number>,
  replicationFactor: number | undefined,
  cluster: ClusterView
): string | null => {
  if (brokerIds.length === 0) return "The manual partition assignment includes an empty replica list."
  const sorted = [...brokerIds].sort((a, b) => a - b)
  for (let i = 0; i < sorted.length; i++) {
    const b = sorted[i]!
    if (!cluster.isRegistered(b))
      return `The manual partition assignment includes broker ${b}, but no such broker is registered.`
    if (i > 0 && sorted[i - 1] === b) return `The manual partition assignment includes the broker ${b} more than once.`
  }
  if (replicationFactor !== undefined && brokerIds.length !== replicationFactor)
    return `The manual partition assignment includes a partition with ${brokerIds.length} replica(s), but this is not consistent with previous partitions, which have ${replicationFactor} replica(s).`
  return null
}

const placementSeed = (topicName: string): number => Hashing.javaStringHashCode(topicName)

// ---------------------------------------------------------------------------------------------------
// CreateTopics

export type CreatableTopic = CreateTopics.Request["topics"][number]
export type CreatableTopicResult = CreateTopics.Response["topics"][number]

export interface TopicConfig {
  readonly name: string
  readonly value: string
}

export interface CreateTopicsContext {
  /** A fresh random topic id; asked again if it is already used. */
  readonly newTopicId: () => string
  readonly defaultPartitions: number
  readonly defaultReplicationFactor: number
  /** The error for invalid topic configs (unknown names, bad values), or null. */
  readonly validateConfigs: (topic: string, configs: ReadonlyArray<TopicConfig>) => ControllerError.ApiError | null
  /** The ConfigRecords storing a new topic's configs. */
  readonly configRecords: (
    topic: string,
    configs: ReadonlyArray<TopicConfig>
  ) => ReadonlyArray<MetadataRecords.MetadataRecord>
}

const failedTopic = (name: string, e: ControllerError.ApiError): CreatableTopicResult => ({
  name,
  topicId: Uuid.ZERO,
  errorCode: e.errorCode,
  errorMessage: e.errorMessage,
  topicConfigErrorCode: 0,
  numPartitions: -1,
  replicationFactor: -1,
  configs: []
})

type TopicOutcome =
  | { readonly _tag: "Failed"; readonly error: ControllerError.ApiError }
  | {
      readonly _tag: "Created"
      readonly result: CreatableTopicResult
      readonly records: ReadonlyArray<MetadataRecords.MetadataRecord>
    }

const failed = (errorCode: number, errorMessage: string | null = null): TopicOutcome => ({
  _tag: "Failed",
  error: apiError(errorCode, errorMessage)
})

/**
 * createTopics: per topic a TopicRecord, its ConfigRecords (from the context) and one PartitionRecord
 * per partition (leader = first active replica, ISR = the active replicas, epochs 0). Failures are
 * per topic in the response, with Kafka's codes and messages. A v8 `MirrorInfo.TopicId` creates the
 * topic with that id and requires every replica to be on an active broker (KIP-1279). Validate-only
 * requests answer the same and write nothing.
 */
export const createTopics = (
  state: State,
  request: CreateTopics.Request,
  cluster: ClusterView,
  ctx: CreateTopicsContext
): ControllerResult<ReadonlyArray<CreatableTopicResult>> => {
  const occurrences = new Map<string, number>()
  for (const t of request.topics) occurrences.set(t.name, (occurrences.get(t.name) ?? 0) + 1)
  const answered = new Set<string>()
  const results: Array<CreatableTopicResult> = []
  const records: Array<MetadataRecords.MetadataRecord> = []
  // Later topics are decided against the names and ids of the earlier ones. The TopicRecord of the
  // last created topic is replayed only when another topic follows, so a request of one topic (how
  // a mirror start creates each topic) copies nothing.
  const scratch = new Draft(state)
  let unreplayed: MetadataRecords.MetadataRecord | undefined
  for (const t of request.topics) {
    if (answered.has(t.name)) continue
    answered.add(t.name)
    if (occurrences.get(t.name)! > 1) {
      results.push(failedTopic(t.name, apiError(Errors.ErrorCode.INVALID_REQUEST, "Duplicate topic name.")))
      continue
    }
    if (unreplayed !== undefined) apply(scratch, unreplayed, -1n)
    unreplayed = undefined
    const outcome = createTopic(scratch.result(), t, cluster, ctx)
    // Like Kafka, a topic with too many partitions fails the operation as a whole.
    if (outcome._tag === "Failed" && outcome.error === TOO_LARGE) return tooLarge(request.topics)
    if (outcome._tag === "Failed") {
      results.push(failedTopic(t.name, outcome.error))
      continue
    }
    records.push(...outcome.records)
    results.push(outcome.result)
    unreplayed = outcome.records[0]
  }
  return { records: request.validateOnly ? [] : records, response: results }
}

const tooLarge = (
  topics: ReadonlyArray<{ readonly name: string }>
): ControllerResult<ReadonlyArray<CreatableTopicResult>> => ({
  records: [],
  response: [...new Set(topics.map((t) => t.name))].map((name) => failedTopic(name, TOO_LARGE))
})

const createTopic = (state: State, t: CreatableTopic, cluster: ClusterView, ctx: CreateTopicsContext): TopicOutcome => {
  const nameError = Placement.topicNameError(t.name)
  if (nameError !== null) return failed(Errors.ErrorCode.INVALID_TOPIC_EXCEPTION, nameError)
  if (state.topicIdsByName.has(t.name))
    return failed(Errors.ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${t.name}' already exists.`)
  const key = Placement.collisionKey(t.name)
  const colliding = key === null ? undefined : state.namesByCollisionKey.get(key)?.[0]
  if (colliding !== undefined)
    return failed(
      Errors.ErrorCode.INVALID_TOPIC_EXCEPTION,
      `Topic '${t.name}' collides with existing topic: ${colliding}`
    )

  const nullConfigs = t.configs.filter((c) => c.value === null).map((c) => c.name)
  if (nullConfigs.length > 0)
    return failed(
      Errors.ErrorCode.INVALID_CONFIG,
      `Null value not supported for topic configs: ${nullConfigs.join(",")}`
    )
  const configs = t.configs.flatMap((c) => (c.value === null ? [] : [{ name: c.name, value: c.value }]))
  if (configs.length > 0) {
    const configError = ctx.validateConfigs(t.name, configs)
    if (configError !== null) return { _tag: "Failed", error: configError }
  }

  const mirrorTopicId = t.mirrorInfo !== null && t.mirrorInfo.topicId !== Uuid.ZERO ? t.mirrorInfo.topicId : null
  // Each partition: its replicas and its initial ISR.
  const parts: Array<{ readonly replicas: ReadonlyArray<number>; readonly isr: ReadonlyArray<number> }> = []
  if (t.assignments.length > 0) {
    if (t.replicationFactor !== -1)
      return failed(
        Errors.ErrorCode.INVALID_REQUEST,
        "A manual partition assignment was specified, but replication factor was not set to -1."
      )
    if (t.numPartitions !== -1)
      return failed(
        Errors.ErrorCode.INVALID_REQUEST,
        "A manual partition assignment was specified, but numPartitions was not set to -1."
      )
    if (t.assignments.length > MAX_RECORDS_PER_USER_OP) return { _tag: "Failed", error: TOO_LARGE }
    const byIndex = new Map<number, (typeof parts)[number]>()
    let replicationFactor: number | undefined
    for (const a of t.assignments) {
      if (byIndex.has(a.partitionIndex))
        return failed(
          Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Found multiple manual partition assignments for partition ${a.partitionIndex}`
        )
      const e = manualAssignmentError(a.brokerIds, replicationFactor, cluster)
      if (e !== null) return failed(Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT, e)
      replicationFactor = a.brokerIds.length
      const isr = a.brokerIds.filter(cluster.isActive)
      if (isr.length === 0)
        return failed(
          Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `All brokers specified in the manual partition assignment for partition ${a.partitionIndex} are fenced or in controlled shutdown.`
        )
      if (mirrorTopicId !== null && isr.length !== a.brokerIds.length)
        return failed(
          Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Mirror topic '${t.name}' needs every replica on an active broker, but partition ${a.partitionIndex} has replicas on fenced or shutting-down brokers.`
        )
      byIndex.set(a.partitionIndex, { replicas: [...a.brokerIds], isr })
    }
    for (let i = 0; i < byIndex.size; i++) {
      const p = byIndex.get(i)
      if (p === undefined)
        return failed(
          Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          "partitions should be a consecutive 0-based integer sequence"
        )
      parts.push(p)
    }
  } else if (t.replicationFactor < -1 || t.replicationFactor === 0) {
    return failed(
      Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
      "Replication factor must be larger than 0, or -1 to use the default value."
    )
  } else if (t.numPartitions < -1 || t.numPartitions === 0) {
    return failed(Errors.ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
  } else {
    const numPartitions = t.numPartitions === -1 ? ctx.defaultPartitions : t.numPartitions
    const replicationFactor = t.replicationFactor === -1 ? ctx.defaultReplicationFactor : t.replicationFactor
    if (numPartitions > MAX_RECORDS_PER_USER_OP) return { _tag: "Failed", error: TOO_LARGE }
    const placed = Placement.place(cluster.liveBrokers, 0, numPartitions, replicationFactor, placementSeed(t.name))
    if (Placement.isPlacementFailure(placed))
      return failed(
        Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
        `Unable to replicate the partition ${replicationFactor} time(s): ${placed.message}`
      )
    for (const replicas of placed) {
      const isr = replicas.filter(cluster.isActive)
      if (isr.length === 0)
        return failed(
          Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
          `Unable to replicate the partition ${replicationFactor} time(s): All brokers are currently fenced or in controlled shutdown.`
        )
      if (mirrorTopicId !== null && isr.length !== replicas.length)
        return failed(
          Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
          `Unable to replicate mirror topic '${t.name}' ${replicationFactor} time(s) on active brokers only.`
        )
      parts.push({ replicas, isr })
    }
  }

  let topicId: string
  if (mirrorTopicId !== null) {
    if (Uuid.RESERVED.has(mirrorTopicId))
      return failed(Errors.ErrorCode.INVALID_REQUEST, `Topic id ${mirrorTopicId} is reserved.`)
    const holder = state.topicsById.get(mirrorTopicId)
    if (holder !== undefined)
      return failed(
        Errors.ErrorCode.TOPIC_ALREADY_EXISTS,
        `Topic id ${mirrorTopicId} is already used by topic '${holder.name}'.`
      )
    topicId = mirrorTopicId
  } else {
    do topicId = ctx.newTopicId()
    while (state.topicsById.has(topicId) || Uuid.RESERVED.has(topicId))
  }

  const records: Array<MetadataRecords.MetadataRecord> = [
    MetadataRecords.make("TopicRecord", { name: t.name, topicId }),
    // Kafka writes the configs before the partitions, so a broker creating the logs already sees them.
    ...(configs.length > 0 ? ctx.configRecords(t.name, configs) : []),
    ...parts.map((p, i) => partitionRecord(topicId, i, p.replicas, p.isr))
  ]
  return {
    _tag: "Created",
    records,
    result: {
      name: t.name,
      topicId,
      errorCode: Errors.ErrorCode.NONE,
      errorMessage: null,
      topicConfigErrorCode: Errors.ErrorCode.NONE,
      numPartitions: parts.length,
      replicationFactor: parts[0]!.replicas.length,
      configs: configs.map((c) => ({
        name: c.name,
        value: c.value,
        readOnly: false,
        // DYNAMIC_TOPIC_CONFIG: the values this request sets.
        configSource: 1,
        isSensitive: false
      }))
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// CreatePartitions

export type CreatePartitionsResult = CreatePartitions.Response["results"][number]

/**
 * createPartitions: PartitionRecords for the new partitions of each topic, placed like the existing
 * ones (same replication factor, round robin continuing from the current count) or as assigned.
 * Per-topic failures carry Kafka's codes: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS,
 * INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR, INVALID_REQUEST for duplicates.
 */
export const createPartitions = (
  state: State,
  request: CreatePartitions.Request,
  cluster: ClusterView
): ControllerResult<ReadonlyArray<CreatePartitionsResult>> => {
  const occurrences = new Map<string, number>()
  for (const t of request.topics) occurrences.set(t.name, (occurrences.get(t.name) ?? 0) + 1)
  const answered = new Set<string>()
  const results: Array<CreatePartitionsResult> = []
  const records: Array<MetadataRecords.MetadataRecord> = []
  for (const t of request.topics) {
    if (answered.has(t.name)) continue
    answered.add(t.name)
    const outcome: ControllerResult<ControllerError.ApiError> =
      occurrences.get(t.name)! > 1
        ? { records: [], response: apiError(Errors.ErrorCode.INVALID_REQUEST, "Duplicate topic name.") }
        : createPartitionsForTopic(state, t, cluster)
    records.push(...outcome.records)
    // Like Kafka, a topic with too many new partitions fails the operation as a whole.
    if (outcome.response === TOO_LARGE)
      return {
        records: [],
        response: [...new Set(request.topics.map((x) => x.name))].map((name) => ({ name, ...TOO_LARGE }))
      }
    results.push({ name: t.name, ...outcome.response })
  }
  return { records: request.validateOnly ? [] : records, response: results }
}

const createPartitionsForTopic = (
  state: State,
  t: CreatePartitions.Request["topics"][number],
  cluster: ClusterView
): ControllerResult<ControllerError.ApiError> => {
  const fail = (errorCode: number, errorMessage: string | null = null) => ({
    records: [],
    response: apiError(errorCode, errorMessage)
  })
  const topic = topicByName(state, t.name)
  if (topic === undefined)
    return fail(
      Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      Errors.message(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    )
  const current = topic.partitions.size
  if (t.count === current)
    return fail(Errors.ErrorCode.INVALID_PARTITIONS, `Topic already has ${current} partition(s).`)
  if (t.count < current)
    return fail(
      Errors.ErrorCode.INVALID_PARTITIONS,
      `The topic ${t.name} currently has ${current} partition(s); ${t.count} would not be an increase.`
    )
  const additional = t.count - current
  if (t.assignments !== null && t.assignments.length !== additional)
    return fail(
      Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      `Attempted to add ${additional} additional partition(s), but only ${t.assignments.length} assignment(s) were specified.`
    )
  if (additional > MAX_RECORDS_PER_USER_OP) return { records: [], response: TOO_LARGE }
  const first = topic.partitions.get(0) ?? topic.partitions.values().next().value
  if (first === undefined)
    return fail(Errors.ErrorCode.UNKNOWN_SERVER_ERROR, `Invalid state: topic ${t.name} appears to have no partitions.`)
  const replicationFactor = first.replicas.length
  let placements: ReadonlyArray<ReadonlyArray<number>>
  if (t.assignments !== null) {
    for (const a of t.assignments) {
      const e = manualAssignmentError(a.brokerIds, replicationFactor, cluster)
      if (e !== null) return fail(Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT, e)
    }
    placements = t.assignments.map((a) => a.brokerIds)
  } else {
    const placed = Placement.place(cluster.liveBrokers, current, additional, replicationFactor, placementSeed(t.name))
    if (Placement.isPlacementFailure(placed)) return fail(Errors.ErrorCode.INVALID_REPLICATION_FACTOR, placed.message)
    placements = placed
  }
  const records: Array<MetadataRecords.MetadataRecord> = []
  for (const [i, replicas] of placements.entries()) {
    const isr = replicas.filter(cluster.isActive)
    if (isr.length === 0)
      return fail(
        Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        `Unable to replicate the partition ${replicationFactor} time(s): All brokers are currently fenced or in controlled shutdown.`
      )
    records.push(partitionRecord(topic.topicId, current + i, replicas, isr))
  }
  return { records, response: ControllerError.NONE }
}

// ---------------------------------------------------------------------------------------------------
// DeleteTopics

export type DeletableTopicResult = DeleteTopics.Response["responses"][number]

/**
 * deleteTopics: one RemoveTopicRecord per topic named (v0-5 `TopicNames`, v6 `Topics` by name) or
 * identified (v6 `Topics` with a null name). Unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown ids
 * UNKNOWN_TOPIC_ID; duplicates, the zero id and a name that resolves to an id also given get
 * INVALID_REQUEST, as Kafka answers them.
 */
export const deleteTopics = (
  state: State,
  request: DeleteTopics.Request
): ControllerResult<ReadonlyArray<DeletableTopicResult>> => {
  const names = [...request.topicNames, ...request.topics.flatMap((t) => (t.name === null ? [] : [t.name]))]
  const ids = request.topics.flatMap((t) => (t.name === null ? [t.topicId] : []))
  const response: Array<DeletableTopicResult> = []
  const answer = (name: string | null, topicId: string, errorCode: number, errorMessage: string | null = null) =>
    response.push({ name, topicId, errorCode, errorMessage })

  const nameCounts = new Map<string, number>()
  for (const n of names) nameCounts.set(n, (nameCounts.get(n) ?? 0) + 1)
  const idCounts = new Map<string, number>()
  for (const id of ids) idCounts.set(id, (idCounts.get(id) ?? 0) + 1)

  // Topic id → name of what will be deleted, in request order.
  const toDelete = new Map<string, string>()
  for (const [id, count] of idCounts) {
    if (id === Uuid.ZERO) {
      for (let i = 0; i < count; i++) answer(null, id, Errors.ErrorCode.INVALID_REQUEST, "Invalid topic id.")
      continue
    }
    if (count > 1) {
      answer(null, id, Errors.ErrorCode.INVALID_REQUEST, "Duplicate topic ID.")
      continue
    }
    const topic = state.topicsById.get(id)
    if (topic === undefined)
      answer(null, id, Errors.ErrorCode.UNKNOWN_TOPIC_ID, Errors.message(Errors.ErrorCode.UNKNOWN_TOPIC_ID))
    else toDelete.set(id, topic.name)
  }
  for (const [name, count] of nameCounts) {
    if (count > 1) {
      answer(name, Uuid.ZERO, Errors.ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
      continue
    }
    const topic = topicByName(state, name)
    if (topic === undefined)
      answer(
        name,
        Uuid.ZERO,
        Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.message(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
      )
    else if (toDelete.has(topic.topicId))
      answer(
        name,
        Uuid.ZERO,
        Errors.ErrorCode.INVALID_REQUEST,
        "The provided topic name maps to an ID that was already supplied."
      )
    else toDelete.set(topic.topicId, name)
  }
  const records = [...toDelete.keys()].map((topicId) => MetadataRecords.make("RemoveTopicRecord", { topicId }))
  for (const [topicId, name] of toDelete) answer(name, topicId, Errors.ErrorCode.NONE)
  return { records, response }
}

// ---------------------------------------------------------------------------------------------------
// AlterPartition

export type AlterPartitionResponse = AlterPartition.Response
type AlterPartitionResult = AlterPartition.Response["topics"][number]["partitions"][number]

const partitionError = (partitionIndex: number, errorCode: number): AlterPartitionResult => ({
  partitionIndex,
  errorCode,
  leaderId: 0,
  leaderEpoch: 0,
  isr: [],
  leaderRecoveryState: 0,
  partitionEpoch: 0
})

/**
 * alterPartition: ISR (and leader recovery state) changes asked for by partition leaders, each a
 * PartitionChangeRecord (partition epoch + 1). The requesting broker's epoch must be its current
 * registration (else the whole request fails with STALE_BROKER_EPOCH). Per partition, in this order:
 * UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER when the request is ahead of us,
 * FENCED_LEADER_EPOCH on a stale leader epoch, NOT_LEADER_OR_FOLLOWER when the sender does not lead,
 * INVALID_UPDATE_VERSION on a stale partition epoch, INVALID_REQUEST for an ISR outside the replicas,
 * without the leader or with more than the leader while recovering, INELIGIBLE_REPLICA
 * (OPERATION_NOT_ATTEMPTED before v2) for members that are unregistered, fenced, shutting down or of
 * another broker epoch. An unchanged ISR writes nothing and answers the current state.
 *
 * `brokerEpochs`: every registered broker's current epoch. `apiVersion` picks the topic key (name
 * before v2) and the error codes of old versions.
 */
export const alterPartition = (
  state: State,
  request: AlterPartition.Request,
  brokerEpochs: ReadonlyMap<number, bigint>,
  cluster: ClusterView,
  apiVersion = 3
): Either.Either<ControllerResult<AlterPartitionResponse>, ControllerError.StaleBrokerEpoch> => {
  const registered = brokerEpochs.get(request.brokerId)
  if (registered === undefined)
    return Either.left(
      new ControllerError.StaleBrokerEpoch({ message: `No broker registration found for broker ${request.brokerId}` })
    )
  if (registered !== request.brokerEpoch)
    return Either.left(
      new ControllerError.StaleBrokerEpoch({
        message: `Expected broker epoch ${registered}, but got broker epoch ${request.brokerEpoch}`
      })
    )
  const records: Array<MetadataRecords.MetadataRecord> = []
  let scratch = state
  const topics = request.topics.map((td): AlterPartitionResponse["topics"][number] => {
    const topicId = apiVersion > 1 ? td.topicId : scratch.topicIdsByName.get(td.topicName)
    const topic = topicId === undefined || topicId === Uuid.ZERO ? undefined : scratch.topicsById.get(topicId)
    if (topic === undefined) {
      const code = apiVersion > 1 ? Errors.ErrorCode.UNKNOWN_TOPIC_ID : Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      return {
        topicName: td.topicName,
        topicId: td.topicId,
        partitions: td.partitions.map((pd) => partitionError(pd.partitionIndex, code))
      }
    }
    const partitions = td.partitions.map((pd): AlterPartitionResult => {
      const p = scratch.topicsById.get(topic.topicId)!.partitions.get(pd.partitionIndex)
      const newIsr =
        apiVersion >= 3 ? pd.newIsrWithEpochs : pd.newIsr.map((brokerId) => ({ brokerId, brokerEpoch: -1n }))
      const error = validateAlterPartition(request.brokerId, p, pd, newIsr, brokerEpochs, cluster, apiVersion)
      if (error !== Errors.ErrorCode.NONE || p === undefined) return partitionError(pd.partitionIndex, error)
      const change = Change.plan(p, {
        election: "online",
        isAcceptableLeader: cluster.isActive,
        targetIsr: newIsr.map((b) => b.brokerId),
        targetLeaderRecoveryState: pd.leaderRecoveryState
      })
      if (change !== null) {
        const record = changeRecord(topic.topicId, pd.partitionIndex, p, change)
        records.push(record)
        scratch = replay(scratch, record, -1n)
        // Only a completed reassignment could move leadership here; the sender must then refresh.
        if (change.leader !== Change.NO_LEADER_CHANGE && change.leader !== request.brokerId)
          return partitionError(
            pd.partitionIndex,
            apiVersion > 1 ? Errors.ErrorCode.NEW_LEADER_ELECTED : Errors.ErrorCode.FENCED_LEADER_EPOCH
          )
      }
      const now = scratch.topicsById.get(topic.topicId)!.partitions.get(pd.partitionIndex)!
      return {
        partitionIndex: pd.partitionIndex,
        errorCode: Errors.ErrorCode.NONE,
        leaderId: now.leader,
        leaderEpoch: now.leaderEpoch,
        isr: now.isr,
        leaderRecoveryState: now.leaderRecoveryState,
        partitionEpoch: now.partitionEpoch
      }
    })
    return { topicName: td.topicName, topicId: td.topicId, partitions }
  })
  return Either.right({ records, response: { throttleTimeMs: 0, errorCode: Errors.ErrorCode.NONE, topics } })
}

const validateAlterPartition = (
  brokerId: number,
  p: PartitionRegistration | undefined,
  pd: AlterPartition.Request["topics"][number]["partitions"][number],
  newIsr: ReadonlyArray<{ readonly brokerId: number; readonly brokerEpoch: bigint }>,
  brokerEpochs: ReadonlyMap<number, bigint>,
  cluster: ClusterView,
  apiVersion: number
): number => {
  if (p === undefined) return Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
  // A request ahead of our state means this node is likely no longer the active controller.
  if (pd.leaderEpoch > p.leaderEpoch || pd.partitionEpoch > p.partitionEpoch) return Errors.ErrorCode.NOT_CONTROLLER
  if (pd.leaderEpoch < p.leaderEpoch) return Errors.ErrorCode.FENCED_LEADER_EPOCH
  if (brokerId !== p.leader) return Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER
  if (pd.partitionEpoch < p.partitionEpoch) return Errors.ErrorCode.INVALID_UPDATE_VERSION
  const ids = newIsr.map((b) => b.brokerId)
  if (new Set(ids).size !== ids.length || !ids.every((b) => p.replicas.includes(b)))
    return Errors.ErrorCode.INVALID_REQUEST
  if (!ids.includes(p.leader)) return Errors.ErrorCode.INVALID_REQUEST
  if (pd.leaderRecoveryState === Change.RECOVERING && ids.length > 1) return Errors.ErrorCode.INVALID_REQUEST
  if (p.leaderRecoveryState === Change.RECOVERED && pd.leaderRecoveryState === Change.RECOVERING)
    return Errors.ErrorCode.INVALID_REQUEST
  const ineligible = newIsr.some((b) => {
    const epoch = brokerEpochs.get(b.brokerId)
    return epoch === undefined || !cluster.isActive(b.brokerId) || (b.brokerEpoch !== -1n && b.brokerEpoch !== epoch)
  })
  if (ineligible) return apiVersion > 1 ? Errors.ErrorCode.INELIGIBLE_REPLICA : Errors.ErrorCode.OPERATION_NOT_ATTEMPTED
  return Errors.ErrorCode.NONE
}

// ---------------------------------------------------------------------------------------------------
// Broker lifecycle: leader election and ISR shrink

/** Whether a topic allows unclean leader election (`unclean.leader.election.enable`). */
export type UncleanElectionEnabled = (topicName: string) => boolean

const electFor = (
  state: State,
  select: (p: PartitionRegistration) => boolean,
  request: (t: Topic, p: PartitionRegistration) => Change.ChangeRequest
): ControllerResult<ReadonlyArray<TopicIdPartition>> => {
  const records: Array<MetadataRecords.MetadataRecord> = []
  const changed: Array<TopicIdPartition> = []
  for (const t of sortedTopics(state))
    for (const [partitionId, p] of sortedPartitions(t)) {
      if (!select(p)) continue
      const change = Change.plan(p, request(t, p))
      if (change === null) continue
      records.push(changeRecord(t.topicId, partitionId, p, change))
      changed.push({ topicId: t.topicId, topicName: t.name, partitionId })
    }
  return { records, response: changed }
}

/**
 * handleBrokerFenced: the broker leaves every ISR it is in, and every partition it led gets a new
 * leader: the first replica (in replica order) that is in the remaining ISR and active; failing that,
 * if the topic allows unclean election, the first active replica (ISR = [it], leader recovering);
 * failing that, no leader (-1), keeping the last ISR member so it can lead again when it returns.
 * Each change is a PartitionChangeRecord; a leader change carries leader epoch + 1. The broker counts
 * as inactive whatever `cluster` says, since its own fencing record is not yet applied. The response
 * lists the partitions changed.
 */
export const handleBrokerFenced = (
  state: State,
  brokerId: number,
  cluster: ClusterView,
  uncleanEnabled: UncleanElectionEnabled
): ControllerResult<ReadonlyArray<TopicIdPartition>> =>
  electFor(
    state,
    (p) => p.isr.includes(brokerId),
    (t, p) => ({
      election: uncleanEnabled(t.name) ? "unclean" : "online",
      isAcceptableLeader: (r) => r !== brokerId && cluster.isActive(r),
      targetIsr: p.isr.filter((r) => r !== brokerId)
    })
  )

/** handleBrokerShutdown: a broker entering controlled shutdown is handled as a fenced one. */
export const handleBrokerShutdown: typeof handleBrokerFenced = handleBrokerFenced

/**
 * handleBrokerUnfenced: partitions without a leader elect one again, now that `brokerId` may lead (it
 * counts as active whatever `cluster` says): the first active in-sync replica, or, where the topic
 * allows unclean election, the first active replica.
 */
export const handleBrokerUnfenced = (
  state: State,
  brokerId: number,
  cluster: ClusterView,
  uncleanEnabled: UncleanElectionEnabled
): ControllerResult<ReadonlyArray<TopicIdPartition>> =>
  electFor(
    state,
    (p) => p.leader === Change.NO_LEADER,
    (t) => ({
      election: uncleanEnabled(t.name) ? "unclean" : "online",
      isAcceptableLeader: (r) => r === brokerId || cluster.isActive(r)
    })
  )

// ---------------------------------------------------------------------------------------------------
// ElectLeaders

export type ElectLeadersResponse = ElectLeaders.Response
type PartitionResult = ElectLeaders.Response["replicaElectionResults"][number]["partitionResult"][number]

/** ElectLeaders election types. */
export const PREFERRED = 0
export const UNCLEAN = 1

/**
 * electLeaders: preferred (0) elects the first replica when it is active and in sync; unclean (1)
 * gives a leaderless partition the first active in-sync replica or else the first active replica.
 * Per partition: ELECTION_NOT_NEEDED (already the preferred leader / already led),
 * PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION. With
 * null partitions every partition is tried and those needing no election are left out. An unknown
 * election type fails the request (INVALID_REQUEST).
 */
export const electLeaders = (
  state: State,
  request: ElectLeaders.Request,
  cluster: ClusterView
): Either.Either<ControllerResult<ElectLeadersResponse>, ControllerError.InvalidRequest> => {
  if (request.electionType !== PREFERRED && request.electionType !== UNCLEAN)
    return Either.left(new ControllerError.InvalidRequest({ message: `Unknown election type ${request.electionType}` }))
  const election: Change.Election = request.electionType === PREFERRED ? "preferred" : "unclean"
  const records: Array<MetadataRecords.MetadataRecord> = []
  let scratch = state
  const electOne = (topicName: string, partitionId: number): PartitionResult => {
    const result = (errorCode: number, errorMessage: string | null = null): PartitionResult => ({
      partitionId,
      errorCode,
      errorMessage: errorMessage ?? (errorCode === 0 ? null : Errors.message(errorCode))
    })
    const topic = topicByName(scratch, topicName)
    if (topic === undefined) return result(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `No such topic as ${topicName}`)
    const p = topic.partitions.get(partitionId)
    if (p === undefined)
      return result(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `No such partition as ${topicName}-${partitionId}`)
    if (election === "preferred" ? p.leader === p.replicas[0] : p.leader !== Change.NO_LEADER)
      return result(Errors.ErrorCode.ELECTION_NOT_NEEDED)
    const change = Change.plan(p, { election, isAcceptableLeader: cluster.isActive })
    if (change === null)
      return result(
        election === "preferred"
          ? Errors.ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
          : Errors.ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
      )
    const record = changeRecord(topic.topicId, partitionId, p, change)
    records.push(record)
    scratch = replay(scratch, record, -1n)
    return result(Errors.ErrorCode.NONE)
  }
  const replicaElectionResults =
    request.topicPartitions === null
      ? sortedTopics(state).map((t) => ({
          topic: t.name,
          partitionResult: sortedPartitions(t)
            .map(([partitionId]) => electOne(t.name, partitionId))
            .filter((r) => r.errorCode !== Errors.ErrorCode.ELECTION_NOT_NEEDED)
        }))
      : request.topicPartitions.map((tp) => ({
          topic: tp.topic,
          partitionResult: tp.partitions.map((partitionId) => electOne(tp.topic, partitionId))
        }))
  return Either.right({
    records,
    response: { throttleTimeMs: 0, errorCode: Errors.ErrorCode.NONE, replicaElectionResults }
  })
}

// ---------------------------------------------------------------------------------------------------
// Partition reassignments

export type AlterPartitionReassignmentsResponse = AlterPartitionReassignments.Response
type ReassignablePartitionResponse = AlterPartitionReassignmentsResponse["responses"][number]["partitions"][number]

/**
 * alterPartitionReassignments: per partition, a target replica list starts (or replaces) a
 * reassignment: a PartitionChangeRecord with replicas = target + (current − target), adding = target −
 * current, removing = current − target, which completes at once when nothing is to be added (and a
 * removed leader gives way at once); null Replicas cancel one, reverting to the replicas before it (ISR
 * cut to them). Completion of a reassignment that adds replicas comes later, with the ISR change that
 * brings the last of them in sync (`alterPartition`). Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION,
 * INVALID_REPLICA_ASSIGNMENT (empty, duplicate or unregistered brokers; a cancel that would leave no
 * in-sync replica), INVALID_REPLICATION_FACTOR when the replica count would change and
 * `allowReplicationFactorChange` (v1) is false, NO_REASSIGNMENT_IN_PROGRESS for a cancel of nothing.
 * Partitions before a failed one in the same request keep their records (partial success, as Kafka).
 */
export const alterPartitionReassignments = (
  state: State,
  request: AlterPartitionReassignments.Request,
  cluster: ClusterView
): ControllerResult<AlterPartitionReassignmentsResponse> => {
  const records: Array<MetadataRecords.MetadataRecord> = []
  let scratch = state
  const one = (
    topicName: string,
    partitionIndex: number,
    target: ReadonlyArray<number> | null
  ): ReassignablePartitionResponse => {
    const fail = (errorCode: number, errorMessage: string): ReassignablePartitionResponse => ({
      partitionIndex,
      errorCode,
      errorMessage
    })
    const topic = topicByName(scratch, topicName)
    const p = topic?.partitions.get(partitionIndex)
    if (topic === undefined || p === undefined)
      return fail(
        Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        `Unable to find partition ${topicName}:${partitionIndex}.`
      )
    const original = Change.originalReplicas(p)
    let assignment: Change.Assignment
    if (target === null) {
      if (!Change.isReassigning(p))
        return fail(
          Errors.ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
          `No ongoing reassignment for partition ${topicName}:${partitionIndex}.`
        )
      if (!p.isr.some((r) => original.includes(r)))
        return fail(
          Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          `Unable to revert partition assignment for ${topicName}:${partitionIndex} because it would require an unclean leader election.`
        )
      assignment = { replicas: original, addingReplicas: [], removingReplicas: [] }
    } else {
      const invalid = manualAssignmentError(target, undefined, cluster)
      if (invalid !== null) return fail(Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT, invalid)
      if (!request.allowReplicationFactorChange && target.length !== original.length)
        return fail(
          Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
          `The replication factor of partition ${topicName}:${partitionIndex} would change from ${original.length} to ${target.length}, and the request does not allow it.`
        )
      assignment = Change.reassignment(p.replicas, target)
    }
    const change = Change.plan(p, {
      election: "online",
      isAcceptableLeader: cluster.isActive,
      targetAssignment: assignment
    })
    if (change !== null) {
      const record = changeRecord(topic.topicId, partitionIndex, p, change)
      records.push(record)
      scratch = replay(scratch, record, -1n)
    }
    return { partitionIndex, errorCode: Errors.ErrorCode.NONE, errorMessage: null }
  }
  const responses = request.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((pr) => one(t.name, pr.partitionIndex, pr.replicas))
  }))
  return {
    records,
    response: {
      throttleTimeMs: 0,
      allowReplicationFactorChange: request.allowReplicationFactorChange,
      errorCode: Errors.ErrorCode.NONE,
      errorMessage: null,
      responses
    }
  }
}

export type ListPartitionReassignmentsResponse = ListPartitionReassignments.Response

/**
 * listPartitionReassignments: the partitions with a reassignment in progress (replicas, adding,
 * removing), of the named topics and partitions or of every topic when `topics` is null. Unknown
 * topics and partitions, and partitions not being reassigned, are left out, as Kafka does.
 */
export const listPartitionReassignments = (
  state: State,
  request: ListPartitionReassignments.Request
): ListPartitionReassignmentsResponse => {
  const wanted: ReadonlyArray<readonly [Topic, ReadonlyArray<number> | null]> =
    request.topics === null
      ? sortedTopics(state).map((t) => [t, null] as const)
      : request.topics.flatMap((rt) => {
          const t = topicByName(state, rt.name)
          return t === undefined ? [] : [[t, rt.partitionIndexes] as const]
        })
  const topics = wanted.flatMap(([t, indexes]) => {
    const partitions = (indexes ?? sortedPartitions(t).map(([i]) => i)).flatMap((partitionIndex) => {
      const p = t.partitions.get(partitionIndex)
      return p === undefined || !Change.isReassigning(p)
        ? []
        : [
            {
              partitionIndex,
              replicas: p.replicas,
              addingReplicas: p.addingReplicas,
              removingReplicas: p.removingReplicas
            }
          ]
    })
    return partitions.length === 0 ? [] : [{ name: t.name, partitions }]
  })
  return { throttleTimeMs: 0, errorCode: Errors.ErrorCode.NONE, errorMessage: null, topics }
}

// ---------------------------------------------------------------------------------------------------
// Automatic leader rebalance

export interface RebalanceLeadersOptions {
  /** `leader.imbalance.per.broker.percentage`: the imbalance a broker may have before it is rebalanced. */
  readonly imbalancePerBrokerPercentage: number
  /** At most this many elections in one result (default 1,000); the runtime runs again for the rest. */
  readonly maxElections?: number
}

/**
 * rebalanceLeaders (`auto.leader.rebalance.enable`): a broker's imbalance is the share of the partitions
 * it is the preferred (first) replica of that another broker leads. For every broker whose imbalance
 * is above the percentage, each of those partitions whose preferred replica is active and in the ISR gets
 * a preferred election: a PartitionChangeRecord naming it leader (leader epoch + 1). Brokers at or
 * below the percentage are left alone. The response lists the partitions moved (at most `maxElections`).
 */
export const rebalanceLeaders = (
  state: State,
  cluster: ClusterView,
  options: RebalanceLeadersOptions
): ControllerResult<ReadonlyArray<TopicIdPartition>> => {
  const preferredCount = new Map<number, number>()
  const notLeading = new Map<number, number>()
  for (const t of state.topicsById.values())
    for (const p of t.partitions.values()) {
      const preferred = p.replicas[0]
      if (preferred === undefined) continue
      preferredCount.set(preferred, (preferredCount.get(preferred) ?? 0) + 1)
      if (p.leader !== preferred) notLeading.set(preferred, (notLeading.get(preferred) ?? 0) + 1)
    }
  const imbalanced = new Set<number>()
  for (const [broker, total] of preferredCount)
    if (((notLeading.get(broker) ?? 0) * 100) / total > options.imbalancePerBrokerPercentage) imbalanced.add(broker)
  if (imbalanced.size === 0) return { records: [], response: [] }
  const max = options.maxElections ?? 1000
  const elected = electFor(
    state,
    (p) => {
      const preferred = p.replicas[0]
      return (
        preferred !== undefined &&
        p.leader !== preferred &&
        imbalanced.has(preferred) &&
        p.isr.includes(preferred) &&
        cluster.isActive(preferred)
      )
    },
    () => ({ election: "preferred", isAcceptableLeader: cluster.isActive })
  )
  return elected.records.length <= max
    ? elected
    : { records: elected.records.slice(0, max), response: elected.response.slice(0, max) }
}

// ---------------------------------------------------------------------------------------------------
// BumpLeaderEpochs (KIP-1279)

export type BumpLeaderEpochsResponse = BumpLeaderEpochs.Response

const MAX_INT32 = 2_147_483_647

/**
 * bumpLeaderEpochs: for each partition whose leader epoch is ≤ MinLeaderEpoch, a PartitionChangeRecord
 * v3 whose LeaderEpoch is max(MinLeaderEpoch + 1, current) with the leader unchanged; partitions
 * already above are skipped. The response has ErrorCode 0; its Topics list only partitions that
 * failed (UNKNOWN_TOPIC_ID, under the topic id since there is no name; UNKNOWN_TOPIC_OR_PARTITION),
 * so a request without failures gets an empty list, as in the prototype.
 */
export const bumpLeaderEpochs = (
  state: State,
  request: Pick<BumpLeaderEpochs.Request, "topics">
): ControllerResult<BumpLeaderEpochsResponse> => {
  const records: Array<MetadataRecords.MetadataRecord> = []
  const failures: Array<BumpLeaderEpochsResponse["topics"][number]> = []
  let scratch = state
  for (const tr of request.topics) {
    const failed: Array<BumpLeaderEpochsResponse["topics"][number]["partitions"][number]> = []
    const topic = scratch.topicsById.get(tr.topicId)
    for (const pr of tr.partitions) {
      const p = topic === undefined ? undefined : scratch.topicsById.get(tr.topicId)!.partitions.get(pr.partitionIndex)
      if (topic === undefined || p === undefined) {
        const errorCode =
          topic === undefined ? Errors.ErrorCode.UNKNOWN_TOPIC_ID : Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        failed.push({ partitionIndex: pr.partitionIndex, errorCode, errorMessage: Errors.message(errorCode) })
        continue
      }
      if (p.leaderEpoch > pr.minLeaderEpoch) continue
      // No int32 epoch can be above the largest one.
      if (pr.minLeaderEpoch >= MAX_INT32) {
        failed.push({
          partitionIndex: pr.partitionIndex,
          errorCode: Errors.ErrorCode.INVALID_REQUEST,
          errorMessage: `MinLeaderEpoch ${pr.minLeaderEpoch} leaves no leader epoch above it.`
        })
        continue
      }
      const record = MetadataRecords.make(
        "PartitionChangeRecord",
        {
          partitionId: pr.partitionIndex,
          topicId: tr.topicId,
          leaderEpoch: Math.max(pr.minLeaderEpoch + 1, p.leaderEpoch)
        },
        3
      )
      records.push(record)
      scratch = replay(scratch, record, -1n)
    }
    if (failed.length > 0) failures.push({ topicName: topic?.name ?? tr.topicId, partitions: failed })
  }
  return {
    records,
    response: { throttleTimeMs: 0, errorCode: Errors.ErrorCode.NONE, errorMessage: null, topics: failures }
  }
}
