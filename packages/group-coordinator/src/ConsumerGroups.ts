/**
 * Consumer groups of the KIP-848 protocol: their hard state as replayed from `__consumer_offsets`
 * (group epoch, target assignment and its epoch, members with their subscriptions, member epochs and
 * current assignments, what each subscribed regular expression resolved to) and the pure decisions on
 * it: ConsumerGroupHeartbeat (join, heartbeat, reconciliation with revocation first, leave, static
 * leave), fencing a member whose session or revocation timed out, ConsumerGroupDescribe, and the checks
 * of offset commits by members.
 *
 * Decide functions take the state, the request, the topics of the cluster and the configuration, and
 * return the records and the response; they never write, keep time or arm timers (the coordinator does).
 * Replaying the records they return is the only way the state changes.
 */
import { Errors, GroupRecords } from "@clustermirror/protocol"
import * as Assignors from "./Assignors.js"
import * as TopicRegex from "./TopicRegex.js"

const E = Errors.ErrorCode

export type Assignment = Assignors.Assignment

/** Kafka's MemberState as persisted in CurrentMemberAssignment. */
export const MemberState = { UNKNOWN: 0, STABLE: 1, UNREVOKED_PARTITIONS: 2, UNRELEASED_PARTITIONS: 3 } as const

/** Member epochs with a meaning of their own. */
export const LEAVE_GROUP_MEMBER_EPOCH = -1
export const LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

export interface Member {
  readonly memberId: string
  readonly instanceId: string | null
  readonly rackId: string | null
  readonly clientId: string
  readonly clientHost: string
  readonly subscribedTopicNames: ReadonlyArray<string>
  readonly subscribedTopicRegex: string | null
  readonly rebalanceTimeoutMs: number
  readonly serverAssignor: string | null
  readonly memberEpoch: number
  readonly previousMemberEpoch: number
  readonly state: number
  readonly assigned: Assignment
  readonly pendingRevocation: Assignment
}

/**
 * What a regular expression of the group's subscriptions resolved to (ConsumerGroupRegularExpression):
 * the topic names, the resolution's version and when it was made. Members subscribed by regex are
 * assigned from these topics, so a reloaded group keeps them until the expression is resolved again.
 */
export interface ResolvedRegex {
  readonly topics: ReadonlyArray<string>
  readonly version: bigint
  readonly timestamp: bigint
}

/**
 * How long a resolution stands before a heartbeat resolves the group's expressions again (Kafka's batch
 * refresh interval of regular expressions, 10 s).
 */
export const REGEX_REFRESH_INTERVAL_MS = 10_000

export interface ConsumerGroup {
  readonly groupId: string
  readonly groupEpoch: number
  readonly metadataHash: bigint
  readonly assignmentEpoch: number
  readonly members: ReadonlyMap<string, Member>
  readonly target: ReadonlyMap<string, Assignment>
  readonly resolvedRegexes: ReadonlyMap<string, ResolvedRegex>
}

export type State = ReadonlyMap<string, ConsumerGroup>

export const empty: State = new Map()

const EMPTY_ASSIGNMENT: Assignment = new Map()

const newGroup = (groupId: string): ConsumerGroup => ({
  groupId,
  groupEpoch: 0,
  metadataHash: 0n,
  assignmentEpoch: 0,
  members: new Map(),
  target: new Map(),
  resolvedRegexes: new Map()
})

const newMember = (memberId: string): Member => ({
  memberId,
  instanceId: null,
  rackId: null,
  clientId: "",
  clientHost: "",
  subscribedTopicNames: [],
  subscribedTopicRegex: null,
  rebalanceTimeoutMs: -1,
  serverAssignor: null,
  memberEpoch: 0,
  previousMemberEpoch: -1,
  state: MemberState.STABLE,
  assigned: EMPTY_ASSIGNMENT,
  pendingRevocation: EMPTY_ASSIGNMENT
})

const fromWire = (tps: ReadonlyArray<{ readonly topicId: string; readonly partitions: ReadonlyArray<number> }>) =>
  new Map(tps.filter((t) => t.partitions.length > 0).map((t) => [t.topicId, [...t.partitions].sort((a, b) => a - b)]))

export const toWire = (a: Assignment) =>
  [...a].filter(([, ps]) => ps.length > 0).map(([topicId, partitions]) => ({ topicId, partitions: [...partitions] }))

// ---------------------------------------------------------------------------------------------------
// Replay

