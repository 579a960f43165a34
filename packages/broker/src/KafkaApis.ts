/**
 * Request handlers: translate each Kafka API's wire request into calls on the broker's components
 * (the metadata view, ReplicaManager, GroupCoordinator, ProducerIdManager) and their results back into the
 * wire response. Domain decisions live in those components, not here.
 */
import {
  AlterReplicaLogDirs,
  ApiVersions,
  SaslAuthenticate,
  SaslHandshake,
  DescribeCluster,
  DescribeConfigs,
  DescribeLogDirs,
  DescribeProducers,
  DeleteRecords,
  Errors,
  Fetch,
  InitProducerId,
  ListOffsets,
  Metadata,
  OffsetForLeaderEpoch,
  Produce,
  RecordBatch,
  WriteTxnMarkers
} from "@clustermirror/protocol"
import type { BrokerConfig } from "@clustermirror/broker-config/BrokerConfig"
import type * as DynamicBrokerConfig from "@clustermirror/broker-config/DynamicBrokerConfig"
import * as BrokerDescribeConfigs from "@clustermirror/broker-config/DescribeConfigs"
import type * as MetadataView from "./MetadataView.js"
import type * as MirrorApis from "@clustermirror/mirror/MirrorApis"
import type * as ReplicaManager from "@clustermirror/replication/ReplicaManager"
import * as ProducerStates from "@clustermirror/replication/ProducerStates"
import * as TxnMarkers from "@clustermirror/replication/TxnMarkers"
import * as ReplicaDeleteRecords from "@clustermirror/replication/DeleteRecords"
import * as LogDirs from "@clustermirror/replication/LogDirs"
import { type Handlers, NoResponse } from "@clustermirror/network/RequestChannel"
import { type FeatureControl, MetadataQuorum } from "@clustermirror/controller"
import type { ProducerIdManager } from "@clustermirror/transaction-coordinator"

const UNSET_OPS = -2147483648
/** Internal topics: listed as internal, not writable by clients. */
export const INTERNAL_TOPICS = new Set(["__consumer_offsets", "__transaction_state", "__mirror_state"])

export interface BrokerContext {
  /** The config in force: the properties overridden by the dynamic broker configs. */
  readonly config: BrokerConfig
  /** The layers behind `config`, for DescribeConfigs' sources; without it, only the properties count. */
  readonly layers?: () => DynamicBrokerConfig.Layers
  readonly view: MetadataView.MetadataView
  readonly admin: MetadataView.TopicAdmin
  readonly replicas: ReplicaManager.ReplicaManager
  readonly producerIds: ProducerIdManager.ProducerIdManager
  /** DescribeConfigs of a KIP-1279 cluster mirror (resource type 64), where the metadata holds mirrors. */
  readonly describeMirrorConfigs?: (
    name: string,
    keys: ReadonlyArray<string> | null
  ) => ReturnType<typeof MirrorApis.describeMirrorConfigs>
  /**
   * KIP-1279 §6.8: whether clients may produce to a partition of a mirror topic this broker leads: its
   * actual mirror state is STOPPED ("writable"), its stop is under way ("stopping": a retriable refusal),
   * or it mirrors ("readOnly"). Without it, mirror topics are read-only.
   */
  readonly mirrorProduceState?: (topic: string, partition: number) => "writable" | "stopping" | "readOnly"
  /** The coordinators that write the transaction markers of their own topic's partitions. */
  readonly markerWriterFor?: (topic: string) => TxnMarkers.CoordinatorMarkerWriter | undefined
  /** ApiVersions' feature fields for a request's version (`FeatureControl.apiVersionsFeatures`). */
  readonly features?: (apiVersion: number) => ReturnType<typeof FeatureControl.apiVersionsFeatures>
}

/**
 * A topic as Metadata describes it to a client on `listenerName`: like Kafka, a partition whose leader is
 * registered but has no endpoint on that listener gets LISTENER_NOT_FOUND and no leader, and replicas
 * without one are offline.
 */
const describeTopic = (ctx: BrokerContext, topic: MetadataView.TopicView, listenerName: string) => ({
  errorCode: 0,
  name: topic.name,
  topicId: topic.topicId,
  isInternal: INTERNAL_TOPICS.has(topic.name),
  partitions: topic.partitions.map((p) => {
    const noListener =
      p.leader >= 0 && ctx.view.broker(p.leader) !== undefined && ctx.view.broker(p.leader, listenerName) === undefined
    return {
      errorCode: noListener ? Errors.ErrorCode.LISTENER_NOT_FOUND : 0,
      partitionIndex: p.partitionId,
      leaderId: noListener ? -1 : p.leader,
      leaderEpoch: p.leaderEpoch,
      replicaNodes: p.replicas,
      isrNodes: p.isr,
      offlineReplicas: p.replicas.filter((r) => ctx.view.broker(r, listenerName) === undefined)
    }
  }),
  topicAuthorizedOperations: UNSET_OPS
})

