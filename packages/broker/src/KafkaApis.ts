/**
 * Request handlers: translate each Kafka API's wire request into calls on the broker's components
 * (LocalMetadata, ReplicaManager, GroupCoordinator, ProducerIdManager) and their results back into the
 * wire response. Domain decisions live in those components, not here.
 */
import {
  ApiVersions,
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  DescribeCluster,
  DescribeConfigs,
  Errors,
  Fetch,
  IncrementalAlterConfigs,
  InitProducerId,
  ListOffsets,
  Metadata,
  OffsetForLeaderEpoch,
  Produce,
  Uuid
} from "@clustermirror/protocol"
import type { BrokerConfig } from "./BrokerConfig.js"
import type { LocalMetadata } from "./LocalMetadata.js"
import type * as ReplicaManager from "./ReplicaManager.js"
import { type Handlers, NoResponse } from "./RequestChannel.js"
import * as TopicControl from "./TopicControl.js"

const ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
const UNSET_OPS = -2147483648
/** Internal topics: listed as internal, not writable by clients. */
export const INTERNAL_TOPICS = new Set(["__consumer_offsets", "__transaction_state", "__mirror_state"])

export interface BrokerContext {
  readonly config: BrokerConfig
  readonly clusterId: string
  readonly metadata: LocalMetadata
  readonly replicas: ReplicaManager.ReplicaManager
  readonly producerIds: ProducerIdManager
}

export const clusterView = (config: BrokerConfig): TopicControl.ClusterView => ({
  liveBrokers: [config.nodeId],
  defaultPartitions: config.numPartitions,
  defaultReplicationFactor: config.defaultReplicationFactor
})

/** Hands out producer ids from blocks recorded in the metadata log. */
export class ProducerIdManager {
  private next = 0n
  private end = 0n
  constructor(
    private readonly metadata: LocalMetadata,
    private readonly nodeId: number
  ) {}
  allocate(): bigint {
    if (this.next >= this.end) {
      const block = this.metadata.write((image) => TopicControl.allocateProducerIds(image, this.nodeId))
      this.next = block.firstProducerId
      this.end = block.firstProducerId + block.size
    }
    return this.next++
  }
}

const createTopic = (ctx: BrokerContext, name: string): TopicControl.CreateTopicResult | undefined =>
  ctx.metadata.write((image) =>
    TopicControl.createTopics(
      image,
      [{ name, numPartitions: -1, replicationFactor: -1, assignments: [], configs: [], topicId: null }],
      clusterView(ctx.config),
      Uuid.random,
      false
    )
  )[0]

const describeTopic = (ctx: BrokerContext, topic: TopicControl.Topic) => ({
  errorCode: 0,
  name: topic.name,
  topicId: topic.topicId,
  isInternal: INTERNAL_TOPICS.has(topic.name),
  partitions: topic.partitions.map((p) => ({
    errorCode: 0,
    partitionIndex: p.partitionId,
    leaderId: p.leader,
    leaderEpoch: ctx.replicas.get(topic.name, p.partitionId)?.leaderEpoch ?? p.leaderEpoch,
    replicaNodes: p.replicas,
    isrNodes: p.isr,
    offlineReplicas: []
  })),
  topicAuthorizedOperations: UNSET_OPS
})

