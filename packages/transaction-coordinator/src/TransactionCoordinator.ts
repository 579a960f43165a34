/**
 * The transaction coordinators of one broker, on the coordinator runtime: each `__transaction_state`
 * partition it leads is a shard replayed from the partition at its leader epoch. Requests are decided by
 * `TransactionControl` on the shard and answered once their records committed. Beside the shards runs
 * what Kafka's TransactionMarkerChannelManager does: for every transaction in PrepareCommit /
 * PrepareAbort (written here, or found when a shard loads) the markers go to each partition's leader
 * (one WriteTxnMarkers per leader broker, with the shard's leader epoch as coordinator epoch), retried
 * until acked, then CompleteCommit / CompleteAbort is written. Per shard, a timer on the runtime's
 * `Clock` aborts timed-out transactions and tombstones expired ids.
 *
 * It knows nothing of the wire handlers or sockets: partition leaders, marker sending and producer ids
 * are ports (`Options`).
 */
import {
  CoordinatorResult,
  CoordinatorRuntime,
  type CoordinatorLog,
  type CoordinatorRuntimeError
} from "@clustermirror/coordinator-runtime"
import { FanOut } from "@clustermirror/client"
import { Errors, Hashing, type WriteTxnMarkers } from "@clustermirror/protocol"
import { Clock, Duration, Effect, Either, Exit, Runtime, Scope } from "effect"
import * as TransactionControl from "./TransactionControl.js"
import type { NeedsProducerId, Refused } from "./TransactionCoordinatorError.js"
import type * as TransactionRecords from "./TransactionRecords.js"

const E = Errors.ErrorCode

export interface TransactionConfig {
  /** `transaction.max.timeout.ms` (default 900000): a longer `transaction.timeout.ms` is refused. */
  readonly transactionMaxTimeoutMs: number
  /** `transaction.abort.timed.out.transaction.cleanup.interval.ms` (default 10000). */
  readonly abortTimedOutTransactionCleanupIntervalMs: number
  /** `transactional.id.expiration.ms` (default 604800000). */
  readonly transactionalIdExpirationMs: number
  /** How long a marker that could not be written waits before it is sent again (default 100). */
  readonly markerRetryBackoffMs: number
  /** How long a WriteTxnMarkers request may take before its partitions are sent again (default 30000). */
  readonly markerRequestTimeoutMs: number
}

export const defaultConfig: TransactionConfig = {
  transactionMaxTimeoutMs: 900_000,
  abortTimedOutTransactionCleanupIntervalMs: 10_000,
  transactionalIdExpirationMs: 604_800_000,
  markerRetryBackoffMs: 100,
  markerRequestTimeoutMs: 30_000
}

export type MarkersRequest = WriteTxnMarkers.Request
export type MarkersResponse = {
  readonly markers: ReadonlyArray<{
    readonly producerId: bigint
    readonly topics: ReadonlyArray<{
      readonly name: string
      readonly partitions: ReadonlyArray<{ readonly partitionIndex: number; readonly errorCode: number }>
    }>
  }>
}

export interface Options {
  /** The `__transaction_state` partitions as a coordinator log. */
  readonly log: CoordinatorLog.CoordinatorLog<TransactionRecords.TransactionLogRecord>
  /** The number of `__transaction_state` partitions (0 while the topic does not exist). */
  readonly partitionCount: () => number
  /** The leader of a partition: -1 while it has none, undefined when the partition does not exist. */
  readonly leaderOf: (topic: string, partition: number) => number | undefined
  /** Sends WriteTxnMarkers to a broker (rejects on a connection failure). */
  readonly sendMarkers: (brokerId: number, request: MarkersRequest) => Promise<MarkersResponse>
  readonly allocateProducerId: () => Promise<bigint>
  readonly config?: () => Partial<TransactionConfig>
  /** The Effect runtime whose `Clock` timers and backoffs run on (`TestClock` in tests). */
  readonly runtime?: Runtime.Runtime<never>
  readonly logLine?: (line: string) => void
}

/** The Kafka error code of a runtime failure, as Kafka's transaction state manager maps append errors. */
export const errorCodeOf = (e: Refused | CoordinatorRuntimeError.WriteError): number => {
  switch (e._tag) {
    case "Refused":
      return e.errorCode
    case "NotCoordinator":
    case "CoordinatorLoadInProgress":
      return e.errorCode
    case "AppendFailed":
      return e.errorCode === E.NOT_LEADER_OR_FOLLOWER || e.errorCode === E.KAFKA_STORAGE_ERROR
        ? E.NOT_COORDINATOR
        : e.errorCode === E.MESSAGE_TOO_LARGE || e.errorCode === E.RECORD_LIST_TOO_LARGE
          ? E.UNKNOWN_SERVER_ERROR
          : E.COORDINATOR_NOT_AVAILABLE
  }
}

