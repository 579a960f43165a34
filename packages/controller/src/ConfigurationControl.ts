/**
 * Dynamic configuration (Kafka's `ConfigurationControlManager`): config entries by resource type and
 * name for topics (2), brokers (4; name "" is the cluster-wide default) and KIP-1279 cluster mirrors
 * (64; a mirror exists exactly while it has at least one entry). Owns the configs slice of the
 * controller state, the table of known keys with their types and defaults (the single source for
 * every package), and the IncrementalAlterConfigs / AlterConfigs decisions.
 *
 * Decide functions are pure and return ConfigRecords; `replay` is the only way the state changes.
 * Whether a topic exists is asked of the caller: topics belong to replication. A RemoveTopicRecord
 * drops the topic's configs, as Kafka does, so this slice follows TopicRecords for topic names.
 */
import { Errors, type IncrementalAlterConfigs, MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import { Security } from "@clustermirror/client"
import { AclRules } from "@clustermirror/authorizer"
import * as ControllerError from "./ControllerError.js"
import * as ControllerResult from "./ControllerResult.js"
import * as Patterns from "./internal/mirrorPatterns.js"
import { validateTopicName } from "./internal/topicName.js"
import { PersistentMap, type TransientMap } from "./internal/PersistentMap.js"

/** Config resource types as ConfigRecord and the config APIs carry them. */
export const ResourceType = { TOPIC: 2, BROKER: 4, CLUSTER_MIRROR: 64 } as const
/** Kafka's CLIENT_METRICS config resource type, which this controller refuses. */
const CLIENT_METRICS = 16

/** IncrementalAlterConfigs operations. */
export const OpType = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const

// ---------------------------------------------------------------------------------------------------
// Known keys

/** Kafka's ConfigDef types. */
export type ConfigType = "boolean" | "string" | "int" | "short" | "long" | "double" | "list" | "class" | "password"

export interface ConfigDef {
  readonly name: string
  readonly type: ConfigType
  /** The default as DescribeConfigs shows it; null when there is none. */
  readonly default: string | null
  /** A constraint beyond the type: why a parsed value is invalid, or null. */
  readonly validator?: (value: string) => string | null
}

const LONG_MAX = "9223372036854775807"

const atLeast =
  (min: number) =>
  (v: string): string | null =>
    Number(v) < min ? `Value must be at least ${min}` : null

const between =
  (min: number, max: number) =>
  (v: string): string | null =>
    Number(v) < min ? `Value must be at least ${min}` : Number(v) > max ? `Value must be no more than ${max}` : null

const oneOf =
  (...allowed: ReadonlyArray<string>) =>
  (v: string): string | null =>
    allowed.includes(v.trim()) ? null : `String must be one of: ${allowed.join(", ")}`

/** `security.protocol`: one of Kafka's names, in any case (as Kafka's clients read it). */
const securityProtocol = (v: string): string | null =>
  Security.SECURITY_PROTOCOLS.some((x) => x === v.trim().toUpperCase())
    ? null
    : `String must be one of: ${Security.SECURITY_PROTOCOLS.join(", ")}`

/** A Kafka client security key clustermirror refuses whatever its value, with the reason. */
const refused = (why: string) => (): string => why

const listOf =
  (...allowed: ReadonlyArray<string>) =>
  (v: string): string | null =>
    splitList(v).every((x) => allowed.includes(x)) ? null : `String must be one of: ${allowed.join(", ")}`

/** `*`, or `partition:broker` pairs: the throttled-replicas lists. */
const throttledReplicas = (v: string): string | null => {
  const parts = splitList(v)
  if (parts.length === 1 && parts[0] === "*") return null
  return parts.every((p) => /^\d+:\d+$/.test(p))
    ? null
    : "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],..."
}

/** A list of regular expressions: a mirror's topic and group filters (KIP-1279 §5.3). */
const replicationFactor = (v: string): string | null =>
  Number(v) === -1 || Number(v) >= 1 ? null : "Value must be at least 1, or -1 for the default"

const regexList = (v: string): string | null => {
  const bad = splitList(v).find((p) => !Patterns.isValid(p))
  return bad === undefined ? null : `'${bad}' is not a valid regular expression`
}

const def = (
  name: string,
  type: ConfigType,
  dflt: string | null,
  validator?: (value: string) => string | null
): ConfigDef => (validator === undefined ? { name, type, default: dflt } : { name, type, default: dflt, validator })

const table = (defs: ReadonlyArray<ConfigDef>): ReadonlyMap<string, ConfigDef> => new Map(defs.map((d) => [d.name, d]))

/** Topic configs (Kafka's LogConfig, plus KIP-1279's mirror topic configs). */
export const TOPIC_CONFIG_DEFS: ReadonlyMap<string, ConfigDef> = table([
  def("cleanup.policy", "list", "delete", listOf("compact", "delete")),
  def("compression.type", "string", "producer", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
  def("compression.gzip.level", "int", "-1", (v) =>
    Number(v) === -1 || (Number(v) >= 1 && Number(v) <= 9) ? null : "Value must be -1 or between 1 and 9"
  ),
  def("compression.lz4.level", "int", "9", between(1, 17)),
  def("compression.zstd.level", "int", "3", between(-131072, 22)),
  def("delete.retention.ms", "long", "86400000", atLeast(0)),
  def("file.delete.delay.ms", "long", "60000", atLeast(0)),
  def("flush.messages", "long", LONG_MAX, atLeast(1)),
  def("flush.ms", "long", LONG_MAX, atLeast(0)),
  def("follower.replication.throttled.replicas", "list", "", throttledReplicas),
  def("index.interval.bytes", "int", "4096", atLeast(0)),
  def("leader.replication.throttled.replicas", "list", "", throttledReplicas),
  def("local.retention.bytes", "long", "-2", atLeast(-2)),
  def("local.retention.ms", "long", "-2", atLeast(-2)),
  def("max.compaction.lag.ms", "long", LONG_MAX, atLeast(1)),
  def("max.message.bytes", "int", "1048588", atLeast(0)),
  def("message.timestamp.after.max.ms", "long", "3600000", atLeast(0)),
  def("message.timestamp.before.max.ms", "long", LONG_MAX, atLeast(0)),
  def("message.timestamp.type", "string", "CreateTime", oneOf("CreateTime", "LogAppendTime")),
  def("min.cleanable.dirty.ratio", "double", "0.5", between(0, 1)),
  def("min.compaction.lag.ms", "long", "0", atLeast(0)),
  def("min.insync.replicas", "int", "1", atLeast(1)),
  def("mirror.replication.throttled.replicas", "list", "", throttledReplicas),
  def("mirror.support.unclean.leader.election", "boolean", "false"),
  def("preallocate", "boolean", "false"),
  def("remote.storage.enable", "boolean", "false"),
  def("retention.bytes", "long", "-1"),
  def("retention.ms", "long", "604800000", atLeast(-1)),
  def("segment.bytes", "int", "1073741824", atLeast(14)),
  def("segment.index.bytes", "int", "10485760", atLeast(4)),
  def("segment.jitter.ms", "long", "0", atLeast(0)),
  def("segment.ms", "long", "604800000", atLeast(1)),
  def("unclean.leader.election.enable", "boolean", "false")
])

/** Topic config names with their defaults ("" where Kafka has none): what DescribeConfigs lists. */
export const TOPIC_CONFIGS: ReadonlyMap<string, string> = new Map(
  [...TOPIC_CONFIG_DEFS.values()].map((d) => [d.name, d.default ?? ""])
)

/**
 * The broker configs that can change while brokers run (resource type 4: a node id, or "" for the
 * cluster-wide default): the subset of Kafka's dynamic broker configs that brokers apply as they
 * replay the ConfigRecords, plus the thread counts in `BROKER_NO_OP_CONFIGS`. A per-broker value
 * overrides the cluster default, which overrides the broker's properties.
 */
export const BROKER_CONFIG_DEFS: ReadonlyMap<string, ConfigDef> = table([
  def("background.threads", "int", "10", atLeast(1)),
  def("follower.replication.throttled.rate", "long", LONG_MAX, atLeast(0)),
  def("leader.replication.throttled.rate", "long", LONG_MAX, atLeast(0)),
  def("log.cleaner.backoff.ms", "long", "15000", atLeast(0)),
  def("log.cleaner.dedupe.buffer.size", "long", "134217728", atLeast(48)),
  def("log.cleaner.delete.retention.ms", "long", "86400000", atLeast(0)),
  def("log.cleaner.io.max.bytes.per.second", "double", "1.7976931348623157E308", (v) =>
    Number(v) > 0 ? null : "Value must be above 0"
  ),
  def("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, atLeast(1)),
  def("log.cleaner.min.cleanable.ratio", "double", "0.5", between(0, 1)),
  def("log.cleaner.min.compaction.lag.ms", "long", "0", atLeast(0)),
  def("log.cleaner.threads", "int", "1", atLeast(0)),
  def("log.cleanup.policy", "list", "delete", listOf("compact", "delete")),
  def("log.flush.interval.messages", "long", LONG_MAX, atLeast(1)),
  def("log.flush.interval.ms", "long", LONG_MAX, atLeast(0)),
  def("log.message.timestamp.type", "string", "CreateTime", oneOf("CreateTime", "LogAppendTime")),
  def("log.retention.bytes", "long", "-1"),
  def("log.retention.ms", "long", "604800000", atLeast(-1)),
  def("log.roll.ms", "long", "604800000", atLeast(1)),
  def("log.segment.bytes", "int", "1073741824", atLeast(14)),
  def("message.max.bytes", "int", "1048588", atLeast(0)),
  def("min.insync.replicas", "int", "1", atLeast(1)),
  def("mirror.metadata.refresh.interval.ms", "long", "60000", atLeast(0)),
  def("mirror.replication.throttled.rate", "long", LONG_MAX, atLeast(0)),
  def("num.io.threads", "int", "8", atLeast(1)),
  def("num.network.threads", "int", "3", atLeast(1)),
  def("num.recovery.threads.per.data.dir", "int", "2", atLeast(1)),
  def("num.replica.fetchers", "int", "1", atLeast(1)),
  def("unclean.leader.election.enable", "boolean", "false")
])

/**
 * Thread counts: accepted (in properties and dynamically) and described, without effect: a broker
 * runs its network, request and replica-fetch work on one event loop, so there is no pool to size.
 */
export const BROKER_NO_OP_CONFIGS: ReadonlySet<string> = new Set([
  "background.threads",
  "num.io.threads",
  "num.network.threads",
  "num.recovery.threads.per.data.dir",
  "num.replica.fetchers"
])

/** Broker keys only the cluster-wide default may set: the controller applies them, not each broker. */
export const BROKER_CLUSTER_ONLY_CONFIGS: ReadonlySet<string> = new Set(["unclean.leader.election.enable"])

/**
 * Broker keys a broker reads only from its properties at start (Kafka's read-only broker configs):
 * altering them is refused with INVALID_REQUEST, as Kafka does.
 */
export const BROKER_READ_ONLY_CONFIGS: ReadonlySet<string> = new Set([
  "advertised.listeners",
  "allow.everyone.if.no.acl.found",
  "authorizer.class.name",
  "auto.create.topics.enable",
  "broker.heartbeat.interval.ms",
  "broker.id",
  "broker.session.timeout.ms",
  "cluster.id",
  "controller.listener.names",
  "controller.quota.window.num",
  "controller.quota.window.size.seconds",
  "controller.quorum.bootstrap.servers",
  "controller.quorum.voters",
  "default.replication.factor",
  "group.initial.rebalance.delay.ms",
  "group.max.session.timeout.ms",
  "group.min.session.timeout.ms",
  "inter.broker.listener.name",
  "listener.security.protocol.map",
  "listeners",
  "log.cleaner.enable",
  "log.dir",
  "log.dirs",
  "log.retention.check.interval.ms",
  "metrics.port",
  "mirror.admin.listener.name",
  "mirror.failed.retry.initial.backoff.ms",
  "mirror.failed.retry.max.attempts",
  "mirror.failed.retry.max.backoff.ms",
  "mirror.state.topic.num.partitions",
  "mirror.state.topic.replication.factor",
  "node.id",
  "num.partitions",
  "offsets.topic.num.partitions",
  "offsets.topic.replication.factor",
  "offsets.topic.segment.bytes",
  "process.roles",
  "quota.window.num",
  "quota.window.size.seconds",
  "replica.lag.time.max.ms",
  "replication.quota.window.num",
  "replication.quota.window.size.seconds",
  "socket.receive.buffer.bytes",
  "socket.request.max.bytes",
  "socket.send.buffer.bytes",
  "super.users",
  "transaction.abort.timed.out.transaction.cleanup.interval.ms",
  "transaction.max.timeout.ms",
  "transaction.state.log.min.isr",
  "transaction.state.log.num.partitions",
  "transaction.state.log.replication.factor",
  "transaction.state.log.segment.bytes",
  "transactional.id.expiration.ms"
])

const CLEANER_IO =
  "the log cleaner reads segments through a shared 64 KiB window, writes in 1 MiB chunks and fills its offset map to 90 %: not configurable"
const LOG_DIR_THROTTLING = "a broker has one log directory, so replicas never move between directories"
const QUOTAS =
  "broker-wide and per-listener connection limits are not implemented yet: only per-IP connection_creation_rate quotas (kafka-configs --entity-type ips) are"
const QUOTA_CALLBACK = "client quotas resolve as Kafka's default callback does: a custom callback is not supported"
const SECURITY = "listener security settings are read from the server properties at start and cannot change dynamically"

/**
 * Kafka broker keys that promise behaviour clustermirror does not have: refused, in properties and
 * dynamically, with the reason. Keys match exactly, or by prefix where the name ends with a dot.
 */
export const BROKER_UNSUPPORTED_CONFIGS: ReadonlyMap<string, string> = new Map([
  ["log.cleaner.io.buffer.size", CLEANER_IO],
  ["log.cleaner.io.buffer.load.factor", CLEANER_IO],
  ["compression.type", "broker-side recompression is not implemented yet: batches are stored as producers send them"],
  ["replica.alter.log.dirs.io.max.bytes.per.second", LOG_DIR_THROTTLING],
  ["max.connections", QUOTAS],
  ["max.connections.per.ip", QUOTAS],
  ["max.connections.per.ip.overrides", QUOTAS],
  ["max.connection.creation.rate", QUOTAS],
  ["mirror.num.replica.fetchers", "mirror fetchers are one per source broker and not configurable yet"],
  ["log.retention.hours", "only log.retention.ms can change while brokers run"],
  ["log.retention.minutes", "only log.retention.ms can change while brokers run"],
  ["log.roll.hours", "only log.roll.ms can change while brokers run"],
  ["log.preallocate", "segment preallocation is not implemented"],
  ["auto.leader.rebalance.enable", "automatic preferred-leader balancing is not implemented yet: use ElectLeaders"],
  ["ssl.", SECURITY],
  ["sasl.", SECURITY],
  ["listener.name.", SECURITY],
  ["security.inter.broker.protocol", SECURITY],
  ["remote.log.storage.system.enable", "tiered storage is not implemented"],
  [
    "delegation.token.",
    "delegation tokens are not implemented: token requests are refused as by Kafka without a secret key"
  ],
  ["client.quota.callback.class", QUOTA_CALLBACK]
])

const unsupportedBroker = (resourceType: number, key: string): boolean =>
  resourceType === ResourceType.BROKER && unsupportedBrokerConfig(key) !== null

/** Why clustermirror refuses a Kafka broker key, or null when it does not (`BROKER_UNSUPPORTED_CONFIGS`). */
export const unsupportedBrokerConfig = (key: string): string | null => {
  const exact = BROKER_UNSUPPORTED_CONFIGS.get(key)
  if (exact !== undefined) return exact
  for (const [name, why] of BROKER_UNSUPPORTED_CONFIGS) if (name.endsWith(".") && key.startsWith(name)) return why
  return null
}

/** Mirror configs (KIP-1279 §7.3): connection to the source cluster and what to mirror. */
export const MIRROR_CONFIG_DEFS: ReadonlyMap<string, ConfigDef> = table([
  def("bootstrap.servers", "list", null),
  def("mirror.source.cluster.id", "string", null),
  def("request.timeout.ms", "int", "30000", atLeast(0)),
  def("socket.connection.setup.timeout.ms", "long", "10000"),
  def("socket.connection.setup.timeout.max.ms", "long", "30000"),
  def("connections.max.idle.ms", "long", "600000"),
  def("mirror.fetch.wait.max.ms", "int", "1000"),
  def("mirror.fetch.backoff.ms", "long", "1000"),
  def("mirror.fetch.min.bytes", "int", "1"),
  def("mirror.fetch.response.max.bytes", "int", "10485760"),
  def("mirror.fetch.max.bytes", "int", "1048576"),
  def("mirror.socket.timeout.ms", "int", "30000"),
  def("mirror.socket.receive.buffer.bytes", "int", "65536"),
  def(
    "mirror.topic.properties.exclude",
    "list",
    "follower.replication.throttled.replicas,leader.replication.throttled.replicas,message.timestamp.difference.max.ms," +
      "log.message.timestamp.before.max.ms,log.message.timestamp.after.max.ms,message.timestamp.type," +
      "unclean.leader.election.enable,min.insync.replicas"
  ),
  // Ours: a per-mirror override of the broker's refresh interval (§5.9); 0 disables the refresh.
  def("mirror.metadata.refresh.interval.ms", "long", null, atLeast(0)),
  // Ours (MirrorMaker 2's name): the replication factor of the destination topics the mirror creates;
  // unset or -1 = the default.replication.factor of the broker that forwards the start.
  def("replication.factor", "short", null, replicationFactor),
  def("mirror.topics.include", "list", "", regexList),
  def("mirror.topics.exclude", "list", "__.*", regexList),
  def("mirror.groups.include", "list", ".*", regexList),
  def("mirror.groups.exclude", "list", "", regexList),
  // The ACL sync's rules (§5.9): `resourceType;resourceName;operation;permissionType;principal`; empty: no sync.
  def("mirror.acls.include", "list", "*", AclRules.invalid),
  // The connection to the source: Kafka's client security configs (checked together by `mirrorSecurity`).
  // The Java-only ones are known keys, refused with the reason.
  def("security.protocol", "string", "PLAINTEXT", securityProtocol),
  def("security.providers", "string", null, refused("custom security providers are Java classes")),
  def("sasl.mechanism", "string", "PLAIN"),
  def("sasl.jaas.config", "password", null),
  def("sasl.client.callback.handler.class", "class", null, refused("SASL callback handlers are Java classes")),
  def("sasl.login.callback.handler.class", "class", null, refused("SASL callback handlers are Java classes")),
  def("sasl.login.class", "class", null, refused("SASL login classes are Java classes")),
  def("sasl.kerberos.service.name", "string", null, refused("GSSAPI (Kerberos) is not supported")),
  def("ssl.protocol", "string", "TLSv1.3"),
  def("ssl.provider", "string", null, refused("security providers are Java's")),
  def("ssl.cipher.suites", "list", null, refused("cipher suites are not configurable: Node's TLS defaults apply")),
  def("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3"),
  def("ssl.keystore.type", "string", null),
  def("ssl.keystore.location", "string", null),
  def("ssl.keystore.password", "password", null),
  def("ssl.key.password", "password", null),
  def("ssl.keystore.key", "password", null),
  def("ssl.keystore.certificate.chain", "password", null),
  def("ssl.truststore.type", "string", null),
  def("ssl.truststore.location", "string", null),
  def("ssl.truststore.password", "password", null),
  def("ssl.truststore.certificates", "password", null),
  def("ssl.keymanager.algorithm", "string", "SunX509"),
  def("ssl.trustmanager.algorithm", "string", "PKIX"),
  def("ssl.endpoint.identification.algorithm", "string", "https"),
  def("ssl.secure.random.implementation", "string", null, refused("the random source is Node's")),
  def("ssl.engine.factory.class", "class", null, refused("SSL engine factories are Java classes"))
])

/** Mirror keys every mirror must have (the Admin client fills the cluster id at create). */
export const MIRROR_REQUIRED_CONFIGS: ReadonlyArray<string> = ["bootstrap.servers", "mirror.source.cluster.id"]

/** Mirror keys that only filter what is mirrored; changing any other key reconnects to the source. */
export const MIRROR_FILTER_CONFIGS: ReadonlySet<string> = new Set([
  "mirror.topics.include",
  "mirror.topics.exclude",
  "mirror.groups.include",
  "mirror.groups.exclude",
  "mirror.acls.include"
])

/** The known keys of a resource type; undefined for types the controller does not store. */
export const definitions = (resourceType: number): ReadonlyMap<string, ConfigDef> | undefined => {
  switch (resourceType) {
    case ResourceType.TOPIC:
      return TOPIC_CONFIG_DEFS
    case ResourceType.BROKER:
      return BROKER_CONFIG_DEFS
    case ResourceType.CLUSTER_MIRROR:
      return MIRROR_CONFIG_DEFS
    default:
      return undefined
  }
}

/**
 * Whether a config's value is a secret: Kafka's PASSWORD type, for any resource type, including the
 * listener- and mechanism-prefixed broker keys (`listener.name.<l>.<mechanism>.sasl.jaas.config`).
 * DescribeConfigs answers these with a null value and `isSensitive`, as Kafka does; nothing shows them.
 */
export const isSensitive = (resourceType: number, key: string): boolean =>
  definitions(resourceType)?.get(key)?.type === "password" || Security.isSensitive(key)

const splitList = (v: string): ReadonlyArray<string> =>
  v
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0)

const integral = (v: string, min: bigint, max: bigint): boolean => {
  if (!/^[+-]?\d+$/.test(v)) return false
  const n = BigInt(v)
  return n >= min && n <= max
}

/** Why `value` is not a valid value of `d` (Kafka's ConfigException message), or null. */
export const validateValue = (d: ConfigDef, value: string): string | null => {
  const v = value.trim()
  // Passwords are never echoed back.
  const shown = d.type === "password" ? "[hidden]" : value
  const invalid = (why: string) => `Invalid value ${shown} for configuration ${d.name}: ${why}`
  switch (d.type) {
    case "boolean":
      if (v.toLowerCase() !== "true" && v.toLowerCase() !== "false")
        return invalid("Expected value to be either true or false")
      break
    case "short":
      if (!integral(v, -32768n, 32767n)) return invalid("Not a number of type SHORT")
      break
    case "int":
      if (!integral(v, -2147483648n, 2147483647n)) return invalid("Not a number of type INT")
      break
    case "long":
      if (!integral(v, -9223372036854775808n, 9223372036854775807n)) return invalid("Not a number of type LONG")
      break
    case "double":
      if (v === "" || !Number.isFinite(Number(v))) return invalid("Not a number of type DOUBLE")
      break
    default:
      break
  }
  const why = d.validator?.(value) ?? null
  return why === null ? null : invalid(why)
}

/**
 * Why a key that is not a dynamic config of its resource type cannot be altered: for brokers, a read-only
 * key is INVALID_REQUEST (Kafka's message), an unsupported one INVALID_CONFIG with the reason.
 */
const notAlterable = (resourceType: number, key: string): Failure => {
  if (resourceType === ResourceType.BROKER) {
    const why = unsupportedBrokerConfig(key)
    if (why !== null) return failure(Errors.ErrorCode.INVALID_CONFIG, `Broker config ${key} is not supported: ${why}`)
    if (BROKER_READ_ONLY_CONFIGS.has(key))
      return failure(Errors.ErrorCode.INVALID_REQUEST, `Cannot update these configs dynamically: [${key}]`)
  }
  return failure(Errors.ErrorCode.INVALID_CONFIG, unknownKey(resourceType, key))
}

/** A key the cluster default alone may set, given for one broker. */
const clusterOnly = (resourceType: number, resourceName: string, key: string): Failure | null =>
  resourceType === ResourceType.BROKER && resourceName !== "" && BROKER_CLUSTER_ONLY_CONFIGS.has(key)
    ? failure(
        Errors.ErrorCode.INVALID_CONFIG,
        `Broker config ${key} is applied by the controller: set it as the cluster default (an empty broker name) or on the topic`
      )
    : null

const unknownKey = (resourceType: number, key: string): string =>
  resourceType === ResourceType.TOPIC
    ? `Unknown topic config name: ${key}`
    : resourceType === ResourceType.BROKER
      ? `Unknown broker config name: ${key}`
      : `Unknown mirror configuration: ${key}`

/** Why a topic config entry is invalid (unknown key, bad value), or null; a null value is a deletion. */
export const validateTopicConfig = (name: string, value: string | null): string | null => {
  const d = TOPIC_CONFIG_DEFS.get(name)
  if (d === undefined) return unknownKey(ResourceType.TOPIC, name)
  return value === null ? null : validateValue(d, value)
}

// ---------------------------------------------------------------------------------------------------
// State and replay

type Entries = ReadonlyMap<string, string>

export interface State {
  /** Entries by resource type, then resource name, then key. */
  readonly resources: ReadonlyMap<number, ReadonlyMap<string, Entries>>
  /** Topic names by id, so that a RemoveTopicRecord can drop the topic's configs. */
  readonly topicNames: ReadonlyMap<string, string>
}

export const empty: State = { resources: PersistentMap.empty(), topicNames: PersistentMap.empty() }

/** The records this module replays. */
export type ConfigurationRecord = MetadataRecords.MetadataRecordOf<"ConfigRecord" | "TopicRecord" | "RemoveTopicRecord">

const noEntries: Entries = new Map()

/**
 * The state a batch of records is being replayed into. The resource map, each resource type's map by
 * name and the topic names are persistent maps (structural sharing), transient within the batch: one
 * record (a topic's config change) costs O(log n) whatever the number of topics, and a batch edits the
 * paths it copied in place. The state it started from is never changed.
 */
class Draft {
  private resources: TransientMap<number, ReadonlyMap<string, Entries>>
  /** Resource types whose map by name this batch changed. */
  private readonly byNames = new Map<number, TransientMap<string, Entries>>()
  private names: TransientMap<string, string>
  private changed = false

  constructor(private readonly base: State) {
    this.resources = PersistentMap.of(base.resources).transient()
    this.names = PersistentMap.of(base.topicNames).transient()
  }

  configsOf(resourceType: number, resourceName: string): Entries {
    return (this.byNames.get(resourceType) ?? this.resources.get(resourceType))?.get(resourceName) ?? noEntries
  }
  topicName(topicId: string): string | undefined {
    return this.names.get(topicId)
  }
  setEntries(resourceType: number, resourceName: string, entries: Entries): void {
    this.changed = true
    let byName = this.byNames.get(resourceType)
    if (byName === undefined) {
      byName = PersistentMap.of(this.resources.get(resourceType) ?? PersistentMap.empty<string, Entries>()).transient()
      this.byNames.set(resourceType, byName)
    }
    if (entries.size === 0) byName.delete(resourceName)
    else byName.set(resourceName, entries)
    // A resource type left without resources goes (and comes back last), as in a `Map`.
    if (byName.size === 0) {
      this.resources.delete(resourceType)
      this.byNames.delete(resourceType)
    }
  }
  setName(topicId: string, name: string | undefined): void {
    this.changed = true
    if (name === undefined) this.names.delete(topicId)
    else this.names.set(topicId, name)
  }
  result(): State {
    if (!this.changed) return this.base
    for (const [resourceType, byName] of this.byNames) this.resources.set(resourceType, byName.persistent())
    return { resources: this.resources.persistent(), topicNames: this.names.persistent() }
  }
}

/**
 * Applies a ConfigRecord (a null value deletes the key), a TopicRecord (remembers the name) or a
 * RemoveTopicRecord (drops the topic's configs). Dies on a RemoveTopicRecord for an unknown topic id.
 */
export const replay = (state: State, record: ConfigurationRecord): State => replayAll(state, [record])

/** Applies records in order: the same state as `replay` one record at a time, in time linear in the batch. */
export const replayAll = (state: State, records: ReadonlyArray<ConfigurationRecord>): State => {
  const draft = new Draft(state)
  for (const record of records) apply(draft, record)
  return draft.result()
}

const apply = (draft: Draft, record: ConfigurationRecord): void => {
  switch (record.type) {
    case "ConfigRecord": {
      const { resourceType, resourceName, name, value } = record.data
      const entries = new Map(draft.configsOf(resourceType, resourceName))
      if (value === null) entries.delete(name)
      else entries.set(name, value)
      draft.setEntries(resourceType, resourceName, entries)
      return
    }
    case "TopicRecord":
      draft.setName(record.data.topicId, record.data.name)
      return
    case "RemoveTopicRecord": {
      const name = draft.topicName(record.data.topicId)
      if (name === undefined) throw new Error(`RemoveTopicRecord for unknown topic id ${record.data.topicId}`)
      draft.setName(record.data.topicId, undefined)
      draft.setEntries(ResourceType.TOPIC, name, noEntries)
      return
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Queries

/** The entries set on one resource (defaults not included). */
export const configsOf = (state: State, resourceType: number, resourceName: string): Entries =>
  state.resources.get(resourceType)?.get(resourceName) ?? noEntries

/** The names of all cluster mirrors, sorted. */
export const mirrorNames = (state: State): ReadonlyArray<string> =>
  [...(state.resources.get(ResourceType.CLUSTER_MIRROR)?.keys() ?? [])].sort()

/** A mirror exists while it has at least one config entry (KIP-1279 §3.3). */
export const mirrorExists = (state: State, name: string): boolean =>
  configsOf(state, ResourceType.CLUSTER_MIRROR, name).size > 0

// ---------------------------------------------------------------------------------------------------
// Decide

export interface AlterContext {
  /** Whether a topic of that name exists (replication owns topics). */
  readonly topicExists: (name: string) => boolean
}

/** The outcome for one resource, as the AlterConfigs and IncrementalAlterConfigs responses carry it. */
export interface ResourceResponse {
  readonly resourceType: number
  readonly resourceName: string
  readonly errorCode: number
  readonly errorMessage: string | null
}

type Failure = { readonly errorCode: number; readonly errorMessage: string }

const failure = (errorCode: number, errorMessage: string): Failure => ({ errorCode, errorMessage })

const checkResource = (state: State, resourceType: number, resourceName: string, ctx: AlterContext): Failure | null => {
  switch (resourceType) {
    case ResourceType.TOPIC: {
      const why = validateTopicName(resourceName)
      if (why !== null) return failure(Errors.ErrorCode.INVALID_TOPIC_EXCEPTION, why)
      if (!ctx.topicExists(resourceName))
        return failure(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${resourceName}' does not exist.`)
      return null
    }
    case ResourceType.BROKER:
      return resourceName === "" || /^\d+$/.test(resourceName)
        ? null
        : failure(Errors.ErrorCode.INVALID_REQUEST, `Illegal non-integral BROKER resource type name ${resourceName}`)
    case ResourceType.CLUSTER_MIRROR:
      if (resourceName === "")
        return failure(Errors.ErrorCode.INVALID_REQUEST, "A cluster mirror name cannot be empty.")
      if (!mirrorExists(state, resourceName))
        return failure(Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR, `The cluster mirror '${resourceName}' does not exist.`)
      return null
    case CLIENT_METRICS:
      return failure(
        Errors.ErrorCode.INVALID_REQUEST,
        "Client metrics subscriptions (resource type CLIENT_METRICS) are not implemented: brokers push no telemetry"
      )
    default:
      return failure(Errors.ErrorCode.INVALID_REQUEST, `Unsupported config resource type ${resourceType}`)
  }
}

/**
 * Why a mirror's security configs cannot connect to its source (KIP-1279 §7.3), checked together as the
 * mirror's brokers will read them, except the key and trust store files, which only the brokers hold:
 * a broker reads them when it connects, and a file it cannot use fails the mirror's partitions with
 * the key and the path. The message names the key, and never shows a password's value.
 */
export const mirrorSecurity = (entries: Entries): string | null => {
  const security = new Map([...entries].filter(([k]) => Security.isSecurityConfig(k)))
  const checked = Security.validate(security)
  if (Either.isRight(checked)) return null
  const { key, reason } = checked.left
  const value = entries.get(key)
  if (value === undefined) return `Invalid configuration ${key}: ${reason}`
  const shown = Security.isSensitive(key) || MIRROR_CONFIG_DEFS.get(key)?.type === "password" ? "[hidden]" : value
  return `Invalid value ${shown} for configuration ${key}: ${reason}`
}

const missingRequired = (resourceType: number, entries: Entries): Failure | null => {
  if (resourceType !== ResourceType.CLUSTER_MIRROR) return null
  // A bad security config first: a client cannot have looked the source's cluster id up with it.
  const insecure = mirrorSecurity(entries)
  if (insecure !== null) return failure(Errors.ErrorCode.INVALID_CONFIG, insecure)
  const missing = MIRROR_REQUIRED_CONFIGS.find((k) => (entries.get(k) ?? "").trim() === "")
  return missing === undefined
    ? null
    : failure(
        Errors.ErrorCode.INVALID_REQUEST,
        `Missing required configuration "${missing}" which has no default value.`
      )
}

/**
 * The ConfigRecords that take a resource from `current` to `next`: changed keys only, except that
 * broker resources get a record for every touched key, so that brokers re-read them as Kafka's do.
 */
const diff = (
  resourceType: number,
  resourceName: string,
  current: Entries,
  next: Entries,
  touched: ReadonlyArray<string>
): ReadonlyArray<MetadataRecords.MetadataRecord> => {
  const keys = [...new Set([...touched, ...[...current.keys()].filter((k) => !next.has(k))])]
  return keys
    .filter((k) => resourceType === ResourceType.BROKER || current.get(k) !== next.get(k))
    .map((name) =>
      MetadataRecords.make("ConfigRecord", { resourceType, resourceName, name, value: next.get(name) ?? null })
    )
}

interface ResourceKey {
  readonly resourceType: number
  readonly resourceName: string
}

/** Runs `alter` for every resource named once; resources named twice fail with INVALID_REQUEST. */
const alterEach = <Res extends ResourceKey>(
  resources: ReadonlyArray<Res>,
  validateOnly: boolean,
  alter: (resource: Res) => Either.Either<ReadonlyArray<MetadataRecords.MetadataRecord>, Failure>
): ControllerResult.ControllerResult<ReadonlyArray<ResourceResponse>> => {
  const count = new Map<string, number>()
  const keyOf = (r: ResourceKey) => `${r.resourceType}:${r.resourceName}`
  for (const r of resources) count.set(keyOf(r), (count.get(keyOf(r)) ?? 0) + 1)
  const records: Array<MetadataRecords.MetadataRecord> = []
  const responses = resources.map((r): ResourceResponse => {
    const head = { resourceType: r.resourceType, resourceName: r.resourceName }
    if ((count.get(keyOf(r)) ?? 0) > 1)
      return { ...head, errorCode: Errors.ErrorCode.INVALID_REQUEST, errorMessage: "Duplicate resource." }
    const outcome = alter(r)
    if (Either.isLeft(outcome)) return { ...head, ...outcome.left }
    records.push(...outcome.right)
    return { ...head, errorCode: Errors.ErrorCode.NONE, errorMessage: null }
  })
  return ControllerResult.of(validateOnly ? [] : records, responses)
}

const duplicateKey = (names: ReadonlyArray<string>): boolean => new Set(names).size !== names.length

/**
 * IncrementalAlterConfigs (44): per resource, SET / DELETE / APPEND / SUBTRACT on single keys, and
 * a ConfigRecord for every key whose value changes. Each resource succeeds or fails on its own
 * (partial success): INVALID_REQUEST for a duplicate resource or key, a null value outside DELETE, an
 * unknown operation, an unsupported resource type or a mirror left without a required key;
 * INVALID_CONFIG for unknown keys, bad values, APPEND/SUBTRACT on a non-list key;
 * INVALID_TOPIC_EXCEPTION / UNKNOWN_TOPIC_OR_PARTITION for a bad or unknown topic;
 * UNKNOWN_CLUSTER_MIRROR for a mirror that does not exist. `validateOnly` returns no records.
 */
export const incrementalAlterConfigs = (
  state: State,
  resources: IncrementalAlterConfigs.Request["resources"],
  validateOnly: boolean,
  ctx: AlterContext
): ControllerResult.ControllerResult<ReadonlyArray<ResourceResponse>> =>
  alterEach(resources, validateOnly, (r) => {
    const bad = checkResource(state, r.resourceType, r.resourceName, ctx)
    if (bad !== null) return Either.left(bad)
    if (duplicateKey(r.configs.map((c) => c.name)))
      return Either.left(failure(Errors.ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"))
    const defs = definitions(r.resourceType)!
    const current = configsOf(state, r.resourceType, r.resourceName)
    const next = new Map(current)
    const unchanged = new Set<string>()
    for (const c of r.configs) {
      const d = defs.get(c.name)
      // Deleting a broker key that can never be set (the log-dir throttle kafka-reassign-partitions
      // clears after a reassignment) leaves nothing to change.
      if (d === undefined && c.configOperation === OpType.DELETE && unsupportedBroker(r.resourceType, c.name)) {
        unchanged.add(c.name)
        continue
      }
      if (d === undefined) return Either.left(notAlterable(r.resourceType, c.name))
      if (c.configOperation === OpType.DELETE) {
        next.delete(c.name)
        continue
      }
      if (c.configOperation < OpType.SET || c.configOperation > OpType.SUBTRACT)
        return Either.left(failure(Errors.ErrorCode.INVALID_REQUEST, `Unknown operation type ${c.configOperation}`))
      if (c.value === null)
        return Either.left(failure(Errors.ErrorCode.INVALID_REQUEST, `Null value not supported for : ${c.name}`))
      let value = c.value
      if (c.configOperation !== OpType.SET) {
        const op = c.configOperation === OpType.APPEND ? "APPEND" : "SUBTRACT"
        if (d.type !== "list")
          return Either.left(
            failure(Errors.ErrorCode.INVALID_CONFIG, `Can't ${op} to key ${c.name} because its type is not LIST.`)
          )
        const old = splitList(next.get(c.name) ?? d.default ?? "")
        const given = splitList(c.value)
        value = (
          op === "APPEND" ? [...old, ...given.filter((x) => !old.includes(x))] : old.filter((x) => !given.includes(x))
        ).join(",")
      }
      const why = validateValue(d, value)
      if (why !== null) return Either.left(failure(Errors.ErrorCode.INVALID_CONFIG, why))
      const only = clusterOnly(r.resourceType, r.resourceName, c.name)
      if (only !== null) return Either.left(only)
      next.set(c.name, value)
    }
    const missing = missingRequired(r.resourceType, next)
    if (missing !== null) return Either.left(missing)
    return Either.right(
      diff(
        r.resourceType,
        r.resourceName,
        current,
        next,
        r.configs.flatMap((c) => (unchanged.has(c.name) ? [] : [c.name]))
      )
    )
  })

/** A resource of AlterConfigs (33): its complete new set of entries. */
export interface LegacyResource {
  readonly resourceType: number
  readonly resourceName: string
  readonly configs: ReadonlyArray<{ readonly name: string; readonly value: string | null }>
}

/**
 * AlterConfigs (33): per resource, the given entries replace the whole set: ConfigRecords for new
 * or changed keys and deletions for keys not given (a null value also deletes). Errors per resource
 * as `incrementalAlterConfigs`.
 */
export const legacyAlterConfigs = (
  state: State,
  resources: ReadonlyArray<LegacyResource>,
  validateOnly: boolean,
  ctx: AlterContext
): ControllerResult.ControllerResult<ReadonlyArray<ResourceResponse>> =>
  alterEach(resources, validateOnly, (r) => {
    const bad = checkResource(state, r.resourceType, r.resourceName, ctx)
    if (bad !== null) return Either.left(bad)
    if (duplicateKey(r.configs.map((c) => c.name)))
      return Either.left(failure(Errors.ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"))
    const defs = definitions(r.resourceType)!
    const next = new Map<string, string>()
    for (const c of r.configs) {
      const d = defs.get(c.name)
      if (d === undefined) return Either.left(notAlterable(r.resourceType, c.name))
      if (c.value === null) continue
      const why = validateValue(d, c.value)
      if (why !== null) return Either.left(failure(Errors.ErrorCode.INVALID_CONFIG, why))
      const only = clusterOnly(r.resourceType, r.resourceName, c.name)
      if (only !== null) return Either.left(only)
      next.set(c.name, c.value)
    }
    const missing = missingRequired(r.resourceType, next)
    if (missing !== null) return Either.left(missing)
    const current = configsOf(state, r.resourceType, r.resourceName)
    return Either.right(diff(r.resourceType, r.resourceName, current, next, [...next.keys()]))
  })

export interface ConfigEntry {
  readonly name: string
  readonly value: string | null
}

const createRecords = (
  resourceType: number,
  resourceName: string,
  configs: ReadonlyArray<ConfigEntry>
): Either.Either<
  ReadonlyArray<MetadataRecords.MetadataRecordOf<"ConfigRecord">>,
  ControllerError.InvalidConfig | ControllerError.InvalidRequest
> => {
  if (duplicateKey(configs.map((c) => c.name)))
    return Either.left(new ControllerError.InvalidRequest({ message: "Error due to duplicate config keys" }))
  const defs = definitions(resourceType)!
  const records: Array<MetadataRecords.MetadataRecordOf<"ConfigRecord">> = []
  for (const c of configs) {
    const d = defs.get(c.name)
    if (d === undefined)
      return Either.left(new ControllerError.InvalidConfig({ message: unknownKey(resourceType, c.name) }))
    if (c.value === null)
      return Either.left(
        new ControllerError.InvalidConfig({
          message:
            resourceType === ResourceType.TOPIC
              ? `Null value not supported for topic configs: ${c.name}`
              : `Null value not supported for : ${c.name}`
        })
      )
    const why = validateValue(d, c.value)
    if (why !== null) return Either.left(new ControllerError.InvalidConfig({ message: why }))
    records.push(MetadataRecords.make("ConfigRecord", { resourceType, resourceName, name: c.name, value: c.value }))
  }
  return Either.right(records)
}

/**
 * The ConfigRecords of a topic being created (CreateTopics configs): INVALID_CONFIG for an unknown
 * key, a bad or null value; INVALID_REQUEST for a key given twice. The caller checks the name.
 */
export const createTopicConfigRecords = (
  name: string,
  configs: ReadonlyArray<ConfigEntry>
): Either.Either<
  ReadonlyArray<MetadataRecords.MetadataRecordOf<"ConfigRecord">>,
  ControllerError.InvalidConfig | ControllerError.InvalidRequest
> => createRecords(ResourceType.TOPIC, name, configs)

/**
 * The ConfigRecords of a mirror being created (CreateClusterMirror): as `createTopicConfigRecords`,
 * plus INVALID_REQUEST when `bootstrap.servers` or `mirror.source.cluster.id` is missing. The caller
 * checks that no mirror of that name exists.
 */
export const createMirrorConfigRecords = (
  name: string,
  configs: ReadonlyArray<ConfigEntry>
): Either.Either<
  ReadonlyArray<MetadataRecords.MetadataRecordOf<"ConfigRecord">>,
  ControllerError.InvalidConfig | ControllerError.InvalidRequest
> => {
  if (name === "")
    return Either.left(new ControllerError.InvalidRequest({ message: "A cluster mirror name cannot be empty." }))
  return Either.flatMap(createRecords(ResourceType.CLUSTER_MIRROR, name, configs), (records) => {
    const missing = missingRequired(
      ResourceType.CLUSTER_MIRROR,
      new Map(records.map((r) => [r.data.name, r.data.value ?? ""]))
    )
    if (missing === null) return Either.right(records)
    return Either.left(
      missing.errorCode === Errors.ErrorCode.INVALID_CONFIG
        ? new ControllerError.InvalidConfig({ message: missing.errorMessage })
        : new ControllerError.InvalidRequest({ message: missing.errorMessage })
    )
  })
}

/** Tombstones for every entry of a mirror (DeleteClusterMirror): the mirror stops existing. */
export const deleteMirrorConfigRecords = (
  state: State,
  name: string
): ReadonlyArray<MetadataRecords.MetadataRecordOf<"ConfigRecord">> =>
  [...configsOf(state, ResourceType.CLUSTER_MIRROR, name).keys()].map((key) =>
    MetadataRecords.make("ConfigRecord", {
      resourceType: ResourceType.CLUSTER_MIRROR,
      resourceName: name,
      name: key,
      value: null
    })
  )
