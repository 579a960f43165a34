/**
 * A broker in a cluster: registers with the controller and heartbeats, follows the metadata log by
 * fetching `__cluster_metadata` from the controller, and publishes every metadata delta to its
 * components — partitions become leader or follower (followers fetch from their leader through the
 * replica fetcher), group coordinators load and unload with `__consumer_offsets` leadership. Requests
 * that change metadata are forwarded to the controller. Decisions live in the controller; this module
 * only wires.
 */
import { StandardAuthorizer } from "@clustermirror/authorizer"
import { FeatureControl } from "@clustermirror/controller"
import { NetworkLeaderEndpoint, ReplicaFetcher } from "@clustermirror/fetcher"
import { MetadataImage, MetadataLog, MetadataPublisher, MetaProperties } from "@clustermirror/metadata-log"
import { MirrorMetrics, type MirrorRefresh, type MirrorSync } from "@clustermirror/mirror"
import type { MetadataDelta } from "@clustermirror/metadata-log"
import {
  AddPartitionsToTxn,
  AllocateProducerIds,
  AlterConfigs,
  AlterPartition,
  AlterPartitionReassignments,
  AlterClientQuotas,
  AlterUserScramCredentials,
  BrokerHeartbeat,
  BrokerRegistration,
  BumpLeaderEpochs,
  CreateAcls,
  CreateClusterMirror,
  CreatePartitions,
  CreateTopics,
  DeleteAcls,
  DeleteTopics,
  DescribeQuorum,
  ElectLeaders,
  Errors,
  Fetch,
  IncrementalAlterConfigs,
  ListConfigResources,
  ListPartitionReassignments,
  Scram,
  type Api,
  type Spec,
  UnregisterBroker,
  UpdateFeatures,
  Uuid,
  WriteTxnMarkers
} from "@clustermirror/protocol"
import { LogCleaner, PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { cleanupPolicyOf, logConfigFor, minInsyncReplicasFor } from "@clustermirror/broker-config/LogConfigs"
import * as BrokerConfigs from "@clustermirror/broker-config/BrokerConfig"
import type { BrokerConfig } from "@clustermirror/broker-config/BrokerConfig"
import * as DynamicBrokerConfig from "@clustermirror/broker-config/DynamicBrokerConfig"
import * as AclApis from "@clustermirror/security/AclApis"
import * as DescribeTopicPartitionsApi from "@clustermirror/security/DescribeTopicPartitionsApi"
import * as Authorization from "@clustermirror/security/Authorization"
import * as GroupApis from "./GroupApis.js"
import {
  ProducerIdManager,
  TransactionApis,
  TransactionControl,
  TransactionRecords
} from "@clustermirror/transaction-coordinator"
import * as Listeners from "@clustermirror/security/Listeners"
import { type BrokerContext, INTERNAL_TOPICS, register } from "./KafkaApis.js"
import type * as MetadataView from "./MetadataView.js"
import * as MirrorApis from "@clustermirror/mirror/MirrorApis"
import * as MirrorRuntime from "./MirrorRuntime.js"
import * as ScramApis from "@clustermirror/security/ScramApis"
import { ClientQuotaApis, DelegationTokenApis } from "@clustermirror/security"
import * as ConfigResources from "@clustermirror/broker-config/ConfigResources"
import { CLOSE_BUDGET_MS, ReplicaManager } from "@clustermirror/replication/ReplicaManager"
import { Handlers } from "@clustermirror/network/RequestChannel"
import type * as SocketServer from "@clustermirror/network/SocketServer"
import * as AlterPartitionManager from "@clustermirror/replication/AlterPartitionManager"
import * as CoordinatorLogs from "@clustermirror/replication/CoordinatorLogs"
import * as TxnVerification from "@clustermirror/replication/TxnVerification"
import { Channel } from "@clustermirror/network/Channel"
import { ControllerChannel } from "@clustermirror/network/ControllerChannel"

/** Extension points of a broker's mirror runtime (the periodic refresh's coordinator tasks, sync errors). */
export interface ClusterBrokerOptions {
  readonly coordinatorTasks?: ReadonlyArray<MirrorRefresh.CoordinatorTask>
  readonly onSyncError?: (mirror: string, kind: string, error: string) => void
}

export interface ClusterBroker {
  readonly port: number
  readonly nodeId: number
  readonly replicas: ReplicaManager
  /** The metadata image this broker has loaded. */
  readonly image: () => MetadataImage.MetadataImage
  /** The mirror-level sync tasks of this broker (§5.9 c), whose statuses it reports. */
  readonly mirrorSyncTasks: ReadonlyArray<MirrorSync.CoordinatorTask>
  readonly close: () => Promise<void>
}

/** Kafka's SecurityProtocol ids, as broker registrations carry them. */

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/**
 * Metadata is fetched in bounded slices: a broker catching up on a large log applies one slice at a time, so
 * its event loop (heartbeats, replication, clients) keeps running between them.
 */
const METADATA_FETCH_MAX_BYTES = 1024 * 1024
/** A busy controller answers late rather than never; one paused for this long gives way to the next of a quorum. */
const METADATA_FETCH_TIMEOUT_MS = 10_000

const viewOf = (
  current: () => MetadataImage.MetadataImage,
  clusterId: string,
  selfId: number,
  interBrokerListenerName: string | null
): MetadataView.MetadataView => {
  const topic = (t: MetadataImage.TopicImage, image: MetadataImage.MetadataImage): MetadataView.TopicView => ({
    name: t.name,
    topicId: t.id,
    partitions: [...t.partitions.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([partitionId, p]) => ({
        partitionId,
        leader: p.leader,
        leaderEpoch: p.leaderEpoch,
        partitionEpoch: p.partitionEpoch,
        replicas: p.replicas,
        isr: p.isr
      })),
    configs: MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.TOPIC, t.name),
    readOnly: t.mirrorName !== null
  })
  // A request's listener: that endpoint only, as Kafka answers (a broker without it is left out).
  // Without one (the broker's own lookups): the inter-broker listener's.
  const endpoint = (
    b: MetadataImage.BrokerRegistration,
    listenerName?: string
  ): MetadataView.BrokerEndpoint | undefined => {
    const l =
      listenerName !== undefined
        ? b.listeners.find((x) => x.name === listenerName)
        : listenerOf(b, interBrokerListenerName)
    return l === undefined ? undefined : { nodeId: b.id, host: l.host, port: l.port, rack: b.rack }
  }
  return {
    clusterId,
    controllerId: () => {
      const live = MetadataImage.activeBrokers(current())
      return live.length === 0 ? selfId : Math.min(...live.map((b) => b.id))
    },
    topicByName: (name) => {
      const image = current()
      const t = MetadataImage.topicByName(image, name)
      return t === undefined ? undefined : topic(t, image)
    },
    topicById: (id) => {
      const image = current()
      const t = MetadataImage.topicById(image, id)
      return t === undefined ? undefined : topic(t, image)
    },
    topics: function* () {
      const image = current()
      for (const t of image.topics.byId.values()) yield topic(t, image)
    },
    brokers: (listenerName) =>
      MetadataImage.activeBrokers(current())
        .map((b) => endpoint(b, listenerName))
        .filter((e): e is MetadataView.BrokerEndpoint => e !== undefined),
    broker: (id, listenerName) => {
      const b = current().cluster.brokers.get(id)
      return b === undefined || b.fenced ? undefined : endpoint(b, listenerName)
    }
  }
}

