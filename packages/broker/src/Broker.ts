/**
 * A broker node: composes the socket server, request handlers, local metadata, replica manager and
 * group coordinator over a data directory, and shuts them down in reverse order.
 */
import { Uuid } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { BrokerConfig } from "./BrokerConfig.js"
import * as GroupApis from "./GroupApis.js"
import { type BrokerContext, INTERNAL_TOPICS, ProducerIdManager, register } from "./KafkaApis.js"
import * as LocalAdmin from "./LocalAdmin.js"
import { LocalMetadata } from "./LocalMetadata.js"
import { fileJournal } from "./MetadataJournal.js"
import { ReplicaManager } from "./ReplicaManager.js"
import { Handlers } from "./RequestChannel.js"
import * as SocketServer from "./SocketServer.js"
import type * as TopicControl from "./TopicControl.js"

export interface Broker {
  readonly port: number
  readonly clusterId: string
  readonly nodeId: number
  readonly replicas: ReplicaManager
  readonly metadata: LocalMetadata
  readonly close: () => Promise<void>
}

/** Reads `meta.properties` or creates it with a new cluster id, as Kafka's storage format does. */
const loadOrCreateClusterId = (dataDir: string, nodeId: number): string => {
  const file = path.join(dataDir, "meta.properties")
  if (fs.existsSync(file)) {
    const m = /^cluster\.id=(.+)$/m.exec(fs.readFileSync(file, "utf8"))
    if (m) return m[1]!.trim()
  }
  const clusterId = Uuid.random()
  const tmp = `${file}.tmp`
  fs.writeFileSync(tmp, `version=1\ncluster.id=${clusterId}\nnode.id=${nodeId}\n`)
  fs.renameSync(tmp, file)
  return clusterId
}

/** The log config of a topic: broker defaults overridden by the topic's configs. */
export const logConfigFor = (config: BrokerConfig, topic: TopicControl.Topic | undefined): PartitionLog.LogConfig => {
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

export const start = async (requested: BrokerConfig, log: (line: string) => void = () => {}): Promise<Broker> => {
  fs.mkdirSync(requested.dataDir, { recursive: true })
  // Listen first, so that an ephemeral port (0) is known before it is advertised.
  const handlers = new Handlers()
  const server = await SocketServer.start({
    host: requested.host,
    port: requested.port,
    maxFrameBytes: requested.socketRequestMaxBytes,
    handle: handlers.frameHandler(log),
    log
  })
  const config: BrokerConfig = { ...requested, port: server.port }
  const clusterId = loadOrCreateClusterId(config.dataDir, config.nodeId)
  const store = PartitionLogStore.makeFileStore(config.dataDir)
  const metadata = new LocalMetadata(
    fileJournal(store, { ...PartitionLog.defaultConfig, segmentBytes: 64 * 1024 * 1024 })
  )
  const replicas = new ReplicaManager({ store, nodeId: config.nodeId })

  const openTopic = (topic: TopicControl.Topic) => {
    for (const p of topic.partitions)
      replicas.applyRegistration(
        topic.name,
        p.partitionId,
        topic.topicId,
        p,
        logConfigFor(config, topic),
        INTERNAL_TOPICS.has(topic.name)
      )
  }
  // Partitions follow the metadata: created, reconfigured and removed by replaying records.
  metadata.subscribe((records, before, after) => {
    for (const r of records) {
      if (r.type === "RemoveTopicRecord") {
        const t = before.byId.get(r.data.topicId)
        if (t) for (const p of t.partitions) replicas.deletePartition(t.name, p.partitionId)
      }
    }
    const touched = new Set<string>()
    for (const r of records) {
      if (r.type === "PartitionRecord") touched.add(r.data.topicId)
      if (r.type === "TopicRecord") touched.add(r.data.topicId)
    }
    for (const id of touched) {
      const t = after.byId.get(id)
      if (t) openTopic(t)
    }
  })
  for (const t of metadata.image.byId.values()) openTopic(t)

  const admin = LocalAdmin.admin(metadata, config)
  const ctx: BrokerContext = {
    config,
    view: LocalAdmin.view(metadata, config, clusterId),
    admin,
    replicas,
    producerIds: new ProducerIdManager(admin)
  }
  register(handlers, ctx)
  LocalAdmin.register(handlers, metadata, config)
  await GroupApis.ensureOffsetsTopic(ctx, 1)
  const groups = new GroupApis.GroupShards(ctx)
  const offsets = ctx.view.topicByName(GroupApis.OFFSETS_TOPIC)
  for (const p of offsets?.partitions ?? []) groups.onLeadership(p.partitionId, p.leader === config.nodeId)
  GroupApis.register(handlers, ctx, groups)

  const retention = setInterval(() => replicas.enforceRetention(), config.logRetentionCheckIntervalMs)
  retention.unref()
  log(`clustermirror broker ${config.nodeId} (cluster ${clusterId}) listening on ${config.host}:${server.port}`)
  let closed = false
  return {
    port: server.port,
    clusterId,
    nodeId: config.nodeId,
    replicas,
    metadata,
    close: async () => {
      if (closed) return
      closed = true
      clearInterval(retention)
      await server.close()
      await groups.close()
      replicas.close()
      metadata.close()
    }
  }
}

/** The broker as a scoped resource: started on acquire, closed on release. */
export const scoped = (config: BrokerConfig, log?: (line: string) => void) =>
  Effect.acquireRelease(
    Effect.promise(() => start(config, log)),
    (b) => Effect.promise(() => b.close())
  )
