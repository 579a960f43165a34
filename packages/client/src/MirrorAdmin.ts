/**
 * The admin calls of KIP-1279 cluster mirroring over a `ClusterClient.Client` of the destination
 * cluster: create and delete mirrors, start, stop, pause, resume and recover mirror topics, list and
 * describe mirrors, read a mirror's configs. Requests go to the least loaded broker, which forwards
 * what the controller decides; DescribeClusterMirrors goes to every broker (each reports the
 * partitions it leads) and `mergeDescriptions` merges the answers. Starting topics looks up their
 * topic id and partition count on the *source* cluster (a short-lived client on the mirror's
 * `bootstrap.servers`) and sends names only when that fails.
 *
 * Whole-request failures reject with `KafkaError`; per-topic outcomes are returned. This module owns
 * no state and must not decide anything the controller decides.
 */
import {
  CreateClusterMirror,
  DeleteClusterMirror,
  DescribeClusterMirrors,
  DescribeConfigs,
  Errors,
  ListClusterMirrors,
  ListOffsets,
  OffsetForLeaderEpoch,
  PauseMirrorTopics,
  RecoverMirrorTopics,
  ResumeMirrorTopics,
  StartMirrorTopics,
  StopMirrorTopics,
  Uuid,
  type Api,
  type Spec
} from "@clustermirror/protocol"
import { Effect, Either } from "effect"
import { ConnectionError, KafkaError, NoBrokerAvailable, RequestTimeout, SourceUnreachable } from "./ClientError.js"
import { type BrokerResult, Client, validRequest } from "./ClusterClient.js"
import * as FanOut from "./FanOut.js"
import type * as MetadataCache from "./MetadataCache.js"
import type * as Retry from "./Retry.js"
import * as Security from "./Security.js"

/** The config resource type of a cluster mirror (KIP-1279). */
export const CLUSTER_MIRROR_RESOURCE = 64

/** The config resource type of a broker. */
export const BROKER_RESOURCE = 4

export interface MirrorListing {
  readonly mirrorName: string
  readonly sourceBootstrap: string
  readonly sourceClusterId: string
  /** Topics desired MIRRORING. */
  readonly topicCount: number
  /** MIRRORING and PAUSED topics; empty unless asked for. */
  readonly topicNames: ReadonlyArray<string>
}

export interface TopicResult {
  readonly name: string
  /** null when the topic's operation succeeded. */
  readonly error: KafkaError | null
}

/** A topic's outcome of a Start. */
export interface StartTopicResult extends TopicResult {
  /**
   * What the source said of the topic: `present`; `absent` (a successful Start then only recorded the name
   * in the mirror's `mirror.topics.include`, and mirroring starts once the topic appears on the source);
   * `unreachable` (the source could not be asked, see `sourceError`; the name is recorded the same way).
   */
  readonly source: "present" | "absent" | "unreachable"
  /** Why the source could not be asked, when `source` is `unreachable`. */
  readonly sourceError: SourceUnreachable | null
}

export interface StartOptions {
  /** Regexes added to the mirror's `mirror.topics.include`. */
  readonly include?: ReadonlyArray<string>
  /** Regexes added to the mirror's `mirror.topics.exclude`. */
  readonly exclude?: ReadonlyArray<string>
  /** The source's bootstrap servers; by default read from the mirror's `bootstrap.servers`. */
  readonly sourceBootstrap?: string
}

/** A mirror config entry as DescribeConfigs answers it. */
export interface MirrorConfigEntry {
  readonly name: string
  /** Null for a secret. */
  readonly value: string | null
  readonly isSensitive: boolean
}

export interface SourceTopic {
  readonly name: string
  readonly topicId: string
  readonly numPartitions: number
  readonly isInternal: boolean
}

/** One mirror partition as its leader reports it. Offsets and lag are -1 unless it is MIRRORING. */
export interface PartitionDescription {
  readonly topic: string
  readonly partition: number
  /** The source leader's high watermark. */
  readonly sourceOffset: bigint
  /** The local high watermark. */
  readonly destinationOffset: bigint
  readonly lag: bigint
  /** How long the partition has not been caught up with the source (ms); -1 unless MIRRORING. */
  readonly lagTimeMs: bigint
  /** The state's name, e.g. "MIRRORING", "FAILED", "UNKNOWN". */
  readonly state: string
  /** Retries of a FAILED partition so far; -1 when it is not retried. */
  readonly retryAttempt: number
  /** Why the partition is FAILED. */
  readonly errorMessage: string | null
}

/** What starting a topic of a mirror would cut from a partition here (the failback preview). */
export interface TruncationPreview {
  readonly topic: string
  readonly partition: number
  /** The last mirror epoch the source holds for the partition; -1 when none (then all local data goes). */
  readonly lastMirrorEpoch: number
  /** The local high watermark now. */
  readonly highWatermark: bigint
  /** Where the log would be cut: the end of the last mirrored epoch, agreed with the source's log. */
  readonly truncateTo: bigint
  /** Records (offsets) that would be removed: highWatermark − truncateTo, at least 0. */
  readonly recordsCut: bigint
}

export interface MirrorDescription {
  readonly mirrorName: string
  /** 0 when at least one broker described the mirror. */
  readonly errorCode: number
  /** Sorted by topic, then partition. */
  readonly partitions: ReadonlyArray<PartitionDescription>
}

