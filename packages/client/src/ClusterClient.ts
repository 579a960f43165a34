/**
 * The cluster-level client: bootstrap, the metadata cache, leader routing with retries, requests to a
 * node, to any (least loaded) broker or to a partition's leader, and the fan-out to every broker.
 *
 * `Client` is the Promise core, used directly on data paths (replica and mirror fetchers). The
 * `ClusterClient` tag is its Effect face for control-plane code, with `layer(config)` closing every
 * connection when its scope ends. Fan-out (`forEachBroker`) exists only in the Effect face: it is
 * written once here and used everywhere. Holds no cluster state beyond caches.
 */
import { Errors, Metadata, type Api, type Spec } from "@clustermirror/protocol"
import { Context, Effect, Either, Layer, type Scope } from "effect"
import {
  type ClientError,
  ClientClosed,
  InvalidRequest,
  isClientError,
  isRetriable,
  KafkaError,
  NoBrokerAvailable,
  type RequestTimeout
} from "./ClientError.js"
import type * as Connection from "./Connection.js"
import * as FanOut from "./FanOut.js"
import { fromPromise } from "./internal/effect.js"
import * as MetadataCache from "./MetadataCache.js"
import * as NodePool from "./NodePool.js"
import * as Retry from "./Retry.js"

export interface Config {
  /** "host:port" of brokers to bootstrap from. */
  readonly bootstrapServers: ReadonlyArray<string>
  readonly clientId?: string
  readonly connectTimeoutMs?: number
  readonly requestTimeoutMs?: number
  /** Retries of metadata lookups, leader routing and any-broker requests. */
  readonly retry?: Retry.Policy
  readonly reconnectBackoffMs?: number
  readonly reconnectBackoffMaxMs?: number
  /** A cached topic older than this is refreshed before use; default 5 min (Kafka's metadata.max.age.ms). */
  readonly metadataMaxAgeMs?: number
  /** Brokers asked at once by `forEachBroker`; default 8. */
  readonly fanOutConcurrency?: number
  /** Per-broker timeout of `forEachBroker`; default the request timeout. */
  readonly fanOutTimeoutMs?: number
  /** TLS and SASL for every connection (see `NodePool.Options.security`); absent: PLAINTEXT. */
  readonly security?: NodePool.Options["security"]
}

export interface SendOptions {
  /** A fixed version instead of the negotiated one. */
  readonly version?: number
  readonly timeoutMs?: number
}

export interface LeaderInfo {
  readonly nodeId: number
  readonly leaderEpoch: number
  readonly broker: MetadataCache.BrokerNode
}

export interface TopicPartition {
  readonly topic: string
  readonly partition: number
}

export interface BrokerResult<A, E> {
  readonly broker: MetadataCache.BrokerNode
  readonly result: Either.Either<A, E>
}

/**
 * `body` checked against its request's Schema before anything is encoded or sent; a misfit throws
 * `InvalidRequest` naming the field. For control-plane requests (the Effect face and the mirror admin run
 * it on every body); the Promise core's data paths pay no check.
 */
export const validRequest = <Req extends Spec.Fields, Res extends Spec.Fields>(
  api: Api.ApiDef<Req, Res>,
  body: Spec.StructInput<Req>
): Spec.StructInput<Req> => {
  const checked = api.request.validate(body)
  if (Either.isLeft(checked))
    throw new InvalidRequest({ api: api.name, field: checked.left.field, reason: checked.left.reason })
  return body
}

const send = <Req extends Spec.Fields, Res extends Spec.Fields>(
  conn: Connection.Connection,
  api: Api.ApiDef<Req, Res>,
  body: Spec.StructInput<Req>,
  options: SendOptions | undefined
): Promise<Spec.StructType<Res>> => {
  const opts = options?.timeoutMs === undefined ? undefined : { timeoutMs: options.timeoutMs }
  if (options?.version !== undefined) return conn.request(api, options.version, body, opts)
  return conn.call(api, body, opts)
}

/** The Promise core of the cluster client. */
export class Client {
  readonly pool: NodePool.NodePool
  readonly policy: Retry.Policy
  private readonly bootstrap: ReadonlyArray<NodePool.Address>
  private readonly maxAgeMs: number
  private snap: MetadataCache.Snapshot = MetadataCache.empty
  private readonly refreshes = new Map<string, Promise<MetadataCache.Snapshot>>()
  private closed = false
  private rotation = 0

