/**
 * A controller node's network face: the Kafka API server on the controller listener, translating
 * the controller-bound requests (broker registration and heartbeats, AlterPartition, topic and config
 * changes, reassignments, producer-id blocks, BumpLeaderEpochs, SCRAM credentials, client quotas) into `QuorumController`
 * operations (after SASL authentication on a SASL_PLAINTEXT or SASL_SSL listener), serving the metadata
 * log to brokers (Fetch), DescribeQuorum and DescribeCluster (controllers). Decisions live in the controller package.
 */
import { Acl, StandardAuthorizer } from "@clustermirror/authorizer"
import {
  type ControllerState,
  FeatureControl,
  MetadataQuorum,
  QuorumController,
  ReplicationControl,
  ScramControl
} from "@clustermirror/controller"
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
  UpdateFeatures,
  Uuid
} from "@clustermirror/protocol"
import { RaftConfig } from "@clustermirror/raft"
import { RaftHandlers, RaftRuntime, RaftTransport } from "@clustermirror/raft-runtime"
import { Effect, Either, Exit, Scope } from "effect"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import { type Handle, Handlers } from "@clustermirror/network/RequestChannel"
import type * as SocketServer from "@clustermirror/network/SocketServer"
import * as Listeners from "@clustermirror/security/Listeners"
import * as AclApis from "@clustermirror/security/AclApis"
import * as ClientQuotaApis from "@clustermirror/security/ClientQuotaApis"
import * as Authorization from "@clustermirror/security/Authorization"
import * as ControllerQuorum from "./ControllerQuorum.js"
import * as NotController from "./NotController.js"

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
  /** A quorum of several controllers (KRaft); absent, or one voter: a lone controller on its own log. */
  readonly quorum?: QuorumOptions
  /** Committed records between two snapshots of the metadata log (default 10,000). */
  readonly snapshotEveryRecords?: number
}

/** `controller.quorum.*`: the voters of a quorum of several controllers, and its timeouts. */
export interface QuorumOptions {
  /** `controller.quorum.voters` (this node among them). */
  readonly voters: ReadonlyArray<RaftConfig.VoterEndpoint>
  /** `controller.quorum.election.timeout.ms` (Kafka's default 1000). */
  readonly electionTimeoutMs?: number
  /** `controller.quorum.fetch.timeout.ms` (2000). */
  readonly fetchTimeoutMs?: number
  /** `controller.quorum.election.backoff.max.ms` (1000). */
  readonly electionBackoffMaxMs?: number
  /** `controller.quorum.request.timeout.ms` (2000). */
  readonly requestTimeoutMs?: number
  /** How long a follower voter waits to fetch again after an empty answer (default 20 ms: voters poll, see README). */
  readonly fetchWaitMs?: number
  /**
   * Snapshots of the quorum's log (default off: a snapshot moves the log start, and brokers cannot load a
   * snapshot from the controller yet, so a broker that starts empty needs the whole log).
   */
  readonly snapshots?: boolean
}

const DEFAULT_QUORUM_REQUEST_TIMEOUT_MS = 2000
const DEFAULT_VOTER_FETCH_WAIT_MS = 20

export interface ControllerServer {
  readonly port: number
  /** The active controller: always a lone controller; in a quorum, throws `NoActiveController` on a standby. */
  readonly controller: QuorumController.QuorumController
  /** This voter of a quorum of several controllers. */
  readonly quorum?: ControllerQuorum.ControllerQuorum
  readonly close: () => Promise<void>
}

const E = Errors.ErrorCode

/** What the handlers ask of this node: the active controller (or NOT_CONTROLLER), and what any controller knows. */
interface Node {
  /** The active controller; throws `NoActiveController` on a standby. */
  readonly controller: () => QuorumController.QuorumController
  /** The committed state (for reads any controller answers: ApiVersions, authorization, SCRAM). */
  readonly committed: () => { readonly state: ControllerState.ControllerState; readonly offset: number }
}

