/**
 * The mirror fetcher manager of one mirror on one destination broker (KIP-1279 §1, §6): it takes the mirror
 * partitions this broker leads, learns each one's source leader, leader epoch and address from source
 * metadata (Metadata by topic id where the source speaks v12+, by name otherwise), and runs one
 * `MirrorFetcher` per source broker, so that every partition a source broker leads is fetched in one Fetch
 * request. When a partition's leader moves (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...) or a source
 * broker cannot be reached, it reads metadata again and hands the partition to its new leader's fetcher.
 * Transient errors back off `mirror.fetch.backoff.ms`; a partition failing for longer than `failAfterMs`,
 * or hitting an error retrying cannot fix, is removed and reported `failed`. It also keeps each partition's
 * lag in offsets and in time.
 *
 * It must not decide mirror state transitions (FAILED, EPOCH_FENCING, ...): the mirror runtime does, from
 * the events, and adds or removes partitions. Backoff waits use real timers; `now` drives `failAfterMs`,
 * lag in time and append times.
 */
import { Errors, Metadata, TopicPartitionMap, ZERO_UUID } from "@clustermirror/protocol"
import type { FetchThrottle, TopicPartition } from "./FetcherEvents.js"
import {
  describeError,
  errorName,
  type MirrorFetchConfig,
  MirrorFetcher,
  type MirrorFetcherEvents,
  type MirrorFetcherOwner,
  type MirrorPartition,
  makeConfig,
  monotonicNow,
  PartitionState,
  Sleeper
} from "./MirrorFetcher.js"
import type { SourceAddress, SourceConnection, SourceConnector } from "./SourceCluster.js"

export {
  configKeys,
  defaults,
  fromMirrorConfigs,
  type MirrorFetchConfig,
  type MirrorFetcherEvents,
  type MirrorPartition
} from "./MirrorFetcher.js"

const { ErrorCode } = Errors

/** Lowest Metadata version that looks topics up by id (v10-11 carry the field, but brokers ignore it). */
export const TOPIC_ID_METADATA_VERSION = 12
/** Lowest Metadata version whose answer carries topic ids. */
const TOPIC_ID_IN_METADATA_RESPONSE = 10

/** Default of `failAfterMs`: how long a partition may keep failing before it is reported failed. */
export const DEFAULT_FAIL_AFTER_MS = 30_000

export const SOURCE_TOPIC_DELETED = "The source topic is deleted."
export const STALE_SOURCE_EPOCH = "Source leader epoch metadata is stale"

export interface MirrorFetcherManagerOptions {
  readonly mirrorName: string
  readonly bootstrapServers: ReadonlyArray<SourceAddress>
  readonly connector: SourceConnector
  /** From the mirror's configs (`fromMirrorConfigs`); defaults for what is missing. */
  readonly config?: Partial<MirrorFetchConfig>
  readonly events: MirrorFetcherEvents
  /** How long a partition may keep failing transiently before it is reported failed (default 30000). */
  readonly failAfterMs?: number
  readonly now?: () => number
  readonly log?: (line: string) => void
  /** The broker's mirror replication quota (KIP-1279 §6.1); nothing is throttled without it. */
  readonly throttle?: FetchThrottle
}

/** A partition's lag: in offsets (source HW - local HW) and in time (since it was last caught up). */
export interface Lag {
  /** -1 until the source answered a fetch of the partition. */
  readonly sourceHighWatermark: number
  readonly logEndOffset: number
  /** -1 (unknown) while the source high watermark is. */
  readonly lag: number
  readonly lagMs: number
}

/** A source partition's leader and leader epoch, with the leader's address. */
export interface SourceLeader {
  readonly topic: string
  readonly partition: number
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly address: SourceAddress | undefined
}

type MetadataTopic = Metadata.Response["topics"][number]
type MetadataPartition = MetadataTopic["partitions"][number]

export class MirrorFetcherManager {
  private readonly partitions = new TopicPartitionMap<PartitionState>()
  /** By source broker id and address: a broker that moves gets a new fetcher. */
  private readonly fetchers = new Map<string, MirrorFetcher>()
  private readonly stopping = new Set<Promise<void>>()
  private readonly config: MirrorFetchConfig
  private readonly failAfterMs: number
  private readonly now: () => number
  private readonly owner: MirrorFetcherOwner
  private readonly sleeper = new Sleeper()
  private metadataConnection: SourceConnection | undefined
  private bootstrapIndex = 0
  private metadataLoop: Promise<void> | undefined
  private closed = false