  constructor(readonly config: Config) {
    if (config.bootstrapServers.length === 0) throw new Error("bootstrapServers is empty")
    this.bootstrap = config.bootstrapServers.map(NodePool.parseAddress)
    this.policy = config.retry ?? Retry.defaultPolicy
    this.maxAgeMs = config.metadataMaxAgeMs ?? 5 * 60_000
    this.pool = new NodePool.NodePool({
      clientId: config.clientId ?? "clustermirror",
      ...(config.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: config.connectTimeoutMs }),
      ...(config.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: config.requestTimeoutMs }),
      ...(config.reconnectBackoffMs === undefined ? {} : { reconnectBackoffMs: config.reconnectBackoffMs }),
      ...(config.reconnectBackoffMaxMs === undefined ? {} : { reconnectBackoffMaxMs: config.reconnectBackoffMaxMs }),
      ...(config.security === undefined ? {} : { security: config.security })
    })
  }

  /** The cached view (no I/O). */
  get snapshot(): MetadataCache.Snapshot {
    return this.snap
  }

  /**
   * Refreshes metadata for `topics` (null = all topics, [] = brokers only) from the least loaded
   * broker (the bootstrap servers until brokers are known), retrying other brokers on failure.
   * Concurrent refreshes of the same topics share one request.
   */
  metadata(topics: ReadonlyArray<string> | null = []): Promise<MetadataCache.Snapshot> {
    const key = topics === null ? "*" : [...topics].sort().join("\u0000")
    const running = this.refreshes.get(key)
    if (running !== undefined) return running
    const refresh = this.retrying("Metadata", async () => {
      const res = await this.sendToAnyBrokerOnce(Metadata.api, {
        topics: topics === null ? null : topics.map((name) => ({ name })),
        allowAutoTopicCreation: false
      })
      if (res.errorCode !== 0)
        throw new KafkaError({ errorCode: res.errorCode, errorMessage: null, context: "Metadata" })
      this.snap = MetadataCache.update(this.snap, res, topics, Date.now())
      for (const b of this.snap.brokers.values()) this.pool.setNode(b.nodeId, b)
      return this.snap
    }).finally(() => this.refreshes.delete(key))
    this.refreshes.set(key, refresh)
    return refresh
  }

  /** Known brokers, fetching metadata first if none are known. */
  async brokers(): Promise<ReadonlyArray<MetadataCache.BrokerNode>> {
    if (this.snap.fetchedAt === 0) await this.metadata([])
    return [...this.snap.brokers.values()]
  }

  /** Forgets a topic's cached partitions, so the next lookup asks a broker. */
  invalidate(topic: string): void {
    this.snap = MetadataCache.invalidate(this.snap, topic)
  }

  /** The leader of a partition, from the cache or after a refresh, retrying while there is none. */
  leaderFor(topic: string, partition: number): Promise<LeaderInfo> {
    return this.retrying(`leader of ${topic}-${partition}`, () => this.resolveLeader(topic, partition))
  }

  /** Groups partitions by their leader's node id (one refresh for all unknown topics). */
  async leadersFor(partitions: ReadonlyArray<TopicPartition>): Promise<Map<number, Array<TopicPartition>>> {
    const now = Date.now()
    const unknown = new Set<string>()
    for (const tp of partitions)
      if (MetadataCache.leaderOf(this.snap, tp.topic, tp.partition, this.maxAgeMs, now)._tag === "Unknown")
        unknown.add(tp.topic)
    if (unknown.size > 0) await this.metadata([...unknown])
    const out = new Map<number, Array<TopicPartition>>()
    for (const tp of partitions) {
      const leader = await this.leaderFor(tp.topic, tp.partition)
      let list = out.get(leader.nodeId)
      if (list === undefined) out.set(leader.nodeId, (list = []))
      list.push(tp)
    }
    return out
  }

  /** A request to a node id, at the negotiated version unless `options.version` is given. */
  async sendToNode<Req extends Spec.Fields, Res extends Spec.Fields>(
    nodeId: number,
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ): Promise<Spec.StructType<Res>> {
    this.ensureOpen()
    if (this.pool.nodeAddress(nodeId) === undefined) await this.metadata([])
    return send(await this.pool.getNode(nodeId), api, body, options)
  }

  /** A request to an address (e.g. a controller that is not a broker). */
  async sendToAddress<Req extends Spec.Fields, Res extends Spec.Fields>(
    address: NodePool.Address,
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ): Promise<Spec.StructType<Res>> {
    this.ensureOpen()
    return send(await this.pool.get(address), api, body, options)
  }

  /** A request any broker can answer, to the least loaded one, retried elsewhere on connection errors. */
  sendToAnyBroker<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ): Promise<Spec.StructType<Res>> {
    return this.retrying(api.name, () => this.sendToAnyBrokerOnce(api, body, options))
  }

  /**
   * A request to the leader of `topic`-`partition`. `body` is built for the leader (e.g. with its
   * epoch); `errorCodeOf` extracts the code that decides the outcome. Stale-leader codes refresh the
   * topic's metadata and retry with backoff, as do other retriable codes and connection failures;
   * a non-zero code in the end fails with `KafkaError`.
   */
  sendToLeader<Req extends Spec.Fields, Res extends Spec.Fields>(
    topic: string,
    partition: number,
    api: Api.ApiDef<Req, Res>,
    body: (leader: LeaderInfo) => Spec.StructInput<Req>,
    errorCodeOf: (response: Spec.StructType<Res>) => number,
    options?: SendOptions
  ): Promise<Spec.StructType<Res>> {
    return this.retrying(`${api.name} ${topic}-${partition}`, async () => {
      const leader = await this.resolveLeader(topic, partition)
      let res: Spec.StructType<Res>
      try {
        res = await send(await this.pool.getNode(leader.nodeId), api, body(leader), options)
      } catch (e) {
        // The leader may be gone: look again before the next attempt.
        if (isClientError(e) && (e._tag === "ConnectionError" || e._tag === "RequestTimeout")) this.invalidate(topic)
        throw e
      }
      const code = errorCodeOf(res)
      if (code === 0) return res
      if (MetadataCache.STALE_LEADER_CODES.has(code)) this.invalidate(topic)
      throw new KafkaError({ errorCode: code, errorMessage: null, context: `${api.name} ${topic}-${partition}` })
    })
  }

  async close(): Promise<void> {
    this.closed = true
    await this.pool.close()
  }

  // -------------------------------------------------------------------------------------------------

  private ensureOpen(): void {
    if (this.closed) throw new ClientClosed({ message: "cluster client closed" })
  }

  private async resolveLeader(topic: string, partition: number): Promise<LeaderInfo> {
    let found = MetadataCache.leaderOf(this.snap, topic, partition, this.maxAgeMs, Date.now())
    if (found._tag === "Unknown") {
      await this.metadata([topic])
      found = MetadataCache.leaderOf(this.snap, topic, partition)
    }
    if (found._tag === "Leader")
      return { nodeId: found.broker.nodeId, leaderEpoch: found.leaderEpoch, broker: found.broker }
    // Not cached as missing: a topic being created or a leader being elected shows up on refresh.
    if (found._tag === "NoLeader") this.invalidate(topic)
    throw new KafkaError({
      errorCode: found._tag === "NoLeader" ? found.errorCode : Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      errorMessage: null,
      context: `leader of ${topic}-${partition}`
    })
  }

  private async sendToAnyBrokerOnce<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ): Promise<Spec.StructType<Res>> {
    this.ensureOpen()
    const known = [...this.snap.brokers.values()]
    const candidates: ReadonlyArray<NodePool.Address> = known.length > 0 ? known : this.bootstrap
    // Rotate the start so that ties in load spread over the brokers.
    const start = this.rotation++ % candidates.length
    const ordered = [...candidates.slice(start), ...candidates.slice(0, start)]
    const pick = NodePool.leastLoaded(ordered.map((a) => this.pool.load(a)))
    const address = ordered[pick]
    if (address === undefined) throw new NoBrokerAvailable({ message: "no broker address known" })
    return send(await this.pool.get(address), api, body, options)
  }

  /** Runs `attempt` under the retry policy while it fails with a retriable client error. */
  private async retrying<A>(what: string, attempt: () => Promise<A>): Promise<A> {
    for (let n = 1; ; n++) {
      try {
        return await attempt()
      } catch (e) {
        if (!isClientError(e) || !isRetriable(e) || n >= this.policy.attempts || this.closed) throw e
      }
      await Retry.sleep(Retry.delay(this.policy, n))
      if (this.closed) throw new ClientClosed({ message: `cluster client closed during ${what}` })
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Effect service

/**
 * The Effect face. Its sends check each body against its request's Schema first (`validRequest`): a
 * body that does not fit fails with `InvalidRequest` and nothing is sent.
 */
export interface Service {
  /** The Promise core, for data paths that must not pay an Effect per request. */
  readonly client: Client
  /** The cached view (no I/O). */
  readonly snapshot: Effect.Effect<MetadataCache.Snapshot>
  readonly metadata: (topics?: ReadonlyArray<string> | null) => Effect.Effect<MetadataCache.Snapshot, ClientError>
  readonly leaderFor: (topic: string, partition: number) => Effect.Effect<LeaderInfo, ClientError>
  readonly sendToNode: <Req extends Spec.Fields, Res extends Spec.Fields>(
    nodeId: number,
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ) => Effect.Effect<Spec.StructType<Res>, ClientError>
  readonly sendToAddress: <Req extends Spec.Fields, Res extends Spec.Fields>(
    address: NodePool.Address,
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ) => Effect.Effect<Spec.StructType<Res>, ClientError>
  readonly sendToAnyBroker: <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: SendOptions
  ) => Effect.Effect<Spec.StructType<Res>, ClientError>
  readonly sendToLeader: <Req extends Spec.Fields, Res extends Spec.Fields>(
    topic: string,
    partition: number,
    api: Api.ApiDef<Req, Res>,
    body: (leader: LeaderInfo) => Spec.StructInput<Req>,
    errorCodeOf: (response: Spec.StructType<Res>) => number,
    options?: SendOptions
  ) => Effect.Effect<Spec.StructType<Res>, ClientError>
  /**
   * Runs `request` against every known broker (metadata refreshed first) with bounded concurrency and
   * a per-broker timeout, and merges the per-broker outcomes. One broker's failure is its result, not
   * the fan-out's: only the metadata lookup can fail the whole.
   */
  readonly forEachBroker: <A, E, R, B>(
    request: (broker: MetadataCache.BrokerNode) => Effect.Effect<A, E, R>,
    merge: (results: ReadonlyArray<BrokerResult<A, E | RequestTimeout>>) => B,
    options?: { readonly concurrency?: number; readonly timeoutMs?: number }
  ) => Effect.Effect<B, ClientError, R>
}

export class ClusterClient extends Context.Tag("@clustermirror/client/ClusterClient")<ClusterClient, Service>() {}

/** The Effect face of a `Client`. */
export const fromClient = (client: Client): Service => {
  const config = client.config
  return {
    client,
    snapshot: Effect.sync(() => client.snapshot),
    metadata: (topics) => fromPromise(() => client.metadata(topics)),
    leaderFor: (topic, partition) => fromPromise(() => client.leaderFor(topic, partition)),
    sendToNode: (nodeId, api, body, options) =>
      fromPromise(async () => client.sendToNode(nodeId, api, validRequest(api, body), options)),
    sendToAddress: (address, api, body, options) =>
      fromPromise(async () => client.sendToAddress(address, api, validRequest(api, body), options)),
    sendToAnyBroker: (api, body, options) =>
      fromPromise(async () => client.sendToAnyBroker(api, validRequest(api, body), options)),
    sendToLeader: (topic, partition, api, body, errorCodeOf, options) =>
      fromPromise(() =>
        client.sendToLeader(topic, partition, api, (leader) => validRequest(api, body(leader)), errorCodeOf, options)
      ),
    forEachBroker: (request, merge, options) =>
      fromPromise(() => client.metadata([])).pipe(
        Effect.flatMap((snap) =>
          FanOut.forEachBroker(
            snap.brokers.values(),
            request,
            (outcomes) => merge(outcomes.map(({ target, result }) => ({ broker: target, result }))),
            {
              concurrency: options?.concurrency ?? config.fanOutConcurrency ?? FanOut.DEFAULT_CONCURRENCY,
              timeoutMs: options?.timeoutMs ?? config.fanOutTimeoutMs ?? config.requestTimeoutMs ?? 30_000,
              describe: (broker) => `broker ${broker.nodeId}`
            }
          )
        )
      )
  }
}

/** A cluster client whose connections close when the scope ends. No I/O until first use. */
export const make = (config: Config): Effect.Effect<Service, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new Client(config)),
    (client) => Effect.promise(() => client.close())
  ).pipe(Effect.map(fromClient))

export const layer = (config: Config): Layer.Layer<ClusterClient> => Layer.scoped(ClusterClient, make(config))
