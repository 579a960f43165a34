/**
 * The mirror-level sync of KIP-1279 §5.9 step c that the mirror-coordinator broker runs on every refresh:
 * topic configs and consumer group offsets from the source to the destination, and the per-group sync
 * status (our addition) that DescribeClusterMirrors reports.
 *
 * - `topicConfigsTask`: the source's dynamic topic configs (ConfigSource DYNAMIC_TOPIC_CONFIG) of the
 *   mirror's MIRRORING topics (not the PAUSED ones, nor the STOPPED ones, which belong to this cluster
 *   after a failover), minus `mirror.topic.properties.exclude`, are SET on the
 *   destination where they differ. A key dynamic on the destination but no longer on the source is
 *   DELETEd (back to the destination's default): every non-excluded dynamic key of a mirror topic belongs to
 *   the source, so this needs no memory of what an earlier run copied, and it works after a coordinator
 *   move. Excluded keys and the destination-local `mirror.*` topic configs are never read, set or deleted.
 * - `groupOffsetsTask`: consumer groups of the source selected by `mirror.groups.include`/`exclude`,
 *   their committed offsets on partitions of MIRRORING topics, clamped to the destination log
 *   [log start, high watermark], committed on the destination's group coordinator as an admin does,
 *   unless the destination group is active (it owns its offsets then).
 *
 * Deciding (`topicConfigChanges`, `selectGroup`, `planGroupOffsets`) is pure; the tasks do the I/O through
 * `internal/SyncRequests`. The task contract (context, task) is the refresh loop's, which runs the tasks;
 * this module uses its types only, and never changes mirror state.
 */
import { type ClusterClient, FanOut } from "@clustermirror/client"
import { MetadataImage } from "@clustermirror/metadata-log"
import { type DescribeClusterMirrors, Errors } from "@clustermirror/protocol"
import { Effect, Either } from "effect"
import * as Clock from "./internal/Clock.js"
import type { CoordinatorContext, CoordinatorTask } from "./MirrorRefresh.js"
import {
  alterTopicConfigs,
  boundsOf,
  type CommittedOffset,
  type ConfigChange,
  type ConfigEntry,
  commitOffsets,
  describeGroupStates,
  describeTopicConfigs,
  epochForOffset,
  fetchCommittedOffsets,
  findGroupCoordinator,
  type LogBounds,
  listGroups,
  logBounds,
  type TopicConfigs
} from "./internal/SyncRequests.js"

/** Time a destination group coordinator gets to answer DescribeGroups in a group offset sync. */
const GROUP_DESCRIBE_TIMEOUT_MS = 30_000

// ---------------------------------------------------------------------------------------------------
// The refresh loop's task contract

export type { CoordinatorContext, CoordinatorTask, RefreshTopic } from "./MirrorRefresh.js"

// ---------------------------------------------------------------------------------------------------
// Patterns

/** The defaults of the mirror configs this module reads (KIP-1279 §7.3). */
export const DEFAULT_TOPIC_PROPERTIES_EXCLUDE =
  "follower.replication.throttled.replicas,leader.replication.throttled.replicas,message.timestamp.difference.max.ms," +
  "log.message.timestamp.before.max.ms,log.message.timestamp.after.max.ms,message.timestamp.type," +
  "unclean.leader.election.enable,min.insync.replicas"
export const DEFAULT_GROUPS_INCLUDE = ".*"
export const DEFAULT_GROUPS_EXCLUDE = ""

/** A config list of regexes, each matching whole names (as Java's `Pattern.matches`); throws on a bad one. */
export const patterns = (list: string): ReadonlyArray<RegExp> =>
  list
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => new RegExp(`^(?:${p})$`))

const matchesAny = (name: string, list: ReadonlyArray<RegExp>) => list.some((r) => r.test(name))

// ---------------------------------------------------------------------------------------------------
// Topic configs

/** Kafka's ConfigSource of a dynamic topic config. */
export const DYNAMIC_TOPIC_CONFIG = 1

/**
 * Whether a topic config key is never synced: `mirror.name` and the other destination-local `mirror.*`
 * topic configs (§7.4), and whatever `mirror.topic.properties.exclude` matches.
 */
