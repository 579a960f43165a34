/**
 * The replica fetcher of a follower: one per leader broker, fetching many partitions in one Fetch request,
 * with Kafka's follower semantics (AbstractFetcherThread/ReplicaFetcherThread): fetch from the log end with
 * the log's latest epoch as `LastFetchedEpoch`, append the leader's batches unchanged (one append per
 * partition per response, no record decoding), set the high watermark to min(leader HW, log end), follow
 * the leader's log start; truncate on `DivergingEpoch` by the leader-epoch cache, and on OFFSET_OUT_OF_RANGE
 * by the leader's log end/start; delay or fail partitions on errors.
 *
 * Epoch safety (KAFKA-18723, KIP-1279 §6.4, JR36): a batch whose partition leader epoch is above the
 * validation epoch is not appended (nor anything after it). The validation epoch is the fetch's current leader
 * epoch, except for partitions of mirror topics: their batches carry source epochs, so the follower holds a
 * `MirrorLeaderEpoch` (0 when it starts fetching the partition), sends it on each Fetch, validates the answer
 * against the value it held when it sent the request, then adopts the larger of that value and the leader's
 * answer (the latest epoch in the leader's log) for the next fetch. A batch of a new epoch therefore always
 * costs one extra round trip, and a follower never appends an epoch the leader's log had not shown it.
 *
 * It owns only fetch positions and delays. It must not decide state transitions (ISR, leadership): it
 * reports outcomes through `FetcherEvents`, and the broker adds or removes partitions as metadata changes.
 * The leader learns this follower's position from the fetch offsets it sends.
 */
import { Buffer } from "node:buffer"
import { Errors, type Fetch, RecordBatch, ZERO_UUID } from "@clustermirror/protocol"
import type { PartitionLog } from "@clustermirror/storage"
import * as FetcherConfig from "./FetcherConfig.js"
import { LeaderRequestError, LeaderResponseError, UnsupportedFetchVersionError } from "./FetcherError.js"
import { type FetchThrottle, type FetcherEvents, ignore, type TopicPartition } from "./FetcherEvents.js"
import { errorCodeOf, toBuffer } from "./internal/Bytes.js"
import {
  type LeaderEndpoint,
  MIN_FETCH_VERSION,
  type OffsetAndEpoch,
  TOPIC_ID_FETCH_VERSION
} from "./LeaderEndpoint.js"

const { ErrorCode } = Errors

/** A partition handed to the fetcher when this broker becomes its follower. */
export interface AddPartition {
  readonly topic: string
  /** The topic id; without one the fetcher speaks Fetch v12 (topic names). */
  readonly topicId: string | undefined
  readonly partition: number
  readonly log: PartitionLog.PartitionLog
  /** The leader epoch this broker knows from metadata; sent as `CurrentLeaderEpoch` for fencing. */
  readonly currentLeaderEpoch: number
  /** Where to fetch from; the log end offset by default (Kafka's follower start). */
  readonly initialOffset?: number
}

/** `Truncating`: the log has no leader epochs, so it is cut to its high watermark before fetching. */
export type FetchPhase = "Fetching" | "Truncating"

/** The fetch state of one partition. */
export interface PartitionFetchState {
  readonly topic: string
  readonly topicId: string | undefined
  readonly partition: number
  readonly log: PartitionLog.PartitionLog
  readonly currentLeaderEpoch: number
  readonly fetchOffset: number
  /** The epoch of the last batch in the log, -1 when none: sent as `LastFetchedEpoch`. */
  readonly lastFetchedEpoch: number
  /**
   * For a partition of a mirror topic, the highest batch epoch the leader's log has shown this follower
   * (starts at 0, sent as `MirrorLeaderEpoch`); -1 for other partitions.
   */
  readonly mirrorLeaderEpoch: number
  readonly phase: FetchPhase
  /** Not fetched before this time (ms); 0 when not delayed. */
  readonly delayedUntil: number
}