/** Marker errors after which this coordinator must stop: another one took over, or the producer moved on. */
const FATAL_MARKER_ERRORS: ReadonlySet<number> = new Set([E.TRANSACTION_COORDINATOR_FENCED, E.INVALID_PRODUCER_EPOCH])

const SWEEP_TIMER = "abort-timed-out-and-expire"

export class TransactionCoordinator {
  private readonly scope: Scope.CloseableScope
  private readonly rt: CoordinatorRuntime.CoordinatorRuntime<
    TransactionControl.State,
    TransactionRecords.TransactionLogRecord
  >
  private readonly runSync: <A, E>(effect: Effect.Effect<A, E>) => A
  private readonly runPromise: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  /** Leader epoch of each shard this broker leads (loaded or loading). */
  private readonly epochs = new Map<number, number>()
  /** Marker senders running, by `partition/transactionalId/epoch`. */
  private readonly sending = new Map<string, Promise<void>>()
  private closed = false

  constructor(private readonly options: Options) {
    const runtime = options.runtime ?? Runtime.defaultRuntime
    this.runSync = Runtime.runSync(runtime)
    this.runPromise = Runtime.runPromise(runtime)
    this.scope = this.runSync(Scope.make())
    this.rt = this.runSync(Scope.extend(CoordinatorRuntime.make(TransactionControl.shardDef, options.log), this.scope))
  }

  private config(): TransactionConfig {
    return { ...defaultConfig, ...this.options.config?.() }
  }

  private say(line: string): void {
    this.options.logLine?.(line)
  }

  /** The `__transaction_state` partition of a transactional id: `abs(hashCode) % partitions`, as Kafka. */
  partitionFor(transactionalId: string): number {
    return Hashing.groupCoordinatorPartition(transactionalId, Math.max(1, this.options.partitionCount()))
  }

  /**
   * Called with every partition of `__transaction_state`: whether this broker now leads it, at which
   * epoch. A new epoch reloads the shard; once loaded, its Prepare* transactions get their markers and its
   * sweep timer is armed. Resolves when the load is done (or failed: the partition then has no coordinator).
   */
  onLeadership(partition: number, leader: boolean, leaderEpoch: number): Promise<void> {
    if (this.closed) return Promise.resolve()
    if (leader && this.epochs.get(partition) === leaderEpoch) return Promise.resolve()
    if (!leader) {
      this.epochs.delete(partition)
      return this.runPromise(Effect.ignore(this.rt.onLeadership(partition, null)))
    }
    this.epochs.set(partition, leaderEpoch)
    return this.runPromise(this.rt.onLeadership(partition, leaderEpoch)).then(
      () => {
        if (this.epochs.get(partition) !== leaderEpoch) return
        this.armSweep(partition)
        const state = this.committed(partition)
        if (state !== undefined)
          for (const p of TransactionControl.pendingMarkers(state)) this.startMarkers(partition, leaderEpoch, p)
      },
      (e: unknown) => {
        if (this.epochs.get(partition) === leaderEpoch) this.epochs.delete(partition)
        this.say(`__transaction_state-${partition} not loaded: ${e instanceof Error ? e.message : String(e)}`)
      }
    )
  }

  private committed(partition: number): TransactionControl.State | undefined {
    const read = this.runSync(Effect.either(this.rt.read(partition, (s) => s)))
    return Either.isRight(read) ? read.right : undefined
  }

  private armSweep(partition: number): void {
    const interval = this.config().abortTimedOutTransactionCleanupIntervalMs
    this.runSync(
      Effect.ignore(
        this.rt.scheduleTimer(partition, SWEEP_TIMER, interval, () => {
          // The timer's op writes nothing itself: the sweep's writes go through `write`, behind it.
          void this.sweep(partition)
          return Either.right(CoordinatorResult.response(undefined))
        })
      )
    )
  }

  /** Aborts the timed-out transactions of a shard, tombstones its expired ids, and re-arms the timer. */
  private async sweep(partition: number): Promise<void> {
    const epoch = this.epochs.get(partition)
    if (epoch === undefined || this.closed) return
    const aborted = await this.write(partition, "abortTimedOut", TransactionControl.abortTimedOut)
    if (Either.isRight(aborted) && aborted.right.length > 0) {
      this.say(`__transaction_state-${partition}: aborting timed-out transactions ${aborted.right.join(", ")}`)
      this.kick(partition, aborted.right)
    }
    const expired = await this.write(
      partition,
      "expireTransactionalIds",
      TransactionControl.expireTransactionalIds(this.config().transactionalIdExpirationMs)
    )
    if (Either.isRight(expired) && expired.right.length > 0)
      this.say(`__transaction_state-${partition}: expired transactional ids ${expired.right.join(", ")}`)
    if (this.epochs.get(partition) === epoch) this.armSweep(partition)
  }