/** Applies a consumer-group record. */
export const replay = (state: State, record: GroupRecords.ConsumerGroupRecord): State => {
  const groupId = record.key.groupId
  const group = state.get(groupId) ?? newGroup(groupId)
  const next = new Map(state)
  const withMember = (memberId: string, f: (m: Member) => Member | undefined): ConsumerGroup => {
    const members = new Map(group.members)
    const m = f(members.get(memberId) ?? newMember(memberId))
    if (m === undefined) members.delete(memberId)
    else members.set(memberId, m)
    return { ...group, members }
  }
  switch (record.type) {
    case "ConsumerGroupMetadata": {
      if (record.value === null) {
        if (group.members.size > 0) throw new Error(`consumer group ${groupId}: deleted while it has members`)
        if (group.resolvedRegexes.size > 0)
          throw new Error(`consumer group ${groupId}: deleted while it has resolved regular expressions`)
        next.delete(groupId)
        return next
      }
      const v = record.value.data
      if (v.epoch < group.groupEpoch)
        throw new Error(`consumer group ${groupId}: epoch went back from ${group.groupEpoch} to ${v.epoch}`)
      next.set(groupId, { ...group, groupEpoch: v.epoch, metadataHash: v.metadataHash })
      return next
    }
    case "ConsumerGroupPartitionMetadata":
      // Older writers kept the subscribed topics' metadata; the metadata hash of the epoch replaces it.
      return state
    case "ConsumerGroupMemberMetadata": {
      const v = record.value?.data
      next.set(
        groupId,
        withMember(record.key.memberId, (m) =>
          v === undefined
            ? undefined
            : {
                ...m,
                instanceId: v.instanceId,
                rackId: v.rackId,
                clientId: v.clientId,
                clientHost: v.clientHost,
                subscribedTopicNames: v.subscribedTopicNames,
                subscribedTopicRegex: v.subscribedTopicRegex,
                rebalanceTimeoutMs: v.rebalanceTimeoutMs,
                serverAssignor: v.serverAssignor
              }
        )
      )
      return next
    }
    case "ConsumerGroupTargetAssignmentMetadata": {
      const v = record.value?.data
      next.set(groupId, { ...group, assignmentEpoch: v?.assignmentEpoch ?? 0 })
      return next
    }
    case "ConsumerGroupTargetAssignmentMember": {
      const target = new Map(group.target)
      if (record.value === null) target.delete(record.key.memberId)
      else target.set(record.key.memberId, fromWire(record.value.data.topicPartitions))
      next.set(groupId, { ...group, target })
      return next
    }
    case "ConsumerGroupRegularExpression": {
      const resolvedRegexes = new Map(group.resolvedRegexes)
      if (record.value === null) resolvedRegexes.delete(record.key.regularExpression)
      else resolvedRegexes.set(record.key.regularExpression, record.value.data)
      next.set(groupId, { ...group, resolvedRegexes })
      return next
    }
    case "ConsumerGroupCurrentMemberAssignment": {
      const v = record.value?.data
      next.set(
        groupId,
        // A tombstone of the assignment comes with (before) the member's own tombstone.
        v === undefined
          ? group
          : withMember(record.key.memberId, (m) => ({
              ...m,
              memberEpoch: v.memberEpoch,
              previousMemberEpoch: v.previousMemberEpoch,
              state: v.state,
              assigned: fromWire(v.assignedPartitions),
              pendingRevocation: fromWire(v.partitionsPendingRevocation)
            }))
      )
      return next
    }
    default:
      return absurd(record)
  }
}

const absurd = (record: never): never => {
  throw new Error(`unknown consumer group record ${String(record)}`)
}

// ---------------------------------------------------------------------------------------------------
// Queries

export type GroupStateName = "Empty" | "Assigning" | "Reconciling" | "Stable"

export const stateOf = (group: ConsumerGroup): GroupStateName => {
  if (group.members.size === 0) return "Empty"
  if (group.groupEpoch > group.assignmentEpoch) return "Assigning"
  for (const m of group.members.values())
    if (m.memberEpoch !== group.assignmentEpoch || m.state !== MemberState.STABLE) return "Reconciling"
  return "Stable"
}

/** The assignor the group uses: the one most members ask for, else the configured default. */
export const assignorOf = (group: ConsumerGroup, assignors: ReadonlyArray<string>): string => {
  const votes = new Map<string, number>()
  for (const m of group.members.values())
    if (m.serverAssignor !== null) votes.set(m.serverAssignor, (votes.get(m.serverAssignor) ?? 0) + 1)
  let best = assignors[0] ?? "uniform"
  let most = 0
  for (const [name, n] of votes) if (n > most || (n === most && name < best)) [best, most] = [name, n]
  return best
}

// ---------------------------------------------------------------------------------------------------
// Decisions

/** A topic of the cluster as the coordinator sees it. */
export interface TopicMeta {
  readonly name: string
  readonly topicId: string
  readonly partitions: number
}

export interface Config {
  /** `group.consumer.session.timeout.ms` */
  readonly sessionTimeoutMs: number
  /** `group.consumer.heartbeat.interval.ms` */
  readonly heartbeatIntervalMs: number
  /** `group.consumer.assignors`: the first is the default. */
  readonly assignors: ReadonlyArray<string>
  /** `group.consumer.max.size` */
  readonly maxSize: number
  /** `group.consumer.migration.policy` */
  readonly migrationPolicy: MigrationPolicy
}

/** Which conversions between classic and consumer groups `group.consumer.migration.policy` allows. */
export type MigrationPolicy = "disabled" | "upgrade" | "downgrade" | "bidirectional"

export const upgradeEnabled = (p: MigrationPolicy): boolean => p === "upgrade" || p === "bidirectional"

