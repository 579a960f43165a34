/**
 * Broker configuration: Kafka's broker config names, their defaults, and parsing from a Java-style
 * properties file plus command-line overrides. One table of parsers serves the properties file and the
 * dynamic broker configs of the metadata log (`withDynamic`). Unknown keys, and Kafka keys that promise
 * behaviour clustermirror does not have, are rejected with a message naming the key and why; thread
 * counts and socket buffer sizes are accepted without effect (see the README).
 */
import { StandardAuthorizer } from "@clustermirror/authorizer"
import { ConfigurationControl } from "@clustermirror/controller"
import { Context } from "effect"
import * as fs from "node:fs"
import * as SaslConfig from "./SaslConfig.js"
import * as SslConfig from "./SslConfig.js"

/** Kafka's security protocols (`listener.security.protocol.map` values). */
export type SecurityProtocol = "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL"

/** One `listeners` (or `advertised.listeners`) entry, its protocol from `listener.security.protocol.map`. */
export interface Listener {
  /** Upper-case, as Kafka normalises listener names. */
  readonly name: string
  readonly host: string
  /** 0: any free port (advertised: the port the listener bound). */
  readonly port: number
  readonly securityProtocol: SecurityProtocol
}

export interface BrokerConfig {
  readonly nodeId: number
  /** The inter-broker listener's host and port (see `listenersOf`: they override that entry of `listeners`). */
  readonly host: string
  readonly port: number
  /** The inter-broker listener's advertised host (advertised.listeners' host). */
  readonly advertisedHost: string
  /** `listeners`, each with its security protocol. */
  readonly listeners: ReadonlyArray<Listener>
  /** `advertised.listeners` per listener name; a listener not named there advertises its own host and port. */
  readonly advertisedListeners: ReadonlyArray<Listener>
  /** `listener.security.protocol.map` as in force (Kafka's default, plus the controller listeners' defaults). */
  readonly listenerSecurityProtocolMap: ReadonlyMap<string, SecurityProtocol>
  /** `inter.broker.listener.name` (or the listener of `security.inter.broker.protocol`); null on a controller only. */
  readonly interBrokerListenerName: string | null
  /** `controller.listener.names` (default CONTROLLER). */
  readonly controllerListenerNames: ReadonlyArray<string>
  /** The TLS settings of every listener whose protocol uses TLS, by listener name. */
  readonly ssl: ReadonlyMap<string, SslConfig.SslSettings>
  readonly dataDir: string
  readonly autoCreateTopicsEnable: boolean
  /** `transaction.partition.verification.enable` (KIP-890): leaders verify a transaction's first batch with its coordinator. */
  readonly transactionPartitionVerificationEnable: boolean
  readonly numPartitions: number
  readonly defaultReplicationFactor: number
  readonly socketRequestMaxBytes: number
  /** `max.request.partition.size.limit` (2000): at most this many partitions in one DescribeTopicPartitions answer. */
  readonly maxRequestPartitionSizeLimit: number
  readonly messageMaxBytes: number
  readonly logSegmentBytes: number
  readonly logRetentionMs: number
  readonly logRetentionBytes: number
  readonly logRetentionCheckIntervalMs: number
  readonly logFlushIntervalMessages: number
  readonly logFlushIntervalMs: number
  /** `log.roll.ms` / `log.roll.hours`: the default `segment.ms`. */
  readonly logRollMs: number
  readonly logMessageTimestampType: "CreateTime" | "LogAppendTime"
  /** `log.cleanup.policy`: the default `cleanup.policy` of topics ("delete", "compact" or both). */
  readonly logCleanupPolicy: string
  /** `log.cleaner.enable` */
  readonly logCleanerEnable: boolean
  /** `log.cleaner.threads`: concurrent cleaning passes (0: none). */
  readonly logCleanerThreads: number
  /** `log.cleaner.dedupe.buffer.size`: bytes of key → offset maps over all cleaner threads. */
  readonly logCleanerDedupeBufferSize: number
  /** `log.cleaner.io.max.bytes.per.second` */
  readonly logCleanerIoMaxBytesPerSecond: number
  /** `log.cleaner.backoff.ms` */
  readonly logCleanerBackoffMs: number
  /** `log.cleaner.delete.retention.ms`: the default `delete.retention.ms`. */
  readonly logCleanerDeleteRetentionMs: number
  /** `log.cleaner.min.cleanable.ratio`: the default `min.cleanable.dirty.ratio`. */
  readonly logCleanerMinCleanableRatio: number
  /** `log.cleaner.min.compaction.lag.ms`: the default `min.compaction.lag.ms`. */
  readonly logCleanerMinCompactionLagMs: number
  /** `log.cleaner.max.compaction.lag.ms`: the default `max.compaction.lag.ms`. */
  readonly logCleanerMaxCompactionLagMs: number
  readonly offsetsTopicNumPartitions: number
  readonly groupInitialRebalanceDelayMs: number
  readonly groupMinSessionTimeoutMs: number
  readonly groupMaxSessionTimeoutMs: number
  /** `group.consumer.session.timeout.ms`: how long a member of a consumer group (KIP-848) lives without a heartbeat. */
  readonly groupConsumerSessionTimeoutMs: number
  /** `group.consumer.heartbeat.interval.ms`: the heartbeat interval given to members of consumer groups. */
  readonly groupConsumerHeartbeatIntervalMs: number
  /** `group.consumer.assignors`: the server-side assignors (`uniform`, `range`), the first one the default. */
  readonly groupConsumerAssignors: ReadonlyArray<string>
  /** `group.consumer.max.size`: the most members a consumer group takes. */
  readonly groupConsumerMaxSize: number
  /**
   * `group.consumer.migration.policy`: `disabled`, `upgrade`, `downgrade` or `bidirectional` (default),
   * which conversions between classic and consumer groups the coordinator may make.
   */
  readonly groupConsumerMigrationPolicy: "disabled" | "upgrade" | "downgrade" | "bidirectional"
  /** `process.roles`: empty for a single node that keeps its own metadata. */
  readonly processRoles: ReadonlyArray<"broker" | "controller">
  /** The first controller listener (`controller.listener.names` in `listeners`): where a controller role listens. */
  readonly controllerHost: string
  readonly controllerPort: number
  /**
   * The first of `controllerBootstrapServers`: where a broker first looks for the controller (set directly
   * by the embedded cluster and tests).
   */
  readonly controllerBootstrap: { readonly host: string; readonly port: number } | null
  /**
   * `controller.quorum.bootstrap.servers` (else the endpoints of `controller.quorum.voters`): the controllers a
   * broker tries, in turn, until it reaches the active one.
   */
  readonly controllerBootstrapServers: ReadonlyArray<{ readonly host: string; readonly port: number }>
  /** `controller.quorum.voters`: the static quorum of controllers, `id@host:port` each (KRaft). */
  readonly controllerQuorumVoters: ReadonlyArray<{ readonly id: number; readonly host: string; readonly port: number }>
  /** `controller.quorum.election.timeout.ms` (1000). */
  readonly controllerQuorumElectionTimeoutMs: number
  /** `controller.quorum.fetch.timeout.ms` (2000). */
  readonly controllerQuorumFetchTimeoutMs: number
  /** `controller.quorum.election.backoff.max.ms` (1000). */
  readonly controllerQuorumElectionBackoffMaxMs: number
  /** `controller.quorum.request.timeout.ms` (2000). */
  readonly controllerQuorumRequestTimeoutMs: number
  readonly brokerHeartbeatIntervalMs: number
  readonly brokerSessionTimeoutMs: number
  readonly offsetsTopicReplicationFactor: number
  /** `offsets.topic.segment.bytes`: the `segment.bytes` of `__consumer_offsets` when it is created. */
  readonly offsetsTopicSegmentBytes: number
  /** `transaction.state.log.segment.bytes`: the `segment.bytes` of `__transaction_state` when it is created. */
  readonly transactionStateLogSegmentBytes: number
  /** `transaction.state.log.num.partitions`: the partitions of `__transaction_state` when it is created. */
  readonly transactionStateLogNumPartitions: number
  /** `transaction.state.log.replication.factor`, capped to the live brokers when `__transaction_state` is created. */
  readonly transactionStateLogReplicationFactor: number
  /** `transaction.state.log.min.isr`: the `min.insync.replicas` of `__transaction_state`. */
  readonly transactionStateLogMinIsr: number
  /** `transaction.max.timeout.ms`: InitProducerId with a longer `transaction.timeout.ms` is refused. */
  readonly transactionMaxTimeoutMs: number
  /** `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how often timed-out transactions are aborted. */
  readonly transactionAbortTimedOutTransactionCleanupIntervalMs: number
  /** `transactional.id.expiration.ms`: idle transactional ids are removed after this long. */
  readonly transactionalIdExpirationMs: number
  readonly replicaLagTimeMaxMs: number
  /** `replica.high.watermark.checkpoint.interval.ms`: how often the partitions' high watermarks are written. */
  readonly replicaHighWatermarkCheckpointIntervalMs: number
  readonly uncleanLeaderElectionEnable: boolean
  readonly minInsyncReplicas: number
  /** `auto.leader.rebalance.enable` (controller): move leadership back to preferred replicas periodically. */
  readonly autoLeaderRebalanceEnable: boolean
  /** `leader.imbalance.check.interval.seconds` (controller): how often the leader imbalance is checked. */
  readonly leaderImbalanceCheckIntervalSeconds: number
  /** `leader.imbalance.per.broker.percentage` (controller): the imbalance a broker may have before a rebalance. */
  readonly leaderImbalancePerBrokerPercentage: number
  /** `cluster.id`: the id every node of a cluster is formatted with; generated by a new single node. */
  readonly clusterId: string | null
  /** `mirror.state.topic.num.partitions` (KIP-1279 §7.2): partitions of `__mirror_state`, fixed once created. */
  readonly mirrorStateTopicNumPartitions: number
  /** `mirror.state.topic.replication.factor`: capped by the live brokers when the topic is created. */
  readonly mirrorStateTopicReplicationFactor: number
  /** `mirror.metadata.refresh.interval.ms` (§5.9): the periodic mirror refresh; 0 disables it. Dynamic too. */
  readonly mirrorMetadataRefreshIntervalMs: number
  /** `leader.replication.throttled.rate` (dynamic): bytes/s a leader sends to out-of-sync throttled replicas. */
  readonly leaderReplicationThrottledRate: number
  /** `follower.replication.throttled.rate` (dynamic): bytes/s a follower fetches for its throttled replicas. */
  readonly followerReplicationThrottledRate: number
  /** `mirror.replication.throttled.rate` (dynamic, KIP-1279): bytes/s a mirror leader fetches for throttled partitions. */
  readonly mirrorReplicationThrottledRate: number
  /** `replication.quota.window.num`: the samples of the replication quotas' rate. */
  readonly replicationQuotaWindowNum: number
  /** `replication.quota.window.size.seconds`: the length of each sample. */
  readonly replicationQuotaWindowSizeSeconds: number
  /** `quota.window.num`: the samples of the client quotas' rates (bytes, request time, connections). */
  readonly quotaWindowNum: number
  /** `quota.window.size.seconds`: the length of each sample. */
  readonly quotaWindowSizeSeconds: number
  /** `controller.quota.window.num`: the samples whose span makes the controller mutation quota's burst. */
  readonly controllerQuotaWindowNum: number
  /** `controller.quota.window.size.seconds`: the length of each sample. */
  readonly controllerQuotaWindowSizeSeconds: number
  /** `mirror.failed.retry.initial.backoff.ms`: the delay before the first retry of a FAILED partition. */
  readonly mirrorFailedRetryInitialBackoffMs: number
  /** `mirror.failed.retry.max.backoff.ms`: the longest delay between retries. */
  readonly mirrorFailedRetryMaxBackoffMs: number
  /** `mirror.failed.retry.max.attempts`: retries before a FAILED partition waits for an operator; 0 disables. */
  readonly mirrorFailedRetryMaxAttempts: number
  /** `metrics.port` (our own key): the Prometheus endpoint's port on the broker host; 0 turns it off. */
  readonly metricsPort: number
  /**
   * `authorizer.class.name`: the StandardAuthorizer (ACLs in the metadata log) when set to its class
   * name; null without an authorizer (everything is allowed, the ACL APIs answer SECURITY_DISABLED).
   */
  readonly authorizer: StandardAuthorizer.AuthorizerConfig | null
  /** `sasl.enabled.mechanisms` (Kafka's default GSSAPI, which we refuse once a SASL listener needs it). */
  readonly saslEnabledMechanisms: ReadonlyArray<string>
  /** `sasl.mechanism.inter.broker.protocol`: how this broker authenticates to the other brokers. */
  readonly saslMechanismInterBrokerProtocol: string
  /** `sasl.mechanism.controller.protocol`: how this broker authenticates to the controller. */
  readonly saslMechanismControllerProtocol: string
  /**
   * `mirror.admin.listener.name` (KIP-1279 §7.2): the listener of this broker its mirrors' destination
   * admin connects to; null: the inter-broker listener.
   */
  readonly mirrorAdminListenerName: string | null
  /** `sasl.mechanism.mirror.admin.protocol`: that admin's SASL mechanism; null: `sasl.mechanism.inter.broker.protocol`. */
  readonly saslMechanismMirrorAdminProtocol: string | null
  /** `connections.max.reauth.ms` (KIP-368): the SASL session lifetime; 0 never expires. */
  readonly connectionsMaxReauthMs: number
  /** `--add-scram` (as `kafka-storage format --add-scram`): credentials a new metadata log starts with. */
  readonly bootstrapScramCredentials: ReadonlyArray<SaslConfig.BootstrapScramCredential>
  /** The keys and values this config was read from (properties file and overrides): STATIC_BROKER_CONFIG. */
  readonly properties: ReadonlyMap<string, string>
}

