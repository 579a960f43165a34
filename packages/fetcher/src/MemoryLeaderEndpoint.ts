/**
 * An in-process partition leader over `PartitionLog`s, answering Fetch, OffsetForLeaderEpoch and ListOffsets
 * the way a Kafka leader does (fencing by current leader epoch, the divergence check on `LastFetchedEpoch`,
 * reads up to the log end for replicas and up to the high watermark for consumers). For deterministic tests
 * of fetchers; requests and responses pass through the wire codecs at the chosen version. It must not
 * advance the leader's high watermark or ISR: tests (or the broker) own that.
 *
 * Its epoch checks are `LeaderEpochChecks` of @clustermirror/storage, the ones the broker's leader uses, so
 * both answer alike.
 */
import { Errors, Fetch, type OffsetForLeaderEpoch } from "@clustermirror/protocol"
import { LeaderEpochChecks, type PartitionLog } from "@clustermirror/storage"
import { Either } from "effect"
import { LeaderRequestError, UnsupportedFetchVersionError } from "./FetcherError.js"
import type { TopicPartition } from "./FetcherEvents.js"
import { errorCodeOf } from "./internal/Bytes.js"
import {
  type LeaderEndpoint,
  MIN_FETCH_VERSION,
  type OffsetAndEpoch,
  TOPIC_ID_FETCH_VERSION
} from "./LeaderEndpoint.js"
import * as FetchAnswers from "./internal/FetchAnswers.js"

const { ErrorCode } = Errors

/** A partition hosted by the in-memory leader. */
export interface LeaderPartition {
  readonly topic: string
  readonly topicId: string
  readonly partition: number
  readonly log: PartitionLog.PartitionLog
  /** The partition's current leader epoch (requests with another epoch are fenced). */
  leaderEpoch: number
  /** False once leadership moved away: requests get NOT_LEADER_OR_FOLLOWER. */
  isLeader: boolean
  /** Whether the topic has a mirror name (KIP-1279): follower fetches learn the `MirrorLeaderEpoch`. */
  mirror: boolean
}