export const defaultConfig: Config = {
  sessionTimeoutMs: 45_000,
  heartbeatIntervalMs: 5_000,
  assignors: ["uniform", "range"],
  maxSize: 2_147_483_647,
  migrationPolicy: "bidirectional"
}

export interface HeartbeatRequest {
  readonly apiVersion: number
  readonly groupId: string
  readonly memberId: string
  readonly memberEpoch: number
  readonly instanceId: string | null
  readonly rackId: string | null
  readonly rebalanceTimeoutMs: number
  readonly subscribedTopicNames: ReadonlyArray<string> | null
  readonly subscribedTopicRegex: string | null
  readonly serverAssignor: string | null
  readonly topicPartitions: ReadonlyArray<{
    readonly topicId: string
    readonly partitions: ReadonlyArray<number>
  }> | null
  readonly clientId: string
  readonly clientHost: string
}

export interface HeartbeatResponse {
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly memberId: string | null
  readonly memberEpoch: number
  readonly heartbeatIntervalMs: number
  readonly assignment: ReadonlyArray<{ readonly topicId: string; readonly partitions: ReadonlyArray<number> }> | null
}

export interface Context {
  readonly topics: ReadonlyArray<TopicMeta>
  readonly config: Config
  readonly nowMs: number
  /** A member id for a member that joins without one (ConsumerGroupHeartbeat v0). */
  readonly newMemberId: () => string
  /** The classic group of the same id, if there is one: an empty one is converted, a live one refused. */
  readonly classicGroup: { readonly members: number; readonly protocolType: string } | undefined
}

export interface Decision<A> {
  readonly records: ReadonlyArray<GroupRecords.GroupRecord>
  readonly response: A
}

const heartbeatError = (errorCode: number, errorMessage: string | null = null): Decision<HeartbeatResponse> => ({
  records: [],
  response: { errorCode, errorMessage, memberId: null, memberEpoch: -1, heartbeatIntervalMs: 0, assignment: null }
})

const sameAssignment = (a: Assignment, b: Assignment): boolean => {
  const ka = [...a].filter(([, p]) => p.length > 0)
  const kb = [...b].filter(([, p]) => p.length > 0)
  if (ka.length !== kb.length) return false
  return ka.every(([t, ps]) => {
    const other = b.get(t)
    return other !== undefined && other.length === ps.length && ps.every((p, i) => other[i] === p)
  })
}

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i])

const has = (a: Assignment, topicId: string, partition: number) => a.get(topicId)?.includes(partition) === true

const minus = (a: Assignment, b: Assignment): Assignment =>
  new Map([...a].map(([t, ps]) => [t, ps.filter((p) => !has(b, t, p))] as const).filter(([, ps]) => ps.length > 0))

const intersect = (a: Assignment, b: Assignment): Assignment =>
  new Map([...a].map(([t, ps]) => [t, ps.filter((p) => has(b, t, p))] as const).filter(([, ps]) => ps.length > 0))

const union = (a: Assignment, b: Assignment): Assignment => {
  const out = new Map<string, Array<number>>()
  for (const x of [a, b])
    for (const [t, ps] of x) {
      const list = out.get(t) ?? []
      for (const p of ps) if (!list.includes(p)) list.push(p)
      out.set(t, list)
    }
  for (const l of out.values()) l.sort((x, y) => x - y)
  return out
}

const isEmpty = (a: Assignment) => [...a.values()].every((ps) => ps.length === 0)

/**
 * The topics a member subscribes to among those that exist: its topic names, and the topics its regular
 * expression resolved to (as the group last resolved it, not as the cluster is now).
 */
const subscribedTopics = (
  m: Member,
  group: ConsumerGroup,
  topics: ReadonlyArray<TopicMeta>
): ReadonlyArray<TopicMeta> => {
  const names = new Set(m.subscribedTopicNames)
  const resolved = m.subscribedTopicRegex === null ? undefined : group.resolvedRegexes.get(m.subscribedTopicRegex)
  if (resolved !== undefined) for (const t of resolved.topics) names.add(t)
  return topics.filter((t) => names.has(t.name))
}

/** The topics of the cluster a regular expression matches, by name, sorted. */
const resolveRegex = (regex: string, topics: ReadonlyArray<TopicMeta>): ReadonlyArray<string> => {
  const compiled = TopicRegex.compile(regex)
  if (compiled._tag === "Left") return []
  return topics
    .filter((t) => TopicRegex.matches(compiled.right, t.name))
    .map((t) => t.name)
    .sort()
}

const regexRecord = (groupId: string, regularExpression: string, resolved: ResolvedRegex | null) =>
  GroupRecords.consumerGroupRecord(
    "ConsumerGroupRegularExpression",
    { groupId, regularExpression },
    resolved === null ? null : { topics: resolved.topics, version: resolved.version, timestamp: resolved.timestamp }
  )

/**
 * Resolves the regular expressions the members of `group` subscribe to: a new one now; one resolved
 * before once its resolution is older than `REGEX_REFRESH_INTERVAL_MS`, written again only if its topics
 * changed. Expressions no member subscribes to any more get their tombstone. Returns the records and the
 * group with its resolutions.
 */