export interface ReplicaFetcherOptions {
  /** This broker's id, sent as `ReplicaId` / `ReplicaState.ReplicaId`. */
  readonly brokerId: number
  /**
   * This broker's epoch from its registration, sent as `ReplicaState.ReplicaEpoch`; a function when it may
   * change while the fetcher runs (the broker registered again).
   */
  readonly brokerEpoch: bigint | (() => bigint)
  readonly endpoint: LeaderEndpoint
  readonly config?: Partial<FetcherConfig.FetcherConfig>
  readonly events?: FetcherEvents
  readonly now?: () => number
  readonly rackId?: string
  /**
   * Whether a topic has a mirror name in this broker's metadata (KIP-1279): its partitions validate batches
   * with the `MirrorLeaderEpoch` protocol instead of the current leader epoch. Read when a partition is added
   * and, after `mirrorTopicsChanged()`, before the next request, so a topic that stops mirroring falls back to
   * the usual rule. No topic is a mirror topic unless given.
   */
  readonly isMirrorTopic?: (topic: string) => boolean
  /** Replication throttling (KIP-73) of this broker's follower quota; nothing is throttled without it. */
  readonly throttle?: FetchThrottle
}

/** What one round did. */
export type RoundResult =
  | { readonly _tag: "Idle"; readonly nextReadyAt: number | undefined }
  | { readonly _tag: "Fetched"; readonly partitions: number; readonly bytes: number }
  | { readonly _tag: "RequestFailed"; readonly error: unknown }

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`

const EMPTY = Buffer.alloc(0)

const hasTopicId = (topicId: string | undefined): topicId is string => topicId !== undefined && topicId !== ZERO_UUID

/** A corrupt batch may be a transient leader-side state, and a full or failing disk may heal: both are retried. */
const isRetriable = (e: unknown): boolean =>
  typeof e === "object" &&
  e !== null &&
  "_tag" in e &&
  (e._tag === "CorruptRecordError" || e._tag === "KafkaStorageError")

const codeOf = (e: unknown): number => {
  try {
    return errorCodeOf(e)
  } catch {
    return ErrorCode.UNKNOWN_SERVER_ERROR
  }
}

interface SentPartition {
  readonly fetchOffset: number
  readonly currentLeaderEpoch: number
  /** The `MirrorLeaderEpoch` held when the request was built, -1 for a partition of another topic. */
  readonly mirrorLeaderEpoch: number
}

/** The first `MirrorLeaderEpoch` of a follower of a mirror partition (JR36). */
export const INITIAL_MIRROR_LEADER_EPOCH = 0

type ResponsePartition = Fetch.Response["responses"][number]["partitions"][number]

export class ReplicaFetcher {
  private readonly states = new Map<string, PartitionFetchState>()
  private readonly failed = new Set<string>()
  private readonly config: FetcherConfig.FetcherConfig
  private readonly events: FetcherEvents
  private readonly now: () => number
  private running = false
  /** Set by `mirrorTopicsChanged()`: the mirror names are read again before the next request. */
  private mirrorNamesChanged = false
  private loop: Promise<void> | undefined
  private wakeUp: (() => void) | undefined
  private woken = false

  constructor(readonly options: ReplicaFetcherOptions) {
    if (options.endpoint.fetchVersion < MIN_FETCH_VERSION)
      throw new UnsupportedFetchVersionError({
        version: options.endpoint.fetchVersion,
        message: `the replica fetcher needs Fetch v${MIN_FETCH_VERSION}+ (LastFetchedEpoch), the leader speaks v${options.endpoint.fetchVersion}`
      })
    this.config = FetcherConfig.make(options.config)
    this.events = options.events ?? ignore
    this.now = options.now ?? Date.now
  }

  get leaderId(): number {
    return this.options.endpoint.leaderId
  }

  /**
   * Starts fetching partitions. A partition already fetched at the same leader epoch keeps its state; a new
   * epoch restarts it from `initialOffset` (default: the log end) with the log's latest epoch.
   */
  addPartitions(partitions: ReadonlyArray<AddPartition>): void {
    for (const p of partitions) {
      const k = key(p.topic, p.partition)
      this.failed.delete(k)
      const current = this.states.get(k)
      if (current !== undefined && current.currentLeaderEpoch === p.currentLeaderEpoch) {
        this.moveToEnd(k, { ...current, topicId: p.topicId ?? current.topicId })
        continue
      }
      const lastFetchedEpoch = p.log.latestEpoch()
      this.moveToEnd(k, {
        topic: p.topic,
        topicId: p.topicId,
        partition: p.partition,
        log: p.log,
        currentLeaderEpoch: p.currentLeaderEpoch,
        fetchOffset: p.initialOffset ?? p.log.logEndOffset,
        lastFetchedEpoch,
        mirrorLeaderEpoch: this.isMirrorTopic(p.topic) ? INITIAL_MIRROR_LEADER_EPOCH : -1,
        phase: lastFetchedEpoch >= 0 ? "Fetching" : "Truncating",
        delayedUntil: 0
      })
    }
    this.wake()
  }

  /** Stops fetching partitions; returns the states they had (Kafka hands them to the next fetcher). */
  removePartitions(partitions: ReadonlyArray<TopicPartition>): ReadonlyArray<PartitionFetchState> {
    const removed: PartitionFetchState[] = []
    for (const tp of partitions) {
      const k = key(tp.topic, tp.partition)
      const state = this.states.get(k)
      if (state !== undefined) removed.push(state)
      this.states.delete(k)
      this.failed.delete(k)
    }
    return removed
  }

  /** The fetch state of a partition, if it is being fetched. */
  partitionState(tp: TopicPartition): PartitionFetchState | undefined {
    return this.states.get(key(tp.topic, tp.partition))
  }

  /** Whether a partition stopped after an error and waits to be added again. */
  isFailed(tp: TopicPartition): boolean {
    return this.failed.has(key(tp.topic, tp.partition))
  }

  get partitionCount(): number {
    return this.states.size
  }

  /** Runs rounds until `stop()`: after an idle round or a failed request it waits `replica.fetch.backoff.ms`. */
  start(): void {
    if (this.loop !== undefined) return
    this.running = true
    this.woken = false
    this.loop = (async () => {
      while (this.running) {
        const round = await this.runOnce()
        if (!this.running) break
        if (round._tag === "RequestFailed") await this.pause(this.config.replicaFetchBackoffMs)
        else if (round._tag === "Idle") {
          const until =
            round.nextReadyAt === undefined ? this.config.replicaFetchBackoffMs : round.nextReadyAt - this.now()
          await this.pause(Math.max(1, Math.min(this.config.replicaFetchBackoffMs, until)))
        }
      }
    })()
  }

  /** Ends the loop after the round in flight; closes nothing (the endpoint belongs to the caller). */
  async stop(): Promise<void> {
    this.running = false
    this.wake()
    const loop = this.loop
    this.loop = undefined
    await loop
  }

  /** One round: truncate epoch-less logs, send one Fetch for every ready partition, apply the answer. */
  async runOnce(): Promise<RoundResult> {
    if (this.mirrorNamesChanged) {
      this.mirrorNamesChanged = false
      this.followMirrorNames()
    }
    this.truncateToHighWatermark()
    const now = this.now()
    const throttle = this.options.throttle
    const ready = [...this.states.values()].filter(
      (s) => s.phase === "Fetching" && s.delayedUntil <= now && throttle?.shouldThrottle(s) !== true
    )
    if (ready.length === 0) {
      let nextReadyAt: number | undefined
      for (const s of this.states.values())
        if (s.delayedUntil > 0 && (nextReadyAt === undefined || s.delayedUntil < nextReadyAt))
          nextReadyAt = s.delayedUntil
      return { _tag: "Idle", nextReadyAt }
    }
    // Like Kafka, fall back to topic names for the whole request when a partition has no topic id.
    const version =
      this.options.endpoint.fetchVersion >= TOPIC_ID_FETCH_VERSION && !ready.every((s) => hasTopicId(s.topicId))
        ? TOPIC_ID_FETCH_VERSION - 1
        : this.options.endpoint.fetchVersion
    const sent = new Map<string, SentPartition>()
    const request = this.buildRequest(ready, sent)
    let response: Fetch.Response
    try {
      response = await this.options.endpoint.fetch(request, version)
    } catch (error) {
      for (const k of [...this.states.keys()]) this.delay(k, ErrorCode.NETWORK_EXCEPTION)
      return { _tag: "RequestFailed", error }
    }
    if (response.errorCode !== 0) {
      for (const k of sent.keys()) this.delay(k, response.errorCode)
      return { _tag: "RequestFailed", error: new LeaderResponseError({ api: "Fetch", errorCode: response.errorCode }) }
    }
    const topicById = new Map<string, string>()
    for (const s of ready) if (s.topicId !== undefined) topicById.set(s.topicId, s.topic)
    const diverging: Array<[string, number, number]> = []
    const withErrors: Array<[string, number]> = []
    let bytes = 0
    for (const t of response.responses) {
      const topic = version >= TOPIC_ID_FETCH_VERSION ? topicById.get(t.topicId) : t.topic
      if (topic === undefined) continue
      for (const p of t.partitions) {
        const k = key(topic, p.partitionIndex)
        const request = sent.get(k)
        const state = this.states.get(k)
        // The partition may have been removed, re-added or truncated while the request was in flight.
        if (request === undefined || state === undefined) continue
        if (state.fetchOffset !== request.fetchOffset || !this.isReady(state)) continue
        switch (p.errorCode) {
          case ErrorCode.NONE: {
            throttle?.record(state, p.records === null ? 0 : p.records.byteLength)
            bytes += this.processPartitionData(k, state, request, p, withErrors)
            if (p.divergingEpoch.epoch >= 0)
              diverging.push([k, p.divergingEpoch.epoch, Number(p.divergingEpoch.endOffset)])
            break
          }
          case ErrorCode.OFFSET_OUT_OF_RANGE: {
            const error = await this.handleOutOfRange(k, state, request.currentLeaderEpoch)
            if (error !== undefined) withErrors.push([k, error])
            break
          }
          case ErrorCode.FENCED_LEADER_EPOCH: {
            if (this.onPartitionFenced(k, request.currentLeaderEpoch)) withErrors.push([k, p.errorCode])
            break
          }
          default:
            // NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, unknown topic/partition/id and the rest: retry later.
            withErrors.push([k, p.errorCode])
        }
      }
    }
    for (const [k, epoch, endOffset] of diverging) this.truncateOnDivergence(k, epoch, endOffset)
    for (const [k, errorCode] of withErrors) this.delay(k, errorCode)
    return { _tag: "Fetched", partitions: sent.size, bytes }
  }

  private buildRequest(ready: ReadonlyArray<PartitionFetchState>, sent: Map<string, SentPartition>): Fetch.Request {
    const topics = new Map<string, { topic: string; topicId: string; partitions: Array<FetchPartition> }>()
    for (const s of ready) {
      let t = topics.get(s.topic)
      if (t === undefined) {
        t = { topic: s.topic, topicId: s.topicId ?? ZERO_UUID, partitions: [] }
        topics.set(s.topic, t)
      }
      t.partitions.push({
        partition: s.partition,
        currentLeaderEpoch: s.currentLeaderEpoch,
        fetchOffset: BigInt(s.fetchOffset),
        lastFetchedEpoch: s.lastFetchedEpoch,
        logStartOffset: BigInt(s.log.logStartOffset),
        partitionMaxBytes: this.config.replicaFetchMaxBytes,
        replicaDirectoryId: ZERO_UUID,
        highWatermark: 9223372036854775807n,
        mirrorLeaderEpoch: s.mirrorLeaderEpoch
      })
      sent.set(key(s.topic, s.partition), {
        fetchOffset: s.fetchOffset,
        currentLeaderEpoch: s.currentLeaderEpoch,
        mirrorLeaderEpoch: s.mirrorLeaderEpoch
      })
    }
    return {
      clusterId: null,
      replicaId: this.options.brokerId,
      replicaState: {
        replicaId: this.options.brokerId,
        replicaEpoch:
          typeof this.options.brokerEpoch === "function" ? this.options.brokerEpoch() : this.options.brokerEpoch
      },
      maxWaitMs: this.config.replicaFetchWaitMaxMs,
      minBytes: this.config.replicaFetchMinBytes,
      maxBytes: this.config.replicaFetchResponseMaxBytes,
      isolationLevel: 0,
      // No incremental fetch session: every request is a full fetch.
      sessionId: 0,
      sessionEpoch: -1,
      topics: [...topics.values()],
      forgottenTopicsData: [],
      rackId: this.options.rackId ?? ""
    }
  }

  /** The broker's metadata changed: mirror names are read again before the next request. */
  mirrorTopicsChanged(): void {
    this.mirrorNamesChanged = true
  }

  private isMirrorTopic(topic: string): boolean {
    return this.options.isMirrorTopic?.(topic) ?? false
  }

  /**
   * A topic that became a mirror topic starts the `MirrorLeaderEpoch` protocol at 0; one that stopped
   * mirroring leaves it (its partitions validate against the current leader epoch again).
   */
  private followMirrorNames(): void {
    if (this.options.isMirrorTopic === undefined) return
    for (const [k, s] of this.states) {
      const mirror = this.isMirrorTopic(s.topic)
      // Replaced in place: the fetch order stays as it is.
      if (mirror && s.mirrorLeaderEpoch < 0)
        this.states.set(k, { ...s, mirrorLeaderEpoch: INITIAL_MIRROR_LEADER_EPOCH })
      else if (!mirror && s.mirrorLeaderEpoch >= 0) this.states.set(k, { ...s, mirrorLeaderEpoch: -1 })
    }
  }

  /**
   * Appends the leader's batches up to the first one whose epoch is above the validation epoch (the request's
   * `MirrorLeaderEpoch` for a mirror partition, its current leader epoch otherwise), follows the leader's
   * high watermark and log start, and adopts the leader's `MirrorLeaderEpoch`; returns the bytes appended.
   */
  private processPartitionData(
    k: string,
    state: PartitionFetchState,
    request: SentPartition,
    p: ResponsePartition,
    withErrors: Array<[string, number]>
  ): number {
    const log = state.log
    const tp = { topic: state.topic, partition: state.partition }
    try {
      if (state.fetchOffset !== log.logEndOffset) {
        // The log moved under the fetcher (another writer): Kafka stops fetching the partition.
        this.markFailed(k, ErrorCode.UNKNOWN_SERVER_ERROR)
        return 0
      }
      const records = p.records === null ? EMPTY : toBuffer(p.records)
      // A response may end with a partial batch (cut by the byte limit); only whole batches are appended.
      const split = RecordBatch.split(records)
      const mirror = request.mirrorLeaderEpoch >= 0
      const { accepted, end } = acceptedBatches(
        records,
        split.batches,
        split.rest,
        mirror ? request.mirrorLeaderEpoch : request.currentLeaderEpoch
      )
      const rejected = accepted < split.batches.length
      const whole = end === records.length ? records : records.subarray(0, end)
      const before = { highWatermark: log.highWatermark, logStartOffset: log.logStartOffset }
      let next: PartitionFetchState = state
      if (accepted > 0) {
        const info = log.appendAsFollower(whole, this.now())
        const last = split.batches[accepted - 1]!
        next = {
          ...state,
          fetchOffset: info.lastOffset + 1,
          lastFetchedEpoch: RecordBatch.partitionLeaderEpoch(whole, last.position)
        }
      }
      // Adopted after the validation above, so a new epoch is appended only by the next fetch (JR36).
      if (mirror && state.mirrorLeaderEpoch >= 0 && p.mirrorLeaderEpoch > state.mirrorLeaderEpoch)
        next = { ...next, mirrorLeaderEpoch: p.mirrorLeaderEpoch }
      log.updateHighWatermark(Math.min(Number(p.highWatermark), log.logEndOffset))
      const leaderLogStart = Number(p.logStartOffset)
      if (leaderLogStart > log.logStartOffset) log.deleteRecordsBefore(leaderLogStart)
      if (next !== state) this.moveToEnd(k, next)
      // A rejected batch that the next fetch could not accept either (no newer epoch learned) waits a backoff:
      // the follower's metadata is behind the leader's, and the next metadata update settles it.
      if (rejected && next.mirrorLeaderEpoch <= request.mirrorLeaderEpoch)
        withErrors.push([k, mirror ? ErrorCode.FENCED_LEADER_EPOCH : ErrorCode.UNKNOWN_LEADER_EPOCH])
      if (accepted > 0 || log.highWatermark !== before.highWatermark || log.logStartOffset !== before.logStartOffset)
        this.events.fetched(tp, {
          logEndOffset: log.logEndOffset,
          highWatermark: log.highWatermark,
          logStartOffset: log.logStartOffset
        })
      return accepted > 0 ? whole.length : 0
    } catch (e) {
      // Retried after a backoff (the append left the log unchanged); anything else stops the partition.
      if (isRetriable(e)) withErrors.push([k, codeOf(e)])
      else this.markFailed(k, codeOf(e))
      return 0
    }
  }

  /**
   * Kafka's truncation on a `DivergingEpoch {epoch, endOffset}`: when this log knows that epoch, truncate
   * to the smaller of both ends of it; when it only knows a smaller epoch, truncate to that epoch's end and
   * let the next fetch (with the new last epoch) find the rest.
   */
  private truncateOnDivergence(k: string, epoch: number, endOffset: number): void {
    const state = this.states.get(k)
    if (state === undefined) return
    const log = state.log
    const replicaEnd = log.logEndOffset
    let offset: number
    if (endOffset < 0) offset = state.fetchOffset
    else if (epoch < 0) offset = Math.min(endOffset, replicaEnd)
    else {
      const local = log.endOffsetForEpoch(epoch)
      if (local.endOffset < 0) offset = Math.min(endOffset, replicaEnd)
      else if (local.epoch !== epoch) offset = Math.min(local.endOffset, replicaEnd)
      else offset = Math.min(local.endOffset, endOffset, replicaEnd)
    }
    this.truncate(k, state, offset)
  }

  /** Logs without leader epochs cannot be checked against the leader: Kafka cuts them to the high watermark. */
  private truncateToHighWatermark(): void {
    const now = this.now()
    for (const [k, state] of [...this.states])
      if (state.phase === "Truncating" && state.delayedUntil <= now) this.truncate(k, state, state.log.highWatermark)
  }

  private truncate(k: string, state: PartitionFetchState, offset: number): void {
    const log = state.log
    try {
      const before = log.logEndOffset
      log.truncateTo(offset)
      if (offset < before) this.events.truncated({ topic: state.topic, partition: state.partition }, offset)
      this.moveToEnd(k, {
        ...state,
        fetchOffset: log.logEndOffset,
        lastFetchedEpoch: log.latestEpoch(),
        phase: "Fetching"
      })
    } catch (e) {
      this.markFailed(k, codeOf(e))
    }
  }

  /**
   * OFFSET_OUT_OF_RANGE: when the leader's log ends below ours (an unclean election), truncate to its end;
   * when its log starts above our end (we were away past its retention), restart at its start; otherwise
   * fetch again from our end. Returns an error code when the partition should be delayed.
   */
  private async handleOutOfRange(
    k: string,
    state: PartitionFetchState,
    requestEpoch: number
  ): Promise<number | undefined> {
    const tp = { topic: state.topic, partition: state.partition }
    const endpoint = this.options.endpoint
    const check = (answer: OffsetAndEpoch): number => {
      if (answer.errorCode !== 0) throw new LeaderResponseError({ api: "ListOffsets", errorCode: answer.errorCode })
      return answer.offset
    }
    try {
      const replicaEnd = state.log.logEndOffset
      const leaderEnd = check(await endpoint.fetchLatestOffset(tp, requestEpoch))
      if (this.states.get(k) !== state) return undefined
      if (leaderEnd < replicaEnd) {
        this.truncate(k, state, leaderEnd)
        return undefined
      }
      const leaderStart = check(await endpoint.fetchEarliestOffset(tp, requestEpoch))
      if (this.states.get(k) !== state) return undefined
      if (leaderStart > replicaEnd) {
        state.log.truncateFullyAndStartAt(leaderStart)
        this.events.truncated(tp, leaderStart)
      }
      this.moveToEnd(k, {
        ...state,
        fetchOffset: state.log.logEndOffset,
        lastFetchedEpoch: state.log.latestEpoch(),
        phase: "Fetching"
      })
      return undefined
    } catch (e) {
      if (e instanceof LeaderResponseError) {
        if (e.errorCode === ErrorCode.FENCED_LEADER_EPOCH)
          return this.onPartitionFenced(k, requestEpoch) ? e.errorCode : undefined
        return e.errorCode
      }
      if (e instanceof LeaderRequestError) return ErrorCode.NETWORK_EXCEPTION
      if (this.states.get(k) === state) this.markFailed(k, codeOf(e))
      return undefined
    }
  }

  /**
   * FENCED_LEADER_EPOCH for the epoch this fetcher still holds: the broker's metadata is behind, so the
   * partition stops until it is added again with a newer epoch. For an older request epoch the partition
   * was already updated: just retry after the backoff. Returns whether to delay.
   */
  private onPartitionFenced(k: string, requestEpoch: number): boolean {
    const state = this.states.get(k)
    if (state === undefined) return false
    if (state.currentLeaderEpoch === requestEpoch) {
      this.markFailed(k, ErrorCode.FENCED_LEADER_EPOCH)
      return false
    }
    return true
  }

  private markFailed(k: string, errorCode: number): void {
    const state = this.states.get(k)
    if (state === undefined) return
    this.states.delete(k)
    this.failed.add(k)
    this.events.failed({ topic: state.topic, partition: state.partition }, errorCode, "failed")
  }

  private delay(k: string, errorCode: number): void {
    const state = this.states.get(k)
    if (state === undefined) return
    if (!this.isDelayed(state))
      this.moveToEnd(k, { ...state, delayedUntil: this.now() + this.config.replicaFetchBackoffMs })
    this.events.failed({ topic: state.topic, partition: state.partition }, errorCode, "delayed")
  }

  private isDelayed(state: PartitionFetchState): boolean {
    return state.delayedUntil > this.now()
  }

  private isReady(state: PartitionFetchState): boolean {
    return state.phase === "Fetching" && !this.isDelayed(state)
  }

  /** Updated partitions go to the back, so a response byte limit serves every partition in turn. */
  private moveToEnd(k: string, state: PartitionFetchState): void {
    this.states.delete(k)
    this.states.set(k, state)
  }

  private pause(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.wakeUp = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wakeUp = done
    })
  }

  /** Ends the current pause, or makes the next one return at once (a change arrived during a round). */
  private wake(): void {
    const wakeUp = this.wakeUp
    if (wakeUp === undefined) this.woken = this.loop !== undefined
    else wakeUp()
  }
}

type FetchPartition = Fetch.Request["topics"][number]["partitions"][number]

/**
 * The batches a follower may append from a response (KAFKA-18723): every whole batch before the first whose
 * partition leader epoch is above `validationEpoch`. Returns how many, and where they end in `records`.
 */
export const acceptedBatches = (
  records: Buffer,
  batches: ReadonlyArray<RecordBatch.BatchRef>,
  rest: number,
  validationEpoch: number
): { readonly accepted: number; readonly end: number } => {
  for (let i = 0; i < batches.length; i++) {
    const b = batches[i]!
    if (RecordBatch.partitionLeaderEpoch(records, b.position) > validationEpoch) return { accepted: i, end: b.position }
  }
  return { accepted: batches.length, end: rest }
}
