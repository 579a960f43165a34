/**
 * The classic consumer-group coordinator: group membership (JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup), committed offsets (OffsetCommit, OffsetFetch, OffsetDelete) and group listing (ListGroups,
 * DescribeGroups, DeleteGroups) with Kafka's classic-protocol semantics, so that real consumers
 * (kafkajs, librdkafka, the Java consumer with `group.protocol=classic`) run against it.
 *
 * Inputs and outputs are plain domain values with Kafka error codes as numbers; request handlers own
 * the wire. Durable state is event-sourced into `__consumer_offsets` through the `GroupLog` port:
 * decide the records, replay them into a candidate state, append, then answer. Membership, waiting
 * requests and timers are runtime state on Effect's `Clock` (of the runtime it is given). A load
 * restores each group as last persisted: members with their protocol metadata and assignments,
 * generation, protocol, leader, Stable or Empty, and every restored member gets a fresh session
 * timeout, so a leadership move of `__consumer_offsets` does not rebalance the groups. It must not know
 * the wire format of requests or do I/O other than through its ports.
 */
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { ConsumerProtocol, Errors, GroupRecords } from "@clustermirror/protocol"
import { Either, HashMap, Option, Runtime } from "effect"
import type { Buffer } from "node:buffer"
import * as ConsumerGroupCoordinator from "./ConsumerGroupCoordinator.js"
import * as ConsumerGroups from "./ConsumerGroups.js"
import * as Clock from "./internal/Clock.js"
import * as GroupState from "./internal/groupState.js"

type Timer = Clock.Timer

const E = Errors.ErrorCode

/** The protocol type of consumers' classic groups, whose member metadata is a `ConsumerProtocol` subscription. */
const CONSUMER_PROTOCOL_TYPE = "consumer"

// ---------------------------------------------------------------------------------------------------
// Ports

/** Durable storage of coordinator records (`__consumer_offsets`). */
export interface GroupLog {
  /** Appends key/value records durably (value null = tombstone) and resolves when they are committed. */
  append(records: ReadonlyArray<{ key: Buffer; value: Buffer | null }>): Promise<void>
  /** Every record in the log, oldest first, for replay on start. */
  readAll(): AsyncIterable<{ key: Buffer; value: Buffer | null }> | Iterable<{ key: Buffer; value: Buffer | null }>
}

/** An in-memory `GroupLog`: the records appended so far, oldest first. */
export interface MemoryGroupLog extends GroupLog {
  readonly records: ReadonlyArray<{ readonly key: Buffer; readonly value: Buffer | null }>
}

export const memoryGroupLog = (
  initial: ReadonlyArray<{ readonly key: Buffer; readonly value: Buffer | null }> = []
): MemoryGroupLog => {
  const records = [...initial]
  return {
    records,
    append: async (batch) => {
      records.push(...batch)
    },
    readAll: () => [...records]
  }
}

// ---------------------------------------------------------------------------------------------------
// Configuration

export interface GroupCoordinatorConfig {
  /** `group.initial.rebalance.delay.ms`: how long the first rebalance of an Empty group waits for more members. */
  readonly groupInitialRebalanceDelayMs: number
  /** `group.min.session.timeout.ms` */
  readonly groupMinSessionTimeoutMs: number
  /** `group.max.session.timeout.ms` */
  readonly groupMaxSessionTimeoutMs: number
  /** `group.max.size` */
  readonly groupMaxSize: number
  /** `offset.metadata.max.bytes`: longer commit metadata is refused with OFFSET_METADATA_TOO_LARGE. */
  readonly offsetMetadataMaxBytes: number
}

export const defaultConfig: GroupCoordinatorConfig = {
  groupInitialRebalanceDelayMs: 3000,
  groupMinSessionTimeoutMs: 6000,
  groupMaxSessionTimeoutMs: 1_800_000,
  groupMaxSize: 2_147_483_647,
  offsetMetadataMaxBytes: 4096
}

// ---------------------------------------------------------------------------------------------------
// Domain inputs and outputs

export type GroupStateName = "Empty" | "PreparingRebalance" | "CompletingRebalance" | "Stable" | "Dead"

export interface GroupProtocol {
  readonly name: string
  readonly metadata: Uint8Array
}

export interface JoinGroupRequest {
  readonly groupId: string
  /** "" for a member joining for the first time. */
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly protocolType: string
  /** In the member's order of preference. */
  readonly protocols: ReadonlyArray<GroupProtocol>
  readonly sessionTimeoutMs: number
  /** JoinGroup v0 has none: handlers pass the session timeout, as Kafka does. */
  readonly rebalanceTimeoutMs: number
  readonly clientId: string
  readonly clientHost: string
  /** Set by handlers for JoinGroup v4+: an unknown dynamic member first gets MEMBER_ID_REQUIRED. */
  readonly requireKnownMemberId: boolean
  readonly reason?: string | null
}

export interface JoinGroupMember {
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly metadata: Uint8Array
}

export interface JoinGroupResult {
  readonly errorCode: number
  readonly generationId: number
  readonly protocolType: string | null
  readonly protocolName: string | null
  readonly leader: string
  /** True when a static leader rejoined a Stable group: it must not compute a new assignment (v9+). */
  readonly skipAssignment: boolean
  readonly memberId: string
  /** Every member with its metadata for the selected protocol, for the leader only. */
  readonly members: ReadonlyArray<JoinGroupMember>
}

export interface SyncGroupRequest {
  readonly groupId: string
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
  /** SyncGroup v5+; null when the request version has none. */
  readonly protocolType: string | null
  readonly protocolName: string | null
  /** The leader's assignment; empty for followers. */
  readonly assignments: ReadonlyArray<{ readonly memberId: string; readonly assignment: Uint8Array }>
}

export interface SyncGroupResult {
  readonly errorCode: number
  readonly protocolType: string | null
  readonly protocolName: string | null
  readonly assignment: Uint8Array
}

export interface HeartbeatRequest {
  readonly groupId: string
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
}

export interface HeartbeatResult {
  readonly errorCode: number
}

export interface LeaveGroupRequest {
  readonly groupId: string
  /** One member for LeaveGroup v0-2 (its `memberId`), a batch for v3+. */
  readonly members: ReadonlyArray<{
    readonly memberId: string
    readonly groupInstanceId: string | null
    readonly reason?: string | null
  }>
}

export interface LeaveGroupResult {
  /** Whole-request error; handlers for v0-2 answer with the single member's code when this is NONE. */
  readonly errorCode: number
  readonly members: ReadonlyArray<{
    readonly memberId: string
    readonly groupInstanceId: string | null
    readonly errorCode: number
  }>
}

export interface OffsetCommitRequest {
  /** The OffsetCommit version: a consumer group's members commit with v9+ (member epochs). */
  readonly apiVersion?: number
  readonly groupId: string
  /** -1 for commits from outside group management (admin tools, `assign()` consumers). */
  readonly generationId: number
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly topics: ReadonlyArray<{
    readonly name: string
    readonly partitions: ReadonlyArray<{
      readonly partitionIndex: number
      readonly committedOffset: bigint
      /** -1 when unknown (v0-5). */
      readonly committedLeaderEpoch: number
      readonly committedMetadata: string | null
    }>
  }>
}

/** TxnOffsetCommit: offsets committed in a producer's transaction (v0-2 carry no member or generation: -1, ""). */
export interface TxnOffsetCommitRequest extends OffsetCommitRequest {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly producerEpoch: number
}

/** A COMMIT or ABORT marker of a producer's transaction (WriteTxnMarkers) for this shard's partition. */
export interface TxnCompletion {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly commit: boolean
  readonly coordinatorEpoch: number
}

export interface OffsetCommitResult {
  readonly topics: ReadonlyArray<{
    readonly name: string
    readonly partitions: ReadonlyArray<{ readonly partitionIndex: number; readonly errorCode: number }>
  }>
}

export interface OffsetFetchRequest {
  readonly groupId: string
  /** OffsetFetch v7+ RequireStable: a partition with offsets in an open transaction answers UNSTABLE_OFFSET_COMMIT. */
  readonly requireStable?: boolean
  /** null: every partition the group has an offset for. */
  readonly topics: ReadonlyArray<{ readonly name: string; readonly partitionIndexes: ReadonlyArray<number> }> | null
}

export interface OffsetFetchPartition {
  readonly partitionIndex: number
  /** -1 when the group has no committed offset for the partition. */
  readonly committedOffset: bigint
  readonly committedLeaderEpoch: number
  readonly metadata: string | null
  readonly errorCode: number
}