export interface DescribeOptions {
  /** The requesting cluster's own id: selects the mirrors whose source it is, for the LME lookup. */
  readonly clusterId?: string | null
  /** Partitions whose last mirror epoch to look up (needs `clusterId`). */
  readonly lastMirrorEpochLookups?: ReadonlyArray<{
    readonly topicId: string
    readonly partitions: ReadonlyArray<number>
  }>
}

/** One partition's offset as the group offset sync committed it. */
export interface GroupSyncOffset {
  readonly topic: string
  readonly partition: number
  /** The offset committed on the source. */
  readonly sourceOffset: bigint
  /** The offset committed here (differs from `sourceOffset` when clamped into the local log). */
  readonly offset: bigint
  readonly leaderEpoch: number
}

/** How the mirror's last group offset sync treated a consumer group of the source. */
export interface GroupSyncStatus {
  readonly group: string
  /** SYNCED, SKIPPED_ACTIVE, FILTERED, CLAMPED or FAILED. */
  readonly state: string
  /** The local group's state when skipped, the error when failed. */
  readonly detail: string | null
  /** When the status was recorded (ms since the epoch). */
  readonly timeMs: number
  /** When the group's offsets were last committed here; -1 never. */
  readonly lastSyncedMs: number
  readonly offsets: ReadonlyArray<GroupSyncOffset>
}

/** The mirror's last ACL sync (KIP-1279 §5.9): what it did, or why it failed. */
export interface AclSyncStatus {
  /** SYNCED, FAILED, or DISABLED (an empty `mirror.acls.include`). */
  readonly state: string
  /** The error when failed. */
  readonly detail: string | null
  /** When the status was recorded (ms since the epoch). */
  readonly timeMs: number
  /** When a run last completed; -1 never. */
  readonly lastSyncedMs: number
  /** The source ACLs the rules selected at the last completed run, and what that run created and deleted here. */
  readonly synced: number
  readonly created: number
  readonly deleted: number
}

export interface DescribeResult {
  /** Sorted by mirror name. */
  readonly mirrors: ReadonlyArray<MirrorDescription>
  /** topic id → partition → the largest last mirror epoch any broker reported (-1 when none knows it). */
  readonly lastMirrorEpochs: ReadonlyMap<string, ReadonlyMap<number, number>>
}

/** What one broker answered to DescribeClusterMirrors, or why it did not answer. */
export type BrokerDescription = BrokerResult<DescribeClusterMirrors.Response, unknown>

/** Settings of the short-lived client on the source: fail fast, the source may well be unreachable. */
const SOURCE_RETRY: Retry.Policy = { attempts: 2, baseMs: 100, maxMs: 200, jitter: 0 }
const SOURCE_TIMEOUT_MS = 10_000

/** The request timeout of a client configured without one (the connection's default). */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000

/**
 * Sends one request to each of `brokers` through `FanOut.forEachBroker`: bounded concurrency (the
 * client's `fanOutConcurrency`), a per-broker timeout (its `fanOutTimeoutMs`, else its request timeout),
 * and every broker's answer or failure in the order of `brokers`. A broker that does not answer in time
 * has a `RequestTimeout` as its result. Never rejects.
 */
export const everyBroker = <A>(
  client: Client,
  brokers: ReadonlyArray<MetadataCache.BrokerNode>,
  request: (broker: MetadataCache.BrokerNode) => Promise<A>
): Promise<ReadonlyArray<BrokerResult<A, unknown>>> =>
  Effect.runPromise(
    FanOut.forEachBroker(
      brokers,
      (broker) => Effect.tryPromise({ try: () => request(broker), catch: (e) => e }),
      (outcomes) => outcomes.map(({ target, result }): BrokerResult<A, unknown> => ({ broker: target, result })),
      {
        concurrency: client.config.fanOutConcurrency ?? FanOut.DEFAULT_CONCURRENCY,
        timeoutMs: client.config.fanOutTimeoutMs ?? client.config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
        describe: (broker) => `broker ${broker.nodeId}`
      }
    )
  )

const kafkaError = (errorCode: number, errorMessage: string | null, context: string) =>
  new KafkaError({ errorCode, errorMessage, context })

const checked = <R extends { readonly errorCode: number; readonly errorMessage: string | null }>(
  context: string,
  res: R
): R => {
  if (res.errorCode !== 0) throw kafkaError(res.errorCode, res.errorMessage, context)
  return res
}

const topicResults = (
  api: string,
  topics: ReadonlyArray<{ readonly name: string; readonly errorCode: number; readonly errorMessage: string | null }>
): ReadonlyArray<TopicResult> =>
  topics.map((t) => ({
    name: t.name,
    error: t.errorCode === 0 ? null : kafkaError(t.errorCode, t.errorMessage, `${api} ${t.name}`)
  }))

const validatePatterns = (patterns: ReadonlyArray<string>): void => {
  for (const p of patterns) {
    try {
      new RegExp(p)
    } catch (e) {
      throw new Error(`invalid topic pattern "${p}": ${e instanceof Error ? e.message : String(e)}`)
    }
  }
}