const resolveRegexes = (
  group: ConsumerGroup,
  ctx: Context
): { readonly records: ReadonlyArray<GroupRecords.GroupRecord>; readonly group: ConsumerGroup } => {
  const inUse = new Set<string>()
  for (const m of group.members.values()) if (m.subscribedTopicRegex !== null) inUse.add(m.subscribedTopicRegex)
  const records: Array<GroupRecords.GroupRecord> = []
  const resolvedRegexes = new Map(group.resolvedRegexes)
  for (const regex of group.resolvedRegexes.keys())
    if (!inUse.has(regex)) {
      resolvedRegexes.delete(regex)
      records.push(regexRecord(group.groupId, regex, null))
    }
  for (const regex of [...inUse].sort()) {
    const previous = resolvedRegexes.get(regex)
    if (previous !== undefined && ctx.nowMs <= Number(previous.timestamp) + REGEX_REFRESH_INTERVAL_MS) continue
    const topics = resolveRegex(regex, ctx.topics)
    if (previous !== undefined && sameList(topics, previous.topics)) continue
    const resolved: ResolvedRegex = {
      topics,
      version: (previous?.version ?? 0n) + 1n,
      timestamp: BigInt(ctx.nowMs)
    }
    resolvedRegexes.set(regex, resolved)
    records.push(regexRecord(group.groupId, regex, resolved))
  }
  return records.length === 0 ? { records, group } : { records, group: { ...group, resolvedRegexes } }
}

/** A stable 64-bit hash of the subscribed topics (name, id, partition count). */
const metadataHash = (topics: ReadonlyArray<TopicMeta>): bigint => {
  let h = 0xcbf29ce484222325n
  for (const t of [...topics].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    for (const ch of `${t.name}\u0000${t.topicId}\u0000${t.partitions}\u0001`) {
      h ^= BigInt(ch.charCodeAt(0))
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn
    }
  }
  return BigInt.asIntN(64, h)
}

const groupTopics = (group: ConsumerGroup, topics: ReadonlyArray<TopicMeta>): ReadonlyArray<TopicMeta> => {
  const byId = new Map<string, TopicMeta>()
  for (const m of group.members.values()) for (const t of subscribedTopics(m, group, topics)) byId.set(t.topicId, t)
  return [...byId.values()]
}

const memberMetadataRecord = (groupId: string, m: Member) =>
  GroupRecords.consumerGroupRecord(
    "ConsumerGroupMemberMetadata",
    { groupId, memberId: m.memberId },
    {
      instanceId: m.instanceId,
      rackId: m.rackId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      serverAssignor: m.serverAssignor
    }
  )

const currentAssignmentRecord = (groupId: string, m: Member) =>
  GroupRecords.consumerGroupRecord(
    "ConsumerGroupCurrentMemberAssignment",
    { groupId, memberId: m.memberId },
    {
      memberEpoch: m.memberEpoch,
      previousMemberEpoch: m.previousMemberEpoch,
      state: m.state,
      assignedPartitions: toWire(m.assigned),
      partitionsPendingRevocation: toWire(m.pendingRevocation)
    }
  )

const epochRecord = (groupId: string, epoch: number, hash: bigint) =>
  GroupRecords.consumerGroupRecord("ConsumerGroupMetadata", { groupId }, { epoch, metadataHash: hash })

/** The tombstones of a member's own records. */
const memberTombstones = (group: ConsumerGroup, memberId: string): ReadonlyArray<GroupRecords.GroupRecord> => [
  GroupRecords.consumerGroupRecord("ConsumerGroupCurrentMemberAssignment", { groupId: group.groupId, memberId }, null),
  GroupRecords.consumerGroupRecord("ConsumerGroupTargetAssignmentMember", { groupId: group.groupId, memberId }, null),
  GroupRecords.consumerGroupRecord("ConsumerGroupMemberMetadata", { groupId: group.groupId, memberId }, null)
]

/**
 * The records that take a member out of its group: its tombstones, the tombstone of its regular
 * expression when no other member subscribes to it, and the group epoch bump that follows.
 */
const removeMemberRecords = (group: ConsumerGroup, memberId: string): ReadonlyArray<GroupRecords.GroupRecord> => {
  const regex = group.members.get(memberId)?.subscribedTopicRegex ?? null
  const lastOfRegex =
    regex !== null &&
    group.resolvedRegexes.has(regex) &&
    ![...group.members.values()].some((m) => m.memberId !== memberId && m.subscribedTopicRegex === regex)
  return [
    ...memberTombstones(group, memberId),
    ...(lastOfRegex ? [regexRecord(group.groupId, regex, null)] : []),
    epochRecord(group.groupId, group.groupEpoch + 1, group.metadataHash)
  ]
}

/**
 * Reconciles a member towards its target (Kafka's current assignment builder): partitions it must give
 * up go to pending revocation first and it keeps its epoch until its heartbeat shows it owns none of
 * them; then it moves to the target epoch, with the partitions of its target that no other member still
 * owns (the rest wait, UNRELEASED_PARTITIONS, until their owners release them).
 */
