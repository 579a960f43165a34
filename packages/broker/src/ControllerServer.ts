/**
 * A controller node's network face: the Kafka API server on the controller listener, translating
 * the controller-bound requests (broker registration and heartbeats, AlterPartition, topic and config
 * changes, reassignments, producer-id blocks, BumpLeaderEpochs, SCRAM credentials, client quotas) into `QuorumController`
 * operations (after SASL authentication on a SASL_PLAINTEXT or SASL_SSL listener), serving the metadata
 * log to brokers (Fetch), DescribeQuorum and DescribeCluster (controllers). Decisions live in the controller package.
 */
import { Acl, StandardAuthorizer } from "@clustermirror/authorizer"
import { MetadataQuorum, QuorumController, ReplicationControl, ScramControl } from "@clustermirror/controller"
import { MetadataLog, MetaProperties } from "@clustermirror/metadata-log"
import {
  AllocateProducerIds,
  AlterConfigs,
  AlterPartition,
  AlterPartitionReassignments,
  AlterUserScramCredentials,
  ApiVersions,
  BrokerHeartbeat,
  BrokerRegistration,
  BumpLeaderEpochs,
  CreateClusterMirror,
  CreatePartitions,
  CreateTopics,
  DeleteClusterMirror,
  DeleteTopics,
  DescribeCluster,
  DescribeQuorum,
  ElectLeaders,
  Errors,
  Fetch,
  IncrementalAlterConfigs,
  ListPartitionReassignments,
  PauseMirrorTopics,
  ResumeMirrorTopics,
  SaslAuthenticate,
  SaslHandshake,
  Scram,
  StartMirrorTopics,
  StopMirrorTopics,
  UnregisterBroker,
  UpdateFeatures
} from "@clustermirror/protocol"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import { Handlers } from "@clustermirror/network/RequestChannel"
import type * as SocketServer from "@clustermirror/network/SocketServer"
import * as Listeners from "@clustermirror/security/Listeners"
import * as AclApis from "@clustermirror/security/AclApis"
import * as ClientQuotaApis from "@clustermirror/security/ClientQuotaApis"
import * as Authorization from "@clustermirror/security/Authorization"

export interface ControllerServerOptions {
  readonly nodeId: number
  readonly clusterId: string
  readonly host: string
  readonly port: number
  readonly dataDir: string
  readonly maxFrameBytes: number
  readonly defaultPartitions: number
  readonly defaultReplicationFactor: number
  readonly sessionTimeoutMs?: number
  readonly uncleanLeaderElectionEnable?: boolean
  readonly mirrorStateTopicPartitions?: number
  readonly mirrorStateTopicReplicationFactor?: number
  readonly autoLeaderRebalanceEnable?: boolean
  readonly leaderImbalanceCheckIntervalMs?: number
  readonly leaderImbalancePerBrokerPercentage?: number
  /** Credentials a new metadata log starts with (`--add-scram`). */
  readonly bootstrapScramCredentials?: ReadonlyArray<QuorumController.BootstrapScramCredential>
  /** SASL on the CONTROLLER listener (its protocol is SASL_PLAINTEXT); absent: PLAINTEXT. */
  /** `authorizer.class.name` (with `super.users`, `allow.everyone.if.no.acl.found`); null or absent: none. */
  readonly authorizer?: StandardAuthorizer.AuthorizerConfig | null
  readonly log?: (line: string) => void
  /** The controller listener's name, protocol and TLS (default a PLAINTEXT listener named CONTROLLER). */
  readonly listener?: Listeners.ListenerOptions
  /** Further controller listeners (`controller.listener.names` beyond the first), served alike. */
  readonly moreListeners?: ReadonlyArray<
    Pick<SocketServer.SocketServerOptions, "host" | "port"> & Listeners.ListenerOptions
  >
}

export interface ControllerServer {
  readonly port: number
  readonly controller: QuorumController.QuorumController
  readonly close: () => Promise<void>
}

const E = Errors.ErrorCode

