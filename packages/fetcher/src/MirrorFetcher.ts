/**
 * A mirror fetcher (KIP-1279 §6.1-§6.4): one per source broker per mirror, copying the partitions that
 * broker leads on the source cluster into the destination leader's logs. It fetches like a consumer
 * (replica id -1, READ_UNCOMMITTED, so up to the source high watermark), many partitions in one Fetch,
 * and appends whole batches unchanged at the source offsets (`appendAsFollower`: offsets, batch leader
 * epochs, producer ids and compression kept; records are never decoded). Before fetching a partition it
 * reconciles the local log with OffsetForLeaderEpoch (§6.3); on `DivergingEpoch` it truncates like a
 * follower; on OFFSET_OUT_OF_RANGE below the source log start it restarts there a log that never held a
 * position, and reports data loss for one that did (the source deleted records before they were copied):
 * such a partition fails, non-retryable, until an operator accepts the loss. Before each append it checks
 * the batch leader epochs against the destination and source leader epochs (§6.4).
 *
 * It owns only fetch positions, delays and the connection to its source broker. It must not decide mirror
 * state transitions, read source metadata, or move partitions between fetchers: it reports outcomes to its
 * owner (`MirrorFetcherManager`) through `MirrorFetcherOwner`, and the owner reports them as events.
 *
 * This module also holds what the fetcher and its manager share: the per-mirror fetch settings
 * (`mirror.fetch.*`), the partition and event types, and the per-partition state.
 */
import { Buffer } from "node:buffer"
import { performance } from "node:perf_hooks"
import {
  Errors,
  Fetch,
  ListOffsets,
  OffsetForLeaderEpoch,
  RecordBatch,
  TopicPartitionMap,
  ZERO_UUID
} from "@clustermirror/protocol"
import type { PartitionLog } from "@clustermirror/storage"
import type { FetchThrottle, TopicPartition } from "./FetcherEvents.js"
import { toBuffer } from "./internal/Bytes.js"
import { MIN_FETCH_VERSION, TOPIC_ID_FETCH_VERSION } from "./LeaderEndpoint.js"
import type { SourceConnection, SourceConnector } from "./SourceCluster.js"

const { ErrorCode } = Errors

// ---------------------------------------------------------------------------------------------------
// Settings (mirror configs, KIP-1279 §7.3)

export interface MirrorFetchConfig {
  /** mirror.fetch.wait.max.ms: how long the source may hold a fetch without data (the idle long poll). */
  readonly mirrorFetchWaitMaxMs: number
  /** mirror.fetch.min.bytes: bytes the source waits for before answering. */
  readonly mirrorFetchMinBytes: number
  /** mirror.fetch.max.bytes: per-partition byte limit of one fetch. */
  readonly mirrorFetchMaxBytes: number
  /** mirror.fetch.response.max.bytes: byte limit of a whole fetch response. */
  readonly mirrorFetchResponseMaxBytes: number
  /** mirror.fetch.backoff.ms: delay of a partition (or a whole fetcher) after an error. */
  readonly mirrorFetchBackoffMs: number
}

export const defaults: MirrorFetchConfig = {
  mirrorFetchWaitMaxMs: 1000,
  mirrorFetchMinBytes: 1,
  mirrorFetchMaxBytes: 1024 * 1024,
  mirrorFetchResponseMaxBytes: 10 * 1024 * 1024,
  mirrorFetchBackoffMs: 1000
}

/** The mirror config key of each setting. */
export const configKeys: { readonly [K in keyof MirrorFetchConfig]: string } = {
  mirrorFetchWaitMaxMs: "mirror.fetch.wait.max.ms",
  mirrorFetchMinBytes: "mirror.fetch.min.bytes",
  mirrorFetchMaxBytes: "mirror.fetch.max.bytes",
  mirrorFetchResponseMaxBytes: "mirror.fetch.response.max.bytes",
  mirrorFetchBackoffMs: "mirror.fetch.backoff.ms"
}

/** Defaults overridden by whatever is given. */
export const makeConfig = (overrides: Partial<MirrorFetchConfig> = {}): MirrorFetchConfig => ({
  ...defaults,
  ...overrides
})

const INT32_MAX = 2147483647

/**
 * The fetch settings of a mirror from its configs (the `CLUSTER_MIRROR` resource), with the defaults for
 * missing keys. Values that are not integers in [0, 2^31-1] keep the default: the controller validated the
 * configs when they were written, so this only guards against hand-edited data.
 */