export const BrokerConfig = Context.GenericTag<BrokerConfig>("@clustermirror/broker-config/BrokerConfig")

const HOUR = 60 * 60 * 1000

export const defaults: BrokerConfig = {
  nodeId: 0,
  host: "127.0.0.1",
  port: 9092,
  advertisedHost: "127.0.0.1",
  listeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9092, securityProtocol: "PLAINTEXT" }],
  advertisedListeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9092, securityProtocol: "PLAINTEXT" }],
  listenerSecurityProtocolMap: new Map<string, SecurityProtocol>([
    ["PLAINTEXT", "PLAINTEXT"],
    ["SSL", "SSL"],
    ["SASL_PLAINTEXT", "SASL_PLAINTEXT"],
    ["SASL_SSL", "SASL_SSL"],
    ["CONTROLLER", "PLAINTEXT"]
  ]),
  interBrokerListenerName: "PLAINTEXT",
  controllerListenerNames: ["CONTROLLER"],
  ssl: new Map(),
  dataDir: "./data",
  autoCreateTopicsEnable: true,
  transactionPartitionVerificationEnable: true,
  numPartitions: 1,
  defaultReplicationFactor: 1,
  socketRequestMaxBytes: 104857600,
  maxRequestPartitionSizeLimit: 2000,
  messageMaxBytes: 1048588,
  logSegmentBytes: 1024 * 1024 * 1024,
  logRetentionMs: 168 * HOUR,
  logRetentionBytes: -1,
  logRetentionCheckIntervalMs: 5 * 60 * 1000,
  logFlushIntervalMessages: Number.MAX_SAFE_INTEGER,
  logFlushIntervalMs: Number.MAX_SAFE_INTEGER,
  logRollMs: 168 * HOUR,
  logMessageTimestampType: "CreateTime",
  logCleanupPolicy: "delete",
  logCleanerEnable: true,
  logCleanerThreads: 1,
  logCleanerDedupeBufferSize: 128 * 1024 * 1024,
  logCleanerIoMaxBytesPerSecond: Number.MAX_VALUE,
  logCleanerBackoffMs: 15_000,
  logCleanerDeleteRetentionMs: 24 * HOUR,
  logCleanerMinCleanableRatio: 0.5,
  logCleanerMinCompactionLagMs: 0,
  logCleanerMaxCompactionLagMs: Number.MAX_SAFE_INTEGER,
  offsetsTopicNumPartitions: 1,
  groupInitialRebalanceDelayMs: 3000,
  groupMinSessionTimeoutMs: 6000,
  groupMaxSessionTimeoutMs: 1800000,
  groupConsumerSessionTimeoutMs: 45000,
  groupConsumerHeartbeatIntervalMs: 5000,
  groupConsumerAssignors: ["uniform", "range"],
  groupConsumerMaxSize: 2147483647,
  groupConsumerMigrationPolicy: "bidirectional",
  processRoles: [],
  controllerHost: "127.0.0.1",
  controllerPort: -1,
  controllerBootstrap: null,
  controllerBootstrapServers: [],
  controllerQuorumVoters: [],
  controllerQuorumElectionTimeoutMs: 1000,
  controllerQuorumFetchTimeoutMs: 2000,
  controllerQuorumElectionBackoffMaxMs: 1000,
  controllerQuorumRequestTimeoutMs: 2000,
  brokerHeartbeatIntervalMs: 2000,
  brokerSessionTimeoutMs: 9000,
  offsetsTopicReplicationFactor: 3,
  offsetsTopicSegmentBytes: 104_857_600,
  transactionStateLogSegmentBytes: 104_857_600,
  transactionStateLogNumPartitions: 50,
  transactionStateLogReplicationFactor: 3,
  transactionStateLogMinIsr: 2,
  transactionMaxTimeoutMs: 900_000,
  transactionAbortTimedOutTransactionCleanupIntervalMs: 10_000,
  transactionalIdExpirationMs: 604_800_000,
  replicaLagTimeMaxMs: 30000,
  replicaHighWatermarkCheckpointIntervalMs: 5000,
  uncleanLeaderElectionEnable: false,
  minInsyncReplicas: 1,
  autoLeaderRebalanceEnable: true,
  leaderImbalanceCheckIntervalSeconds: 300,
  leaderImbalancePerBrokerPercentage: 10,
  clusterId: null,
  mirrorStateTopicNumPartitions: 50,
  mirrorStateTopicReplicationFactor: 3,
  mirrorMetadataRefreshIntervalMs: 60000,
  leaderReplicationThrottledRate: Number.MAX_SAFE_INTEGER,
  followerReplicationThrottledRate: Number.MAX_SAFE_INTEGER,
  mirrorReplicationThrottledRate: Number.MAX_SAFE_INTEGER,
  replicationQuotaWindowNum: 11,
  replicationQuotaWindowSizeSeconds: 1,
  quotaWindowNum: 11,
  quotaWindowSizeSeconds: 1,
  controllerQuotaWindowNum: 11,
  controllerQuotaWindowSizeSeconds: 1,
  mirrorFailedRetryInitialBackoffMs: 1000,
  mirrorFailedRetryMaxBackoffMs: 300000,
  mirrorFailedRetryMaxAttempts: 100,
  metricsPort: 0,
  authorizer: null,
  saslEnabledMechanisms: ["GSSAPI"],
  saslMechanismInterBrokerProtocol: "GSSAPI",
  saslMechanismControllerProtocol: "GSSAPI",
  mirrorAdminListenerName: null,
  saslMechanismMirrorAdminProtocol: null,
  connectionsMaxReauthMs: 0,
  bootstrapScramCredentials: [],
  properties: new Map()
}

