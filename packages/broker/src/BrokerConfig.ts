/**
 * Broker configuration: Kafka's broker config names, their defaults, and parsing from a Java-style
 * properties file plus command-line overrides. Unknown keys are rejected with a clear message rather
 * than silently ignored.
 */
import { Context } from "effect"
import * as fs from "node:fs"

export interface BrokerConfig {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  /** Host clients are told to connect to (advertised.listeners' host). */
  readonly advertisedHost: string
  readonly dataDir: string
  readonly autoCreateTopicsEnable: boolean
  readonly numPartitions: number
  readonly defaultReplicationFactor: number
  readonly socketRequestMaxBytes: number
  readonly messageMaxBytes: number
  readonly logSegmentBytes: number
  readonly logRetentionMs: number
  readonly logRetentionBytes: number
  readonly logRetentionCheckIntervalMs: number
  readonly logFlushIntervalMessages: number
  readonly logFlushIntervalMs: number
  readonly logMessageTimestampType: "CreateTime" | "LogAppendTime"
  readonly offsetsTopicNumPartitions: number
  readonly groupInitialRebalanceDelayMs: number
  readonly groupMinSessionTimeoutMs: number
  readonly groupMaxSessionTimeoutMs: number
  /** `process.roles`: empty for a single node that keeps its own metadata. */
  readonly processRoles: ReadonlyArray<"broker" | "controller">
  /** The controller listener (`listeners` entry named CONTROLLER): where a controller role listens. */
  readonly controllerHost: string
  readonly controllerPort: number
  /** `controller.quorum.bootstrap.servers` (or `controller.quorum.voters`): where brokers find the controller. */
  readonly controllerBootstrap: { readonly host: string; readonly port: number } | null
  readonly brokerHeartbeatIntervalMs: number
  readonly brokerSessionTimeoutMs: number
  readonly offsetsTopicReplicationFactor: number
  readonly replicaLagTimeMaxMs: number
  readonly uncleanLeaderElectionEnable: boolean
  readonly minInsyncReplicas: number
}

export const BrokerConfig = Context.GenericTag<BrokerConfig>("@clustermirror/broker/BrokerConfig")

const HOUR = 60 * 60 * 1000

