/**
 * The port through which the broker opens partition logs. `layer(dataDir)` keeps them in Kafka's on-disk
 * layout (`<dataDir>/<topic>-<partition>/00000000000000000000.log`, `.index`, `.timeindex`,
 * `leader-epoch-checkpoint`, `partition.metadata`); `layerMemory` keeps the same files in memory. Both pass
 * one contract suite. The store knows partitions by name only: no metadata, no mirrors.
 */
import { Buffer } from "node:buffer"
import { TopicPartitionMap } from "@clustermirror/protocol"
import { Context, Effect, Layer } from "effect"
import { LazyLog, type Materialize } from "./internal/LazyLog.js"
import { Log } from "./internal/Log.js"
import { fileRoot, memoryRoot, type Root } from "./internal/Volume.js"
import { defaultConfig, type LogConfig, type LogEvents, type PartitionLog } from "./PartitionLog.js"

const PARTITION_METADATA = "partition.metadata"

/** A partition found in the data directory. */
export interface StoredPartition {
  readonly topic: string
  readonly partition: number
  /** From `partition.metadata`, when present. */
  readonly topicId: string | undefined
}

export interface PartitionLogStoreService {
  /** Opens (creating or recovering) a partition log; the same instance while it stays open. */
  readonly open: (topic: string, partition: number, config?: Partial<LogConfig>, topicId?: string) => PartitionLog
  /** The open log of a partition, if any. */
  readonly get: (topic: string, partition: number) => PartitionLog | undefined
  /** Closes the log if open and removes its files. */
  readonly delete: (topic: string, partition: number) => void
  /** Partitions present in storage (open or not), for restart. */
  readonly list: () => ReadonlyArray<StoredPartition>
  /** Closes every open log cleanly. */
  readonly closeAll: () => void
}

// Logs with the same settings share one config object: a broker with thousands of idle partitions
// would otherwise hold a copy per partition.
const interned = new Map<string, LogConfig>()
const internConfig = (c: LogConfig): LogConfig => {
  const key = JSON.stringify(c)
  const found = interned.get(key)
  if (found !== undefined) return found
  if (interned.size >= 10_000) interned.clear()
  interned.set(key, c)
  return c
}

export class PartitionLogStore extends Context.Tag("@clustermirror/storage/PartitionLogStore")<
  PartitionLogStore,
  PartitionLogStoreService
>() {}

const dirName = (topic: string, partition: number): string => `${topic}-${partition}`

const parseDirName = (dir: string): { topic: string; partition: number } | undefined => {
  const dash = dir.lastIndexOf("-")
  if (dash <= 0) return undefined
  const partition = Number(dir.slice(dash + 1))
  if (!/^\d+$/.test(dir.slice(dash + 1)) || !Number.isSafeInteger(partition)) return undefined
  return { topic: dir.slice(0, dash), partition }
}

const parseTopicId = (bytes: Uint8Array | undefined): string | undefined => {
  if (bytes === undefined) return undefined
  const match = /^topic_id:\s*(\S+)\s*$/m.exec(Buffer.from(bytes).toString("utf8"))
  return match?.[1]
}

/** A store over any root of partition directories; `events` hears about what loading logs found. */
export const make = (root: Root, events: LogEvents = {}): PartitionLogStoreService => {
  const open = new TopicPartitionMap<Log | LazyLog>()
  const live = (topic: string, partition: number): Log | LazyLog | undefined => {
    const log = open.get(topic, partition)
    if (log?.isClosed) {
      open.delete(topic, partition)
      return undefined
    }
    return log
  }
  const materialize: Materialize = (topic, partition, topicId, config) => {
    const volume = root.volume(dirName(topic, partition))
    if (topicId !== undefined && parseTopicId(volume.readFile(PARTITION_METADATA)) !== topicId)
      volume.writeFileAtomic(PARTITION_METADATA, Buffer.from(`version: 0\ntopic_id: ${topicId}\n`))
    return new Log(topic, partition, volume, config, events)
  }
  return {
    open: (topic, partition, config, topicId) => {
      const full = internConfig({ ...defaultConfig, ...config })
      const existing = live(topic, partition)
      if (existing !== undefined) {
        existing.updateConfig(full)
        return existing
      }
      // A partition that never held a record gets its directory and files with its first write.
      const log = root.exists(dirName(topic, partition))
        ? materialize(topic, partition, topicId, full)
        : new LazyLog(topic, partition, topicId, full, materialize)
      open.set(topic, partition, log)
      return log
    },
    get: (topic, partition) => live(topic, partition),
    delete: (topic, partition) => {
      const log = open.get(topic, partition)
      open.delete(topic, partition)
      if (log !== undefined && !log.isClosed) log.close()
      root.removeDir(dirName(topic, partition))
    },
    list: () => {
      const found: StoredPartition[] = []
      for (const dir of root.listDirs()) {
        const parsed = parseDirName(dir)
        if (parsed === undefined) continue
        found.push({ ...parsed, topicId: parseTopicId(root.volume(dir).readFile(PARTITION_METADATA)) })
      }
      return found
    },
    closeAll: () => {
      for (const log of open.values()) if (!log.isClosed) log.close()
      open.clear()
    }
  }
}

/** A store keeping partition logs under `dataDir`. */
export const makeFileStore = (dataDir: string, events: LogEvents = {}): PartitionLogStoreService =>
  make(fileRoot(dataDir), events)

/** A store keeping partition logs in memory (same contract as files). */
export const makeMemoryStore = (events: LogEvents = {}): PartitionLogStoreService => make(memoryRoot(), events)

const scoped = (acquire: () => PartitionLogStoreService): Layer.Layer<PartitionLogStore> =>
  Layer.scoped(
    PartitionLogStore,
    Effect.acquireRelease(Effect.sync(acquire), (store) => Effect.sync(() => store.closeAll()))
  )

/** File-backed logs under `dataDir`; every log is closed cleanly when the layer is released. */
export const layer = (dataDir: string): Layer.Layer<PartitionLogStore> => scoped(() => makeFileStore(dataDir))

/** In-memory logs. */
export const layerMemory: Layer.Layer<PartitionLogStore> = scoped(makeMemoryStore)