export const register = (handlers: Handlers, ctx: BrokerContext): Handlers =>
  handlers
    .register(ApiVersions.api, () => ({
      errorCode: 0,
      apiKeys: handlers.versions(),
      throttleTimeMs: 0
    }))
    .register(Metadata.api, (req, request) => {
      const image = ctx.metadata.image
      const all = request.topics === null || (req.apiVersion === 0 && request.topics.length === 0)
      const topics = all
        ? [...image.byId.values()].sort((a, b) => a.name.localeCompare(b.name)).map((t) => describeTopic(ctx, t))
        : request.topics!.map((t) => {
            const byId = t.name === null || t.name === ""
            const found = byId
              ? ctx.metadata.image.byId.get(t.topicId)
              : TopicControl.topicByName(ctx.metadata.image, t.name!)
            if (found !== undefined) return describeTopic(ctx, found)
            const unknown = {
              errorCode: byId ? Errors.ErrorCode.UNKNOWN_TOPIC_ID : Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              name: t.name,
              topicId: t.topicId,
              isInternal: false,
              partitions: [],
              topicAuthorizedOperations: UNSET_OPS
            }
            if (byId || !ctx.config.autoCreateTopicsEnable || !request.allowAutoTopicCreation) return unknown
            if (TopicControl.validateTopicName(t.name!) !== null)
              return { ...unknown, errorCode: Errors.ErrorCode.INVALID_TOPIC_EXCEPTION }
            const created = createTopic(ctx, t.name!)
            const topic = TopicControl.topicByName(ctx.metadata.image, t.name!)
            if (created === undefined || created.errorCode !== 0 || topic === undefined)
              return { ...unknown, errorCode: created?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR }
            return describeTopic(ctx, topic)
          })
      return {
        throttleTimeMs: 0,
        brokers: [{ nodeId: ctx.config.nodeId, host: ctx.config.advertisedHost, port: ctx.config.port, rack: null }],
        clusterId: ctx.clusterId,
        controllerId: ctx.config.nodeId,
        topics,
        clusterAuthorizedOperations: UNSET_OPS
      }
    })
    .register(
      Produce.api,
      (req, request) => {
        // v0-2 carry message formats 0/1, which this broker does not store: refused per partition, as
        // Kafka 4 does while still advertising them (librdkafka's feature detection needs them listed).
        const refuse =
          req.apiVersion < 3
            ? Errors.ErrorCode.UNSUPPORTED_VERSION
            : request.acks !== 0 && request.acks !== 1 && request.acks !== -1
              ? Errors.ErrorCode.INVALID_REQUIRED_ACKS
              : 0
        if (refuse !== 0) {
          const code = refuse
          return {
            responses: request.topicData.map((t) => ({
              name: t.name,
              topicId: t.topicId,
              partitionResponses: t.partitionData.map((p) => ({ index: p.index, errorCode: code, baseOffset: -1n }))
            })),
            throttleTimeMs: 0
          }
        }
        const pending = request.topicData.map((t) => {
          const name = t.name !== "" ? t.name : (ctx.metadata.image.byId.get(t.topicId)?.name ?? "")
          return {
            name: t.name,
            topicId: t.topicId,
            partitionResponses: t.partitionData.map((p) =>
              ctx.replicas.appendAsLeader(
                name,
                p.index,
                p.records as Buffer | null,
                true,
                request.acks,
                request.timeoutMs
              )
            )
          }
        })
        if (request.acks === 0) return NoResponse
        const toWire = (index: number, r: ReplicaManager.ProduceResult) => ({
          index,
          errorCode: r.errorCode,
          baseOffset: r.baseOffset,
          logAppendTimeMs: r.logAppendTimeMs,
          logStartOffset: r.logStartOffset,
          errorMessage: r.errorCode === 0 ? null : r.errorMessage,
          currentLeader: r.currentLeader
        })
        const build = (done: ReadonlyArray<ReadonlyArray<ReplicaManager.ProduceResult>>) => ({
          responses: pending.map((t, i) => ({
            name: t.name,
            topicId: t.topicId,
            partitionResponses: done[i]!.map((r, j) => toWire(request.topicData[i]!.partitionData[j]!.index, r))
          })),
          throttleTimeMs: 0
        })
        const waiting = pending.some((t) => t.partitionResponses.some((r) => r instanceof Promise))
        if (!waiting)
          return build(pending.map((t) => t.partitionResponses as ReadonlyArray<ReplicaManager.ProduceResult>))
        return Promise.all(pending.map((t) => Promise.all(t.partitionResponses))).then(build)
      },
      { min: 0, max: Produce.api.maxVersion }
    )
    .register(
      Fetch.api,
      async (req, request) => {
        const byId = req.apiVersion >= 13
        const image = ctx.metadata.image
        const unknownIds = new Set<string>()
        const partitions = request.topics.flatMap((t) => {
          const name = byId ? image.byId.get(t.topicId)?.name : t.topic
          if (name === undefined) {
            unknownIds.add(t.topicId)
            return []
          }
          return t.partitions.map((p) => ({
            topic: name,
            partition: p.partition,
            fetchOffset: Number(p.fetchOffset),
            currentLeaderEpoch: p.currentLeaderEpoch,
            lastFetchedEpoch: p.lastFetchedEpoch,
            partitionMaxBytes: p.partitionMaxBytes
          }))
        })
        const results = await ctx.replicas.fetch({
          replicaId: req.apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId,
          maxWaitMs: unknownIds.size > 0 ? 0 : request.maxWaitMs,
          minBytes: request.minBytes,
          maxBytes: request.maxBytes,
          isolationLevel: request.isolationLevel,
          partitions
        })
        const byTopic = new Map<string, typeof results>()
        for (const r of results) {
          let list = byTopic.get(r.topic)
          if (list === undefined) byTopic.set(r.topic, (list = []))
          list.push(r)
        }
        const responses = request.topics.map((t) => {
          const name = byId ? image.byId.get(t.topicId)?.name : t.topic
          if (name === undefined)
            return {
              topic: "",
              topicId: t.topicId,
              partitions: t.partitions.map((p) => ({
                partitionIndex: p.partition,
                errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_ID,
                highWatermark: -1n,
                lastStableOffset: -1n,
                logStartOffset: -1n,
                records: Buffer.alloc(0)
              }))
            }
          const rs = byTopic.get(name) ?? []
          byTopic.delete(name)
          return {
            topic: name,
            topicId: t.topicId,
            partitions: rs.map((r) => ({
              partitionIndex: r.partition,
              errorCode: r.errorCode,
              highWatermark: r.highWatermark,
              lastStableOffset: r.lastStableOffset,
              logStartOffset: r.logStartOffset,
              abortedTransactions: r.abortedTransactions,
              preferredReadReplica: -1,
              divergingEpoch: r.divergingEpoch ?? { epoch: -1, endOffset: -1n },
              records: r.records,
              currentLeader:
                r.errorCode === Errors.ErrorCode.FENCED_LEADER_EPOCH ||
                r.errorCode === Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER
                  ? r.currentLeader
                  : { leaderId: -1, leaderEpoch: -1 }
            }))
          }
        })
        return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses }
      },
      { min: 0, max: Fetch.api.maxVersion }
    )
    .register(ListOffsets.api, (_req, request) => ({
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => {
          const r = ctx.replicas.listOffset(
            t.name,
            p.partitionIndex,
            Number(p.timestamp),
            request.isolationLevel,
            p.currentLeaderEpoch
          )
          return {
            partitionIndex: p.partitionIndex,
            errorCode: r.errorCode,
            oldStyleOffsets: [],
            timestamp: r.timestamp,
            offset: r.offset,
            leaderEpoch: r.leaderEpoch
          }
        })
      }))
    }))
    .register(OffsetForLeaderEpoch.api, (_req, request) => ({
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((p) => {
          const r = ctx.replicas.endOffsetForEpoch(t.topic, p.partition, p.leaderEpoch, p.currentLeaderEpoch)
          return { errorCode: r.errorCode, partition: p.partition, leaderEpoch: r.leaderEpoch, endOffset: r.endOffset }
        })
      }))
    }))
    .register(CreateTopics.api, (_req, request) => {
      const results = ctx.metadata.write((image) =>
        TopicControl.createTopics(
          image,
          request.topics.map((t) => ({
            name: t.name,
            numPartitions: t.numPartitions,
            replicationFactor: t.replicationFactor,
            assignments: t.assignments,
            configs: t.configs,
            topicId: t.mirrorInfo?.topicId ?? null
          })),
          clusterView(ctx.config),
          Uuid.random,
          request.validateOnly
        )
      )
      return {
        throttleTimeMs: 0,
        topics: results.map((r) => ({
          name: r.name,
          topicId: r.topicId,
          errorCode: r.errorCode,
          errorMessage: r.errorMessage,
          numPartitions: r.numPartitions,
          replicationFactor: r.replicationFactor,
          configs:
            r.errorCode === 0
              ? r.configs.map((c) => ({
                  name: c.name,
                  value: c.value,
                  readOnly: false,
                  configSource: 1,
                  isSensitive: false
                }))
              : null
        }))
      }
    })
    .register(DeleteTopics.api, (req, request) => {
      const targets =
        req.apiVersion >= 6
          ? request.topics.map((t) => ({ name: t.name, topicId: t.name === null ? t.topicId : null }))
          : request.topicNames.map((name) => ({ name, topicId: null }))
      const results = ctx.metadata.write((image) => TopicControl.deleteTopics(image, targets))
      return { throttleTimeMs: 0, responses: results.map((r) => ({ ...r })) }
    })
    .register(CreatePartitions.api, (_req, request) => ({
      throttleTimeMs: 0,
      results: ctx.metadata.write((image) =>
        TopicControl.createPartitions(
          image,
          request.topics.map((t) => ({ name: t.name, count: t.count })),
          clusterView(ctx.config),
          request.validateOnly
        )
      )
    }))
    .register(DescribeConfigs.api, (_req, request) => ({
      throttleTimeMs: 0,
      results: request.resources.map((r) => describeConfigs(ctx, r.resourceType, r.resourceName, r.configurationKeys))
    }))
    .register(IncrementalAlterConfigs.api, (_req, request) => ({
      throttleTimeMs: 0,
      responses: request.resources.map((r) => {
        if (r.resourceType !== TopicControl.TOPIC_RESOURCE)
          return {
            errorCode: Errors.ErrorCode.INVALID_REQUEST,
            errorMessage: `Altering configs of resource type ${r.resourceType} is not supported`,
            resourceType: r.resourceType,
            resourceName: r.resourceName
          }
        const res = ctx.metadata.write((image) =>
          TopicControl.alterTopicConfigs(
            image,
            r.resourceName,
            r.configs.map((c) => ({ name: c.name, op: c.configOperation, value: c.value })),
            request.validateOnly
          )
        )
        return { ...res, resourceType: r.resourceType, resourceName: r.resourceName }
      })
    }))
    .register(DescribeCluster.api, () => ({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      endpointType: 1,
      clusterId: ctx.clusterId,
      controllerId: ctx.config.nodeId,
      brokers: [
        {
          brokerId: ctx.config.nodeId,
          host: ctx.config.advertisedHost,
          port: ctx.config.port,
          rack: null,
          isFenced: false
        }
      ],
      clusterAuthorizedOperations: UNSET_OPS
    }))
    .register(InitProducerId.api, (_req, request) => {
      if (request.transactionalId !== null)
        return {
          throttleTimeMs: 0,
          errorCode: Errors.ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
          producerId: -1n,
          producerEpoch: -1
        }
      // An idempotent producer re-initialising with its id keeps it and bumps the epoch (KIP-360).
      if (request.producerId >= 0n && request.producerEpoch >= 0 && request.producerEpoch < 32767)
        return {
          throttleTimeMs: 0,
          errorCode: 0,
          producerId: request.producerId,
          producerEpoch: request.producerEpoch + 1
        }
      return { throttleTimeMs: 0, errorCode: 0, producerId: ctx.producerIds.allocate(), producerEpoch: 0 }
    })