export const reconcile = (
  member: Member,
  targetEpoch: number,
  target: Assignment,
  owned: Assignment | null,
  ownedByOthers: (topicId: string, partition: number) => boolean
): Member => {
  if (member.state === MemberState.UNREVOKED_PARTITIONS) {
    if (owned === null || !isEmpty(intersect(owned, member.pendingRevocation))) return member
  } else if (member.memberEpoch === targetEpoch && member.state === MemberState.STABLE) return member
  const keep = intersect(member.assigned, target)
  const revoke = minus(member.assigned, target)
  if (!isEmpty(revoke))
    return { ...member, state: MemberState.UNREVOKED_PARTITIONS, assigned: keep, pendingRevocation: revoke }
  const free = new Map(
    [...minus(target, keep)]
      .map(([t, ps]) => [t, ps.filter((p) => !ownedByOthers(t, p))] as const)
      .filter(([, ps]) => ps.length > 0)
  )
  const assigned = union(keep, free)
  const epochMoves = member.memberEpoch !== targetEpoch
  return {
    ...member,
    memberEpoch: targetEpoch,
    previousMemberEpoch: epochMoves ? member.memberEpoch : member.previousMemberEpoch,
    state: sameAssignment(assigned, target) ? MemberState.STABLE : MemberState.UNRELEASED_PARTITIONS,
    assigned,
    pendingRevocation: EMPTY_ASSIGNMENT
  }
}

/** Which other member owns a partition (assigned or still to revoke). */
const othersOwn =
  (group: ConsumerGroup, memberId: string) =>
  (topicId: string, partition: number): boolean => {
    for (const m of group.members.values())
      if (
        m.memberId !== memberId &&
        (has(m.assigned, topicId, partition) || has(m.pendingRevocation, topicId, partition))
      )
        return true
    return false
  }

const validate = (req: HeartbeatRequest, config: Config): { code: number; message: string } | null => {
  const invalid = (message: string) => ({ code: E.INVALID_REQUEST, message })
  if (req.groupId === "") return invalid("GroupId can't be empty.")
  if (req.instanceId === "") return invalid("InstanceId can't be empty.")
  if (req.rackId === "") return invalid("RackId can't be empty.")
  if (req.memberEpoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH) return invalid(`MemberEpoch is invalid: ${req.memberEpoch}.`)
  if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH && req.instanceId === null)
    return invalid("InstanceId can't be null when leaving as a static member.")
  if ((req.memberEpoch !== 0 || req.apiVersion >= 1) && req.memberId === "") return invalid("MemberId can't be empty.")
  if (req.memberEpoch === 0) {
    if (req.rebalanceTimeoutMs === -1) return invalid("RebalanceTimeoutMs must be provided in first request.")
    if (req.topicPartitions === null || req.topicPartitions.length > 0)
      return invalid("TopicPartitions must be empty when (re-)joining.")
    if (req.subscribedTopicNames === null && req.subscribedTopicRegex === null)
      return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
  }
  if (req.subscribedTopicRegex !== null && req.subscribedTopicRegex !== "") {
    const compiled = TopicRegex.compile(req.subscribedTopicRegex)
    if (compiled._tag === "Left") return { code: E.INVALID_REGULAR_EXPRESSION, message: compiled.left }
  }
  if (req.serverAssignor !== null && !config.assignors.includes(req.serverAssignor))
    return { code: E.UNSUPPORTED_ASSIGNOR, message: `ServerAssignor ${req.serverAssignor} is not supported.` }
  return null
}

/**
 * Why a heartbeat cannot take over the classic group of its id (null: it can, the group is empty). An
 * empty classic group is converted whatever the policy, as on Kafka; one with members is refused with
 * Kafka's messages when `group.consumer.migration.policy` forbids the upgrade, the group is not of the
 * `consumer` protocol type or is too large; otherwise it would be Kafka's online upgrade, which keeps
 * the classic members in the consumer group: that is not implemented, and refused as such.
 */
const upgradeRefusal = (
  groupId: string,
  classic: { readonly members: number; readonly protocolType: string },
  config: Config
): string | null => {
  if (classic.members === 0) return null
  const cannot = `Cannot upgrade classic group ${groupId} to consumer group because`
  if (!upgradeEnabled(config.migrationPolicy)) return `${cannot} online upgrade is disabled.`
  if (classic.protocolType !== "consumer") return `${cannot} the group does not use the consumer embedded protocol.`
  if (classic.members > config.maxSize) return `${cannot} the group size exceeds the consumer group maximum size.`
  return `${cannot} it has members: the online upgrade of a classic group with members (classic members in a consumer group) is not supported; stop its classic members first.`
}

/**
 * ConsumerGroupHeartbeat. Emits, as Kafka does: the member's metadata (5) when it changed; the group
 * epoch (3) when a member joined or its subscription or the subscribed topics changed; the target
 * assignment of the members whose target changed (7) and its epoch (6) when the group epoch moved past
 * the target's; the member's current assignment (8) when reconciliation moved it. A leave (-1) writes
 * tombstones of the member's records and bumps the group epoch; a static leave (-2) keeps the member
 * and its assignment at epoch -2 for its instance to come back. Joining an empty classic group of the
 * same id converts it (its GroupMetadata tombstone first).
 */