const splitServers = (servers: string): ReadonlyArray<string> =>
  servers
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Whether `candidate` describes a partition better than `current` when two brokers report it (during a
 * leadership change): a known state beats "UNKNOWN", then the further destination offset wins.
 */
const preferred = (current: PartitionDescription, candidate: PartitionDescription): boolean => {
  const currentKnown = current.state !== "UNKNOWN"
  const candidateKnown = candidate.state !== "UNKNOWN"
  if (currentKnown !== candidateKnown) return candidateKnown
  return candidate.destinationOffset > current.destinationOffset
}

type DescribedPartition = DescribeClusterMirrors.Response["mirrors"][number]["topics"][number]["partitions"][number]

const partitionDescription = (topic: string, p: DescribedPartition): PartitionDescription => ({
  topic,
  partition: p.partitionIndex,
  sourceOffset: p.sourceOffset,
  destinationOffset: p.destinationOffset,
  lag: p.lag,
  lagTimeMs: p.lagTimeMs ?? -1n,
  state: p.stateValue,
  retryAttempt: p.retryAttempt,
  errorMessage: p.errorMessage
})

/**
 * Merges the DescribeClusterMirrors answers of every broker: per mirror the partitions of all brokers
 * (a duplicate keeps the entry `preferred` picks), a mirror described by any broker is a success even
 * when others answered an error for it, and last mirror epochs are the largest per (topic id,
 * partition). Throws when no broker answered without a top-level error: the `KafkaError` of the first
 * such error code, else the first broker's failure.
 */
export const mergeDescriptions = (results: ReadonlyArray<BrokerDescription>): DescribeResult => {
  const answers: Array<DescribeClusterMirrors.Response> = []
  let firstError: unknown
  for (const { broker, result } of results) {
    if (Either.isLeft(result)) {
      firstError ??= result.left
      continue
    }
    const res = result.right
    if (res.errorCode === 0) answers.push(res)
    else if (!(firstError instanceof KafkaError))
      firstError = kafkaError(res.errorCode, res.errorMessage, `DescribeClusterMirrors on broker ${broker.nodeId}`)
  }
  if (answers.length === 0)
    throw firstError ?? new NoBrokerAvailable({ message: "DescribeClusterMirrors: no broker to ask" })

  const mirrors = new Map<string, { errorCode: number; partitions: Map<string, Map<number, PartitionDescription>> }>()
  const epochs = new Map<string, Map<number, number>>()
  for (const res of answers) {
    for (const m of res.mirrors) {
      let mirror = mirrors.get(m.mirrorName)
      if (mirror === undefined) mirrors.set(m.mirrorName, (mirror = { errorCode: m.errorCode, partitions: new Map() }))
      if (m.errorCode !== 0) continue
      mirror.errorCode = 0
      for (const t of m.topics) {
        let topic = mirror.partitions.get(t.topicName)
        if (topic === undefined) mirror.partitions.set(t.topicName, (topic = new Map()))
        for (const p of t.partitions) {
          const candidate = partitionDescription(t.topicName, p)
          const current = topic.get(p.partitionIndex)
          if (current === undefined || preferred(current, candidate)) topic.set(p.partitionIndex, candidate)
        }
      }
    }
    for (const l of res.lookupResults) {
      let topic = epochs.get(l.topicId)
      if (topic === undefined) epochs.set(l.topicId, (topic = new Map()))
      for (const p of l.partitions)
        topic.set(p.partitionIndex, Math.max(topic.get(p.partitionIndex) ?? -1, p.lastMirrorEpoch))
    }
  }
  return {
    mirrors: [...mirrors]
      .sort(([a], [b]) => compareStrings(a, b))
      .map(([mirrorName, m]) => ({
        mirrorName,
        errorCode: m.errorCode,
        partitions: [...m.partitions]
          .sort(([a], [b]) => compareStrings(a, b))
          .flatMap(([, ps]) => [...ps.values()].sort((a, b) => a.partition - b.partition))
      })),
    lastMirrorEpochs: epochs
  }
}

/** The state shown for a mirror partition that no live leader reports (Kafka's tools show leader -1). */
export const OFFLINE_STATE = "OFFLINE"

/**
 * Adds to `result` the partitions of each mirror's topics (`mirrorTopics`) that no broker reported because
 * their leader is gone: no leader in the destination `metadata` (-1), or a leader that did not answer
 * DescribeClusterMirrors (`answered` are the brokers that did). They show as `OFFLINE` with unknown
 * offsets and the reason, so a dead broker does not hide partitions from the operator.
 */
export const withOfflinePartitions = (
  result: DescribeResult,
  mirrorTopics: ReadonlyMap<string, ReadonlyArray<string>>,
  metadata: MetadataCache.Snapshot,
  answered: ReadonlySet<number>
): DescribeResult => ({
  ...result,
  mirrors: result.mirrors.map((m) => {
    if (m.errorCode !== 0) return m
    const reported = new Set(m.partitions.map((p) => `${p.topic}\u0000${p.partition}`))
    const offline: Array<PartitionDescription> = []
    for (const topic of mirrorTopics.get(m.mirrorName) ?? []) {
      const info = metadata.topics.get(topic)
      if (info === undefined || info.errorCode !== 0) continue
      for (const p of info.partitions.values()) {
        if (reported.has(`${topic}\u0000${p.partition}`)) continue
        if (p.leaderId >= 0 && answered.has(p.leaderId)) continue
        offline.push({
          topic,
          partition: p.partition,
          sourceOffset: -1n,
          destinationOffset: -1n,
          lag: -1n,
          lagTimeMs: -1n,
          state: OFFLINE_STATE,
          retryAttempt: -1,
          errorMessage:
            p.leaderId < 0 ? "No leader (leader -1)" : `Leader ${p.leaderId} is not available (it did not answer)`
        })
      }
    }
    if (offline.length === 0) return m
    return {
      ...m,
      partitions: [...m.partitions, ...offline].sort(
        (a, b) => compareStrings(a.topic, b.topic) || a.partition - b.partition
      )
    }
  })
})

