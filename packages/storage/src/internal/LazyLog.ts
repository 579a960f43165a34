/**
 * A partition log that has never held a record and has no directory yet: it answers as the empty log it
 * is (offsets 0, no epochs, no producers) and becomes a real `Log`, directory and files included, on the
 * first call that changes it or reads more than the empty answer. A broker hosting thousands of idle
 * partitions (a mirror's topics before their data arrives) then keeps a few fields per partition instead
 * of segments, indexes and file handles. Once materialized it only delegates.
 */
import { Buffer } from "node:buffer"
import type {
  AbortedTransaction,
  ActiveProducer,
  AppendInfo,
  AppendOrigin,
  CleanableState,
  CleanPass,
  KeyOffsetMap,
  EpochEndOffset,
  LogConfig,
  OpenTransaction,
  PartitionLog,
  ReadInfo,
  ReadOptions,
  TimestampOffset
} from "../PartitionLog.js"
import type { Log } from "./Log.js"

const NO_RECORDS = Buffer.alloc(0)
const EMPTY_READ: ReadInfo = {
  records: NO_RECORDS,
  highWatermark: 0,
  logStartOffset: 0,
  lastStableOffset: 0,
  logEndOffset: 0
}
const NO_EPOCH: EpochEndOffset = { epoch: -1, endOffset: -1 }
const NONE: ReadonlyArray<never> = []

/** How a lazy log becomes real; one function for all of a store's lazy logs (no closure per log). */
export type Materialize = (topic: string, partition: number, topicId: string | undefined, config: LogConfig) => Log

export class LazyLog implements PartitionLog {
  private real: Log | undefined
  private closed = false

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly topicId: string | undefined,
    private config: LogConfig,
    private readonly materialize: Materialize
  ) {}

  /** The real log, created on first use. */
  private get log(): Log {
    if (this.real === undefined) {
      if (this.closed) throw new Error(`log ${this.topic}-${this.partition} is closed`)
      this.real = this.materialize(this.topic, this.partition, this.topicId, this.config)
    }
    return this.real
  }

  get isClosed(): boolean {
    return this.real?.isClosed ?? this.closed
  }
  get logStartOffset(): number {
    return this.real?.logStartOffset ?? 0
  }
  get logEndOffset(): number {
    return this.real?.logEndOffset ?? 0
  }
  get highWatermark(): number {
    return this.real?.highWatermark ?? 0
  }
  get lastStableOffset(): number {
    return this.real?.lastStableOffset ?? 0
  }
  get sizeInBytes(): number {
    return this.real?.sizeInBytes ?? 0
  }

  updateConfig(config: LogConfig): void {
    this.config = config
    this.real?.updateConfig(config)
  }

  appendAsLeader(records: Buffer, leaderEpoch: number, now: number, origin?: AppendOrigin): AppendInfo {
    return this.log.appendAsLeader(records, leaderEpoch, now, origin)
  }
  appendAsFollower(records: Buffer, now: number): AppendInfo {
    return this.log.appendAsFollower(records, now)
  }
  read(offset: number, maxBytes: number, opts?: ReadOptions): ReadInfo {
    // Reading an empty log at its end is the empty answer; anything else is the real log's business
    // (an out-of-range offset fails there the same way).
    if (this.real === undefined && offset === 0 && !this.closed) return EMPTY_READ
    return this.log.read(offset, maxBytes, opts)
  }
  updateHighWatermark(offset: number): void {
    // Clamped to [0, 0] while empty: nothing to record.
    this.real?.updateHighWatermark(offset)
  }
  truncateTo(offset: number): void {
    if (this.real === undefined && offset >= 0) return
    this.log.truncateTo(offset)
  }
  truncateFullyAndStartAt(offset: number): void {
    this.log.truncateFullyAndStartAt(offset)
  }
  latestEpoch(): number {
    return this.real?.latestEpoch() ?? -1
  }
  endOffsetForEpoch(epoch: number): EpochEndOffset {
    return this.real?.endOffsetForEpoch(epoch) ?? NO_EPOCH
  }
  offsetForTimestamp(timestamp: number): TimestampOffset | null {
    return this.log.offsetForTimestamp(timestamp)
  }
  openTransactions(): ReadonlyArray<OpenTransaction> {
    return this.real?.openTransactions() ?? NONE
  }

  activeProducers(): ReadonlyArray<ActiveProducer> {
    return this.real?.activeProducers() ?? NONE
  }
  highestProducerId(): bigint {
    return this.real?.highestProducerId() ?? -1n
  }
  abortedTransactions(fetchOffset: number, upperOffset: number): ReadonlyArray<AbortedTransaction> {
    return this.real?.abortedTransactions(fetchOffset, upperOffset) ?? NONE
  }
  deleteRecordsBefore(offset: number): void {
    if (this.real === undefined && offset <= 0) return
    this.log.deleteRecordsBefore(offset)
  }
  cleanableState(now: number): CleanableState | undefined {
    return this.real?.cleanableState(now)
  }

  beginClean(now: number, map: KeyOffsetMap): CleanPass | undefined {
    return this.real?.beginClean(now, map)
  }

  enforceRetention(now: number): number {
    return this.real?.enforceRetention(now) ?? 0
  }
  checkpointHighWatermark(): void {
    this.real?.checkpointHighWatermark()
  }
  flush(): void {
    this.real?.flush()
  }
  close(): void {
    this.closed = true
    this.real?.close()
  }
}