const registerHandlers = (
  handlers: Handlers,
  controller: QuorumController.QuorumController,
  endpoints: () => ReadonlyArray<MetadataQuorum.Endpoint>
): Handlers =>
  handlers
    .register(ApiVersions.api, (req) => ({
      errorCode: 0,
      apiKeys: handlers.versions(),
      throttleTimeMs: 0,
      ...controller.apiVersionsFeatures(req.apiVersion)
    }))
    .register(UpdateFeatures.api, (_req, request) => controller.updateFeatures(request))
    .register(BrokerRegistration.api, async (_req, request) => {
      const r = await controller.registerBroker(request)
      return { throttleTimeMs: 0, errorCode: r.errorCode, brokerEpoch: r.brokerEpoch }
    })
    .register(BrokerHeartbeat.api, async (_req, request) => ({
      throttleTimeMs: 0,
      ...(await controller.brokerHeartbeat(request))
    }))
    .register(AlterPartition.api, async (req, request) => {
      const r = await controller.alterPartition(request, req.apiVersion)
      return Either.isLeft(r) ? { throttleTimeMs: 0, errorCode: r.left.errorCode, topics: [] } : r.right
    })
    .register(CreateTopics.api, async (_req, r) => ({ throttleTimeMs: 0, topics: await controller.createTopics(r) }))
    .register(DeleteTopics.api, async (_req, r) => ({ throttleTimeMs: 0, responses: await controller.deleteTopics(r) }))
    .register(CreatePartitions.api, async (_req, r) => ({
      throttleTimeMs: 0,
      results: await controller.createPartitions(r)
    }))
    .register(IncrementalAlterConfigs.api, async (_req, request) => ({
      throttleTimeMs: 0,
      responses: await controller.incrementalAlterConfigs(request)
    }))
    .register(AlterConfigs.api, async (_req, request) => ({
      throttleTimeMs: 0,
      responses: await controller.legacyAlterConfigs(
        request.resources.map((r) => ({
          resourceType: r.resourceType,
          resourceName: r.resourceName,
          configs: r.configs.map((c) => ({ name: c.name, value: c.value }))
        })),
        request.validateOnly
      )
    }))
    .register(AllocateProducerIds.api, async (_req, request) => {
      const r = await controller.allocateProducerIds(request.brokerId, request.brokerEpoch)
      return Either.isLeft(r)
        ? { throttleTimeMs: 0, errorCode: r.left.errorCode, producerIdStart: -1n, producerIdLen: 0 }
        : {
            throttleTimeMs: 0,
            errorCode: 0,
            producerIdStart: r.right.firstProducerId,
            producerIdLen: Number(r.right.size)
          }
    })
    .register(BumpLeaderEpochs.api, async (_req, request) => controller.bumpLeaderEpochs(request))
    .register(AlterPartitionReassignments.api, (_req, request) => controller.alterPartitionReassignments(request))
    .register(ListPartitionReassignments.api, (_req, request) => controller.listPartitionReassignments(request))
    .register(AlterUserScramCredentials.api, async (_req, request) => ({
      throttleTimeMs: 0,
      results: [...(await controller.alterUserScramCredentials(request))]
    }))
    .register(SaslHandshake.api, () => ({ errorCode: E.ILLEGAL_SASL_STATE, mechanisms: [] }))
    .register(SaslAuthenticate.api, () => ({
      errorCode: E.ILLEGAL_SASL_STATE,
      errorMessage: "SaslAuthenticate on a listener without SASL",
      authBytes: Buffer.alloc(0),
      sessionLifetimeMs: 0n
    }))
    .register(CreateClusterMirror.api, async (_req, request) => controller.createClusterMirror(request))
    .register(StartMirrorTopics.api, async (_req, request) => controller.startMirrorTopics(request))
    .register(StopMirrorTopics.api, async (_req, request) => controller.stopMirrorTopics(request))
    .register(PauseMirrorTopics.api, async (_req, request) => controller.pauseMirrorTopics(request))
    .register(ResumeMirrorTopics.api, async (_req, request) => controller.resumeMirrorTopics(request))
    .register(DeleteClusterMirror.api, async (_req, request) => controller.deleteClusterMirror(request))
    .register(UnregisterBroker.api, async (_req, request) => controller.unregisterBroker(request.brokerId))
    .register(ElectLeaders.api, async (_req, request) => {
      const r = await controller.electLeaders(request)
      return Either.isLeft(r) ? { throttleTimeMs: 0, errorCode: r.left.errorCode, replicaElectionResults: [] } : r.right
    })
    .register(Fetch.api, (req, request) => controller.fetchMetadata(request, req.apiVersion))
    .register(DescribeQuorum.api, (_req, request) =>
      MetadataQuorum.describeQuorumResponse(request, controller.describeQuorum(), endpoints())
    )
    .register(DescribeCluster.api, (req, request) =>
      MetadataQuorum.describeClusterResponse(req.apiVersion, request, MetadataQuorum.EndpointType.CONTROLLER, () => {
        const at = endpoints().find((e) => e.name === req.connection.listenerName)
        const brokers = at === undefined ? [] : [{ brokerId: controller.nodeId, ...at, rack: null, isFenced: false }]
        return { clusterId: controller.clusterId, controllerId: controller.nodeId, brokers }
      })
    )