export const isExcludedProperty = (name: string, exclude: ReadonlyArray<RegExp>): boolean =>
  name.startsWith("mirror.") || matchesAny(name, exclude)

/**
 * What to change on a destination topic so that its dynamic configs are the source's: SET every
 * non-excluded dynamic source key whose value differs or is not dynamic on the destination, DELETE every
 * non-excluded dynamic destination key the source no longer has. Sorted by key.
 */
export const topicConfigChanges = (
  source: ReadonlyArray<ConfigEntry>,
  destination: ReadonlyArray<ConfigEntry>,
  exclude: ReadonlyArray<RegExp>
): ReadonlyArray<ConfigChange> => {
  const dynamic = (entries: ReadonlyArray<ConfigEntry>) =>
    new Map(
      entries
        .filter((e) => e.source === DYNAMIC_TOPIC_CONFIG && !isExcludedProperty(e.name, exclude))
        .map((e) => [e.name, e.value])
    )
  const wanted = dynamic(source)
  const current = dynamic(destination)
  const changes: Array<ConfigChange> = []
  for (const [name, value] of wanted)
    if (!current.has(name) || current.get(name) !== value) changes.push({ name, operation: "SET", value })
  for (const name of current.keys()) if (!wanted.has(name)) changes.push({ name, operation: "DELETE", value: null })
  return changes.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Copies the dynamic topic configs of the mirror's non-PAUSED topics from the source (see the module doc). */
export const syncTopicConfigs = async (ctx: CoordinatorContext): Promise<void> => {
  const fail = (error: string) => ctx.syncError("topic_configs", error)
  let exclude: ReadonlyArray<RegExp>
  try {
    exclude = patterns(ctx.configs.get("mirror.topic.properties.exclude") ?? DEFAULT_TOPIC_PROPERTIES_EXCLUDE)
  } catch (e) {
    // Without the exclude list nothing can be copied safely.
    return fail(`mirror ${ctx.mirror}: mirror.topic.properties.exclude: ${messageOf(e)}`)
  }
  // Only topics being mirrored: a stopped topic belongs to this cluster now (after a failover its configs are
  // the operator's), and a paused one keeps what it had.
  const topics = ctx.topics.filter((t) => t.desiredState === "MIRRORING").map((t) => t.name)
  if (topics.length === 0) return
  let source: ReadonlyMap<string, TopicConfigs>
  let destination: ReadonlyMap<string, TopicConfigs>
  try {
    // not a fan-out: one DescribeConfigs to each of the two clusters
    ;[source, destination] = await Promise.all([
      describeTopicConfigs(ctx.source, topics),
      describeTopicConfigs(ctx.destination, topics)
    ])
  } catch (e) {
    return fail(`mirror ${ctx.mirror}: describing topic configs: ${messageOf(e)}`)
  }
  const changes = new Map<string, ReadonlyArray<ConfigChange>>()
  for (const topic of topics) {
    const s = source.get(topic)
    const d = destination.get(topic)
    // A topic gone from the source is the refresh's to report (topic_deleted), not a config sync error.
    if (s?._tag === "Error" && s.errorCode === Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) continue
    if (s === undefined || s._tag === "Error") {
      fail(`mirror ${ctx.mirror}: topic ${topic} on the source: ${s?.message ?? "not described"}`)
      continue
    }
    if (d === undefined || d._tag === "Error") {
      fail(`mirror ${ctx.mirror}: topic ${topic} on the destination: ${d?.message ?? "not described"}`)
      continue
    }
    const c = topicConfigChanges(s.entries, d.entries, exclude)
    if (c.length > 0) changes.set(topic, c)
  }
  if (changes.size === 0) return
  try {
    for (const [topic, error] of await alterTopicConfigs(ctx.destination, changes))
      if (error !== null) fail(`mirror ${ctx.mirror}: altering configs of topic ${topic}: ${error}`)
  } catch (e) {
    fail(`mirror ${ctx.mirror}: altering topic configs: ${messageOf(e)}`)
  }
}

export const topicConfigsTask: CoordinatorTask = { name: "topic_configs", run: syncTopicConfigs }

/**
 * The topics of a StartMirrorTopics with the source configs a topic the controller creates starts with: the
 * source's dynamic configs of each topic whose source id is known, minus `mirror.topic.properties.exclude`
 * (what the periodic sync would copy), so that a mirror topic has the source's `cleanup.policy` and the rest
 * from its creation. A source that does not answer leaves them to the periodic sync.
 */
export const withSourceTopicConfigs = async <T extends { readonly topicName: string; readonly numPartitions: number }>(
  sourceClient: (mirror: string) => ClusterClient.Client,
  image: MetadataImage.MetadataImage,
  request: { readonly mirrorName: string; readonly topics: ReadonlyArray<T> }
): Promise<ReadonlyArray<T & { readonly configs: ReadonlyArray<{ name: string; value: string | null }> }>> => {
  const topics = request.topics
  const mirrorConfigs = MetadataImage.configsOf(
    image,
    MetadataImage.ConfigResourceType.CLUSTER_MIRROR,
    request.mirrorName
  )
  const none = topics.map((t) => ({ ...t, configs: [] }))
  const known = topics.filter((t) => t.numPartitions > 0).map((t) => t.topicName)
  if (mirrorConfigs.size === 0 || known.length === 0) return none
  let exclude: ReadonlyArray<RegExp>
  let described: ReadonlyMap<string, TopicConfigs>
  try {
    exclude = patterns(mirrorConfigs.get("mirror.topic.properties.exclude") ?? DEFAULT_TOPIC_PROPERTIES_EXCLUDE)
    described = await describeTopicConfigs(sourceClient(request.mirrorName), known)
  } catch {
    return none
  }
  return topics.map((t) => {
    const d = described.get(t.topicName)
    return {
      ...t,
      configs:
        d?._tag !== "Configs"
          ? []
          : topicConfigChanges(d.entries, [], exclude).map((c) => ({ name: c.name, value: c.value }))
    }
  })
}

// ---------------------------------------------------------------------------------------------------
// Consumer group offsets: decisions

export type GroupSyncState = "SYNCED" | "SKIPPED_ACTIVE" | "FILTERED" | "CLAMPED" | "FAILED"

export interface GroupOffsetStatus {
  readonly topic: string
  readonly partition: number
  /** The offset committed on the source. */
  readonly sourceOffset: bigint
  /** The offset committed on the destination (clamped into its log). */
  readonly offset: bigint
  readonly leaderEpoch: number
}

export interface GroupSyncStatus {
  readonly group: string
  readonly state: GroupSyncState
  /** The destination group's state when skipped, the error when failed, else null. */
  readonly detail: string | null
  /** When this status was recorded (ms). */
  readonly timeMs: number
  /** When the group's offsets were last committed on the destination (ms); -1 never. */
  readonly lastSyncedMs: number
  /**
   * The offsets committed by this run, sorted by topic and partition; empty unless SYNCED or CLAMPED. A
   * group without commits on MIRRORING partitions gets no status.
   */
  readonly offsets: ReadonlyArray<GroupOffsetStatus>
}

/** Destination group states in which members own the offsets (classic and consumer protocol). */
export const ACTIVE_GROUP_STATES: ReadonlySet<string> = new Set([
  "stable",
  "preparingrebalance",
  "completingrebalance",
  "assigning",
  "reconciling"
])

export const isActiveGroupState = (state: string): boolean => ACTIVE_GROUP_STATES.has(state.toLowerCase())

/** Whether a listed group is a consumer group (classic consumers, or only committed offsets). */
export const isConsumerGroup = (protocolType: string): boolean => protocolType === "consumer" || protocolType === ""

/** `mirror.groups.include` ∧ ¬`mirror.groups.exclude` (exclude wins). */
export const selectGroup = (group: string, include: ReadonlyArray<RegExp>, exclude: ReadonlyArray<RegExp>): boolean =>
  matchesAny(group, include) && !matchesAny(group, exclude)

/** What to commit for one partition, or why not. */
export type OffsetPlan =
  | {
      readonly _tag: "Commit"
      readonly topic: string
      readonly partition: number
      readonly sourceOffset: bigint
      readonly offset: bigint
      /** The source's committed epoch, the destination's latest when clamped up, or to look up when clamped down. */
      readonly leaderEpoch: number | "lookup"
      readonly clamped: boolean
      readonly metadata: string | null
    }
  | { readonly _tag: "Skip"; readonly topic: string; readonly partition: number; readonly reason: string }

/**
 * The commits for a group's source offsets: only partitions `mirroring` accepts; each offset clamped to
 * the destination's [log start, high watermark]. Unclamped, the committed leader epoch is kept (the
 * mirrored log has the source's epochs). Clamped to the end, the epoch is the destination's latest (skip
 * when its log has none); clamped to the start, it must be looked up. Partitions without bounds are skipped.
 */
export const planGroupOffsets = (
  committed: ReadonlyArray<CommittedOffset>,
  mirroring: (topic: string, partition: number) => boolean,
  bounds: (topic: string, partition: number) => LogBounds | undefined
): ReadonlyArray<OffsetPlan> => {
  const out: Array<OffsetPlan> = []
  for (const c of committed) {
    if (!mirroring(c.topic, c.partition)) continue
    const b = bounds(c.topic, c.partition)
    const base = { topic: c.topic, partition: c.partition }
    if (b === undefined) {
      out.push({ _tag: "Skip", ...base, reason: "destination log bounds unknown" })
      continue
    }
    const commit = { _tag: "Commit" as const, ...base, sourceOffset: c.offset, metadata: c.metadata }
    if (c.offset > b.logEndOffset) {
      if (b.latestEpoch < 0) out.push({ _tag: "Skip", ...base, reason: "destination leader epoch unknown" })
      else out.push({ ...commit, offset: b.logEndOffset, leaderEpoch: b.latestEpoch, clamped: true })
    } else if (c.offset < b.logStartOffset)
      out.push({ ...commit, offset: b.logStartOffset, leaderEpoch: "lookup", clamped: true })
    else out.push({ ...commit, offset: c.offset, leaderEpoch: c.leaderEpoch, clamped: false })
  }
  return out.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
}

// ---------------------------------------------------------------------------------------------------
// Status

/**
 * The latest group sync statuses per mirror on this broker. Each run replaces a mirror's statuses
 * (groups gone from the source disappear) and carries each group's last sync time forward.
 */
export class GroupSyncStatusStore {
  private readonly byMirror = new Map<string, ReadonlyMap<string, GroupSyncStatus>>()

  /** A mirror's statuses, sorted by group. */
  statuses(mirror: string): ReadonlyArray<GroupSyncStatus> {
    return [...(this.byMirror.get(mirror)?.values() ?? [])].sort((a, b) =>
      a.group < b.group ? -1 : a.group > b.group ? 1 : 0
    )
  }

  /** The last time `group` of `mirror` was synced; -1 never. */
  lastSyncedMs(mirror: string, group: string): number {
    return this.byMirror.get(mirror)?.get(group)?.lastSyncedMs ?? -1
  }

  replace(mirror: string, statuses: ReadonlyArray<GroupSyncStatus>): void {
    this.byMirror.set(mirror, new Map(statuses.map((s) => [s.group, s])))
  }

  /** Forgets mirrors not in `mirrors` (deleted, or no longer coordinated here). */
  retain(mirrors: ReadonlySet<string>): void {
    for (const m of [...this.byMirror.keys()]) if (!mirrors.has(m)) this.byMirror.delete(m)
  }
}

type WireStatus = DescribeClusterMirrors.Response["mirrors"][number]["groupSyncStatuses"][number]

export const toWire = (s: GroupSyncStatus): WireStatus => ({
  groupId: s.group,
  state: s.state,
  detail: s.detail,
  timeMs: BigInt(s.timeMs),
  lastSyncedMs: BigInt(s.lastSyncedMs),
  offsets: s.offsets.map((o) => ({
    topicName: o.topic,
    partitionIndex: o.partition,
    sourceOffset: o.sourceOffset,
    offset: o.offset,
    leaderEpoch: o.leaderEpoch
  }))
})

/** A DescribeClusterMirrors answer with this broker's group sync statuses of each described mirror. */
export const withGroupSync = (
  response: DescribeClusterMirrors.Response,
  store: GroupSyncStatusStore
): DescribeClusterMirrors.Response => ({
  ...response,
  mirrors: response.mirrors.map((m) =>
    m.errorCode !== 0 ? m : { ...m, groupSyncStatuses: store.statuses(m.mirrorName).map(toWire) }
  )
})

// ---------------------------------------------------------------------------------------------------
// Consumer group offsets: the task

export interface GroupOffsetsOptions {
  readonly store: GroupSyncStatusStore
  readonly now?: () => number
}

/** Runs one group-offset sync of a mirror and records every selected or filtered group's status. */
export const syncGroupOffsets = async (ctx: CoordinatorContext, options: GroupOffsetsOptions): Promise<void> => {
  const now = options.now ?? Clock.now
  const store = options.store
  const fail = (error: string) => ctx.syncError("group_offsets", `mirror ${ctx.mirror}: ${error}`)
  let include: ReadonlyArray<RegExp>
  let exclude: ReadonlyArray<RegExp>
  try {
    include = patterns(ctx.configs.get("mirror.groups.include") ?? DEFAULT_GROUPS_INCLUDE)
    exclude = patterns(ctx.configs.get("mirror.groups.exclude") ?? DEFAULT_GROUPS_EXCLUDE)
  } catch (e) {
    return fail(`mirror.groups.include/exclude: ${messageOf(e)}`)
  }

  let listed: ReadonlyArray<string>
  try {
    listed = (await listGroups(ctx.source)).filter((g) => isConsumerGroup(g.protocolType)).map((g) => g.groupId)
  } catch (e) {
    return fail(`listing source groups: ${messageOf(e)}`)
  }
  const selected = listed.filter((g) => selectGroup(g, include, exclude))

  // The destination groups' coordinators and states; without them no commit is safe, so the run stops.
  const coordinators = new Map<string, number>()
  const states = new Map<string, string>()
  try {
    // not a fan-out: one FindCoordinator per group, each to any broker (the client picks and retries)
    await Promise.all(selected.map(async (g) => coordinators.set(g, await findGroupCoordinator(ctx.destination, g))))
    const byNode = new Map<number, Array<string>>()
    for (const [g, node] of coordinators) {
      let list = byNode.get(node)
      if (list === undefined) byNode.set(node, (list = []))
      list.push(g)
    }
    // DescribeGroups to each destination coordinator at once; one that fails or does not answer stops the run.
    const described = await Effect.runPromise(
      FanOut.forEachBroker(
        byNode,
        ([node, groups]) =>
          Effect.tryPromise({ try: () => describeGroupStates(ctx.destination, node, groups), catch: (e) => e }),
        (outcomes) => outcomes,
        { timeoutMs: GROUP_DESCRIBE_TIMEOUT_MS, describe: ([node]) => `broker ${node}` }
      )
    )
    for (const { result } of described) {
      if (Either.isLeft(result)) throw result.left
      for (const [g, s] of result.right) states.set(g, s)
    }
  } catch (e) {
    // Every selected group failed this run (e.g. GROUP_AUTHORIZATION_FAILED for the destination admin).
    const error = `listing destination groups: ${messageOf(e)}`
    const chosen = new Set(selected)
    store.replace(
      ctx.mirror,
      listed.map((group) => ({
        group,
        state: chosen.has(group) ? "FAILED" : "FILTERED",
        detail: chosen.has(group) ? error : null,
        timeMs: now(),
        lastSyncedMs: store.lastSyncedMs(ctx.mirror, group),
        offsets: []
      }))
    )
    return fail(error)
  }

  const mirroringTopics = new Map(ctx.topics.filter((t) => t.desiredState === "MIRRORING").map((t) => [t.name, t]))
  const mirroring = (topic: string, partition: number) => {
    const t = mirroringTopics.get(topic)
    if (t === undefined || partition < 0 || partition >= t.partitions) return false
    return (ctx.partitionState(t.topicId, partition) ?? t.desiredState) === "MIRRORING"
  }

  const statuses: Array<GroupSyncStatus> = []
  const status = (
    group: string,
    state: GroupSyncState,
    detail: string | null,
    offsets: ReadonlyArray<GroupOffsetStatus> = []
  ) => {
    const time = now()
    statuses.push({
      group,
      state,
      detail,
      timeMs: time,
      lastSyncedMs: offsets.length > 0 ? time : store.lastSyncedMs(ctx.mirror, group),
      offsets
    })
  }
  const chosen = new Set(selected)
  for (const g of listed) if (!chosen.has(g)) status(g, "FILTERED", null)

  // Destination log bounds, asked once per partition per run.
  const bounds = new Map<string, Promise<LogBounds | undefined>>()
  const boundsFor = (topic: string, partition: number) => {
    const k = `${topic}\u0000${partition}`
    let b = bounds.get(k)
    if (b === undefined) {
      b = logBounds(ctx.destination, [{ topic, partition }]).then((m) => boundsOf(m, topic, partition))
      bounds.set(k, b)
    }
    return b
  }

  for (const group of selected) {
    const destinationState = states.get(group) ?? "Dead"
    if (isActiveGroupState(destinationState)) {
      status(group, "SKIPPED_ACTIVE", destinationState)
      continue
    }
    try {
      const committed = await fetchCommittedOffsets(ctx.source, await findGroupCoordinator(ctx.source, group), group)
      const wanted = committed.filter((c) => mirroring(c.topic, c.partition))
      if (wanted.length === 0) continue
      const known = new Map<string, LogBounds | undefined>()
      // not a fan-out: log bounds per partition, each from its leader through the client
      await Promise.all(
        wanted.map(async (c) => known.set(`${c.topic}\u0000${c.partition}`, await boundsFor(c.topic, c.partition)))
      )
      const plan = planGroupOffsets(wanted, mirroring, (t, p) => known.get(`${t}\u0000${p}`))
      const commits: Array<GroupOffsetStatus & { readonly metadata: string | null; readonly clamped: boolean }> = []
      const skipped: Array<string> = []
      for (const p of plan) {
        if (p._tag === "Skip") {
          skipped.push(`${p.topic}-${p.partition}: ${p.reason}`)
          continue
        }
        const epoch =
          p.leaderEpoch === "lookup"
            ? await epochForOffset(
                ctx.destination,
                p.topic,
                p.partition,
                p.offset,
                known.get(`${p.topic}\u0000${p.partition}`)?.latestEpoch ?? -1
              )
            : p.leaderEpoch
        if (p.leaderEpoch === "lookup" && epoch < 0) {
          skipped.push(`${p.topic}-${p.partition}: destination leader epoch unknown`)
          continue
        }
        commits.push({
          topic: p.topic,
          partition: p.partition,
          sourceOffset: p.sourceOffset,
          offset: p.offset,
          leaderEpoch: epoch,
          metadata: p.metadata,
          clamped: p.clamped
        })
      }
      if (commits.length === 0) {
        const error = `nothing to commit: skipped ${skipped.join(", ")}`
        fail(`group ${group}: ${error}`)
        status(group, "FAILED", error)
        continue
      }
      const failed = await commitOffsets(ctx.destination, coordinators.get(group)!, group, commits)
      if (failed.length > 0) {
        const error = failed.map((f) => `${f.topic}-${f.partition}: ${f.error}`).join(", ")
        fail(`group ${group}: committing offsets: ${error}`)
        status(group, "FAILED", error)
        continue
      }
      const offsets = commits.map(({ metadata: _m, clamped: _c, ...o }) => o)
      const detail = skipped.length > 0 ? `skipped ${skipped.join(", ")}` : null
      status(group, commits.some((c) => c.clamped) ? "CLAMPED" : "SYNCED", detail, offsets)
    } catch (e) {
      fail(`group ${group}: ${messageOf(e)}`)
      status(group, "FAILED", messageOf(e))
    }
  }
  store.replace(ctx.mirror, statuses)
}

/** The group-offset sync as a coordinator task recording into `store`. */
export const groupOffsetsTask = (options: GroupOffsetsOptions): CoordinatorTask => ({
  name: "group_offsets",
  run: (ctx) => syncGroupOffsets(ctx, options)
})

/** Both sync tasks, for the refresh loop's `coordinatorTasks`. */
export const coordinatorTasks = (options: GroupOffsetsOptions): ReadonlyArray<CoordinatorTask> => [
  topicConfigsTask,
  groupOffsetsTask(options)
]
