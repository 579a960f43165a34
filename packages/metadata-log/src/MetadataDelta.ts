/**
 * MetadataDelta: the changes a run of metadata records makes to an image. It is built on one image,
 * replays records one at a time (every record type, with Kafka's semantics), answers change queries
 * (changed, created and deleted topics, local replica changes of a broker, changed configs, brokers
 * and features) and applies itself into the next image.
 *
 * A delta is a builder owned by one reader (the loader, a snapshot reader, a test): replay mutates
 * the delta, never the image. Replay checks the record against the metadata it follows and throws
 * `InvalidMetadataRecord` when they disagree. The delta must not decide anything: what the records
 * say happened, happened.
 */
import { type MetadataRecords, MirrorPartitionState, type Uuid } from "@clustermirror/protocol"
import { Option } from "effect"
import type {
  AclEntry,
  ClientQuotaEntityPart,
  ScramCredential,
  BrokerId,
  BrokerRegistration,
  ConfigResource,
  ConfigResourceImage,
  MetadataImage,
  PartitionIndex,
  PartitionRegistration,
  ProducerIdsImage,
  TopicId,
  TopicImage
} from "./MetadataImage.js"
import {
  canonicalEntity,
  clientQuotaEntityKey,
  ConfigResourceType,
  LeaderRecoveryState,
  NO_LEADER_CHANGE,
  replayProducerIds,
  resourceKey
} from "./MetadataImage.js"
import type { MetadataProvenance } from "./MetadataProvenance.js"
import { InvalidMetadataRecord } from "./MetadataLogError.js"

type MetadataRecord = MetadataRecords.MetadataRecord
type RecordOf<K extends MetadataRecords.MetadataRecordType> = MetadataRecords.MetadataRecordOf<K>

const invalid = (record: MetadataRecord, message: string): InvalidMetadataRecord =>
  new InvalidMetadataRecord({ message, recordType: record.type })

// ---------------------------------------------------------------------------------------------------
// Record → value conversions shared with snapshots and the controller

/** The registration a RegisterBrokerRecord describes. */
export const brokerFromRecord = (r: RecordOf<"RegisterBrokerRecord">): BrokerRegistration => ({
  id: r.data.brokerId,
  epoch: r.data.brokerEpoch,
  incarnationId: r.data.incarnationId,
  listeners: r.data.endPoints.map((e) => ({
    name: e.name,
    host: e.host,
    port: e.port,
    securityProtocol: e.securityProtocol
  })),
  supportedFeatures: r.data.features.map((f) => ({
    name: f.name,
    minSupportedVersion: f.minSupportedVersion,
    maxSupportedVersion: f.maxSupportedVersion
  })),
  rack: r.data.rack,
  fenced: r.data.fenced,
  inControlledShutdown: r.data.inControlledShutdown,
  isMigratingZkBroker: r.data.isMigratingZkBroker,
  logDirs: r.data.logDirs
})

// Replica lists repeat across partitions (every RF=1 partition on broker 1 has [1]): registrations share
// one frozen array per distinct list, so a broker's image does not grow by seven arrays per partition.
const interned = new Map<string, ReadonlyArray<unknown>>()
const shared = <A extends number | string>(list: ReadonlyArray<A>): ReadonlyArray<A> => {
  const key = `${typeof list[0]}:${list.join(",")}`
  const found = interned.get(key)
  if (found !== undefined) return found as ReadonlyArray<A>
  if (interned.size >= 100_000) interned.clear()
  const frozen = Object.freeze([...list])
  interned.set(key, frozen)
  return frozen
}
const sharedOrNull = <A extends number | string>(list: ReadonlyArray<A> | null): ReadonlyArray<A> | null =>
  list === null ? null : shared(list)

/** The registration a PartitionRecord describes (null ELR lists read as empty, as in Kafka). */
export const partitionFromRecord = (r: RecordOf<"PartitionRecord">): PartitionRegistration => ({
  replicas: shared(r.data.replicas),
  directories: shared(r.data.directories),
  isr: shared(r.data.isr),
  removingReplicas: shared(r.data.removingReplicas),
  addingReplicas: shared(r.data.addingReplicas),
  leader: r.data.leader,
  leaderRecoveryState: r.data.leaderRecoveryState,
  leaderEpoch: r.data.leaderEpoch,
  partitionEpoch: r.data.partitionEpoch,
  eligibleLeaderReplicas: shared(r.data.eligibleLeaderReplicas ?? []),
  lastKnownElr: shared(r.data.lastKnownElr ?? [])
})