/**
 * Merges the group sync statuses of `mirror` from every broker's DescribeClusterMirrors answer: only the
 * broker running the mirror's coordinator tasks has them; should two (after a coordinator move), the newer
 * status of a group wins. Sorted by group. Throws as `mergeDescriptions` does, and with the mirror's error
 * when no broker described it.
 */
export const mergeGroupSync = (
  mirror: string,
  results: ReadonlyArray<BrokerDescription>
): ReadonlyArray<GroupSyncStatus> => {
  const described = mergeDescriptions(results).mirrors.find((m) => m.mirrorName === mirror)
  if (described === undefined) throw kafkaError(3, `mirror ${mirror} was not described`, "DescribeClusterMirrors")
  if (described.errorCode !== 0) throw kafkaError(described.errorCode, null, `DescribeClusterMirrors ${mirror}`)
  const groups = new Map<string, GroupSyncStatus>()
  for (const { result } of results) {
    if (Either.isLeft(result) || result.right.errorCode !== 0) continue
    for (const m of result.right.mirrors) {
      if (m.mirrorName !== mirror || m.errorCode !== 0) continue
      for (const g of m.groupSyncStatuses ?? []) {
        const candidate: GroupSyncStatus = {
          group: g.groupId,
          state: g.state,
          detail: g.detail,
          timeMs: Number(g.timeMs),
          lastSyncedMs: Number(g.lastSyncedMs),
          offsets: g.offsets.map((o) => ({
            topic: o.topicName,
            partition: o.partitionIndex,
            sourceOffset: o.sourceOffset,
            offset: o.offset,
            leaderEpoch: o.leaderEpoch
          }))
        }
        const current = groups.get(g.groupId)
        if (current === undefined || candidate.timeMs > current.timeMs) groups.set(g.groupId, candidate)
      }
    }
  }
  return [...groups.values()].sort((a, b) => compareStrings(a.group, b.group))
}

/**
 * The mirror's ACL sync status from every broker's answer: the newest (the broker running the mirror's
 * coordinator tasks has it; one that ran them before a coordinator move may have an older one); undefined
 * before the first sync.
 */
export const mergeAclSync = (mirror: string, results: ReadonlyArray<BrokerDescription>): AclSyncStatus | undefined => {
  const described = mergeDescriptions(results).mirrors.find((m) => m.mirrorName === mirror)
  if (described === undefined) throw kafkaError(3, `mirror ${mirror} was not described`, "DescribeClusterMirrors")
  if (described.errorCode !== 0) throw kafkaError(described.errorCode, null, `DescribeClusterMirrors ${mirror}`)
  let newest: AclSyncStatus | undefined
  for (const { result } of results) {
    if (Either.isLeft(result) || result.right.errorCode !== 0) continue
    for (const m of result.right.mirrors) {
      if (m.mirrorName !== mirror || m.errorCode !== 0) continue
      for (const a of m.aclSyncStatuses ?? []) {
        const candidate: AclSyncStatus = {
          state: a.state,
          detail: a.detail,
          timeMs: Number(a.timeMs),
          lastSyncedMs: Number(a.lastSyncedMs),
          synced: a.synced,
          created: a.created,
          deleted: a.deleted
        }
        if (newest === undefined || candidate.timeMs > newest.timeMs) newest = candidate
      }
    }
  }
  return newest
}

/** A failure to talk to the source as `SourceUnreachable` (with the innermost reason); others unchanged. */
const unreachable = (bootstrap: string, e: unknown): unknown => {
  if (!(e instanceof ConnectionError || e instanceof NoBrokerAvailable || e instanceof RequestTimeout)) return e
  let reason: unknown = e
  while (reason instanceof ConnectionError || reason instanceof NoBrokerAvailable) {
    if (reason.cause === undefined) break
    reason = reason.cause
  }
  const text = reason instanceof Error ? reason.message : String(reason)
  return new SourceUnreachable({ bootstrap, reason: text, cause: e })
}

/** How this client reaches a mirror's source: its bootstrap servers and the mirror's security configs. */
export interface SourceAccess {
  readonly bootstrap: string
  readonly security?: Security.ClientSecurity
}