  private write<A, Err>(
    partition: number,
    name: string,
    decide: (
      state: TransactionControl.State,
      now: number
    ) => Either.Either<CoordinatorResult.CoordinatorResult<TransactionRecords.TransactionLogRecord, A>, Err>
  ): Promise<Either.Either<A, Err | CoordinatorRuntimeError.WriteError>> {
    return this.runPromise(Effect.either(this.rt.write(partition, name, decide)))
  }

  /** Starts the markers of the given ids' Prepare states, where a write just left them there. */
  private kick(partition: number, transactionalIds: ReadonlyArray<string>): void {
    const epoch = this.epochs.get(partition)
    const state = this.committed(partition)
    if (epoch === undefined || state === undefined) return
    for (const id of transactionalIds) {
      const p = TransactionControl.pendingMarkersOf(state, id)
      if (p !== undefined) this.startMarkers(partition, epoch, p)
    }
  }

  private startMarkers(partition: number, leaderEpoch: number, pending: TransactionControl.PendingMarkers): void {
    const key = `${partition}/${pending.transactionalId}/${pending.producerId}/${pending.producerEpoch}/${leaderEpoch}`
    if (this.sending.has(key)) return
    const run = this.sendAll(partition, leaderEpoch, pending)
      .catch((e: unknown) =>
        this.say(`markers of ${pending.transactionalId}: ${e instanceof Error ? e.message : String(e)}`)
      )
      .finally(() => this.sending.delete(key))
    this.sending.set(key, run)
  }

  /** Sends the markers of one transaction until every partition acked, then writes its completion. */
  private async sendAll(
    partition: number,
    leaderEpoch: number,
    pending: TransactionControl.PendingMarkers
  ): Promise<void> {
    const remaining = new Map<string, { topic: string; partition: number }>()
    for (const t of pending.partitions)
      for (const p of t.partitions) remaining.set(`${t.topic}\u0000${p}`, { topic: t.topic, partition: p })
    const current = () => !this.closed && this.epochs.get(partition) === leaderEpoch
    while (remaining.size > 0 && current()) {
      const byLeader = new Map<number, Array<{ topic: string; partition: number }>>()
      for (const [k, tp] of remaining) {
        const leader = this.options.leaderOf(tp.topic, tp.partition)
        // A deleted partition needs no marker (as Kafka skips partitions of deleted topics).
        if (leader === undefined) remaining.delete(k)
        else if (leader >= 0) {
          let list = byLeader.get(leader)
          if (list === undefined) byLeader.set(leader, (list = []))
          list.push(tp)
        }
      }
      const requestOf = (tps: ReadonlyArray<{ topic: string; partition: number }>): MarkersRequest => {
        const topics = new Map<string, Array<number>>()
        for (const tp of tps) topics.set(tp.topic, [...(topics.get(tp.topic) ?? []), tp.partition])
        return {
          markers: [
            {
              producerId: pending.producerId,
              producerEpoch: pending.producerEpoch,
              transactionResult: pending.committed,
              topics: [...topics].map(([name, partitionIndexes]) => ({ name, partitionIndexes })),
              coordinatorEpoch: leaderEpoch
            }
          ]
        }
      }
      // One request per leader broker; a broker that fails or times out keeps its partitions for the next round.
      const outcomes = await this.runPromise(
        FanOut.forEachBroker(
          byLeader.keys(),
          (brokerId) =>
            Effect.tryPromise(() => this.options.sendMarkers(brokerId, requestOf(byLeader.get(brokerId) ?? []))),
          (all) => all,
          { timeoutMs: this.config().markerRequestTimeoutMs, describe: (b) => `broker ${b}` }
        )
      )
      let fatal: number | undefined
      for (const o of outcomes) {
        if (Either.isLeft(o.result)) continue
        for (const m of o.result.right.markers)
          for (const t of m.topics)
            for (const p of t.partitions) {
              const k = `${t.name}\u0000${p.partitionIndex}`
              if (p.errorCode === 0) remaining.delete(k)
              else if (FATAL_MARKER_ERRORS.has(p.errorCode)) fatal = p.errorCode
              else if (
                p.errorCode === E.UNKNOWN_TOPIC_OR_PARTITION &&
                this.options.leaderOf(t.name, p.partitionIndex) === undefined
              )
                remaining.delete(k)
            }
      }
      if (fatal !== undefined) {
        this.say(
          `markers of ${pending.transactionalId} stopped: ${Errors.message(fatal)} (another coordinator or epoch took over)`
        )
        return
      }
      if (remaining.size > 0 && current())
        await this.runPromise(Effect.sleep(Duration.millis(this.config().markerRetryBackoffMs)))
    }
    if (!current()) return
    await this.write(partition, "completeTransaction", TransactionControl.completeTransaction(pending))
  }

