/**
 * The KIP-1279 runtime of one broker: the `__mirror_state` coordinator on the partitions of that topic this
 * broker leads, the MirrorMetadataManager that reconciles the mirror partitions it leads, one mirror
 * fetcher manager per mirror, and the mirror requests: ReadMirrorStates (100), WriteMirrorStates (101),
 * DescribeClusterMirrors (99), RecoverMirrorTopics (106), and the broker-side validation of
 * Start/Stop/Pause/Resume/Delete (§5.8) before they go to the controller.
 *
 * This module implements the manager's ports over the broker's parts (replica manager, metadata image,
 * controller channel, source clusters) and wires events between them. Decisions are the manager's and the
 * controller's; it must not decide state transitions itself.
 */
import { ClientError, ClusterClient, Connection, Security } from "@clustermirror/client"
import { ClusterMirrorCoordinator, MirrorMetadataManager } from "@clustermirror/coordinator"
import { MirrorFetcherManager, type SourceCluster } from "@clustermirror/fetcher"
import { MetadataImage } from "@clustermirror/metadata-log"
import {
  EpochBumps,
  LastMirrorEpochs,
  MirrorLag,
  type MirrorMetrics,
  MirrorRefresh,
  MirrorSync,
  AclSync,
  Recover,
  TwoPhaseTruncation,
  Validation
} from "@clustermirror/mirror"
import {
  BumpLeaderEpochs,
  ControlRecord,
  DeleteClusterMirror,
  DescribeClusterMirrors,
  Errors,
  MirrorStateRecords,
  PauseMirrorTopics,
  ReadMirrorStates,
  RecoverMirrorTopics,
  ResumeMirrorTopics,
  StartMirrorTopics,
  StopMirrorTopics,
  TopicPartitionMap,
  WriteMirrorStates,
  type Api,
  type Spec
} from "@clustermirror/protocol"
import { Either } from "effect"
import type { BrokerConfig } from "@clustermirror/broker-config/BrokerConfig"
import type { Channel } from "@clustermirror/network/Channel"
import * as CoordinatorLogs from "@clustermirror/replication/CoordinatorLogs"
import type { PartitionState as ReplicaPartitionState, ReplicaManager } from "@clustermirror/replication/ReplicaManager"
import type { PartitionLog } from "@clustermirror/storage"
import type { Handlers } from "@clustermirror/network/RequestChannel"

export const MIRROR_STATE_TOPIC = "__mirror_state"

/** What the runtime needs of its broker. */
export interface MirrorRuntimeOptions {
  readonly config: BrokerConfig
  /** The config in force (dynamic broker configs applied); `config` when absent. */
  readonly effectiveConfig?: () => BrokerConfig
  readonly clusterId: string
  readonly image: () => MetadataImage.MetadataImage
  readonly replicas: ReplicaManager
  /** The controller channel; requests answer once the controller decided. */
  readonly controller: Pick<Channel, "request">
  /** Resolves once this broker loaded what the controller had committed when called. */
  readonly catchUp: () => Promise<void>
  /** A channel to another broker of this cluster; undefined when it is not known. */
  readonly peer: (nodeId: number) => Channel | undefined
  /**
   * Where the mirrors' destination admin connects (KIP-1279 §8.3): this broker's advertised endpoint of
   * `mirror.admin.listener.name`, with that listener's TLS and the credentials of
   * `sasl.mechanism.mirror.admin.protocol`; security absent: PLAINTEXT.
   */
  readonly destinationAdmin: { readonly bootstrap: string; readonly security?: Security.ClientSecurity }
  readonly log: (line: string) => void
  /** Mirror-level work the periodic refresh runs on the mirror-coordinator broker (§5.9); none by default. */
  readonly coordinatorTasks?: ReadonlyArray<MirrorRefresh.CoordinatorTask>
  /** Every sync error of the periodic refresh, by mirror and kind. */
  readonly onSyncError?: (mirror: string, kind: string, error: string) => void
  /** Where the mirror metrics are counted and their gauges collected; none when absent. */
  readonly metrics?: MirrorMetrics.MirrorMetrics
}

