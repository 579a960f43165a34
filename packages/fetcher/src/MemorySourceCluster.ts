/**
 * An in-process source cluster for tests of mirror fetchers: a `SourceConnector` whose brokers answer
 * Metadata, Fetch, OffsetForLeaderEpoch and ListOffsets over `PartitionLog`s the way Kafka brokers answer a
 * consumer (fencing by current leader epoch, reads up to the high watermark, the `LastFetchedEpoch`
 * divergence check, the long poll). Requests and answers pass through the wire codecs at the negotiated
 * version. Tests move leadership, bump epochs, delete topics and take brokers (or the whole cluster) down.
 *
 * It must not do anything a source broker would not: it never advances a high watermark by itself (the
 * `produce` helper does, as a single-replica leader would).
 */
import { Buffer } from "node:buffer"
import {
  type Api,
  Errors,
  Fetch,
  ListOffsets,
  Metadata,
  OffsetForLeaderEpoch,
  type Spec
} from "@clustermirror/protocol"
import { LeaderEpochChecks, type PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { Either } from "effect"

import type { SourceAddress, SourceConnection, SourceConnector } from "./SourceCluster.js"
import * as FetchAnswers from "./internal/FetchAnswers.js"

const { ErrorCode } = Errors

/** A partition of the source cluster. */
export interface SourcePartition {
  readonly topic: string
  readonly topicId: string
  readonly partition: number
  readonly log: PartitionLog.PartitionLog
  leaderId: number
  leaderEpoch: number
}

interface SourceTopic {
  readonly name: string
  readonly topicId: string
  readonly partitions: SourcePartition[]
}

export interface MemorySourceClusterOptions {
  /** Node ids of the source brokers (default [1, 2]). */
  readonly brokers?: ReadonlyArray<number>
  /** The highest version the source speaks, by API name (default: ours); below the API's minimum = none. */
  readonly maxVersions?: Readonly<Record<string, number>>
  readonly clusterId?: string
}

/** A request a source broker received, for tests. */
export interface ReceivedRequest {
  readonly nodeId: number
  readonly api: string
  readonly version: number
}

/** What `addTopic` needs; partitions are led round-robin by the brokers unless `leaders` says otherwise. */
export interface TopicSpec {
  readonly name: string
  readonly topicId: string
  readonly partitions: number
  readonly leaders?: ReadonlyArray<number>
  readonly leaderEpoch?: number
}

const SERVED: ReadonlySet<number> = new Set([
  Fetch.api.key,
  Metadata.api.key,
  OffsetForLeaderEpoch.api.key,
  ListOffsets.api.key
])

const PORT = 9092
const UNSET_OPS = -2147483648

type FetchResponsePartition = FetchAnswers.ResponsePartition

const roundTrip = <A>(
  encoded: Either.Either<Buffer, Error>,
  decode: (bytes: Uint8Array) => Either.Either<A, Error>
): A => {
  const decoded = Either.flatMap(encoded, decode)
  if (Either.isLeft(decoded)) throw decoded.left
  return decoded.right
}

class MemoryConnection implements SourceConnection {
  closed = false
  /** Long polls in progress: closing the connection ends them. */
  readonly waits = new Set<() => void>()

  constructor(
    readonly cluster: MemorySourceCluster,
    readonly nodeId: number
  ) {}

  readonly versionFor = (api: Api.ApiShape): number | undefined => this.cluster.versionFor(api)

  readonly request = async <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    version?: number
  ): Promise<Spec.StructType<Res>> => {
    this.check()
    const v = version ?? this.versionFor(api)
    if (v === undefined || !SERVED.has(api.key))
      throw new Error(`source broker ${this.nodeId} does not serve ${api.name}`)
    this.cluster.received.push({ nodeId: this.nodeId, api: api.name, version: v })
    if (this.cluster.failNextRequests > 0) {
      this.cluster.failNextRequests--
      throw new Error(`connection to source broker ${this.nodeId} failed`)
    }
    const bytes = api.request.encode(v, body)
    const answer = (encoded: Either.Either<Buffer, Error>): Spec.StructType<Res> =>
      roundTrip(encoded, (b) => api.response.decode(v, b))
    switch (api.key) {
      case Fetch.api.key: {
        const request = roundTrip(bytes, (b) => Fetch.Request.decode(v, b))
        this.cluster.fetches.push({ nodeId: this.nodeId, version: v, request })
        const response = await this.cluster.serveFetch(this, request, v)
        this.check()
        return answer(Fetch.Response.encode(v, response))
      }
      case Metadata.api.key: {
        const request = roundTrip(bytes, (b) => Metadata.Request.decode(v, b))
        return answer(Metadata.Response.encode(v, this.cluster.serveMetadata(request)))
      }
      case OffsetForLeaderEpoch.api.key: {
        const request = roundTrip(bytes, (b) => OffsetForLeaderEpoch.Request.decode(v, b))
        return answer(
          OffsetForLeaderEpoch.Response.encode(v, this.cluster.serveOffsetForLeaderEpoch(this.nodeId, request))
        )
      }
      default: {
        const request = roundTrip(bytes, (b) => ListOffsets.Request.decode(v, b))
        return answer(ListOffsets.Response.encode(v, this.cluster.serveListOffsets(this.nodeId, request)))
      }
    }
  }

  readonly close = async (): Promise<void> => {
    this.end()
  }

  end(): void {
    this.closed = true
    this.cluster.connections.delete(this)
    for (const w of [...this.waits]) w()
  }

  private check(): void {
    if (this.closed) throw new Error(`connection to source broker ${this.nodeId} closed`)
    if (!this.cluster.isReachable(this.nodeId)) throw new Error(`source broker ${this.nodeId} is unreachable`)
  }
}