  /** Settles once every marker sender running now finished (tests, shutdown). */
  async markersIdle(): Promise<void> {
    for (let running = [...this.sending.values()]; running.length > 0; running = [...this.sending.values()])
      for (const r of running) await r
  }

  // -------------------------------------------------------------------------------------------------
  // Requests

  /** InitProducerId with a transactional id; `errorCode` is PRODUCER_FENCED where a version needs it mapped. */
  async initProducerId(input: {
    readonly transactionalId: string
    readonly transactionTimeoutMs: number
    readonly producerId: bigint
    readonly producerEpoch: number
  }): Promise<TransactionControl.InitProducerIdResult> {
    const partition = this.partitionFor(input.transactionalId)
    let newProducerId: bigint | null = null
    for (;;) {
      const decided: Either.Either<
        TransactionControl.InitProducerIdResult,
        Refused | NeedsProducerId | CoordinatorRuntimeError.WriteError
      > = await this.write(
        partition,
        "initProducerId",
        TransactionControl.initProducerId({
          ...input,
          maxTimeoutMs: this.config().transactionMaxTimeoutMs,
          newProducerId
        })
      )
      if (Either.isRight(decided)) {
        if (decided.right.errorCode === E.CONCURRENT_TRANSACTIONS) this.kick(partition, [input.transactionalId])
        return decided.right
      }
      const e = decided.left
      if (e._tag === "NeedsProducerId" && newProducerId === null) {
        newProducerId = await this.options.allocateProducerId()
        continue
      }
      return {
        errorCode: e._tag === "NeedsProducerId" ? E.UNKNOWN_SERVER_ERROR : errorCodeOf(e),
        producerId: -1n,
        producerEpoch: -1
      }
    }
  }

  /** AddPartitionsToTxn / AddOffsetsToTxn: the error code of the whole transaction's partitions. */
  async addPartitions(input: TransactionControl.AddPartitionsInput): Promise<number> {
    const r = await this.write(
      this.partitionFor(input.transactionalId),
      "addPartitions",
      TransactionControl.addPartitions(input)
    )
    return Either.isRight(r) ? 0 : errorCodeOf(r.left)
  }

  /** KIP-890 verification: per partition, whether it is in the producer's ongoing transaction. */
  verifyPartitions(
    input: TransactionControl.AddPartitionsInput
  ): ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly errorCode: number }> {
    const read = this.runSync(
      Effect.either(
        this.rt.read(this.partitionFor(input.transactionalId), (s) => TransactionControl.verifyPartitions(s, input))
      )
    )
    if (Either.isRight(read)) return read.right
    const errorCode = read.left.errorCode
    return input.partitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition, errorCode })))
  }

  /** EndTxn: answered once PrepareCommit / PrepareAbort is written; the markers follow in the background. */
  async endTxn(
    input: TransactionControl.EndTxnInput
  ): Promise<{ readonly errorCode: number; readonly producerId: bigint; readonly producerEpoch: number }> {
    const partition = this.partitionFor(input.transactionalId)
    const r = await this.write(partition, "endTxn", TransactionControl.endTxn(input))
    if (Either.isLeft(r)) return { errorCode: errorCodeOf(r.left), producerId: -1n, producerEpoch: -1 }
    if (r.right.prepared) this.kick(partition, [input.transactionalId])
    return { errorCode: 0, producerId: r.right.producerId, producerEpoch: r.right.producerEpoch }
  }

  /** ListTransactions over every shard loaded here. */
  listTransactions(filters: {
    readonly states: ReadonlyArray<string>
    readonly producerIds: ReadonlyArray<bigint>
    readonly durationMs: number
  }): ReadonlyArray<TransactionControl.ListedTransaction> {
    const now = this.runSync(Clock.currentTimeMillis)
    const shards = this.runSync(this.rt.shards())
    return shards.flatMap((s) => TransactionControl.listTransactions(s.state, filters, now))
  }

  /** DescribeTransactions of one id: its metadata, or the error code (NOT_COORDINATOR, TRANSACTIONAL_ID_NOT_FOUND). */
  describe(transactionalId: string): {
    readonly errorCode: number
    readonly metadata: TransactionRecords.TransactionLogValue | undefined
  } {
    const read = this.runSync(
      Effect.either(this.rt.read(this.partitionFor(transactionalId), (s) => TransactionControl.get(s, transactionalId)))
    )
    if (Either.isLeft(read)) return { errorCode: read.left.errorCode, metadata: undefined }
    return read.right === undefined
      ? { errorCode: E.TRANSACTIONAL_ID_NOT_FOUND, metadata: undefined }
      : { errorCode: 0, metadata: read.right }
  }

  async close(): Promise<void> {
    this.closed = true
    this.epochs.clear()
    await this.runPromise(Scope.close(this.scope, Exit.void))
  }
}