/**
 * Applies a PartitionChangeRecord to a partition, as Kafka's brokers and controller do: null lists
 * and the -2 leader mean "unchanged", -1 recovery state means "unchanged", the partition epoch grows
 * by one on every change. The leader epoch: a v3 record's explicit `LeaderEpoch` (KIP-1279) wins when
 * it is not -1; otherwise a leader field that is present (even naming the same leader, which is how
 * the controller asks for a bump) adds one. An explicit epoch below the current one is invalid.
 */
export const mergePartitionChange = (
  prev: PartitionRegistration,
  record: RecordOf<"PartitionChangeRecord">
): PartitionRegistration => {
  const d = record.data
  const leaderPresent = d.leader !== NO_LEADER_CHANGE
  let leaderEpoch = prev.leaderEpoch
  if (record.version >= 3 && d.leaderEpoch !== -1) {
    if (d.leaderEpoch < prev.leaderEpoch)
      throw invalid(record, `leader epoch ${d.leaderEpoch} is below the current ${prev.leaderEpoch}`)
    leaderEpoch = d.leaderEpoch
  } else if (leaderPresent) leaderEpoch = prev.leaderEpoch + 1
  let leaderRecoveryState = prev.leaderRecoveryState
  if (d.leaderRecoveryState !== -1) {
    if (
      d.leaderRecoveryState !== LeaderRecoveryState.RECOVERED &&
      d.leaderRecoveryState !== LeaderRecoveryState.RECOVERING
    )
      throw invalid(record, `unknown leader recovery state ${d.leaderRecoveryState}`)
    leaderRecoveryState = d.leaderRecoveryState
  }
  return {
    replicas: sharedOrNull(d.replicas) ?? prev.replicas,
    directories: sharedOrNull(d.directories) ?? prev.directories,
    isr: sharedOrNull(d.isr) ?? prev.isr,
    removingReplicas: sharedOrNull(d.removingReplicas) ?? prev.removingReplicas,
    addingReplicas: sharedOrNull(d.addingReplicas) ?? prev.addingReplicas,
    leader: leaderPresent ? d.leader : prev.leader,
    leaderRecoveryState,
    leaderEpoch,
    partitionEpoch: prev.partitionEpoch + 1,
    eligibleLeaderReplicas: sharedOrNull(d.eligibleLeaderReplicas) ?? prev.eligibleLeaderReplicas,
    lastKnownElr: sharedOrNull(d.lastKnownElr) ?? prev.lastKnownElr
  }
}

/** The desired mirror state a MirrorTopicStateChangeRecord carries. */
export const desiredStateOf = (
  record: RecordOf<"MirrorTopicStateChangeRecord">
): MirrorPartitionState.MirrorPartitionState =>
  Option.getOrElse(MirrorPartitionState.fromByte(record.data.desiredState), () => {
    throw invalid(record, `unknown mirror partition state ${record.data.desiredState}`)
  })

// ---------------------------------------------------------------------------------------------------
// Query results

/** One topic changed by the delta. */
export interface TopicChange {
  readonly id: TopicId
  readonly name: string
  /** The topic in the image the delta is built on; undefined when the delta creates it. */
  readonly before: TopicImage | undefined
  readonly after: TopicImage
  /** The new registration of every partition the delta created or changed. */
  readonly changedPartitions: ReadonlyMap<PartitionIndex, PartitionRegistration>
  /** A MirrorTopicStateChangeRecord for the topic was replayed. */
  readonly mirrorStateChanged: boolean
}

export interface LocalPartitionRef {
  readonly topicId: TopicId
  readonly topicName: string
  readonly partitionId: PartitionIndex
}

export interface LocalPartition extends LocalPartitionRef {
  readonly partition: PartitionRegistration
}

export interface LocalMirrorTopicState {
  readonly topicId: TopicId
  readonly topicName: string
  readonly mirrorName: string | null
  readonly desiredMirrorState: MirrorPartitionState.MirrorPartitionState
}