  constructor(readonly options: MirrorFetcherManagerOptions) {
    this.config = makeConfig(options.config)
    this.failAfterMs = options.failAfterMs ?? DEFAULT_FAIL_AFTER_MS
    this.now = options.now ?? Date.now
    this.owner = {
      config: this.config,
      events: options.events,
      now: this.now,
      retry: (state, error, refreshMetadata) => this.retry(state, error, refreshMetadata),
      fail: (state, message, retryable) => this.fail(state, message, retryable),
      epochAhead: (state, batchEpoch) => this.epochAhead(state, batchEpoch),
      staleSourceEpoch: (state) => this.staleSourceEpoch(state),
      ...(options.throttle !== undefined && { throttle: options.throttle })
    }
  }

  get partitionCount(): number {
    return this.partitions.size
  }

  /**
   * Starts mirroring partitions. Re-adding a partition keeps its fetch state (and takes the new callbacks)
   * unless its log changed, which starts it over.
   */
  addPartitions(ps: ReadonlyArray<MirrorPartition>): void {
    if (this.closed) return
    const now = this.now()
    for (const p of ps) {
      const existing = this.partitions.get(p.topic, p.partition)
      if (existing !== undefined && existing.log === p.log) {
        existing.partition = p
        continue
      }
      if (existing !== undefined) this.detach(existing)
      this.partitions.set(p.topic, p.partition, new PartitionState(p, now))
    }
    this.releaseIdleFetchers()
    if (this.metadataLoop === undefined) this.metadataLoop = this.runMetadata()
    this.sleeper.wake()
  }

  /** Stops mirroring partitions: nothing is appended for them once this returns. */
  removePartitions(tps: ReadonlyArray<TopicPartition>): void {
    for (const tp of tps) {
      const state = this.partitions.get(tp.topic, tp.partition)
      if (state === undefined) continue
      this.partitions.delete(tp.topic, tp.partition)
      this.detach(state)
    }
    this.releaseIdleFetchers()
  }

  has(tp: TopicPartition): boolean {
    return this.partitions.has(tp.topic, tp.partition)
  }

  /** The partitions being mirrored, as they were added. */
  partitionList(): ReadonlyArray<MirrorPartition> {
    return [...this.partitions.values()].map((s) => s.partition)
  }

  /**
   * Lag of a partition: `lag` = max(0, source HW - local high watermark), -1 before the source answered a
   * fetch (a partition just added is not caught up with a source it knows nothing of); `lagMs` = 0 when the
   * local log end reached the source HW at the last answer, otherwise the time since it last did (or since
   * it was added).
   */
  lag(tp: TopicPartition): Lag | undefined {
    const s = this.partitions.get(tp.topic, tp.partition)
    if (s === undefined) return undefined
    return {
      sourceHighWatermark: s.sourceHighWatermark,
      logEndOffset: s.log.logEndOffset,
      lag: s.sourceHighWatermark < 0 ? -1 : Math.max(0, s.sourceHighWatermark - s.log.highWatermark),
      lagMs: s.caughtUp ? 0 : Math.max(0, this.now() - s.caughtUpAt)
    }
  }

  /** The partition's source leader epoch from the last source metadata, if known. */
  sourceLeaderEpoch(tp: TopicPartition): number | undefined {
    const s = this.partitions.get(tp.topic, tp.partition)
    return s === undefined || s.sourceLeaderEpoch < 0 ? undefined : s.sourceLeaderEpoch
  }

  /**
   * Source leaders learned outside the fetchers (the periodic refresh, KIP-1279 §5.9): a partition being
   * fetched whose source leader epoch moved on starts over at the new epoch, as when a metadata answer
   * shows it. Partitions waiting for metadata or a failure report are left to their own lookup.
   */
  sourceLeaders(leaders: ReadonlyArray<SourceLeader>): void {
    for (const l of leaders) {
      const s = this.partitions.get(l.topic, l.partition)
      if (s === undefined || s.phase === "Metadata" || s.pendingFailure !== undefined) continue
      this.moveOn(s, l.leaderId, l.leaderEpoch, l.address)
    }
  }