export const defaults: BrokerConfig = {
  nodeId: 0,
  host: "127.0.0.1",
  port: 9092,
  advertisedHost: "127.0.0.1",
  dataDir: "./data",
  autoCreateTopicsEnable: true,
  numPartitions: 1,
  defaultReplicationFactor: 1,
  socketRequestMaxBytes: 104857600,
  messageMaxBytes: 1048588,
  logSegmentBytes: 1024 * 1024 * 1024,
  logRetentionMs: 168 * HOUR,
  logRetentionBytes: -1,
  logRetentionCheckIntervalMs: 5 * 60 * 1000,
  logFlushIntervalMessages: Number.MAX_SAFE_INTEGER,
  logFlushIntervalMs: Number.MAX_SAFE_INTEGER,
  logMessageTimestampType: "CreateTime",
  offsetsTopicNumPartitions: 1,
  groupInitialRebalanceDelayMs: 3000,
  groupMinSessionTimeoutMs: 6000,
  groupMaxSessionTimeoutMs: 1800000,
  processRoles: [],
  controllerHost: "127.0.0.1",
  controllerPort: -1,
  controllerBootstrap: null,
  brokerHeartbeatIntervalMs: 2000,
  brokerSessionTimeoutMs: 9000,
  offsetsTopicReplicationFactor: 3,
  replicaLagTimeMaxMs: 30000,
  uncleanLeaderElectionEnable: false,
  minInsyncReplicas: 1
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
const bool =
  (field: keyof BrokerConfig): Parser =>
  (v, key) => {
    const t = v.trim().toLowerCase()
    if (t !== "true" && t !== "false") throw new Error(`${key}=${v}: expected true or false`)
    return { [field]: t === "true" } as Partial<BrokerConfig>
  }
const str =
  (field: keyof BrokerConfig): Parser =>
  (v) =>
    ({ [field]: v.trim() }) as Partial<BrokerConfig>

/** `NAME://host:port[,NAME://host:port]`: the CONTROLLER entry is the controller listener, the other the client one. */
const listener: Parser = (v, key) => {
  const out: { -readonly [K in keyof BrokerConfig]?: BrokerConfig[K] } = {}
  for (const entry of v.split(",")) {
    const m = /^(?:([A-Z_]+):\/\/)?([^:,]*):(\d+)$/.exec(entry.trim())
    if (!m) throw new Error(`${key}=${v}: expected NAME://host:port`)
    const [, name, host, port] = m
    if (name === "CONTROLLER") {
      if (key === "listeners") {
        out.controllerHost = host || "0.0.0.0"
        out.controllerPort = Number(port)
      }
    } else if (key === "advertised.listeners") out.advertisedHost = host || "127.0.0.1"
    else {
      out.host = host || "0.0.0.0"
      out.port = Number(port)
    }
  }
  return out
}

/** `host:port[,...]` or Kafka's voters form `id@host:port[,...]`: the first entry. */
const controllerBootstrap: Parser = (v, key) => {
  const m = /^(?:\d+@)?([^:,]+):(\d+)/.exec(v.trim())
  if (!m) throw new Error(`${key}=${v}: expected host:port`)
  return { controllerBootstrap: { host: m[1]!, port: Number(m[2]) } }
}

const roles: Parser = (v, key) => {
  const rs = v
    .split(",")
    .map((r) => r.trim())
    .filter((r) => r !== "")
  for (const r of rs)
    if (r !== "broker" && r !== "controller") throw new Error(`${key}=${v}: roles are broker and controller`)
  return { processRoles: rs as Array<"broker" | "controller"> }
}

const parsers: Record<string, Parser> = {
  "node.id": int("nodeId", 0),
  "broker.id": int("nodeId", 0),
  listeners: listener,
  "advertised.listeners": listener,
  "log.dirs": str("dataDir"),
  "log.dir": str("dataDir"),
  "auto.create.topics.enable": bool("autoCreateTopicsEnable"),
  "num.partitions": int("numPartitions", 1),
  "default.replication.factor": int("defaultReplicationFactor", 1),
  "socket.request.max.bytes": int("socketRequestMaxBytes", 1),
  "message.max.bytes": int("messageMaxBytes", 0),
  "log.segment.bytes": int("logSegmentBytes", 14),
  "log.retention.ms": long("logRetentionMs"),
  "log.retention.hours": (v, key) => ({ logRetentionMs: (int("logRetentionMs")(v, key).logRetentionMs ?? 0) * HOUR }),
  "log.retention.bytes": long("logRetentionBytes"),
  "log.retention.check.interval.ms": int("logRetentionCheckIntervalMs", 1),
  "log.flush.interval.messages": long("logFlushIntervalMessages"),
  "log.flush.interval.ms": long("logFlushIntervalMs"),
  "log.message.timestamp.type": (v, key) => {
    if (v !== "CreateTime" && v !== "LogAppendTime")
      throw new Error(`${key}=${v}: expected CreateTime or LogAppendTime`)
    return { logMessageTimestampType: v }
  },
  "offsets.topic.num.partitions": int("offsetsTopicNumPartitions", 1),
  "group.initial.rebalance.delay.ms": int("groupInitialRebalanceDelayMs", 0),
  "group.min.session.timeout.ms": int("groupMinSessionTimeoutMs", 0),
  "group.max.session.timeout.ms": int("groupMaxSessionTimeoutMs", 0),
  "process.roles": roles,
  "controller.quorum.bootstrap.servers": controllerBootstrap,
  "controller.quorum.voters": controllerBootstrap,
  "broker.heartbeat.interval.ms": int("brokerHeartbeatIntervalMs", 1),
  "broker.session.timeout.ms": int("brokerSessionTimeoutMs", 1),
  "offsets.topic.replication.factor": int("offsetsTopicReplicationFactor", 1),
  "replica.lag.time.max.ms": int("replicaLagTimeMaxMs", 1),
  "unclean.leader.election.enable": bool("uncleanLeaderElectionEnable"),
  "min.insync.replicas": int("minInsyncReplicas", 1)
}

/** Keys accepted for compatibility with Kafka config files but without effect on a single node. */
const ignored = new Set([
  "controller.listener.names",
  "inter.broker.listener.name",
  "listener.security.protocol.map",
  "transaction.state.log.replication.factor",
  "transaction.state.log.min.isr",
  "num.network.threads",
  "num.io.threads"
])

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
  let advertised = false
  for (const [key, value] of props) {
    const parse = parsers[key]
    if (parse === undefined) {
      if (ignored.has(key)) continue
      throw new Error(`unknown broker config "${key}"`)
    }
    if (key === "advertised.listeners") advertised = true
    cfg = { ...cfg, ...parse(value, key) }
  }
  if (!advertised && props.has("listeners"))
    cfg = { ...cfg, advertisedHost: cfg.host === "0.0.0.0" ? "127.0.0.1" : cfg.host }
  return cfg
}

export const fromFile = (path: string, base: BrokerConfig = defaults): BrokerConfig =>
  fromProperties(parseProperties(fs.readFileSync(path, "utf8")), base)