/** An in-process source cluster. */
export class MemorySourceCluster implements SourceConnector {
  readonly brokerIds: ReadonlyArray<number>
  readonly clusterId: string
  /** Every request received (after connection checks), in order. */
  readonly received: ReceivedRequest[] = []
  /** Every Fetch request received, decoded. */
  readonly fetches: Array<{ readonly nodeId: number; readonly version: number; readonly request: Fetch.Request }> = []
  /** Requests to fail (as if the connection broke) before answering again. */
  failNextRequests = 0
  /** Connection attempts, refused ones included. */
  connectAttempts = 0
  /** @internal open connections */
  readonly connections = new Set<MemoryConnection>()
  private readonly topics = new Map<string, SourceTopic>()
  private readonly topicNames = new Map<string, string>()
  private readonly down = new Set<number>()
  private readonly unreachable = new Set<number>()
  private allDown = false
  private readonly waiters = new Set<() => void>()
  private readonly store = PartitionLogStore.makeMemoryStore()

  constructor(readonly options: MemorySourceClusterOptions = {}) {
    this.brokerIds = options.brokers ?? [1, 2]
    this.clusterId = options.clusterId ?? "source-cluster"
  }

  /** The address of a source broker. */
  address(nodeId: number): SourceAddress {
    return { host: `source-${nodeId}`, port: PORT }
  }

  get bootstrapServers(): ReadonlyArray<SourceAddress> {
    return this.brokerIds.map((id) => this.address(id))
  }

  /** Fetches held in a long poll right now. */
  get heldFetches(): number {
    return this.waiters.size
  }

  connect = async (host: string, port: number): Promise<SourceConnection> => {
    this.connectAttempts++
    const nodeId = this.brokerIds.find((id) => {
      const a = this.address(id)
      return a.host === host && a.port === port
    })
    if (nodeId === undefined) throw new Error(`unknown source broker ${host}:${port}`)
    if (!this.isReachable(nodeId)) throw new Error(`connection to ${host}:${port} refused`)
    const connection = new MemoryConnection(this, nodeId)
    this.connections.add(connection)
    return connection
  }

