/**
 * ReplicaManager: the partitions this broker hosts, as leader or follower, and produce / fetch /
 * list-offsets on them.
 *
 * As leader it owns the high watermark: the smallest log end offset over the (maximal) ISR, fed by
 * the fetch offsets of followers; ISR expansion and shrinking are proposed to the controller through
 * the `IsrChannel` port and take effect when the controller's answer (the new registration) comes back.
 * Produce with acks=-1 waits until the high watermark passes the appended batches. Fetches long-poll until
 * `minBytes` or `maxWaitMs`. Record data moves as bytes: never decoded record by record here. Must not
 * decode wire requests (handlers translate) nor decide leadership (the controller does).
 *
 * It holds the broker's replication quotas (`ReplicationQuota`): as leader it serves no records to an
 * out-of-sync follower of a throttled partition while the leader quota is exceeded, and counts what it sends
 * for throttled partitions; the replica and mirror fetchers ask `followerThrottle` / `mirrorThrottle`.
 */
import { Errors, RecordBatch, TopicPartitionMap } from "@clustermirror/protocol"
import { LeaderEpochChecks, type PartitionLog, type PartitionLogStore, StorageError } from "@clustermirror/storage"
import * as ReplicationQuota from "./ReplicationQuota.js"
import type { Verifier } from "./TxnVerification.js"

/** A partition's registration in the metadata: who leads, who replicates, with which epochs. */
export interface Registration {
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
  readonly leader: number
  readonly leaderEpoch: number
  readonly partitionEpoch: number
}

interface FollowerState {
  logEndOffset: number
  /** The log start the follower reported in its last fetch, -1 before it reported one. */
  logStartOffset: number
  lastCaughtUpTimeMs: number
  lastFetchLeaderLogEndOffset: number
  lastFetchTimeMs: number
}

export interface PartitionState {
  readonly topic: string
  readonly partition: number
  readonly topicId: string
  readonly log: PartitionLog.PartitionLog
  readonly internal: boolean
  leader: number
  leaderEpoch: number
  partitionEpoch: number
  replicas: ReadonlyArray<number>
  isr: ReadonlyArray<number>
  /** An ISR change sent to the controller and not answered yet. */
  pendingIsr: ReadonlyArray<number> | null
  minInsyncReplicas: number
  /** The followers' positions while this broker leads; a shared empty map for single-replica partitions. */
  followers: ReadonlyMap<number, FollowerState>
}

const NO_FOLLOWERS: ReadonlyMap<number, FollowerState> = new Map()

/** The controller side of ISR changes (AlterPartition); resolves with the registration it committed. */
export interface IsrChannel {
  readonly alterPartition: (
    p: { topic: string; topicId: string; partition: number; leaderEpoch: number; partitionEpoch: number },
    newIsr: ReadonlyArray<number>
  ) => Promise<{ errorCode: number; registration: Registration | null }>
}

export interface ProduceResult {
  readonly errorCode: number
  readonly baseOffset: bigint
  readonly logAppendTimeMs: bigint
  readonly logStartOffset: bigint
  readonly errorMessage: string | null
  readonly currentLeader: { leaderId: number; leaderEpoch: number }
}

export interface FetchPartitionRequest {
  readonly topic: string
  readonly partition: number
  readonly fetchOffset: number
  readonly currentLeaderEpoch: number
  readonly lastFetchedEpoch: number
  readonly partitionMaxBytes: number
  /** KIP-1279 §6.4: the follower's `MirrorLeaderEpoch` (-1 when absent) and whether the topic has a mirror name. */
  readonly mirrorLeaderEpoch?: number
  readonly mirrorTopic?: boolean
  /** A follower's log start (Fetch v5+), -1 or absent when unknown. */
  readonly logStartOffset?: number
}

/** DeleteRecords on one partition: the low watermark once reached, -1 with an error. */
export interface DeleteRecordsResult {
  readonly errorCode: number
  readonly lowWatermark: bigint
}

export interface FetchPartitionResult {
  readonly topic: string
  readonly partition: number
  readonly errorCode: number
  readonly highWatermark: bigint
  readonly lastStableOffset: bigint
  readonly logStartOffset: bigint
  readonly divergingEpoch: { epoch: number; endOffset: bigint } | null
  readonly abortedTransactions: ReadonlyArray<{ producerId: bigint; firstOffset: bigint }> | null
  readonly records: Buffer
  readonly currentLeader: { leaderId: number; leaderEpoch: number }
  /** The latest epoch in this leader's log for a follower of a mirror partition that asked, else -1. */
  readonly mirrorLeaderEpoch: number
}

export interface FetchParams {
  /** -1 for consumers; the follower's broker id for replica fetches. */
  readonly replicaId: number
  readonly maxWaitMs: number
  readonly minBytes: number
  readonly maxBytes: number
  /** 0 read_uncommitted, 1 read_committed */
  readonly isolationLevel: number
  readonly partitions: ReadonlyArray<FetchPartitionRequest>
  /** Told how long the fetch waited for data (its long poll), which is not handling time. */
  readonly onWait?: (ms: number) => void
}