export interface OffsetFetchResult {
  readonly errorCode: number
  readonly topics: ReadonlyArray<{ readonly name: string; readonly partitions: ReadonlyArray<OffsetFetchPartition> }>
}

export interface ListGroupsRequest {
  /** Case-insensitive state names; empty means all. */
  readonly statesFilter?: ReadonlyArray<string>
  /** Case-insensitive group types ("classic", "consumer"); empty means all. */
  readonly typesFilter?: ReadonlyArray<string>
}

export interface ListedGroup {
  readonly groupId: string
  readonly protocolType: string
  readonly groupState: GroupStateName | ConsumerGroups.GroupStateName
  readonly groupType: "classic" | "consumer"
}

export interface DescribedMember {
  readonly memberId: string
  readonly groupInstanceId: string | null
  readonly clientId: string
  readonly clientHost: string
  /** The member's metadata for the selected protocol; empty unless the group is Stable (as in Kafka). */
  readonly memberMetadata: Uint8Array
  /** Empty unless the group is Stable. */
  readonly memberAssignment: Uint8Array
}

export interface DescribedGroup {
  /** GROUP_ID_NOT_FOUND (69) for an unknown group: handlers for DescribeGroups v0-5 answer NONE instead. */
  readonly errorCode: number
  readonly groupId: string
  readonly groupState: GroupStateName
  readonly protocolType: string
  /** The selected protocol; "" unless the group is Stable. */
  readonly protocolData: string
  readonly members: ReadonlyArray<DescribedMember>
}

export interface DeletedGroup {
  readonly groupId: string
  readonly errorCode: number
}

/** OffsetDelete: the partitions of each topic whose committed offsets the group should lose. */
export interface OffsetDeleteRequest {
  readonly groupId: string
  readonly topics: ReadonlyArray<{
    readonly name: string
    readonly partitions: ReadonlyArray<{ readonly partitionIndex: number }>
  }>
}

export interface OffsetDeleteResult {
  /** A whole-request error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, NOT_COORDINATOR, ...): then no topics. */
  readonly errorCode: number
  readonly topics: ReadonlyArray<{
    readonly name: string
    readonly partitions: ReadonlyArray<{ readonly partitionIndex: number; readonly errorCode: number }>
  }>
}

/** What the deletion decisions need to know of a live group. */
export interface GroupView {
  readonly state: GroupStateName
  readonly protocolType: string | null
  /** The topics the members of the current generation subscribe to; null when not known (see `subscribedTopics`). */
  readonly subscribedTopics: ReadonlySet<string> | null
}

// ---------------------------------------------------------------------------------------------------
// Pure decisions

/** The records an offset commit produces and its response, for a commit already validated. */
export const decideOffsetCommit = (
  request: OffsetCommitRequest,
  nowMs: number,
  offsetMetadataMaxBytes: number
): { readonly records: ReadonlyArray<GroupRecords.GroupRecord>; readonly response: OffsetCommitResult } => {
  const records: Array<GroupRecords.GroupRecord> = []
  const topics = request.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p) => {
      const metadata = p.committedMetadata ?? ""
      if (metadata.length > offsetMetadataMaxBytes)
        return { partitionIndex: p.partitionIndex, errorCode: E.OFFSET_METADATA_TOO_LARGE }
      records.push(
        GroupRecords.offsetCommit(
          { group: request.groupId, topic: t.name, partition: p.partitionIndex },
          { offset: p.committedOffset, leaderEpoch: p.committedLeaderEpoch, metadata, commitTimestamp: BigInt(nowMs) }
        )
      )
      return { partitionIndex: p.partitionIndex, errorCode: E.NONE }
    })
  }))
  return { records, response: { topics } }
}

/**
 * The topics a classic group's members subscribe to, from their protocol metadata for the selected
 * protocol: only for the "consumer" protocol type (empty without members); null for another protocol
 * type, before a protocol is selected, or when some member's metadata is not a consumer subscription.
 */
export const subscribedTopics = (
  protocolType: string | null,
  protocolName: string | null,
  metadata: ReadonlyArray<Uint8Array>
): ReadonlySet<string> | null => {
  if (protocolType !== CONSUMER_PROTOCOL_TYPE) return null
  if (metadata.length === 0) return new Set()
  if (protocolName === null) return null
  const topics = new Set<string>()
  for (const m of metadata) {
    const subscription = ConsumerProtocol.decodeSubscription(m)
    if (Either.isLeft(subscription)) return null
    for (const t of subscription.right.topics) topics.add(t)
  }
  return topics
}

/**
 * Whether OffsetDelete must keep a group's offsets of a topic: its members subscribe to it, or the
 * group uses the consumer protocol and its subscriptions are not known.
 */
export const isSubscribedToTopic = (group: GroupView, topic: string): boolean =>
  group.subscribedTopics?.has(topic) ?? group.protocolType === CONSUMER_PROTOCOL_TYPE

/**
 * DeleteGroups: for each Empty group a tombstone for every committed offset, for every offset only in
 * an open transaction, and for its metadata; NON_EMPTY_GROUP for a group with members (or rebalancing),
 * GROUP_ID_NOT_FOUND for an unknown or Dead one. A name asked twice is answered once.
 */
export const decideDeleteGroups = (
  groupIds: ReadonlyArray<string>,
  groupOf: (groupId: string) => GroupView | undefined,
  committed: GroupState.State
): {
  readonly records: ReadonlyArray<GroupRecords.GroupRecord>
  readonly results: ReadonlyArray<DeletedGroup>
} => {
  const records: Array<GroupRecords.GroupRecord> = []
  const results: Array<DeletedGroup> = []
  for (const groupId of new Set(groupIds)) {
    const group = groupOf(groupId)
    if (group === undefined || group.state === "Dead") {
      results.push({ groupId, errorCode: E.GROUP_ID_NOT_FOUND })
      continue
    }
    if (group.state !== "Empty") {
      results.push({ groupId, errorCode: E.NON_EMPTY_GROUP })
      continue
    }
    const committedKeys = new Set<string>()
    for (const o of GroupState.offsetsOf(committed, groupId)) {
      committedKeys.add(GroupState.partitionKey(o.topic, o.partition))
      records.push(GroupRecords.offsetCommitTombstone({ group: groupId, topic: o.topic, partition: o.partition }))
    }
    // One tombstone per partition: it also drops the partition's offsets from open transactions.
    for (const p of GroupState.pendingPartitionsOf(committed, groupId))
      if (!committedKeys.has(GroupState.partitionKey(p.topic, p.partition)))
        records.push(GroupRecords.offsetCommitTombstone({ group: groupId, topic: p.topic, partition: p.partition }))
    records.push(GroupRecords.groupMetadataTombstone(groupId))
    results.push({ groupId, errorCode: E.NONE })
  }
  return { records, results }
}

/**
 * OffsetDelete: GROUP_ID_NOT_FOUND for an unknown or Dead group, NON_EMPTY_GROUP for a group with
 * members that does not use the consumer protocol; else every asked partition answers, with
 * GROUP_SUBSCRIBED_TO_TOPIC where the group subscribes to the topic, and a tombstone for each other
 * partition the group has an offset for, committed or in an open transaction.
 */
export const decideOffsetDelete = (
  request: OffsetDeleteRequest,
  group: GroupView | undefined,
  committed: GroupState.State
): { readonly records: ReadonlyArray<GroupRecords.GroupRecord>; readonly response: OffsetDeleteResult } => {
  if (group === undefined || group.state === "Dead")
    return { records: [], response: { errorCode: E.GROUP_ID_NOT_FOUND, topics: [] } }
  if (group.state !== "Empty" && group.protocolType !== CONSUMER_PROTOCOL_TYPE)
    return { records: [], response: { errorCode: E.NON_EMPTY_GROUP, topics: [] } }
  const pending = new Set(
    GroupState.pendingPartitionsOf(committed, request.groupId).map((p) => GroupState.partitionKey(p.topic, p.partition))
  )
  const records: Array<GroupRecords.GroupRecord> = []
  const topics = request.topics.map((t) => {
    const subscribed = isSubscribedToTopic(group, t.name)
    return {
      name: t.name,
      partitions: t.partitions.map(({ partitionIndex }) => {
        if (subscribed) return { partitionIndex, errorCode: E.GROUP_SUBSCRIBED_TO_TOPIC }
        if (
          GroupState.offsetOf(committed, request.groupId, t.name, partitionIndex) !== undefined ||
          pending.has(GroupState.partitionKey(t.name, partitionIndex))
        )
          records.push(
            GroupRecords.offsetCommitTombstone({ group: request.groupId, topic: t.name, partition: partitionIndex })
          )
        return { partitionIndex, errorCode: E.NONE }
      })
    }
  })
  return { records, response: { errorCode: E.NONE, topics } }
}

