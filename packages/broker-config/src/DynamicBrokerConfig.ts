/**
 * The layers of a broker's configuration and where each value comes from: this broker's dynamic
 * configs (broker resource named by its node id), the dynamic cluster default (broker resource ""),
 * its properties file, and the built-in defaults — Kafka's DYNAMIC_BROKER_CONFIG,
 * DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG and DEFAULT_CONFIG. DescribeConfigs of brokers
 * and of topics (whose unset keys fall back to their broker synonyms) read values and sources here.
 * Parsing lives in `BrokerConfig`; this module only resolves and describes.
 */
import { ConfigurationControl } from "@clustermirror/controller"
import { MetadataImage } from "@clustermirror/metadata-log"
import * as BrokerConfig from "./BrokerConfig.js"

/** Kafka's ConfigSource ids as DescribeConfigs carries them. */
export const Source = {
  TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5
} as const

export interface Layers {
  /** The config read from the properties file (and command line). */
  readonly config: BrokerConfig.BrokerConfig
  readonly clusterDefault: ReadonlyMap<string, string>
  readonly perBroker: ReadonlyMap<string, string>
}

/** The dynamic layers of `nodeId` in a metadata image. */
export const layersOf = (config: BrokerConfig.BrokerConfig, image: MetadataImage.MetadataImage): Layers => ({
  config,
  clusterDefault: MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.BROKER, ""),
  perBroker: MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.BROKER, String(config.nodeId))
})

/** The config in force for these layers. */
export const effective = (layers: Layers): BrokerConfig.BrokerConfig =>
  BrokerConfig.withDynamic(layers.config, layers.clusterDefault, layers.perBroker)

const LONG_MAX = "9223372036854775807"
const long = (n: number): string => (n >= Number.MAX_SAFE_INTEGER ? LONG_MAX : String(n))

/** The value of a key in a parsed config: dynamic keys first, then the read-only ones brokers describe. */
const VALUE_OF: Readonly<Record<string, (c: BrokerConfig.BrokerConfig) => string>> = {
  "log.cleanup.policy": (c) => c.logCleanupPolicy,
  "log.cleaner.backoff.ms": (c) => String(c.logCleanerBackoffMs),
  "log.cleaner.dedupe.buffer.size": (c) => String(c.logCleanerDedupeBufferSize),
  "log.cleaner.delete.retention.ms": (c) => long(c.logCleanerDeleteRetentionMs),
  "log.cleaner.io.max.bytes.per.second": (c) =>
    c.logCleanerIoMaxBytesPerSecond === Number.MAX_VALUE
      ? "1.7976931348623157E308"
      : String(c.logCleanerIoMaxBytesPerSecond),
  "log.cleaner.max.compaction.lag.ms": (c) => long(c.logCleanerMaxCompactionLagMs),
  "log.cleaner.min.cleanable.ratio": (c) => String(c.logCleanerMinCleanableRatio),
  "log.cleaner.min.compaction.lag.ms": (c) => long(c.logCleanerMinCompactionLagMs),
  "log.cleaner.threads": (c) => String(c.logCleanerThreads),
  "log.cleaner.enable": (c) => String(c.logCleanerEnable),
  "log.flush.interval.messages": (c) => long(c.logFlushIntervalMessages),
  "log.flush.interval.ms": (c) => long(c.logFlushIntervalMs),
  "log.message.timestamp.type": (c) => c.logMessageTimestampType,
  "log.retention.bytes": (c) => String(c.logRetentionBytes),
  "log.retention.ms": (c) => long(c.logRetentionMs),
  "log.roll.ms": (c) => long(c.logRollMs),
  "log.segment.bytes": (c) => String(c.logSegmentBytes),
  "message.max.bytes": (c) => String(c.messageMaxBytes),
  "min.insync.replicas": (c) => String(c.minInsyncReplicas),
  "mirror.metadata.refresh.interval.ms": (c) => String(c.mirrorMetadataRefreshIntervalMs),
  "leader.replication.throttled.rate": (c) => long(c.leaderReplicationThrottledRate),
  "follower.replication.throttled.rate": (c) => long(c.followerReplicationThrottledRate),
  "mirror.replication.throttled.rate": (c) => long(c.mirrorReplicationThrottledRate),
  "replication.quota.window.num": (c) => String(c.replicationQuotaWindowNum),
  "replication.quota.window.size.seconds": (c) => String(c.replicationQuotaWindowSizeSeconds),
  "quota.window.num": (c) => String(c.quotaWindowNum),
  "quota.window.size.seconds": (c) => String(c.quotaWindowSizeSeconds),
  "controller.quota.window.num": (c) => String(c.controllerQuotaWindowNum),
  "controller.quota.window.size.seconds": (c) => String(c.controllerQuotaWindowSizeSeconds),
  "unclean.leader.election.enable": (c) => String(c.uncleanLeaderElectionEnable),
  "node.id": (c) => String(c.nodeId),
  "auto.create.topics.enable": (c) => String(c.autoCreateTopicsEnable),
  "num.partitions": (c) => String(c.numPartitions),
  "default.replication.factor": (c) => String(c.defaultReplicationFactor),
  "socket.request.max.bytes": (c) => String(c.socketRequestMaxBytes),
  "offsets.topic.num.partitions": (c) => String(c.offsetsTopicNumPartitions),
  "offsets.topic.replication.factor": (c) => String(c.offsetsTopicReplicationFactor),
  "offsets.topic.segment.bytes": (c) => String(c.offsetsTopicSegmentBytes),
  "transaction.state.log.segment.bytes": (c) => String(c.transactionStateLogSegmentBytes),
  "replica.lag.time.max.ms": (c) => String(c.replicaLagTimeMaxMs)
}