  versionFor(api: Api.ApiShape): number | undefined {
    if (!SERVED.has(api.key)) return undefined
    const theirs = this.options.maxVersions?.[api.name] ?? api.maxVersion
    const v = Math.min(theirs, api.maxVersion)
    return v < api.minVersion ? undefined : v
  }

  /** Whether a broker is running (metadata lists only running brokers). */
  isUp(nodeId: number): boolean {
    return !this.allDown && !this.down.has(nodeId)
  }

  /** Whether this side can reach a broker. */
  isReachable(nodeId: number): boolean {
    return this.isUp(nodeId) && !this.unreachable.has(nodeId)
  }

  /** Takes the whole cluster down (connections break, connects are refused) or back up. */
  setDown(down: boolean): void {
    this.allDown = down
    if (down) for (const c of [...this.connections]) c.end()
  }

  /** Takes one broker down or back up; metadata stops listing it while it is down. */
  setBrokerDown(nodeId: number, down: boolean): void {
    if (down) {
      this.down.add(nodeId)
      for (const c of [...this.connections]) if (c.nodeId === nodeId) c.end()
    } else this.down.delete(nodeId)
  }

  /**
   * Cuts the network between the mirror and one broker (or heals it): connections break and are refused,
   * while the source cluster itself still counts the broker as up (its metadata still names it leader).
   */
  setBrokerUnreachable(nodeId: number, unreachable: boolean): void {
    if (unreachable) {
      this.unreachable.add(nodeId)
      for (const c of [...this.connections]) if (c.nodeId === nodeId) c.end()
    } else this.unreachable.delete(nodeId)
  }

  addTopic(spec: TopicSpec): ReadonlyArray<SourcePartition> {
    const partitions = Array.from({ length: spec.partitions }, (_, i) => ({
      topic: spec.name,
      topicId: spec.topicId,
      partition: i,
      log: this.store.open(spec.name, i, {}, spec.topicId),
      leaderId: spec.leaders?.[i] ?? this.brokerIds[i % this.brokerIds.length]!,
      leaderEpoch: spec.leaderEpoch ?? 0
    }))
    this.topics.set(spec.name, { name: spec.name, topicId: spec.topicId, partitions })
    this.topicNames.set(spec.topicId, spec.name)
    return partitions
  }

  deleteTopic(name: string): void {
    const topic = this.topics.get(name)
    if (topic === undefined) return
    this.topics.delete(name)
    this.topicNames.delete(topic.topicId)
    this.notify()
  }

  partition(topic: string, partition: number): SourcePartition {
    const p = this.topics.get(topic)?.partitions[partition]
    if (p === undefined) throw new Error(`no source partition ${topic}-${partition}`)
    return p
  }

  log(topic: string, partition: number): PartitionLog.PartitionLog {
    return this.partition(topic, partition).log
  }

  /** Appends batches as the leader (at its epoch) and advances the high watermark to the log end. */
  produce(topic: string, partition: number, batches: ReadonlyArray<Buffer>): void {
    const p = this.partition(topic, partition)
    for (const b of batches) p.log.appendAsLeader(Buffer.from(b), p.leaderEpoch, 0)
    p.log.updateHighWatermark(p.log.logEndOffset)
    this.notify()
  }

  /** Appends batches with their own offsets and epochs (a history built by a test); the HW does not move. */
  appendRaw(topic: string, partition: number, batches: ReadonlyArray<Buffer>): void {
    const log = this.log(topic, partition)
    for (const b of batches) log.appendAsFollower(Buffer.from(b), 0)
  }

  setHighWatermark(topic: string, partition: number, offset: number): void {
    this.log(topic, partition).updateHighWatermark(offset)
    this.notify()
  }

  /** Leadership moves to `nodeId` at the next epoch. */
  moveLeader(topic: string, partition: number, nodeId: number): void {
    const p = this.partition(topic, partition)
    p.leaderId = nodeId
    p.leaderEpoch++
    this.notify()
  }

  /** A new leader epoch on the same leader. */
  bumpLeaderEpoch(topic: string, partition: number, by = 1): void {
    this.partition(topic, partition).leaderEpoch += by
    this.notify()
  }