/**
 * The protocol a group uses: among the protocols every member supports, the one most members list
 * first; ties go to the leader's order of preference.
 */
export const selectProtocol = (
  members: ReadonlyArray<{ readonly memberId: string; readonly protocols: ReadonlyArray<GroupProtocol> }>,
  leaderId: string | null
): string | null => {
  const first = members[0]
  if (first === undefined) return null
  const candidates = first.protocols
    .map((p) => p.name)
    .filter((name) => members.every((m) => m.protocols.some((p) => p.name === name)))
  if (candidates.length === 0) return null
  const votes = new Map<string, number>()
  for (const m of members) {
    const vote = m.protocols.find((p) => candidates.includes(p.name))
    if (vote !== undefined) votes.set(vote.name, (votes.get(vote.name) ?? 0) + 1)
  }
  const leader = members.find((m) => m.memberId === leaderId) ?? first
  const order = leader.protocols.map((p) => p.name).filter((name) => candidates.includes(name))
  let best = order[0]!
  for (const name of order) if ((votes.get(name) ?? 0) > (votes.get(best) ?? 0)) best = name
  return best
}

// ---------------------------------------------------------------------------------------------------
// Runtime model (membership and waiting requests; never persisted as such)

interface Member {
  memberId: string
  readonly groupInstanceId: string | null
  readonly clientId: string
  readonly clientHost: string
  rebalanceTimeoutMs: number
  sessionTimeoutMs: number
  protocols: ReadonlyArray<GroupProtocol>
  assignment: Uint8Array
  awaitingJoin: ((result: JoinGroupResult) => void) | null
  awaitingSync: ((result: SyncGroupResult) => void) | null
  sessionTimer: Timer | null
}

interface Group {
  readonly groupId: string
  state: GroupStateName
  protocolType: string | null
  protocolName: string | null
  generationId: number
  leaderId: string | null
  /** In join order, which is the order the leader sees. */
  members: Map<string, Member>
  readonly staticMembers: Map<string, string>
  /** Member ids handed out with MEMBER_ID_REQUIRED, each expiring after the session timeout. */
  readonly pendingMembers: Map<string, Timer>
  /** Members that have not sent SyncGroup for the current generation. */
  readonly pendingSyncMembers: Set<string>
  /** The initial delayed join is running and a member joined since it was (re)scheduled. */
  newMemberAdded: boolean
  initialDelayActive: boolean
  joinTimer: Timer | null
  syncTimer: Timer | null
  stateTimestamp: number
  /** Computed when a generation starts and on load (`subscribedTopics`). */
  subscribedTopics: ReadonlySet<string> | null
}

const EMPTY_BYTES = new Uint8Array(0)

const joinError = (memberId: string, errorCode: number): JoinGroupResult => ({
  errorCode,
  generationId: -1,
  protocolType: null,
  protocolName: null,
  leader: "",
  skipAssignment: false,
  memberId,
  members: []
})

const syncError = (errorCode: number): SyncGroupResult => ({
  errorCode,
  protocolType: null,
  protocolName: null,
  assignment: EMPTY_BYTES
})

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i])

const sameProtocols = (a: ReadonlyArray<GroupProtocol>, b: ReadonlyArray<GroupProtocol>): boolean =>
  a.length === b.length && a.every((p, i) => p.name === b[i]!.name && sameBytes(p.metadata, b[i]!.metadata))

const metadataFor = (member: Member, protocol: string | null): Uint8Array =>
  member.protocols.find((p) => p.name === protocol)?.metadata ?? EMPTY_BYTES

export interface GroupCoordinatorOptions {
  readonly log: GroupLog
  /** The Effect runtime whose `Clock` gives the time and runs the timers (`TestClock` in tests). */
  readonly runtime?: Runtime.Runtime<never>
  readonly config?: Partial<GroupCoordinatorConfig>
  /** Source of the uuid part of generated member ids. */
  readonly randomUuid?: () => string
  /** Consumer groups (KIP-848): their `group.consumer.*` configuration and the cluster's topics. */
  readonly consumer?: {
    readonly config?: Partial<ConsumerGroups.Config>
    readonly topics?: () => ReadonlyArray<ConsumerGroups.TopicMeta>
  }
}

// ---------------------------------------------------------------------------------------------------
// The coordinator

/**
 * What a coordinator needs from the runtime it runs on (the seam to a coordinator runtime): the
 * committed (replayed) hard state, writes that replay a candidate before they append and resolve once
 * committed, in the order they were decided, and the time and timers of the shard.
 */
export interface Host {
  readonly committed: () => GroupState.State
  /**
   * Rejects (nothing applied) when the records do not replay or the append fails, with the Kafka
   * `errorCode` of the failure where there is one.
   */
  readonly write: (records: ReadonlyArray<GroupState.Entry>) => Promise<void>
  /** Resolves once every write issued so far has settled. */
  readonly flush: () => Promise<void>
  /**
   * Decides on the latest state (committed plus writes in flight), replays and appends the records it
   * returns and answers its response once they are committed; rejects like `write`.
   */
  readonly decide: ConsumerGroupCoordinator.ConsumerHost["decide"]
  readonly clock: Clock.Timers
}

/**
 * A host on a `GroupLog`: replays each write into a candidate state (a replay defect throws before
 * anything is written), appends it, and only then makes the candidate the committed state. Appends are
 * serialized, and each candidate is built on the state committed by the appends before it.
 */
export const logHost = (log: GroupLog, state: GroupState.State, clock: Clock.Timers): Host => {
  let committed = state
  let latest = state
  let tail: Promise<void> = Promise.resolve()
  return {
    committed: () => committed,
    write: (entries) => {
      const run = async () => {
        // A GroupLog holds plain records only: transactions need a coordinator log (`GroupShards`).
        const records = entries.map((e) => {
          if (e._tag !== "Record") throw new Error("transactional offset commits need a coordinator log")
          return e.record
        })
        const candidate = records.reduce(GroupState.replay, committed)
        await log.append(records.map(GroupRecords.encode))
        committed = candidate
        latest = candidate
      }
      const done = tail.then(run)
      tail = done.then(
        () => undefined,
        () => undefined
      )
      return done
    },
    flush: () => tail,
    decide: (f) => {
      const run = async () => {
        const { records: entries, response } = f(latest)
        const records = entries.map((e) => {
          if (e._tag !== "Record") throw new Error("transactional offset commits need a coordinator log")
          return e.record
        })
        const candidate = records.reduce(GroupState.replay, committed)
        latest = candidate
        try {
          if (records.length > 0) await log.append(records.map(GroupRecords.encode))
        } catch (e) {
          latest = committed
          throw e
        }
        committed = candidate
        return response
      }
      const done = tail.then(run)
      tail = done.then(
        () => undefined,
        () => undefined
      )
      return done
    },
    clock
  }
}

export class GroupCoordinator {
  private readonly clock: Clock.Timers
  private readonly randomUuid: () => string
  readonly config: GroupCoordinatorConfig
  private readonly groups = new Map<string, Group>()
  private readonly timers = new Set<Timer>()
  private closed = false
  /** The consumer groups (KIP-848) of this shard. */
  readonly consumerGroups: ConsumerGroupCoordinator.ConsumerGroupCoordinator

  /** Use `make`, which replays the log first. */
  constructor(
    options: Omit<GroupCoordinatorOptions, "log" | "runtime">,
    private readonly host: Host
  ) {
    this.clock = host.clock
    this.randomUuid = options.randomUuid ?? (() => globalThis.crypto.randomUUID())
    this.config = { ...defaultConfig, ...options.config }
    this.consumerGroups = new ConsumerGroupCoordinator.ConsumerGroupCoordinator(
      {
        config: { ...ConsumerGroups.defaultConfig, ...options.consumer?.config },
        topics: options.consumer?.topics ?? (() => []),
        randomUuid: this.randomUuid,
        classicGroup: (groupId) => {
          const g = this.groups.get(groupId)
          return g === undefined ? undefined : { members: g.members.size, protocolType: g.protocolType ?? "" }
        }
      },
      host
    )
    const state = host.committed()
    for (const groupId of GroupState.groupIds(state)) {
      const metadata = Option.getOrUndefined(HashMap.get(state.groups, groupId))
      const group = metadata === undefined ? this.newGroup(groupId) : this.restoreGroup(groupId, metadata)
      this.groups.set(groupId, group)
    }
    // Every restored member gets a fresh session timeout from the load.
    for (const group of this.groups.values()) for (const m of group.members.values()) this.scheduleSession(group, m)
  }