type Parser = (value: string, key: string) => Partial<BrokerConfig>

const int =
  (field: keyof BrokerConfig, min = Number.MIN_SAFE_INTEGER): Parser =>
  (v, key) => {
    const n = Number(v.trim())
    if (!Number.isInteger(n) || n < min) throw new Error(`${key}=${v}: expected an integer >= ${min}`)
    return { [field]: n } as Partial<BrokerConfig>
  }
const long =
  (field: keyof BrokerConfig): Parser =>
  (v, key) => {
    const n = Number(v.trim())
    if (!Number.isFinite(n)) throw new Error(`${key}=${v}: expected a number`)
    return { [field]: Math.min(n, Number.MAX_SAFE_INTEGER) } as Partial<BrokerConfig>
  }
/** A replication throttle in bytes/s: a long >= 0, Long.MAX_VALUE (or more) meaning no limit. */
const rate =
  (field: keyof BrokerConfig): Parser =>
  (v, key) => {
    const n = Number(v.trim())
    if (!Number.isInteger(n) || n < 0) throw new Error(`${key}=${v}: expected an integer >= 0`)
    return { [field]: Math.min(n, Number.MAX_SAFE_INTEGER) } as Partial<BrokerConfig>
  }
const bool =
  (field: keyof BrokerConfig): Parser =>
  (v, key) => {
    const t = v.trim().toLowerCase()
    if (t !== "true" && t !== "false") throw new Error(`${key}=${v}: expected true or false`)
    return { [field]: t === "true" } as Partial<BrokerConfig>
  }
