/**
 * Mirror control (KIP-1279 §5.1-§5.8): the controller's cluster-mirror operations as pure decisions
 * over the controller state. CreateClusterMirror (94), StartMirrorTopics (95), StopMirrorTopics (96),
 * PauseMirrorTopics (102), ResumeMirrorTopics (103) and DeleteClusterMirror (104), plus the queries
 * brokers need (`mirrorOf`, `topicsOf`).
 *
 * Owns no state of its own: a mirror is its config entries (resource type 64, ConfigurationControl)
 * and a topic's mirror, desired state and last state-change offset live on the topic
 * (ReplicationControl, set by replaying MirrorTopicStateChangeRecord). Decisions return records and a
 * response and never touch state; topics are created through `ReplicationControl.createTopics` and
 * mirror configs through ConfigurationControl's factories, never built here a second way.
 *
 * Errors: per-topic failures go into the response's Topics (partial success: records of the topics
 * that succeed are still written); whole-request failures (mirroring disabled, unknown mirror, the
 * optimistic lock of §5.8, bad patterns) are the response's top-level ErrorCode, repeated on every
 * named topic, with no records. Every decision is one ControllerResult, which the runtime appends
 * atomically (one batch, or one metadata transaction when it exceeds a batch): Delete's
 * disassociations and tombstones land together.
 *
 * Deliberate choices where the prototype has quirks (KIP-1279 §12.4) or is silent:
 * - the optimistic lock covers every named topic that exists, whatever its mirror (JR28: "any topic's
 *   last state-change offset"), and for Delete every topic of the mirror;
 * - a topic stops being processed at its first error (INCONSISTENT_TOPIC_ID, TOPIC_ALREADY_EXISTS, ...);
 * - a topic another mirror has STOPPED may be started by this one (§5.2); one it mirrors or pauses
 *   may not (TOPIC_ALREADY_IN_CLUSTER_MIRROR);
 * - the default `mirror.topics.exclude` (`__.*`) is the starting point of every pattern update, so a
 *   write never drops it unless an operator removes it explicitly;
 * - asking for the state a topic is already in (start a MIRRORING topic, stop a STOPPED one, pause a
 *   PAUSED one, resume a MIRRORING one) succeeds and writes nothing, as §5.2-§5.6 describe;
 * - every requested topic appears in the response, successes included.
 */