  /** Stops every fetcher and the metadata lookups, and closes every connection. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const s of this.partitions.values()) s.generation++
    this.partitions.clear()
    const fetchers = [...this.fetchers.values()]
    this.fetchers.clear()
    this.sleeper.wake()
    await Promise.all(fetchers.map((f) => f.stop()))
    await Promise.all([...this.stopping])
    await this.dropMetadataConnection()
    await this.metadataLoop
  }

  // -------------------------------------------------------------------------------------------------
  // Outcomes reported by fetchers

  private isTracked(state: PartitionState): boolean {
    return !this.closed && this.partitions.get(state.partition.topic, state.partition.partition) === state
  }

  private retry(state: PartitionState, error: string, refreshMetadata: boolean): void {
    if (!this.isTracked(state)) return
    const now = this.now()
    if (state.failingSince < 0) state.failingSince = now
    if (now - state.failingSince >= this.failAfterMs) {
      this.fail(state, error, true)
      return
    }
    state.delayedUntil = monotonicNow() + this.config.mirrorFetchBackoffMs
    if (refreshMetadata && state.phase !== "Metadata") {
      state.fetcher?.remove(state)
      state.phase = "Metadata"
      this.releaseIdleFetchers()
      this.sleeper.wake()
    }
  }

  private fail(state: PartitionState, message: string, retryable: boolean): void {
    if (!this.isTracked(state)) return
    const tp = state.tp
    this.partitions.delete(tp.topic, tp.partition)
    this.detach(state)
    this.releaseIdleFetchers()
    this.log(`${tp.topic}-${tp.partition} failed (${retryable ? "retryable" : "not retryable"}): ${message}`)
    this.options.events.failed(tp, { message, retryable })
  }

  private epochAhead(state: PartitionState, batchEpoch: number): void {
    if (!this.isTracked(state)) return
    const tp = state.tp
    this.partitions.delete(tp.topic, tp.partition)
    this.detach(state)
    this.releaseIdleFetchers()
    const sourceLeaderEpoch = state.sourceLeaderEpoch
    this.log(
      `${tp.topic}-${tp.partition}: batch leader epoch ${batchEpoch} is above the destination leader epoch ${state.partition.destinationLeaderEpoch()}`
    )
    this.options.events.epochAhead(tp, { batchEpoch, sourceLeaderEpoch })
  }

  /** E_b > E_s (§6.4): read source metadata again, then report the partition failed (retryable). */
  private staleSourceEpoch(state: PartitionState): void {
    if (!this.isTracked(state)) return
    state.fetcher?.remove(state)
    state.phase = "Metadata"
    state.pendingFailure = STALE_SOURCE_EPOCH
    state.delayedUntil = 0
    this.releaseIdleFetchers()
    this.sleeper.wake()
  }

  private detach(state: PartitionState): void {
    state.fetcher?.remove(state)
    state.fetcher = undefined
    state.generation++
  }

  private releaseIdleFetchers(): void {
    for (const [k, fetcher] of this.fetchers)
      if (fetcher.partitionCount === 0) {
        this.fetchers.delete(k)
        const stopped = fetcher.stop()
        this.stopping.add(stopped)
        void stopped.finally(() => this.stopping.delete(stopped))
      }
  }

  private log(line: string): void {
    this.options.log?.(`[mirror ${this.options.mirrorName}] ${line}`)
  }

  // -------------------------------------------------------------------------------------------------
  // Source metadata

  private async runMetadata(): Promise<void> {
    while (!this.closed) {
      const now = monotonicNow()
      const due: PartitionState[] = []
      let next: number | undefined
      for (const s of this.partitions.values()) {
        if (s.phase !== "Metadata") continue
        if (s.delayedUntil <= now) due.push(s)
        else if (next === undefined || s.delayedUntil < next) next = s.delayedUntil
      }
      if (due.length === 0) await this.sleeper.wait(next === undefined ? undefined : next - now)
      else await this.refreshMetadata(due)
    }
  }

