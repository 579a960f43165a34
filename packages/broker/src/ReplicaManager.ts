/**
 * ReplicaManager: the partitions this broker hosts, and produce/fetch/list-offsets on them.
 *
 * Owns the partition logs (through the storage port), leader epochs, the high watermark, and delayed
 * fetches (long poll until `minBytes` or `maxWaitMs`). Record data moves as bytes: batches are validated
 * by their headers and CRC in storage, never decoded record by record here. Must not decode wire
 * requests: handlers translate.
 */
import { Errors } from "@clustermirror/protocol"
import type { PartitionLog, PartitionLogStore } from "@clustermirror/storage"

export interface PartitionState {
  readonly topic: string
  readonly partition: number
  readonly topicId: string
  leaderEpoch: number
  readonly log: PartitionLog.PartitionLog
  readonly internal: boolean
}

export interface ProduceResult {
  readonly errorCode: number
  readonly baseOffset: bigint
  readonly logAppendTimeMs: bigint
  readonly logStartOffset: bigint
  readonly errorMessage: string | null
}

export interface FetchPartitionRequest {
  readonly topic: string
  readonly partition: number
  readonly fetchOffset: number
  readonly currentLeaderEpoch: number
  readonly partitionMaxBytes: number
}

export interface FetchPartitionResult {
  readonly topic: string
  readonly partition: number
  readonly errorCode: number
  readonly highWatermark: bigint
  readonly lastStableOffset: bigint
  readonly logStartOffset: bigint
  readonly abortedTransactions: ReadonlyArray<{ producerId: bigint; firstOffset: bigint }> | null
  readonly records: Buffer
  readonly currentLeader: { leaderId: number; leaderEpoch: number }
}

export interface FetchParams {
  readonly maxWaitMs: number
  readonly minBytes: number
  readonly maxBytes: number
  /** 0 read_uncommitted, 1 read_committed */
  readonly isolationLevel: number
  readonly partitions: ReadonlyArray<FetchPartitionRequest>
}

const EMPTY = Buffer.alloc(0)