  /** Ends every long poll, so fetches see new data or leadership at once. */
  notify(): void {
    for (const w of [...this.waiters]) w()
  }

  // -------------------------------------------------------------------------------------------------
  // Answers

  private validate(nodeId: number, p: SourcePartition | undefined, currentLeaderEpoch: number): number {
    if (p === undefined) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch < p.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch > p.leaderEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH
    if (p.leaderId !== nodeId) return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.NONE
  }

  private lookup(topic: string | undefined, partition: number): SourcePartition | undefined {
    return topic === undefined ? undefined : this.topics.get(topic)?.partitions[partition]
  }

  /** @internal */
  serveMetadata(request: Metadata.Request): Metadata.Response {
    const describe = (t: SourceTopic): Metadata.Response["topics"][number] => ({
      errorCode: ErrorCode.NONE,
      name: t.name,
      topicId: t.topicId,
      isInternal: false,
      partitions: t.partitions.map((p) => {
        const up = this.isUp(p.leaderId)
        return {
          errorCode: up ? ErrorCode.NONE : ErrorCode.LEADER_NOT_AVAILABLE,
          partitionIndex: p.partition,
          leaderId: up ? p.leaderId : -1,
          leaderEpoch: p.leaderEpoch,
          replicaNodes: [...this.brokerIds],
          isrNodes: [p.leaderId],
          offlineReplicas: []
        }
      }),
      topicAuthorizedOperations: UNSET_OPS
    })
    const topics =
      request.topics === null
        ? [...this.topics.values()].map(describe)
        : request.topics.map((t) => {
            const byId = t.name === null || t.name === ""
            const found = this.topics.get(byId ? (this.topicNames.get(t.topicId) ?? "") : t.name!)
            if (found !== undefined) return describe(found)
            return {
              errorCode: byId ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              name: t.name,
              topicId: t.topicId,
              isInternal: false,
              partitions: [],
              topicAuthorizedOperations: UNSET_OPS
            }
          })
    return {
      throttleTimeMs: 0,
      brokers: this.brokerIds
        .filter((id) => this.isUp(id))
        .map((id) => ({ nodeId: id, ...this.address(id), rack: null })),
      clusterId: this.clusterId,
      controllerId: this.brokerIds[0] ?? -1,
      topics,
      clusterAuthorizedOperations: UNSET_OPS,
      errorCode: ErrorCode.NONE
    }
  }