/** Runs `use` with a short-lived client on a source cluster, closing it afterwards. */
const withSource = async <A>(access: SourceAccess | string, use: (source: Client) => Promise<A>): Promise<A> => {
  const { bootstrap, security } = typeof access === "string" ? { bootstrap: access, security: undefined } : access
  const servers = splitServers(bootstrap)
  if (servers.length === 0) throw new Error("no source bootstrap servers")
  const source = new Client({
    bootstrapServers: servers,
    clientId: "clustermirror-mirror-admin",
    ...(security === undefined ? {} : { security }),
    retry: SOURCE_RETRY,
    connectTimeoutMs: SOURCE_TIMEOUT_MS,
    requestTimeoutMs: SOURCE_TIMEOUT_MS
  })
  try {
    return await use(source)
  } catch (e) {
    throw unreachable(bootstrap, e)
  } finally {
    await source.close()
  }
}

/** ListOffsets timestamps: the log start and the high watermark. */
export const EARLIEST = -2n
export const LATEST = -1n

/** ListOffsets (consumer form, READ_UNCOMMITTED) at `timestamp` on one partition's leader. */
export const listOffset = async (
  client: Client,
  topic: string,
  partition: number,
  timestamp: bigint
): Promise<{ readonly offset: bigint; readonly leaderEpoch: number }> => {
  const res = await client.sendToLeader(
    topic,
    partition,
    ListOffsets.api,
    () => ({
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }],
      timeoutMs: 10_000
    }),
    (r) => r.topics[0]?.partitions[0]?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR
  )
  const p = res.topics[0]!.partitions[0]!
  return { offset: p.offset, leaderEpoch: p.leaderEpoch }
}

/** OffsetForLeaderEpoch (consumer form): the largest epoch <= `epoch` the leader knows, and where it ends. */
export const endOfEpoch = async (
  client: Client,
  topic: string,
  partition: number,
  epoch: number
): Promise<{ readonly epoch: number; readonly endOffset: bigint }> => {
  const res = await client.sendToLeader(
    topic,
    partition,
    OffsetForLeaderEpoch.api,
    () => ({
      replicaId: -1,
      topics: [{ topic, partitions: [{ partition, currentLeaderEpoch: -1, leaderEpoch: epoch }] }]
    }),
    (r) => r.topics[0]?.partitions[0]?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR
  )
  const p = res.topics[0]!.partitions[0]!
  return { epoch: p.leaderEpoch, endOffset: p.endOffset }
}

export class MirrorAdmin {
  constructor(readonly client: Client) {}

  /**
   * Creates a mirror. Without `mirror.source.cluster.id` in `configs`, it is read from the source (as
   * Kafka's admin does), connecting with the mirror's own security configs (`security.protocol`,
   * `sasl.*`, `ssl.*`, files read here); a source that cannot be reached fails the create with
   * `SourceUnreachable` ("cannot reach the source at …: ECONNREFUSED …"). Security configs that cannot
   * be used go as given, for the cluster to refuse naming the key; files this host cannot read fail the
   * create with the key and the path (set `mirror.source.cluster.id` to create without the lookup).
   */
  async createClusterMirror(name: string, configs: ReadonlyMap<string, string>): Promise<void> {
    const all = new Map(configs)
    const bootstrap = all.get("bootstrap.servers")
    if (!all.has("mirror.source.cluster.id") && bootstrap !== undefined) {
      const props = new Map([...all].filter(([k]) => Security.isSecurityConfig(k)))
      if (Either.isRight(Security.validate(props))) {
        const security = Security.fromConfig(props)
        if (Either.isLeft(security))
          throw new SourceUnreachable({
            bootstrap,
            reason: `${security.left.message} (set mirror.source.cluster.id to create the mirror without asking the source)`
          })
        const clusterId = await withSource(
          { bootstrap, security: security.right },
          async (s) => (await s.metadata([])).clusterId
        )
        if (clusterId !== null) all.set("mirror.source.cluster.id", clusterId)
      }
    }
    const res = await this.anyBroker(CreateClusterMirror.api, {
      mirrorName: name,
      config: [...all].map(([n, value]) => ({ name: n, value }))
    })
    checked(`CreateClusterMirror ${name}`, res)
  }