export interface ReplicaManagerOptions {
  readonly store: PartitionLogStore.PartitionLogStoreService
  readonly nodeId: number
  readonly now?: () => number
  /** `replica.lag.time.max.ms`: a follower not caught up for this long leaves the ISR. */
  readonly replicaLagTimeMaxMs?: number
  readonly isrChannel?: IsrChannel
  /** Where storage errors are logged (rate-limited); silent by default. */
  readonly log?: (line: string) => void
  /** The shortest time between two log lines about storage errors of the same kind (default 10 s). */
  readonly storageErrorLogIntervalMs?: number
  /**
   * KIP-890 verification of a transaction's first batch in a partition with its transaction coordinator
   * (`transaction.partition.verification.enable`); without it transactional batches are not verified.
   */
  readonly verifier?: Verifier
  /**
   * Whether a broker is alive (registered and not fenced): the low watermark of DeleteRecords counts the
   * log start of every live replica, in the ISR or not. Every broker counts as alive without it.
   */
  readonly isBrokerAlive?: (brokerId: number) => boolean
  /**
   * The replication throttle settings in force (`*.replication.throttled.rate`, `replication.quota.window.*`),
   * read at every use; no throttling without it.
   */
  readonly replicationQuotas?: () => ReplicationQuota.QuotaConfig
  /** A topic's dynamic configs, for its `*.replication.throttled.replicas`; none without it. */
  readonly topicConfigs?: (topic: string) => ReadonlyMap<string, string>
}

/**
 * What a replica or mirror fetcher asks about throttling (KIP-73, KIP-1279 §6.1): whether to leave a partition
 * out of its next Fetch, and the bytes it received for a partition.
 */
export interface FollowerThrottle {
  readonly shouldThrottle: (tp: { readonly topic: string; readonly partition: number }) => boolean
  readonly record: (tp: { readonly topic: string; readonly partition: number }, bytes: number) => void
}

const EMPTY = Buffer.alloc(0)
const NO_CONFIGS: ReadonlyMap<string, string> = new Map()
const NO_LEADER = { leaderId: -1, leaderEpoch: -1 }