import {
  type CreateClusterMirror,
  type CreateTopics,
  type DeleteClusterMirror,
  Errors,
  MetadataRecords,
  MirrorPartitionState,
  type PauseMirrorTopics,
  type ResumeMirrorTopics,
  type StartMirrorTopics,
  type StopMirrorTopics,
  Uuid
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as ConfigurationControl from "./ConfigurationControl.js"
import type { ApiError } from "./ControllerError.js"
import * as ControllerResult from "./ControllerResult.js"
import * as ControllerState from "./ControllerState.js"
import * as FeatureControl from "./FeatureControl.js"
import * as Patterns from "./internal/mirrorPatterns.js"
import { validateTopicName } from "./internal/topicName.js"
import * as ReplicationControl from "./ReplicationControl.js"

const E = Errors.ErrorCode

const MIRRORING = MirrorPartitionState.toByte("MIRRORING")
const PAUSED = MirrorPartitionState.toByte("PAUSED")
const STOPPED = MirrorPartitionState.toByte("STOPPED")

/** The topic holding the mirror partition states (KIP-1279 §3.4). */
export const MIRROR_STATE_TOPIC = "__mirror_state"

/** `mirror.state.topic.num.partitions` and `mirror.state.topic.replication.factor` defaults (§7.2). */
export const DEFAULT_MIRROR_STATE_TOPIC_PARTITIONS = 50
export const DEFAULT_MIRROR_STATE_TOPIC_REPLICATION_FACTOR = 3

/** The topic configs of `__mirror_state`: compacted, kept forever, batches stored as produced. */
export const MIRROR_STATE_TOPIC_CONFIGS: ReadonlyArray<ReplicationControl.TopicConfig> = [
  { name: "cleanup.policy", value: "compact" },
  { name: "compression.type", value: "producer" },
  { name: "retention.ms", value: "-1" }
]

/** Internal topics a mirror never takes over, whatever its patterns say. */
const INTERNAL_TOPICS: ReadonlySet<string> = new Set([
  MIRROR_STATE_TOPIC,
  "__cluster_metadata",
  "__consumer_offsets",
  "__transaction_state"
])

// ---------------------------------------------------------------------------------------------------
// Contexts

/** What decisions writing several dependent records need: where the first one goes. */
export interface OffsetContext {
  /** The metadata offset the first record of the decision will get. */
  readonly nextOffset: bigint
}

export interface CreateClusterMirrorContext {
  readonly clusterView: ReplicationControl.ClusterView
  /** A fresh random topic id (for `__mirror_state`). */
  readonly newTopicId: () => string
  /** `mirror.state.topic.num.partitions`; 50 when absent. */
  readonly mirrorStateTopicPartitions?: number
  /** `mirror.state.topic.replication.factor`, capped to the live brokers; 3 when absent. */
  readonly mirrorStateTopicReplicationFactor?: number
}

export interface StartMirrorTopicsContext extends OffsetContext {
  readonly clusterView: ReplicationControl.ClusterView
  /**
   * A fresh random topic id, for a destination topic whose source has no topic ids (a source before
   * KIP-516 describes its topics with the zero id).
   */
  readonly newTopicId: () => string
  /**
   * The controller's `default.replication.factor` (1 when absent): the replication factor of the
   * destination topics Start creates when neither the mirror's `replication.factor` nor the
   * forwarding broker's DefaultReplicationFactor gives one.
   */
  readonly defaultReplicationFactor?: number
}

/** The mirror config naming the replication factor of the destination topics it creates (ours). */
export const REPLICATION_FACTOR_CONFIG = "replication.factor"

// ---------------------------------------------------------------------------------------------------
// Queries

/** The mirror a topic (by name) belongs to; null for an unknown topic or one in no mirror. */
export const mirrorOf = (state: ControllerState.ControllerState, topic: string): string | null =>
  ReplicationControl.topicByName(state.replication, topic)?.mirrorName ?? null

/** The topics of a mirror (whatever their desired state), by name. */
export const topicsOf = (
  state: ControllerState.ControllerState,
  mirror: string
): ReadonlyArray<ReplicationControl.Topic> =>
  [...state.replication.topicsById.values()]
    .filter((t) => t.mirrorName === mirror)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

/** The mirror's include and exclude lists in effect: stored values, else the defaults of §7.3. */
export const topicPatterns = (
  state: ControllerState.ControllerState,
  mirror: string
): { readonly include: ReadonlyArray<string>; readonly exclude: ReadonlyArray<string> } => {
  const stored = ConfigurationControl.configsOf(state.configs, ConfigurationControl.ResourceType.CLUSTER_MIRROR, mirror)
  return {
    include: Patterns.parse(effective(stored, Patterns.INCLUDE)),
    exclude: Patterns.parse(effective(stored, Patterns.EXCLUDE))
  }
}

const effective = (stored: ReadonlyMap<string, string>, key: string): string =>
  stored.get(key) ?? ConfigurationControl.MIRROR_CONFIG_DEFS.get(key)?.default ?? ""

// ---------------------------------------------------------------------------------------------------
// Shared

const apiError = (errorCode: number, errorMessage: string | null = null): ApiError => ({ errorCode, errorMessage })

const NONE: ApiError = apiError(E.NONE)

/** Why a mirror name cannot be a record key (§2.3), or null. */
export const mirrorNameError = (name: string): string | null => {
  if (name.length === 0) return "A cluster mirror name cannot be empty."
  if (name === "." || name === "..") return 'A cluster mirror name cannot be "." or "..".'
  if (name.length > 249) return "A cluster mirror name cannot be longer than 249 characters."
  if (!/^[a-zA-Z0-9._-]+$/.test(name))
    return `Cluster mirror name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'.`
  return null
}

const mirroringDisabled = (state: ControllerState.ControllerState): ApiError | null =>
  FeatureControl.isMirrorEnabled(state.features)
    ? null
    : apiError(E.UNSUPPORTED_VERSION, "Cluster mirroring is disabled: the finalized mirror.version is below 1.")

const unknownMirror = (state: ControllerState.ControllerState, mirror: string): ApiError | null =>
  ConfigurationControl.mirrorExists(state.configs, mirror)
    ? null
    : apiError(E.UNKNOWN_CLUSTER_MIRROR, `Mirror '${mirror}' not found`)

/**
 * The optimistic lock (§5.8, JR28): the request was validated against the metadata at
 * `stateValidationOffset`; a topic whose mirror state changed after that was validated stale, so the
 * whole request is refused. A negative offset means the request was not validated and skips the check.
 */
const staleTopic = (
  topics: ReadonlyArray<ReplicationControl.Topic>,
  stateValidationOffset: bigint
): ApiError | null => {
  if (stateValidationOffset < 0n) return null
  const stale = topics.find((t) => t.lastMirrorStateChangeOffset > stateValidationOffset)
  return stale === undefined
    ? null
    : apiError(
        E.INVALID_CLUSTER_MIRROR_STATES,
        `The mirror state of topic '${stale.name}' changed at offset ${stale.lastMirrorStateChangeOffset}, after the validation at offset ${stateValidationOffset}.`
      )
}

const existingTopics = (
  state: ControllerState.ControllerState,
  names: ReadonlyArray<string>
): ReadonlyArray<ReplicationControl.Topic> =>
  names.flatMap((n) => {
    const t = ReplicationControl.topicByName(state.replication, n)
    return t === undefined ? [] : [t]
  })

/** Records written one after another, each replayed into a scratch state at its offset. */
interface Batch {
  state: ControllerState.ControllerState
  offset: bigint
  readonly records: Array<MetadataRecords.MetadataRecord>
}

const batch = (state: ControllerState.ControllerState, nextOffset: bigint): Batch => ({
  state,
  offset: nextOffset,
  records: []
})

const append = (b: Batch, records: ReadonlyArray<MetadataRecords.MetadataRecord>): void => {
  if (records.length === 0) return
  b.state = ControllerState.replayAll(b.state, records, b.offset)
  b.offset += BigInt(records.length)
  b.records.push(...records)
}

/** The response shape Start, Stop, Pause and Resume share. */
interface TopicsResponse {
  readonly throttleTimeMs: number
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly topics: ReadonlyArray<{
    readonly name: string
    readonly errorCode: number
    readonly errorMessage: string | null
  }>
}

const topicsResponse = (top: ApiError, results: ReadonlyArray<readonly [string, ApiError]>): TopicsResponse => ({
  throttleTimeMs: 0,
  errorCode: top.errorCode,
  errorMessage: top.errorMessage,
  topics: results.map(([name, e]) => ({ name, errorCode: e.errorCode, errorMessage: e.errorMessage }))
})

/** A whole-request failure: the top-level error, repeated for every named topic, and no records. */
const refuseAll = (names: ReadonlyArray<string>, e: ApiError): ControllerResult.ControllerResult<TopicsResponse> =>
  ControllerResult.response(
    topicsResponse(
      e,
      unique(names).map((n) => [n, e])
    )
  )

const unique = (names: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(names)]

/** Names given more than once: each is answered once, with INVALID_REQUEST. */
const duplicates = (names: ReadonlyArray<string>): ReadonlySet<string> => {
  const seen = new Set<string>()
  const twice = new Set<string>()
  for (const n of names) (seen.has(n) ? twice : seen).add(n)
  return twice
}

const DUPLICATE = apiError(E.INVALID_REQUEST, "Duplicate topic name.")

const invalidPattern = (requested: ReadonlyArray<string>): ApiError | null => {
  const bad = requested.find((p) => !Patterns.isValid(p))
  return bad === undefined ? null : apiError(E.INVALID_REQUEST, `Invalid topic pattern '${bad}'.`)
}

/**
 * The ConfigRecord setting one pattern list of a mirror, or none when the value in effect does not
 * change. An empty list is written as "" rather than deleted, so that a removed default stays removed.
 */
const patternRecords = (
  state: ControllerState.ControllerState,
  mirror: string,
  key: string,
  patterns: ReadonlyArray<string>
): ReadonlyArray<MetadataRecords.MetadataRecord> => {
  const stored = ConfigurationControl.configsOf(state.configs, ConfigurationControl.ResourceType.CLUSTER_MIRROR, mirror)
  const value = Patterns.format(patterns)
  return value === Patterns.format(Patterns.parse(effective(stored, key))) ? [] : [setRecord(mirror, key, value)]
}

const setRecord = (mirror: string, key: string, value: string): MetadataRecords.MetadataRecord =>
  MetadataRecords.make("ConfigRecord", {
    resourceType: ConfigurationControl.ResourceType.CLUSTER_MIRROR,
    resourceName: mirror,
    name: key,
    value
  })

/** Compiles the lists about to be stored; a stored pattern that no longer compiles fails the request. */
const compileBoth = (
  mirror: string,
  include: ReadonlyArray<string>,
  exclude: ReadonlyArray<string>
): Either.Either<{ readonly include: Patterns.Matcher; readonly exclude: Patterns.Matcher }, ApiError> => {
  const bad = (key: string, p: string) =>
    apiError(E.INVALID_CONFIG, `The ${key} of mirror '${mirror}' holds an invalid pattern '${p}'.`)
  const inc = Patterns.compile(include)
  if (Either.isLeft(inc)) return Either.left(bad(Patterns.INCLUDE, inc.left))
  const exc = Patterns.compile(exclude)
  if (Either.isLeft(exc)) return Either.left(bad(Patterns.EXCLUDE, exc.left))
  return Either.right({ include: inc.right, exclude: exc.right })
}

/**
 * Exclude enforcement: every topic of the mirror that matches the exclude list and is not STOPPED
 * gets a STOPPED desired state (§5.2 step 2, §5.4).
 */
const stopExcluded = (b: Batch, mirror: string, exclude: Patterns.Matcher): void =>
  append(
    b,
    topicsOf(b.state, mirror)
      .filter((t) => t.desiredMirrorState !== STOPPED && exclude(t.name))
      .map((t) => MetadataRecords.mirrorTopicStateChange(t.topicId, mirror, "STOPPED"))
  )

// ---------------------------------------------------------------------------------------------------
// CreateClusterMirror (94)

/**
 * createClusterMirror: the mirror's ConfigRecords (resource type 64), then, when `__mirror_state` does
 * not exist, its TopicRecord, ConfigRecords and PartitionRecords (compacted, retention -1,
 * `compression.type=producer`; partitions as configured, replication factor as configured but at most
 * the live brokers). Errors (top level, no records): UNSUPPORTED_VERSION when mirroring is disabled;
 * INVALID_REQUEST for a bad name or a missing `bootstrap.servers` / `mirror.source.cluster.id`;
 * CLUSTER_MIRROR_ALREADY_EXISTS; INVALID_CONFIG for an unknown key or a bad value; the creation error
 * of `__mirror_state` (e.g. no live broker), since a mirror without it could not keep any state.
 */
export const createClusterMirror = (
  state: ControllerState.ControllerState,
  request: CreateClusterMirror.Request,
  ctx: CreateClusterMirrorContext
): ControllerResult.ControllerResult<CreateClusterMirror.Response> => {
  const fail = (e: ApiError) =>
    ControllerResult.response({ throttleTimeMs: 0, errorCode: e.errorCode, errorMessage: e.errorMessage })
  const mirror = request.mirrorName
  const disabled = mirroringDisabled(state)
  if (disabled !== null) return fail(disabled)
  const nameError = mirrorNameError(mirror)
  if (nameError !== null) return fail(apiError(E.INVALID_REQUEST, nameError))
  const given = new Map(request.config.map((c) => [c.name, c.value]))
  const configs = ConfigurationControl.createMirrorConfigRecords(mirror, request.config)
  // A refused key or value (e.g. TLS/SASL settings) comes first: it is also why a client could not
  // read the source's cluster id, so "missing mirror.source.cluster.id" would send the operator astray.
  if (Either.isLeft(configs) && configs.left._tag === "InvalidConfig")
    return fail(apiError(configs.left.errorCode, configs.left.message))
  const missing = ConfigurationControl.MIRROR_REQUIRED_CONFIGS.find((k) => (given.get(k) ?? "").trim() === "")
  if (missing !== undefined)
    return fail(apiError(E.INVALID_REQUEST, `Missing required configuration "${missing}" which has no default value.`))
  if (ConfigurationControl.mirrorExists(state.configs, mirror))
    return fail(apiError(E.CLUSTER_MIRROR_ALREADY_EXISTS, `Mirror '${mirror}' already exists`))
  if (Either.isLeft(configs)) return fail(apiError(configs.left.errorCode, configs.left.message))

  if (ReplicationControl.topicByName(state.replication, MIRROR_STATE_TOPIC) !== undefined)
    return ControllerResult.of(configs.right, { throttleTimeMs: 0, errorCode: E.NONE, errorMessage: null })
  const live = ctx.clusterView.liveBrokers.length
  const replicationFactor = Math.max(
    1,
    Math.min(ctx.mirrorStateTopicReplicationFactor ?? DEFAULT_MIRROR_STATE_TOPIC_REPLICATION_FACTOR, live)
  )
  const created = createTopic(state.replication, ctx, {
    name: MIRROR_STATE_TOPIC,
    numPartitions: ctx.mirrorStateTopicPartitions ?? DEFAULT_MIRROR_STATE_TOPIC_PARTITIONS,
    replicationFactor,
    configs: MIRROR_STATE_TOPIC_CONFIGS,
    mirrorTopicId: null
  })
  if (Either.isLeft(created))
    return fail(
      apiError(
        created.left.errorCode,
        `Unable to create the ${MIRROR_STATE_TOPIC} topic: ${created.left.errorMessage ?? Errors.message(created.left.errorCode)}`
      )
    )
  return ControllerResult.of([...configs.right, ...created.right.records], {
    throttleTimeMs: 0,
    errorCode: E.NONE,
    errorMessage: null
  })
}

interface NewTopic {
  readonly name: string
  readonly numPartitions: number
  readonly replicationFactor: number
  readonly configs: ReadonlyArray<ReplicationControl.TopicConfig>
  /** The source topic id a mirror topic keeps; null for a fresh id. */
  readonly mirrorTopicId: string | null
}

/**
 * The source's configs the forwarding broker stamped on a topic StartMirrorTopics creates. One this
 * cluster does not accept is left to the periodic config sync, which reports it; the topic is created
 * with the others, as it would be without any.
 */
const sourceConfigs = (
  topic: string,
  configs: ReadonlyArray<{ readonly name: string; readonly value: string | null }>
): ReadonlyArray<ReplicationControl.TopicConfig> =>
  configs.flatMap((c) =>
    c.value !== null &&
    Either.isRight(ConfigurationControl.createTopicConfigRecords(topic, [{ name: c.name, value: c.value }]))
      ? [{ name: c.name, value: c.value }]
      : []
  )

/** One topic through `ReplicationControl.createTopics`: its records and id, or its error. */
const createTopic = (
  state: ReplicationControl.State,
  ctx: {
    readonly clusterView: ReplicationControl.ClusterView
    readonly newTopicId: () => string
    readonly defaultReplicationFactor?: number
  },
  t: NewTopic
): Either.Either<
  { readonly topicId: string; readonly records: ReadonlyArray<MetadataRecords.MetadataRecord> },
  ApiError
> => {
  const request: CreateTopics.Request = {
    topics: [
      {
        name: t.name,
        numPartitions: t.numPartitions,
        replicationFactor: t.replicationFactor,
        assignments: [],
        configs: t.configs,
        mirrorInfo: t.mirrorTopicId === null ? null : { topicId: t.mirrorTopicId }
      }
    ],
    timeoutMs: 0,
    validateOnly: false
  }
  const result = ReplicationControl.createTopics(state, request, ctx.clusterView, {
    newTopicId: ctx.newTopicId,
    defaultPartitions: 1,
    defaultReplicationFactor: ctx.defaultReplicationFactor ?? 1,
    validateConfigs: (topic, configs) => {
      const r = ConfigurationControl.createTopicConfigRecords(topic, configs)
      return Either.isLeft(r) ? apiError(r.left.errorCode, r.left.message) : null
    },
    configRecords: (topic, configs) =>
      Either.getOrElse(ConfigurationControl.createTopicConfigRecords(topic, configs), () => [])
  })
  const r = result.response[0]
  if (r === undefined || r.errorCode !== E.NONE)
    return Either.left(apiError(r?.errorCode ?? E.UNKNOWN_SERVER_ERROR, r?.errorMessage ?? null))
  return Either.right({ topicId: r.topicId, records: result.records })
}

// ---------------------------------------------------------------------------------------------------
// StartMirrorTopics (95)

/**
 * startMirrorTopics (§5.2). Whole request (top-level error, no records): UNSUPPORTED_VERSION,
 * UNKNOWN_CLUSTER_MIRROR, INVALID_CLUSTER_MIRROR_STATES when a named topic's mirror state changed after
 * `StateValidationOffset` (JR28), INVALID_REQUEST for a pattern that does not compile.
 *
 * Patterns first (JR31.1): every requested name and IncludePatterns go into `mirror.topics.include`
 * (and out of the exclude list), ExcludePatterns into `mirror.topics.exclude` (and out of include);
 * exclude wins. Changed lists are ConfigRecords; topics of the mirror now excluded get STOPPED.
 *
 * Then per topic, stopping at the first error: INVALID_REQUEST for a duplicate, an internal topic, or
 * a name the exclude list matches; INVALID_TOPIC_EXCEPTION for an illegal name. An existing topic:
 * INCONSISTENT_TOPIC_ID when the requested source id differs from its id; TOPIC_ALREADY_IN_CLUSTER_MIRROR
 * when another mirror has it not STOPPED; already MIRRORING here → success, nothing written;
 * PAUSED here → MIRROR_TOPIC_NOT_STOPPED; else MirrorTopicStateChangeRecord(MIRRORING).
 * NumPartitions is ignored (JR48). A missing topic: TOPIC_ALREADY_EXISTS when another topic has the
 * source id; with NumPartitions <= 0 the source does not know it yet: it stays in the include list
 * for discovery, success, no state record (JR31.1); otherwise it is created with NumPartitions and
 * the source id (a fresh random id when the source gave the zero id), CreateTopics' errors apply and
 * every replica must be on an active broker, then MIRRORING. Its replication factor is in
 * `destinationReplicationFactor`: an explicit mirror `replication.factor` is kept (more than the
 * active brokers is INVALID_REPLICATION_FACTOR), a default is capped at the live brokers and the
 * topic's result says so in its ErrorMessage (with ErrorCode NONE).
 *
 * The top-level error is the first per-topic error (§2.4). However many partitions the topics have,
 * the records are one decision: the runtime appends them as one metadata transaction when they do
 * not fit one batch, so readers see all of them or none.
 */
export const startMirrorTopics = (
  state: ControllerState.ControllerState,
  request: StartMirrorTopics.Request,
  ctx: StartMirrorTopicsContext
): ControllerResult.ControllerResult<StartMirrorTopics.Response> => {
  const mirror = request.mirrorName
  const names = request.topics.map((t) => t.topicName)
  const whole =
    mirroringDisabled(state) ??
    unknownMirror(state, mirror) ??
    staleTopic(existingTopics(state, names), request.stateValidationOffset) ??
    invalidPattern([...request.includePatterns, ...request.excludePatterns])
  if (whole !== null) return refuseAll(names, whole)

  const twice = duplicates(names)
  const candidates = unique(names).filter(
    (n) => !twice.has(n) && validateTopicName(n) === null && !INTERNAL_TOPICS.has(n)
  )
  const current = topicPatterns(state, mirror)
  const include = Patterns.update(
    Patterns.update(current.include, [...request.includePatterns, ...candidates], []),
    [],
    request.excludePatterns
  )
  const exclude = Patterns.update(
    Patterns.update(current.exclude, [], [...request.includePatterns, ...candidates]),
    request.excludePatterns,
    []
  )
  const matchers = compileBoth(mirror, include, exclude)
  if (Either.isLeft(matchers)) return refuseAll(names, matchers.left)

  const b = batch(state, ctx.nextOffset)
  append(b, [
    ...patternRecords(state, mirror, Patterns.INCLUDE, include),
    ...patternRecords(state, mirror, Patterns.EXCLUDE, exclude)
  ])
  stopExcluded(b, mirror, matchers.right.exclude)

  // Each topic is decided against the state the topics before it leave (an id or a name one of them
  // took), so its records are replayed before the next topic, in place: a copy of the topic maps per
  // topic made a start of 10,000 topics take tens of seconds.
  const starting: Starting = { b, replication: ReplicationControl.replayer(b.state.replication) }
  const answered = new Set<string>()
  const results: Array<readonly [string, ApiError]> = []
  for (const t of request.topics) {
    if (answered.has(t.topicName)) continue
    answered.add(t.topicName)
    results.push([
      t.topicName,
      startOne(starting, mirror, t, matchers.right, twice, request.defaultReplicationFactor, ctx)
    ])
  }
  const firstError = results.find(([, e]) => e.errorCode !== E.NONE)?.[1] ?? NONE
  return ControllerResult.of(b.records, topicsResponse(firstError, results))
}

/**
 * The per-topic stage of a start. Its topics' records only concern replication (and the topic names
 * configuration keeps, which a start does not read), so `b.state` keeps the configs and features the
 * topics are decided with and `replication` the topics as the records so far leave them.
 */
interface Starting {
  readonly b: Batch
  readonly replication: ReplicationControl.Replayer
}

const appendStarted = (s: Starting, records: ReadonlyArray<MetadataRecords.MetadataRecord>): void => {
  s.replication.replayAll(records, s.b.offset)
  s.b.offset += BigInt(records.length)
  for (const r of records) s.b.records.push(r)
}

const startOne = (
  s: Starting,
  mirror: string,
  t: StartMirrorTopics.Request["topics"][number],
  matchers: { readonly include: Patterns.Matcher; readonly exclude: Patterns.Matcher },
  twice: ReadonlySet<string>,
  requestedDefault: number,
  ctx: StartMirrorTopicsContext
): ApiError => {
  const name = t.topicName
  if (twice.has(name)) return DUPLICATE
  const nameError = validateTopicName(name)
  if (nameError !== null) return apiError(E.INVALID_TOPIC_EXCEPTION, nameError)
  if (INTERNAL_TOPICS.has(name)) return apiError(E.INVALID_REQUEST, `Internal topic '${name}' cannot be mirrored.`)
  if (!matchers.include(name) || matchers.exclude(name))
    return apiError(
      E.INVALID_REQUEST,
      `Unable to start the topic '${name}' to mirror because it matches the exclude patterns of mirror '${mirror}'.`
    )

  const replication = s.replication.state()
  const existing = ReplicationControl.topicByName(replication, name)
  if (existing !== undefined) {
    if (t.topicId !== Uuid.ZERO && t.topicId !== existing.topicId)
      return apiError(
        E.INCONSISTENT_TOPIC_ID,
        `Topic '${name}' has id ${existing.topicId} here, but the source topic id is ${t.topicId}.`
      )
    if (existing.mirrorName !== null && existing.mirrorName !== mirror && existing.desiredMirrorState !== STOPPED)
      return apiError(
        E.TOPIC_ALREADY_IN_CLUSTER_MIRROR,
        `Topic '${name}' is already mirrored by mirror '${existing.mirrorName}'.`
      )
    if (existing.mirrorName === mirror && existing.desiredMirrorState === MIRRORING) return NONE
    if (existing.mirrorName === mirror && existing.desiredMirrorState !== STOPPED)
      return apiError(E.MIRROR_TOPIC_NOT_STOPPED, `Topic '${name}' of mirror '${mirror}' is not stopped.`)
    appendStarted(s, [MetadataRecords.mirrorTopicStateChange(existing.topicId, mirror, "MIRRORING")])
    return NONE
  }

  if (t.topicId !== Uuid.ZERO) {
    const holder = ReplicationControl.topicById(replication, t.topicId)
    if (holder !== undefined)
      return apiError(E.TOPIC_ALREADY_EXISTS, `Topic id ${t.topicId} is already used by topic '${holder.name}'.`)
  }
  // Unknown on the source: the name is in the include list, discovery starts it once it appears.
  if (t.numPartitions <= 0) return NONE
  const rf = destinationReplicationFactor(s.b.state, mirror, requestedDefault, ctx)
  const created = createTopic(replication, ctx, {
    name,
    numPartitions: t.numPartitions,
    replicationFactor: rf.replicationFactor,
    configs: sourceConfigs(name, t.configs),
    // Passed as the mirror id even when fresh, so that every replica must be on an active broker.
    mirrorTopicId: t.topicId === Uuid.ZERO ? freshTopicId(replication, ctx.newTopicId) : t.topicId
  })
  if (Either.isLeft(created))
    return rf.explicit
      ? apiError(
          created.left.errorCode,
          `${REPLICATION_FACTOR_CONFIG}=${rf.replicationFactor} of mirror '${mirror}': ${created.left.errorMessage ?? Errors.message(created.left.errorCode)}`
        )
      : created.left
  appendStarted(s, [
    ...created.right.records,
    MetadataRecords.mirrorTopicStateChange(created.right.topicId, mirror, "MIRRORING")
  ])
  return apiError(E.NONE, rf.note)
}

/** The replication factor of a destination topic Start creates, and where it came from. */
export interface DestinationReplicationFactor {
  readonly replicationFactor: number
  /** Set by the mirror's `replication.factor`: kept as given, never capped. */
  readonly explicit: boolean
  /** Why the topic gets fewer replicas than its default asked for; null when it does not. */
  readonly note: string | null
}

/**
 * Where a destination topic's replication factor comes from: the mirror's `replication.factor` when
 * set (not -1), as given, like an explicit CreateTopics replication factor; else the forwarding
 * broker's `default.replication.factor` (`requestedDefault`, the request's DefaultReplicationFactor),
 * else the controller's. A default is capped at the live brokers, as `offsets.topic.replication.factor`
 * is, so that a start or a discovery does not fail while brokers are down or the cluster is smaller
 * than the default; the topic keeps the smaller factor (reassign it to grow it), and the note says so.
 */
export const destinationReplicationFactor = (
  state: ControllerState.ControllerState,
  mirror: string,
  requestedDefault: number,
  ctx: StartMirrorTopicsContext
): DestinationReplicationFactor => {
  const stored = ConfigurationControl.configsOf(
    state.configs,
    ConfigurationControl.ResourceType.CLUSTER_MIRROR,
    mirror
  ).get(REPLICATION_FACTOR_CONFIG)
  const configured = stored === undefined ? -1 : Number(stored)
  if (configured > 0) return { replicationFactor: configured, explicit: true, note: null }
  const [wanted, from] =
    requestedDefault > 0
      ? [requestedDefault, "the default.replication.factor of the broker that forwarded the request"]
      : [ctx.defaultReplicationFactor ?? 1, "the controller's default.replication.factor"]
  const live = ctx.clusterView.liveBrokers.length
  if (live === 0 || wanted <= live) return { replicationFactor: wanted, explicit: false, note: null }
  return {
    replicationFactor: live,
    explicit: false,
    note: `Created with replication factor ${live}, the number of live brokers: ${from} is ${wanted}.`
  }
}

/** A random topic id no topic has and Kafka does not reserve. */
const freshTopicId = (state: ReplicationControl.State, newTopicId: () => string): string => {
  let id: string
  do id = newTopicId()
  while (Uuid.RESERVED.has(id) || ReplicationControl.topicById(state, id) !== undefined)
  return id
}

// ---------------------------------------------------------------------------------------------------
// StopMirrorTopics (96), PauseMirrorTopics (102), ResumeMirrorTopics (103)

/** A named topic's membership check shared by Stop, Pause and Resume: the topic, or its error. */
const memberOf = (
  state: ControllerState.ControllerState,
  mirror: string,
  name: string
): Either.Either<ReplicationControl.Topic, ApiError> => {
  const topic = ReplicationControl.topicByName(state.replication, name)
  if (topic === undefined) return Either.left(apiError(E.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`))
  if (topic.mirrorName === null)
    return Either.left(apiError(E.UNKNOWN_CLUSTER_MIRROR, `Topic '${name}' does not belong to any cluster mirror.`))
  if (topic.mirrorName !== mirror)
    return Either.left(
      apiError(
        E.TOPIC_NOT_IN_CLUSTER_MIRROR,
        `Topic '${name}' belongs to mirror '${topic.mirrorName}', not to mirror '${mirror}'.`
      )
    )
  return Either.right(topic)
}

/**
 * Runs one desired-state change over the named topics: whole-request checks, then per topic the
 * membership checks and `decide`, which answers with the target state to write (or null for none)
 * and the topic's outcome.
 */
const changeTopics = (
  state: ControllerState.ControllerState,
  request: {
    readonly mirrorName: string
    readonly topics: ReadonlyArray<{ readonly topicName: string }>
    readonly stateValidationOffset: bigint
  },
  ctx: OffsetContext,
  before: ((b: Batch) => ApiError | null) | null,
  decide: (topic: ReplicationControl.Topic) => readonly [MirrorPartitionState.MirrorPartitionState | null, ApiError]
): ControllerResult.ControllerResult<TopicsResponse> => {
  const mirror = request.mirrorName
  const names = request.topics.map((t) => t.topicName)
  const whole =
    mirroringDisabled(state) ??
    unknownMirror(state, mirror) ??
    staleTopic(existingTopics(state, names), request.stateValidationOffset)
  if (whole !== null) return refuseAll(names, whole)
  const b = batch(state, ctx.nextOffset)
  if (before !== null) {
    const e = before(b)
    if (e !== null) return refuseAll(names, e)
  }
  const twice = duplicates(names)
  // Each topic's record concerns that topic alone (duplicates are refused), so every topic is decided
  // against the state before them and their records are replayed as one batch.
  const changes: Array<MetadataRecords.MetadataRecord> = []
  const results = unique(names).map((name): readonly [string, ApiError] => {
    if (twice.has(name)) return [name, DUPLICATE]
    const topic = memberOf(b.state, mirror, name)
    if (Either.isLeft(topic)) return [name, topic.left]
    const [target, outcome] = decide(topic.right)
    if (target !== null) changes.push(MetadataRecords.mirrorTopicStateChange(topic.right.topicId, mirror, target))
    return [name, outcome]
  })
  append(b, changes)
  return ControllerResult.of(b.records, topicsResponse(NONE, results))
}

/**
 * stopMirrorTopics (§5.4): whole request as for Start (the lock covers every named topic).
 * `Patterns` first: each is removed from the include list when there, else added to the exclude list; changed lists are ConfigRecords and every topic of the mirror the exclude list now
 * matches gets STOPPED. Then per topic: UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_CLUSTER_MIRROR (in no
 * mirror), TOPIC_NOT_IN_CLUSTER_MIRROR (another mirror), already STOPPED → success, nothing written;
 * PAUSED → MIRROR_TOPIC_ALREADY_PAUSED; else MirrorTopicStateChangeRecord(STOPPED).
 */
export const stopMirrorTopics = (
  state: ControllerState.ControllerState,
  request: StopMirrorTopics.Request,
  ctx: OffsetContext
): ControllerResult.ControllerResult<StopMirrorTopics.Response> =>
  changeTopics(
    state,
    request,
    ctx,
    request.patterns.length === 0
      ? null
      : (b) => {
          const bad = invalidPattern(request.patterns)
          if (bad !== null) return bad
          const mirror = request.mirrorName
          const current = topicPatterns(state, mirror)
          const removed = request.patterns.filter((p) => current.include.includes(p))
          const added = request.patterns.filter((p) => !current.include.includes(p))
          const include = Patterns.update(current.include, [], removed)
          const exclude = Patterns.update(current.exclude, added, [])
          const matchers = compileBoth(mirror, include, exclude)
          if (Either.isLeft(matchers)) return matchers.left
          append(b, [
            ...patternRecords(state, mirror, Patterns.INCLUDE, include),
            ...patternRecords(state, mirror, Patterns.EXCLUDE, exclude)
          ])
          stopExcluded(b, mirror, matchers.right.exclude)
          return null
        },
    (topic) =>
      topic.desiredMirrorState === STOPPED
        ? [null, NONE]
        : topic.desiredMirrorState === PAUSED
          ? [
              null,
              apiError(E.MIRROR_TOPIC_ALREADY_PAUSED, `Topic '${topic.name}' is paused; resume it before stopping it.`)
            ]
          : ["STOPPED", NONE]
  )

/**
 * pauseMirrorTopics (§5.6): whole request as for Stop; per topic the membership errors of Stop,
 * MIRROR_TOPIC_BEING_STOPPED when its desired state is STOPPED, already PAUSED → success, nothing
 * written; else MirrorTopicStateChangeRecord(PAUSED).
 */
export const pauseMirrorTopics = (
  state: ControllerState.ControllerState,
  request: PauseMirrorTopics.Request,
  ctx: OffsetContext
): ControllerResult.ControllerResult<PauseMirrorTopics.Response> =>
  changeTopics(state, request, ctx, null, (topic) =>
    topic.desiredMirrorState === STOPPED
      ? [null, apiError(E.MIRROR_TOPIC_BEING_STOPPED, `Topic '${topic.name}' is stopped or being stopped.`)]
      : topic.desiredMirrorState === PAUSED
        ? [null, NONE]
        : ["PAUSED", NONE]
  )

/**
 * resumeMirrorTopics (§5.6): whole request as for Stop; per topic the membership errors of Stop,
 * already MIRRORING → success, nothing written; MIRROR_TOPIC_NOT_PAUSED unless PAUSED; else
 * MirrorTopicStateChangeRecord(MIRRORING).
 */
export const resumeMirrorTopics = (
  state: ControllerState.ControllerState,
  request: ResumeMirrorTopics.Request,
  ctx: OffsetContext
): ControllerResult.ControllerResult<ResumeMirrorTopics.Response> =>
  changeTopics(state, request, ctx, null, (topic) =>
    topic.desiredMirrorState === MIRRORING
      ? [null, NONE]
      : topic.desiredMirrorState === PAUSED
        ? ["MIRRORING", NONE]
        : [null, apiError(E.MIRROR_TOPIC_NOT_PAUSED, `Topic '${topic.name}' is not paused.`)]
  )

// ---------------------------------------------------------------------------------------------------
// DeleteClusterMirror (104)

/**
 * deleteClusterMirror (§5.7), all or nothing: UNSUPPORTED_VERSION; UNKNOWN_CLUSTER_MIRROR; the lock
 * over every topic of the mirror (INVALID_CLUSTER_MIRROR_STATES); CLUSTER_MIRROR_NOT_EMPTY when one of
 * them is not STOPPED. Otherwise one batch: MirrorTopicStateChangeRecord(null mirror, UNKNOWN) for each
 * of its topics (JR49), then a tombstone for every config key of the mirror.
 */
export const deleteClusterMirror = (
  state: ControllerState.ControllerState,
  request: DeleteClusterMirror.Request
): ControllerResult.ControllerResult<DeleteClusterMirror.Response> => {
  const mirror = request.mirrorName
  const topics = topicsOf(state, mirror)
  const active = topics.find((t) => t.desiredMirrorState !== STOPPED)
  const whole =
    mirroringDisabled(state) ??
    unknownMirror(state, mirror) ??
    staleTopic(topics, request.stateValidationOffset) ??
    (active === undefined
      ? null
      : apiError(E.CLUSTER_MIRROR_NOT_EMPTY, `Mirror '${mirror}' still has active or paused topic '${active.name}'`))
  if (whole !== null)
    return ControllerResult.response({
      throttleTimeMs: 0,
      errorCode: whole.errorCode,
      errorMessage: whole.errorMessage
    })
  return ControllerResult.of(
    [
      ...topics.map((t) => MetadataRecords.mirrorTopicStateChange(t.topicId, null, "UNKNOWN")),
      ...ConfigurationControl.deleteMirrorConfigRecords(state.configs, mirror)
    ],
    { throttleTimeMs: 0, errorCode: E.NONE, errorMessage: null }
  )
}