/** What a delta means for the replicas one broker hosts. */
export interface LocalReplicaChanges {
  /** Partitions this broker leads whose registration is new or changed. */
  readonly leaders: ReadonlyArray<LocalPartition>
  /** Partitions this broker follows whose registration is new or changed. */
  readonly followers: ReadonlyArray<LocalPartition>
  /** Partitions this broker hosted that are deleted or no longer assigned to it. */
  readonly deletes: ReadonlyArray<LocalPartitionRef>
  /**
   * Topics with a replica on this broker whose mirror name changed, or whose desired mirror state
   * changed to something other than UNKNOWN (KIP-1279's reporting rule).
   */
  readonly mirrorTopicStates: ReadonlyArray<LocalMirrorTopicState>
}

// ---------------------------------------------------------------------------------------------------
// The delta

interface TopicDraft {
  readonly id: TopicId
  readonly name: string
  /** The image's topic this draft changes; undefined when the delta (re)creates the topic. */
  readonly base: TopicImage | undefined
  readonly partitions: Map<PartitionIndex, PartitionRegistration>
  mirrorName: string | null
  desiredMirrorState: MirrorPartitionState.MirrorPartitionState
  mirrorStateChanged: boolean
}

interface ConfigDraft extends ConfigResource {
  /** Start from no values rather than the image's (the topic was deleted). */
  reset: boolean
  readonly changes: Map<string, string | null>
}

const draftAfter = (d: TopicDraft): TopicImage => {
  let partitions: ReadonlyMap<PartitionIndex, PartitionRegistration>
  if (d.base === undefined) partitions = new Map(d.partitions)
  else if (d.partitions.size === 0) partitions = d.base.partitions
  else {
    const merged = new Map(d.base.partitions)
    for (const [id, p] of d.partitions) merged.set(id, p)
    partitions = merged
  }
  return {
    name: d.name,
    id: d.id,
    partitions,
    mirrorName: d.mirrorName,
    desiredMirrorState: d.desiredMirrorState
  }
}

export class MetadataDelta {
  private readonly featureChanges = new Map<string, number | null>()
  private readonly brokerChanges = new Map<BrokerId, BrokerRegistration | null>()
  private readonly topicDrafts = new Map<TopicId, TopicDraft>()
  /** Names of the topics this delta creates, to keep names unique. */
  private readonly createdNames = new Map<string, TopicId>()
  private readonly deletedIds = new Set<TopicId>()
  private readonly configDrafts = new Map<string, ConfigDraft>()
  private producerIds: ProducerIdsImage | undefined = undefined
  private readonly aclChanges = new Map<Uuid.Uuid, AclEntry | null>()
  /** By user, then mechanism id; null removes. */
  private readonly scramChanges = new Map<string, Map<number, ScramCredential | null>>()
  /** By entity key: the entity's parts and its quota changes (null removes). */
  private readonly quotaChanges = new Map<
    string,
    { readonly entity: ReadonlyArray<ClientQuotaEntityPart>; readonly changes: Map<string, number | null> }
  >()
  private replayed = 0

  constructor(readonly image: MetadataImage) {}

  /** How many records this delta replayed. */
  get recordCount(): number {
    return this.replayed
  }

  /** Replays every record in order. */
  replayAll(records: Iterable<MetadataRecord>): this {
    for (const r of records) this.replay(r)
    return this
  }