const registerHandlers = (handlers: Handlers, node: Node): Handlers => {
  const controller = node.controller
  return handlers
    .register(ApiVersions.api, (req) => {
      const { state, offset } = node.committed()
      return {
        errorCode: 0,
        apiKeys: handlers.versions(),
        throttleTimeMs: 0,
        ...FeatureControl.apiVersionsFeatures(
          req.apiVersion,
          FeatureControl.finalizedFeatures(state.features),
          BigInt(offset - 1)
        )
      }
    })
    .register(UpdateFeatures.api, (_req, request) => controller().updateFeatures(request))
    .register(BrokerRegistration.api, async (_req, request) => {
      const r = await controller().registerBroker(request)
      return { throttleTimeMs: 0, errorCode: r.errorCode, brokerEpoch: r.brokerEpoch }
    })
    .register(BrokerHeartbeat.api, async (_req, request) => ({
      throttleTimeMs: 0,
      ...(await controller().brokerHeartbeat(request))
    }))
    .register(AlterPartition.api, async (req, request) => {
      const r = await controller().alterPartition(request, req.apiVersion)
      return Either.isLeft(r) ? { throttleTimeMs: 0, errorCode: r.left.errorCode, topics: [] } : r.right
    })
    .register(CreateTopics.api, async (_req, r) => ({ throttleTimeMs: 0, topics: await controller().createTopics(r) }))
    .register(DeleteTopics.api, async (_req, r) => ({
      throttleTimeMs: 0,
      responses: await controller().deleteTopics(r)
    }))
    .register(CreatePartitions.api, async (_req, r) => ({
      throttleTimeMs: 0,
      results: await controller().createPartitions(r)
    }))
    .register(IncrementalAlterConfigs.api, async (_req, request) => ({
      throttleTimeMs: 0,
      responses: await controller().incrementalAlterConfigs(request)
    }))
    .register(AlterConfigs.api, async (_req, request) => ({
      throttleTimeMs: 0,
      responses: await controller().legacyAlterConfigs(
        request.resources.map((r) => ({
          resourceType: r.resourceType,
          resourceName: r.resourceName,
          configs: r.configs.map((c) => ({ name: c.name, value: c.value }))
        })),
        request.validateOnly
      )
    }))
    .register(AllocateProducerIds.api, async (_req, request) => {
      const r = await controller().allocateProducerIds(request.brokerId, request.brokerEpoch)
      return Either.isLeft(r)
        ? { throttleTimeMs: 0, errorCode: r.left.errorCode, producerIdStart: -1n, producerIdLen: 0 }
        : {
            throttleTimeMs: 0,
            errorCode: 0,
            producerIdStart: r.right.firstProducerId,
            producerIdLen: Number(r.right.size)
          }
    })
    .register(BumpLeaderEpochs.api, async (_req, request) => controller().bumpLeaderEpochs(request))
    .register(AlterPartitionReassignments.api, (_req, request) => controller().alterPartitionReassignments(request))
    .register(ListPartitionReassignments.api, (_req, request) => controller().listPartitionReassignments(request))
    .register(AlterUserScramCredentials.api, async (_req, request) => ({
      throttleTimeMs: 0,
      results: [...(await controller().alterUserScramCredentials(request))]
    }))
    .register(SaslHandshake.api, () => ({ errorCode: E.ILLEGAL_SASL_STATE, mechanisms: [] }))
    .register(SaslAuthenticate.api, () => ({
      errorCode: E.ILLEGAL_SASL_STATE,
      errorMessage: "SaslAuthenticate on a listener without SASL",
      authBytes: Buffer.alloc(0),
      sessionLifetimeMs: 0n
    }))
    .register(CreateClusterMirror.api, async (_req, request) => controller().createClusterMirror(request))
    .register(StartMirrorTopics.api, async (_req, request) => controller().startMirrorTopics(request))
    .register(StopMirrorTopics.api, async (_req, request) => controller().stopMirrorTopics(request))
    .register(PauseMirrorTopics.api, async (_req, request) => controller().pauseMirrorTopics(request))
    .register(ResumeMirrorTopics.api, async (_req, request) => controller().resumeMirrorTopics(request))
    .register(DeleteClusterMirror.api, async (_req, request) => controller().deleteClusterMirror(request))
    .register(UnregisterBroker.api, async (_req, request) => controller().unregisterBroker(request.brokerId))
    .register(ElectLeaders.api, async (_req, request) => {
      const r = await controller().electLeaders(request)
      return Either.isLeft(r) ? { throttleTimeMs: 0, errorCode: r.left.errorCode, replicaElectionResults: [] } : r.right
    })
    .register(Fetch.api, (req, request) => controller().fetchMetadata(request, req.apiVersion))
}