export const start = async (options: ControllerServerOptions): Promise<ControllerServer> => {
  fs.mkdirSync(options.dataDir, { recursive: true })
  const meta = await Effect.runPromise(MetaProperties.loadOrCreate(options.dataDir, options.clusterId, options.nodeId))
  const metadataLog = await Effect.runPromise(MetadataLog.makeFile(options.dataDir))
  const controller = await QuorumController.QuorumController.open({
    nodeId: options.nodeId,
    clusterId: options.clusterId,
    directoryId: meta.directoryId,
    log: metadataLog,
    defaultPartitions: options.defaultPartitions,
    defaultReplicationFactor: options.defaultReplicationFactor,
    ...(options.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: options.sessionTimeoutMs } : {}),
    ...(options.uncleanLeaderElectionEnable !== undefined
      ? { uncleanLeaderElectionEnable: options.uncleanLeaderElectionEnable }
      : {}),
    ...(options.mirrorStateTopicPartitions !== undefined
      ? { mirrorStateTopicPartitions: options.mirrorStateTopicPartitions }
      : {}),
    ...(options.mirrorStateTopicReplicationFactor !== undefined
      ? { mirrorStateTopicReplicationFactor: options.mirrorStateTopicReplicationFactor }
      : {}),
    ...(options.autoLeaderRebalanceEnable !== undefined
      ? { autoLeaderRebalanceEnable: options.autoLeaderRebalanceEnable }
      : {}),
    ...(options.leaderImbalanceCheckIntervalMs !== undefined
      ? { leaderImbalanceCheckIntervalMs: options.leaderImbalanceCheckIntervalMs }
      : {}),
    ...(options.leaderImbalancePerBrokerPercentage !== undefined
      ? { leaderImbalancePerBrokerPercentage: options.leaderImbalancePerBrokerPercentage }
      : {}),
    ...(options.bootstrapScramCredentials !== undefined
      ? { bootstrapScramCredentials: options.bootstrapScramCredentials }
      : {}),
    ...(options.log !== undefined ? { log_: options.log } : {})
  })
  const servers: SocketServer.SocketServer[] = []
  const listenerNames = [options.listener, ...(options.moreListeners ?? [])].map((l) => l?.listenerName ?? "CONTROLLER")
  const endpoints = () => servers.map((s, i) => ({ name: listenerNames[i]!, host: s.host, port: s.port }))
  const handlers = registerHandlers(new Handlers(), controller, endpoints)
  const authorizerConfig = options.authorizer ?? null
  // The authorizer over the committed ACLs, rebuilt when the controller's ACL slice changes.
  let built: { readonly acls: unknown; readonly authorizer: StandardAuthorizer.StandardAuthorizer } | undefined
  const current =
    authorizerConfig === null
      ? undefined
      : () => {
          const acls = controller.current.acls.acls
          if (built?.acls !== acls)
            built = { acls, authorizer: StandardAuthorizer.StandardAuthorizer.make(authorizerConfig, acls.values()) }
          return built.authorizer
        }
  AclApis.register(ClientQuotaApis.registerController(handlers, controller), {
    authorizer: current,
    trustClusterAction: true,
    createAcls: async (request) => ({
      throttleTimeMs: 0,
      results: await controller.createAcls(
        request.creations.map((c) => ({
          resourceType: c.resourceType,
          resourceName: c.resourceName,
          patternType: c.resourcePatternType,
          principal: c.principal,
          host: c.host,
          operation: c.operation,
          permissionType: c.permissionType
        }))
      )
    }),
    deleteAcls: async (request) => ({
      throttleTimeMs: 0,
      filterResults: (await controller.deleteAcls(request.filters.map(AclApis.filterOf))).map((r) => ({
        errorCode: r.errorCode,
        errorMessage: r.errorMessage,
        matchingAcls: r.matchingAcls.map((a) => ({ errorCode: 0, errorMessage: null, ...a }))
      }))
    })
  })
  if (current !== undefined) {
    Authorization.installController(handlers, {
      authorizer: current,
      topicNameById: (id) => ReplicationControl.topicById(controller.current.replication, id)?.name,
      topicExists: (name) => ReplicationControl.topicByName(controller.current.replication, name) !== undefined,
      autoCreateTopicsEnable: () => false,
      trustClusterAction: true,
      deleteMirrorOperation: Acl.AclOperation.ALTER
    })
  }
  const log = options.log ?? (() => {})
  try {
    for (const l of [{ host: options.host, port: options.port, ...options.listener }, ...(options.moreListeners ?? [])])
      servers.push(
        await Listeners.serve(
          handlers.frameHandler(log),
          { maxFrameBytes: options.maxFrameBytes, log, listenerName: "CONTROLLER", ...l },
          (u, m) => ScramControl.credential(controller.current.scram, u, Scram.mechanismId(m))
        )
      )
  } catch (e) {
    for (const s of servers) await s.close()
    await controller.close()
    await Effect.runPromise(metadataLog.close)
    throw e
  }
  const server = servers[0]!
  log(
    `controller ${options.nodeId} of cluster ${options.clusterId} serving on ${options.host}:${server.port}${servers
      .slice(1)
      .map((s) => ` and ${s.host}:${s.port}`)
      .join("")}`
  )
  return {
    port: server.port,
    controller,
    close: async () => {
      for (const s of servers) await s.close()
      await controller.close()
      await Effect.runPromise(metadataLog.close)
    }
  }
}