const describeConfigs = (
  ctx: BrokerContext,
  resourceType: number,
  resourceName: string,
  keys: ReadonlyArray<string> | null
) => {
  const base = { resourceType, resourceName, errorMessage: null }
  const pick = <T extends { name: string }>(xs: T[]) => (keys === null ? xs : xs.filter((x) => keys.includes(x.name)))
  if (resourceType === TopicControl.TOPIC_RESOURCE) {
    const topic = TopicControl.topicByName(ctx.metadata.image, resourceName)
    if (topic === undefined)
      return {
        ...base,
        errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        errorMessage: `Topic ${resourceName} does not exist`,
        configs: []
      }
    const configs = [...TopicControl.TOPIC_CONFIGS].map(([name, def]) => {
      const set = topic.configs.get(name)
      return {
        name,
        value: set ?? def,
        readOnly: false,
        configSource: set !== undefined ? 1 : 5,
        isDefault: set === undefined,
        isSensitive: false,
        synonyms: []
      }
    })
    return { ...base, errorCode: 0, configs: pick(configs) }
  }
  if (resourceType === 4) {
    if (resourceName !== "" && resourceName !== String(ctx.config.nodeId))
      return {
        ...base,
        errorCode: Errors.ErrorCode.INVALID_REQUEST,
        errorMessage: `Unexpected broker id ${resourceName}`,
        configs: []
      }
    const c = ctx.config
    const entries: Array<[string, string]> = [
      ["node.id", String(c.nodeId)],
      ["auto.create.topics.enable", String(c.autoCreateTopicsEnable)],
      ["num.partitions", String(c.numPartitions)],
      ["default.replication.factor", String(c.defaultReplicationFactor)],
      ["message.max.bytes", String(c.messageMaxBytes)],
      ["log.segment.bytes", String(c.logSegmentBytes)],
      ["log.retention.ms", String(c.logRetentionMs)],
      ["log.retention.bytes", String(c.logRetentionBytes)],
      ["socket.request.max.bytes", String(c.socketRequestMaxBytes)],
      ["offsets.topic.num.partitions", String(c.offsetsTopicNumPartitions)]
    ]
    const configs = entries.map(([name, value]) => ({
      name,
      value,
      readOnly: true,
      configSource: 4,
      isDefault: false,
      isSensitive: false,
      synonyms: []
    }))
    return { ...base, errorCode: 0, configs: pick(configs) }
  }
  return {
    ...base,
    errorCode: Errors.ErrorCode.INVALID_REQUEST,
    errorMessage: `Unsupported resource type ${resourceType}`,
    configs: []
  }
}

export { ZERO_UUID }