  /**
   * The failback preview (KIP-1279 §5.5, without changing anything): for each partition of `topics` on
   * this cluster, where starting them in mirror `name` would truncate the log. As LOG_TRUNCATION does:
   * the last mirror epoch the source holds (DescribeClusterMirrors to every source broker with this
   * cluster's id), the end of that epoch here, then the end the source gives for the epoch found here
   * (the OffsetForLeaderEpoch check the fetcher does first). No last mirror epoch: the whole log goes.
   */
  async previewTruncation(name: string, topics: ReadonlyArray<string>): Promise<ReadonlyArray<TruncationPreview>> {
    const access = await this.sourceAccess(name)
    const local = await this.client.metadata(topics)
    const clusterId = local.clusterId
    const wanted = topics.map((t) => {
      const info = local.topics.get(t)
      if (info === undefined || info.errorCode !== 0)
        throw new KafkaError({
          errorCode: info?.errorCode ?? 3,
          errorMessage: `unknown topic ${t}`,
          context: "preview"
        })
      return { name: t, topicId: info.topicId, partitions: [...info.partitions.keys()].sort((a, b) => a - b) }
    })
    return withSource(access, async (source) => {
      // The last mirror epochs the source's brokers hold for mirrors whose source is this cluster.
      const lmes = new Map<string, number>()
      const brokers = [...(await source.metadata([])).brokers.values()].sort((a, b) => a.nodeId - b.nodeId)
      const lookup = validRequest(DescribeClusterMirrors.api, {
        mirrorNames: [],
        includeAuthorizedOperations: false,
        clusterId,
        lastMirrorEpochLookups: wanted.map((t) => ({ topicId: t.topicId, partitions: t.partitions }))
      })
      const answers = await everyBroker(source, brokers, (b) =>
        source.sendToNode(b.nodeId, DescribeClusterMirrors.api, lookup)
      )
      for (const { result } of answers) {
        if (Either.isLeft(result)) {
          // A broker too old for the lookup knows no last mirror epoch; any other failure fails the preview.
          const e = result.left
          if (e instanceof Error && "_tag" in e && e._tag === "UnsupportedVersion") continue
          throw e
        }
        for (const r of result.right.lookupResults)
          for (const p of r.partitions) {
            const k = `${r.topicId}:${p.partitionIndex}`
            lmes.set(k, Math.max(lmes.get(k) ?? -1, p.lastMirrorEpoch))
          }
      }
      const out: Array<TruncationPreview> = []
      for (const t of wanted)
        for (const partition of t.partitions) {
          const lastMirrorEpoch = lmes.get(`${t.topicId}:${partition}`) ?? -1
          const highWatermark = (await listOffset(this.client, t.name, partition, LATEST)).offset
          let truncateTo = 0n
          if (lastMirrorEpoch >= 0) {
            const here = await endOfEpoch(this.client, t.name, partition, lastMirrorEpoch)
            if (here.epoch >= 0 && here.endOffset >= 0n) {
              const there = await endOfEpoch(source, t.name, partition, here.epoch)
              truncateTo = here.endOffset
              // The source ends that epoch earlier (or only knows an older one): the fetcher cuts there too.
              if (there.endOffset >= 0n && there.endOffset < truncateTo) truncateTo = there.endOffset
            }
          }
          if (truncateTo > highWatermark) truncateTo = highWatermark
          out.push({
            topic: t.name,
            partition,
            lastMirrorEpoch,
            highWatermark,
            truncateTo,
            recordsCut: highWatermark > truncateTo ? highWatermark - truncateTo : 0n
          })
        }
      return out
    })
  }

  /** A mirror's stored configs; password values come back as null. */
  async describeMirrorConfigs(name: string): Promise<ReadonlyMap<string, string | null>> {
    return new Map((await this.mirrorConfigEntries(name)).map((c) => [c.name, c.value]))
  }