export const heartbeat = (
  state: State,
  req: HeartbeatRequest,
  ctx: Context
): Decision<HeartbeatResponse> & { readonly member: Member | null } => {
  const fail = (code: number, message: string | null = null) => ({ ...heartbeatError(code, message), member: null })
  const invalid = validate(req, ctx.config)
  if (invalid !== null) return fail(invalid.code, invalid.message)
  const records: Array<GroupRecords.GroupRecord> = []
  let group = state.get(req.groupId)
  if (group === undefined) {
    if (req.memberEpoch !== 0) return fail(E.UNKNOWN_MEMBER_ID, `Group ${req.groupId} has no member ${req.memberId}.`)
    if (ctx.classicGroup !== undefined) {
      const refusal = upgradeRefusal(req.groupId, ctx.classicGroup, ctx.config)
      if (refusal !== null) return fail(E.GROUP_ID_NOT_FOUND, refusal)
      records.push(GroupRecords.groupMetadataTombstone(req.groupId))
    }
    group = newGroup(req.groupId)
  }
  const existing = group.members.get(req.memberId)
  // Leaving
  if (req.memberEpoch === LEAVE_GROUP_MEMBER_EPOCH || req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
    const leaving =
      existing ??
      (req.instanceId === null
        ? undefined
        : [...group.members.values()].find((m) => m.instanceId === req.instanceId && m.memberId === req.memberId))
    if (leaving === undefined)
      return fail(E.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not in group ${req.groupId}.`)
    if (req.instanceId !== null && leaving.instanceId !== req.instanceId)
      return fail(E.FENCED_INSTANCE_ID, `Instance ${req.instanceId} is not member ${req.memberId}.`)
    const response: HeartbeatResponse = {
      errorCode: E.NONE,
      errorMessage: null,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      heartbeatIntervalMs: 0,
      assignment: null
    }
    if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
      const kept = { ...leaving, memberEpoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH }
      return { records: [currentAssignmentRecord(group.groupId, kept)], response, member: kept }
    }
    return { records: removeMemberRecords(group, leaving.memberId), response, member: null }
  }
  // Joining or heartbeating
  let member: Member
  let joined = false
  let replacedStatic: Member | undefined
  if (req.memberEpoch === 0) {
    const memberId = req.memberId === "" ? ctx.newMemberId() : req.memberId
    const previous =
      req.instanceId === null ? undefined : [...group.members.values()].find((m) => m.instanceId === req.instanceId)
    if (previous !== undefined && previous.memberId !== memberId) {
      if (previous.memberEpoch !== LEAVE_GROUP_STATIC_MEMBER_EPOCH)
        return fail(E.UNRELEASED_INSTANCE_ID, `Static member ${req.instanceId} is still in the group.`)
      replacedStatic = previous
    }
    const current = group.members.get(memberId)
    if (current === undefined && replacedStatic === undefined && group.members.size >= ctx.config.maxSize)
      return fail(E.GROUP_MAX_SIZE_REACHED, `Group ${req.groupId} has reached its maximum size.`)
    joined = current === undefined && replacedStatic === undefined
    member =
      current ??
      (replacedStatic === undefined
        ? newMember(memberId)
        : { ...replacedStatic, memberId, memberEpoch: replacedStatic.previousMemberEpoch })
  } else {
    if (existing === undefined)
      return fail(E.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not in group ${req.groupId}.`)
    if (req.instanceId !== null && existing.instanceId !== null && existing.instanceId !== req.instanceId)
      return fail(E.FENCED_INSTANCE_ID, `Instance ${req.instanceId} is not member ${req.memberId}.`)
    const owned = req.topicPartitions === null ? null : fromWire(req.topicPartitions)
    if (req.memberEpoch > existing.memberEpoch) return fail(E.FENCED_MEMBER_EPOCH, "The member epoch is fenced.")
    if (
      req.memberEpoch < existing.memberEpoch &&
      !(req.memberEpoch === existing.previousMemberEpoch && owned !== null && isEmpty(minus(owned, existing.assigned)))
    )
      return fail(E.FENCED_MEMBER_EPOCH, "The member epoch is fenced.")
    member = existing
  }
  const before = member
  const regexGiven = req.subscribedTopicRegex !== null && req.subscribedTopicRegex !== ""
  const updated: Member = {
    ...member,
    instanceId: req.instanceId ?? member.instanceId,
    rackId: req.rackId ?? member.rackId,
    clientId: req.clientId,
    clientHost: req.clientHost,
    rebalanceTimeoutMs: req.rebalanceTimeoutMs === -1 ? member.rebalanceTimeoutMs : req.rebalanceTimeoutMs,
    subscribedTopicNames: req.subscribedTopicNames ?? (regexGiven ? [] : member.subscribedTopicNames),
    // An empty regex (librdkafka sends one beside topic names) means none, as on Kafka.
    subscribedTopicRegex:
      req.subscribedTopicRegex === ""
        ? null
        : (req.subscribedTopicRegex ?? (req.subscribedTopicNames !== null ? null : member.subscribedTopicRegex)),
    serverAssignor: req.serverAssignor ?? member.serverAssignor
  }
  const metadataChanged =
    joined ||
    replacedStatic !== undefined ||
    updated.instanceId !== before.instanceId ||
    updated.rackId !== before.rackId ||
    updated.clientId !== before.clientId ||
    updated.clientHost !== before.clientHost ||
    updated.rebalanceTimeoutMs !== before.rebalanceTimeoutMs ||
    !sameList(updated.subscribedTopicNames, before.subscribedTopicNames) ||
    updated.subscribedTopicRegex !== before.subscribedTopicRegex ||
    updated.serverAssignor !== before.serverAssignor
  const subscriptionChanged =
    joined ||
    !sameList(updated.subscribedTopicNames, before.subscribedTopicNames) ||
    updated.subscribedTopicRegex !== before.subscribedTopicRegex ||
    updated.serverAssignor !== before.serverAssignor
  if (replacedStatic !== undefined) records.push(...memberTombstones(group, replacedStatic.memberId))
  if (metadataChanged) records.push(memberMetadataRecord(group.groupId, updated))
  const members = new Map(group.members)
  if (replacedStatic !== undefined) members.delete(replacedStatic.memberId)
  members.set(updated.memberId, updated)
  const target = new Map(group.target)
  if (replacedStatic !== undefined) {
    const t = target.get(replacedStatic.memberId)
    target.delete(replacedStatic.memberId)
    if (t !== undefined) target.set(updated.memberId, t)
  }
  const regexes = resolveRegexes({ ...group, members, target }, ctx)
  records.push(...regexes.records)
  let next: ConsumerGroup = regexes.group
  const hash = metadataHash(groupTopics(next, ctx.topics))
  let groupEpoch = next.groupEpoch
  if (subscriptionChanged || regexes.records.length > 0 || hash !== next.metadataHash) {
    groupEpoch = next.groupEpoch + 1
    records.push(epochRecord(group.groupId, groupEpoch, hash))
    next = { ...next, groupEpoch, metadataHash: hash }
  }
  if (replacedStatic !== undefined && target.has(updated.memberId))
    records.push(
      GroupRecords.consumerGroupRecord(
        "ConsumerGroupTargetAssignmentMember",
        { groupId: group.groupId, memberId: updated.memberId },
        { topicPartitions: toWire(target.get(updated.memberId)!) }
      )
    )
  if (next.groupEpoch > next.assignmentEpoch) {
    const computed = computeTarget(next, ctx)
    for (const [memberId, a] of computed)
      if (!sameAssignment(a, next.target.get(memberId) ?? EMPTY_ASSIGNMENT) || !next.target.has(memberId))
        records.push(
          GroupRecords.consumerGroupRecord(
            "ConsumerGroupTargetAssignmentMember",
            { groupId: group.groupId, memberId },
            { topicPartitions: toWire(a) }
          )
        )
    records.push(
      GroupRecords.consumerGroupRecord(
        "ConsumerGroupTargetAssignmentMetadata",
        { groupId: group.groupId },
        { assignmentEpoch: next.groupEpoch, assignmentTimestamp: BigInt(ctx.nowMs) }
      )
    )
    next = { ...next, target: computed, assignmentEpoch: next.groupEpoch }
  }
  const owned =
    req.memberEpoch === 0 ? EMPTY_ASSIGNMENT : req.topicPartitions === null ? null : fromWire(req.topicPartitions)
  const reconciled = reconcile(
    updated,
    next.assignmentEpoch,
    next.target.get(updated.memberId) ?? EMPTY_ASSIGNMENT,
    owned,
    othersOwn(next, updated.memberId)
  )
  const assignmentChanged =
    reconciled.memberEpoch !== before.memberEpoch ||
    reconciled.state !== before.state ||
    !sameAssignment(reconciled.assigned, before.assigned) ||
    !sameAssignment(reconciled.pendingRevocation, before.pendingRevocation) ||
    joined ||
    replacedStatic !== undefined
  if (assignmentChanged) records.push(currentAssignmentRecord(group.groupId, reconciled))
  const fullRequest =
    req.memberEpoch === 0 ||
    (req.rebalanceTimeoutMs !== -1 && req.subscribedTopicNames !== null && req.topicPartitions !== null)
  const sendAssignment = fullRequest || !sameAssignment(reconciled.assigned, before.assigned) || joined
  return {
    records,
    member: reconciled,
    response: {
      errorCode: E.NONE,
      errorMessage: null,
      memberId: reconciled.memberId,
      memberEpoch: reconciled.memberEpoch,
      heartbeatIntervalMs: ctx.config.heartbeatIntervalMs,
      assignment: sendAssignment ? toWire(reconciled.assigned) : null
    }
  }
}