const SECURITY_PROTOCOLS: ReadonlySet<string> = new Set(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])

/** Kafka's default `listener.security.protocol.map`: each protocol's name as a listener name. */
const DEFAULT_PROTOCOL_MAP: ReadonlyArray<readonly [string, SecurityProtocol]> = [
  ["PLAINTEXT", "PLAINTEXT"],
  ["SSL", "SSL"],
  ["SASL_PLAINTEXT", "SASL_PLAINTEXT"],
  ["SASL_SSL", "SASL_SSL"]
]

/** Whether a protocol runs over TLS. */
export const usesTls = (p: SecurityProtocol): boolean => p === "SSL" || p === "SASL_SSL"

/** Whether a protocol authenticates with SASL. */
export const usesSasl = (p: SecurityProtocol): boolean => p === "SASL_PLAINTEXT" || p === "SASL_SSL"

interface RawListener {
  readonly name: string
  readonly host: string
  readonly port: number
}

/** `NAME://host:port[,...]`; a bare `host:port` is a PLAINTEXT listener. Names are upper-cased like Kafka's. */
const parseListeners = (v: string, key: string): ReadonlyArray<RawListener> => {
  const out: RawListener[] = []
  for (const entry of v.split(",")) {
    if (entry.trim() === "") continue
    const m = /^(?:([A-Za-z0-9_-]+):\/\/)?(\[[^\]]*\]|[^:,/]*):(\d+)$/.exec(entry.trim())
    if (!m) throw new Error(`${key}=${v}: expected NAME://host:port`)
    const name = (m[1] ?? "PLAINTEXT").toUpperCase()
    if (out.some((l) => l.name === name)) throw new Error(`${key}=${v}: listener ${name} is named twice`)
    const port = Number(m[3])
    if (port > 65535) throw new Error(`${key}=${v}: port ${port} is out of range`)
    out.push({ name, host: (m[2] ?? "").replace(/^\[|\]$/g, ""), port })
  }
  return out
}

/** `NAME:PROTOCOL[,...]`. */
const parseProtocolMap = (v: string, key: string): Map<string, SecurityProtocol> => {
  const out = new Map<string, SecurityProtocol>()
  for (const entry of v.split(",")) {
    if (entry.trim() === "") continue
    const m = /^([A-Za-z0-9_-]+):([A-Za-z_]+)$/.exec(entry.trim())
    if (!m || !SECURITY_PROTOCOLS.has(m[2]!.toUpperCase()))
      throw new Error(`${key}=${v}: expected NAME:PROTOCOL entries`)
    out.set(m[1]!.toUpperCase(), m[2]!.toUpperCase() as SecurityProtocol)
  }
  return out
}

const names = (v: string): ReadonlyArray<string> =>
  v
    .split(",")
    .map((n) => n.trim().toUpperCase())
    .filter((n) => n !== "")

const LISTENER_KEYS = [
  "listeners",
  "advertised.listeners",
  "listener.security.protocol.map",
  "inter.broker.listener.name",
  "security.inter.broker.protocol",
  "controller.listener.names"
]

const isSslKey = (key: string): boolean => /^(listener\.name\.[^.]+\.)?ssl\./.test(key)

/**
 * The listener model from the (merged) properties, as Kafka 4 builds it: protocols from
 * `listener.security.protocol.map`, which, when not set explicitly and no listener uses SSL or SASL,
 * also maps the controller listeners to PLAINTEXT; the inter-broker listener from
 * `inter.broker.listener.name` or `security.inter.broker.protocol` (a listener of that name; with a
 * single broker listener, that one); TLS settings for every listener that uses TLS.
 */