  /** A group as last persisted: Stable with its members when it has any, else Empty. */
  private restoreGroup(groupId: string, metadata: GroupRecords.GroupMetadataValue): Group {
    const group = this.newGroup(groupId)
    group.generationId = metadata.generation
    group.protocolType = metadata.protocolType === "" ? null : metadata.protocolType
    if (metadata.currentStateTimestamp >= 0n) group.stateTimestamp = Number(metadata.currentStateTimestamp)
    group.subscribedTopics = subscribedTopics(
      group.protocolType,
      metadata.protocol,
      metadata.members.map((m) => m.subscription)
    )
    if (metadata.members.length === 0) return group
    group.protocolName = metadata.protocol
    for (const m of metadata.members) {
      group.members.set(m.memberId, {
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeoutMs: m.rebalanceTimeout >= 0 ? m.rebalanceTimeout : m.sessionTimeout,
        sessionTimeoutMs: m.sessionTimeout,
        protocols: metadata.protocol === null ? [] : [{ name: metadata.protocol, metadata: m.subscription }],
        assignment: m.assignment,
        awaitingJoin: null,
        awaitingSync: null,
        sessionTimer: null
      })
      if (m.groupInstanceId !== null) group.staticMembers.set(m.groupInstanceId, m.memberId)
    }
    group.leaderId =
      metadata.leader !== null && group.members.has(metadata.leader)
        ? metadata.leader
        : (group.members.keys().next().value ?? null)
    group.state = "Stable"
    return group
  }

  // -------------------------------------------------------------------------------------------------
  // Consumer groups (KIP-848)

  consumerGroupHeartbeat(req: ConsumerGroups.HeartbeatRequest): Promise<ConsumerGroups.HeartbeatResponse> {
    return this.consumerGroups.heartbeat(req)
  }

  consumerGroupDescribe(groupIds: ReadonlyArray<string>): Promise<ReadonlyArray<ConsumerGroups.DescribedGroup>> {
    return Promise.resolve(this.consumerGroups.describe(groupIds))
  }

  private consumerGroup(groupId: string): ConsumerGroups.ConsumerGroup | undefined {
    return this.committed.consumerGroups.get(groupId)
  }

  // -------------------------------------------------------------------------------------------------
  // JoinGroup

  /** Resolves when the member's join phase completes (or at once for errors and unchanged rejoins). */
  joinGroup(req: JoinGroupRequest): Promise<JoinGroupResult> {
    if (this.closed) return Promise.resolve(joinError(req.memberId, E.NOT_COORDINATOR))
    if (req.groupId === "") return Promise.resolve(joinError(req.memberId, E.INVALID_GROUP_ID))
    if (
      req.sessionTimeoutMs < this.config.groupMinSessionTimeoutMs ||
      req.sessionTimeoutMs > this.config.groupMaxSessionTimeoutMs
    )
      return Promise.resolve(joinError(req.memberId, E.INVALID_SESSION_TIMEOUT))
    // Kafka takes a classic member into a consumer group (online migration); we do not, and refuse it.
    if (this.consumerGroup(req.groupId) !== undefined)
      return Promise.resolve(joinError(req.memberId, E.INCONSISTENT_GROUP_PROTOCOL))
    let group = this.groups.get(req.groupId)
    if (group === undefined) {
      if (req.memberId !== "") return Promise.resolve(joinError(req.memberId, E.UNKNOWN_MEMBER_ID))
      group = this.newGroup(req.groupId)
      this.groups.set(req.groupId, group)
    }
    const result = this.join(group, req)
    this.forgetIfUnused(group)
    return result
  }

  private join(group: Group, req: JoinGroupRequest): Promise<JoinGroupResult> {
    const isNew = req.memberId === "" || group.pendingMembers.has(req.memberId)
    if (isNew && group.members.size >= this.config.groupMaxSize)
      return Promise.resolve(joinError(req.memberId, E.GROUP_MAX_SIZE_REACHED))
    if (!this.supportsProtocols(group, req.protocolType, req.protocols))
      return Promise.resolve(joinError(req.memberId, E.INCONSISTENT_GROUP_PROTOCOL))
    return req.memberId === "" ? this.joinUnknownMember(group, req) : this.joinKnownMember(group, req)
  }

  private supportsProtocols(group: Group, protocolType: string, protocols: ReadonlyArray<GroupProtocol>): boolean {
    if (protocolType === "" || protocols.length === 0) return false
    if (group.members.size === 0) return true
    if (group.protocolType !== protocolType) return false
    const members = [...group.members.values()]
    return protocols.some((p) => members.every((m) => m.protocols.some((q) => q.name === p.name)))
  }

  private joinUnknownMember(group: Group, req: JoinGroupRequest): Promise<JoinGroupResult> {
    const memberId = `${req.clientId}-${this.randomUuid()}`
    if (req.groupInstanceId !== null) {
      const oldId = group.staticMembers.get(req.groupInstanceId)
      return oldId === undefined
        ? this.addMemberAndRebalance(group, memberId, req)
        : this.replaceStaticMember(group, oldId, memberId, req)
    }
    if (req.requireKnownMemberId) {
      // The member id is handed out first so that a client whose response is lost does not leave a
      // ghost member behind: only members that come back with their id are added.
      group.pendingMembers.set(
        memberId,
        this.schedule(req.sessionTimeoutMs, () => {
          group.pendingMembers.delete(memberId)
          this.maybeCompleteJoin(group)
          this.forgetIfUnused(group)
        })
      )
      return Promise.resolve(joinError(memberId, E.MEMBER_ID_REQUIRED))
    }
    return this.addMemberAndRebalance(group, memberId, req)
  }

  private joinKnownMember(group: Group, req: JoinGroupRequest): Promise<JoinGroupResult> {
    const pending = group.pendingMembers.get(req.memberId)
    if (pending !== undefined) {
      pending.cancel()
      group.pendingMembers.delete(req.memberId)
      return this.addMemberAndRebalance(group, req.memberId, req)
    }
    const checked = this.validateMember(group, req.memberId, req.groupInstanceId)
    if (typeof checked === "number") return Promise.resolve(joinError(req.memberId, checked))
    const member = checked
    switch (group.state) {
      case "PreparingRebalance":
        return this.updateMemberAndRebalance(group, member, req)
      case "CompletingRebalance":
        // Same metadata: the member most likely lost the join response, so it gets the same one again.
        return sameProtocols(member.protocols, req.protocols)
          ? Promise.resolve(this.currentJoinResult(group, member, false))
          : this.updateMemberAndRebalance(group, member, req)
      case "Stable":
        // A leader's rejoin forces a rebalance: assignments may depend on things member metadata does
        // not carry (topic partition counts, for one).
        if (group.leaderId === member.memberId || !sameProtocols(member.protocols, req.protocols))
          return this.updateMemberAndRebalance(group, member, req)
        this.scheduleSession(group, member)
        return Promise.resolve(this.currentJoinResult(group, member, false))
      case "Empty":
      case "Dead":
        return Promise.resolve(joinError(req.memberId, E.UNKNOWN_MEMBER_ID))
    }
  }

  /** The member, or the error code for an unknown member or a fenced static instance. */
  private validateMember(group: Group, memberId: string, groupInstanceId: string | null): Member | number {
    if (groupInstanceId !== null) {
      const current = group.staticMembers.get(groupInstanceId)
      if (current === undefined) return E.UNKNOWN_MEMBER_ID
      if (current !== memberId) return E.FENCED_INSTANCE_ID
    }
    return group.members.get(memberId) ?? E.UNKNOWN_MEMBER_ID
  }

  private addMemberAndRebalance(group: Group, memberId: string, req: JoinGroupRequest): Promise<JoinGroupResult> {
    return new Promise((resolve) => {
      const member: Member = {
        memberId,
        groupInstanceId: req.groupInstanceId,
        clientId: req.clientId,
        clientHost: req.clientHost,
        rebalanceTimeoutMs: req.rebalanceTimeoutMs,
        sessionTimeoutMs: req.sessionTimeoutMs,
        protocols: req.protocols,
        assignment: EMPTY_BYTES,
        awaitingJoin: resolve,
        awaitingSync: null,
        sessionTimer: null
      }
      if (group.members.size === 0) group.protocolType = req.protocolType
      group.members.set(memberId, member)
      if (req.groupInstanceId !== null) group.staticMembers.set(req.groupInstanceId, memberId)
      group.leaderId ??= memberId
      if (group.state === "PreparingRebalance") group.newMemberAdded = true
      this.maybePrepareRebalance(group)
      this.maybeCompleteJoin(group)
    })
  }