/** A broker's endpoint on the inter-broker listener (else, for a registration without it, its first non-controller one). */
const listenerOf = (b: MetadataImage.BrokerRegistration | undefined, interBrokerListenerName: string | null) =>
  b?.listeners.find((x) => x.name === interBrokerListenerName) ??
  b?.listeners.find((x) => x.name !== "CONTROLLER") ??
  b?.listeners[0]

export const start = async (
  requested: BrokerConfig,
  log: (line: string) => void = () => {},
  options: ClusterBrokerOptions = {}
): Promise<ClusterBroker> => {
  const bootstrap = requested.controllerBootstrap
  if (bootstrap === null) throw new Error("a broker in a cluster needs controller.quorum.bootstrap.servers")
  fs.mkdirSync(requested.dataDir, { recursive: true })
  const handlers = new Handlers()
  // One server per listener but the controller ones; TLS material is read here, so a bad file fails the start.
  const brokerListeners = BrokerConfigs.listenersOf(requested).filter(
    (l) => !requested.controllerListenerNames.includes(l.name)
  )
  if (brokerListeners.length === 0) throw new Error("a broker needs a listener that is not a controller listener")
  // This broker's own connections: to the other brokers' inter-broker listener and to the controller listener.
  const interBrokerName = requested.interBrokerListenerName ?? brokerListeners[0]!.name
  const interBroker = Listeners.clientSecurity(
    requested,
    interBrokerName,
    requested.listenerSecurityProtocolMap.get(interBrokerName) ?? "PLAINTEXT",
    "sasl.mechanism.inter.broker.protocol"
  )
  // The mirrors' destination admin (KIP-1279 §8.3): mirror.admin.listener.name with its own mechanism.
  const adminListener = BrokerConfigs.mirrorAdminListener(requested)
  const adminSecurity =
    adminListener === null
      ? interBroker
      : Listeners.clientSecurity(
          requested,
          adminListener.name,
          adminListener.protocol,
          "sasl.mechanism.mirror.admin.protocol"
        )
  const controllerListener = BrokerConfigs.controllerProtocol(requested)
  const toController = Listeners.clientSecurity(
    requested,
    controllerListener.name,
    controllerListener.protocol,
    "sasl.mechanism.controller.protocol"
  )
  // SCRAM credentials and IP connection quotas come from the metadata image, loaded after the listeners are up.
  let scramImage: () => MetadataImage.MetadataImage = () => MetadataImage.empty
  const admit = ClientQuotaApis.admitConnection({ image: () => scramImage(), ...ClientQuotaApis.windowsOf(requested) })
  const socketOptions = brokerListeners.map((l) => ({ ...Listeners.socketOptions(requested, l), admit }))
  const servers = new Map<string, SocketServer.SocketServer>()
  try {
    for (const [i, l] of brokerListeners.entries())
      servers.set(
        l.name,
        await Listeners.serve(
          handlers.frameHandler(log),
          {
            host: l.host === "" ? "0.0.0.0" : l.host,
            port: l.port,
            maxFrameBytes: requested.socketRequestMaxBytes,
            log,
            ...socketOptions[i]!
          },
          (u, m) => MetadataImage.scramCredential(scramImage(), u, Scram.mechanismId(m))
        )
      )
  } catch (e) {
    for (const s of servers.values()) await s.close()
    throw e
  }
  const server = servers.get(interBrokerName) ?? [...servers.values()][0]!
  const config: BrokerConfig = { ...requested, port: server.port }
  const nodeId = config.nodeId
  const clusterId = config.clusterId ?? clusterIdFrom(config.dataDir)
  const metrics = new MirrorMetrics.MirrorMetrics()
  const store = PartitionLogStore.makeFileStore(config.dataDir, {
    recoveryTruncated: (t) => {
      log(`WARN ${PartitionLog.describeTruncation(t)}`)
      metrics.logRecoveryTruncated(t.removedBytes, t.removedRecords)
    }
  })
  const metadataDir = path.join(config.dataDir, "metadata")
  const { directoryId } = await Effect.runPromise(MetaProperties.loadOrCreate(metadataDir, clusterId, nodeId))
  const metadataLog = await Effect.runPromise(MetadataLog.makeFile(metadataDir))
  const loader = await Effect.runPromise(MetadataPublisher.make())
  let image = await Effect.runPromise(metadataLog.loadInto(loader))
  scramImage = () => image
  // The config in force: the properties under the dynamic broker configs of the metadata log.
  let effectiveConfig = DynamicBrokerConfig.effective(DynamicBrokerConfig.layersOf(config, image))
  // The authorizer over the image's ACLs (authorizer.class.name), rebuilt whenever they change.
  const authorizerConfig = config.authorizer
  const buildAuthorizer = () =>
    authorizerConfig === null
      ? undefined
      : StandardAuthorizer.StandardAuthorizer.make(authorizerConfig, image.acls.values())
  let authorizer = buildAuthorizer()
  // Three connections to the controller, since it answers each connection's requests in order: heartbeats
  // (and registration) must never wait behind a long-polling metadata fetch, nor behind forwarded requests.
  // Each moves on to the next controller of the quorum when its own fails or is not the active one.
  const quorum = config.controllerBootstrapServers.length > 0 ? config.controllerBootstrapServers : [bootstrap]
  const toQuorum = (name: string, timeoutMs?: number) =>
    new ControllerChannel(
      quorum,
      `broker-${nodeId}-${name}`,
      toController,
      (to, why) => log(`${name} channel: trying the controller at ${to.host}:${to.port} (${why})`),
      10_000,
      timeoutMs
    )
  const controller = toQuorum("controller")
  // A heartbeat unanswered for a third of the session goes to the next controller, well before the session ends.
  const heartbeats = toQuorum("heartbeat", Math.max(1000, Math.floor(config.brokerSessionTimeoutMs / 3)))
  const metadataChannel = toQuorum("metadata")
  let brokerEpoch = -1n
  let stopped = false
  /** Applies changed log.cleaner.* settings (set once the cleaner runs). */
  let cleanerRestart: () => void = () => {}
  const replicas = new ReplicaManager({
    store,
    nodeId,
    replicaLagTimeMaxMs: config.replicaLagTimeMaxMs,
    log,
    isBrokerAlive: (id) => image.cluster.brokers.get(id)?.fenced === false,
    replicationQuotas: () => effectiveConfig,
    topicConfigs: (t) => MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.TOPIC, t),
    ...(config.transactionPartitionVerificationEnable && {
      verifier: TxnVerification.make({
        transactionStateLeaders: () => {
          const t = MetadataImage.topicByName(image, TxnVerification.TRANSACTION_STATE_TOPIC)
          return t === undefined
            ? undefined
            : [...t.partitions.keys()].sort((a, b) => a - b).map((i) => t.partitions.get(i)!.leader)
        },
        channelTo: (id) => {
          const c = peer(id)
          return c === undefined
            ? undefined
            : { addPartitionsToTxn: (body) => c.request(AddPartitionsToTxn.api, body, 10_000) }
        }
      })
    }),
    isrChannel: AlterPartitionManager.make({
      brokerId: nodeId,
      brokerEpoch: () => brokerEpoch,
      send: (request) => controller.request(AlterPartition.api, request)
    })
  })
  // -------------------------------------------------------------------------------------------------
  // Replica fetchers, one per leader broker

  // A fetcher belongs to one incarnation of its leader at one address: when the leader registers again
  // (it restarted) the fetcher is replaced, so its partitions start from fresh fetch state on a new
  // connection. Connections are opened per request as needed, so a leader that is down or restarting
  // is fetched from again as soon as it listens.
  interface LeaderFetcher {
    readonly fetcher: ReplicaFetcher.ReplicaFetcher
    readonly channel: Channel
    readonly incarnationId: string
    readonly host: string
    readonly port: number
  }
  const fetchers = new Map<number, LeaderFetcher>()
  const retireFetcher = (leaderId: number) => {
    const existing = fetchers.get(leaderId)
    if (existing === undefined) return
    fetchers.delete(leaderId)
    // Its partitions go first, so that an answer still in flight is dropped rather than appended.
    existing.fetcher.removePartitions([...replicas.all()].map((p) => ({ topic: p.topic, partition: p.partition })))
    void existing.fetcher.stop().finally(() => existing.channel.close())
  }
  const newFetcher = (
    leaderId: number,
    b: MetadataImage.BrokerRegistration,
    l: { readonly host: string; readonly port: number }
  ): ReplicaFetcher.ReplicaFetcher => {
    const channel = new Channel(l.host, l.port, `broker-${nodeId}-fetcher-${leaderId}`, interBroker)
    const fetcher = new ReplicaFetcher.ReplicaFetcher({
      brokerId: nodeId,
      brokerEpoch: () => brokerEpoch,
      endpoint: NetworkLeaderEndpoint.make({
        leaderId,
        brokerId: nodeId,
        // Our brokers speak the same versions; each request is capped at what the connection negotiated.
        fetchVersion: Fetch.api.maxVersion,
        connection: { request: (api, version, body) => channel.request(api, body, undefined, version) }
      }),
      // KIP-1279 §6.4: followers of mirror partitions validate batches with MirrorLeaderEpoch.
      isMirrorTopic: (topic) => (MetadataImage.topicByName(image, topic)?.mirrorName ?? null) !== null,
      throttle: replicas.followerThrottle,
      events: {
        fetched: (tp) => replicas.notifyChanged(tp.topic, tp.partition),
        truncated: (tp, offset) => log(`truncated ${tp.topic}-${tp.partition} to ${offset}`),
        failed: (tp, errorCode) => {
          if (errorCode === Errors.ErrorCode.KAFKA_STORAGE_ERROR)
            replicas.reportStorageError(
              "replica append",
              tp.topic,
              tp.partition,
              "appending fetched batches failed; the follower retries after replica.fetch.backoff.ms"
            )
        }
      }
    })
    fetcher.start()
    fetchers.set(leaderId, { fetcher, channel, incarnationId: b.incarnationId, host: l.host, port: l.port })
    return fetcher
  }
  /** The fetcher for the current registration of `leaderId`, replacing one built for an earlier one. */
  const fetcherFor = (leaderId: number): ReplicaFetcher.ReplicaFetcher | undefined => {
    const b = image.cluster.brokers.get(leaderId)
    const l = listenerOf(b, config.interBrokerListenerName)
    const existing = fetchers.get(leaderId)
    if (b === undefined || l === undefined) {
      retireFetcher(leaderId)
      return undefined
    }
    if (
      existing !== undefined &&
      existing.incarnationId === b.incarnationId &&
      existing.host === l.host &&
      existing.port === l.port
    )
      return existing.fetcher
    retireFetcher(leaderId)
    const fetcher = newFetcher(leaderId, b, l)
    // Every partition this broker follows under that leader moves to the new fetcher, from its log end.
    for (const p of replicas.all())
      if (p.leader === leaderId && leaderId !== nodeId)
        fetcher.addPartitions([
          { topic: p.topic, topicId: p.topicId, partition: p.partition, log: p.log, currentLeaderEpoch: p.leaderEpoch }
        ])
    return fetcher
  }
  /** Replaces the fetchers whose leader registered again or went away. */
  const refreshFetchers = () => {
    for (const leaderId of [...fetchers.keys()]) fetcherFor(leaderId)
  }
  const stopFetching = (topic: string, partition: number) => {
    for (const f of fetchers.values()) f.fetcher.removePartitions([{ topic, partition }])
  }

  // -------------------------------------------------------------------------------------------------
  // Metadata publishing

  const admin: MetadataView.TopicAdmin = {
    createTopics: async (topics, validateOnly) => {
      const res = await controller.request(CreateTopics.api, {
        topics: topics.map((t) => ({
          name: t.name,
          numPartitions: t.numPartitions,
          replicationFactor: t.replicationFactor,
          assignments: t.assignments,
          configs: t.configs,
          mirrorInfo: t.topicId === null ? null : { topicId: t.topicId }
        })),
        timeoutMs: 30_000,
        validateOnly
      })
      await catchUp()
      return res.topics.map((t) => ({
        name: t.name,
        topicId: t.topicId,
        errorCode: t.errorCode,
        errorMessage: t.errorMessage,
        numPartitions: t.numPartitions,
        replicationFactor: t.replicationFactor,
        configs: (t.configs ?? []).flatMap((c) => (c.value === null ? [] : [{ name: c.name, value: c.value }]))
      }))
    },
    allocateProducerIds: async () => {
      const res = await controller.request(AllocateProducerIds.api, { brokerId: nodeId, brokerEpoch })
      if (res.errorCode !== 0) throw new Error(`AllocateProducerIds failed: ${Errors.message(res.errorCode)}`)
      return { firstProducerId: res.producerIdStart, size: BigInt(res.producerIdLen) }
    }
  }
  const ctx: BrokerContext = {
    get config() {
      return effectiveConfig
    },
    layers: () => DynamicBrokerConfig.layersOf(config, image),
    view: viewOf(() => image, clusterId, nodeId, config.interBrokerListenerName),
    admin,
    replicas,
    producerIds: new ProducerIdManager.ProducerIdManager({
      allocateBlock: admin.allocateProducerIds,
      floor: () => image.producerIds.floor
    }),
    describeMirrorConfigs: (name, keys) => MirrorApis.describeMirrorConfigs(image, name, keys),
    mirrorProduceState: (topic, partition) => mirrors.produceState(topic, partition),
    markerWriterFor: (t) => (t === GroupApis.OFFSETS_TOPIC ? (p, m) => groups.completeTransaction(p, m) : undefined),
    features: (v) => FeatureControl.apiVersionsFeatures(v, image.features, BigInt(image.provenance.lastOffset))
  }
  const groups = GroupApis.shards(ctx, log)

  // Channels to the other brokers of this cluster (mirror state coordinators, recover fan-out).
  const peers = new Map<number, Channel>()
  const peer = (id: number): Channel | undefined => {
    const existing = peers.get(id)
    if (existing !== undefined) return existing
    const b = image.cluster.brokers.get(id)
    const l = listenerOf(b, config.interBrokerListenerName)
    if (l === undefined) return undefined
    const c = new Channel(l.host, l.port, `broker-${nodeId}-peer-${id}`, interBroker)
    peers.set(id, c)
    return c
  }
  // What this broker registers: the inter-broker listener where it bound, another at its advertised port unless 0.
  const advertised = BrokerConfigs.advertisedOf(config).map((l) => ({
    ...l,
    port: l.name === interBrokerName || l.port === 0 ? (servers.get(l.name)?.port ?? l.port) : l.port
  }))
  const adminEndpoint = advertised.find((l) => l.name === (adminListener?.name ?? interBrokerName))
  const txnLog = { replicas, nodeId, topic: TransactionControl.TRANSACTION_STATE_TOPIC, codec: TransactionRecords }
  const txns = TransactionApis.coordinator(ctx, {
    log: CoordinatorLogs.make(txnLog),
    sendMarkers: (id, request) =>
      peer(id)?.request(WriteTxnMarkers.api, request) ?? Promise.reject(new Error(`no endpoint of broker ${id}`)),
    logLine: log
  })
  const mirrors = MirrorRuntime.make({
    config,
    effectiveConfig: () => effectiveConfig,
    clusterId,
    image: () => image,
    replicas,
    controller,
    catchUp: () => catchUp(),
    peer,
    destinationAdmin: {
      bootstrap: `${adminEndpoint?.host ?? config.advertisedHost}:${adminEndpoint?.port ?? config.port}`,
      ...(adminSecurity === undefined ? {} : { security: adminSecurity })
    },
    log,
    ...options,
    metrics
  })
  const metricsServer =
    config.metricsPort > 0
      ? await MirrorMetrics.serve(metrics, { host: config.host, port: config.metricsPort, log })
      : undefined
  if (metricsServer !== undefined)
    log(`broker ${nodeId} serves metrics at http://${config.host}:${metricsServer.port}/metrics`)

  // Read-your-writes for requests this broker forwards: a metadata fetch sent after the controller
  // answered carries that answer's records, so once such a round is loaded this broker serves them.
  let sentRounds = 0
  let caughtUpRound = 0
  const roundWaiters = new Set<{ readonly round: number; readonly resolve: () => void }>()
  const markCaughtUp = (round: number) => {
    caughtUpRound = Math.max(caughtUpRound, round)
    for (const w of roundWaiters)
      if (w.round <= caughtUpRound) {
        roundWaiters.delete(w)
        w.resolve()
      }
  }
  /** Resolves once this broker has loaded everything the controller had committed when it was called. */
  const catchUp = (): Promise<void> => {
    const round = sentRounds + 1
    if (caughtUpRound >= round || stopped) return Promise.resolve()
    return new Promise((resolve) => {
      const w = { round, resolve }
      roundWaiters.add(w)
      setTimeout(() => {
        roundWaiters.delete(w)
        resolve()
      }, 10_000).unref()
    })
  }

  const applyPartition = (t: MetadataImage.TopicImage, partitionId: number, p: MetadataImage.PartitionRegistration) => {
    if (!p.replicas.includes(nodeId)) return
    const topicView = viewOf(() => image, clusterId, nodeId, config.interBrokerListenerName).topicByName(t.name)
    const role = replicas.applyRegistration(
      t.name,
      partitionId,
      t.id,
      p,
      logConfigFor(effectiveConfig, topicView),
      INTERNAL_TOPICS.has(t.name),
      minInsyncReplicasFor(effectiveConfig, topicView)
    )
    if (t.name === GroupApis.OFFSETS_TOPIC) groups.onLeadership(partitionId, p.leader === nodeId, p.leaderEpoch)
    if (t.name === TransactionControl.TRANSACTION_STATE_TOPIC)
      void txns.onLeadership(partitionId, p.leader === nodeId, p.leaderEpoch)
    if (t.name === MirrorRuntime.MIRROR_STATE_TOPIC)
      mirrors.onStatePartition(partitionId, p.leader, p.leaderEpoch, t.partitions.size)
    if (p.leader === nodeId || p.leader < 0) {
      stopFetching(t.name, partitionId)
      return
    }
    // A new leader (or epoch) restarts fetching from our log end; the fetcher truncates on divergence. Done
    // in the order the metadata changes arrive, so a partition is never left with an older leader.
    const state = role.state
    const f = fetcherFor(p.leader)
    for (const [leaderId, other] of fetchers)
      if (leaderId !== p.leader) other.fetcher.removePartitions([{ topic: t.name, partition: partitionId }])
    f?.addPartitions([
      { topic: t.name, topicId: t.id, partition: partitionId, log: state.log, currentLeaderEpoch: state.leaderEpoch }
    ])
  }

  // Config changes apply to the hosted partitions as they are replayed: a broker-level change to every
  // partition, a topic's change to its own.
  const reconfigure = (topics: ReadonlySet<string> | "all") => {
    const views = viewOf(() => image, clusterId, nodeId, config.interBrokerListenerName)
    for (const state of replicas.all()) {
      if (topics !== "all" && !topics.has(state.topic)) continue
      const topicView = views.topicByName(state.topic)
      replicas.reconfigure(
        state.topic,
        state.partition,
        logConfigFor(effectiveConfig, topicView),
        minInsyncReplicasFor(effectiveConfig, topicView)
      )
    }
  }
  const applyConfigChanges = (delta: MetadataDelta.MetadataDelta) => {
    const changed = delta.changedConfigs()
    const broker = MetadataImage.ConfigResourceType.BROKER
    if (changed.some((r) => r.type === broker && (r.name === "" || r.name === String(nodeId)))) {
      effectiveConfig = DynamicBrokerConfig.effective(DynamicBrokerConfig.layersOf(config, image))
      reconfigure("all")
      cleanerRestart()
      return
    }
    const topics = new Set(changed.filter((r) => r.type === MetadataImage.ConfigResourceType.TOPIC).map((r) => r.name))
    if (topics.size > 0) reconfigure(topics)
  }

  const publisher: MetadataPublisher.MetadataPublisher = {
    name: `broker-${nodeId}`,
    onMetadataUpdate: (delta: MetadataDelta.MetadataDelta, next, manifest) =>
      Effect.sync(() => {
        image = next
        if (authorizer !== undefined && (manifest._tag === "Snapshot" || delta.aclsChanged()))
          authorizer = buildAuthorizer()
        refreshFetchers()
        if (manifest._tag === "Snapshot") {
          effectiveConfig = DynamicBrokerConfig.effective(DynamicBrokerConfig.layersOf(config, image))
          reconfigure("all")
          cleanerRestart()
          for (const t of next.topics.byId.values()) for (const [i, p] of t.partitions) applyPartition(t, i, p)
          for (const f of fetchers.values()) f.fetcher.mirrorTopicsChanged()
          mirrors.onMetadataUpdate()
          return
        }
        applyConfigChanges(delta)
        const changes = delta.localChanges(nodeId)
        for (const tp of changes.deletes) {
          stopFetching(tp.topicName, tp.partitionId)
          if (tp.topicName === GroupApis.OFFSETS_TOPIC) groups.onLeadership(tp.partitionId, false, -1)
          if (tp.topicName === TransactionControl.TRANSACTION_STATE_TOPIC)
            void txns.onLeadership(tp.partitionId, false, -1)
          if (tp.topicName === MirrorRuntime.MIRROR_STATE_TOPIC) mirrors.onStatePartition(tp.partitionId, -1, -1, 0)
          replicas.deletePartition(tp.topicName, tp.partitionId)
        }
        for (const c of [...changes.leaders, ...changes.followers]) {
          const t = MetadataImage.topicById(next, c.topicId)
          if (t !== undefined) applyPartition(t, c.partitionId, c.partition)
        }
        // A topic may have gained or lost its mirror name: followers pick the epoch rule again (§6.4).
        for (const f of fetchers.values()) f.fetcher.mirrorTopicsChanged()
        mirrors.onMetadataUpdate()
      })
  }
  await Effect.runPromise(loader.installPublishers([publisher]))

  // -------------------------------------------------------------------------------------------------
  // Handlers: local ones, and the ones the controller decides

  const forward = <Req extends Spec.Fields, Res extends Spec.Fields>(api: Api.ApiDef<Req, Res>) =>
    handlers.register(api, async (_req, request) => {
      const response = await controller.request(api, request as Spec.StructInput<Req>)
      await catchUp()
      return response as Spec.StructInput<Res>
    })
  register(handlers, ctx)
  handlers.register(CreateTopics.api, async (_req, request) => {
    const res = await controller.request(CreateTopics.api, request)
    // Answer once this broker serves what it created, so a client's next request here finds it.
    if (!request.validateOnly) await catchUp()
    return res
  })
  handlers.register(DeleteTopics.api, async (_req, request) => {
    // Forwarded in the controller channel's version (v6+), where a v0-5 request's `TopicNames` do not
    // exist: they travel as `Topics` by name, or the controller would see no topic at all.
    const res = await controller.request(DeleteTopics.api, {
      ...request,
      topicNames: [],
      topics: [...request.topics, ...request.topicNames.map((name) => ({ name, topicId: Uuid.ZERO }))]
    })
    await catchUp()
    return res
  })
  forward(CreatePartitions.api)
  forward(IncrementalAlterConfigs.api)
  forward(AlterConfigs.api)
  forward(ElectLeaders.api)
  forward(AlterPartitionReassignments.api)
  forward(ListPartitionReassignments.api)
  forward(BumpLeaderEpochs.api)
  forward(AlterUserScramCredentials.api)
  forward(AlterClientQuotas.api)
  handlers.register(DescribeQuorum.api, (_req, request) => controller.request(DescribeQuorum.api, request))
  forward(UpdateFeatures.api)
  handlers.wrap(UpdateFeatures.api, (next) => (req, r) => next(req, FeatureControl.withUpgradeTypes(r)))
  DelegationTokenApis.register(ScramApis.register(handlers, () => image))
  ClientQuotaApis.register(handlers, { image: () => image, ...ClientQuotaApis.windowsOf(config) })
  handlers.register(ListConfigResources.api, (req, request) => ConfigResources.list(image, req.apiVersion, request))
  forward(UnregisterBroker.api)
  // KIP-1279: mirrors are created by the controller; the topic operations are validated here first (§5.8).
  forward(CreateClusterMirror.api)
  MirrorApis.register(handlers, () => image)
  mirrors.register(handlers)
  // Coordinator topics are created on first use, their replication factor capped to the live brokers.
  const rf = (wanted: number) => Math.min(wanted, Math.max(1, ctx.view.brokers().length))
  GroupApis.register(handlers, ctx, groups, () =>
    GroupApis.ensureOffsetsTopic(ctx, rf(config.offsetsTopicReplicationFactor))
  )
  const txnRf = () => rf(config.transactionStateLogReplicationFactor)
  TransactionApis.register(handlers, ctx, txns, () => TransactionApis.ensureTransactionStateTopic(ctx, txnRf()))
  const current = authorizer === undefined ? undefined : () => authorizer!
  DescribeTopicPartitionsApi.register(handlers, ctx, { internalTopics: INTERNAL_TOPICS, authorizer: current })
  AclApis.register(handlers, {
    authorizer: current,
    createAcls: async (request) => {
      const res = await controller.request(CreateAcls.api, request)
      await catchUp()
      return res
    },
    deleteAcls: async (request) => {
      const res = await controller.request(DeleteAcls.api, request)
      await catchUp()
      return res
    }
  })
  // Last: the checks wrap the handlers registered above. Without an authorizer nothing is wrapped.
  if (current !== undefined)
    Authorization.install(handlers, {
      authorizer: current,
      topicNameById: (id) => MetadataImage.topicById(image, id)?.name,
      topicExists: (name) => MetadataImage.topicByName(image, name) !== undefined,
      autoCreateTopicsEnable: () => effectiveConfig.autoCreateTopicsEnable
    })

  // -------------------------------------------------------------------------------------------------
  // Lifecycle: register, follow the metadata log, heartbeat

  const incarnationId = Uuid.random()
  const registerOnce = async () => {
    const res = await heartbeats.request(BrokerRegistration.api, {
      brokerId: nodeId,
      clusterId,
      incarnationId,
      listeners: advertised.map((l) => ({
        name: l.name,
        host: l.host,
        port: l.port,
        securityProtocol: Listeners.SECURITY_PROTOCOL_ID[l.securityProtocol]
      })),
      features: [...FeatureControl.SUPPORTED].map(([name, r]) => ({
        name,
        minSupportedVersion: r.min,
        maxSupportedVersion: r.max
      })),
      rack: null,
      isMigratingZkBroker: false,
      logDirs: [],
      previousBrokerEpoch: brokerEpoch
    })
    if (res.errorCode !== 0) throw new Error(`registration refused: ${Errors.message(res.errorCode)}`)
    brokerEpoch = res.brokerEpoch
  }

  // A function of its own, so that the decoded records are not kept alive by the loop's frame while it
  // waits for the next fetch.
  const applyFetched = async (records: Buffer): Promise<void> => {
    const batches = await Effect.runPromise(metadataLog.appendFetched(records))
    if (batches.length > 0) await Effect.runPromise(loader.handleCommit(batches))
  }

  const metadataLoop = async () => {
    while (!stopped) {
      try {
        const offset = await Effect.runPromise(metadataLog.logEndOffset)
        const epoch = await Effect.runPromise(metadataLog.latestEpoch)
        const round = ++sentRounds
        const res = await metadataChannel.request(
          Fetch.api,
          {
            replicaId: nodeId,
            replicaState: { replicaId: nodeId, replicaEpoch: brokerEpoch },
            maxWaitMs: 500,
            minBytes: 1,
            maxBytes: METADATA_FETCH_MAX_BYTES,
            topics: [
              {
                topic: MetadataLog.METADATA_TOPIC,
                topicId: MetadataLog.METADATA_TOPIC_ID,
                partitions: [
                  {
                    partition: 0,
                    fetchOffset: BigInt(offset),
                    lastFetchedEpoch: epoch,
                    partitionMaxBytes: METADATA_FETCH_MAX_BYTES,
                    replicaDirectoryId: directoryId
                  }
                ]
              }
            ]
          },
          METADATA_FETCH_TIMEOUT_MS
        )
        const p = res.responses[0]?.partitions[0]
        if (p === undefined || p.errorCode !== 0) {
          await sleep(200)
          continue
        }
        if (p.records !== null && p.records.length > 0) await applyFetched(Buffer.from(p.records))
        if ((await Effect.runPromise(metadataLog.logEndOffset)) >= Number(p.highWatermark)) markCaughtUp(round)
      } catch (e) {
        if (!stopped) {
          log(`metadata fetch failed: ${e instanceof Error ? e.message : String(e)}`)
          await sleep(500)
        }
      }
    }
  }

  let fenced = true
  const heartbeatLoop = async () => {
    while (!stopped) {
      try {
        if (brokerEpoch < 0n) await registerOnce()
        const res = await heartbeats.request(BrokerHeartbeat.api, {
          brokerId: nodeId,
          brokerEpoch,
          currentMetadataOffset: BigInt(image.provenance.lastOffset),
          wantFence: false,
          wantShutDown: false
        })
        if (res.errorCode === Errors.ErrorCode.STALE_BROKER_EPOCH) brokerEpoch = -1n
        fenced = res.errorCode !== 0 || res.isFenced
      } catch (e) {
        if (!stopped) log(`heartbeat failed: ${e instanceof Error ? e.message : String(e)}`)
      }
      // Like Kafka, a fenced broker heartbeats quickly so that it is unfenced as soon as it caught up.
      await sleep(fenced ? Math.min(100, config.brokerHeartbeatIntervalMs) : config.brokerHeartbeatIntervalMs)
    }
  }

  for (;;) {
    try {
      await registerOnce()
      break
    } catch (e) {
      log(`waiting for the controller: ${e instanceof Error ? e.message : String(e)}`)
      await sleep(500)
    }
  }
  void heartbeatLoop()
  void metadataLoop()
  // Like Kafka, serve clients once this broker is unfenced in the metadata it has caught up with.
  const unfencedBy = Date.now() + 60_000
  const serving = () => {
    const self = image.cluster.brokers.get(nodeId)
    return self !== undefined && self.epoch === brokerEpoch && !self.fenced
  }
  while (Date.now() < unfencedBy && !serving()) await sleep(20)
  const isr = setInterval(() => replicas.shrinkIsrs(), Math.max(500, Math.floor(config.replicaLagTimeMaxMs / 2)))
  isr.unref()
  // Time and size retention (log.retention.check.interval.ms), like Kafka's log cleanup task: only for
  // topics whose cleanup.policy deletes (compact,delete does both). The internal topics only compact.
  const policyOf = (topic: string) =>
    cleanupPolicyOf(effectiveConfig, {
      configs: MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.TOPIC, topic)
    })
  const deletes = (topic: string) =>
    policyOf(topic).includes("delete") &&
    topic !== GroupApis.OFFSETS_TOPIC &&
    topic !== MirrorRuntime.MIRROR_STATE_TOPIC
  // Log compaction: the partitions of compacted topics hosted here, except those a mirror is writing
  // (their log must stay byte-identical to the source's); once failed over (writable) they are cleaned.
  const compactable = function* (): Iterable<LogCleaner.CleanerCandidate> {
    for (const s of replicas.all())
      if (policyOf(s.topic).includes("compact") && mirrors.produceState(s.topic, s.partition) === "writable")
        yield { log: s.log }
  }
  const cleaner = LogCleaner.reconfigurable(
    () => ({
      enable: effectiveConfig.logCleanerEnable && effectiveConfig.logCleanerThreads > 0,
      threads: effectiveConfig.logCleanerThreads,
      dedupeBufferSize: effectiveConfig.logCleanerDedupeBufferSize,
      ioMaxBytesPerSecond: effectiveConfig.logCleanerIoMaxBytesPerSecond,
      backoffMs: effectiveConfig.logCleanerBackoffMs
    }),
    compactable,
    { log }
  )
  cleanerRestart = cleaner.reconfigure
  const retention = setInterval(() => {
    try {
      replicas.enforceRetention(deletes)
    } catch (e) {
      log(`retention failed: ${e instanceof Error ? e.message : String(e)}`)
    }
  }, config.logRetentionCheckIntervalMs)
  retention.unref()
  const hwCheckpoint = setInterval(
    () => replicas.checkpointHighWatermarks(),
    config.replicaHighWatermarkCheckpointIntervalMs
  )
  hwCheckpoint.unref()
  const endpoints = [...servers].map(([name, s]) => `${name}://${s.host}:${s.port}`).join(", ")
  log(`broker ${nodeId} serving on ${endpoints} (controller ${bootstrap.host}:${bootstrap.port})`)

  return {
    port: server.port,
    nodeId,
    replicas,
    image: () => image,
    mirrorSyncTasks: mirrors.syncTasks,
    close: async () => {
      if (stopped) return
      stopped = true
      clearInterval(isr)
      clearInterval(retention)
      await cleaner.stop()
      clearInterval(hwCheckpoint)
      await metricsServer?.close()
      for (const s of servers.values()) await s.close()
      for (const f of fetchers.values()) {
        f.fetcher.stop()
        f.channel.close()
      }
      await groups.close()
      await txns.close()
      await mirrors.close()
      for (const p of peers.values()) p.close()
      controller.close()
      heartbeats.close()
      metadataChannel.close()
      const left = replicas.close()
      if (left > 0)
        log(
          `shutdown: ${left} partition log(s) not closed cleanly within ${CLOSE_BUDGET_MS} ms; recovered at the next start`
        )
      await Effect.runPromise(metadataLog.close)
    }
  }
}

/** The cluster id a broker registers with: from `meta.properties` in its data dir. */
const clusterIdFrom = (dataDir: string): string => {
  const file = path.join(dataDir, "meta.properties")
  const m = fs.existsSync(file) ? /^cluster\.id=(.+)$/m.exec(fs.readFileSync(file, "utf8")) : null
  if (m === null) throw new Error(`no cluster.id in ${file}`)
  return m[1]!.trim()
}