  /** Replays one record; throws `InvalidMetadataRecord` when it does not fit the metadata so far. */
  replay(record: MetadataRecord): void {
    switch (record.type) {
      case "RegisterBrokerRecord":
        this.brokerChanges.set(record.data.brokerId, brokerFromRecord(record))
        break
      case "UnregisterBrokerRecord":
        this.currentBroker(record, record.data.brokerId, record.data.brokerEpoch)
        this.brokerChanges.set(record.data.brokerId, null)
        break
      case "FenceBrokerRecord":
        this.changeBroker(record, record.data.id, record.data.epoch, (b) => ({ ...b, fenced: true }))
        break
      case "UnfenceBrokerRecord":
        this.changeBroker(record, record.data.id, record.data.epoch, (b) => ({ ...b, fenced: false }))
        break
      case "BrokerRegistrationChangeRecord":
        this.replayBrokerChange(record)
        break
      case "TopicRecord":
        this.replayTopic(record)
        break
      case "PartitionRecord": {
        const draft = this.draftOf(record, record.data.topicId)
        draft.partitions.set(record.data.partitionId, partitionFromRecord(record))
        break
      }
      case "PartitionChangeRecord": {
        const draft = this.draftOf(record, record.data.topicId)
        const id = record.data.partitionId
        const prev = draft.partitions.get(id) ?? draft.base?.partitions.get(id)
        if (prev === undefined) throw invalid(record, `unknown partition ${record.data.topicId}-${id}`)
        draft.partitions.set(id, mergePartitionChange(prev, record))
        break
      }
      case "RemoveTopicRecord":
        this.replayRemoveTopic(record)
        break
      case "MirrorTopicStateChangeRecord": {
        const draft = this.draftOf(record, record.data.topicId)
        draft.mirrorName = record.data.mirrorName
        draft.desiredMirrorState = desiredStateOf(record)
        draft.mirrorStateChanged = true
        break
      }
      case "ConfigRecord": {
        const draft = this.configDraft(record.data.resourceType, record.data.resourceName)
        draft.changes.set(record.data.name, record.data.value)
        break
      }
      case "FeatureLevelRecord":
        // Level 0 withdraws the feature, as in Kafka.
        this.featureChanges.set(record.data.name, record.data.featureLevel === 0 ? null : record.data.featureLevel)
        break
      case "ProducerIdsRecord": {
        const next = replayProducerIds(this.producerIds ?? this.image.producerIds, record.data)
        if (typeof next === "string") throw invalid(record, next)
        this.producerIds = next
        break
      }
      case "AccessControlEntryRecord":
        this.aclChanges.set(record.data.id, { ...record.data })
        break
      case "RemoveAccessControlEntryRecord": {
        const id = record.data.id
        const exists = this.aclChanges.has(id) ? this.aclChanges.get(id) !== null : this.image.acls.has(id)
        if (!exists) throw invalid(record, `unknown ACL ${id}`)
        this.aclChanges.set(id, null)
        break
      }
      case "UserScramCredentialRecord": {
        const { name, mechanism, salt, storedKey, serverKey, iterations } = record.data
        this.scramDraft(name).set(mechanism, { salt, storedKey, serverKey, iterations })
        break
      }
      case "RemoveUserScramCredentialRecord": {
        const { name, mechanism } = record.data
        if (this.scramCredential(name, mechanism) === undefined)
          throw invalid(record, `no SCRAM credential of mechanism ${mechanism} for user ${name}`)
        this.scramDraft(name).set(mechanism, null)
        break
      }
      case "ClientQuotaRecord": {
        const key = clientQuotaEntityKey(record.data.entity)
        let d = this.quotaChanges.get(key)
        if (d === undefined) {
          d = { entity: canonicalEntity(record.data.entity), changes: new Map() }
          this.quotaChanges.set(key, d)
        }
        d.changes.set(record.data.key, record.data.remove ? null : record.data.value)
        break
      }
      case "NoOpRecord":
      case "BeginTransactionRecord":
      case "EndTransactionRecord":
      case "AbortTransactionRecord":
        // Transactions are the loader's business (it publishes only whole ones); no state here.
        break
      default:
        return absurd(record)
    }
    this.replayed++
  }

  // ------------------------------------------------------------------------------------- scram

  private scramDraft(user: string): Map<number, ScramCredential | null> {
    let d = this.scramChanges.get(user)
    if (d === undefined) {
      d = new Map()
      this.scramChanges.set(user, d)
    }
    return d
  }

  /** A user's credential as of the records replayed so far. */
  scramCredential(user: string, mechanism: number): ScramCredential | undefined {
    const d = this.scramChanges.get(user)
    if (d?.has(mechanism)) return d.get(mechanism) ?? undefined
    return this.image.scram.get(user)?.get(mechanism)
  }

  /** The users whose SCRAM credentials changed. */
  changedScramUsers(): ReadonlySet<string> {
    return new Set(this.scramChanges.keys())
  }