const errorCodeOf = (e: unknown): number => {
  if (typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number") return e.errorCode
  throw e
}

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`

export class ReplicaManager {
  private readonly partitions = new Map<string, PartitionState>()
  private readonly waiters = new Map<string, Set<() => void>>()

  constructor(
    private readonly store: PartitionLogStore.PartitionLogStoreService,
    readonly nodeId: number,
    private readonly now: () => number = Date.now
  ) {}

  get(topic: string, partition: number): PartitionState | undefined {
    return this.partitions.get(key(topic, partition))
  }

  all(): IterableIterator<PartitionState> {
    return this.partitions.values()
  }

  /** Opens (or re-opens) a partition this broker leads. Idempotent. */
  becomeLeader(
    topic: string,
    partition: number,
    topicId: string,
    leaderEpoch: number,
    config: PartitionLog.LogConfig,
    internal: boolean,
    soleReplica: boolean
  ): PartitionState {
    const k = key(topic, partition)
    const existing = this.partitions.get(k)
    if (existing !== undefined) {
      existing.leaderEpoch = Math.max(existing.leaderEpoch, leaderEpoch)
      return existing
    }
    const log = this.store.open(topic, partition, config, topicId)
    // A leader whose ISR is itself has every appended offset committed: after a crash the
    // checkpointed high watermark may lag the recovered log end.
    if (soleReplica) log.updateHighWatermark(log.logEndOffset)
    const state: PartitionState = { topic, partition, topicId, leaderEpoch, log, internal }
    this.partitions.set(k, state)
    return state
  }

  /** Closes and deletes a partition's log. */
  deletePartition(topic: string, partition: number): void {
    const k = key(topic, partition)
    if (!this.partitions.delete(k)) return
    this.store.delete(topic, partition)
    this.wake(k)
  }

  /** Appends a produce request's batches as leader. Single-replica: the HW follows the log end. */
  appendAsLeader(topic: string, partition: number, records: Buffer | null, fromClient: boolean): ProduceResult {
    const p = this.get(topic, partition)
    const fail = (errorCode: number, errorMessage: string | null = null): ProduceResult => ({
      errorCode,
      baseOffset: -1n,
      logAppendTimeMs: -1n,
      logStartOffset: -1n,
      errorMessage
    })
    if (p === undefined) return fail(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION!)
    if (fromClient && p.internal)
      return fail(Errors.ErrorCode.INVALID_TOPIC_EXCEPTION!, `cannot produce to internal topic ${topic}`)
    if (records === null || records.length === 0) return fail(Errors.ErrorCode.CORRUPT_MESSAGE!, "empty records")
    try {
      const info = p.log.appendAsLeader(records, p.leaderEpoch, this.now())
      p.log.updateHighWatermark(p.log.logEndOffset)
      this.wake(key(topic, partition))
      return {
        errorCode: 0,
        baseOffset: BigInt(info.firstOffset),
        logAppendTimeMs: BigInt(info.logAppendTime),
        logStartOffset: BigInt(info.logStartOffset),
        errorMessage: null
      }
    } catch (e) {
      return fail(errorCodeOf(e), e instanceof Error ? e.message : null)
    }
  }

  private wake(k: string): void {
    const ws = this.waiters.get(k)
    if (ws === undefined) return
    this.waiters.delete(k)
    for (const w of ws) w()
  }

  private readOnce(params: FetchParams): { results: FetchPartitionResult[]; bytes: number; anyError: boolean } {
    let budget = params.maxBytes
    let bytes = 0
    let anyError = false
    const results: FetchPartitionResult[] = []
    for (const rp of params.partitions) {
      const p = this.get(rp.topic, rp.partition)
      const base = {
        topic: rp.topic,
        partition: rp.partition,
        highWatermark: -1n,
        lastStableOffset: -1n,
        logStartOffset: -1n,
        abortedTransactions: null,
        records: EMPTY,
        currentLeader: { leaderId: -1, leaderEpoch: -1 }
      }
      if (p === undefined) {
        anyError = true
        results.push({ ...base, errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION! })
        continue
      }
      const log = p.log
      const leader = { leaderId: this.nodeId, leaderEpoch: p.leaderEpoch }
      const hw = BigInt(log.highWatermark)
      const lso = BigInt(log.lastStableOffset)
      const lso0 = BigInt(log.logStartOffset)
      if (rp.currentLeaderEpoch !== -1 && rp.currentLeaderEpoch !== p.leaderEpoch) {
        anyError = true
        results.push({
          ...base,
          errorCode:
            rp.currentLeaderEpoch < p.leaderEpoch
              ? Errors.ErrorCode.FENCED_LEADER_EPOCH!
              : Errors.ErrorCode.UNKNOWN_LEADER_EPOCH!,
          currentLeader: leader
        })
        continue
      }
      const maxOffset = params.isolationLevel === 1 ? log.lastStableOffset : log.highWatermark
      try {
        const limit = Math.max(0, Math.min(rp.partitionMaxBytes, budget))
        const info = log.read(rp.fetchOffset, limit, { maxOffset, minOneMessage: bytes === 0 })
        const records = info.records
        budget -= records.length
        bytes += records.length
        const aborted =
          params.isolationLevel === 1 && records.length > 0
            ? log
                .abortedTransactions(rp.fetchOffset, maxOffset)
                .map((a) => ({ producerId: BigInt(a.producerId), firstOffset: BigInt(a.firstOffset) }))
            : params.isolationLevel === 1
              ? []
              : null
        results.push({
          ...base,
          errorCode: 0,
          highWatermark: hw,
          lastStableOffset: lso,
          logStartOffset: lso0,
          abortedTransactions: aborted,
          records,
          currentLeader: leader
        })
      } catch (e) {
        anyError = true
        results.push({
          ...base,
          errorCode: errorCodeOf(e),
          highWatermark: hw,
          lastStableOffset: lso,
          logStartOffset: lso0,
          currentLeader: leader
        })
      }
    }
    return { results, bytes, anyError }
  }

  /** A fetch with Kafka's long-poll semantics: answers once `minBytes` are available or `maxWaitMs` passed. */
  async fetch(params: FetchParams): Promise<FetchPartitionResult[]> {
    const deadline = this.now() + params.maxWaitMs
    for (;;) {
      const r = this.readOnce(params)
      const remaining = deadline - this.now()
      if (r.bytes >= params.minBytes || r.anyError || remaining <= 0 || params.partitions.length === 0) return r.results
      await this.waitForAppend(params.partitions, remaining)
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
      for (const k of keys) {
        let set = this.waiters.get(k)
        if (set === undefined) this.waiters.set(k, (set = new Set()))
        set.add(finish)
      }
    })
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
    if (p === undefined) return { errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION!, ...none }
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch !== p.leaderEpoch)
      return {
        errorCode:
          currentLeaderEpoch < p.leaderEpoch
            ? Errors.ErrorCode.FENCED_LEADER_EPOCH!
            : Errors.ErrorCode.UNKNOWN_LEADER_EPOCH!,
        ...none
      }
    const log = p.log
    if (timestamp === -1) {
      const offset = isolationLevel === 1 ? log.lastStableOffset : log.highWatermark
      return { errorCode: 0, timestamp: -1n, offset: BigInt(offset), leaderEpoch: log.latestEpoch() }
    }
    if (timestamp === -2) {
      return { errorCode: 0, timestamp: -1n, offset: BigInt(log.logStartOffset), leaderEpoch: -1 }
    }
    const found = log.offsetForTimestamp(timestamp)
    if (found === null || found.offset >= log.highWatermark) return { errorCode: 0, ...none }
    return {
      errorCode: 0,
      timestamp: BigInt(found.timestamp),
      offset: BigInt(found.offset),
      leaderEpoch: found.leaderEpoch
    }
  }

  /** OffsetForLeaderEpoch on one partition. */
  endOffsetForEpoch(
    topic: string,
    partition: number,
    leaderEpoch: number,
    currentLeaderEpoch: number
  ): { errorCode: number; leaderEpoch: number; endOffset: bigint } {
    const p = this.get(topic, partition)
    if (p === undefined)
      return { errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION!, leaderEpoch: -1, endOffset: -1n }
    if (currentLeaderEpoch !== -1 && currentLeaderEpoch !== p.leaderEpoch)
      return {
        errorCode:
          currentLeaderEpoch < p.leaderEpoch
            ? Errors.ErrorCode.FENCED_LEADER_EPOCH!
            : Errors.ErrorCode.UNKNOWN_LEADER_EPOCH!,
        leaderEpoch: -1,
        endOffset: -1n
      }
    const r = p.log.endOffsetForEpoch(leaderEpoch)
    return { errorCode: 0, leaderEpoch: r.epoch, endOffset: BigInt(r.endOffset) }
  }

  enforceRetention(): void {
    const now = this.now()
    for (const p of this.partitions.values()) p.log.enforceRetention(now)
  }

  close(): void {
    for (const ws of this.waiters.values()) for (const w of ws) w()
    this.waiters.clear()
    this.store.closeAll()
    this.partitions.clear()
  }
}