/** Whether a partition takes writes: mirror topics only once stopped (KIP-1279 §6.8). */
const writeState = (ctx: BrokerContext, topic: string, partition: number): "writable" | "stopping" | "readOnly" =>
  ctx.view.topicByName(topic)?.readOnly === true
    ? (ctx.mirrorProduceState?.(topic, partition) ?? "readOnly")
    : "writable"

export const register = (handlers: Handlers, ctx: BrokerContext): Handlers =>
  handlers
    .register(ApiVersions.api, (req) => ({
      errorCode: 0,
      apiKeys: handlers.versions(),
      throttleTimeMs: 0,
      ...ctx.features?.(req.apiVersion)
    }))
    // On SASL listeners the authenticator answers these; here the listener has no SASL, as Kafka says.
    .register(SaslHandshake.api, () => ({ errorCode: Errors.ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] }))
    .register(SaslAuthenticate.api, () => ({
      errorCode: Errors.ErrorCode.ILLEGAL_SASL_STATE,
      errorMessage: "SaslAuthenticate on a listener without SASL",
      authBytes: Buffer.alloc(0),
      sessionLifetimeMs: 0n
    }))
    .register(Metadata.api, async (req, request) => {
      const all = request.topics === null || (req.apiVersion === 0 && request.topics.length === 0)
      const listenerName = req.connection.listenerName
      const describe = async (t: { name: string | null; topicId: string }) => {
        const byId = t.name === null || t.name === ""
        const found = byId ? ctx.view.topicById(t.topicId) : ctx.view.topicByName(t.name!)
        if (found !== undefined) return describeTopic(ctx, found, listenerName)
        const unknown = {
          errorCode: byId ? Errors.ErrorCode.UNKNOWN_TOPIC_ID : Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          name: t.name,
          topicId: t.topicId,
          isInternal: false,
          partitions: [],
          topicAuthorizedOperations: UNSET_OPS
        }
        if (byId || !ctx.config.autoCreateTopicsEnable || !request.allowAutoTopicCreation) return unknown
        // Like Kafka's auto-creation, the creating broker's own num.partitions and default.replication.factor.
        const [created] = await ctx.admin.createTopics(
          [
            {
              name: t.name!,
              numPartitions: ctx.config.numPartitions,
              replicationFactor: ctx.config.defaultReplicationFactor,
              assignments: [],
              configs: [],
              topicId: null
            }
          ],
          false
        )
        if (
          created === undefined ||
          (created.errorCode !== 0 && created.errorCode !== Errors.ErrorCode.TOPIC_ALREADY_EXISTS)
        )
          return { ...unknown, errorCode: created?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR }
        const topic = ctx.view.topicByName(t.name!)
        // Created, but this broker has not seen the metadata yet: the client retries, as with Kafka.
        return topic === undefined
          ? { ...unknown, errorCode: Errors.ErrorCode.LEADER_NOT_AVAILABLE }
          : describeTopic(ctx, topic, listenerName)
      }
      const topics = all
        ? [...ctx.view.topics()]
            .sort((a, b) => a.name.localeCompare(b.name))
            .map((t) => describeTopic(ctx, t, listenerName))
        : await Promise.all(request.topics!.map(describe))
      return {
        throttleTimeMs: 0,
        brokers: ctx.view
          .brokers(listenerName)
          .map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack })),
        clusterId: ctx.view.clusterId,
        controllerId: ctx.view.controllerId(),
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
              : // Kafka refuses transactional records without a transactional id, authorizer or not.
                request.transactionalId === null &&
                  request.topicData.some((t) =>
                    t.partitionData.some((p) => RecordBatch.hasTransactionalBatch(p.records))
                  )
                ? Errors.ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
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
        const readOnly: ReplicaManager.ProduceResult = {
          errorCode: Errors.ErrorCode.READ_ONLY_TOPIC,
          baseOffset: -1n,
          logAppendTimeMs: -1n,
          logStartOffset: -1n,
          errorMessage: "The topic is mirrored by a cluster mirror and read-only until the mirror stops it.",
          currentLeader: { leaderId: -1, leaderEpoch: -1 }
        }
        // Failover under way: clients retry (after a metadata refresh) until the partition is stopped.
        const stopping: ReplicaManager.ProduceResult = {
          ...readOnly,
          errorCode: Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER,
          errorMessage: "The mirror topic is being stopped; retry once it is writable."
        }
        const pending = request.topicData.map((t) => {
          const name = t.name !== "" ? t.name : (ctx.view.topicById(t.topicId)?.name ?? "")
          return {
            name: t.name,
            topicId: t.topicId,
            partitionResponses: t.partitionData.map((p) => {
              const mirror = writeState(ctx, name, p.index)
              return mirror === "readOnly"
                ? readOnly
                : mirror === "stopping"
                  ? stopping
                  : ctx.replicas.appendAsLeader(
                      name,
                      p.index,
                      p.records as Buffer | null,
                      true,
                      request.acks,
                      request.timeoutMs,
                      request.transactionalId
                    )
            })
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
        const unknownIds = new Set<string>()
        const partitions = request.topics.flatMap((t) => {
          const name = byId ? ctx.view.topicById(t.topicId)?.name : t.topic
          if (name === undefined) {
            unknownIds.add(t.topicId)
            return []
          }
          // Only a follower of a mirror partition sends a MirrorLeaderEpoch: the metadata is read just then.
          const mirrorTopic =
            t.partitions.some((p) => p.mirrorLeaderEpoch >= 0) && ctx.view.topicByName(name)?.readOnly === true
          return t.partitions.map((p) => ({
            topic: name,
            partition: p.partition,
            fetchOffset: Number(p.fetchOffset),
            currentLeaderEpoch: p.currentLeaderEpoch,
            lastFetchedEpoch: p.lastFetchedEpoch,
            partitionMaxBytes: p.partitionMaxBytes,
            mirrorLeaderEpoch: p.mirrorLeaderEpoch,
            mirrorTopic,
            logStartOffset: Number(p.logStartOffset)
          }))
        })
        const results = await ctx.replicas.fetch({
          replicaId: req.apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId,
          maxWaitMs: unknownIds.size > 0 ? 0 : request.maxWaitMs,
          minBytes: request.minBytes,
          maxBytes: request.maxBytes,
          isolationLevel: request.isolationLevel,
          partitions,
          onWait: req.waited
        })
        const byTopic = new Map<string, typeof results>()
        for (const r of results) {
          let list = byTopic.get(r.topic)
          if (list === undefined) byTopic.set(r.topic, (list = []))
          list.push(r)
        }
        const responses = request.topics.map((t) => {
          const name = byId ? ctx.view.topicById(t.topicId)?.name : t.topic
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
              mirrorLeaderEpoch: r.mirrorLeaderEpoch,
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
    // A mirror topic's records are the source's until its partition is STOPPED (the source's deletions arrive
    // through the mirror fetcher).
    .register(DeleteRecords.api, (_req, request) =>
      ReplicaDeleteRecords.handle(ctx.replicas, request, {
        known: (topic, partition) =>
          ctx.view.topicByName(topic)?.partitions.some((p) => p.partitionId === partition) === true,
        refusal: (topic, partition) =>
          ctx.view.topicByName(topic)?.readOnly === true && ctx.mirrorProduceState?.(topic, partition) !== "writable"
            ? Errors.ErrorCode.READ_ONLY_TOPIC
            : 0
      })
    )
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
    .register(DescribeConfigs.api, (_req, request) => {
      const layers = ctx.layers?.() ?? { config: ctx.config, clusterDefault: new Map(), perBroker: new Map() }
      const topicConfigs = (t: string) => ctx.view.topicByName(t)?.configs
      const { includeSynonyms } = request
      return {
        throttleTimeMs: 0,
        results: request.resources.map(({ configurationKeys: keys, ...r }) =>
          BrokerDescribeConfigs.describeAny(layers, topicConfigs, ctx.describeMirrorConfigs, {
            ...r,
            keys,
            includeSynonyms
          })
        )
      }
    })
    .register(DescribeCluster.api, (req, request) =>
      MetadataQuorum.describeClusterResponse(req.apiVersion, request, MetadataQuorum.EndpointType.BROKER, () => ({
        clusterId: ctx.view.clusterId,
        controllerId: ctx.view.controllerId(),
        brokers: ctx.view
          .brokers(req.connection.listenerName)
          .map((b) => ({ brokerId: b.nodeId, host: b.host, port: b.port, rack: b.rack, isFenced: false }))
      }))
    )
    .register(WriteTxnMarkers.api, (_req, request) =>
      TxnMarkers.writeTxnMarkers(
        {
          replicas: ctx.replicas,
          coordinatorFor: (t) => ctx.markerWriterFor?.(t),
          writeState: (t, p) => writeState(ctx, t, p)
        },
        request
      )
    )
    .register(DescribeLogDirs.api, (_req, request) => LogDirs.describeLogDirs(ctx, request))
    .register(AlterReplicaLogDirs.api, (_req, request) => LogDirs.alterReplicaLogDirs(ctx, request))
    .register(DescribeProducers.api, (_req, request) => ProducerStates.describeProducers(ctx.replicas, request))
    // Idempotent producers; a transactional id goes to the transaction coordinator, which wraps this.
    .register(InitProducerId.api, async (_req, request) => ({
      throttleTimeMs: 0,
      errorCode: 0,
      ...(await ctx.producerIds.initIdempotent(request.producerId, request.producerEpoch))
    }))