/** Properties keys that set the same value as a dynamic key (Kafka's synonyms). */
const PROPERTY_SYNONYMS: Readonly<Record<string, ReadonlyArray<string>>> = {
  "log.retention.ms": ["log.retention.ms", "log.retention.hours"],
  "log.roll.ms": ["log.roll.ms", "log.roll.hours"],
  "node.id": ["node.id", "broker.id"]
}

/** The read-only keys a broker describes besides the dynamic ones. */
const READ_ONLY_DESCRIBED = Object.keys(VALUE_OF).filter((k) => !ConfigurationControl.BROKER_CONFIG_DEFS.has(k))

export interface Resolved {
  readonly name: string
  readonly value: string
  readonly source: number
  /** Every layer that sets the key, the one in force first. */
  readonly synonyms: ReadonlyArray<{ readonly name: string; readonly value: string; readonly source: number }>
}

/** The value of a broker key in force and its source, with the layers beneath it. */
export const resolve = (layers: Layers, name: string): Resolved => {
  const synonyms: Array<{ name: string; value: string; source: number }> = []
  const perBroker = layers.perBroker.get(name)
  if (perBroker !== undefined) synonyms.push({ name, value: perBroker, source: Source.DYNAMIC_BROKER_CONFIG })
  const clusterDefault = layers.clusterDefault.get(name)
  if (clusterDefault !== undefined)
    synonyms.push({ name, value: clusterDefault, source: Source.DYNAMIC_DEFAULT_BROKER_CONFIG })
  const render = VALUE_OF[name]
  const props = layers.config.properties
  const fromProps = (PROPERTY_SYNONYMS[name] ?? [name]).find((k) => props.has(k))
  if (fromProps !== undefined)
    synonyms.push({
      name: fromProps,
      value: fromProps === name && render !== undefined ? render(layers.config) : (props.get(fromProps) ?? ""),
      source: Source.STATIC_BROKER_CONFIG
    })
  const builtIn =
    render !== undefined
      ? render(BrokerConfig.defaults)
      : (ConfigurationControl.BROKER_CONFIG_DEFS.get(name)?.default ?? "")
  synonyms.push({ name, value: builtIn, source: Source.DEFAULT_CONFIG })
  const first = synonyms[0]!
  // Set through a synonym (log.retention.hours): the value in force is the key's own, as parsed.
  const value =
    first.source === Source.STATIC_BROKER_CONFIG && render !== undefined ? render(layers.config) : first.value
  return { name, value, source: first.source, synonyms }
}

export interface DescribedConfig {
  readonly name: string
  /** Null for a secret (`isSensitive`), as Kafka answers. */
  readonly value: string | null
  readonly readOnly: boolean
  readonly configSource: number
  readonly isDefault: boolean
  readonly isSensitive: boolean
  readonly synonyms: ReadonlyArray<{ readonly name: string; readonly value: string | null; readonly source: number }>
}

/** A described config with its secrets (and its synonyms' values) hidden. */
const hidingSecrets = (c: DescribedConfig): DescribedConfig =>
  ConfigurationControl.isSensitive(ConfigurationControl.ResourceType.BROKER, c.name)
    ? { ...c, value: null, isSensitive: true, synonyms: c.synonyms.map((s) => ({ ...s, value: null })) }
    : c

/**
 * The entries of a broker resource as DescribeConfigs shows them: for this broker, every dynamic key
 * and the read-only ones with the source in force; for the cluster default (""), the dynamic default
 * entries only, as Kafka shows them.
 */
export const describeBroker = (
  layers: Layers,
  resourceName: string,
  includeSynonyms: boolean
): ReadonlyArray<DescribedConfig> => {
  if (resourceName === "")
    return [...layers.clusterDefault]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, value]) => ({
        name,
        value,
        readOnly: false,
        configSource: Source.DYNAMIC_DEFAULT_BROKER_CONFIG,
        isDefault: false,
        isSensitive: false,
        synonyms: includeSynonyms ? [{ name, value, source: Source.DYNAMIC_DEFAULT_BROKER_CONFIG }] : []
      }))
      .map(hidingSecrets)
  const names = [...ConfigurationControl.BROKER_CONFIG_DEFS.keys(), ...READ_ONLY_DESCRIBED].sort()
  return names
    .map((name) => {
      const r = resolve(layers, name)
      return {
        name,
        value: r.value,
        readOnly: !ConfigurationControl.BROKER_CONFIG_DEFS.has(name),
        configSource: r.source,
        isDefault: r.source === Source.DEFAULT_CONFIG,
        isSensitive: false,
        synonyms: includeSynonyms ? r.synonyms : []
      }
    })
    .map(hidingSecrets)
}