/** The group's target assignment for its current members and subscriptions. */
const computeTarget = (group: ConsumerGroup, ctx: Context): ReadonlyMap<string, Assignment> => {
  const assignor = Assignors.byName(assignorOf(group, ctx.config.assignors)) ?? Assignors.uniform
  const partitions = new Map<string, number>()
  const members = [...group.members.values()].map((m) => {
    const topics = subscribedTopics(m, group, ctx.topics)
    for (const t of topics) partitions.set(t.topicId, t.partitions)
    return {
      memberId: m.memberId,
      subscribedTopicIds: new Set(topics.map((t) => t.topicId)),
      previous: group.target.get(m.memberId) ?? EMPTY_ASSIGNMENT
    }
  })
  return assignor({ members, partitions })
}

/**
 * Fences a member whose session or revocation timed out: the records of a leave (-1), if it is still
 * the member `memberEpoch` names (a heartbeat since then re-armed its timers).
 */
export const fenceMember = (
  state: State,
  groupId: string,
  memberId: string,
  expect: (m: Member) => boolean
): ReadonlyArray<GroupRecords.GroupRecord> => {
  const group = state.get(groupId)
  const member = group?.members.get(memberId)
  if (group === undefined || member === undefined || !expect(member)) return []
  return removeMemberRecords(group, memberId)
}