export const fromMirrorConfigs = (configs: ReadonlyMap<string, string>): MirrorFetchConfig => {
  const read = (k: keyof MirrorFetchConfig): number => {
    const raw = configs.get(configKeys[k])?.trim()
    if (raw === undefined || !/^\d+$/.test(raw)) return defaults[k]
    const value = Number(raw)
    return value <= INT32_MAX ? value : defaults[k]
  }
  return {
    mirrorFetchWaitMaxMs: read("mirrorFetchWaitMaxMs"),
    mirrorFetchMinBytes: read("mirrorFetchMinBytes"),
    mirrorFetchMaxBytes: read("mirrorFetchMaxBytes"),
    mirrorFetchResponseMaxBytes: read("mirrorFetchResponseMaxBytes"),
    mirrorFetchBackoffMs: read("mirrorFetchBackoffMs")
  }
}

// ---------------------------------------------------------------------------------------------------
// Partitions and events

/** A mirror partition this broker leads on the destination, handed to the manager by the mirror runtime. */
export interface MirrorPartition {
  /** Destination (= source) topic name. */
  readonly topic: string
  /** Source topic id (= destination topic id). */
  readonly topicId: string
  readonly partition: number
  /** The destination leader's log. */
  readonly log: PartitionLog.PartitionLog
  /** The current local (destination) leader epoch, E_d. */
  readonly destinationLeaderEpoch: () => number
  /** Called after batches were appended: the owner advances its high watermark and wakes consumers. */
  readonly onAppend: () => void
  /**
   * Asked when the source log start passed the position of this partition's log: true when an operator
   * accepted the loss (the log restarts at the source log start), false or absent to fail the partition.
   */
  readonly acceptDataLoss?: () => boolean
}

/** How every data-loss failure reason begins: the mark by which a FAILED partition's reason is recognized. */
export const DATA_LOSS_PREFIX = "Data loss:"

/** The FAILED reason of a partition whose source deleted records at `position`..`sourceLogStartOffset` - 1. */
export const dataLossMessage = (position: number, sourceLogStartOffset: number): string =>
  `${DATA_LOSS_PREFIX} the source log start ${sourceLogStartOffset} passed the mirror position ${position} ` +
  `(${sourceLogStartOffset - position} records were deleted on the source before they were mirrored)`

/** What the mirror fetchers report to the mirror runtime; it decides the state transitions. */
export interface MirrorFetcherEvents {
  /**
   * Batches were appended (`appendedBytes` bytes holding `appendedRecords` records, both 0 otherwise), or
   * the source positions moved, or the log restarted at the source log start.
   */
  readonly fetched: (
    tp: TopicPartition,
    p: {
      sourceHighWatermark: number
      sourceLogStartOffset: number
      logEndOffset: number
      resetToSourceLogStart: boolean
      appendedBytes: number
      appendedRecords: number
    }
  ) => void
  /**
   * The source log start passed the log's position: the records between were deleted on the source before
   * they were copied. Reported once, just before the partition is reported `failed` (non-retryable).
   */
  readonly dataLoss?: (tp: TopicPartition, l: { position: number; sourceLogStartOffset: number }) => void
  /** The partition is no longer fetched; `retryable` false when retrying cannot help (source topic deleted). */
  readonly failed: (tp: TopicPartition, f: { message: string; retryable: boolean }) => void
  /** A fetched batch carries a leader epoch above the destination's (E_b > E_d): nothing appended, removed. */
  readonly epochAhead: (tp: TopicPartition, e: { batchEpoch: number; sourceLeaderEpoch: number }) => void
  /** A fetched batch epoch is within 3 of the destination's (E_b > E_d - 3): appended; bump proactively. */
  readonly epochNearlyAhead: (tp: TopicPartition, e: { batchEpoch: number; sourceLeaderEpoch: number }) => void
}

/** Callbacks that ignore everything. */
export const ignoreEvents: MirrorFetcherEvents = {
  fetched: () => {},
  failed: () => {},
  epochAhead: () => {},
  epochNearlyAhead: () => {}
}

/** Kafka's LEADER_EPOCH_BUMP_THRESHOLD: batch epochs this close to the destination epoch ask for a bump. */
export const LEADER_EPOCH_BUMP_THRESHOLD = 3

/**
 * `Metadata`: waiting for the source leader from metadata; `Truncating`: an OffsetForLeaderEpoch round trip
 * is due before fetching (§6.3); `Fetching`.
 */
export type Phase = "Metadata" | "Truncating" | "Fetching"

/**
 * Everything known about one mirror partition: a handful of numbers and references, no buffers, timers or
 * closures, so that thousands of idle partitions stay cheap. The manager owns it; the fetcher holding it
 * updates the fetch fields.
 */