  private async metadataConnect(): Promise<SourceConnection> {
    if (this.metadataConnection !== undefined) return this.metadataConnection
    const servers = this.options.bootstrapServers
    if (servers.length === 0) throw new Error("no bootstrap servers")
    let lastError: unknown
    for (let i = 0; i < servers.length; i++) {
      const server = servers[(this.bootstrapIndex + i) % servers.length]!
      try {
        const connection = await this.options.connector.connect(server.host, server.port)
        if (this.closed) {
          await connection.close().catch(() => undefined)
          throw new Error("closed")
        }
        this.bootstrapIndex = (this.bootstrapIndex + i) % servers.length
        this.metadataConnection = connection
        return connection
      } catch (e) {
        lastError = e
      }
    }
    this.bootstrapIndex = (this.bootstrapIndex + 1) % servers.length
    throw lastError
  }

  private async dropMetadataConnection(): Promise<void> {
    const connection = this.metadataConnection
    this.metadataConnection = undefined
    if (connection !== undefined) await connection.close().catch(() => undefined)
  }

  /** One Metadata request for the topics of `due`; each partition goes to its leader's fetcher, or retries. */
  private async refreshMetadata(due: ReadonlyArray<PartitionState>): Promise<void> {
    let response: Metadata.Response
    let version: number
    try {
      const connection = await this.metadataConnect()
      const negotiated = connection.versionFor(Metadata.api)
      if (negotiated === undefined) throw new Error("the source does not speak a Metadata version we know")
      version = negotiated
      const byId = version >= TOPIC_ID_METADATA_VERSION
      const topics = new Map<string, { topicId: string; name: string | null }>()
      for (const s of due) {
        const p = s.partition
        topics.set(
          byId ? p.topicId : p.topic,
          byId ? { topicId: p.topicId, name: null } : { topicId: ZERO_UUID, name: p.topic }
        )
      }
      response = await connection.request(
        Metadata.api,
        {
          topics: [...topics.values()],
          allowAutoTopicCreation: false,
          includeClusterAuthorizedOperations: false,
          includeTopicAuthorizedOperations: false
        },
        version
      )
    } catch (e) {
      await this.dropMetadataConnection()
      const error = `Failed to get source metadata: ${describeError(e)}`
      for (const s of due) this.unresolved(s, error)
      return
    }
    if (this.closed) return
    this.applyMetadata(due, response, version)
    this.releaseIdleFetchers()
  }