  private applyScram(): MetadataImage["scram"] {
    const scram = this.image.scram
    if (this.scramChanges.size === 0) return scram
    const out = new Map(scram)
    for (const [user, changes] of this.scramChanges) {
      const creds = applyChanges(scram.get(user) ?? new Map<number, ScramCredential>(), changes)
      if (creds.size === 0) out.delete(user)
      else out.set(user, creds)
    }
    return out
  }

  // ------------------------------------------------------------------------------ client quotas

  /** Whether a client quota changed. */
  clientQuotasChanged(): boolean {
    return this.quotaChanges.size > 0
  }

  private applyClientQuotas(): MetadataImage["clientQuotas"] {
    const quotas = this.image.clientQuotas
    if (this.quotaChanges.size === 0) return quotas
    const out = new Map(quotas)
    for (const [key, { entity, changes }] of this.quotaChanges) {
      const values = applyChanges(quotas.get(key)?.quotas ?? new Map<string, number>(), changes)
      if (values.size === 0) out.delete(key)
      else out.set(key, { entity, quotas: values })
    }
    return out
  }

  // ------------------------------------------------------------------------------------ brokers

  private currentBroker(record: MetadataRecord, id: BrokerId, epoch: bigint): BrokerRegistration {
    const b = this.brokerChanges.has(id) ? this.brokerChanges.get(id) : this.image.cluster.brokers.get(id)
    if (b === undefined || b === null) throw invalid(record, `unknown broker ${id}`)
    if (b.epoch !== epoch) throw invalid(record, `broker ${id} has epoch ${b.epoch}, not ${epoch}`)
    return b
  }

  private changeBroker(
    record: MetadataRecord,
    id: BrokerId,
    epoch: bigint,
    f: (b: BrokerRegistration) => BrokerRegistration
  ): void {
    this.brokerChanges.set(id, f(this.currentBroker(record, id, epoch)))
  }

  private replayBrokerChange(record: RecordOf<"BrokerRegistrationChangeRecord">): void {
    const d = record.data
    this.changeBroker(record, d.brokerId, d.brokerEpoch, (b) => {
      let next = b
      // Fenced: -1 unfence, 0 unchanged, 1 fence. InControlledShutdown: 0 unchanged, 1 entering.
      if (d.fenced === -1) next = { ...next, fenced: false }
      else if (d.fenced === 1) next = { ...next, fenced: true }
      else if (d.fenced !== 0) throw invalid(record, `unknown fencing change ${d.fenced}`)
      if (d.inControlledShutdown === 1) next = { ...next, inControlledShutdown: true }
      else if (d.inControlledShutdown !== 0)
        throw invalid(record, `unknown controlled shutdown change ${d.inControlledShutdown}`)
      if (d.logDirs.length > 0) next = { ...next, logDirs: d.logDirs }
      return next
    })
  }

  // ------------------------------------------------------------------------------------- topics

  /** The topic as of the records replayed so far. */
  private currentTopic(id: TopicId): TopicDraft | TopicImage | undefined {
    const draft = this.topicDrafts.get(id)
    if (draft !== undefined) return draft
    if (this.deletedIds.has(id)) return undefined
    return this.image.topics.byId.get(id)
  }

  private topicIdByName(name: string): TopicId | undefined {
    const created = this.createdNames.get(name)
    if (created !== undefined) return created
    const existing = this.image.topics.byName.get(name)
    return existing === undefined || this.deletedIds.has(existing.id) ? undefined : existing.id
  }

  private draftOf(record: MetadataRecord, id: TopicId): TopicDraft {
    const existing = this.topicDrafts.get(id)
    if (existing !== undefined) return existing
    const base = this.deletedIds.has(id) ? undefined : this.image.topics.byId.get(id)
    if (base === undefined) throw invalid(record, `unknown topic ID ${id}`)
    const draft: TopicDraft = {
      id,
      name: base.name,
      base,
      partitions: new Map(),
      mirrorName: base.mirrorName,
      desiredMirrorState: base.desiredMirrorState,
      mirrorStateChanged: false
    }
    this.topicDrafts.set(id, draft)
    return draft
  }