export interface MirrorRuntime {
  readonly manager: MirrorMetadataManager.MirrorMetadataManager
  readonly coordinator: ClusterMirrorCoordinator.ClusterMirrorCoordinator
  readonly refresh: MirrorRefresh.MirrorRefresh
  /** A `__mirror_state` partition's registration changed (after the replica manager applied it). */
  readonly onStatePartition: (partition: number, leader: number, leaderEpoch: number, numPartitions: number) => void
  /** The metadata image changed (after partitions were applied). */
  readonly onMetadataUpdate: () => void
  /** Whether clients may produce to a partition this broker leads (READ_ONLY_TOPIC, or a retriable wait while stopping). */
  readonly produceState: (topic: string, partition: number) => "writable" | "stopping" | "readOnly"
  readonly register: (handlers: Handlers) => void
  /** The mirror-level sync tasks (§5.9 c) for the refresh loop; their group statuses answer DescribeClusterMirrors. */
  readonly syncTasks: ReadonlyArray<MirrorSync.CoordinatorTask>
  readonly close: () => Promise<void>
}

const parseServers = (s: string): ReadonlyArray<{ host: string; port: number }> =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0)
    .map((x) => {
      const i = x.lastIndexOf(":")
      return { host: x.slice(0, i), port: Number(x.slice(i + 1)) }
    })

/**
 * A mirror's connection settings to its source: the bootstrap servers and the security configs, read
 * (key and trust store files included) when the mirror's connections are built, and again whenever
 * one of them changes. A security config this broker cannot use fails every connect with its message,
 * which names the key and the file, never a secret.
 */
interface SourceSettings {
  readonly bootstrap: string
  /** Identifies the settings: connections are rebuilt when it changes. Held in memory only. */
  readonly key: string
  readonly security: Either.Either<Security.ClientSecurity, Security.SecurityConfigError>
}

const sourceSettings = (configs: ReadonlyMap<string, string>): SourceSettings => {
  const bootstrap = configs.get("bootstrap.servers") ?? ""
  const security = [...configs].filter(([k]) => Security.isSecurityConfig(k)).sort((a, b) => (a[0] < b[0] ? -1 : 1))
  return { bootstrap, key: connectionKey(configs), security: Security.fromConfig(new Map(security)) }
}

/** The security of a client: a function that throws the config error when the settings cannot be used. */
const clientSecurity = (settings: SourceSettings): Security.ClientSecurity | (() => Security.ClientSecurity) =>
  Either.match(settings.security, {
    onRight: (security) => security,
    onLeft: (error) => () => {
      throw error
    }
  })

/** Connection keys by config map: a mirror's configs are one map until they change (one start, many partitions). */
const connectionKeys = new WeakMap<ReadonlyMap<string, string>, string>()

/** `SourceSettings.key` without reading any file. */
const connectionKey = (configs: ReadonlyMap<string, string>): string => {
  let key = connectionKeys.get(configs)
  if (key === undefined) {
    key = JSON.stringify([
      configs.get("bootstrap.servers") ?? "",
      [...configs].filter(([k]) => Security.isSecurityConfig(k)).sort((a, b) => (a[0] < b[0] ? -1 : 1))
    ])
    connectionKeys.set(configs, key)
  }
  return key
}

/** A source connection over the client package's connection. */
const connector = (clientId: string, settings: SourceSettings): SourceCluster.SourceConnector => ({
  connect: async (host, port) => {
    if (Either.isLeft(settings.security))
      throw new ClientError.ConnectionError({
        host,
        port,
        reason: "connect",
        message: `connect to ${host}:${port}: ${settings.security.left.message}`
      })
    const c = await Connection.open({
      host,
      port,
      clientId,
      requestTimeoutMs: 30_000,
      security: settings.security.right
    })
    return {
      request: <Req extends Spec.Fields, Res extends Spec.Fields>(
        api: Api.ApiDef<Req, Res>,
        body: Spec.StructInput<Req>,
        version?: number
      ) => c.request(api, version ?? Either.getOrElse(c.versionFor(api), () => api.maxVersion), body),
      versionFor: (api) => Either.getOrUndefined(c.versionFor(api)),
      close: () => c.close()
    }
  }
})