  private updateMemberAndRebalance(group: Group, member: Member, req: JoinGroupRequest): Promise<JoinGroupResult> {
    return new Promise((resolve) => {
      // A second join from the same member supersedes the first; the first gets an answer rather than
      // hanging until the client's request timeout.
      member.awaitingJoin?.(joinError(member.memberId, E.REBALANCE_IN_PROGRESS))
      member.protocols = req.protocols
      member.rebalanceTimeoutMs = req.rebalanceTimeoutMs
      member.sessionTimeoutMs = req.sessionTimeoutMs
      member.awaitingJoin = resolve
      this.maybePrepareRebalance(group)
      this.maybeCompleteJoin(group)
    })
  }

  /**
   * A static member rejoining with a new member id takes over the old member: same assignment, and no
   * rebalance when the group is Stable and the selected protocol stays the same.
   */
  private replaceStaticMember(
    group: Group,
    oldId: string,
    newId: string,
    req: JoinGroupRequest
  ): Promise<JoinGroupResult> {
    const old = group.members.get(oldId)!
    old.awaitingJoin?.(joinError(oldId, E.FENCED_INSTANCE_ID))
    old.awaitingSync?.(syncError(E.FENCED_INSTANCE_ID))
    old.awaitingJoin = null
    old.awaitingSync = null
    old.sessionTimer?.cancel()
    old.sessionTimer = null
    const previous = {
      protocols: old.protocols,
      rebalanceTimeoutMs: old.rebalanceTimeoutMs,
      sessionTimeoutMs: old.sessionTimeoutMs
    }
    const member = old
    // The new incarnation inherits the old one's place, leadership and assignment.
    this.renameMember(group, oldId, newId)
    member.protocols = req.protocols
    member.rebalanceTimeoutMs = req.rebalanceTimeoutMs
    member.sessionTimeoutMs = req.sessionTimeoutMs
    return new Promise((resolve) => {
      if (
        group.state === "Stable" &&
        selectProtocol([...group.members.values()], group.leaderId) === group.protocolName
      ) {
        const generation = group.generationId
        this.persist([this.groupMetadataRecord(group)]).then(
          () => {
            this.scheduleSession(group, member)
            resolve(this.currentJoinResult(group, member, group.leaderId === newId))
          },
          () => {
            if (group.generationId === generation && group.members.get(newId) === member) {
              this.renameMember(group, newId, oldId)
              member.protocols = previous.protocols
              member.rebalanceTimeoutMs = previous.rebalanceTimeoutMs
              member.sessionTimeoutMs = previous.sessionTimeoutMs
              this.scheduleSession(group, member)
            }
            resolve(joinError("", E.COORDINATOR_NOT_AVAILABLE))
          }
        )
        return
      }
      member.awaitingJoin = resolve
      this.maybePrepareRebalance(group)
      this.maybeCompleteJoin(group)
    })
  }

  /** Changes a member's id in place, keeping join order, leadership and the static mapping. */
  private renameMember(group: Group, fromId: string, toId: string): void {
    const member = group.members.get(fromId)!
    member.memberId = toId
    group.members = new Map([...group.members].map(([id, m]) => (id === fromId ? [toId, m] : [id, m])))
    if (group.leaderId === fromId) group.leaderId = toId
    if (member.groupInstanceId !== null) group.staticMembers.set(member.groupInstanceId, toId)
    if (group.pendingSyncMembers.delete(fromId)) group.pendingSyncMembers.add(toId)
  }

  private currentJoinResult(group: Group, member: Member, skipAssignment: boolean): JoinGroupResult {
    const isLeader = group.leaderId === member.memberId
    return {
      errorCode: E.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? "",
      skipAssignment,
      memberId: member.memberId,
      members: isLeader ? this.memberList(group) : []
    }
  }