export class PartitionState {
  phase: Phase = "Metadata"
  sourceLeaderId = -1
  /** E_s, from source metadata; -1 when the source does not tell (Metadata < v7). */
  sourceLeaderEpoch = -1
  fetcher: MirrorFetcher | undefined = undefined
  /** Bumped whenever the partition changes fetcher or leaves: answers to older requests are dropped. */
  generation = 0
  /** Not fetched (nor looked up) before this monotonic time (ms); 0 when not delayed. */
  delayedUntil = 0
  /** When the current run of errors began (owner's clock), -1 when the last attempt succeeded. */
  failingSince = -1
  /** Consecutive corrupt answers. */
  corruptCount = 0
  sourceHighWatermark = -1
  sourceLogStartOffset = -1
  /** Whether the log end reached the source high watermark at the last answer. */
  caughtUp = false
  /** When the partition was last caught up (or added, if never). */
  caughtUpAt: number
  /** The highest batch epoch already reported as nearly ahead. */
  nearlyAheadEpoch = -1
  /** A failure to report once source metadata was read again (stale source epoch, §6.4). */
  pendingFailure: string | undefined = undefined

  constructor(
    public partition: MirrorPartition,
    addedAt: number
  ) {
    this.caughtUpAt = addedAt
  }

  get log(): PartitionLog.PartitionLog {
    return this.partition.log
  }

  get tp(): TopicPartition {
    return { topic: this.partition.topic, partition: this.partition.partition }
  }
}

/** What a fetcher needs of its owner. */
export interface MirrorFetcherOwner {
  readonly config: MirrorFetchConfig
  readonly events: MirrorFetcherEvents
  readonly now: () => number
  /**
   * A transient error: the partition is retried after the backoff, from the source leader named by fresh
   * metadata when `refreshMetadata`. It fails once errors last longer than the owner's limit.
   */
  readonly retry: (state: PartitionState, error: string, refreshMetadata: boolean) => void
  /** The partition stops: removed and reported as failed. */
  readonly fail: (state: PartitionState, message: string, retryable: boolean) => void
  /** E_b > E_d: removed and reported as epoch-ahead. */
  readonly epochAhead: (state: PartitionState, batchEpoch: number) => void
  /** E_b > E_s: the source epoch known is stale; removed and reported failed after a metadata refresh. */
  readonly staleSourceEpoch: (state: PartitionState) => void
  /** The mirror replication quota (`mirror.replication.throttled.*`); nothing is throttled without it. */
  readonly throttle?: FetchThrottle
}

// ---------------------------------------------------------------------------------------------------
// Helpers

/** Monotonic milliseconds, for backoff deadlines (the owner's clock may be a test clock). */
export const monotonicNow = (): number => performance.now()

/** The Kafka name of an error code, for messages. */
export const errorName = (code: number): string => Errors.byCode.get(code)?.name ?? `error ${code}`

/** The message of a thrown value, for messages. */
export const describeError = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/**
 * Where a log must be cut when the source answers `(epoch, endOffset)` for the log's latest epoch (an
 * OffsetForLeaderEpoch answer or a `DivergingEpoch`), by Kafka's follower rule: when the log knows that
 * epoch, the smaller of both ends of it; when it only knows a smaller one, that one's end (the next round
 * finds the rest). Undefined when the source knows no such epoch (nothing to compare).
 */
export const truncationOffset = (
  log: PartitionLog.PartitionLog,
  epoch: number,
  endOffset: number
): number | undefined => {
  const end = log.logEndOffset
  if (endOffset < 0) return undefined
  if (epoch < 0) return Math.min(endOffset, end)
  const local = log.endOffsetForEpoch(epoch)
  if (local.endOffset < 0) return Math.min(endOffset, end)
  if (local.epoch !== epoch) return Math.min(local.endOffset, end)
  return Math.min(local.endOffset, endOffset, end)
}

/** Error codes after which the source leader of a partition must be looked up again. */
const REFRESH_METADATA: ReadonlySet<number> = new Set([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.UNKNOWN_TOPIC_ID,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.REPLICA_NOT_AVAILABLE,
  ErrorCode.KAFKA_STORAGE_ERROR
])

/** Corrupt answers in a row after which a partition fails instead of retrying. */
export const MAX_CORRUPT_ANSWERS = 3

const isCorrupt = (e: unknown): boolean =>
  typeof e === "object" && e !== null && "_tag" in e && e._tag === "CorruptRecordError"

/** A wait that `wake()` ends early; `wait(undefined)` waits for a wake only. */
export class Sleeper {
  private wakeUp: (() => void) | undefined
  private woken = false

  wait(ms: number | undefined): Promise<void> {
    if (this.woken) {
      this.woken = false
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const done = (): void => {
        if (timer !== undefined) clearTimeout(timer)
        this.wakeUp = undefined
        resolve()
      }
      if (ms !== undefined) timer = setTimeout(done, Math.max(1, ms))
      this.wakeUp = done
    })
  }

  /** Ends the current wait, or makes the next one return at once. */
  wake(): void {
    const wakeUp = this.wakeUp
    if (wakeUp === undefined) this.woken = true
    else wakeUp()
  }
}

// ---------------------------------------------------------------------------------------------------
// The fetcher

export interface MirrorFetcherOptions {
  /** The source broker's node id. */
  readonly sourceBrokerId: number
  readonly host: string
  readonly port: number
  readonly connector: SourceConnector
  readonly owner: MirrorFetcherOwner
}