/** The options of the `QuorumController` the server runs (its log and epoch come from the server). */
const controllerOptions = (
  options: ControllerServerOptions,
  directoryId: QuorumController.QuorumControllerOptions["directoryId"]
): Omit<QuorumController.QuorumControllerOptions, "log" | "leaderEpoch"> => ({
  nodeId: options.nodeId,
  clusterId: options.clusterId,
  ...(directoryId === undefined ? {} : { directoryId }),
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
  ...(options.snapshotEveryRecords !== undefined ? { snapshotEveryRecords: options.snapshotEveryRecords } : {}),
  ...(options.log !== undefined ? { log_: options.log } : {})
})

/** How this node runs its controller: alone on its own log, or as a voter of a quorum. */
interface Mode {
  readonly node: Node
  /** The quorum's leader, when known (-1 otherwise); a lone controller is its own. */
  readonly leaderId: () => number
  /** DescribeQuorum's answer. */
  readonly describeQuorum: (request: DescribeQuorum.Request) => Promise<DescribeQuorum.Response>
  /** The controllers DescribeCluster lists, on the listener `listenerName`. */
  readonly controllers: (listenerName: string) => DescribeCluster.Response["brokers"]
  readonly quorum?: ControllerQuorum.ControllerQuorum
  readonly close: () => Promise<void>
}

const lone = async (options: ControllerServerOptions, endpoints: () => ReadonlyArray<MetadataQuorum.Endpoint>) => {
  const meta = await Effect.runPromise(MetaProperties.loadOrCreate(options.dataDir, options.clusterId, options.nodeId))
  const metadataLog = await Effect.runPromise(MetadataLog.makeFile(options.dataDir))
  const controller = await QuorumController.QuorumController.open({
    ...controllerOptions(options, meta.directoryId),
    log: metadataLog
  }).catch(async (e) => {
    await Effect.runPromise(metadataLog.close)
    throw e
  })
  const mode: Mode = {
    node: {
      controller: () => controller,
      committed: () => ({ state: controller.current, offset: Number(controller.committedOffset) + 1 })
    },
    leaderId: () => options.nodeId,
    describeQuorum: async (request) =>
      MetadataQuorum.describeQuorumResponse(request, controller.describeQuorum(), endpoints()),
    controllers: (listenerName) => {
      const at = endpoints().find((e) => e.name === listenerName)
      return at === undefined ? [] : [{ brokerId: options.nodeId, ...at, rack: null, isFenced: false }]
    },
    close: async () => {
      await controller.close()
      await Effect.runPromise(metadataLog.close)
    }
  }
  return mode
}

/** DescribeQuorum's answer from a voter that does not lead: NOT_LEADER_OR_FOLLOWER, as Kafka's. */
const notLeaderOfQuorum = (request: DescribeQuorum.Request): DescribeQuorum.Response =>
  MetadataQuorum.describeQuorumRefused(
    request,
    E.NOT_LEADER_OR_FOLLOWER,
    "This controller is not the leader of the metadata quorum."
  )

const voterOf = (v: RaftRuntime.VoterDescription): MetadataQuorum.ReplicaState => ({
  replicaId: v.replicaId,
  replicaDirectoryId: Uuid.ZERO,
  logEndOffset: BigInt(v.logEndOffset),
  lastFetchTimestamp: BigInt(v.lastFetchTimestamp),
  lastCaughtUpTimestamp: BigInt(v.lastCaughtUpTimestamp)
})

/**
 * A voter of a controller quorum: the KRaft runtime on `<dataDir>/__cluster_metadata-0` with TCP to the
 * other voters, and the standby / active controller over it (`ControllerQuorum`).
 */