const resolveListeners = (props: ReadonlyMap<string, string>, cfg: BrokerConfig): Partial<BrokerConfig> => {
  const listeners = props.has("listeners")
    ? parseListeners(props.get("listeners")!, "listeners")
    : cfg.listeners.map(({ name, host, port }) => ({ name, host, port }))
  const controllerNames = props.has("controller.listener.names")
    ? names(props.get("controller.listener.names")!)
    : ["CONTROLLER"]
  const explicitMap = props.get("listener.security.protocol.map")
  const protocolMap = new Map<string, SecurityProtocol>(
    explicitMap === undefined ? DEFAULT_PROTOCOL_MAP : parseProtocolMap(explicitMap, "listener.security.protocol.map")
  )
  if (explicitMap === undefined) {
    const securedName = (n: string) => n === "SSL" || n === "SASL_SSL" || n === "SASL_PLAINTEXT"
    if (!controllerNames.some(securedName) && !listeners.some((l) => securedName(l.name)))
      for (const n of controllerNames) if (!protocolMap.has(n)) protocolMap.set(n, "PLAINTEXT")
  }
  if (cfg.processRoles.length > 0)
    for (const n of controllerNames)
      if (!protocolMap.has(n))
        throw new Error(
          `controller.listener.names: listener ${n} is not in listener.security.protocol.map (an explicit mapping for each controller listener is required when the map is set, or when SSL or SASL listeners are in use)`
        )
  const protocolOf = (name: string, key: string): SecurityProtocol => {
    const p = protocolMap.get(name)
    if (p === undefined)
      throw new Error(`${key}: no security protocol defined for listener ${name} in listener.security.protocol.map`)
    return p
  }
  const resolved: Listener[] = listeners.map((l) => ({ ...l, securityProtocol: protocolOf(l.name, "listeners") }))
  // A broker reaches the controller listener with its protocol even when it does not serve it.
  for (const n of controllerNames) if (protocolMap.has(n)) protocolOf(n, "controller.listener.names")
  const advertisedRaw = props.has("advertised.listeners")
    ? parseListeners(props.get("advertised.listeners")!, "advertised.listeners")
    : []
  for (const a of advertisedRaw)
    if (!resolved.some((l) => l.name === a.name))
      throw new Error(`advertised.listeners: listener ${a.name} is not in listeners`)
  const advertised: Listener[] = resolved.map((l) => {
    const a = advertisedRaw.find((x) => x.name === l.name)
    const host = a?.host || (l.host === "" || l.host === "0.0.0.0" ? "127.0.0.1" : l.host)
    return { ...l, host, port: a?.port ?? l.port }
  })
  const brokerListeners = resolved.filter((l) => !controllerNames.includes(l.name))
  const named = props.get("inter.broker.listener.name")?.trim().toUpperCase()
  const byProtocol = props.get("security.inter.broker.protocol")?.trim().toUpperCase()
  if (named !== undefined && byProtocol !== undefined)
    throw new Error("only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
  if (byProtocol !== undefined && !SECURITY_PROTOCOLS.has(byProtocol))
    throw new Error(`security.inter.broker.protocol=${byProtocol}: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL`)
  let interBroker: Listener | undefined
  if (named !== undefined) {
    interBroker = brokerListeners.find((l) => l.name === named)
    if (interBroker === undefined && brokerListeners.length > 0)
      throw new Error(
        `inter.broker.listener.name=${named}: no such listener in listeners (controller listeners excluded)`
      )
  } else {
    const wanted = byProtocol ?? "PLAINTEXT"
    interBroker =
      brokerListeners.find((l) => l.name === wanted) ?? (brokerListeners.length === 1 ? brokerListeners[0] : undefined)
    if (interBroker === undefined && brokerListeners.length > 0)
      throw new Error(
        `no inter-broker listener: set inter.broker.listener.name to one of ${brokerListeners.map((l) => l.name).join(", ")}`
      )
  }
  const controller = resolved.find((l) => controllerNames.includes(l.name))
  const ssl = new Map<string, SslConfig.SslSettings>()
  for (const name of new Set([...resolved.map((l) => l.name), ...controllerNames])) {
    const p = protocolMap.get(name)
    if (p !== undefined && usesTls(p)) ssl.set(name, SslConfig.settingsFor(props, name))
  }
  const advertisedInterBroker = advertised.find((l) => l.name === interBroker?.name)
  return {
    listeners: resolved,
    advertisedListeners: advertised,
    listenerSecurityProtocolMap: protocolMap,
    interBrokerListenerName: interBroker?.name ?? null,
    controllerListenerNames: controllerNames,
    ssl,
    ...(interBroker === undefined
      ? {}
      : { host: interBroker.host || "0.0.0.0", port: interBroker.port, advertisedHost: advertisedInterBroker!.host }),
    ...(controller === undefined
      ? { controllerPort: -1 }
      : { controllerHost: controller.host || "0.0.0.0", controllerPort: controller.port })
  }
}

/**
 * The listeners a node serves, with the derived fields applied: `host`/`port` to the inter-broker
 * listener and `controllerHost`/`controllerPort` to the first controller listener (so a config whose
 * fields were set directly, as the embedded cluster does, listens where they say).
 */
export const listenersOf = (config: BrokerConfig): ReadonlyArray<Listener> => {
  const firstController = config.listeners.find((l) => config.controllerListenerNames.includes(l.name))
  return config.listeners.map((l) =>
    l.name === config.interBrokerListenerName
      ? { ...l, host: config.host, port: config.port }
      : l === firstController
        ? { ...l, host: config.controllerHost, port: config.controllerPort }
        : l
  )
}

/** What a broker registers: every listener but the controller ones, at its advertised host and port. */
export const advertisedOf = (config: BrokerConfig): ReadonlyArray<Listener> =>
  config.advertisedListeners
    .filter((l) => !config.controllerListenerNames.includes(l.name))
    .map((l) => (l.name === config.interBrokerListenerName ? { ...l, host: config.advertisedHost } : l))

/** The protocol of the controller listener brokers connect to (the first of `controller.listener.names`). */
export const controllerProtocol = (
  config: BrokerConfig
): { readonly name: string; readonly protocol: SecurityProtocol } => {
  const name = config.controllerListenerNames[0] ?? "CONTROLLER"
  return { name, protocol: config.listenerSecurityProtocolMap.get(name) ?? "PLAINTEXT" }
}

/** A key resolved with the others after parsing: here only its syntax is checked. */
const checkOnly =
  (check: (v: string, key: string) => unknown): Parser =>
  (v, key) => {
    check(v, key)
    return {}
  }

/** `controller.quorum.bootstrap.servers`: `host:port,...`, the controllers a broker tries in turn. */
const controllerBootstrapServers: Parser = (v, key) => {
  const servers = entriesOf(v).map((e) => {
    const m = /^([^:@\s]+|\[[^\]]+\]):(\d+)$/.exec(e)
    if (!m || !validPort(Number(m[2]))) throw new Error(`${key}=${v}: "${e}" is not host:port`)
    return { host: m[1]!, port: Number(m[2]) }
  })
  if (servers.length === 0) throw new Error(`${key}=${v}: expected host:port,...`)
  return { controllerBootstrap: servers[0]!, controllerBootstrapServers: servers }
}

/**
 * `controller.quorum.voters`: `id@host:port,...`, the static quorum (KRaft). Brokers also find the
 * controllers there when `controller.quorum.bootstrap.servers` is not set (resolved after parsing).
 */
const controllerQuorumVoters: Parser = (v, key) => {
  const voters = entriesOf(v).map((e) => {
    const m = /^(\d+)@([^:@\s]+|\[[^\]]+\]):(\d+)$/.exec(e)
    if (!m || !validPort(Number(m[3])) || Number(m[1]) > 2147483647)
      throw new Error(`${key}=${v}: "${e}" is not id@host:port`)
    return { id: Number(m[1]), host: m[2]!, port: Number(m[3]) }
  })
  if (voters.length === 0) throw new Error(`${key}=${v}: expected id@host:port,...`)
  const twice = voters.find((x, i) => voters.findIndex((y) => y.id === x.id) !== i)
  if (twice !== undefined) throw new Error(`${key}=${v}: node id ${twice.id} appears twice`)
  return { controllerQuorumVoters: voters }
}

const entriesOf = (v: string): Array<string> =>
  v
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "")

const validPort = (port: number): boolean => Number.isInteger(port) && port >= 1 && port <= 65535

const mechanismList = (v: string): Array<string> =>
  v
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "")

/**
 * Per-listener SASL keys, read through `SaslConfig` from the properties: the JAAS entry of a mechanism
 * (`listener.name.<l>.<mechanism>.sasl.jaas.config`) and the listener's own `sasl.enabled.mechanisms`.
 */
const LISTENER_SASL_KEY =
  /^listener\.name\.[a-z0-9_-]+\.((plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config|sasl\.enabled\.mechanisms)$/

const roles: Parser = (v, key) => {
  const rs = v
    .split(",")
    .map((r) => r.trim())
    .filter((r) => r !== "")
  for (const r of rs)
    if (r !== "broker" && r !== "controller") throw new Error(`${key}=${v}: roles are broker and controller`)
  return { processRoles: rs as Array<"broker" | "controller"> }
}

/**
 * `log.dirs` / `log.dir`: one directory. Several (JBOD) are refused rather than read as one odd path: a
 * broker keeps every partition in a single log directory.
 */
const logDirs: Parser = (v, key) => {
  const dirs = v
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d !== "")
  if (dirs.length !== 1)
    throw new Error(`${key}=${v}: expected one log directory (several log directories, JBOD, are not supported)`)
  return { dataDir: dirs[0]! }
}