/** What one round did. */
export type RoundResult =
  | { readonly _tag: "Idle"; readonly nextReadyAt: number | undefined }
  | { readonly _tag: "Fetched"; readonly partitions: number; readonly bytes: number }
  | { readonly _tag: "ConnectionFailed"; readonly error: string }

interface Sent {
  readonly state: PartitionState
  readonly generation: number
  readonly fetchOffset: number
  /** The source leader epoch sent as `CurrentLeaderEpoch`. */
  readonly currentLeaderEpoch: number
}

type ResponsePartition = Fetch.Response["responses"][number]["partitions"][number]
type FetchPartition = Fetch.Request["topics"][number]["partitions"][number]

const EMPTY = Buffer.alloc(0)
const CONSUMER_REPLICA_ID = -1
const EARLIEST_TIMESTAMP = -2n
const MAX_INT64 = 9223372036854775807n
/** Kafka's request.timeout.ms default, sent as ListOffsets' TimeoutMs. */
const LIST_OFFSETS_TIMEOUT_MS = 30_000

/**
 * The partitions of a request grouped by topic name, and the request entry of each (topic, partition)
 * for matching the answers.
 */
const byTopic = <P>(
  asked: ReadonlyArray<Sent>,
  partition: (a: Sent) => P
): { readonly topics: Map<string, Array<P>>; readonly sent: TopicPartitionMap<Sent> } => {
  const topics = new Map<string, Array<P>>()
  const sent = new TopicPartitionMap<Sent>()
  for (const a of asked) {
    const p = a.state.partition
    let partitions = topics.get(p.topic)
    if (partitions === undefined) topics.set(p.topic, (partitions = []))
    partitions.push(partition(a))
    sent.set(p.topic, p.partition, a)
  }
  return { topics, sent }
}

export class MirrorFetcher {
  /** In fetch order: a partition that got data moves to the back, so byte limits serve every partition. */
  private readonly states = new Set<PartitionState>()
  private readonly sleeper = new Sleeper()
  private connection: SourceConnection | undefined
  private connecting: Promise<SourceConnection> | undefined
  private running = false
  private stopped = false
  private loop: Promise<void> | undefined

  constructor(readonly options: MirrorFetcherOptions) {}

  get sourceBrokerId(): number {
    return this.options.sourceBrokerId
  }

  get partitionCount(): number {
    return this.states.size
  }

  /** Takes a partition (its phase and source epoch already set by the owner). */
  add(state: PartitionState): void {
    state.fetcher = this
    this.states.add(state)
    this.sleeper.wake()
  }

  /** Lets a partition go; an answer in flight for it is dropped. */
  remove(state: PartitionState): void {
    if (!this.states.delete(state)) return
    if (state.fetcher === this) state.fetcher = undefined
    state.generation++
  }

  /** Runs rounds until `stop()` (a stopped fetcher does not start again). */
  start(): void {
    if (this.loop !== undefined) return
    this.running = true
    this.loop = this.run()
  }

  /** Ends the loop (a request in flight is abandoned) and closes the connection. */
  async stop(): Promise<void> {
    this.running = false
    this.stopped = true
    this.sleeper.wake()
    const connection = this.connection
    this.connection = undefined
    if (connection !== undefined) await connection.close().catch(() => undefined)
    const loop = this.loop
    this.loop = undefined
    await loop
    for (const s of this.states) if (s.fetcher === this) s.fetcher = undefined
    this.states.clear()
  }

  private async run(): Promise<void> {
    const backoff = this.options.owner.config.mirrorFetchBackoffMs
    while (this.running) {
      if (this.states.size === 0) {
        await this.sleeper.wait(undefined)
        continue
      }
      const round = await this.runOnce()
      if (!this.running) break
      if (round._tag === "ConnectionFailed") await this.sleeper.wait(backoff)
      else if (round._tag === "Idle") {
        const until = round.nextReadyAt === undefined ? backoff : round.nextReadyAt - monotonicNow()
        await this.sleeper.wait(Math.min(backoff, Math.max(1, until)))
      }
    }
  }

  /** One round: OffsetForLeaderEpoch for partitions that need it, then one Fetch for every ready partition. */
  async runOnce(): Promise<RoundResult> {
    let connection: SourceConnection
    try {
      connection = await this.connect()
    } catch (e) {
      return this.connectionFailed(`Fetch IO error: ${describeError(e)}`)
    }
    if (this.stopped) return { _tag: "Idle", nextReadyAt: undefined }
    const truncating = this.ready("Truncating")
    if (truncating.length > 0) {
      const failure = await this.truncate(connection, truncating)
      if (failure !== undefined) return this.connectionFailed(failure)
    }
    const ready = this.ready("Fetching")
    if (ready.length === 0) {
      let nextReadyAt: number | undefined
      for (const s of this.states)
        if (s.delayedUntil > 0 && (nextReadyAt === undefined || s.delayedUntil < nextReadyAt))
          nextReadyAt = s.delayedUntil
      return { _tag: "Idle", nextReadyAt }
    }
    return this.fetch(connection, ready)
  }