/**
 * OffsetCommit and TxnOffsetCommit by a member of a consumer group: UNKNOWN_MEMBER_ID for a member it
 * does not have, STALE_MEMBER_EPOCH for another epoch than the member's, UNSUPPORTED_VERSION below
 * OffsetCommit v9 (which has no member epoch). Commits from outside the group (no member, epoch -1) are
 * taken while the group is empty.
 */
export const validateOffsetCommit = (
  group: ConsumerGroup,
  memberId: string,
  memberEpoch: number,
  apiVersion: number | undefined
): number => {
  if (memberEpoch < 0 && memberId === "" && group.members.size === 0) return E.NONE
  const member = group.members.get(memberId)
  if (member === undefined) return E.UNKNOWN_MEMBER_ID
  if (apiVersion !== undefined && apiVersion < 9) return E.UNSUPPORTED_VERSION
  if (memberEpoch !== member.memberEpoch) return E.STALE_MEMBER_EPOCH
  return E.NONE
}

export interface DescribedMember {
  readonly memberId: string
  readonly instanceId: string | null
  readonly rackId: string | null
  readonly memberEpoch: number
  readonly clientId: string
  readonly clientHost: string
  readonly subscribedTopicNames: ReadonlyArray<string>
  readonly subscribedTopicRegex: string | null
  readonly assignment: ReadonlyArray<{ topicId: string; topicName: string; partitions: ReadonlyArray<number> }>
  readonly targetAssignment: ReadonlyArray<{ topicId: string; topicName: string; partitions: ReadonlyArray<number> }>
}

export interface DescribedGroup {
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly groupId: string
  readonly groupState: string
  readonly groupEpoch: number
  readonly assignmentEpoch: number
  readonly assignorName: string
  readonly members: ReadonlyArray<DescribedMember>
}

/** ConsumerGroupDescribe of one group (GROUP_ID_NOT_FOUND for none, or a classic group). */
export const describe = (
  state: State,
  groupId: string,
  topics: ReadonlyArray<TopicMeta>,
  config: Config,
  isClassic: boolean
): DescribedGroup => {
  const group = state.get(groupId)
  if (group === undefined)
    return {
      errorCode: E.GROUP_ID_NOT_FOUND,
      errorMessage: isClassic ? `Group ${groupId} is not a consumer group.` : `Group ${groupId} not found.`,
      groupId,
      groupState: "Dead",
      groupEpoch: -1,
      assignmentEpoch: -1,
      assignorName: "",
      members: []
    }
  const names = new Map(topics.map((t) => [t.topicId, t.name]))
  const named = (a: Assignment) =>
    toWire(a).map((t) => ({ topicId: t.topicId, topicName: names.get(t.topicId) ?? "", partitions: t.partitions }))
  return {
    errorCode: E.NONE,
    errorMessage: null,
    groupId,
    groupState: stateOf(group),
    groupEpoch: group.groupEpoch,
    assignmentEpoch: group.assignmentEpoch,
    assignorName: assignorOf(group, config.assignors),
    members: [...group.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      memberEpoch: m.memberEpoch,
      clientId: m.clientId,
      clientHost: m.clientHost,
      subscribedTopicNames: m.subscribedTopicNames,
      subscribedTopicRegex: m.subscribedTopicRegex,
      assignment: named(m.assigned),
      targetAssignment: named(group.target.get(m.memberId) ?? EMPTY_ASSIGNMENT)
    }))
  }
}

/** The records deleting an empty consumer group (DeleteGroups): its epochs' tombstones. */
export const deleteGroupRecords = (group: ConsumerGroup): ReadonlyArray<GroupRecords.GroupRecord> => [
  ...[...group.resolvedRegexes.keys()].map((regex) => regexRecord(group.groupId, regex, null)),
  GroupRecords.consumerGroupRecord("ConsumerGroupTargetAssignmentMetadata", { groupId: group.groupId }, null),
  GroupRecords.consumerGroupRecord("ConsumerGroupMetadata", { groupId: group.groupId }, null)
]