const parsers: Record<string, Parser> = {
  "node.id": int("nodeId", 0),
  "broker.id": int("nodeId", 0),
  // The listener keys are checked here and resolved together once all properties are read.
  listeners: checkOnly(parseListeners),
  "advertised.listeners": checkOnly(parseListeners),
  "listener.security.protocol.map": checkOnly(parseProtocolMap),
  "inter.broker.listener.name": () => ({}),
  "security.inter.broker.protocol": () => ({}),
  "controller.listener.names": () => ({}),
  "log.dirs": logDirs,
  "log.dir": logDirs,
  "auto.create.topics.enable": bool("autoCreateTopicsEnable"),
  "transaction.partition.verification.enable": bool("transactionPartitionVerificationEnable"),
  "num.partitions": int("numPartitions", 1),
  "default.replication.factor": int("defaultReplicationFactor", 1),
  "socket.request.max.bytes": int("socketRequestMaxBytes", 1),
  "max.request.partition.size.limit": int("maxRequestPartitionSizeLimit", 1),
  "message.max.bytes": int("messageMaxBytes", 0),
  "log.segment.bytes": int("logSegmentBytes", 14),
  "log.retention.ms": long("logRetentionMs"),
  "log.retention.hours": (v, key) => ({ logRetentionMs: (int("logRetentionMs")(v, key).logRetentionMs ?? 0) * HOUR }),
  "log.retention.bytes": long("logRetentionBytes"),
  "log.retention.check.interval.ms": int("logRetentionCheckIntervalMs", 1),
  "log.flush.interval.messages": long("logFlushIntervalMessages"),
  "log.flush.interval.ms": long("logFlushIntervalMs"),
  "log.roll.ms": long("logRollMs"),
  "log.roll.hours": (v, key) => ({ logRollMs: (int("logRollMs", 1)(v, key).logRollMs ?? 0) * HOUR }),
  "log.cleanup.policy": (v, key) => {
    const policies = v
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "")
    if (policies.some((p) => p !== "delete" && p !== "compact"))
      throw new Error(`${key}=${v}: expected a list of delete and compact`)
    return { logCleanupPolicy: policies.join(",") }
  },
  "log.cleaner.enable": bool("logCleanerEnable"),
  "log.cleaner.threads": int("logCleanerThreads", 0),
  "log.cleaner.dedupe.buffer.size": (v, key) => {
    const n = Number(v.trim())
    if (!Number.isInteger(n) || n < 48) throw new Error(`${key}=${v}: expected an integer >= 48`)
    return { logCleanerDedupeBufferSize: n }
  },
  "log.cleaner.io.max.bytes.per.second": (v, key) => {
    const n = Number(v.trim())
    if (!(n > 0)) throw new Error(`${key}=${v}: expected a number above 0`)
    return { logCleanerIoMaxBytesPerSecond: n }
  },
  "log.cleaner.backoff.ms": int("logCleanerBackoffMs", 0),
  "log.cleaner.delete.retention.ms": int("logCleanerDeleteRetentionMs", 0),
  "log.cleaner.min.cleanable.ratio": (v, key) => {
    const n = Number(v.trim())
    if (!(n >= 0 && n <= 1)) throw new Error(`${key}=${v}: expected a number between 0 and 1`)
    return { logCleanerMinCleanableRatio: n }
  },
  "log.cleaner.min.compaction.lag.ms": int("logCleanerMinCompactionLagMs", 0),
  "log.cleaner.max.compaction.lag.ms": (v, key) => {
    const n = Number(v.trim())
    if (!Number.isFinite(n) || n < 1) throw new Error(`${key}=${v}: expected a number >= 1`)
    return { logCleanerMaxCompactionLagMs: Math.min(n, Number.MAX_SAFE_INTEGER) }
  },
  "log.message.timestamp.type": (v, key) => {
    if (v !== "CreateTime" && v !== "LogAppendTime")
      throw new Error(`${key}=${v}: expected CreateTime or LogAppendTime`)
    return { logMessageTimestampType: v }
  },
  "offsets.topic.num.partitions": int("offsetsTopicNumPartitions", 1),
  "group.initial.rebalance.delay.ms": int("groupInitialRebalanceDelayMs", 0),
  "group.min.session.timeout.ms": int("groupMinSessionTimeoutMs", 0),
  "group.max.session.timeout.ms": int("groupMaxSessionTimeoutMs", 0),
  "group.consumer.session.timeout.ms": int("groupConsumerSessionTimeoutMs", 1),
  "group.consumer.heartbeat.interval.ms": int("groupConsumerHeartbeatIntervalMs", 1),
  "group.consumer.max.size": int("groupConsumerMaxSize", 1),
  "group.consumer.assignors": (v, key) => {
    // Kafka's names, or the class names of its two built-in assignors.
    const names = v
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "")
      .map((s) =>
        s === "org.apache.kafka.coordinator.group.assignor.UniformAssignor"
          ? "uniform"
          : s === "org.apache.kafka.coordinator.group.assignor.RangeAssignor"
            ? "range"
            : s
      )
    const unknown = names.filter((n) => n !== "uniform" && n !== "range")
    if (names.length === 0 || unknown.length > 0)
      throw new Error(`${key}=${v}: expected a list of the assignors uniform and range`)
    return { groupConsumerAssignors: names }
  },
  "group.consumer.migration.policy": (v, key) => {
    // Kafka parses the policy case-insensitively.
    const policy = v.trim().toLowerCase()
    if (policy !== "disabled" && policy !== "upgrade" && policy !== "downgrade" && policy !== "bidirectional")
      throw new Error(`${key}=${v}: expected one of disabled, upgrade, downgrade, bidirectional`)
    return { groupConsumerMigrationPolicy: policy }
  },
  "process.roles": roles,
  "controller.quorum.bootstrap.servers": controllerBootstrapServers,
  "controller.quorum.voters": controllerQuorumVoters,
  "controller.quorum.election.timeout.ms": int("controllerQuorumElectionTimeoutMs", 1),
  "controller.quorum.fetch.timeout.ms": int("controllerQuorumFetchTimeoutMs", 1),
  "controller.quorum.election.backoff.max.ms": int("controllerQuorumElectionBackoffMaxMs", 1),
  "controller.quorum.request.timeout.ms": int("controllerQuorumRequestTimeoutMs", 1),
  "broker.heartbeat.interval.ms": int("brokerHeartbeatIntervalMs", 1),
  "broker.session.timeout.ms": int("brokerSessionTimeoutMs", 1),
  "offsets.topic.replication.factor": int("offsetsTopicReplicationFactor", 1),
  "offsets.topic.segment.bytes": int("offsetsTopicSegmentBytes", 1),
  "transaction.state.log.segment.bytes": int("transactionStateLogSegmentBytes", 1),
  "transaction.state.log.num.partitions": int("transactionStateLogNumPartitions", 1),
  "transaction.state.log.replication.factor": int("transactionStateLogReplicationFactor", 1),
  "transaction.state.log.min.isr": int("transactionStateLogMinIsr", 1),
  "transaction.max.timeout.ms": int("transactionMaxTimeoutMs", 1),
  "transaction.abort.timed.out.transaction.cleanup.interval.ms": int(
    "transactionAbortTimedOutTransactionCleanupIntervalMs",
    1
  ),
  "transactional.id.expiration.ms": int("transactionalIdExpirationMs", 1),
  "replica.lag.time.max.ms": int("replicaLagTimeMaxMs", 1),
  "replica.high.watermark.checkpoint.interval.ms": int("replicaHighWatermarkCheckpointIntervalMs", 1),
  "unclean.leader.election.enable": bool("uncleanLeaderElectionEnable"),
  "min.insync.replicas": int("minInsyncReplicas", 1),
  "auto.leader.rebalance.enable": bool("autoLeaderRebalanceEnable"),
  "leader.imbalance.check.interval.seconds": int("leaderImbalanceCheckIntervalSeconds", 1),
  "leader.imbalance.per.broker.percentage": (v, key) => {
    const parsed = int("leaderImbalancePerBrokerPercentage", 0)(v, key)
    if ((parsed.leaderImbalancePerBrokerPercentage ?? 0) > 100) throw new Error(`${key}=${v}: expected 0 to 100`)
    return parsed
  },
  "cluster.id": (v) => ({ clusterId: v.trim() }),
  "mirror.state.topic.num.partitions": int("mirrorStateTopicNumPartitions", 1),
  "mirror.state.topic.replication.factor": int("mirrorStateTopicReplicationFactor", 1),
  "mirror.metadata.refresh.interval.ms": int("mirrorMetadataRefreshIntervalMs", 0),
  "leader.replication.throttled.rate": rate("leaderReplicationThrottledRate"),
  "follower.replication.throttled.rate": rate("followerReplicationThrottledRate"),
  "mirror.replication.throttled.rate": rate("mirrorReplicationThrottledRate"),
  "replication.quota.window.num": int("replicationQuotaWindowNum", 1),
  "replication.quota.window.size.seconds": int("replicationQuotaWindowSizeSeconds", 1),
  "quota.window.num": int("quotaWindowNum", 1),
  "quota.window.size.seconds": int("quotaWindowSizeSeconds", 1),
  "controller.quota.window.num": int("controllerQuotaWindowNum", 1),
  "controller.quota.window.size.seconds": int("controllerQuotaWindowSizeSeconds", 1),
  "mirror.failed.retry.initial.backoff.ms": int("mirrorFailedRetryInitialBackoffMs", 1),
  "mirror.failed.retry.max.backoff.ms": int("mirrorFailedRetryMaxBackoffMs", 1),
  "mirror.failed.retry.max.attempts": int("mirrorFailedRetryMaxAttempts", 0),
  "metrics.port": int("metricsPort", 0),
  "sasl.enabled.mechanisms": (v) => ({ saslEnabledMechanisms: mechanismList(v) }),
  "sasl.mechanism.inter.broker.protocol": (v) => ({ saslMechanismInterBrokerProtocol: v.trim() }),
  "sasl.mechanism.controller.protocol": (v) => ({ saslMechanismControllerProtocol: v.trim() }),
  "mirror.admin.listener.name": (v) => ({ mirrorAdminListenerName: v.trim() === "" ? null : v.trim().toUpperCase() }),
  "sasl.mechanism.mirror.admin.protocol": (v) => ({
    saslMechanismMirrorAdminProtocol: v.trim() === "" ? null : v.trim()
  }),
  "connections.max.reauth.ms": long("connectionsMaxReauthMs"),
  "authorizer.class.name": (v, key) => {
    const name = v.trim()
    if (name === "") return { authorizer: null }
    if (name !== StandardAuthorizer.CLASS_NAME)
      throw new Error(`${key}=${v}: only ${StandardAuthorizer.CLASS_NAME} is supported`)
    return { authorizer: StandardAuthorizer.defaultConfig }
  },
  "super.users": () => ({}),
  "allow.everyone.if.no.acl.found": (v, key) => {
    const t = v.trim().toLowerCase()
    if (t !== "true" && t !== "false") throw new Error(`${key}=${v}: expected true or false`)
    return {}
  }
}