  private ready(phase: Phase): PartitionState[] {
    const now = monotonicNow()
    const out: PartitionState[] = []
    // Throttled partitions sit out while the mirror quota is exceeded (ISR status is irrelevant for mirrors).
    const throttle = phase === "Fetching" ? this.options.owner.throttle : undefined
    for (const s of this.states)
      if (s.phase === phase && s.delayedUntil <= now && throttle?.shouldThrottle(s.tp) !== true) out.push(s)
    return out
  }

  private connect(): Promise<SourceConnection> {
    if (this.connection !== undefined) return Promise.resolve(this.connection)
    if (this.connecting === undefined) {
      const { connector, host, port } = this.options
      this.connecting = connector.connect(host, port).then(
        (c) => {
          this.connecting = undefined
          // Stopped while connecting: the connection is nobody's.
          if (this.stopped) {
            void c.close().catch(() => undefined)
            throw new Error("fetcher stopped")
          }
          this.connection = c
          return c
        },
        (e: unknown) => {
          this.connecting = undefined
          throw e
        }
      )
    }
    return this.connecting
  }

  /** The connection broke or a request failed as a whole: drop it; every partition looks its leader up again. */
  private async connectionFailed(error: string): Promise<RoundResult> {
    const connection = this.connection
    this.connection = undefined
    if (connection !== undefined) await connection.close().catch(() => undefined)
    if (!this.stopped) for (const s of [...this.states]) this.options.owner.retry(s, error, true)
    return { _tag: "ConnectionFailed", error }
  }

  private isCurrent(sent: Sent): boolean {
    const s = sent.state
    return !this.stopped && s.fetcher === this && s.generation === sent.generation && this.states.has(s)
  }

  // -------------------------------------------------------------------------------------------------
  // Truncation (§6.3)

  /**
   * OffsetForLeaderEpoch (consumer form) for the log's latest epoch; cuts the log where it diverges from the
   * source. Empty logs and logs without epochs skip it (the fetch's divergence check covers the rest).
   * Returns an error message when the request failed as a whole.
   */
  private async truncate(
    connection: SourceConnection,
    states: ReadonlyArray<PartitionState>
  ): Promise<string | undefined> {
    const version = connection.versionFor(OffsetForLeaderEpoch.api)
    const asked: Sent[] = []
    for (const s of states) {
      if (s.log.latestEpoch() < 0 || version === undefined) s.phase = "Fetching"
      else
        asked.push({
          state: s,
          generation: s.generation,
          fetchOffset: s.log.logEndOffset,
          currentLeaderEpoch: s.sourceLeaderEpoch
        })
    }
    if (asked.length === 0 || version === undefined) return undefined
    const { topics, sent: byKey } = byTopic(asked, (a) => ({
      partition: a.state.partition.partition,
      currentLeaderEpoch: a.state.sourceLeaderEpoch,
      leaderEpoch: a.state.log.latestEpoch()
    }))
    let response: OffsetForLeaderEpoch.Response
    try {
      response = await connection.request(
        OffsetForLeaderEpoch.api,
        {
          // A consumer's OffsetForLeaderEpoch (Kafka's CONSUMER_REPLICA_ID): the source needs no cluster rights.
          replicaId: CONSUMER_REPLICA_ID,
          topics: [...topics].map(([topic, partitions]) => ({ topic, partitions }))
        },
        version
      )
    } catch (e) {
      return `Fetch IO error: ${describeError(e)}`
    }
    const answered = new Set<Sent>()
    for (const t of response.topics)
      for (const p of t.partitions) {
        const a = byKey.get(t.topic, p.partition)
        if (a === undefined || answered.has(a) || !this.isCurrent(a)) continue
        answered.add(a)
        const s = a.state
        if (p.errorCode !== ErrorCode.NONE) {
          this.partitionError(s, p.errorCode, "OffsetForLeaderEpoch")
          continue
        }
        const offset = truncationOffset(s.log, p.leaderEpoch, Number(p.endOffset))
        if (!this.cut(s, offset)) continue
        s.phase = "Fetching"
      }
    for (const a of asked)
      if (!answered.has(a) && this.isCurrent(a))
        this.options.owner.retry(a.state, "Fetch IO error: no OffsetForLeaderEpoch answer for the partition", true)
    return undefined
  }

