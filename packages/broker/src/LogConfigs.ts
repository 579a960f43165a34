/**
 * The storage config of a partition: the broker's log defaults overridden by its topic's configs.
 */
import { PartitionLog } from "@clustermirror/storage"
import type { BrokerConfig } from "./BrokerConfig.js"

/** The log config of a topic: broker defaults overridden by the topic's configs. */
export const logConfigFor = (
  config: BrokerConfig,
  topic: { readonly configs: ReadonlyMap<string, string> } | undefined
): PartitionLog.LogConfig => {
  const c = topic?.configs ?? new Map<string, string>()
  const num = (key: string, fallback: number) => {
    const v = c.get(key)
    return v === undefined ? fallback : Math.min(Number(v), Number.MAX_SAFE_INTEGER)
  }
  const tsType = c.get("message.timestamp.type") ?? config.logMessageTimestampType
  return {
    ...PartitionLog.defaultConfig,
    segmentBytes: num("segment.bytes", config.logSegmentBytes),
    retentionBytes: num("retention.bytes", config.logRetentionBytes),
    retentionMs: num("retention.ms", config.logRetentionMs),
    flushMessages: num("flush.messages", config.logFlushIntervalMessages),
    flushMs: num("flush.ms", config.logFlushIntervalMs),
    maxMessageBytes: num("max.message.bytes", config.messageMaxBytes),
    indexIntervalBytes: num("index.interval.bytes", PartitionLog.defaultConfig.indexIntervalBytes),
    messageTimestampType: tsType === "LogAppendTime" ? "LogAppendTime" : "CreateTime"
  }
}