export const make = (options: MirrorRuntimeOptions): MirrorRuntime => {
  const { config, replicas, controller } = options
  const nodeId = config.nodeId
  const image = options.image
  const log = options.log

  // -------------------------------------------------------------------------------------------------
  // The coordinator's log: `__mirror_state` partitions through the replica manager

  const stateLog = CoordinatorLogs.make({
    replicas,
    nodeId,
    topic: MIRROR_STATE_TOPIC,
    codec: MirrorStateRecords
  })

  const topicIdOf = (name: string) => MetadataImage.topicByName(image(), name)?.id
  const metrics = options.metrics
  const coordinator = new ClusterMirrorCoordinator.ClusterMirrorCoordinator({
    log: stateLog,
    onLoaded: (partition, ms) => metrics?.coordinatorLoaded(partition, ms),
    onLoadFailed: (partition, message) =>
      log(`${MIRROR_STATE_TOPIC}-${partition} not loaded, its mirror states have no coordinator here: ${message}`),
    context: {
      topicId: topicIdOf,
      leaderEpoch: (topicId, partition) =>
        MetadataImage.topicById(image(), topicId)?.partitions.get(partition)?.leaderEpoch
    }
  })

  // -------------------------------------------------------------------------------------------------
  // Mirror fetchers, one manager per mirror

  const fetcherManagers = new Map<string, { manager: MirrorFetcherManager.MirrorFetcherManager; key: string }>()
  let manager: MirrorMetadataManager.MirrorMetadataManager
  let lag: MirrorLag.MirrorLag
  /** Partitions whose data loss the operator accepted: their fetcher restarts them at the source log start once. */
  const acceptedDataLoss = new TopicPartitionMap<true>()

  const fetcherFor = (mirror: string): MirrorFetcherManager.MirrorFetcherManager | undefined => {
    const configs = MetadataImage.configsOf(image(), MetadataImage.ConfigResourceType.CLUSTER_MIRROR, mirror)
    const existing = fetcherManagers.get(mirror)
    if (existing !== undefined && existing.key === connectionKey(configs)) return existing.manager
    if (existing !== undefined) void existing.manager.close()
    const settings = sourceSettings(configs)
    if (Either.isLeft(settings.security))
      log(`mirror ${mirror}: cannot connect to the source: ${settings.security.left.message}`)
    const servers = parseServers(settings.bootstrap)
    if (servers.length === 0) return undefined
    const created = new MirrorFetcherManager.MirrorFetcherManager({
      mirrorName: mirror,
      bootstrapServers: servers,
      connector: connector(`broker-${nodeId}-mirror-${mirror}`, settings),
      config: MirrorFetcherManager.fromMirrorConfigs(configs),
      // A partition that cannot fetch for the mirror's request timeout fails (and retries with backoff).
      failAfterMs: Math.max(1000, Number(configs.get("request.timeout.ms") ?? 30_000) || 30_000),
      log,
      throttle: replicas.mirrorThrottle,
      events: {
        fetched: (tp, p) => {
          manager.fetched(tp.topic, tp.partition)
          acceptedDataLoss.delete(tp.topic, tp.partition)
          lag.fetched(tp.topic, tp.partition, p.sourceHighWatermark, p.logEndOffset)
          if (p.appendedBytes > 0) metrics?.fetched(mirror, p.appendedBytes, p.appendedRecords)
          // The local log start follows the source's (retention on the source, §6.2), within what is committed.
          const local = replicas.get(tp.topic, tp.partition)?.log
          if (local !== undefined && p.sourceLogStartOffset > local.logStartOffset) {
            const to = Math.min(p.sourceLogStartOffset, local.highWatermark)
            if (to > local.logStartOffset) local.deleteRecordsBefore(to)
          }
          if (p.resetToSourceLogStart)
            log(
              `mirror ${mirror}: ${tp.topic}-${tp.partition} restarted at the source log start ${p.sourceLogStartOffset}`
            )
        },
        failed: (tp, f) => manager.fetchFailed(tp.topic, tp.partition, f),
        dataLoss: (tp, l) => {
          metrics?.dataLoss(mirror)
          log(
            `mirror ${mirror}: DATA LOSS on ${tp.topic}-${tp.partition}: the source log start ${l.sourceLogStartOffset} passed the mirror position ${l.position} (${l.sourceLogStartOffset - l.position} records deleted on the source before they were mirrored); the partition stays FAILED until an operator recovers it accepting the loss (--recover --accept-data-loss) or stops the topic`
          )
        },
        epochAhead: (tp, e) => manager.epochAhead(tp.topic, tp.partition, Math.max(e.batchEpoch, e.sourceLeaderEpoch)),
        epochNearlyAhead: (tp, e) =>
          manager.epochNearlyAhead(tp.topic, tp.partition, Math.max(e.batchEpoch, e.sourceLeaderEpoch))
      }
    })
    fetcherManagers.set(mirror, { manager: created, key: settings.key })
    metrics?.mirrorKnown(mirror)
    return created
  }

  // -------------------------------------------------------------------------------------------------
  // Source clusters: last-mirror-epoch lookups (§5.5), batched per mirror

  const sourceClients = new Map<string, { client: ClusterClient.Client; key: string }>()
  const sourceClient = (mirror: string): ClusterClient.Client => {
    const configs = MetadataImage.configsOf(image(), MetadataImage.ConfigResourceType.CLUSTER_MIRROR, mirror)
    const existing = sourceClients.get(mirror)
    if (existing !== undefined && existing.key === connectionKey(configs)) return existing.client
    if (existing !== undefined) void existing.client.close()
    const settings = sourceSettings(configs)
    const client = new ClusterClient.Client({
      bootstrapServers: parseServers(settings.bootstrap).map((s) => `${s.host}:${s.port}`),
      clientId: `broker-${nodeId}-mirror-admin-${mirror}`,
      requestTimeoutMs: 10_000,
      connectTimeoutMs: 5_000,
      security: clientSecurity(settings)
    })
    sourceClients.set(mirror, { client, key: settings.key })
    return client
  }

  // Leader epoch bumps, batched per turn
  const epochOf = (topicId: string, partition: number) =>
    MetadataImage.topicById(image(), topicId)?.partitions.get(partition)?.leaderEpoch ?? -1
  const bumpLeaderEpochs = EpochBumps.make({
    request: (request) => controller.request(BumpLeaderEpochs.api, request),
    catchUp: options.catchUp,
    epochOf,
    floor: () => image().producerIds.floor,
    defer: setImmediate
  })

  // -------------------------------------------------------------------------------------------------
  // The manager's ports

  const metadata: MirrorMetadataManager.MetadataPort = {
    nodeId,
    clusterId: options.clusterId,
    offset: () => image().provenance.lastOffset,
    topicByName: (name) => mirrorTopic(MetadataImage.topicByName(image(), name)),
    topicById: (id) => mirrorTopic(MetadataImage.topicById(image(), id)),
    mirrorTopics: function* () {
      for (const t of image().topics.byId.values()) if (t.mirrorName !== null) yield mirrorTopic(t)!
    },
    mirrorConfigs: (name) => {
      const c = MetadataImage.configsOf(image(), MetadataImage.ConfigResourceType.CLUSTER_MIRROR, name)
      return c.size === 0 ? undefined : c
    },
    mirrorNames: () => {
      const names: Array<string> = []
      for (const c of image().configs.values())
        if (c.type === MetadataImage.ConfigResourceType.CLUSTER_MIRROR) names.push(c.name)
      return names
    },
    stateTopic: () => {
      const t = MetadataImage.topicByName(image(), MIRROR_STATE_TOPIC)
      if (t === undefined) return undefined
      return { numPartitions: t.partitions.size, leader: (p) => t.partitions.get(p)?.leader ?? -1 }
    }
  }

  const logOf = (topic: string, partition: number) => {
    const p = replicas.get(topic, partition)
    if (p === undefined || p.leader !== nodeId) throw new Error(`${topic}-${partition} is not led by broker ${nodeId}`)
    return p
  }

  const partitions: MirrorMetadataManager.PartitionPort = {
    latestEpoch: (topic, partition) => replicas.get(topic, partition)?.log.latestEpoch() ?? -1,
    highestProducerId: (topic, partition) => {
      const log = replicas.get(topic, partition)?.log
      const ids = (log?.activeProducers() ?? []).map((a) => a.producerId)
      return ids.reduce((max, id) => (id > max ? id : max), log?.highestProducerId() ?? -1n)
    },
    truncateToEpoch: async (topic, partition, lastMirrorEpoch) => {
      const p = logOf(topic, partition)
      const plog = p.log
      const found = lastMirrorEpoch >= 0 ? plog.endOffsetForEpoch(lastMirrorEpoch) : undefined
      const target = found !== undefined && found.epoch >= 0 && found.endOffset >= 0 ? found.endOffset : 0
      // §5.5 step 7: ISR caught up, leader cut, then followers cut; a timeout is retried as FAILED.
      await TwoPhaseTruncation.truncate(replicas, topic, partition, target, {
        timeoutMs: 2 * config.replicaLagTimeMaxMs,
        allReplicas:
          MetadataImage.configsOf(image(), MetadataImage.ConfigResourceType.TOPIC, topic).get(
            "mirror.support.unclean.leader.election"
          ) === "true",
        log: (line) => log(`${line} (last mirror epoch ${lastMirrorEpoch})`)
      })
    },
    startFetcher: (mirror, topic, topicId, partition) => {
      const m = fetcherFor(mirror)
      const p = replicas.get(topic, partition)
      if (m === undefined || p === undefined || p.leader !== nodeId) {
        manager.fetchFailed(topic, partition, {
          message: m === undefined ? `Mirror ${mirror} has no bootstrap.servers` : "Failed to add mirror fetcher",
          retryable: true
        })
        return
      }
      if (m.has({ topic, partition })) return
      m.addPartitions([new MirrorTarget(p, replicas, acceptedDataLoss)])
    },
    removeFetcher: (mirror, topic, partition) => {
      fetcherManagers.get(mirror)?.manager.removePartitions([{ topic, partition }])
    },
    lag: (mirror, topic, partition) => {
      const l = fetcherManagers.get(mirror)?.manager.lag({ topic, partition })
      const p = replicas.get(topic, partition)
      if (l === undefined || p === undefined) return undefined
      return {
        sourceHighWatermark: l.sourceHighWatermark,
        highWatermark: p.log.highWatermark,
        lag: l.lag,
        lagMs: l.lagMs
      }
    },
    sourceLeaderEpoch: (mirror, topic, partition) =>
      fetcherManagers.get(mirror)?.manager.sourceLeaderEpoch({ topic, partition }),
    bumpLeaderEpochs,
    finishStop: async (topic, partition, sourceClusterId) => {
      const p = logOf(topic, partition)
      const append = async (batch: Buffer, what: string) => {
        const r = await replicas.appendAsLeader(topic, partition, batch, false, 1, 10_000)
        if (r.errorCode !== 0)
          throw new Error(`appending ${what} to ${topic}-${partition}: ${Errors.message(r.errorCode)}`)
      }
      for (const t of p.log.openTransactions())
        await append(
          ControlRecord.endTxnMarker({
            producerId: t.producerId,
            producerEpoch: t.producerEpoch,
            commit: false,
            // §5.4: the epoch of the last marker seen from the source's transaction coordinator, at least 0.
            coordinatorEpoch: Math.max(0, t.coordinatorEpoch),
            timestamp: Date.now()
          }),
          `an ABORT marker for producer ${t.producerId}`
        )
      if (sourceClusterId === null) {
        log(`${topic}-${partition}: no source cluster id known, MIRROR_PID_RESET skipped`)
        return
      }
      await append(ControlRecord.mirrorPidReset({ sourceClusterId, timestamp: Date.now() }), "MIRROR_PID_RESET")
    },
    acceptDataLoss: (_mirror, topic, partition) => {
      acceptedDataLoss.set(topic, partition, true)
    }
  }

  const source = LastMirrorEpochs.make({ clusterId: options.clusterId, client: sourceClient, defer: setImmediate, log })

  const channel: MirrorMetadataManager.CoordinatorChannel = {
    read: async (node, request) => {
      const c = options.peer(node)
      if (c === undefined) throw new Error(`broker ${node} is unknown`)
      return c.request(ReadMirrorStates.api, request, 10_000)
    },
    write: async (node, request) => {
      const c = options.peer(node)
      if (c === undefined) throw new Error(`broker ${node} is unknown`)
      return c.request(WriteMirrorStates.api, request, 10_000)
    }
  }

  const groupSync = new MirrorSync.GroupSyncStatusStore()
  const aclSync = new AclSync.AclSyncStatusStore()
  // The mirror-level sync (topic configs, group offsets, ACLs) runs as the refresh's coordinator-only tasks.
  // The ACL sync keeps the bindings of the destination admin's own SASL principal, which let it run.
  const username = options.destinationAdmin.security?.sasl?.username
  const syncTasks = [
    ...MirrorSync.coordinatorTasks({ store: groupSync }),
    AclSync.aclsTask({ store: aclSync, ownPrincipal: username === undefined ? null : `User:${username}` })
  ]

  manager = new MirrorMetadataManager.MirrorMetadataManager({
    metadata,
    coordinator,
    channel,
    partitions,
    source,
    retry: {
      initialBackoffMs: config.mirrorFailedRetryInitialBackoffMs,
      maxBackoffMs: config.mirrorFailedRetryMaxBackoffMs,
      maxAttempts: config.mirrorFailedRetryMaxAttempts
    },
    log,
    onRetry: (mirror) => metrics?.retryAttempt(mirror)
  })
  const highWatermark = (topic: string, partition: number) => replicas.get(topic, partition)?.log.highWatermark
  lag = new MirrorLag.MirrorLag({
    fetcherLag: (mirror, topic, partition) => fetcherManagers.get(mirror)?.manager.lag({ topic, partition }),
    highWatermark,
    source: sourceClient
  })
  metrics?.partitions(() => lag.sample(manager.partitionStates()))

  // The periodic refresh (§5.9), with its own admin connection to this cluster: its own principal, so
  // authorization applies to it as to any client.
  let destination: ClusterClient.Client | undefined
  const refresh = new MirrorRefresh.MirrorRefresh({
    nodeId,
    image,
    manager,
    source: sourceClient,
    destination: () =>
      (destination ??= new ClusterClient.Client({
        bootstrapServers: [options.destinationAdmin.bootstrap],
        clientId: `mirror-dst-admin-${nodeId}`,
        requestTimeoutMs: 30_000,
        ...(options.destinationAdmin.security === undefined ? {} : { security: options.destinationAdmin.security })
      })),
    bumpLeaderEpochs: partitions.bumpLeaderEpochs,
    intervalMs: config.mirrorMetadataRefreshIntervalMs,
    coordinatorTasks: [...syncTasks, ...(options.coordinatorTasks ?? [])],
    sourceLeaders: (mirror, leaders) => fetcherManagers.get(mirror)?.manager.sourceLeaders(leaders),
    onSyncError: (mirror, kind, error) => {
      metrics?.syncError(mirror, kind)
      options.onSyncError?.(mirror, kind, error)
    },
    log
  })

  // Requests -----------------------------------------------------------------------------------------
  const register = (handlers: Handlers) => {
    handlers.register(ReadMirrorStates.api, (_req, request) => coordinator.read(request))
    handlers.register(WriteMirrorStates.api, (_req, request) => coordinator.write(request))
    handlers.register(DescribeClusterMirrors.api, async (_req, request) =>
      AclSync.withAclSync(
        MirrorSync.withGroupSync(
          await MirrorLag.withUnfetchedLag(manager.describe(request), lag, highWatermark),
          groupSync
        ),
        aclSync
      )
    )

    /**
     * Phase 1 of §5.8, then the controller with the stamp (and what `stamp` adds to the request); a
     * refusal answers every topic. The controller refuses a stamp older than a mirror-state change it
     * committed (INVALID_CLUSTER_MIRROR_STATES): this broker then loads what the controller committed
     * and validates again, so that an operation sent while this broker lags behind the metadata log goes
     * through once it caught up.
     */
    const validated = <Req extends Spec.Fields, Res extends Spec.Fields>(
      api: Api.ApiDef<Req, Res>,
      op: MirrorMetadataManager.Operation,
      topicsOf: (request: Spec.StructType<Req>) => ReadonlyArray<string> | null,
      refuse: (topics: ReadonlyArray<string>, errorCode: number, errorMessage: string) => Spec.StructInput<Res>,
      stamp: (request: Spec.StructType<Req>) => Promise<Readonly<Record<string, unknown>>> = async () => ({})
    ) =>
      handlers.register(api, (_req, request) => {
        const mirrorName = (request as { readonly mirrorName: string }).mirrorName
        const topics = topicsOf(request)
        return Validation.validated<Spec.StructInput<Res>>({
          validate: () => manager.validate(op, mirrorName, topics),
          refuse: (errorCode, errorMessage) => refuse(topics ?? [], errorCode, errorMessage),
          submit: async (offset) =>
            (await controller.request(api, {
              ...request,
              ...(await stamp(request)),
              stateValidationOffset: BigInt(offset)
            } as Spec.StructInput<Req>)) as Spec.StructInput<Res>,
          errorCodeOf: (response) => (response as unknown as { readonly errorCode: number }).errorCode,
          catchUp: options.catchUp,
          onStale: () =>
            log(
              `${op} of mirror ${mirrorName}: validated at a stale metadata offset; validating again after catching up`
            )
        })
      })
    const topicNames = (r: { readonly topics: ReadonlyArray<{ readonly topicName: string }> }) =>
      r.topics.map((t) => t.topicName)
    /** The refusal of a topic operation: the whole request and every topic with the validation's error. */
    const refuseTopics = (topics: ReadonlyArray<string>, errorCode: number, errorMessage: string) => ({
      throttleTimeMs: 0,
      errorCode,
      errorMessage,
      topics: topics.map((name) => ({ name, errorCode, errorMessage }))
    })
    // The topics a start creates take this broker's default.replication.factor, unless the mirror sets
    // replication.factor (the controller's own value is only the last resort), and the source's configs.
    validated(StartMirrorTopics.api, "start", topicNames, refuseTopics, async (r) => ({
      defaultReplicationFactor: (options.effectiveConfig?.() ?? config).defaultReplicationFactor,
      topics: await MirrorSync.withSourceTopicConfigs(sourceClient, image(), r)
    }))
    validated(StopMirrorTopics.api, "stop", topicNames, refuseTopics)
    validated(PauseMirrorTopics.api, "pause", topicNames, refuseTopics)
    validated(ResumeMirrorTopics.api, "resume", topicNames, refuseTopics)
    validated(
      DeleteClusterMirror.api,
      "delete",
      () => null,
      (_topics, errorCode, errorMessage) => ({ throttleTimeMs: 0, errorCode, errorMessage })
    )

    // RecoverMirrorTopics: the leaders of the topics' partitions recover them; a broker that receives the
    // request from a client asks every other leader, which answer for their own partitions only.
    handlers.register(RecoverMirrorTopics.api, async (req, request) => {
      const local = manager.recover(
        request.mirrorName,
        request.topics.map((t) => t.topicName),
        { acceptDataLoss: request.acceptDataLoss }
      )
      const fromBroker = req.clientId?.startsWith("broker-") === true
      if (fromBroker) return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, topics: local }
      const leaders = new Set<number>()
      for (const t of request.topics) {
        const topic = MetadataImage.topicByName(image(), t.topicName)
        if (topic === undefined) continue
        for (const p of topic.partitions.values()) if (p.leader >= 0 && p.leader !== nodeId) leaders.add(p.leader)
      }
      return Recover.acrossLeaders(
        request.topics.map((t) => t.topicName),
        local,
        leaders,
        (leader) => {
          const c = options.peer(leader)
          return c === undefined ? undefined : () => c.request(RecoverMirrorTopics.api, request, 10_000)
        }
      )
    })
  }

  return {
    manager,
    coordinator,
    refresh,
    onStatePartition: (partition, leader, leaderEpoch, numPartitions) =>
      manager.onStatePartition(partition, leader === nodeId ? leaderEpoch : -1, numPartitions),
    onMetadataUpdate: () => {
      for (const [mirror, f] of fetcherManagers) {
        const configs = metadata.mirrorConfigs(mirror)
        if (configs === undefined) {
          void f.manager.close()
          fetcherManagers.delete(mirror)
        } else if (connectionKey(configs) !== f.key) {
          // The source's address or security changed: its partitions move to fetchers connected anew
          // (nothing is appended by the old ones once they are removed from them).
          const moved = f.manager.partitionList()
          f.manager.removePartitions(moved)
          void f.manager.close()
          fetcherManagers.delete(mirror)
          if (moved.length > 0) fetcherFor(mirror)?.addPartitions(moved)
        }
      }
      groupSync.retain(new Set(metadata.mirrorNames()))
      aclSync.retain(new Set(metadata.mirrorNames()))
      manager.onMetadataUpdate()
      refresh.onMetadataUpdate()
    },
    produceState: (topic, partition) => manager.produceState(topic, partition),
    register,
    syncTasks,
    close: async () => {
      const refreshed = refresh.close()
      await destination?.close()
      manager.close()
      await Promise.all([...fetcherManagers.values()].map((f) => f.manager.close()))
      fetcherManagers.clear()
      await Promise.all([...sourceClients.values()].map((c) => c.client.close()))
      sourceClients.clear()
      await refreshed
    }
  }
}