  /** Truncates the log to `offset` if that is below its end; false when the log failed (partition gone). */
  private cut(s: PartitionState, offset: number | undefined): boolean {
    if (offset === undefined || offset >= s.log.logEndOffset) return true
    try {
      s.log.truncateTo(offset)
      s.caughtUp = false
      return true
    } catch (e) {
      this.options.owner.fail(s, `Storage error: ${describeError(e)}`, true)
      return false
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Fetch (§6.1)

  private sendFetch(
    connection: SourceConnection,
    ready: ReadonlyArray<PartitionState>,
    version: number,
    sent: TopicPartitionMap<Sent>
  ): Promise<Fetch.Response> {
    const config = this.options.owner.config
    const byId = version >= TOPIC_ID_FETCH_VERSION
    const topics = new Map<string, { topic: string; topicId: string; partitions: FetchPartition[] }>()
    for (const s of ready) {
      const p = s.partition
      const topicKey = byId ? p.topicId : p.topic
      let t = topics.get(topicKey)
      if (t === undefined)
        topics.set(topicKey, (t = { topic: p.topic, topicId: byId ? p.topicId : ZERO_UUID, partitions: [] }))
      const fetchOffset = s.log.logEndOffset
      t.partitions.push({
        partition: p.partition,
        currentLeaderEpoch: s.sourceLeaderEpoch,
        fetchOffset: BigInt(fetchOffset),
        // With the local latest epoch the source checks for divergence and answers DivergingEpoch.
        lastFetchedEpoch: s.log.latestEpoch(),
        // A consumer does not report a log start.
        logStartOffset: -1n,
        partitionMaxBytes: config.mirrorFetchMaxBytes,
        replicaDirectoryId: ZERO_UUID,
        highWatermark: MAX_INT64,
        mirrorLeaderEpoch: -1
      })
      sent.set(topicKey, p.partition, {
        state: s,
        generation: s.generation,
        fetchOffset,
        currentLeaderEpoch: s.sourceLeaderEpoch
      })
    }
    const request: Fetch.Request = {
      clusterId: null,
      replicaId: CONSUMER_REPLICA_ID,
      replicaState: { replicaId: CONSUMER_REPLICA_ID, replicaEpoch: -1n },
      maxWaitMs: config.mirrorFetchWaitMaxMs,
      minBytes: config.mirrorFetchMinBytes,
      maxBytes: config.mirrorFetchResponseMaxBytes,
      // READ_UNCOMMITTED: the source answers up to its high watermark; aborted data is mirrored with its markers.
      isolationLevel: 0,
      // No incremental fetch session: every request is a full fetch.
      sessionId: 0,
      sessionEpoch: -1,
      topics: [...topics.values()],
      forgottenTopicsData: [],
      rackId: ""
    }
    return connection.request(Fetch.api, request, version)
  }

  private async fetch(connection: SourceConnection, ready: ReadonlyArray<PartitionState>): Promise<RoundResult> {
    const owner = this.options.owner
    const negotiated = connection.versionFor(Fetch.api)
    if (negotiated === undefined || negotiated < MIN_FETCH_VERSION) {
      const speaks = negotiated === undefined ? "no Fetch version we know" : `Fetch up to v${negotiated}`
      for (const s of ready)
        owner.fail(
          s,
          `Fetch IO error: source broker ${this.options.sourceBrokerId} speaks ${speaks}, mirroring needs v${MIN_FETCH_VERSION}+`,
          true
        )
      return { _tag: "Fetched", partitions: 0, bytes: 0 }
    }
    const version = Math.min(negotiated, Fetch.api.maxVersion)
    const byId = version >= TOPIC_ID_FETCH_VERSION
    const sent = new TopicPartitionMap<Sent>()
    // Built and sent by a helper, so that the request's per-partition objects are not kept alive by this
    // frame while the source holds the long poll (an idle mirror waits here most of the time).
    const sending = this.sendFetch(connection, ready, version, sent)
    let response: Fetch.Response
    try {
      response = await sending
    } catch (e) {
      return this.connectionFailed(`Fetch IO error: ${describeError(e)}`)
    }
    if (this.stopped) return { _tag: "Fetched", partitions: 0, bytes: 0 }
    if (response.errorCode !== ErrorCode.NONE) {
      for (const a of sent.values()) if (this.isCurrent(a)) this.partitionError(a.state, response.errorCode, "Fetch")
      return { _tag: "Fetched", partitions: sent.size, bytes: 0 }
    }
    const outOfRange: Sent[] = []
    const answered = new Set<Sent>()
    let bytes = 0
    for (const t of response.responses)
      for (const p of t.partitions) {
        const a = sent.get(byId ? t.topicId : t.topic, p.partitionIndex)
        if (a === undefined || answered.has(a)) continue
        answered.add(a)
        // Removed, moved or truncated while the request was in flight: the answer is for another position.
        if (!this.isCurrent(a) || a.state.phase !== "Fetching" || a.state.log.logEndOffset !== a.fetchOffset) continue
        // The source leader epoch moved on while the request was in flight (KAFKA-18723): the answer may hold
        // batches the new leader truncated, so it is dropped and the partition fetched again at the new epoch.
        if (a.state.sourceLeaderEpoch !== a.currentLeaderEpoch) continue
        if (p.errorCode === ErrorCode.NONE) {
          owner.throttle?.record(a.state.tp, p.records === null ? 0 : p.records.byteLength)
          bytes += this.processPartitionData(a.state, p)
        } else if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) outOfRange.push(a)
        else this.partitionError(a.state, p.errorCode, "Fetch")
      }
    if (outOfRange.length > 0) {
      const failure = await this.handleOutOfRange(connection, outOfRange)
      if (failure !== undefined) return this.connectionFailed(failure)
    }
    return { _tag: "Fetched", partitions: sent.size, bytes }
  }

  /** A partition-level error code from the source. */
  private partitionError(s: PartitionState, code: number, api: string): void {
    const owner = this.options.owner
    const error = `${api} error: ${errorName(code)} (${Errors.message(code)})`
    if (code === ErrorCode.CORRUPT_MESSAGE) {
      if (++s.corruptCount >= MAX_CORRUPT_ANSWERS) owner.fail(s, error, true)
      else owner.retry(s, error, false)
      return
    }
    owner.retry(s, error, REFRESH_METADATA.has(code))
  }

  /**
   * Appends the whole batches of one partition answer after the epoch checks of §6.4; returns the bytes
   * appended.
   */
  private processPartitionData(s: PartitionState, p: ResponsePartition): number {
    const owner = this.options.owner
    const log = s.log
    if (p.divergingEpoch.epoch >= 0 || p.divergingEpoch.endOffset >= 0n) {
      const { epoch, endOffset } = p.divergingEpoch
      const offset = truncationOffset(log, epoch, Number(endOffset))
      // No truncation point inside the local log: retrying at once would spin, so the partition backs off
      // and starts over from metadata and OffsetForLeaderEpoch.
      if (offset === undefined || offset >= log.logEndOffset)
        owner.retry(
          s,
          `Fetch error: no truncation point below ${log.logEndOffset} for the divergence from the source (epoch ${epoch} ends at ${endOffset})`,
          true
        )
      else if (this.cut(s, offset)) this.moveToEnd(s)
      return 0
    }
    const sourceHighWatermark = Number(p.highWatermark)
    const sourceLogStartOffset = Number(p.logStartOffset)
    const positionsMoved =
      sourceHighWatermark !== s.sourceHighWatermark || sourceLogStartOffset !== s.sourceLogStartOffset
    s.sourceHighWatermark = sourceHighWatermark
    s.sourceLogStartOffset = sourceLogStartOffset
    const records = p.records === null ? EMPTY : toBuffer(p.records)
    // A response may end with a partial batch (cut by a byte limit): only whole batches are appended.
    const { batches, rest } = RecordBatch.split(records)
    let first = 0
    // Batches wholly below the log end (the source read from the batch holding the fetch offset) are skipped.
    while (first < batches.length && RecordBatch.lastOffset(records, batches[first]!.position) < log.logEndOffset)
      first++
    if (first === batches.length) {
      this.settle(s, positionsMoved)
      return 0
    }
    const start = batches[first]!.position
    const whole = start === 0 && rest === records.length ? records : records.subarray(start, rest)
    let batchEpoch = -1
    let recordCount = 0
    for (let i = first; i < batches.length; i++) {
      const position = batches[i]!.position
      const epoch = RecordBatch.partitionLeaderEpoch(records, position)
      if (epoch > batchEpoch) batchEpoch = epoch
      recordCount += RecordBatch.recordCount(records, position)
    }
    const destinationEpoch = s.partition.destinationLeaderEpoch()
    if (batchEpoch > destinationEpoch) {
      owner.epochAhead(s, batchEpoch)
      return 0
    }
    if (batchEpoch > destinationEpoch - LEADER_EPOCH_BUMP_THRESHOLD && batchEpoch > s.nearlyAheadEpoch) {
      s.nearlyAheadEpoch = batchEpoch
      owner.events.epochNearlyAhead(s.tp, { batchEpoch, sourceLeaderEpoch: s.sourceLeaderEpoch })
    }
    if (s.sourceLeaderEpoch >= 0 && batchEpoch > s.sourceLeaderEpoch) {
      owner.staleSourceEpoch(s)
      return 0
    }
    try {
      const base = RecordBatch.baseOffset(whole)
      // The source log start may sit inside a batch (DeleteRecords): an empty log starts at that batch instead.
      if (base < log.logEndOffset && log.logEndOffset === log.logStartOffset) log.truncateFullyAndStartAt(base)
      log.appendAsFollower(whole, owner.now())
    } catch (e) {
      const error = `Storage error: ${describeError(e)}`
      if (isCorrupt(e)) {
        if (++s.corruptCount >= MAX_CORRUPT_ANSWERS) owner.fail(s, error, true)
        else owner.retry(s, error, false)
      } else owner.fail(s, error, true)
      return 0
    }
    s.corruptCount = 0
    s.partition.onAppend()
    this.moveToEnd(s)
    this.settle(s, false)
    this.reportFetched(s, false, whole.length, recordCount)
    return whole.length
  }

  /** A successful answer: the error run ends, lag bookkeeping follows, and `fetched` reports changes. */
  private settle(s: PartitionState, report: boolean): void {
    const owner = this.options.owner
    const now = owner.now()
    s.failingSince = -1
    s.corruptCount = 0
    s.caughtUp = s.sourceHighWatermark >= 0 && s.log.logEndOffset >= s.sourceHighWatermark
    if (s.caughtUp) s.caughtUpAt = now
    if (report) this.reportFetched(s, false)
  }

  private reportFetched(
    s: PartitionState,
    resetToSourceLogStart: boolean,
    appendedBytes = 0,
    appendedRecords = 0
  ): void {
    this.options.owner.events.fetched(s.tp, {
      sourceHighWatermark: s.sourceHighWatermark,
      sourceLogStartOffset: s.sourceLogStartOffset,
      logEndOffset: s.log.logEndOffset,
      resetToSourceLogStart,
      appendedBytes,
      appendedRecords
    })
  }

  /**
   * OFFSET_OUT_OF_RANGE (§6.2): when the local log ends below the source log start (ListOffsets EARLIEST,
   * consumer form), the source deleted what was not copied yet. A log that never held a position (empty at
   * offset 0) restarts at the source log start, reported once; a log with a position p > 0 lost the records
   * from p to the source log start: it is reported as data loss and fails non-retryable, unless the
   * partition says the operator accepted the loss, which restarts it like a new one. Otherwise the local log ends above the source's: look the partition up again and
   * reconcile with OffsetForLeaderEpoch after the backoff. Returns an error message when the request failed
   * as a whole.
   */
  private async handleOutOfRange(
    connection: SourceConnection,
    states: ReadonlyArray<Sent>
  ): Promise<string | undefined> {
    const owner = this.options.owner
    const version = connection.versionFor(ListOffsets.api)
    if (version === undefined) {
      for (const a of states) owner.retry(a.state, "Fetch error: OFFSET_OUT_OF_RANGE and no ListOffsets", true)
      return undefined
    }
    const { topics, sent: byKey } = byTopic(states, (a) => ({
      partitionIndex: a.state.partition.partition,
      currentLeaderEpoch: a.state.sourceLeaderEpoch,
      timestamp: EARLIEST_TIMESTAMP
    }))
    let response: ListOffsets.Response
    try {
      response = await connection.request(
        ListOffsets.api,
        {
          replicaId: CONSUMER_REPLICA_ID,
          isolationLevel: 0,
          topics: [...topics].map(([name, partitions]) => ({ name, partitions })),
          timeoutMs: LIST_OFFSETS_TIMEOUT_MS
        },
        version
      )
    } catch (e) {
      return `Fetch IO error: ${describeError(e)}`
    }
    const answered = new Set<Sent>()
    for (const t of response.topics)
      for (const p of t.partitions) {
        const a = byKey.get(t.name, p.partitionIndex)
        if (a === undefined || answered.has(a)) continue
        answered.add(a)
        if (!this.isCurrent(a) || a.state.log.logEndOffset !== a.fetchOffset) continue
        const s = a.state
        if (p.errorCode !== ErrorCode.NONE) {
          this.partitionError(s, p.errorCode, "ListOffsets")
          continue
        }
        const sourceLogStart = Number(p.offset)
        if (sourceLogStart > s.log.logEndOffset) {
          const position = s.log.logEndOffset
          if (position > 0 && s.partition.acceptDataLoss?.() !== true) {
            s.sourceLogStartOffset = sourceLogStart
            owner.events.dataLoss?.(s.tp, { position, sourceLogStartOffset: sourceLogStart })
            owner.fail(s, dataLossMessage(position, sourceLogStart), false)
            continue
          }
          try {
            s.log.truncateFullyAndStartAt(sourceLogStart)
          } catch (e) {
            owner.fail(s, `Storage error: ${describeError(e)}`, true)
            continue
          }
          s.sourceLogStartOffset = sourceLogStart
          s.caughtUp = false
          this.reportFetched(s, true)
          continue
        }
        // The local log ends above the source's: after a metadata check (the topic may have been recreated),
        // the partition starts over with OffsetForLeaderEpoch.
        owner.retry(s, `Fetch error: ${errorName(ErrorCode.OFFSET_OUT_OF_RANGE)} at offset ${a.fetchOffset}`, true)
      }
    for (const a of states)
      if (!answered.has(a) && this.isCurrent(a))
        owner.retry(a.state, "Fetch IO error: no ListOffsets answer for the partition", true)
    return undefined
  }

  private moveToEnd(s: PartitionState): void {
    if (this.states.delete(s)) this.states.add(s)
  }
}