/**
 * The authorizer's settings, read after all keys: `super.users` and `allow.everyone.if.no.acl.found`
 * belong to the authorizer `authorizer.class.name` enables, and are refused without one (they would
 * have no effect).
 */
const authorizerSettings = (cfg: BrokerConfig, props: ReadonlyMap<string, string>): BrokerConfig => {
  const superUsers = props.get("super.users")
  const everyone = props.get("allow.everyone.if.no.acl.found")
  if (cfg.authorizer === null) {
    for (const key of ["super.users", "allow.everyone.if.no.acl.found"])
      if (props.has(key))
        throw new Error(`broker config "${key}" needs authorizer.class.name=${StandardAuthorizer.CLASS_NAME}`)
    return cfg
  }
  return {
    ...cfg,
    authorizer: {
      superUsers: superUsers === undefined ? cfg.authorizer.superUsers : StandardAuthorizer.parseSuperUsers(superUsers),
      allowEveryoneIfNoAclFound:
        everyone === undefined ? cfg.authorizer.allowEveryoneIfNoAclFound : everyone.trim().toLowerCase() === "true"
    }
  }
}

/**
 * Keys accepted for compatibility with Kafka config files, without effect: the OS's socket buffer sizing, and the thread counts of
 * `ConfigurationControl.BROKER_NO_OP_CONFIGS` (one event loop, no pools to size).
 */
export const NO_OP_PROPERTIES: ReadonlySet<string> = new Set([
  "socket.send.buffer.bytes",
  "socket.receive.buffer.bytes",
  ...ConfigurationControl.BROKER_NO_OP_CONFIGS
])

/** Whether a properties key is parsed into the config (as opposed to a no-op or a refused key). */
export const isParsed = (key: string): boolean => Object.hasOwn(parsers, key)

/** Parses Java properties text (`key=value` or `key: value`, `#`/`!` comments). */
export const parseProperties = (text: string): Map<string, string> => {
  const out = new Map<string, string>()
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue
    const m = /^([^=:\s]+)\s*[=:]\s*(.*)$/.exec(line)
    if (!m) throw new Error(`cannot parse config line: ${line}`)
    out.set(m[1]!, m[2]!)
  }
  return out
}