export interface MemoryLeaderOptions {
  readonly leaderId: number
  /**
   * Waits while a fetch has fewer than `minBytes` (the leader's long poll); the fetch is read again once it
   * resolves. Default: a timer of `maxWaitMs`. Tests pass an immediate wait or `maxWaitMs` 0.
   */
  readonly idleWait?: (maxWaitMs: number) => Promise<void>
  readonly now?: () => number
}

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`

const timer = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

type ResponsePartition = FetchAnswers.ResponsePartition

/** An in-process leader of some partitions. */
export class MemoryLeader {
  private readonly partitions = new Map<string, LeaderPartition>()
  private readonly byTopicId = new Map<string, string>()
  /** The last fetch offset of each follower, by `topic-partition/replicaId`: the leader's view of followers. */
  readonly followerFetchOffsets = new Map<string, number>()
  /** Requests to fail (as if the connection broke) before answering again. */
  failNextRequests = 0
  /** Fetch requests answered, for tests. */
  fetchCount = 0
  private readonly idleWait: (maxWaitMs: number) => Promise<void>

  constructor(readonly options: MemoryLeaderOptions) {
    this.idleWait = options.idleWait ?? timer
  }

  get leaderId(): number {
    return this.options.leaderId
  }

  /** Hosts a partition as its leader at `leaderEpoch`. */
  host(p: {
    readonly topic: string
    readonly topicId: string
    readonly partition: number
    readonly log: PartitionLog.PartitionLog
    readonly leaderEpoch: number
    readonly mirror?: boolean
  }): LeaderPartition {
    const hosted: LeaderPartition = { ...p, isLeader: true, mirror: p.mirror ?? false }
    this.partitions.set(key(p.topic, p.partition), hosted)
    this.byTopicId.set(p.topicId, p.topic)
    return hosted
  }

  get(topic: string, partition: number): LeaderPartition | undefined {
    return this.partitions.get(key(topic, partition))
  }

  /** An endpoint speaking Fetch at `fetchVersion` (12..19). */
  endpoint(fetchVersion = 19): LeaderEndpoint {
    if (fetchVersion < MIN_FETCH_VERSION || fetchVersion > Fetch.Request.validVersions.hi)
      throw new UnsupportedFetchVersionError({ version: fetchVersion, message: `Fetch v${fetchVersion}` })
    let closed = false
    const guard = (api: string): void => {
      if (closed) throw new LeaderRequestError({ api, message: "endpoint closed" })
      if (this.failNextRequests > 0) {
        this.failNextRequests--
        throw new LeaderRequestError({ api, message: "connection failed" })
      }
    }
    const offset = (tp: TopicPartition, currentLeaderEpoch: number, which: "earliest" | "latest"): OffsetAndEpoch => {
      guard("ListOffsets")
      const p = this.partitions.get(key(tp.topic, tp.partition))
      const error = this.validate(p, currentLeaderEpoch)
      if (p === undefined || error !== 0) return { errorCode: error, offset: -1, leaderEpoch: -1 }
      const found = p.log.offsetForTimestamp(which === "earliest" ? -2 : -1)
      return { errorCode: 0, offset: found?.offset ?? -1, leaderEpoch: p.leaderEpoch }
    }
    return {
      leaderId: this.options.leaderId,
      fetchVersion,
      fetch: async (request, version = fetchVersion) => {
        guard("Fetch")
        return this.fetchOverWire(request, version)
      },
      offsetForLeaderEpoch: async (request) => {
        guard("OffsetForLeaderEpoch")
        return this.offsetForLeaderEpoch(request)
      },
      fetchEarliestOffset: async (tp, epoch) => offset(tp, epoch, "earliest"),
      fetchLatestOffset: async (tp, epoch) => offset(tp, epoch, "latest"),
      close: async () => {
        closed = true
      }
    }
  }

  /** Fencing of a request's current leader epoch, as a Kafka leader does (-1 skips the check). */
  private validate(p: LeaderPartition | undefined, currentLeaderEpoch: number): number {
    if (p === undefined) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch < p.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch > p.leaderEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH
    if (!p.isLeader) return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return 0
  }

  private async fetchOverWire(request: Fetch.Request, version: number): Promise<Fetch.Response> {
    const decoded = Fetch.Request.encode(version, request).pipe(
      Either.flatMap((bytes) => Fetch.Request.decode(version, bytes))
    )
    if (Either.isLeft(decoded))
      throw new LeaderRequestError({ api: "Fetch", message: decoded.left.message, cause: decoded.left })
    const response = await this.serveFetch(decoded.right, version)
    const answer = Fetch.Response.encode(version, response).pipe(
      Either.flatMap((bytes) => Fetch.Response.decode(version, bytes))
    )
    if (Either.isLeft(answer))
      throw new LeaderRequestError({ api: "Fetch", message: answer.left.message, cause: answer.left })
    return answer.right
  }

  private async serveFetch(request: Fetch.Request, version: number): Promise<Fetch.Response> {
    this.fetchCount++
    const deadline = (this.options.now ?? Date.now)() + request.maxWaitMs
    for (let waited = false; ; waited = true) {
      const { response, bytes, anyError } = this.readOnce(request, version)
      const remaining = deadline - (this.options.now ?? Date.now)()
      if (waited || bytes >= request.minBytes || anyError || request.maxWaitMs <= 0 || remaining <= 0) return response
      await this.idleWait(remaining)
    }
  }

  private readOnce(
    request: Fetch.Request,
    version: number
  ): { response: Fetch.Response; bytes: number; anyError: boolean } {
    const replicaId = version >= 15 ? request.replicaState.replicaId : request.replicaId
    const fromFollower = replicaId >= 0
    let budget = request.maxBytes
    let bytes = 0
    let anyError = false
    const responses: Array<Fetch.Response["responses"][number]> = []
    for (const t of request.topics) {
      const topic = version >= TOPIC_ID_FETCH_VERSION ? this.byTopicId.get(t.topicId) : t.topic
      const partitions: ResponsePartition[] = []
      for (const rp of t.partitions) {
        const base = FetchAnswers.emptyPartition(rp.partition)
        if (topic === undefined) {
          anyError = true
          partitions.push({ ...base, errorCode: ErrorCode.UNKNOWN_TOPIC_ID })
          continue
        }
        const p = this.partitions.get(key(topic, rp.partition))
        const error = this.validate(p, rp.currentLeaderEpoch)
        if (p === undefined || error !== 0) {
          anyError = true
          const currentLeader =
            p === undefined ? base.currentLeader : { leaderId: this.options.leaderId, leaderEpoch: p.leaderEpoch }
          partitions.push({ ...base, errorCode: error, currentLeader })
          continue
        }
        const log = p.log
        const fetchOffset = Number(rp.fetchOffset)
        // Offsets are sampled before the read, so appends during the read cannot hold a follower back.
        const positions = {
          highWatermark: BigInt(log.highWatermark),
          lastStableOffset: BigInt(log.lastStableOffset),
          logStartOffset: BigInt(log.logStartOffset)
        }
        const check = LeaderEpochChecks.checkLastFetchedEpoch(log, p.leaderEpoch, fetchOffset, rp.lastFetchedEpoch)
        if (check._tag === "OffsetOutOfRange") {
          anyError = true
          partitions.push({ ...base, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE })
          continue
        }
        if (check._tag === "Diverging") {
          partitions.push({
            ...base,
            ...positions,
            divergingEpoch: { epoch: check.epoch, endOffset: BigInt(check.endOffset) }
          })
          continue
        }
        try {
          const limit = Math.max(0, Math.min(rp.partitionMaxBytes, budget))
          const maxOffset = fromFollower
            ? log.logEndOffset
            : request.isolationLevel === 1
              ? log.lastStableOffset
              : log.highWatermark
          const info = log.read(fetchOffset, limit, { maxOffset, minOneMessage: bytes === 0 })
          budget -= info.records.length
          bytes += info.records.length
          if (fromFollower) this.followerFetchOffsets.set(`${topic}-${rp.partition}/${replicaId}`, fetchOffset)
          partitions.push({
            ...base,
            ...positions,
            records: info.records,
            mirrorLeaderEpoch: LeaderEpochChecks.mirrorLeaderEpochAnswer(log, replicaId, rp.mirrorLeaderEpoch, p.mirror)
          })
        } catch (e) {
          anyError = true
          partitions.push({ ...base, errorCode: errorCodeOf(e) })
        }
      }
      responses.push({ topic: topic ?? t.topic, topicId: t.topicId, partitions })
    }
    const response: Fetch.Response = {
      ...Fetch.Response.empty,
      throttleTimeMs: 0,
      errorCode: 0,
      sessionId: 0,
      responses,
      nodeEndpoints: []
    }
    return { response, bytes, anyError }
  }

  private offsetForLeaderEpoch(request: OffsetForLeaderEpoch.Request): OffsetForLeaderEpoch.Response {
    return {
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        topic: t.topic,
        partitions: t.partitions.map((rp) => {
          const p = this.partitions.get(key(t.topic, rp.partition))
          const error = this.validate(p, rp.currentLeaderEpoch)
          if (p === undefined || error !== 0)
            return { errorCode: error, partition: rp.partition, leaderEpoch: -1, endOffset: -1n }
          const end = LeaderEpochChecks.leaderEndOffsetForEpoch(p.log, p.leaderEpoch, rp.leaderEpoch)
          return { errorCode: 0, partition: rp.partition, leaderEpoch: end.epoch, endOffset: BigInt(end.endOffset) }
        })
      }))
    }
  }
}