  /** A mirror's configs as the cluster describes them: a secret's value is null, marked sensitive. */
  async mirrorConfigEntries(name: string): Promise<ReadonlyArray<MirrorConfigEntry>> {
    const res = await this.anyBroker(DescribeConfigs.api, {
      resources: [{ resourceType: CLUSTER_MIRROR_RESOURCE, resourceName: name, configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false
    })
    const r = res.results[0]
    if (r === undefined) throw new Error(`DescribeConfigs returned no result for mirror ${name}`)
    checked(`DescribeConfigs mirror ${name}`, r)
    return r.configs.map((c) => ({ name: c.name, value: c.value, isSensitive: c.isSensitive }))
  }

  /** The configs of one broker of the cluster (the named keys only, unless `keys` is null). */
  async describeBrokerConfigs(keys: ReadonlyArray<string> | null = null): Promise<ReadonlyMap<string, string | null>> {
    const broker = (await this.client.brokers())[0]
    if (broker === undefined) throw new NoBrokerAvailable({ message: "DescribeConfigs: no broker known" })
    // A broker describes its own configs only: the resource names the broker the request goes to.
    const res = await this.toNode(broker.nodeId, DescribeConfigs.api, {
      resources: [{ resourceType: BROKER_RESOURCE, resourceName: String(broker.nodeId), configurationKeys: keys }],
      includeSynonyms: false,
      includeDocumentation: false
    })
    const r = res.results[0]
    if (r === undefined) throw new Error(`DescribeConfigs returned no result for broker ${broker.nodeId}`)
    checked(`DescribeConfigs broker ${broker.nodeId}`, r)
    return new Map(r.configs.map((c) => [c.name, c.value]))
  }

  /** The source bootstrap servers of a mirror, from its configs. */
  async sourceBootstrap(name: string): Promise<string> {
    const servers = (await this.describeMirrorConfigs(name)).get("bootstrap.servers")
    if (servers === undefined || servers === null || servers === "")
      throw new Error(`mirror ${name} has no bootstrap.servers`)
    return servers
  }

  /**
   * How this client reaches a mirror's source, from the mirror's configs. The cluster never returns
   * a mirror's secrets, so a source reached with a password or key (SASL, a PEM key, a key store
   * password) cannot be reached from here: `SourceUnreachable` says so, naming the hidden keys.
   */
  async sourceAccess(name: string): Promise<SourceAccess> {
    const configs = await this.describeMirrorConfigs(name)
    const bootstrap = configs.get("bootstrap.servers")
    if (bootstrap === undefined || bootstrap === null || bootstrap === "")
      throw new Error(`mirror ${name} has no bootstrap.servers`)
    const props = new Map<string, string>()
    const hidden: Array<string> = []
    for (const [k, v] of configs)
      if (Security.isSecurityConfig(k)) {
        if (v === null) hidden.push(k)
        else props.set(k, v)
      }
    const protocol = props.get("security.protocol") ?? "PLAINTEXT"
    if (hidden.length > 0)
      throw new SourceUnreachable({
        bootstrap,
        reason: `mirror ${name} connects over ${protocol} with secrets the cluster does not return (${hidden.sort().join(", ")}), so this client cannot connect to the source itself`
      })
    const security = Security.fromConfig(props)
    if (Either.isLeft(security)) throw new SourceUnreachable({ bootstrap, reason: security.left.message })
    return { bootstrap, security: security.right }
  }

  /**
   * The topics of a mirror's source cluster (all of them, or the named ones that exist), reached as
   * `sourceAccess` says, or at `sourceBootstrap` in PLAINTEXT when given.
   */
  async sourceTopics(
    name: string,
    topics: ReadonlyArray<string> | null,
    sourceBootstrap?: string
  ): Promise<ReadonlyArray<SourceTopic>> {
    const access = sourceBootstrap ?? (await this.sourceAccess(name))
    return withSource(access, async (source) => {
      const snap = await source.metadata(topics)
      return [...snap.topics.values()]
        .filter((t) => t.errorCode === 0 && (topics === null || topics.includes(t.name)))
        .map((t) => ({ name: t.name, topicId: t.topicId, numPartitions: t.partitions.size, isInternal: t.isInternal }))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    })
  }

  /**
   * Starts mirroring `topics` (and records the patterns in the mirror's include/exclude lists). Each
   * topic carries its source topic id and partition count when the source answers; otherwise names
   * only, and the mirror picks the topics up on its next refresh.
   */
  async startMirrorTopics(
    name: string,
    topics: ReadonlyArray<string>,
    options: StartOptions = {}
  ): Promise<ReadonlyArray<StartTopicResult>> {
    const include = options.include ?? []
    const exclude = options.exclude ?? []
    validatePatterns([...include, ...exclude])
    const known = new Map<string, SourceTopic>()
    // Unreachable, the topics go by name only: the cluster records them and starts them once it can.
    let sourceError: SourceUnreachable | null = null
    if (topics.length > 0) {
      const found = await this.sourceTopics(name, topics, options.sourceBootstrap).catch((e: unknown) => {
        if (!(e instanceof SourceUnreachable)) throw e
        sourceError = e
        return []
      })
      for (const t of found) known.set(t.name, t)
    }
    const res = await this.anyBroker(StartMirrorTopics.api, {
      mirrorName: name,
      topics: topics.map((topicName) => ({
        topicName,
        topicId: known.get(topicName)?.topicId ?? Uuid.ZERO,
        numPartitions: known.get(topicName)?.numPartitions ?? -1
      })),
      includePatterns: include,
      excludePatterns: exclude
    })
    const results = topicResults("StartMirrorTopics", res.topics).map((r) => ({
      ...r,
      source: known.has(r.name)
        ? ("present" as const)
        : sourceError === null
          ? ("absent" as const)
          : ("unreachable" as const),
      sourceError
    }))
    // The controller copies the first topic error to the top level: that is a per-topic outcome.
    if (res.errorCode !== 0 && !results.some((r) => r.error?.errorCode === res.errorCode))
      checked(`StartMirrorTopics ${name}`, res)
    return results
  }

  /** Stops mirroring `topics` (and removes or excludes `patterns`); the topics become writable. */
  async stopMirrorTopics(
    name: string,
    topics: ReadonlyArray<string>,
    patterns: ReadonlyArray<string> = []
  ): Promise<ReadonlyArray<TopicResult>> {
    validatePatterns(patterns)
    const res = await this.anyBroker(StopMirrorTopics.api, {
      mirrorName: name,
      topics: topics.map((topicName) => ({ topicName })),
      patterns
    })
    return topicResults("StopMirrorTopics", checked(`StopMirrorTopics ${name}`, res).topics)
  }

  /** Pauses mirroring `topics`; only topics with an error (or already paused) are reported. */
  async pauseMirrorTopics(name: string, topics: ReadonlyArray<string>): Promise<ReadonlyArray<TopicResult>> {
    const res = await this.anyBroker(PauseMirrorTopics.api, {
      mirrorName: name,
      topics: topics.map((topicName) => ({ topicName }))
    })
    return topicResults("PauseMirrorTopics", checked(`PauseMirrorTopics ${name}`, res).topics)
  }

  /** Resumes mirroring paused `topics`; only topics with an error (or not paused) are reported. */
  async resumeMirrorTopics(name: string, topics: ReadonlyArray<string>): Promise<ReadonlyArray<TopicResult>> {
    const res = await this.anyBroker(ResumeMirrorTopics.api, {
      mirrorName: name,
      topics: topics.map((topicName) => ({ topicName }))
    })
    return topicResults("ResumeMirrorTopics", checked(`ResumeMirrorTopics ${name}`, res).topics)
  }

  /**
   * Restarts mirroring `topics` whose partitions stay FAILED after their retries ran out. Partitions that
   * failed on data loss (the source deleted records before they were mirrored) restart at the source log
   * start only with `acceptDataLoss`; without it their topics are refused.
   */
  async recoverMirrorTopics(
    name: string,
    topics: ReadonlyArray<string>,
    options: { readonly acceptDataLoss?: boolean } = {}
  ): Promise<ReadonlyArray<TopicResult>> {
    const res = await this.anyBroker(RecoverMirrorTopics.api, {
      mirrorName: name,
      topics: topics.map((topicName) => ({ topicName })),
      acceptDataLoss: options.acceptDataLoss === true
    })
    return topicResults(
      "RecoverMirrorTopics",
      checked(`RecoverMirrorTopics ${name}`, res).topics.map((t) => ({
        name: t.topicName,
        errorCode: t.errorCode,
        errorMessage: t.errorMessage
      }))
    )
  }

  /** Deletes a mirror that has no topics left. */
  async deleteClusterMirror(name: string): Promise<void> {
    const res = await this.anyBroker(DeleteClusterMirror.api, { mirrorName: name })
    checked(`DeleteClusterMirror ${name}`, res)
  }

  /** Every mirror of the cluster, sorted by name. */
  async listClusterMirrors(includeTopicNames = false): Promise<ReadonlyArray<MirrorListing>> {
    const res = await this.anyBroker(ListClusterMirrors.api, { includeTopicNames })
    return checked("ListClusterMirrors", res).mirrors.map((m) => ({
      mirrorName: m.mirrorName,
      sourceBootstrap: m.sourceBootstrap,
      sourceClusterId: m.sourceClusterId,
      topicCount: m.topicCount,
      topicNames: m.topicNames
    }))
  }

  /**
   * Describes the named mirrors (all mirrors when `names` is empty) and looks up last mirror epochs:
   * asks every broker of a fresh Metadata at once and merges their answers (`mergeDescriptions`).
   * Fails only when no broker answered.
   */
  async describeClusterMirrors(names: ReadonlyArray<string>, options: DescribeOptions = {}): Promise<DescribeResult> {
    return mergeDescriptions(
      await this.describeOnEveryBroker({
        mirrorNames: names,
        includeAuthorizedOperations: false,
        clusterId: options.clusterId ?? null,
        lastMirrorEpochLookups: (options.lastMirrorEpochLookups ?? []).map((l) => ({
          topicId: l.topicId,
          partitions: l.partitions
        }))
      })
    )
  }

  /**
   * What `--describe` shows: `describeClusterMirrors`, plus the partitions of the mirrors' topics whose
   * leader is gone, as `OFFLINE` (`withOfflinePartitions`), from the mirrors' topic names and a fresh
   * destination Metadata.
   */
  async describeMirrorPartitions(names: ReadonlyArray<string>): Promise<DescribeResult> {
    const described = await this.describeOnEveryBroker({ mirrorNames: names, includeAuthorizedOperations: false })
    const merged = mergeDescriptions(described)
    const answered = new Set(
      described.filter((d) => Either.isRight(d.result) && d.result.right.errorCode === 0).map((d) => d.broker.nodeId)
    )
    const listed = (await this.listClusterMirrors(true)).filter((l) =>
      merged.mirrors.some((m) => m.mirrorName === l.mirrorName && m.errorCode === 0)
    )
    const mirrorTopics = new Map(listed.map((l) => [l.mirrorName, l.topicNames] as const))
    const topics = [...new Set([...mirrorTopics.values()].flat())]
    if (topics.length === 0) return merged
    return withOfflinePartitions(merged, mirrorTopics, await this.client.metadata(topics), answered)
  }

  /**
   * Per consumer group of the source, what the mirror's last group offset sync did (synced with the
   * offsets, skipped because the local group is active, filtered out, clamped, failed): the answer of the
   * broker running the mirror's coordinator tasks (`mergeGroupSync`). Empty before the first sync.
   */
  async describeGroupSync(mirror: string): Promise<ReadonlyArray<GroupSyncStatus>> {
    return mergeGroupSync(
      mirror,
      await this.describeOnEveryBroker({ mirrorNames: [mirror], includeAuthorizedOperations: false })
    )
  }

  /** The mirror's last ACL sync (`mergeAclSync`); undefined before the first sync. */
  async describeAclSync(mirror: string): Promise<AclSyncStatus | undefined> {
    return mergeAclSync(
      mirror,
      await this.describeOnEveryBroker({ mirrorNames: [mirror], includeAuthorizedOperations: false })
    )
  }

  /** A request to the least loaded broker, its body checked first (`validRequest`). */
  private anyBroker<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> {
    return this.client.sendToAnyBroker(api, validRequest(api, body))
  }

  /** A request to one broker, its body checked first (`validRequest`). */
  private toNode<Req extends Spec.Fields, Res extends Spec.Fields>(
    nodeId: number,
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> {
    return this.client.sendToNode(nodeId, api, validRequest(api, body))
  }

  /** DescribeClusterMirrors to every broker of a fresh Metadata at once; each broker's answer or failure. */
  private async describeOnEveryBroker(
    body: Spec.StructInput<typeof DescribeClusterMirrors.Request.fields>
  ): Promise<ReadonlyArray<BrokerDescription>> {
    validRequest(DescribeClusterMirrors.api, body)
    const snapshot = await this.client.metadata([])
    const brokers = [...snapshot.brokers.values()].sort((a, b) => a.nodeId - b.nodeId)
    return everyBroker(this.client, brokers, (broker) =>
      this.client.sendToNode(broker.nodeId, DescribeClusterMirrors.api, body)
    )
  }
}