/**
 * A mirror partition as its fetcher sees it: a view of the replica manager's partition state, with the
 * members on the prototype so that an idle partition costs two fields.
 */
class MirrorTarget implements MirrorFetcherManager.MirrorPartition {
  constructor(
    private readonly state: ReplicaPartitionState,
    private readonly replicas: ReplicaManager,
    private readonly accepted: TopicPartitionMap<true>
  ) {}
  get topic(): string {
    return this.state.topic
  }
  get topicId(): string {
    return this.state.topicId
  }
  get partition(): number {
    return this.state.partition
  }
  get log(): PartitionLog.PartitionLog {
    return this.state.log
  }
  destinationLeaderEpoch(): number {
    return this.replicas.get(this.state.topic, this.state.partition)?.leaderEpoch ?? -1
  }
  onAppend(): void {
    this.replicas.mirrorAppended(this.state.topic, this.state.partition)
  }
  /** Consumes the operator's acceptance of a data loss: it restarts the partition once. */
  acceptDataLoss(): boolean {
    return this.accepted.delete(this.state.topic, this.state.partition)
  }
}

const mirrorTopic = (t: MetadataImage.TopicImage | undefined): MirrorMetadataManager.MirrorTopic | undefined =>
  t === undefined
    ? undefined
    : {
        name: t.name,
        topicId: t.id,
        mirrorName: t.mirrorName,
        desired: t.desiredMirrorState,
        partitions: t.partitions
      }