  private applyMetadata(due: ReadonlyArray<PartitionState>, response: Metadata.Response, version: number): void {
    const byId = version >= TOPIC_ID_METADATA_VERSION
    const brokers = new Map<number, SourceAddress>()
    for (const b of response.brokers) brokers.set(b.nodeId, { host: b.host, port: b.port })
    const topics = new Map<string, MetadataTopic>()
    for (const t of response.topics) {
      const k = byId ? t.topicId : t.name
      if (k !== null) topics.set(k, t)
    }
    const partitionsOf = new Map<MetadataTopic, Map<number, MetadataPartition>>()
    for (const s of due) {
      if (!this.isTracked(s) || s.phase !== "Metadata") continue
      const p = s.partition
      const t = topics.get(byId ? p.topicId : p.topic)
      if (t === undefined) {
        this.unresolved(s, `Failed to get source metadata: topic ${p.topic} is missing from the answer`)
        continue
      }
      const recreated =
        t.errorCode === ErrorCode.NONE &&
        version >= TOPIC_ID_IN_METADATA_RESPONSE &&
        t.topicId !== ZERO_UUID &&
        t.topicId !== p.topicId
      const unknown =
        t.errorCode === ErrorCode.UNKNOWN_TOPIC_ID || (!byId && t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
      if (unknown || recreated) {
        this.fail(s, SOURCE_TOPIC_DELETED, false)
        continue
      }
      if (t.errorCode !== ErrorCode.NONE) {
        this.unresolved(s, `Failed to get source metadata: ${errorName(t.errorCode)} for topic ${p.topic}`)
        continue
      }
      let indexed = partitionsOf.get(t)
      if (indexed === undefined) {
        indexed = new Map(t.partitions.map((sp) => [sp.partitionIndex, sp]))
        partitionsOf.set(t, indexed)
      }
      const sp = indexed.get(p.partition)
      if (sp === undefined) {
        this.unresolved(s, `Failed to get source metadata: partition ${p.partition} of ${p.topic} is not on the source`)
        continue
      }
      const address = brokers.get(sp.leaderId)
      if (sp.leaderId < 0 || address === undefined) {
        const reason = sp.errorCode === ErrorCode.NONE ? "" : ` (${errorName(sp.errorCode)})`
        this.unresolved(s, `Failed to get source metadata: no leader for ${p.topic}-${p.partition}${reason}`)
        continue
      }
      if (s.sourceLeaderId >= 0 && s.sourceLeaderId !== sp.leaderId)
        this.log(`${p.topic}-${p.partition}: source leader moved from ${s.sourceLeaderId} to ${sp.leaderId}`)
      s.sourceLeaderId = sp.leaderId
      s.sourceLeaderEpoch = sp.leaderEpoch
      if (s.pendingFailure !== undefined) {
        this.fail(s, s.pendingFailure, true)
        continue
      }
      this.assign(s, sp.leaderId, address)
    }
    this.learnFromMetadata(due, topics, brokers, byId)
  }

  /**
   * The answer also names the leaders of partitions that were not asked about (other partitions of the same
   * topics, being fetched right now): a newer source leader epoch among them means the source elected a new
   * leader (maybe uncleanly) while their fetches are in flight. Such a partition starts over at the new epoch
   * with OffsetForLeaderEpoch; the fetch in flight for the old epoch is dropped when it is answered.
   */
  private learnFromMetadata(
    due: ReadonlyArray<PartitionState>,
    topics: ReadonlyMap<string, MetadataTopic>,
    brokers: ReadonlyMap<number, SourceAddress>,
    byId: boolean
  ): void {
    const asked = new Set(due)
    const indexed = new Map<MetadataTopic, Map<number, MetadataPartition>>()
    for (const s of this.partitions.values()) {
      if (asked.has(s) || s.phase === "Metadata" || s.pendingFailure !== undefined) continue
      const p = s.partition
      const t = topics.get(byId ? p.topicId : p.topic)
      if (t === undefined || t.errorCode !== ErrorCode.NONE) continue
      let byIndex = indexed.get(t)
      if (byIndex === undefined) indexed.set(t, (byIndex = new Map(t.partitions.map((x) => [x.partitionIndex, x]))))
      const sp = byIndex.get(p.partition)
      if (sp !== undefined) this.moveOn(s, sp.leaderId, sp.leaderEpoch, brokers.get(sp.leaderId))
    }
  }

  /**
   * A newer source leader epoch of a partition being fetched: it starts over at that epoch with
   * OffsetForLeaderEpoch, at the same fetcher or at the new leader's; the fetch in flight for the old epoch
   * is dropped when it is answered. Nothing happens for an epoch not newer than the one held.
   */
  private moveOn(s: PartitionState, leaderId: number, leaderEpoch: number, address: SourceAddress | undefined): void {
    if (leaderEpoch <= s.sourceLeaderEpoch || leaderId < 0 || address === undefined) return
    const p = s.partition
    this.log(`${p.topic}-${p.partition}: source leader epoch moved from ${s.sourceLeaderEpoch} to ${leaderEpoch}`)
    const sameLeader = leaderId === s.sourceLeaderId && s.fetcher !== undefined
    s.sourceLeaderId = leaderId
    s.sourceLeaderEpoch = leaderEpoch
    if (sameLeader) {
      // Same fetcher: it reconciles with OffsetForLeaderEpoch next round and drops the answer in flight.
      s.phase = "Truncating"
      s.delayedUntil = 0
      s.fetcher?.add(s)
    } else this.assign(s, leaderId, address)
  }

  /** No leader found: a pending failure is reported now; otherwise the partition retries after the backoff. */
  private unresolved(state: PartitionState, error: string): void {
    if (state.pendingFailure !== undefined) this.fail(state, state.pendingFailure, true)
    else this.retry(state, error, false)
  }

  /** Hands a partition to the fetcher of its source leader; it starts with an OffsetForLeaderEpoch check. */
  private assign(state: PartitionState, leaderId: number, address: SourceAddress): void {
    const k = `${leaderId}@${address.host}:${address.port}`
    let fetcher = this.fetchers.get(k)
    if (fetcher === undefined) {
      fetcher = new MirrorFetcher({
        sourceBrokerId: leaderId,
        host: address.host,
        port: address.port,
        connector: this.options.connector,
        owner: this.owner
      })
      this.fetchers.set(k, fetcher)
      fetcher.start()
    }
    if (state.fetcher !== undefined) state.fetcher.remove(state)
    state.generation++
    state.phase = "Truncating"
    state.delayedUntil = 0
    fetcher.add(state)
  }
}