const errorCodeOf = (e: unknown): number => {
  if (typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number") return e.errorCode
  throw e
}

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`

const failed = (errorCode: number): ProduceResult => ({
  errorCode,
  baseOffset: -1n,
  logAppendTimeMs: -1n,
  logStartOffset: -1n,
  errorMessage: null,
  currentLeader: NO_LEADER
})

/**
 * Log lines about storage errors, at most one per kind (produce, fetch, ...) per interval: a full disk fails
 * every request, and each line says how many more failed since the previous one.
 */
class StorageErrorLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>()
  constructor(
    private readonly log: (line: string) => void,
    private readonly intervalMs: number,
    private readonly now: () => number
  ) {}
  report(kind: string, topic: string, partition: number, cause: string): void {
    const now = this.now()
    const seen = this.last.get(kind)
    if (seen !== undefined && now - seen.at < this.intervalMs) {
      seen.suppressed++
      return
    }
    const more =
      seen !== undefined && seen.suppressed > 0
        ? ` (${seen.suppressed} more ${kind} storage errors since the last report)`
        : ""
    this.last.set(kind, { at: now, suppressed: 0 })
    this.log(`WARN storage error on ${kind} of ${topic}-${partition}: ${cause}${more}`)
  }
}

const E = Errors.ErrorCode

export class ReplicaManager {
  private readonly partitions = new TopicPartitionMap<PartitionState>()
  private readonly waiters = new Map<string, Set<() => void>>()
  private readonly store: PartitionLogStore.PartitionLogStoreService
  readonly nodeId: number
  private readonly now: () => number
  private readonly replicaLagTimeMaxMs: number
  private readonly isrChannel: IsrChannel | undefined
  private readonly storageErrors: StorageErrorLog
  private readonly verifier: Verifier | undefined
  private readonly isBrokerAlive: (brokerId: number) => boolean
  /**
   * Verifications under way, per partition and producer (Kafka's VerificationGuard): a marker of the
   * producer clears its guard, so a batch verified before its transaction ended is refused, not appended.
   */
  private readonly guards = new Map<string, Map<bigint, object>>()
  /** Bytes this leader sends to followers of its throttled partitions. */
  readonly leaderQuota: ReplicationQuota.ReplicationQuota
  /** Bytes this broker's replica fetchers receive for throttled partitions. */
  readonly followerQuota: ReplicationQuota.ReplicationQuota
  /** Bytes this broker's mirror fetchers receive from source clusters for throttled mirror partitions. */
  readonly mirrorQuota: ReplicationQuota.ReplicationQuota
  /** The follower quota as the replica fetchers use it: in-sync partitions are never left out. */
  readonly followerThrottle: FollowerThrottle
  /** The mirror quota as the mirror fetchers use it: the ISR does not matter (KIP-1279 §6.1). */
  readonly mirrorThrottle: FollowerThrottle

  constructor(options: ReplicaManagerOptions) {
    this.store = options.store
    this.nodeId = options.nodeId
    this.now = options.now ?? Date.now
    this.replicaLagTimeMaxMs = options.replicaLagTimeMaxMs ?? 30_000
    this.isrChannel = options.isrChannel
    this.verifier = options.verifier
    this.isBrokerAlive = options.isBrokerAlive ?? (() => true)
    this.storageErrors = new StorageErrorLog(
      options.log ?? (() => {}),
      options.storageErrorLogIntervalMs ?? 10_000,
      this.now
    )
    const quota = (type: ReplicationQuota.QuotaType) =>
      new ReplicationQuota.ReplicationQuota({
        type,
        brokerId: this.nodeId,
        config: options.replicationQuotas ?? (() => ReplicationQuota.unlimitedConfig),
        topicConfigs: options.topicConfigs ?? (() => NO_CONFIGS),
        now: this.now
      })
    this.leaderQuota = quota("leader")
    this.followerQuota = quota("follower")
    this.mirrorQuota = quota("mirror")
    this.followerThrottle = {
      shouldThrottle: ({ topic, partition }) =>
        this.followerQuota.isThrottled(topic, partition) &&
        this.get(topic, partition)?.isr.includes(this.nodeId) !== true &&
        this.followerQuota.isQuotaExceeded(),
      record: ({ topic, partition }, bytes) => {
        if (this.followerQuota.isThrottled(topic, partition)) this.followerQuota.record(bytes)
      }
    }
    this.mirrorThrottle = {
      shouldThrottle: ({ topic, partition }) =>
        this.mirrorQuota.isThrottled(topic, partition) && this.mirrorQuota.isQuotaExceeded(),
      record: ({ topic, partition }, bytes) => {
        if (this.mirrorQuota.isThrottled(topic, partition)) this.mirrorQuota.record(bytes)
      }
    }
  }

  /** The error code for a failure of a partition's log, logging storage errors (rate-limited). */
  private failureCode(kind: string, topic: string, partition: number, e: unknown): number {
    if (e instanceof StorageError.KafkaStorageError)
      this.storageErrors.report(kind, topic, partition, `${e.message}; answered KAFKA_STORAGE_ERROR`)
    return errorCodeOf(e)
  }

  /** Logs (rate-limited, per kind) a storage error met outside this manager, e.g. by a replica fetcher. */
  reportStorageError(kind: string, topic: string, partition: number, cause: string): void {
    this.storageErrors.report(kind, topic, partition, cause)
  }

  get(topic: string, partition: number): PartitionState | undefined {
    return this.partitions.get(topic, partition)
  }

  all(): IterableIterator<PartitionState> {
    return this.partitions.values()
  }

  /**
   * Applies a partition's registration from the metadata: opens its log if needed and takes the
   * leader or follower role it names. Returns the role change, for the caller to start or stop
   * replica fetchers.
   */
  applyRegistration(
    topic: string,
    partition: number,
    topicId: string,
    reg: Registration,
    config: PartitionLog.LogConfig,
    internal: boolean,
    minInsyncReplicas = 1
  ): { readonly state: PartitionState; readonly becameLeader: boolean; readonly becameFollower: boolean } {
    const k = key(topic, partition)
    let state = this.partitions.get(topic, partition)
    const wasLeader = state !== undefined && state.leader === this.nodeId
    const oldEpoch = state?.leaderEpoch ?? -1
    if (state === undefined) {
      const log = this.store.open(topic, partition, config, topicId)
      state = {
        topic,
        partition,
        topicId,
        log,
        internal,
        leader: reg.leader,
        leaderEpoch: reg.leaderEpoch,
        partitionEpoch: reg.partitionEpoch,
        replicas: reg.replicas,
        isr: reg.isr,
        pendingIsr: null,
        minInsyncReplicas,
        followers: NO_FOLLOWERS
      }
      this.partitions.set(topic, partition, state)
    } else {
      state.leader = reg.leader
      state.leaderEpoch = Math.max(state.leaderEpoch, reg.leaderEpoch)
      state.partitionEpoch = reg.partitionEpoch
      state.replicas = reg.replicas
      state.isr = reg.isr
      state.pendingIsr = null
      state.minInsyncReplicas = minInsyncReplicas
    }
    const isLeader = reg.leader === this.nodeId
    const becameLeader = isLeader && (!wasLeader || reg.leaderEpoch > oldEpoch)
    if (becameLeader) {
      const now = this.now()
      const followers = new Map<number, FollowerState>()
      for (const r of reg.replicas)
        if (r !== this.nodeId)
          followers.set(r, {
            logEndOffset: -1,
            logStartOffset: -1,
            lastCaughtUpTimeMs: reg.isr.includes(r) ? now : 0,
            lastFetchLeaderLogEndOffset: -1,
            lastFetchTimeMs: 0
          })
      state.followers = followers.size === 0 ? NO_FOLLOWERS : followers
    } else if (isLeader) this.syncFollowers(state)
    if (isLeader) this.maybeIncrementHighWatermark(state)
    // A partition that changes hands must fail any producer still waiting on it; an ISR change may complete
    // a DeleteRecords.
    this.wake(k)
    return { state, becameLeader, becameFollower: !isLeader && (wasLeader || reg.leaderEpoch > oldEpoch) }
  }

  /**
   * A reassignment changed the replicas of a partition we keep leading: a new replica starts as a
   * follower that has not fetched yet (it joins the ISR once it catches up), a removed one is forgotten.
   */
  private syncFollowers(state: PartitionState): void {
    const others = state.replicas.filter((r) => r !== this.nodeId)
    if (others.length === state.followers.size && others.every((r) => state.followers.has(r))) return
    const followers = new Map<number, FollowerState>()
    for (const r of others)
      followers.set(
        r,
        state.followers.get(r) ?? {
          logEndOffset: -1,
          logStartOffset: -1,
          lastCaughtUpTimeMs: 0,
          lastFetchLeaderLogEndOffset: -1,
          lastFetchTimeMs: 0
        }
      )
    state.followers = followers.size === 0 ? NO_FOLLOWERS : followers
  }

  /**
   * Applies a changed config to a hosted partition: its log's settings (max.message.bytes, retention,
   * segments, flushing) and its min.insync.replicas. Producers waiting on it check again.
   */
  reconfigure(topic: string, partition: number, config: PartitionLog.LogConfig, minInsyncReplicas: number): void {
    const state = this.partitions.get(topic, partition)
    if (state === undefined) return
    this.store.open(topic, partition, config, state.topicId)
    state.minInsyncReplicas = minInsyncReplicas
    this.wake(key(topic, partition))
  }

  /** Closes and deletes a partition's log. */
  deletePartition(topic: string, partition: number): void {
    const k = key(topic, partition)
    if (!this.partitions.delete(topic, partition)) return
    this.store.delete(topic, partition)
    this.wake(k)
  }

  private leaderHint(p: PartitionState) {
    return p.leader >= 0 ? { leaderId: p.leader, leaderEpoch: p.leaderEpoch } : NO_LEADER
  }

  /**
   * Appends a produce request's batches as leader. With acks=-1 the result waits until the high
   * watermark covers them (or `timeoutMs` passes). Batches not `fromClient` come from a coordinator
   * (internal topics allowed, control batches allowed, no sequence checks).
   */
  appendAsLeader(
    topic: string,
    partition: number,
    records: Buffer | null,
    fromClient: boolean,
    acks = 1,
    timeoutMs = 30_000,
    transactionalId: string | null = null
  ): ProduceResult | Promise<ProduceResult> {
    const p = this.get(topic, partition)
    if (p !== undefined && records !== null && records.length >= RecordBatch.HEADER_SIZE) {
      const producerId = RecordBatch.producerId(records)
      if (!fromClient && RecordBatch.isControl(records)) this.guards.get(key(topic, partition))?.delete(producerId)
      else if (
        fromClient &&
        transactionalId !== null &&
        this.verifier !== undefined &&
        p.leader === this.nodeId &&
        RecordBatch.isTransactional(records) &&
        !p.log.openTransactions().some((t) => t.producerId === producerId)
      )
        return this.verifyThenAppend(p, records, transactionalId, acks, timeoutMs, this.verifier)
    }
    return this.append(topic, partition, records, fromClient, acks, timeoutMs)
  }

  /** KIP-890: the first batch of a transaction in a partition waits for its coordinator's word. */
  private async verifyThenAppend(
    p: PartitionState,
    records: Buffer,
    transactionalId: string,
    acks: number,
    timeoutMs: number,
    verifier: Verifier
  ): Promise<ProduceResult> {
    const k = key(p.topic, p.partition)
    const producerId = RecordBatch.producerId(records)
    const guard = {}
    let guards = this.guards.get(k)
    if (guards === undefined) this.guards.set(k, (guards = new Map()))
    guards.set(producerId, guard)
    const code = await verifier({
      transactionalId,
      producerId,
      producerEpoch: RecordBatch.producerEpoch(records),
      topic: p.topic,
      partition: p.partition
    })
    const current = this.guards.get(k)
    const still = current?.get(producerId) === guard
    if (still) current!.delete(producerId)
    if (current?.size === 0) this.guards.delete(k)
    if (code !== 0 || !still)
      return {
        ...failed(code !== 0 ? code : E.INVALID_TXN_STATE),
        errorMessage:
          code !== 0
            ? `the transaction coordinator did not verify ${p.topic}-${p.partition}: ${Errors.message(code)}`
            : `the transaction of producer ${producerId} ended while ${p.topic}-${p.partition} was verified`
      }
    return this.append(p.topic, p.partition, records, true, acks, timeoutMs)
  }

  private append(
    topic: string,
    partition: number,
    records: Buffer | null,
    fromClient: boolean,
    acks: number,
    timeoutMs: number
  ): ProduceResult | Promise<ProduceResult> {
    const p = this.get(topic, partition)
    const fail = (errorCode: number, errorMessage: string | null = null, currentLeader = NO_LEADER): ProduceResult => ({
      ...failed(errorCode),
      errorMessage,
      currentLeader
    })
    if (p === undefined) return fail(E.UNKNOWN_TOPIC_OR_PARTITION)
    if (p.leader !== this.nodeId) return fail(E.NOT_LEADER_OR_FOLLOWER, null, this.leaderHint(p))
    if (fromClient && p.internal) return fail(E.INVALID_TOPIC_EXCEPTION, `cannot produce to internal topic ${topic}`)
    if (records === null || records.length === 0) return fail(E.CORRUPT_MESSAGE, "empty records")
    if (acks === -1 && p.isr.length < p.minInsyncReplicas)
      return fail(
        E.NOT_ENOUGH_REPLICAS,
        `The size of the current ISR ${p.isr.length} is insufficient to satisfy the min.isr requirement of ${p.minInsyncReplicas}`
      )
    let info: PartitionLog.AppendInfo
    try {
      info = p.log.appendAsLeader(records, p.leaderEpoch, this.now(), fromClient ? "client" : "coordinator")
    } catch (e) {
      return fail(this.failureCode("produce", topic, partition, e), e instanceof Error ? e.message : null)
    }
    this.maybeIncrementHighWatermark(p)
    this.wake(key(topic, partition))
    const ok: ProduceResult = {
      errorCode: 0,
      baseOffset: BigInt(info.firstOffset),
      logAppendTimeMs: BigInt(info.logAppendTime),
      logStartOffset: BigInt(info.logStartOffset),
      errorMessage: null,
      currentLeader: NO_LEADER
    }
    if (acks !== -1 || p.log.highWatermark > info.lastOffset) return ok
    return this.awaitReplication(p, info.lastOffset, timeoutMs, ok, fail)
  }

  private awaitReplication(
    p: PartitionState,
    lastOffset: number,
    timeoutMs: number,
    ok: ProduceResult,
    fail: (code: number, message?: string | null, leader?: { leaderId: number; leaderEpoch: number }) => ProduceResult
  ): Promise<ProduceResult> {
    const k = key(p.topic, p.partition)
    const epoch = p.leaderEpoch
    return new Promise((resolve) => {
      const deadline = setTimeout(() => done(fail(E.REQUEST_TIMED_OUT)), timeoutMs)
      const check = () => {
        const current = this.partitions.get(p.topic, p.partition)
        if (current === undefined) return done(fail(E.UNKNOWN_TOPIC_OR_PARTITION))
        if (current.leader !== this.nodeId || current.leaderEpoch !== epoch)
          return done(fail(E.NOT_LEADER_OR_FOLLOWER, null, this.leaderHint(current)))
        // Kafka's rule: replicated, but by fewer replicas than min.insync.replicas asks for.
        if (current.log.highWatermark > lastOffset)
          return done(
            current.isr.length < current.minInsyncReplicas
              ? fail(
                  E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                  `The size of the current ISR ${current.isr.length} is insufficient to satisfy the min.isr requirement of ${current.minInsyncReplicas}`
                )
              : ok
          )
        this.addWaiter(k, check)
      }
      const done = (r: ProduceResult) => {
        clearTimeout(deadline)
        this.waiters.get(k)?.delete(check)
        resolve(r)
      }
      this.addWaiter(k, check)
    })
  }

  private addWaiter(k: string, w: () => void): void {
    let set = this.waiters.get(k)
    if (set === undefined) this.waiters.set(k, (set = new Set()))
    set.add(w)
  }

  private wake(k: string): void {
    const ws = this.waiters.get(k)
    if (ws === undefined) return
    this.waiters.delete(k)
    for (const w of ws) w()
  }

  /** HW = min LEO over the leader and the followers of the maximal ISR (current ∪ pending). */
  private maybeIncrementHighWatermark(p: PartitionState): void {
    if (p.leader !== this.nodeId) return
    let hw = p.log.logEndOffset
    const members = new Set([...p.isr, ...(p.pendingIsr ?? [])])
    for (const r of members) {
      if (r === this.nodeId) continue
      const f = p.followers.get(r)
      hw = Math.min(hw, f === undefined ? -1 : f.logEndOffset)
    }
    if (hw > p.log.highWatermark) {
      p.log.updateHighWatermark(hw)
      this.wake(key(p.topic, p.partition))
    }
  }

  /** Records a follower's fetch position (its log end offset) and its log start. */
  private updateFollower(p: PartitionState, replicaId: number, fetchOffset: number, logStartOffset: number): void {
    const f = p.followers.get(replicaId)
    if (f === undefined) return
    if (logStartOffset >= 0 && logStartOffset !== f.logStartOffset) {
      f.logStartOffset = logStartOffset
      // DeleteRecords waits for the low watermark, which this may have moved.
      this.wake(key(p.topic, p.partition))
    }
    const now = this.now()
    const leo = p.log.logEndOffset
    if (fetchOffset >= leo) f.lastCaughtUpTimeMs = now
    else if (fetchOffset >= f.lastFetchLeaderLogEndOffset) f.lastCaughtUpTimeMs = f.lastFetchTimeMs
    f.logEndOffset = fetchOffset
    f.lastFetchLeaderLogEndOffset = leo
    f.lastFetchTimeMs = now
    this.maybeExpandIsr(p, replicaId)
    this.maybeIncrementHighWatermark(p)
  }

  private maybeExpandIsr(p: PartitionState, replicaId: number): void {
    if (p.pendingIsr !== null || p.isr.includes(replicaId)) return
    const f = p.followers.get(replicaId)
    if (f === undefined || f.logEndOffset < p.log.highWatermark) return
    this.proposeIsr(
      p,
      [...p.isr, replicaId].sort((a, b) => a - b)
    )
  }

  /** Drops followers that have not caught up within `replica.lag.time.max.ms`. Run periodically. */
  shrinkIsrs(): void {
    const now = this.now()
    for (const p of this.partitions.values()) {
      if (p.leader !== this.nodeId || p.pendingIsr !== null) continue
      const lagging = p.isr.filter((r) => {
        if (r === this.nodeId) return false
        const f = p.followers.get(r)
        return f === undefined || now - f.lastCaughtUpTimeMs > this.replicaLagTimeMaxMs
      })
      if (lagging.length > 0)
        this.proposeIsr(
          p,
          p.isr.filter((r) => !lagging.includes(r))
        )
    }
  }

  private proposeIsr(p: PartitionState, newIsr: ReadonlyArray<number>): void {
    const channel = this.isrChannel
    if (channel === undefined) return
    p.pendingIsr = newIsr
    const epoch = p.leaderEpoch
    channel
      .alterPartition(
        {
          topic: p.topic,
          topicId: p.topicId,
          partition: p.partition,
          leaderEpoch: p.leaderEpoch,
          partitionEpoch: p.partitionEpoch
        },
        newIsr
      )
      .then(
        (r) => {
          const current = this.get(p.topic, p.partition)
          if (current !== p || p.leaderEpoch !== epoch) return
          p.pendingIsr = null
          if (r.errorCode === 0 && r.registration !== null && r.registration.partitionEpoch >= p.partitionEpoch) {
            p.isr = r.registration.isr
            p.partitionEpoch = r.registration.partitionEpoch
            // A smaller ISR may complete a DeleteRecords waiting for a follower that left it.
            this.wake(key(p.topic, p.partition))
          }
          this.maybeIncrementHighWatermark(p)
        },
        () => {
          if (this.get(p.topic, p.partition) === p) p.pendingIsr = null
        }
      )
  }

  private readOnce(params: FetchParams): {
    results: FetchPartitionResult[]
    bytes: number
    throttledBytes: number
    anyError: boolean
  } {
    let budget = params.maxBytes
    let bytes = 0
    let throttledBytes = 0
    let anyError = false
    const follower = params.replicaId >= 0
    const results: FetchPartitionResult[] = []
    for (const rp of params.partitions) {
      const p = this.get(rp.topic, rp.partition)
      const base = {
        topic: rp.topic,
        partition: rp.partition,
        highWatermark: -1n,
        lastStableOffset: -1n,
        logStartOffset: -1n,
        divergingEpoch: null,
        abortedTransactions: null,
        records: EMPTY,
        currentLeader: NO_LEADER,
        mirrorLeaderEpoch: -1
      }
      if (p === undefined) {
        anyError = true
        results.push({ ...base, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION })
        continue
      }
      const leader = this.leaderHint(p)
      if (p.leader !== this.nodeId) {
        anyError = true
        results.push({ ...base, errorCode: E.NOT_LEADER_OR_FOLLOWER, currentLeader: leader })
        continue
      }
      if (rp.currentLeaderEpoch !== -1 && rp.currentLeaderEpoch !== p.leaderEpoch) {
        anyError = true
        results.push({
          ...base,
          errorCode: rp.currentLeaderEpoch < p.leaderEpoch ? E.FENCED_LEADER_EPOCH : E.UNKNOWN_LEADER_EPOCH,
          currentLeader: leader
        })
        continue
      }
      const log = p.log
      const positions = () => ({
        highWatermark: BigInt(log.highWatermark),
        lastStableOffset: BigInt(log.lastStableOffset),
        logStartOffset: BigInt(log.logStartOffset)
      })
      // The fetcher's last epoch must match ours at its fetch offset, else it holds a divergent suffix.
      const check = LeaderEpochChecks.checkLastFetchedEpoch(log, p.leaderEpoch, rp.fetchOffset, rp.lastFetchedEpoch)
      if (check._tag === "Diverging") {
        anyError = true
        results.push({
          ...base,
          ...positions(),
          errorCode: 0,
          divergingEpoch: { epoch: check.epoch, endOffset: BigInt(check.endOffset) }
        })
        continue
      }
      if (check._tag === "OffsetOutOfRange") {
        anyError = true
        results.push({ ...base, ...positions(), errorCode: E.OFFSET_OUT_OF_RANGE, currentLeader: leader })
        continue
      }
      if (follower) {
        const reported = rp.logStartOffset ?? -1
        this.updateFollower(p, params.replicaId, rp.fetchOffset, reported)
        // A follower behind the log start (DeleteRecords) learns it now, not after a long poll.
        if (reported >= 0 && reported < log.logStartOffset) anyError = true
      }
      const maxOffset = follower
        ? log.logEndOffset
        : params.isolationLevel === 1
          ? log.lastStableOffset
          : log.highWatermark
      // KIP-73: a follower out of the ISR of a throttled partition gets no records while the quota is exceeded.
      const throttled = follower && this.leaderQuota.isThrottled(rp.topic, rp.partition)
      const held = throttled && !p.isr.includes(params.replicaId) && this.leaderQuota.isQuotaExceeded()
      try {
        const limit = Math.max(0, Math.min(rp.partitionMaxBytes, budget))
        const records = held
          ? EMPTY
          : log.read(rp.fetchOffset, limit, { maxOffset, minOneMessage: bytes === 0 }).records
        budget -= records.length
        bytes += records.length
        if (throttled) throttledBytes += records.length
        const aborted =
          params.isolationLevel === 1 && !follower
            ? records.length > 0
              ? log
                  .abortedTransactions(rp.fetchOffset, maxOffset)
                  .map((a) => ({ producerId: BigInt(a.producerId), firstOffset: BigInt(a.firstOffset) }))
              : []
            : null
        const mirrorLeaderEpoch = LeaderEpochChecks.mirrorLeaderEpochAnswer(
          log,
          params.replicaId,
          rp.mirrorLeaderEpoch ?? -1,
          rp.mirrorTopic === true
        )
        results.push({
          ...base,
          ...positions(),
          errorCode: 0,
          abortedTransactions: aborted,
          records,
          mirrorLeaderEpoch
        })
      } catch (e) {
        anyError = true
        results.push({
          ...base,
          ...positions(),
          errorCode: this.failureCode("fetch", rp.topic, rp.partition, e),
          currentLeader: leader
        })
      }
    }
    return { results, bytes, throttledBytes, anyError }
  }

  /** A fetch with Kafka's long-poll semantics: answers once `minBytes` are available or `maxWaitMs` passed. */
  async fetch(params: FetchParams): Promise<FetchPartitionResult[]> {
    const deadline = this.now() + params.maxWaitMs
    for (;;) {
      const r = this.readOnce(params)
      const remaining = deadline - this.now()
      if (r.bytes >= params.minBytes || r.anyError || remaining <= 0 || params.partitions.length === 0) {
        this.leaderQuota.record(r.throttledBytes)
        return r.results
      }
      const waitStarted = this.now()
      await this.waitForAppend(params.partitions, remaining)
      params.onWait?.(this.now() - waitStarted)
    }
  }

  private waitForAppend(partitions: ReadonlyArray<FetchPartitionRequest>, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const keys = partitions.map((p) => key(p.topic, p.partition))
      let done = false
      const finish = () => {
        if (done) return
        done = true
        clearTimeout(timer)
        for (const k of keys) this.waiters.get(k)?.delete(finish)
        resolve()
      }
      const timer = setTimeout(finish, timeoutMs)
      for (const k of keys) this.addWaiter(k, finish)
    })
  }

  /**
   * A mirror fetcher appended source batches to a partition this broker leads, or LOG_TRUNCATION cut it:
   * the high watermark follows (over the ISR, like a produce) and waiting fetches wake.
   */
  mirrorAppended(topic: string, partition: number): void {
    const p = this.get(topic, partition)
    if (p === undefined || p.leader !== this.nodeId) return
    this.maybeIncrementHighWatermark(p)
    this.wake(key(topic, partition))
  }

  /**
   * The low watermark of a partition this broker leads: the smallest log start over the leader and every
   * follower whose broker is alive, in the ISR or not (one that has not reported its log start counts as
   * -1), as Kafka's: the answer never claims a deletion a live replica has not done.
   */
  private lowWatermark(p: PartitionState): number {
    let lw = p.log.logStartOffset
    for (const r of p.replicas) {
      if (r === this.nodeId || !this.isBrokerAlive(r)) continue
      lw = Math.min(lw, p.followers.get(r)?.logStartOffset ?? -1)
    }
    return lw
  }

  /**
   * DeleteRecords on one partition as its leader: moves the log start to `offset` (-1: the high watermark)
   * and answers with the low watermark once the log start of every live replica has reached it, or
   * REQUEST_TIMED_OUT after `timeoutMs`. `refusal` is asked once the partition is known to be led here
   * (e.g. READ_ONLY_TOPIC for a mirror topic); 0 lets the deletion go on. Internal topics answer
   * INVALID_TOPIC_EXCEPTION, an offset outside [0, high watermark] OFFSET_OUT_OF_RANGE.
   */
  deleteRecords(
    topic: string,
    partition: number,
    offset: number,
    timeoutMs: number,
    refusal: () => number = () => 0
  ): DeleteRecordsResult | Promise<DeleteRecordsResult> {
    const fail = (errorCode: number): DeleteRecordsResult => ({ errorCode, lowWatermark: -1n })
    const p = this.get(topic, partition)
    if (p === undefined) return fail(E.UNKNOWN_TOPIC_OR_PARTITION)
    if (p.internal) return fail(E.INVALID_TOPIC_EXCEPTION)
    if (p.leader !== this.nodeId) return fail(E.NOT_LEADER_OR_FOLLOWER)
    const refused = refusal()
    if (refused !== 0) return fail(refused)
    const required = offset === -1 ? p.log.highWatermark : offset
    if (required < 0) return fail(E.OFFSET_OUT_OF_RANGE)
    try {
      p.log.deleteRecordsBefore(required)
    } catch (e) {
      return fail(this.failureCode("delete records", topic, partition, e))
    }
    const k = key(topic, partition)
    // Followers waiting in a long poll answer now, with the new log start.
    this.wake(k)
    const initial = this.lowWatermark(p)
    if (initial >= required) return { errorCode: 0, lowWatermark: BigInt(initial) }
    const epoch = p.leaderEpoch
    return new Promise((resolve) => {
      const deadline = setTimeout(
        () => done({ errorCode: E.REQUEST_TIMED_OUT, lowWatermark: BigInt(initial) }),
        timeoutMs
      )
      const check = () => {
        const current = this.partitions.get(topic, partition)
        if (current === undefined) return done(fail(E.UNKNOWN_TOPIC_OR_PARTITION))
        if (current.leader !== this.nodeId || current.leaderEpoch !== epoch) return done(fail(E.NOT_LEADER_OR_FOLLOWER))
        const lw = this.lowWatermark(current)
        if (lw >= required) return done({ errorCode: 0, lowWatermark: BigInt(lw) })
        this.addWaiter(k, check)
      }
      const done = (r: DeleteRecordsResult) => {
        clearTimeout(deadline)
        this.waiters.get(k)?.delete(check)
        resolve(r)
      }
      this.addWaiter(k, check)
    })
  }

  /** Wakes fetches and producers waiting on a partition after a follower append or truncation. */
  notifyChanged(topic: string, partition: number): void {
    this.wake(key(topic, partition))
  }

  /** ListOffsets for one partition: -1 latest, -2 earliest, -3 max timestamp, else by timestamp. */
  listOffset(
    topic: string,
    partition: number,
    timestamp: number,
    isolationLevel: number,
    currentLeaderEpoch: number
  ): { errorCode: number; timestamp: bigint; offset: bigint; leaderEpoch: number } {
    const p = this.get(topic, partition)
    const none = { timestamp: -1n, offset: -1n, leaderEpoch: -1 }
    if (p === undefined) return { errorCode: E.UNKNOWN_TOPIC_OR_PARTITION, ...none }
    if (p.leader !== this.nodeId) return { errorCode: E.NOT_LEADER_OR_FOLLOWER, ...none }
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch !== p.leaderEpoch)
      return {
        errorCode: currentLeaderEpoch < p.leaderEpoch ? E.FENCED_LEADER_EPOCH : E.UNKNOWN_LEADER_EPOCH,
        ...none
      }
    const log = p.log
    if (timestamp === -1) {
      const offset = isolationLevel === 1 ? log.lastStableOffset : log.highWatermark
      return { errorCode: 0, timestamp: -1n, offset: BigInt(offset), leaderEpoch: log.latestEpoch() }
    }
    if (timestamp === -2) return { errorCode: 0, timestamp: -1n, offset: BigInt(log.logStartOffset), leaderEpoch: -1 }
    let found: PartitionLog.TimestampOffset | null
    try {
      found = log.offsetForTimestamp(timestamp)
    } catch (e) {
      return { errorCode: this.failureCode("list offsets", topic, partition, e), ...none }
    }
    if (found === null || found.offset >= log.highWatermark) return { errorCode: 0, ...none }
    return {
      errorCode: 0,
      timestamp: BigInt(found.timestamp),
      offset: BigInt(found.offset),
      leaderEpoch: found.leaderEpoch
    }
  }

  /** OffsetForLeaderEpoch on one partition (leaders answer; followers too when asked by a replica). */
  endOffsetForEpoch(
    topic: string,
    partition: number,
    leaderEpoch: number,
    currentLeaderEpoch: number
  ): { errorCode: number; leaderEpoch: number; endOffset: bigint } {
    const p = this.get(topic, partition)
    if (p === undefined) return { errorCode: E.UNKNOWN_TOPIC_OR_PARTITION, leaderEpoch: -1, endOffset: -1n }
    if (p.leader !== this.nodeId) return { errorCode: E.NOT_LEADER_OR_FOLLOWER, leaderEpoch: -1, endOffset: -1n }
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch !== p.leaderEpoch)
      return {
        errorCode: currentLeaderEpoch < p.leaderEpoch ? E.FENCED_LEADER_EPOCH : E.UNKNOWN_LEADER_EPOCH,
        leaderEpoch: -1,
        endOffset: -1n
      }
    const r = p.log.endOffsetForEpoch(leaderEpoch)
    return { errorCode: 0, leaderEpoch: r.epoch, endOffset: BigInt(r.endOffset) }
  }

  /** Applies time and size retention to the partitions of the topics `applies` accepts (default all). */
  enforceRetention(applies: (topic: string) => boolean = () => true): void {
    const now = this.now()
    for (const p of this.partitions.values()) if (applies(p.topic)) p.log.enforceRetention(now)
  }

  /**
   * Writes the high watermark of every hosted partition whose HW moved since its last checkpoint (Kafka's
   * `replica.high.watermark.checkpoint.interval.ms` task), so that a restart after a crash answers from it.
   */
  checkpointHighWatermarks(): void {
    for (const p of this.partitions.values())
      try {
        p.log.checkpointHighWatermark()
      } catch (e) {
        if (!(e instanceof StorageError.KafkaStorageError)) throw e
        this.storageErrors.report("high watermark checkpoint", p.topic, p.partition, e.message)
      }
  }

  /**
   * Closes the partition logs cleanly (flushed, marked as shut down cleanly) for at most `budgetMs`, so
   * that a broker hosting thousands of partitions stops in bounded time: the logs left once the budget
   * is spent stay as they are (their appends are written, only not synced) and are recovered at the
   * next start like after a crash. Returns how many were left.
   */
  close(budgetMs: number = CLOSE_BUDGET_MS): number {
    for (const ws of this.waiters.values()) for (const w of ws) w()
    this.waiters.clear()
    const deadline = this.now() + budgetMs
    let left = 0
    for (const p of this.partitions.values()) {
      if (this.now() > deadline) left++
      else p.log.close()
    }
    if (left === 0) this.store.closeAll()
    this.partitions.clear()
    return left
  }
}

/** How long a broker's shutdown spends closing its partition logs cleanly, at most (`ReplicaManager.close`). */
export const CLOSE_BUDGET_MS = 15_000