const voter = async (options: ControllerServerOptions, quorum: QuorumOptions) => {
  const voterIds = quorum.voters.map((v) => v.id)
  if (!voterIds.includes(options.nodeId))
    throw new Error(
      `node.id ${options.nodeId} is not among the controller.quorum.voters ${RaftConfig.formatVoters(quorum.voters)}`
    )
  const meta = await Effect.runPromise(MetaProperties.loadOrCreate(options.dataDir, options.clusterId, options.nodeId))
  const scope = Effect.runSync(Scope.make())
  const built = Effect.gen(function* () {
    const transport = yield* RaftTransport.tcp({
      voters: quorum.voters,
      nodeId: options.nodeId,
      requestTimeoutMs: quorum.requestTimeoutMs ?? DEFAULT_QUORUM_REQUEST_TIMEOUT_MS
    })
    const raft = yield* RaftRuntime.make({
      config: RaftConfig.make(options.nodeId, voterIds, {
        clusterId: options.clusterId,
        fetchWaitMs: quorum.fetchWaitMs ?? DEFAULT_VOTER_FETCH_WAIT_MS,
        ...(quorum.electionTimeoutMs !== undefined ? { electionTimeoutMs: quorum.electionTimeoutMs } : {}),
        ...(quorum.fetchTimeoutMs !== undefined ? { fetchTimeoutMs: quorum.fetchTimeoutMs } : {}),
        ...(quorum.electionBackoffMaxMs !== undefined ? { electionBackoffMaxMs: quorum.electionBackoffMaxMs } : {}),
        ...(quorum.requestTimeoutMs !== undefined ? { requestTimeoutMs: quorum.requestTimeoutMs } : {})
      }),
      dataDir: options.dataDir,
      transport
    })
    return yield* ControllerQuorum.make({
      raft,
      controller: controllerOptions(options, meta.directoryId),
      ...(quorum.snapshots === undefined ? {} : { snapshots: quorum.snapshots })
    })
  })
  const controllers = await Effect.runPromise(Scope.extend(built, scope)).catch(async (e) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw e
  })
  const active = () => {
    const c = controllers.active()
    if (c !== undefined) return c
    const { leaderId } = controllers.leader()
    throw new NotController.NoActiveController({
      message:
        leaderId < 0
          ? `controller ${options.nodeId} is not the active controller: the quorum has no leader yet`
          : `controller ${options.nodeId} is not the active controller: controller ${leaderId} is`,
      leaderId
    })
  }
  const mode: Mode = {
    node: {
      controller: active,
      committed: () => ({ state: controllers.standby().state, offset: controllers.standby().offset })
    },
    leaderId: () => controllers.leader().leaderId,
    describeQuorum: async (request) => {
      const c = controllers.active()
      if (c === undefined) return notLeaderOfQuorum(request)
      const raft = await Effect.runPromise(controllers.raft.describeQuorum)
      // The leader reports itself as fetched and caught up now, as Kafka's does.
      const now = BigInt(Date.now())
      const info = c.describeQuorum({
        highWatermark: BigInt(raft.highWatermark),
        voters: raft.currentVoters
          .map(voterOf)
          .map((v) =>
            v.replicaId === options.nodeId
              ? { ...v, replicaDirectoryId: meta.directoryId, lastFetchTimestamp: now, lastCaughtUpTimestamp: now }
              : v
          )
      })
      const response = MetadataQuorum.describeQuorumResponse(request, info, [])
      return {
        ...response,
        nodes: quorum.voters.map((v) => ({
          nodeId: v.id,
          listeners: [{ name: options.listener?.listenerName ?? "CONTROLLER", host: v.host, port: v.port }]
        }))
      }
    },
    controllers: () =>
      quorum.voters.map((v) => ({ brokerId: v.id, host: v.host, port: v.port, rack: null, isFenced: false })),
    quorum: controllers,
    close: async () => {
      // A leader resigns first, so that the others elect a successor at once rather than after a timeout.
      await Effect.runPromise(Effect.ignore(Effect.timeout(controllers.raft.resign, "1 second")))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
  return mode
}

/**
 * The raft APIs of a voter (Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, and Fetch from the
 * other voters), over the broker-facing Fetch registered before: a Fetch without a cluster id (a broker's;
 * voters always send theirs) or from a non-voter goes to the active controller, a standby answers it
 * NOT_LEADER_OR_FOLLOWER with the leader it knows.
 */
const registerVoter = (
  handlers: Handlers,
  quorum: ControllerQuorum.ControllerQuorum,
  voters: ReadonlyArray<number>
) => {
  const brokerFetch: Handle<typeof Fetch.Request.fields, typeof Fetch.Response.fields> = (req, request) => {
    const c = quorum.active()
    return c === undefined ? notLeaderFetch(quorum.leader()) : c.fetchMetadata(request, req.apiVersion)
  }
  RaftHandlers.register(handlers, quorum.raft, { voters, fetchFallback: brokerFetch })
  handlers.wrap(
    Fetch.api,
    (raftFetch) => (ctx, request) => (request.clusterId === null ? brokerFetch(ctx, request) : raftFetch(ctx, request))
  )
}

/** A broker's metadata fetch on a controller that does not lead: NOT_LEADER_OR_FOLLOWER with the leader it knows. */
const notLeaderFetch = (leader: { readonly leaderId: number; readonly leaderEpoch: number }) =>
  MetadataQuorum.metadataFetchResponse({
    errorCode: E.NOT_LEADER_OR_FOLLOWER,
    highWatermark: -1n,
    currentLeader: { leaderId: leader.leaderId, leaderEpoch: leader.leaderEpoch },
    records: Buffer.alloc(0)
  })

export const start = async (options: ControllerServerOptions): Promise<ControllerServer> => {
  fs.mkdirSync(options.dataDir, { recursive: true })
  const servers: SocketServer.SocketServer[] = []
  const listenerNames = [options.listener, ...(options.moreListeners ?? [])].map((l) => l?.listenerName ?? "CONTROLLER")
  const endpoints = () => servers.map((s, i) => ({ name: listenerNames[i]!, host: s.host, port: s.port }))
  const handlers = new Handlers()
  const quorum = options.quorum !== undefined && options.quorum.voters.length > 1 ? options.quorum : undefined
  if (quorum !== undefined && options.listener !== undefined && options.listener.securityProtocol !== "PLAINTEXT")
    throw new Error(
      `a quorum of ${quorum.voters.length} controllers needs a PLAINTEXT controller listener: the voters' own connections do not speak ${options.listener.securityProtocol} yet`
    )
  const mode = quorum === undefined ? await lone(options, endpoints) : await voter(options, quorum)
  const { node } = mode
  registerHandlers(handlers, node)
  if (mode.quorum !== undefined)
    registerVoter(
      handlers,
      mode.quorum,
      quorum!.voters.map((v) => v.id)
    )
  handlers
    .register(DescribeQuorum.api, (_req, request) => mode.describeQuorum(request))
    .register(DescribeCluster.api, (req, request) =>
      MetadataQuorum.describeClusterResponse(req.apiVersion, request, MetadataQuorum.EndpointType.CONTROLLER, () => ({
        clusterId: options.clusterId,
        controllerId: mode.leaderId(),
        brokers: mode.controllers(req.connection.listenerName)
      }))
    )
  const authorizerConfig = options.authorizer ?? null
  // The authorizer over the committed ACLs, rebuilt when the controller's ACL slice changes.
  let built: { readonly acls: unknown; readonly authorizer: StandardAuthorizer.StandardAuthorizer } | undefined
  const current =
    authorizerConfig === null
      ? undefined
      : () => {
          const acls = node.committed().state.acls.acls
          if (built?.acls !== acls)
            built = { acls, authorizer: StandardAuthorizer.StandardAuthorizer.make(authorizerConfig, acls.values()) }
          return built.authorizer
        }
  AclApis.register(
    ClientQuotaApis.registerController(handlers, { alterClientQuotas: (r) => node.controller().alterClientQuotas(r) }),
    {
      authorizer: current,
      trustClusterAction: true,
      createAcls: async (request) => ({
        throttleTimeMs: 0,
        results: await node.controller().createAcls(
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
        filterResults: (await node.controller().deleteAcls(request.filters.map(AclApis.filterOf))).map((r) => ({
          errorCode: r.errorCode,
          errorMessage: r.errorMessage,
          matchingAcls: r.matchingAcls.map((a) => ({ errorCode: 0, errorMessage: null, ...a }))
        }))
      })
    }
  )
  NotController.install(handlers)
  if (current !== undefined) {
    Authorization.installController(handlers, {
      authorizer: current,
      topicNameById: (id) => ReplicationControl.topicById(node.committed().state.replication, id)?.name,
      topicExists: (name) => ReplicationControl.topicByName(node.committed().state.replication, name) !== undefined,
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
          (u, m) => ScramControl.credential(node.committed().state.scram, u, Scram.mechanismId(m))
        )
      )
  } catch (e) {
    for (const s of servers) await s.close()
    await mode.close()
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
    get controller() {
      return node.controller()
    },
    ...(mode.quorum === undefined ? {} : { quorum: mode.quorum }),
    close: async () => {
      for (const s of servers) await s.close()
      await mode.close()
    }
  }
}