  private memberList(group: Group): ReadonlyArray<JoinGroupMember> {
    return [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      metadata: metadataFor(m, group.protocolName)
    }))
  }

  private maybePrepareRebalance(group: Group): void {
    if (group.state === "Stable" || group.state === "CompletingRebalance" || group.state === "Empty")
      this.prepareRebalance(group)
  }

  private prepareRebalance(group: Group): void {
    if (group.state === "CompletingRebalance") {
      // The assignment being handed out is void: followers waiting for it must rejoin.
      for (const m of group.members.values()) {
        m.assignment = EMPTY_BYTES
        const waiting = m.awaitingSync
        m.awaitingSync = null
        waiting?.(syncError(E.REBALANCE_IN_PROGRESS))
      }
    }
    group.syncTimer?.cancel()
    group.syncTimer = null
    group.pendingSyncMembers.clear()
    group.joinTimer?.cancel()
    const initial = group.state === "Empty"
    this.transition(group, "PreparingRebalance")
    group.newMemberAdded = false
    if (initial && this.config.groupInitialRebalanceDelayMs > 0) {
      const delay = this.config.groupInitialRebalanceDelayMs
      group.initialDelayActive = true
      this.scheduleInitialJoin(group, delay, Math.max(this.rebalanceTimeout(group) - delay, 0))
    } else {
      group.initialDelayActive = false
      group.joinTimer = this.schedule(this.rebalanceTimeout(group), () => this.completeJoin(group))
    }
  }

  /** While members keep arriving, the initial rebalance waits another delay, up to the rebalance timeout. */
  private scheduleInitialJoin(group: Group, delayMs: number, remainingMs: number): void {
    group.joinTimer = this.schedule(delayMs, () => {
      group.joinTimer = null
      if (group.newMemberAdded && remainingMs > 0) {
        group.newMemberAdded = false
        const next = Math.min(this.config.groupInitialRebalanceDelayMs, remainingMs)
        this.scheduleInitialJoin(group, next, Math.max(remainingMs - next, 0))
      } else {
        group.initialDelayActive = false
        this.completeJoin(group)
      }
    })
  }

  private rebalanceTimeout(group: Group): number {
    let max = 0
    for (const m of group.members.values()) max = Math.max(max, m.rebalanceTimeoutMs)
    return max
  }

  private maybeCompleteJoin(group: Group): void {
    if (group.state !== "PreparingRebalance" || group.initialDelayActive) return
    if (group.pendingMembers.size > 0) return
    for (const m of group.members.values()) if (m.awaitingJoin === null) return
    this.completeJoin(group)
  }

  /**
   * Ends the join phase: members that did not rejoin are removed, the generation moves on and every
   * joined member gets its response. An emptied group is persisted as Empty.
   */
  private completeJoin(group: Group): void {
    if (group.state !== "PreparingRebalance") return
    group.joinTimer?.cancel()
    group.joinTimer = null
    group.initialDelayActive = false
    for (const m of [...group.members.values()]) if (m.awaitingJoin === null) this.dropMember(group, m)
    if (group.leaderId === null || !group.members.has(group.leaderId))
      group.leaderId = group.members.keys().next().value ?? null
    group.generationId += 1
    if (group.members.size === 0) {
      group.protocolName = null
      group.subscribedTopics = subscribedTopics(group.protocolType, null, [])
      this.transition(group, "Empty")
      this.persist([this.groupMetadataRecord(group)]).catch(() => {})
      return
    }
    group.protocolName = selectProtocol([...group.members.values()], group.leaderId)
    group.subscribedTopics = subscribedTopics(
      group.protocolType,
      group.protocolName,
      [...group.members.values()].map((m) => metadataFor(m, group.protocolName))
    )
    this.transition(group, "CompletingRebalance")
    const generation = group.generationId
    for (const m of group.members.values()) group.pendingSyncMembers.add(m.memberId)
    group.syncTimer = this.schedule(this.rebalanceTimeout(group), () => this.expirePendingSync(group, generation))
    for (const m of group.members.values()) {
      const respond = m.awaitingJoin!
      m.awaitingJoin = null
      this.scheduleSession(group, m)
      respond(this.currentJoinResult(group, m, false))
    }
  }

  /** Members that never sent SyncGroup within the rebalance timeout leave, and the group rebalances. */
  private expirePendingSync(group: Group, generation: number): void {
    group.syncTimer = null
    if (group.generationId !== generation) return
    if (group.state !== "CompletingRebalance" && group.state !== "Stable") return
    const late = [...group.pendingSyncMembers]
    if (late.length === 0) return
    for (const id of late) {
      const m = group.members.get(id)
      if (m !== undefined) this.dropMember(group, m)
    }
    this.prepareRebalance(group)
    this.maybeCompleteJoin(group)
  }

  // -------------------------------------------------------------------------------------------------
  // SyncGroup

  /** Resolves with the member's assignment once the leader's assignment is committed. */
  syncGroup(req: SyncGroupRequest): Promise<SyncGroupResult> {
    if (this.closed) return Promise.resolve(syncError(E.NOT_COORDINATOR))
    const group = this.groups.get(req.groupId)
    if (group === undefined) return Promise.resolve(syncError(E.UNKNOWN_MEMBER_ID))
    if (group.state === "Dead") return Promise.resolve(syncError(E.COORDINATOR_NOT_AVAILABLE))
    const checked = this.validateMember(group, req.memberId, req.groupInstanceId)
    if (typeof checked === "number") return Promise.resolve(syncError(checked))
    const member = checked
    if (req.generationId !== group.generationId) return Promise.resolve(syncError(E.ILLEGAL_GENERATION))
    if (
      (req.protocolType !== null && req.protocolType !== group.protocolType) ||
      (req.protocolName !== null && req.protocolName !== group.protocolName)
    )
      return Promise.resolve(syncError(E.INCONSISTENT_GROUP_PROTOCOL))
    switch (group.state) {
      case "Empty":
        return Promise.resolve(syncError(E.UNKNOWN_MEMBER_ID))
      case "PreparingRebalance":
        return Promise.resolve(syncError(E.REBALANCE_IN_PROGRESS))
      case "Stable":
        this.markSynced(group, member)
        return Promise.resolve(this.syncResult(group, member))
      case "CompletingRebalance":
        return new Promise((resolve) => {
          member.awaitingSync?.(syncError(E.REBALANCE_IN_PROGRESS))
          member.awaitingSync = resolve
          this.markSynced(group, member)
          if (group.leaderId === member.memberId) this.completeSync(group, req.assignments)
        })
    }
  }

  private markSynced(group: Group, member: Member): void {
    group.pendingSyncMembers.delete(member.memberId)
    if (group.pendingSyncMembers.size === 0) {
      group.syncTimer?.cancel()
      group.syncTimer = null
    }
    this.scheduleSession(group, member)
  }

  private syncResult(group: Group, member: Member): SyncGroupResult {
    return {
      errorCode: E.NONE,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      assignment: member.assignment
    }
  }

  /** Persists the leader's assignment (absent members get an empty one), then hands it out: Stable. */
  private completeSync(group: Group, assignments: SyncGroupRequest["assignments"]): void {
    const given = new Map(assignments.map((a) => [a.memberId, a.assignment]))
    const byMember = new Map([...group.members.keys()].map((id) => [id, given.get(id) ?? EMPTY_BYTES]))
    const generation = group.generationId
    const stillCurrent = () =>
      this.groups.get(group.groupId) === group &&
      group.generationId === generation &&
      group.state === "CompletingRebalance"
    this.persist([this.groupMetadataRecord(group, byMember)]).then(
      () => {
        if (!stillCurrent()) return
        for (const m of group.members.values()) m.assignment = byMember.get(m.memberId) ?? EMPTY_BYTES
        this.transition(group, "Stable")
        for (const m of group.members.values()) {
          const respond = m.awaitingSync
          m.awaitingSync = null
          respond?.(this.syncResult(group, m))
        }
      },
      () => {
        if (!stillCurrent()) return
        for (const m of group.members.values()) {
          const respond = m.awaitingSync
          m.awaitingSync = null
          respond?.(syncError(E.COORDINATOR_NOT_AVAILABLE))
        }
        this.prepareRebalance(group)
        this.maybeCompleteJoin(group)
      }
    )
  }

  // -------------------------------------------------------------------------------------------------
  // Heartbeat and session expiry

  heartbeat(req: HeartbeatRequest): Promise<HeartbeatResult> {
    return Promise.resolve({ errorCode: this.heartbeatCode(req) })
  }

  private heartbeatCode(req: HeartbeatRequest): number {
    if (this.closed) return E.NOT_COORDINATOR
    const group = this.groups.get(req.groupId)
    if (group === undefined) return E.UNKNOWN_MEMBER_ID
    if (group.state === "Dead") return E.COORDINATOR_NOT_AVAILABLE
    const checked = this.validateMember(group, req.memberId, req.groupInstanceId)
    if (typeof checked === "number") return checked
    if (req.generationId !== group.generationId) return E.ILLEGAL_GENERATION
    switch (group.state) {
      case "Empty":
        return E.UNKNOWN_MEMBER_ID
      case "PreparingRebalance":
        this.scheduleSession(group, checked)
        return E.REBALANCE_IN_PROGRESS
      case "CompletingRebalance":
      case "Stable":
        this.scheduleSession(group, checked)
        return E.NONE
    }
  }

  private scheduleSession(group: Group, member: Member): void {
    member.sessionTimer?.cancel()
    member.sessionTimer = this.schedule(member.sessionTimeoutMs, () => {
      member.sessionTimer = null
      if (group.members.get(member.memberId) !== member) return
      // A member with a request parked in the coordinator is alive by definition.
      if (member.awaitingJoin !== null || member.awaitingSync !== null) this.scheduleSession(group, member)
      else this.removeMember(group, member)
    })
  }

  /** Removes a member and moves the group on: a rebalance, or completing the one in progress. */
  private removeMember(group: Group, member: Member): void {
    this.dropMember(group, member)
    switch (group.state) {
      case "Stable":
      case "CompletingRebalance":
        this.prepareRebalance(group)
        this.maybeCompleteJoin(group)
        break
      case "PreparingRebalance":
        this.maybeCompleteJoin(group)
        break
      case "Empty":
      case "Dead":
        break
    }
  }

  /** Takes a member out of the group without touching the group's state. */
  private dropMember(group: Group, member: Member): void {
    const join = member.awaitingJoin
    const sync = member.awaitingSync
    member.awaitingJoin = null
    member.awaitingSync = null
    member.sessionTimer?.cancel()
    member.sessionTimer = null
    group.members.delete(member.memberId)
    if (member.groupInstanceId !== null && group.staticMembers.get(member.groupInstanceId) === member.memberId)
      group.staticMembers.delete(member.groupInstanceId)
    group.pendingSyncMembers.delete(member.memberId)
    if (group.leaderId === member.memberId) group.leaderId = group.members.keys().next().value ?? null
    join?.(joinError(member.memberId, E.UNKNOWN_MEMBER_ID))
    sync?.(syncError(E.UNKNOWN_MEMBER_ID))
  }

  // -------------------------------------------------------------------------------------------------
  // LeaveGroup

  /** Resolves once any resulting group metadata (an emptied group) is committed. */
  async leaveGroup(req: LeaveGroupRequest): Promise<LeaveGroupResult> {
    if (this.closed) return { errorCode: E.NOT_COORDINATOR, members: [] }
    const group = this.groups.get(req.groupId)
    if (group === undefined) return { errorCode: E.UNKNOWN_MEMBER_ID, members: [] }
    if (group.state === "Dead") return { errorCode: E.COORDINATOR_NOT_AVAILABLE, members: [] }
    const members = req.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      errorCode: this.leaveOne(group, m.memberId, m.groupInstanceId)
    }))
    await this.host.flush()
    return { errorCode: E.NONE, members }
  }

  private leaveOne(group: Group, memberId: string, groupInstanceId: string | null): number {
    if (memberId === "" && groupInstanceId === null) return E.UNKNOWN_MEMBER_ID
    const pending = group.pendingMembers.get(memberId)
    if (pending !== undefined && groupInstanceId === null) {
      pending.cancel()
      group.pendingMembers.delete(memberId)
      this.maybeCompleteJoin(group)
      this.forgetIfUnused(group)
      return E.NONE
    }
    // KIP-345: a static member may leave by instance id alone.
    const id = memberId === "" && groupInstanceId !== null ? group.staticMembers.get(groupInstanceId) : memberId
    if (id === undefined) return E.UNKNOWN_MEMBER_ID
    const checked = this.validateMember(group, id, groupInstanceId)
    if (typeof checked === "number") return checked
    this.removeMember(group, checked)
    return E.NONE
  }

  // -------------------------------------------------------------------------------------------------
  // Offsets

  /** Validates against the group's membership, appends the commits, and answers after they are committed. */
  async commitOffsets(req: OffsetCommitRequest): Promise<OffsetCommitResult> {
    const code = this.closed ? E.NOT_COORDINATOR : this.validateOffsetCommit(req)
    if (code !== E.NONE) return failCommit(req, code)
    const { records, response } = decideOffsetCommit(req, this.clock.now(), this.config.offsetMetadataMaxBytes)
    if (records.length === 0) return response
    if (!this.groups.has(req.groupId)) this.groups.set(req.groupId, this.newGroup(req.groupId))
    try {
      await this.persist(records)
      return response
    } catch {
      return {
        topics: response.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: p.errorCode === E.NONE ? E.COORDINATOR_NOT_AVAILABLE : p.errorCode
          }))
        }))
      }
    }
  }

  /**
   * Validates against the group's membership, then appends the offsets in a transactional batch of the
   * producer: they stay pending, invisible to OffsetFetch, until the producer's COMMIT marker reaches this
   * partition, and are dropped on ABORT. A fenced producer epoch answers INVALID_PRODUCER_EPOCH.
   */
  async commitTransactionalOffsets(req: TxnOffsetCommitRequest): Promise<OffsetCommitResult> {
    const code = this.closed ? E.NOT_COORDINATOR : this.validateOffsetCommit(req, true)
    if (code !== E.NONE) return failCommit(req, code)
    const { records, response } = decideOffsetCommit(req, this.clock.now(), this.config.offsetMetadataMaxBytes)
    if (records.length === 0) return response
    if (!this.groups.has(req.groupId)) this.groups.set(req.groupId, this.newGroup(req.groupId))
    try {
      await this.host.write(records.map((r) => CoordinatorLog.inTransaction(req, r)))
      return response
    } catch (e) {
      const failed = appendErrorCode(e)
      return {
        topics: response.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({
            partitionIndex: p.partitionIndex,
            errorCode: p.errorCode === E.NONE ? failed : p.errorCode
          }))
        }))
      }
    }
  }

  /**
   * Appends a producer's COMMIT or ABORT marker to this shard's partition, in order with its other writes:
   * once committed, a COMMIT makes the producer's pending offsets the committed ones. Answers the error code
   * for WriteTxnMarkers (the log fences older producer and coordinator epochs).
   */
  async completeTransaction(marker: TxnCompletion): Promise<number> {
    if (this.closed) return E.NOT_COORDINATOR
    try {
      await this.host.write([CoordinatorLog.txnMarker(marker, marker.commit, marker.coordinatorEpoch)])
      return E.NONE
    } catch (e) {
      return errorCodeOf(e)
    }
  }

  private validateOffsetCommit(req: OffsetCommitRequest, transactional = false): number {
    const consumerGroup = this.consumerGroup(req.groupId)
    if (consumerGroup !== undefined)
      return ConsumerGroups.validateOffsetCommit(
        consumerGroup,
        req.memberId,
        req.generationId,
        transactional ? undefined : req.apiVersion
      )
    const group = this.groups.get(req.groupId)
    // A commit from outside group management may create the group; one claiming a generation may not.
    if (group === undefined) return req.generationId < 0 ? E.NONE : E.ILLEGAL_GENERATION
    if (group.state === "Dead") return E.COORDINATOR_NOT_AVAILABLE
    if (req.generationId < 0 && group.state === "Empty") return E.NONE
    if (req.generationId >= 0 || req.memberId !== "" || req.groupInstanceId !== null) {
      const checked = this.validateMember(group, req.memberId, req.groupInstanceId)
      if (typeof checked === "number") return checked
      if (req.generationId !== group.generationId) return E.ILLEGAL_GENERATION
    } else if (!transactional && group.state !== "Empty") {
      // Without member and generation (TxnOffsetCommit v0-2 has none) only transactions may commit.
      return E.UNKNOWN_MEMBER_ID
    }
    // The member knows the new generation but has no assignment yet: it must finish SyncGroup first.
    if (group.state === "CompletingRebalance") return E.REBALANCE_IN_PROGRESS
    return E.NONE
  }

  /** Committed offsets; -1 for partitions without one. */
  fetchOffsets(req: OffsetFetchRequest): Promise<OffsetFetchResult> {
    if (this.closed) return Promise.resolve({ errorCode: E.NOT_COORDINATOR, topics: [] })
    const state = this.committed
    const unstable = (topic: string, partition: number) =>
      req.requireStable === true && GroupState.hasPendingOffset(state, req.groupId, topic, partition)
    const toPartition = (
      topic: string,
      partitionIndex: number,
      o: GroupState.CommittedOffset | undefined
    ): OffsetFetchPartition =>
      unstable(topic, partitionIndex)
        ? {
            partitionIndex,
            committedOffset: -1n,
            committedLeaderEpoch: -1,
            metadata: "",
            errorCode: E.UNSTABLE_OFFSET_COMMIT
          }
        : o === undefined
          ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: "", errorCode: E.NONE }
          : {
              partitionIndex,
              committedOffset: o.offset,
              committedLeaderEpoch: o.leaderEpoch,
              metadata: o.metadata,
              errorCode: E.NONE
            }
    if (req.topics !== null) {
      const topics = req.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((p) =>
          toPartition(t.name, p, GroupState.offsetOf(state, req.groupId, t.name, p))
        )
      }))
      return Promise.resolve({ errorCode: E.NONE, topics })
    }
    const byTopic = new Map<string, Array<GroupState.CommittedOffset>>()
    for (const o of GroupState.offsetsOf(state, req.groupId)) {
      const list = byTopic.get(o.topic) ?? []
      list.push(o)
      byTopic.set(o.topic, list)
    }
    const topics = [...byTopic.keys()].sort().map((name) => ({
      name,
      partitions: byTopic
        .get(name)!
        .sort((a, b) => a.partition - b.partition)
        .map((o) => toPartition(o.topic, o.partition, o))
    }))
    return Promise.resolve({ errorCode: E.NONE, topics })
  }

  // -------------------------------------------------------------------------------------------------
  // Listing, describing, deleting

  listGroups(req: ListGroupsRequest = {}): Promise<ReadonlyArray<ListedGroup>> {
    const states = new Set((req.statesFilter ?? []).map((s) => s.toLowerCase()))
    const types = new Set((req.typesFilter ?? []).map((s) => s.toLowerCase()))
    const listed: Array<ListedGroup> = []
    if (this.closed) return Promise.resolve(listed)
    for (const g of this.committed.consumerGroups.values()) {
      const state = ConsumerGroups.stateOf(g)
      if (states.size > 0 && !states.has(state.toLowerCase())) continue
      if (types.size > 0 && !types.has("consumer")) continue
      listed.push({ groupId: g.groupId, protocolType: "consumer", groupState: state, groupType: "consumer" })
    }
    for (const g of this.groups.values()) {
      if (this.consumerGroup(g.groupId) !== undefined) continue
      if (states.size > 0 && !states.has(g.state.toLowerCase())) continue
      if (types.size > 0 && !types.has("classic")) continue
      listed.push({ groupId: g.groupId, protocolType: g.protocolType ?? "", groupState: g.state, groupType: "classic" })
    }
    return Promise.resolve(listed)
  }

  describeGroups(groupIds: ReadonlyArray<string>): Promise<ReadonlyArray<DescribedGroup>> {
    return Promise.resolve(groupIds.map((id) => this.describe(id)))
  }

  private describe(groupId: string): DescribedGroup {
    const group = this.closed || this.consumerGroup(groupId) !== undefined ? undefined : this.groups.get(groupId)
    if (group === undefined)
      return {
        errorCode: this.closed ? E.NOT_COORDINATOR : E.GROUP_ID_NOT_FOUND,
        groupId,
        groupState: "Dead",
        protocolType: "",
        protocolData: "",
        members: []
      }
    const stable = group.state === "Stable"
    return {
      errorCode: E.NONE,
      groupId,
      groupState: group.state,
      protocolType: group.protocolType ?? "",
      protocolData: stable ? (group.protocolName ?? "") : "",
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        memberMetadata: stable ? metadataFor(m, group.protocolName) : EMPTY_BYTES,
        memberAssignment: stable ? m.assignment : EMPTY_BYTES
      }))
    }
  }

  /**
   * Deletes Empty groups with their offsets (`decideDeleteGroups`), answering after the tombstones are
   * committed; the groups are gone at once, and come back as they were when the write fails.
   */
  async deleteGroups(groupIds: ReadonlyArray<string>): Promise<ReadonlyArray<DeletedGroup>> {
    if (this.closed) return [...new Set(groupIds)].map((groupId) => ({ groupId, errorCode: E.NOT_COORDINATOR }))
    // Consumer groups (KIP-848): deleted when they have no member, with their offsets and records.
    const consumerRecords: Array<GroupRecords.GroupRecord> = []
    const consumerResults: Array<DeletedGroup> = []
    const classicIds: Array<string> = []
    for (const groupId of new Set(groupIds)) {
      const consumerGroup = this.consumerGroup(groupId)
      if (consumerGroup === undefined) {
        classicIds.push(groupId)
        continue
      }
      if (consumerGroup.members.size > 0) {
        consumerResults.push({ groupId, errorCode: E.NON_EMPTY_GROUP })
        continue
      }
      for (const o of GroupState.offsetsOf(this.committed, groupId))
        consumerRecords.push(
          GroupRecords.offsetCommitTombstone({ group: groupId, topic: o.topic, partition: o.partition })
        )
      consumerRecords.push(...ConsumerGroups.deleteGroupRecords(consumerGroup))
      consumerResults.push({ groupId, errorCode: E.NONE })
    }
    const classic = decideDeleteGroups(classicIds, (id) => this.groups.get(id), this.committed)
    const records = [...consumerRecords, ...classic.records]
    const results = [...consumerResults, ...classic.results]
    const deleted = classic.results.flatMap((r) => {
      const group = r.errorCode === E.NONE ? this.groups.get(r.groupId) : undefined
      return group === undefined ? [] : [group]
    })
    for (const group of deleted) {
      this.clearGroupTimers(group)
      group.pendingMembers.clear()
      this.groups.delete(group.groupId)
    }
    if (records.length === 0) return results
    try {
      await this.persist(records)
      for (const group of deleted) this.transition(group, "Dead")
      return results
    } catch (e) {
      for (const group of deleted) if (!this.groups.has(group.groupId)) this.groups.set(group.groupId, group)
      const failed = appendErrorCode(e)
      return results.map((r) => (r.errorCode === E.NONE ? { ...r, errorCode: failed } : r))
    }
  }

  /** OffsetDelete (`decideOffsetDelete`), answering after the tombstones are committed. */
  async deleteOffsets(req: OffsetDeleteRequest): Promise<OffsetDeleteResult> {
    if (this.closed) return { errorCode: E.NOT_COORDINATOR, topics: [] }
    const { records, response } = decideOffsetDelete(req, this.groups.get(req.groupId), this.committed)
    if (records.length === 0) return response
    try {
      await this.persist(records)
      return response
    } catch (e) {
      return { errorCode: appendErrorCode(e), topics: [] }
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Lifecycle

  /** Cancels every timer and answers every parked request with NOT_COORDINATOR; waits for appends in flight. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.consumerGroups.close()
    for (const group of this.groups.values()) {
      this.clearGroupTimers(group)
      for (const m of group.members.values()) {
        const join = m.awaitingJoin
        const sync = m.awaitingSync
        m.awaitingJoin = null
        m.awaitingSync = null
        join?.(joinError(m.memberId, E.NOT_COORDINATOR))
        sync?.(syncError(E.NOT_COORDINATOR))
      }
    }
    for (const t of this.timers) t.cancel()
    this.timers.clear()
    await this.host.flush()
  }

  /** Timers scheduled and not yet fired or cancelled, for diagnostics and tests. */
  pendingTimers(): number {
    return this.timers.size
  }

  /** The committed (replayed) state: what a load of the log from scratch yields. */
  committedState(): GroupState.State {
    return this.committed
  }

  /** The committed state's generation of a group as last persisted, for diagnostics and tests. */
  persistedGeneration(groupId: string): number | undefined {
    return Option.getOrUndefined(HashMap.get(this.committed.groups, groupId))?.generation
  }

  // -------------------------------------------------------------------------------------------------
  // Internals

  private newGroup(groupId: string): Group {
    return {
      groupId,
      state: "Empty",
      protocolType: null,
      protocolName: null,
      generationId: 0,
      leaderId: null,
      members: new Map(),
      staticMembers: new Map(),
      pendingMembers: new Map(),
      pendingSyncMembers: new Set(),
      newMemberAdded: false,
      initialDelayActive: false,
      joinTimer: null,
      syncTimer: null,
      stateTimestamp: this.clock.now(),
      subscribedTopics: null
    }
  }

  /** Drops a group that nothing refers to (a join that failed validation created it). */
  private forgetIfUnused(group: Group): void {
    if (group.state !== "Empty" || group.members.size > 0 || group.pendingMembers.size > 0) return
    if (HashMap.has(this.committed.groups, group.groupId) || HashMap.has(this.committed.offsets, group.groupId)) return
    if (group.generationId > 0) return
    this.groups.delete(group.groupId)
  }

  private transition(group: Group, state: GroupStateName): void {
    group.state = state
    group.stateTimestamp = this.clock.now()
  }

  private clearGroupTimers(group: Group): void {
    group.joinTimer?.cancel()
    group.syncTimer?.cancel()
    group.joinTimer = null
    group.syncTimer = null
    for (const t of group.pendingMembers.values()) t.cancel()
    for (const m of group.members.values()) {
      m.sessionTimer?.cancel()
      m.sessionTimer = null
    }
  }

  /** A timer that `close` can find. */
  private schedule(delayMs: number, callback: () => void): Timer {
    const inner = this.clock.schedule(delayMs, () => {
      this.timers.delete(timer)
      callback()
    })
    const timer: Timer = {
      cancel: () => {
        this.timers.delete(timer)
        inner.cancel()
      }
    }
    this.timers.add(timer)
    return timer
  }

  private groupMetadataRecord(group: Group, assignments?: ReadonlyMap<string, Uint8Array>): GroupRecords.GroupRecord {
    return GroupRecords.groupMetadata(group.groupId, {
      protocolType: group.protocolType ?? "",
      generation: group.generationId,
      protocol: group.protocolName,
      leader: group.leaderId,
      currentStateTimestamp: BigInt(group.stateTimestamp),
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        rebalanceTimeout: m.rebalanceTimeoutMs,
        sessionTimeout: m.sessionTimeoutMs,
        subscription: metadataFor(m, group.protocolName),
        assignment: assignments?.get(m.memberId) ?? m.assignment
      }))
    })
  }

  /** Through the host: candidate replay, append, commit, in decision order. */
  private persist(records: ReadonlyArray<GroupRecords.GroupRecord>): Promise<void> {
    return this.host.write(records.map(CoordinatorLog.plain))
  }

  private get committed(): GroupState.State {
    return this.host.committed()
  }
}