  private replayTopic(record: RecordOf<"TopicRecord">): void {
    const { name, topicId } = record.data
    if (this.currentTopic(topicId) !== undefined) throw invalid(record, `topic ID ${topicId} already exists`)
    if (this.topicIdByName(name) !== undefined) throw invalid(record, `topic ${name} already exists`)
    this.topicDrafts.set(topicId, {
      id: topicId,
      name,
      base: undefined,
      partitions: new Map(),
      mirrorName: null,
      desiredMirrorState: MirrorPartitionState.UNKNOWN,
      mirrorStateChanged: false
    })
    this.createdNames.set(name, topicId)
  }

  private replayRemoveTopic(record: RecordOf<"RemoveTopicRecord">): void {
    const id = record.data.topicId
    const topic = this.currentTopic(id)
    if (topic === undefined) throw invalid(record, `unknown topic ID ${id}`)
    const draft = this.topicDrafts.get(id)
    if (draft !== undefined) {
      this.topicDrafts.delete(id)
      if (draft.base === undefined) this.createdNames.delete(draft.name)
    }
    if (this.image.topics.byId.has(id)) this.deletedIds.add(id)
    // A deleted topic takes its configs with it, as in Kafka.
    const config = this.configDraft(ConfigResourceType.TOPIC, topic.name)
    config.reset = true
    config.changes.clear()
  }

  // ------------------------------------------------------------------------------------ configs

  private configDraft(type: number, name: string): ConfigDraft {
    const key = resourceKey(type, name)
    let draft = this.configDrafts.get(key)
    if (draft === undefined) {
      draft = { type, name, reset: false, changes: new Map() }
      this.configDrafts.set(key, draft)
    }
    return draft
  }

  // ------------------------------------------------------------------------------------ queries

  /** Every topic the delta created or changed (not the deleted ones), by ID. */
  changedTopics(): ReadonlyMap<TopicId, TopicChange> {
    const out = new Map<TopicId, TopicChange>()
    for (const d of this.topicDrafts.values())
      out.set(d.id, {
        id: d.id,
        name: d.name,
        before: d.base,
        after: draftAfter(d),
        changedPartitions: d.partitions,
        mirrorStateChanged: d.mirrorStateChanged
      })
    return out
  }

  /** Topics created by the delta (including a topic deleted and re-created under the same ID). */
  createdTopicIds(): ReadonlySet<TopicId> {
    const out = new Set<TopicId>()
    for (const d of this.topicDrafts.values()) if (d.base === undefined) out.add(d.id)
    return out
  }

  /** Topics of the base image the delta deletes. */
  deletedTopicIds(): ReadonlySet<TopicId> {
    return this.deletedIds
  }

  /** What the delta means for the replicas of `brokerId` (Kafka's local replica changes). */
  localChanges(brokerId: BrokerId): LocalReplicaChanges {
    const leaders: LocalPartition[] = []
    const followers: LocalPartition[] = []
    const deletes: LocalPartitionRef[] = []
    const mirrorTopicStates: LocalMirrorTopicState[] = []
    for (const id of this.deletedIds) {
      const topic = this.image.topics.byId.get(id)!
      for (const [partitionId, p] of topic.partitions)
        if (p.replicas.includes(brokerId)) deletes.push({ topicId: id, topicName: topic.name, partitionId })
    }
    for (const d of this.topicDrafts.values()) {
      for (const [partitionId, p] of d.partitions) {
        const prev = d.base?.partitions.get(partitionId)
        const ref = { topicId: d.id, topicName: d.name, partitionId }
        if (!p.replicas.includes(brokerId)) {
          if (prev?.replicas.includes(brokerId) === true) deletes.push(ref)
        } else if (prev === undefined || prev.partitionEpoch !== p.partitionEpoch) {
          ;(p.leader === brokerId ? leaders : followers).push({ ...ref, partition: p })
        }
      }
      if (d.mirrorStateChanged) {
        const nameChanged = d.mirrorName !== (d.base?.mirrorName ?? null)
        const stateChanged =
          d.desiredMirrorState !== (d.base?.desiredMirrorState ?? MirrorPartitionState.UNKNOWN) &&
          d.desiredMirrorState !== MirrorPartitionState.UNKNOWN
        if ((nameChanged || stateChanged) && hostsReplica(draftAfter(d), brokerId))
          mirrorTopicStates.push({
            topicId: d.id,
            topicName: d.name,
            mirrorName: d.mirrorName,
            desiredMirrorState: d.desiredMirrorState
          })
      }
    }
    return { leaders, followers, deletes, mirrorTopicStates }
  }