  /** @internal */
  serveOffsetForLeaderEpoch(nodeId: number, request: OffsetForLeaderEpoch.Request): OffsetForLeaderEpoch.Response {
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((rp) => {
          const p = this.lookup(t.topic, rp.partition)
          const error = this.validate(nodeId, p, rp.currentLeaderEpoch)
          if (p === undefined || error !== ErrorCode.NONE)
            return { errorCode: error, partition: rp.partition, leaderEpoch: -1, endOffset: -1n }
          const end = LeaderEpochChecks.leaderEndOffsetForEpoch(p.log, p.leaderEpoch, rp.leaderEpoch)
          return { errorCode: 0, partition: rp.partition, leaderEpoch: end.epoch, endOffset: BigInt(end.endOffset) }
        })
      }))
    }
  }

  /** @internal */
  serveListOffsets(nodeId: number, request: ListOffsets.Request): ListOffsets.Response {
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((rp) => {
          const p = this.lookup(t.name, rp.partitionIndex)
          const error = this.validate(nodeId, p, rp.currentLeaderEpoch)
          const base = { partitionIndex: rp.partitionIndex, oldStyleOffsets: [], timestamp: -1n }
          if (p === undefined || error !== ErrorCode.NONE)
            return { ...base, errorCode: error, offset: -1n, leaderEpoch: -1 }
          const log = p.log
          const offset =
            rp.timestamp === -2n
              ? log.logStartOffset
              : rp.timestamp === -1n
                ? request.isolationLevel === 1
                  ? log.lastStableOffset
                  : log.highWatermark
                : (log.offsetForTimestamp(Number(rp.timestamp))?.offset ?? -1)
          return { ...base, errorCode: 0, offset: BigInt(offset), leaderEpoch: p.leaderEpoch }
        })
      }))
    }
  }

  /** @internal A consumer fetch, held while it has less than `minBytes` (until new data or `maxWaitMs`). */
  async serveFetch(connection: MemoryConnection, request: Fetch.Request, version: number): Promise<Fetch.Response> {
    for (let waited = false; ; waited = true) {
      const { response, bytes, answerNow } = this.readOnce(connection.nodeId, request, version)
      if (waited || bytes >= request.minBytes || answerNow || request.maxWaitMs <= 0 || connection.closed)
        return response
      await this.hold(connection, request.maxWaitMs)
    }
  }

  private hold(connection: MemoryConnection, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.waiters.delete(done)
        connection.waits.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.waiters.add(done)
      connection.waits.add(done)
    })
  }

  private readOnce(
    nodeId: number,
    request: Fetch.Request,
    version: number
  ): { response: Fetch.Response; bytes: number; answerNow: boolean } {
    let budget = request.maxBytes
    let bytes = 0
    let answerNow = false
    const responses: Array<Fetch.Response["responses"][number]> = []
    for (const t of request.topics) {
      const topic = version >= 13 ? this.topicNames.get(t.topicId) : this.topics.has(t.topic) ? t.topic : undefined
      const partitions: FetchResponsePartition[] = []
      for (const rp of t.partitions) {
        const base = FetchAnswers.emptyPartition(rp.partition)
        if (topic === undefined) {
          answerNow = true
          const errorCode = version >= 13 ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
          partitions.push({ ...base, errorCode })
          continue
        }
        const p = this.lookup(topic, rp.partition)
        const error = this.validate(nodeId, p, rp.currentLeaderEpoch)
        if (p === undefined || error !== ErrorCode.NONE) {
          answerNow = true
          const currentLeader =
            p === undefined ? base.currentLeader : { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch }
          partitions.push({ ...base, errorCode: error, currentLeader })
          continue
        }
        const log = p.log
        const fetchOffset = Number(rp.fetchOffset)
        const positions = {
          highWatermark: BigInt(log.highWatermark),
          lastStableOffset: BigInt(log.lastStableOffset),
          logStartOffset: BigInt(log.logStartOffset)
        }
        const check = LeaderEpochChecks.checkLastFetchedEpoch(log, p.leaderEpoch, fetchOffset, rp.lastFetchedEpoch)
        // Like Kafka, the divergence check comes before the read (and its range check).
        if (
          check._tag === "OffsetOutOfRange" ||
          (check._tag === "Valid" && (fetchOffset < log.logStartOffset || fetchOffset > log.logEndOffset))
        ) {
          answerNow = true
          partitions.push({ ...base, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE })
          continue
        }
        if (check._tag === "Diverging") {
          // Kafka answers a divergence at once, without waiting for data.
          answerNow = true
          partitions.push({
            ...base,
            ...positions,
            divergingEpoch: { epoch: check.epoch, endOffset: BigInt(check.endOffset) }
          })
          continue
        }
        const maxOffset = request.isolationLevel === 1 ? log.lastStableOffset : log.highWatermark
        const limit = Math.max(0, Math.min(rp.partitionMaxBytes, budget))
        const records =
          fetchOffset >= maxOffset
            ? Buffer.alloc(0)
            : log.read(fetchOffset, limit, { maxOffset, minOneMessage: bytes === 0 }).records
        budget -= records.length
        bytes += records.length
        partitions.push({ ...base, ...positions, records })
      }
      responses.push({ topic: t.topic, topicId: t.topicId, partitions })
    }
    const response: Fetch.Response = {
      ...Fetch.Response.empty,
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      sessionId: 0,
      responses,
      nodeEndpoints: []
    }
    return { response, bytes, answerNow }
  }
}