/** The Kafka error code a failed write carries (COORDINATOR_NOT_AVAILABLE when it has none). */
const errorCodeOf = (e: unknown): number =>
  typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number"
    ? e.errorCode
    : E.COORDINATOR_NOT_AVAILABLE

/** A failed append as a commit's answer, normalized like Kafka's group coordinator does. */
const appendErrorCode = (e: unknown): number => {
  const code = errorCodeOf(e)
  switch (code) {
    case E.UNKNOWN_TOPIC_OR_PARTITION:
    case E.NOT_ENOUGH_REPLICAS:
    case E.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case E.REQUEST_TIMED_OUT:
      return E.COORDINATOR_NOT_AVAILABLE
    case E.NOT_LEADER_OR_FOLLOWER:
    case E.KAFKA_STORAGE_ERROR:
      return E.NOT_COORDINATOR
    case E.MESSAGE_TOO_LARGE:
    case E.RECORD_LIST_TOO_LARGE:
    case E.INVALID_FETCH_SIZE:
      return E.UNKNOWN_SERVER_ERROR
    default:
      return code
  }
}

const failCommit = (req: OffsetCommitRequest, errorCode: number): OffsetCommitResult => ({
  topics: req.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode }))
  }))
})

/** A coordinator on a host that already holds its committed state (a shard of a coordinator runtime). */
export const onHost = (options: Omit<GroupCoordinatorOptions, "log" | "runtime">, host: Host): GroupCoordinator =>
  new GroupCoordinator(options, host)

/** Replays the log into committed state, then serves. A record that does not decode or replay is a defect. */
export const make = async (options: GroupCoordinatorOptions): Promise<GroupCoordinator> => {
  let state = GroupState.empty
  for await (const { key, value } of options.log.readAll()) {
    const decoded = GroupRecords.decode(key, value)
    if (decoded._tag === "Left") throw decoded.left
    state = GroupState.replay(state, decoded.right)
  }
  return new GroupCoordinator(
    options,
    logHost(options.log, state, Clock.fromRuntime(options.runtime ?? Runtime.defaultRuntime))
  )
}
