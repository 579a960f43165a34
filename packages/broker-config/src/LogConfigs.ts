/**
 * The storage config of a partition and the topic configs in force: the broker's log defaults (its
 * properties overridden by the dynamic broker configs) overridden by the topic's own configs. A topic
 * key left unset takes the value of its broker synonym (`max.message.bytes` ← `message.max.bytes`),
 * as in Kafka, and DescribeConfigs shows where that value comes from.
 */
import { ConfigurationControl } from "@clustermirror/controller"
import { PartitionLog } from "@clustermirror/storage"
import type { BrokerConfig } from "./BrokerConfig.js"
import * as DynamicBrokerConfig from "./DynamicBrokerConfig.js"

/** Topic keys whose default is a broker config (Kafka's topic config synonyms). */
export const BROKER_SYNONYMS: ReadonlyMap<string, string> = new Map([
  ["cleanup.policy", "log.cleanup.policy"],
  ["delete.retention.ms", "log.cleaner.delete.retention.ms"],
  ["max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"],
  ["min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"],
  ["min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"],
  ["flush.messages", "log.flush.interval.messages"],
  ["flush.ms", "log.flush.interval.ms"],
  ["max.message.bytes", "message.max.bytes"],
  ["message.timestamp.type", "log.message.timestamp.type"],
  ["min.insync.replicas", "min.insync.replicas"],
  ["retention.bytes", "log.retention.bytes"],
  ["retention.ms", "log.retention.ms"],
  ["segment.bytes", "log.segment.bytes"],
  ["segment.ms", "log.roll.ms"],
  ["unclean.leader.election.enable", "unclean.leader.election.enable"]
])

type TopicConfigs = { readonly configs: ReadonlyMap<string, string> } | undefined

/** The log config of a topic: the broker's config in force overridden by the topic's configs. */
export const logConfigFor = (config: BrokerConfig, topic: TopicConfigs): PartitionLog.LogConfig => {
  const c = topic?.configs ?? new Map<string, string>()
  const num = (key: string, fallback: number) => {
    const v = c.get(key)
    return v === undefined ? fallback : Math.min(Number(v), Number.MAX_SAFE_INTEGER)
  }
  const tsType = c.get("message.timestamp.type") ?? config.logMessageTimestampType
  return {
    ...PartitionLog.defaultConfig,
    segmentBytes: num("segment.bytes", config.logSegmentBytes),
    segmentMs: num("segment.ms", config.logRollMs),
    retentionBytes: num("retention.bytes", config.logRetentionBytes),
    retentionMs: num("retention.ms", config.logRetentionMs),
    flushMessages: num("flush.messages", config.logFlushIntervalMessages),
    flushMs: num("flush.ms", config.logFlushIntervalMs),
    maxMessageBytes: num("max.message.bytes", config.messageMaxBytes),
    indexIntervalBytes: num("index.interval.bytes", PartitionLog.defaultConfig.indexIntervalBytes),
    messageTimestampType: tsType === "LogAppendTime" ? "LogAppendTime" : "CreateTime",
    compact: cleanupPolicyOf(config, topic).includes("compact"),
    deleteRetentionMs: num("delete.retention.ms", config.logCleanerDeleteRetentionMs),
    minCleanableDirtyRatio: num("min.cleanable.dirty.ratio", config.logCleanerMinCleanableRatio),
    minCompactionLagMs: num("min.compaction.lag.ms", config.logCleanerMinCompactionLagMs),
    maxCompactionLagMs: num("max.compaction.lag.ms", config.logCleanerMaxCompactionLagMs)
  }
}

/** The topic's `cleanup.policy` in force (its own, else `log.cleanup.policy`), as a list. */
export const cleanupPolicyOf = (config: BrokerConfig, topic: TopicConfigs): ReadonlyArray<string> =>
  (topic?.configs.get("cleanup.policy") ?? config.logCleanupPolicy)
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")

/** The topic's `min.insync.replicas` in force: its own, else the broker's config in force. */
export const minInsyncReplicasFor = (config: BrokerConfig, topic: TopicConfigs): number => {
  const v = topic?.configs.get("min.insync.replicas")
  const n = v === undefined ? Number.NaN : Number(v)
  return Number.isInteger(n) && n >= 1 ? n : config.minInsyncReplicas
}

/**
 * A topic's configs as DescribeConfigs shows them: every topic key, set ones as TOPIC_CONFIG, unset
 * ones with the value and source of their broker synonym, or the topic default.
 */
export const describeTopic = (
  layers: DynamicBrokerConfig.Layers,
  topicConfigs: ReadonlyMap<string, string>,
  includeSynonyms: boolean
): ReadonlyArray<DynamicBrokerConfig.DescribedConfig> =>
  [...ConfigurationControl.TOPIC_CONFIGS].map(([name, dflt]) => {
    const set = topicConfigs.get(name)
    const brokerKey = BROKER_SYNONYMS.get(name)
    const broker = brokerKey === undefined ? undefined : DynamicBrokerConfig.resolve(layers, brokerKey)
    const synonyms = [
      ...(set === undefined ? [] : [{ name, value: set, source: DynamicBrokerConfig.Source.TOPIC_CONFIG }]),
      ...(broker?.synonyms ?? [{ name, value: dflt, source: DynamicBrokerConfig.Source.DEFAULT_CONFIG }])
    ]
    const first = synonyms[0]!
    return {
      name,
      value: first.value,
      readOnly: false,
      configSource: first.source,
      isDefault: first.source === DynamicBrokerConfig.Source.DEFAULT_CONFIG,
      isSensitive: false,
      synonyms: includeSynonyms ? synonyms : []
    }
  })