/** Applies properties over a base config; throws an Error naming the bad key. */
export const fromProperties = (props: ReadonlyMap<string, string>, base: BrokerConfig = defaults): BrokerConfig => {
  let cfg: BrokerConfig = base
  for (const [key, value] of props) {
    const parse = Object.hasOwn(parsers, key) ? parsers[key] : undefined
    if (parse === undefined) {
      if (NO_OP_PROPERTIES.has(key)) continue
      if (isSslKey(key)) {
        const why = SslConfig.refusal(key.replace(/^listener\.name\.[^.]+\./, ""))
        if (why !== null) throw new Error(`broker config "${key}" is not supported: ${why}`)
        continue
      }
      if (LISTENER_SASL_KEY.test(key)) continue
      if (key === "sasl.jaas.config")
        throw new Error(
          `broker config "${key}" is not supported: brokers take the JAAS entry per listener and mechanism, as listener.name.<listener>.<mechanism>.sasl.jaas.config`
        )
      if (/^(sasl|listener\.name\.[^.]+\.([^.]+\.)?sasl)\./.test(key))
        throw new Error(
          `broker config "${key}" is not supported: SASL is PLAIN and SCRAM-SHA-256/512 with listener.name.<listener>.<mechanism>.sasl.jaas.config (no GSSAPI, OAUTHBEARER, callback handlers or login settings)`
        )
      if (key.startsWith("listener.name."))
        throw new Error(
          `broker config "${key}" is not supported: only ssl.* and SASL settings take a listener.name.<listener>. prefix`
        )
      const why = ConfigurationControl.unsupportedBrokerConfig(key)
      if (why !== null) throw new Error(`broker config "${key}" is not supported: ${why}`)
      throw new Error(`unknown broker config "${key}"`)
    }
    cfg = { ...cfg, ...parse(value, key) }
  }
  const properties = new Map([...base.properties, ...props])
  if ([...props.keys()].some((k) => LISTENER_KEYS.includes(k) || isSslKey(k)))
    cfg = { ...cfg, ...resolveListeners(properties, cfg) }
  cfg = authorizerSettings(cfg, props)
  // Without controller.quorum.bootstrap.servers, brokers find the controllers among the voters.
  if (!properties.has("controller.quorum.bootstrap.servers") && cfg.controllerQuorumVoters.length > 0) {
    const servers = cfg.controllerQuorumVoters.map(({ host, port }) => ({ host, port }))
    cfg = { ...cfg, controllerBootstrap: servers[0]!, controllerBootstrapServers: servers }
  }
  cfg = { ...cfg, properties }
  checkSasl(cfg)
  return cfg
}

/**
 * A SASL listener without usable settings fails at start, naming the key: each SASL listener this
 * node serves needs its mechanisms (and PLAIN's JAAS entry); a broker whose inter-broker or controller
 * listener uses SASL needs the credentials it authenticates with there.
 */
const checkSasl = (cfg: BrokerConfig): void => {
  const broker = cfg.processRoles.length === 0 || cfg.processRoles.includes("broker")
  const controller = cfg.processRoles.includes("controller")
  for (const l of cfg.listeners) {
    if (!usesSasl(l.securityProtocol)) continue
    const isController = cfg.controllerListenerNames.includes(l.name)
    if (isController ? controller : broker) SaslConfig.forListener(cfg, l.name)
  }
  const interBroker = cfg.listeners.find((l) => l.name === cfg.interBrokerListenerName)
  if (broker && interBroker !== undefined && usesSasl(interBroker.securityProtocol)) {
    const sasl = SaslConfig.forListener(cfg, interBroker.name)
    // The inter-broker connections go to this same listener of the other brokers, as in Kafka.
    const own = SaslConfig.clientCredentials(cfg, interBroker.name, "sasl.mechanism.inter.broker.protocol")
    if (!sasl.enabledMechanisms.includes(own.mechanism))
      throw new Error(
        `sasl.mechanism.inter.broker.protocol=${own.mechanism} must be one of the enabled mechanisms of listener ${interBroker.name} (${sasl.enabledMechanisms.join(", ")})`
      )
  }
  const ctl = controllerProtocol(cfg)
  if (broker && usesSasl(ctl.protocol))
    SaslConfig.clientCredentials(cfg, ctl.name, "sasl.mechanism.controller.protocol")
  if (broker) mirrorAdminListener(cfg)
}

/**
 * The listener this broker's mirrors' destination admin connects to (KIP-1279 §7.2, §8.3):
 * `mirror.admin.listener.name`, else the inter-broker listener, with its protocol. Throws an Error naming
 * the key when the listener is not one of this broker's (controller listeners excluded), when the
 * listener uses SASL and `sasl.mechanism.mirror.admin.protocol` (default: the inter-broker mechanism)
 * is not enabled on it or has no username and password in its JAAS entry, and when that key is set for
 * a listener without SASL.
 */
export const mirrorAdminListener = (
  config: BrokerConfig
): { readonly name: string; readonly protocol: SecurityProtocol } | null => {
  const named = config.mirrorAdminListenerName
  const brokerListeners = config.listeners.filter((l) => !config.controllerListenerNames.includes(l.name))
  const listener = brokerListeners.find((l) => l.name === (named ?? config.interBrokerListenerName))
  if (listener === undefined) {
    if (named === null) return null
    throw new Error(
      `mirror.admin.listener.name=${named}: no such listener in listeners (controller listeners excluded): ${brokerListeners.map((l) => l.name).join(", ")}`
    )
  }
  const key = "sasl.mechanism.mirror.admin.protocol"
  if (!usesSasl(listener.securityProtocol)) {
    if (config.saslMechanismMirrorAdminProtocol !== null)
      throw new Error(
        `${key}=${config.saslMechanismMirrorAdminProtocol}: listener ${listener.name} of the mirror admin speaks ${listener.securityProtocol}, without SASL`
      )
    return { name: listener.name, protocol: listener.securityProtocol }
  }
  const sasl = SaslConfig.forListener(config, listener.name)
  const mechanism = config.saslMechanismMirrorAdminProtocol ?? config.saslMechanismInterBrokerProtocol
  if (SaslConfig.isMechanism(mechanism) && !sasl.enabledMechanisms.includes(mechanism))
    throw new Error(
      `${SaslConfig.mechanismKeyLabel(config, key)}=${mechanism} must be one of the enabled mechanisms of listener ${listener.name} (${sasl.enabledMechanisms.join(", ")})`
    )
  SaslConfig.clientCredentials(config, listener.name, key)
  return { name: listener.name, protocol: listener.securityProtocol }
}

/**
 * The config in force: the properties overridden by the dynamic cluster default (broker "") and then
 * by this broker's own dynamic configs, as the metadata log holds them. Values there were validated
 * by the controller; one that still does not parse here keeps the value beneath it.
 */
export const withDynamic = (
  config: BrokerConfig,
  clusterDefault: ReadonlyMap<string, string>,
  perBroker: ReadonlyMap<string, string>
): BrokerConfig => {
  let cfg = config
  for (const layer of [clusterDefault, perBroker])
    for (const [key, value] of layer) {
      if (!ConfigurationControl.BROKER_CONFIG_DEFS.has(key) || !Object.hasOwn(parsers, key)) continue
      try {
        cfg = { ...cfg, ...parsers[key]!(value, key) }
      } catch {
        // Kept: the controller's validation and ours differ only in bounds this broker cannot apply.
      }
    }
  return cfg
}

export const fromFile = (path: string, base: BrokerConfig = defaults): BrokerConfig =>
  fromProperties(parseProperties(fs.readFileSync(path, "utf8")), base)