  /** Config resources whose values the delta touched. */
  changedConfigs(): ReadonlyArray<ConfigResource> {
    return [...this.configDrafts.values()].map((d) => ({ type: d.type, name: d.name }))
  }

  /** Brokers registered, changed (fencing, shutdown, dirs) or unregistered (undefined). */
  changedBrokers(): ReadonlyMap<BrokerId, BrokerRegistration | undefined> {
    const out = new Map<BrokerId, BrokerRegistration | undefined>()
    for (const [id, b] of this.brokerChanges) out.set(id, b ?? undefined)
    return out
  }

  featuresChanged(): boolean {
    return this.featureChanges.size > 0
  }

  /** New feature levels by name; 0 means withdrawn. */
  changedFeatures(): ReadonlyMap<string, number> {
    const out = new Map<string, number>()
    for (const [name, level] of this.featureChanges) out.set(name, level ?? 0)
    return out
  }

  aclsChanged(): boolean {
    return this.aclChanges.size > 0
  }

  producerIdsChanged(): boolean {
    return this.producerIds !== undefined
  }

  // -------------------------------------------------------------------------------------- apply

  /** The image after every record replayed so far, stamped with `provenance`. */
  apply(provenance: MetadataProvenance): MetadataImage {
    const image = this.image
    return {
      provenance,
      features: applyChanges(image.features, this.featureChanges),
      cluster:
        this.brokerChanges.size === 0
          ? image.cluster
          : { brokers: applyChanges(image.cluster.brokers, this.brokerChanges) },
      topics: this.applyTopics(),
      configs: this.applyConfigs(),
      producerIds: this.producerIds ?? image.producerIds,
      acls: applyChanges(image.acls, this.aclChanges),
      scram: this.applyScram(),
      clientQuotas: this.applyClientQuotas()
    }
  }

  private applyTopics(): MetadataImage["topics"] {
    const topics = this.image.topics
    if (this.topicDrafts.size === 0 && this.deletedIds.size === 0) return topics
    const byId = new Map(topics.byId)
    const byName = new Map(topics.byName)
    for (const id of this.deletedIds) {
      byId.delete(id)
      byName.delete(topics.byId.get(id)!.name)
    }
    for (const d of this.topicDrafts.values()) {
      const after = draftAfter(d)
      byId.set(d.id, after)
      byName.set(d.name, after)
    }
    return { byId, byName }
  }

  private applyConfigs(): MetadataImage["configs"] {
    const configs = this.image.configs
    if (this.configDrafts.size === 0) return configs
    const out = new Map(configs)
    for (const [key, d] of this.configDrafts) {
      const values = new Map(d.reset ? [] : (configs.get(key)?.values ?? []))
      for (const [name, value] of d.changes) {
        if (value === null) values.delete(name)
        else values.set(name, value)
      }
      if (values.size === 0) out.delete(key)
      else {
        const resource: ConfigResourceImage = { type: d.type, name: d.name, values }
        out.set(key, resource)
      }
    }
    return out
  }
}

/** A delta on `image` holding `records`. */
export const make = (image: MetadataImage, records: Iterable<MetadataRecord> = []): MetadataDelta =>
  new MetadataDelta(image).replayAll(records)

const hostsReplica = (topic: TopicImage, brokerId: BrokerId): boolean => {
  for (const p of topic.partitions.values()) if (p.replicas.includes(brokerId)) return true
  return false
}

const applyChanges = <K, V>(base: ReadonlyMap<K, V>, changes: ReadonlyMap<K, V | null>): ReadonlyMap<K, V> => {
  if (changes.size === 0) return base
  const out = new Map(base)
  for (const [k, v] of changes) {
    if (v === null) out.delete(k)
    else out.set(k, v)
  }
  return out
}

const absurd = (record: never): never => {
  throw new Error(`unhandled metadata record ${JSON.stringify(record)}`)
}
