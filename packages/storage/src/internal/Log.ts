/**
 * The partition log implementation, written once against `Volume` so that the file and the memory layers
 * share every rule. Hot paths work on buffers and batch headers; record data is never kept in the heap.
 */
import { Buffer } from "node:buffer"
import { Crc32c, RecordBatch } from "@clustermirror/protocol"
import {
  type AbortedTransaction,
  type ActiveProducer,
  type CleanableState,
  type CleanPass as CleanPassPort,
  type KeyOffsetMap,
  type OpenTransaction,
  type AppendInfo,
  type AppendOrigin,
  EARLIEST_LOCAL_TIMESTAMP,
  EARLIEST_TIMESTAMP,
  type EpochEndOffset,
  LATEST_TIMESTAMP,
  type LogConfig,
  type LogEvents,
  MAX_TIMESTAMP,
  type PartitionLog,
  type ReadInfo,
  type ReadOptions,
  type RecoveryTruncation,
  type TimestampOffset
} from "../PartitionLog.js"
import {
  corrupt,
  InvalidOffsetError,
  invalidRecord,
  KafkaStorageError,
  OffsetOutOfRangeError,
  RecordTooLargeError
} from "../StorageError.js"
import { controlInfo, crcValid, readRange, scan } from "./BatchScan.js"
import { CLEANER_CHECKPOINT, CleanPass, type CleanerHost, cleanableState, recoverSwap } from "./Cleaner.js"
import { OffsetMap } from "./OffsetMap.js"
import { LeaderEpochCache } from "./LeaderEpochCache.js"
import { type AbortedTxn, type BatchInfo, type Pending, ProducerState } from "./ProducerState.js"
import { LOG_SUFFIX, Segment, fileName } from "./Segment.js"
import type { Volume } from "./Volume.js"

export const EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
/** logStartOffset, recoveryPoint and highWatermark, rewritten atomically. */
export const STATE_CHECKPOINT = "log-state-checkpoint"
/** Present only between a clean close and the next open; holds the producer state snapshot. */
export const CLEAN_SHUTDOWN = "clean-shutdown"

const INT32_MAX = 2147483647
const TIMESTAMP_TYPE_BIT = RecordBatch.TIMESTAMP_TYPE_MASK

const NOT_CONTROL = { type: -1, coordinatorEpoch: -1 }

const batchInfo = (b: Buffer, at: number, available: number): BatchInfo => {
  const control = RecordBatch.isControl(b, at)
  const record = control ? controlInfo(b, at, available) : NOT_CONTROL
  return {
    producerId: RecordBatch.producerId(b, at),
    producerEpoch: RecordBatch.producerEpoch(b, at),
    baseSequence: RecordBatch.baseSequence(b, at),
    baseOffset: RecordBatch.baseOffset(b, at),
    lastOffsetDelta: RecordBatch.lastOffsetDelta(b, at),
    isTransactional: RecordBatch.isTransactional(b, at),
    isControl: control,
    controlType: record.type,
    coordinatorEpoch: record.coordinatorEpoch,
    maxTimestamp: RecordBatch.maxTimestamp(b, at)
  }
}

/**
 * Splits and structurally validates an append; every batch must be complete, magic 2, with a valid CRC.
 * Only replicated batches may be empty: a compacted leader keeps an idempotent producer's last batch, emptied.
 */
const validateBatches = (records: Buffer, allowEmpty = false): ReadonlyArray<RecordBatch.BatchRef> => {
  const { batches, rest } = RecordBatch.split(records)
  if (rest !== records.length) throw corrupt(`incomplete or malformed batch at byte ${rest} of ${records.length}`)
  for (const { position, size } of batches) {
    if (RecordBatch.magic(records, position) !== 2)
      throw corrupt(`unsupported magic ${RecordBatch.magic(records, position)} at byte ${position}`)
    if (!crcValid(records, position, size)) throw corrupt(`CRC mismatch in batch at byte ${position}`)
    const count = RecordBatch.recordCount(records, position)
    const delta = RecordBatch.lastOffsetDelta(records, position)
    if (count < (allowEmpty ? 0 : 1) || delta < 0)
      throw invalidRecord(`batch at byte ${position} has ${count} records, last offset delta ${delta}`)
  }
  return batches
}

/** Kafka's check on compacted topics: every record of a data batch has a key (INVALID_RECORD otherwise). */
const requireKeys = (records: Buffer, batches: ReadonlyArray<RecordBatch.BatchRef>, where: string): void => {
  for (const { position } of batches) {
    if (RecordBatch.isControl(records, position)) continue
    for (const r of RecordBatch.iterate(records, position)) {
      if (r._tag === "Left") throw corrupt(`batch at byte ${position}: ${r.left.message}`)
      if (r.right.key === null)
        throw invalidRecord(`Compacted topic cannot accept message without key in topic partition ${where}.`)
    }
  }
}

export class Log implements PartitionLog, CleanerHost {
  private segments: Segment[] = []
  private epochs = new LeaderEpochCache()
  private producers = new ProducerState()
  /** Whether any batch in the log carries a producer id or is a control batch (producer state to rebuild). */
  private hasProducerData = false
  /**
   * The highest producer id of any batch this log appended or loaded, from batch headers only; never
   * lowered by a producer-state reset, a rebuild or retention (persisted in the state checkpoint).
   */
  private _highestProducerId = -1n
  private _logStartOffset = 0
  private _logEndOffset = 0
  private _highWatermark = 0
  private recoveryPoint = 0
  /** The high watermark of the state checkpoint, while loading. */
  private persistedHighWatermark = 0
  /** The high watermark in the state checkpoint on disk, -1 before the first write. */
  private checkpointedHighWatermark = -1
  private unflushedMessages = 0
  private lastFlushMs = -1
  private closed = false
  /** Bumped whenever segments go or are cut outside the cleaner, so a cleaning pass in progress stops. */
  private _generation = 0
  private _firstDirtyOffset = 0
  private _pendingHorizon = -1

  constructor(
    readonly topic: string,
    readonly partition: number,
    private readonly volume: Volume,
    private config: LogConfig,
    private readonly events: LogEvents = {}
  ) {
    this.load()
  }

  get logStartOffset(): number {
    return this._logStartOffset
  }
  get logEndOffset(): number {
    return this._logEndOffset
  }
  get highWatermark(): number {
    return this._highWatermark
  }
  get lastStableOffset(): number {
    const first = this.producers.firstUnstableOffset(this._highWatermark)
    return first === undefined ? this._highWatermark : Math.min(first, this._highWatermark)
  }
  get sizeInBytes(): number {
    let size = 0
    for (const s of this.segments) size += s.size
    return size
  }
  get isClosed(): boolean {
    return this.closed
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1]!
  }

  updateConfig(config: LogConfig): void {
    this.config = config
  }

  // ------------------------------------------------------------------------------------------ cleaning

  get generation(): number {
    return this._generation
  }
  get firstDirtyOffset(): number {
    return this._firstDirtyOffset
  }
  get pendingHorizon(): number {
    return this._pendingHorizon
  }
  get cleanerVolume(): Volume {
    return this.volume
  }
  get cleanerConfig(): LogConfig {
    return this.config
  }
  cleanerSegments(): ReadonlyArray<Segment> {
    return this.segments
  }
  cleanerAbortedTransactions(): ReadonlyArray<AbortedTxn> {
    return this.producers.abortedTransactions(0, Number.MAX_SAFE_INTEGER)
  }
  installCleaned(group: ReadonlyArray<Segment>, cleaned: Segment): void {
    const at = this.segments.indexOf(group[0]!)
    this.segments.splice(at, group.length, cleaned)
  }
  cleanerCheckpoint(firstDirtyOffset: number, pendingHorizon: number): void {
    this._firstDirtyOffset = firstDirtyOffset
    this._pendingHorizon = pendingHorizon
    this.writeCleanerCheckpoint()
  }
  cleanerFailed(_cause: unknown): void {
    // The segment files are half swapped: the next load finishes the swap; until then the log is unusable.
    for (const s of this.segments) s.file.close()
    this.closed = true
  }

  private writeCleanerCheckpoint(): void {
    const state = { firstDirtyOffset: this._firstDirtyOffset, pendingHorizon: this._pendingHorizon }
    this.volume.writeFileAtomic(CLEANER_CHECKPOINT, Buffer.from(JSON.stringify(state)))
  }

  cleanableState(now: number): CleanableState | undefined {
    if (this.closed) return undefined
    return cleanableState(this, now)
  }

  beginClean(now: number, map: KeyOffsetMap): CleanPassPort | undefined {
    this.ensureOpen()
    if (!(map instanceof OffsetMap)) throw new TypeError("beginClean needs a map from LogCleaner.offsetMap")
    const state = cleanableState(this, now)
    if (state === undefined) return undefined
    return new CleanPass(this, now, map, state)
  }

  /** The log's offsets below `offset` changed or went: what was cleaned there is no longer known. */
  private segmentsChanged(offset: number): void {
    this._generation++
    if (this._firstDirtyOffset > offset) {
      this._firstDirtyOffset = offset
      this.writeCleanerCheckpoint()
    }
  }

  // ---------------------------------------------------------------------------------------------- append

  appendAsLeader(records: Buffer, leaderEpoch: number, now: number, origin: AppendOrigin = "client"): AppendInfo {
    this.ensureOpen()
    const batches = validateBatches(records)
    if (batches.length === 0) return this.emptyAppend()
    if (this.config.compact) requireKeys(records, batches, `${this.topic}-${this.partition}`)
    const pending: Pending = new Map()
    const client = origin === "client"
    for (const { position, size } of batches) {
      if (client && RecordBatch.isControl(records, position))
        throw invalidRecord(`control batch at byte ${position}: only a coordinator appends control batches`)
      if (size > this.config.maxMessageBytes)
        throw new RecordTooLargeError({
          message: `batch of ${size} bytes exceeds max.message.bytes ${this.config.maxMessageBytes}`,
          size,
          maxMessageBytes: this.config.maxMessageBytes
        })
      const dup = this.producers.check(batchInfo(records, position, size), pending, client)
      if (dup !== undefined)
        return {
          firstOffset: dup.firstOffset,
          lastOffset: dup.lastOffset,
          logAppendTime: -1,
          logStartOffset: this._logStartOffset,
          duplicate: true
        }
    }
    const logAppendTime = this.config.messageTimestampType === "LogAppendTime"
    let next = this._logEndOffset
    for (const { position, size } of batches) {
      RecordBatch.setBaseOffset(records, next, position)
      RecordBatch.setPartitionLeaderEpoch(records, leaderEpoch, position)
      if (logAppendTime) {
        records.writeBigInt64BE(BigInt(now), position + RecordBatch.MAX_TIMESTAMP)
        const attributes = RecordBatch.attributes(records, position) | TIMESTAMP_TYPE_BIT
        records.writeInt16BE(attributes, position + RecordBatch.ATTRIBUTES)
        const crc = Crc32c.compute(records.subarray(position + RecordBatch.ATTRIBUTES, position + size))
        records.writeUInt32BE(crc, position + RecordBatch.CRC)
      }
      next += RecordBatch.lastOffsetDelta(records, position) + 1
    }
    const firstOffset = this._logEndOffset
    this.write(records, batches, firstOffset, next - 1, now)
    return {
      firstOffset,
      lastOffset: next - 1,
      logAppendTime: logAppendTime ? now : -1,
      logStartOffset: this._logStartOffset,
      duplicate: false
    }
  }

  appendAsFollower(records: Buffer, now: number): AppendInfo {
    this.ensureOpen()
    const batches = validateBatches(records, true)
    if (batches.length === 0) return this.emptyAppend()
    let expected = this._logEndOffset
    for (const { position } of batches) {
      const base = RecordBatch.baseOffset(records, position)
      if (base < expected)
        throw new InvalidOffsetError({
          message: `batch offset ${base} is below the expected minimum ${expected} (log end ${this._logEndOffset})`,
          offset: base,
          logEndOffset: this._logEndOffset
        })
      expected = RecordBatch.lastOffset(records, position) + 1
    }
    const firstOffset = RecordBatch.baseOffset(records, 0)
    this.write(records, batches, firstOffset, expected - 1, now)
    return {
      firstOffset,
      lastOffset: expected - 1,
      logAppendTime: -1,
      logStartOffset: this._logStartOffset,
      duplicate: false
    }
  }

  private emptyAppend(): AppendInfo {
    return {
      firstOffset: -1,
      lastOffset: -1,
      logAppendTime: -1,
      logStartOffset: this._logStartOffset,
      duplicate: false
    }
  }

  private write(
    records: Buffer,
    batches: ReadonlyArray<RecordBatch.BatchRef>,
    firstOffset: number,
    lastOffset: number,
    now: number
  ): void {
    this.maybeRoll(records.length, firstOffset, lastOffset, now)
    const segment = this.active
    const start = segment.size
    // A failed write (ENOSPC, EIO) leaves the log as it was: nothing of it is counted.
    segment.file.append(records)
    const before = {
      logEndOffset: this._logEndOffset,
      unflushed: this.unflushedMessages,
      rollBaseMs: segment.rollBaseMs
    }
    let producerData = false
    try {
      if (segment.rollBaseMs < 0) segment.rollBaseMs = now
      let epochChanged = false
      let messages = 0
      for (const { position, size } of batches) {
        const base = RecordBatch.baseOffset(records, position)
        segment.observe(
          start + position,
          size,
          base,
          RecordBatch.lastOffset(records, position),
          RecordBatch.maxTimestamp(records, position)
        )
        if (this.epochs.assign(RecordBatch.partitionLeaderEpoch(records, position), base)) epochChanged = true
        if (this.applyProducer(records, position, size)) producerData = true
        messages += RecordBatch.recordCount(records, position)
      }
      this._logEndOffset = lastOffset + 1
      if (epochChanged) this.writeEpochCheckpoint()
      this.unflushedMessages += messages
      if (this.lastFlushMs < 0) this.lastFlushMs = now
      if (this.unflushedMessages >= this.config.flushMessages || now - this.lastFlushMs >= this.config.flushMs) {
        this.flush()
        this.lastFlushMs = now
      }
    } catch (e) {
      // The batches were written but could not be made durable (an fsync or checkpoint failed): they are
      // taken back, so the producer's error is the whole truth and its retry cannot duplicate them.
      segment.truncateAt(start)
      segment.rollBaseMs = before.rollBaseMs
      this._logEndOffset = before.logEndOffset
      this.recoveryPoint = Math.min(this.recoveryPoint, before.logEndOffset)
      this.unflushedMessages = before.unflushed
      this.epochs.truncateFromEnd(before.logEndOffset)
      if (producerData) this.rebuildProducerState()
      throw e
    }
  }

  /** Returns whether the batch carries producer state. */
  private applyProducer(b: Buffer, at: number, available: number): boolean {
    const producerId = RecordBatch.producerId(b, at)
    if (producerId < 0n && !RecordBatch.isControl(b, at)) return false
    if (producerId > this._highestProducerId) this._highestProducerId = producerId
    this.hasProducerData = true
    this.producers.apply(batchInfo(b, at, available))
    return true
  }

  private maybeRoll(size: number, firstOffset: number, lastOffset: number, now: number): void {
    const segment = this.active
    if (segment.size === 0) {
      // An empty active segment can simply move to where the data starts (e.g. a follower gap).
      if (segment.baseOffset !== firstOffset && lastOffset - segment.baseOffset > INT32_MAX) this.roll(firstOffset)
      return
    }
    const full = segment.size + size > this.config.segmentBytes
    const old = segment.rollBaseMs >= 0 && now - segment.rollBaseMs > this.config.segmentMs
    if (full || old || lastOffset - segment.baseOffset > INT32_MAX) this.roll(firstOffset)
  }

  /**
   * Replaces every segment by one empty segment at `offset`: the one already there, emptied, or a new one
   * created before any other goes, so that a disk that cannot create files leaves the log as it was.
   */
  private emptySegmentAt(offset: number): Segment {
    const kept = this.segments.find((s) => s.baseOffset === offset)
    const fresh = kept ?? new Segment(this.volume, offset, this.config.indexIntervalBytes)
    for (const s of this.segments) if (s !== kept) s.delete()
    if (kept !== undefined) {
      kept.truncateAt(0)
      kept.rollBaseMs = -1
    }
    return fresh
  }

  private roll(baseOffset: number): void {
    const previous = this.active
    if (previous.size > 0) previous.persistIndexes(false)
    // The new segment's file first: when it cannot be created (a full disk) the log keeps its active segment.
    const next = new Segment(this.volume, baseOffset, this.config.indexIntervalBytes)
    if (previous.size === 0) {
      this.segments.pop()
      previous.delete()
    }
    this.segments.push(next)
  }

  // ------------------------------------------------------------------------------------------------ read

  read(offset: number, maxBytes: number, opts?: ReadOptions): ReadInfo {
    this.ensureOpen()
    if (offset < this._logStartOffset || offset > this._logEndOffset)
      throw new OffsetOutOfRangeError({
        message: `offset ${offset} is outside [${this._logStartOffset}, ${this._logEndOffset}]`,
        offset,
        logStartOffset: this._logStartOffset,
        logEndOffset: this._logEndOffset
      })
    const maxOffset = Math.min(opts?.maxOffset ?? this._logEndOffset, this._logEndOffset)
    const minOne = opts?.minOneMessage ?? true
    let records: Buffer = Buffer.alloc(0)
    if (offset < maxOffset) {
      for (let i = this.segmentIndexFor(offset); i < this.segments.length; i++) {
        const segment = this.segments[i]!
        let start = -1
        let end = -1
        let reached = false
        scan(segment.file, segment.lookup(offset), segment.size, false, (b, at, position, size) => {
          const last = RecordBatch.lastOffset(b, at)
          if (last < offset) return true
          reached = true
          if (last >= maxOffset) return false
          if (start < 0) {
            if (size > maxBytes && !minOne) return false
            start = position
          } else if (position + size - start > maxBytes) return false
          end = position + size
          return true
        })
        if (start >= 0) records = readRange(segment.file, start, end)
        if (reached) break
      }
    }
    return {
      records,
      highWatermark: this._highWatermark,
      logStartOffset: this._logStartOffset,
      lastStableOffset: this.lastStableOffset,
      logEndOffset: this._logEndOffset
    }
  }

  /** Index of the last segment whose base offset is <= `offset` (0 if none). */
  private segmentIndexFor(offset: number): number {
    let lo = 0
    let hi = this.segments.length - 1
    let found = 0
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (this.segments[mid]!.baseOffset <= offset) {
        found = mid
        lo = mid + 1
      } else hi = mid - 1
    }
    return found
  }

  // ------------------------------------------------------------------------------------ offsets & epochs

  updateHighWatermark(offset: number): void {
    this._highWatermark = Math.min(Math.max(offset, this._logStartOffset), this._logEndOffset)
    this.producers.onHighWatermark(this._highWatermark)
  }

  latestEpoch(): number {
    return this.epochs.latestEpoch()
  }

  endOffsetForEpoch(epoch: number): EpochEndOffset {
    return this.epochs.endOffsetFor(epoch, this._logEndOffset)
  }

  offsetForTimestamp(timestamp: number): TimestampOffset | null {
    this.ensureOpen()
    if (timestamp === LATEST_TIMESTAMP)
      return { timestamp: -1, offset: this._logEndOffset, leaderEpoch: this.epochs.latestEpoch() }
    if (timestamp === EARLIEST_TIMESTAMP || timestamp === EARLIEST_LOCAL_TIMESTAMP)
      return {
        timestamp: -1,
        offset: this._logStartOffset,
        leaderEpoch: this.epochs.epochForOffset(this._logStartOffset)
      }
    if (timestamp === MAX_TIMESTAMP) {
      let best: Segment | undefined
      for (const s of this.segments)
        if (s.maxTimestamp >= 0 && (best === undefined || s.maxTimestamp > best.maxTimestamp)) best = s
      if (best === undefined) return null
      const found = this.firstBatchAtTime(best, best.maxTimestamp)
      return found === undefined
        ? null
        : { timestamp: found.timestamp, offset: found.lastOffset, leaderEpoch: found.leaderEpoch }
    }
    if (timestamp < 0) return null
    for (const s of this.segments) {
      if (s.maxTimestamp < timestamp) continue
      const found = this.firstBatchAtTime(s, timestamp)
      if (found !== undefined)
        return {
          timestamp: found.timestamp,
          offset: Math.max(found.offset, this._logStartOffset),
          leaderEpoch: found.leaderEpoch
        }
    }
    return null
  }

  private firstBatchAtTime(
    segment: Segment,
    timestamp: number
  ): { timestamp: number; offset: number; lastOffset: number; leaderEpoch: number } | undefined {
    let found: { timestamp: number; offset: number; lastOffset: number; leaderEpoch: number } | undefined
    scan(segment.file, segment.lookupTimestamp(timestamp), segment.size, false, (b, at) => {
      const ts = RecordBatch.maxTimestamp(b, at)
      if (ts < timestamp || RecordBatch.lastOffset(b, at) < this._logStartOffset) return true
      found = {
        timestamp: ts,
        offset: RecordBatch.baseOffset(b, at),
        lastOffset: RecordBatch.lastOffset(b, at),
        leaderEpoch: RecordBatch.partitionLeaderEpoch(b, at)
      }
      return false
    })
    return found
  }

  openTransactions(): ReadonlyArray<OpenTransaction> {
    return this.producers.openTransactions()
  }

  activeProducers(): ReadonlyArray<ActiveProducer> {
    return this.producers.activeProducers()
  }

  highestProducerId(): bigint {
    return this._highestProducerId
  }

  abortedTransactions(fetchOffset: number, upperOffset: number): ReadonlyArray<AbortedTransaction> {
    return this.producers
      .abortedTransactions(fetchOffset, upperOffset)
      .map((t) => ({ producerId: t.producerId, firstOffset: t.firstOffset }))
  }

  // ---------------------------------------------------------------------------------- truncation & retention

  truncateTo(offset: number): void {
    this.ensureOpen()
    if (offset >= this._logEndOffset) return
    if (offset < this._logStartOffset) {
      this.truncateFullyAndStartAt(offset)
      return
    }
    while (this.segments.length > 1 && this.active.baseOffset >= offset) this.segments.pop()!.delete()
    const segment = this.active
    if (segment.baseOffset >= offset) this.segments = [this.emptySegmentAt(offset)]
    else {
      let cut = segment.size
      scan(segment.file, segment.lookup(offset), segment.size, false, (b, at, position) => {
        if (RecordBatch.lastOffset(b, at) < offset) return true
        cut = position
        return false
      })
      if (cut < segment.size) segment.truncateAt(cut)
    }
    this._logEndOffset = offset
    this._highWatermark = Math.min(this._highWatermark, offset)
    this.recoveryPoint = Math.min(this.recoveryPoint, offset)
    this.segmentsChanged(offset)
    if (this.epochs.truncateFromEnd(offset)) this.writeEpochCheckpoint()
    if (this.hasProducerData) this.rebuildProducerState()
    this.writeStateCheckpoint()
  }

  truncateFullyAndStartAt(offset: number): void {
    this.ensureOpen()
    this.segments = [this.emptySegmentAt(offset)]
    this._generation++
    this._firstDirtyOffset = offset
    this._pendingHorizon = -1
    this.volume.remove(CLEANER_CHECKPOINT)
    this._logStartOffset = offset
    this._logEndOffset = offset
    this._highWatermark = offset
    this.recoveryPoint = offset
    this.epochs.clear()
    this.producers.clear()
    this.hasProducerData = false
    this.writeEpochCheckpoint()
    this.writeStateCheckpoint()
  }

  deleteRecordsBefore(offset: number): void {
    this.ensureOpen()
    if (offset > this._highWatermark)
      throw new OffsetOutOfRangeError({
        message: `cannot move the log start to ${offset} above the high watermark ${this._highWatermark}`,
        offset,
        logStartOffset: this._logStartOffset,
        logEndOffset: this._logEndOffset
      })
    if (offset <= this._logStartOffset) return
    this.advanceLogStart(offset)
    this.deleteSegmentsBelowLogStart()
    this.writeStateCheckpoint()
  }

  private advanceLogStart(offset: number): void {
    this._logStartOffset = offset
    if (this.epochs.truncateFromStart(offset)) this.writeEpochCheckpoint()
    this.producers.onLogStartOffset(offset)
  }

  /** Deletes inactive segments whose every offset is below the log start; returns how many. */
  private deleteSegmentsBelowLogStart(): number {
    let deleted = 0
    while (this.segments.length > 1 && this.segments[1]!.baseOffset <= this._logStartOffset) {
      this.segments.shift()!.delete()
      deleted++
    }
    if (deleted > 0) this._generation++
    return deleted
  }

  enforceRetention(now: number): number {
    this.ensureOpen()
    let deleted = this.deleteSegmentsBelowLogStart()
    const { retentionMs, retentionBytes } = this.config
    let excess = retentionBytes >= 0 ? this.sizeInBytes - retentionBytes : 0
    // Oldest first, stopping at the first segment that must stay; only data at or below the HW may go.
    while (this.segments.length > 0) {
      const segment = this.segments[0]!
      const isActive = this.segments.length === 1
      if (segment.size === 0) break
      const upper = isActive ? this._logEndOffset : this.segments[1]!.baseOffset
      if (upper > this._highWatermark) break
      const lastTime = segment.maxTimestamp >= 0 ? segment.maxTimestamp : segment.rollBaseMs
      const expired = retentionMs >= 0 && lastTime >= 0 && now - lastTime > retentionMs
      const oversize = retentionBytes >= 0 && excess - segment.size >= 0
      if (!expired && !oversize) break
      if (isActive) this.roll(this._logEndOffset)
      excess -= segment.size
      this.segments.shift()!.delete()
      this._generation++
      deleted++
    }
    if (deleted > 0) {
      const start = this.segments[0]!.baseOffset
      if (start > this._logStartOffset) this.advanceLogStart(start)
      this.writeStateCheckpoint()
    }
    return deleted
  }

  // ----------------------------------------------------------------------------------- durability

  checkpointHighWatermark(): void {
    if (this.closed || this._highWatermark === this.checkpointedHighWatermark) return
    this.writeStateCheckpoint()
  }

  flush(): void {
    this.ensureOpen()
    for (let i = this.segmentIndexFor(this.recoveryPoint); i < this.segments.length; i++) {
      const segment = this.segments[i]!
      segment.persistIndexes(true)
      segment.file.sync()
    }
    this.recoveryPoint = this._logEndOffset
    this.unflushedMessages = 0
    this.writeStateCheckpoint()
  }

  close(): void {
    if (this.closed) return
    this._generation++
    this.flush()
    const snapshot = { hasProducerData: this.hasProducerData, producers: this.producers.snapshot() }
    this.volume.writeFileAtomic(CLEAN_SHUTDOWN, Buffer.from(JSON.stringify(snapshot)))
    for (const s of this.segments) s.file.close()
    this.closed = true
  }

  private ensureOpen(): void {
    if (this.closed)
      throw new KafkaStorageError({ message: `log ${this.topic}-${this.partition} is closed`, cause: undefined })
  }

  private writeEpochCheckpoint(): void {
    this.volume.writeFileAtomic(EPOCH_CHECKPOINT, Buffer.from(this.epochs.encode()))
  }

  private writeStateCheckpoint(): void {
    const state = {
      logStartOffset: this._logStartOffset,
      recoveryPoint: this.recoveryPoint,
      highWatermark: this._highWatermark,
      highestProducerId: this._highestProducerId.toString()
    }
    this.volume.writeFileAtomic(STATE_CHECKPOINT, Buffer.from(JSON.stringify(state)))
    this.checkpointedHighWatermark = state.highWatermark
  }

  private rebuildProducerState(highWatermark = this._highWatermark): void {
    this.producers.clear()
    this.producers.onHighWatermark(highWatermark)
    this.hasProducerData = false
    for (const segment of this.segments)
      scan(segment.file, 0, segment.size, false, (b, at, _position, size) => {
        this.applyProducer(b, at, Math.min(size, 128))
        return true
      })
    this.producers.onLogStartOffset(this._logStartOffset)
  }

  // --------------------------------------------------------------------------------------- loading

  private load(): void {
    recoverSwap(this.volume)
    const names = this.volume.list()
    for (const name of names) if (name.endsWith(".tmp")) this.volume.remove(name)
    const cleaner = readJson(this.volume.readFile(CLEANER_CHECKPOINT))
    if (cleaner !== undefined) {
      const dirty = Reflect.get(cleaner, "firstDirtyOffset")
      const horizon = Reflect.get(cleaner, "pendingHorizon")
      if (typeof dirty === "number" && Number.isSafeInteger(dirty)) this._firstDirtyOffset = dirty
      if (typeof horizon === "number" && Number.isFinite(horizon)) this._pendingHorizon = horizon
    }
    const bases = names
      .filter((n) => /^\d{20}\.log$/.test(n))
      .map((n) => Number(n.slice(0, 20)))
      .sort((a, b) => a - b)
    const state = readJson(this.volume.readFile(STATE_CHECKPOINT))
    const num = (key: string, fallback: number): number => {
      const v = state === undefined ? undefined : Reflect.get(state, key)
      return typeof v === "number" && Number.isInteger(v) ? v : fallback
    }
    const persistedStart = num("logStartOffset", 0)
    if (bases.length === 0) bases.push(persistedStart)
    this.segments = bases.map((base) => new Segment(this.volume, base, this.config.indexIntervalBytes))
    const epochText = this.volume.readFile(EPOCH_CHECKPOINT)
    const epochs =
      epochText === undefined ? undefined : LeaderEpochCache.decode(Buffer.from(epochText).toString("utf8"))
    const clean = readJson(this.volume.readFile(CLEAN_SHUTDOWN))
    const producers = clean === undefined ? undefined : ProducerState.restore(Reflect.get(clean, "producers"))
    this.recoveryPoint = num("recoveryPoint", this.segments[0]!.baseOffset)
    this.persistedHighWatermark = num("highWatermark", 0)
    const highest = state === undefined ? undefined : Reflect.get(state, "highestProducerId")
    if (typeof highest === "string" && /^-?\d+$/.test(highest)) this._highestProducerId = BigInt(highest)
    if (clean !== undefined && producers !== undefined && epochs !== undefined) {
      this.producers = producers
      this.hasProducerData = Reflect.get(clean, "hasProducerData") === true
      this.epochs = epochs
      const last = this.segments.length - 1
      for (let i = 0; i < last; i++) this.segments[i]!.load()
      // The active segment is where a write can be torn or bytes damaged at rest unnoticed by the snapshot:
      // it is validated on every open, and what fails is cut before anything is served or appended.
      const previous = last > 0 ? this.segments[last - 1]!.lastOffset : -1
      const { cut } = this.loadSegment(last, true, false, previous >= 0 ? previous + 1 : -1, true)
      if (cut && this.hasProducerData) this.rebuildProducerState(this.persistedHighWatermark)
      this.setLogEndFromSegments()
    } else {
      this.epochs = epochs ?? new LeaderEpochCache()
      this.recover()
    }
    this.volume.remove(CLEAN_SHUTDOWN)
    this._logStartOffset = Math.max(persistedStart, this.segments[0]!.baseOffset)
    if (this._logStartOffset > this._logEndOffset) this._logEndOffset = this._logStartOffset
    // Start first: an entry moved up to the log start must then meet the same end rule whether it came
    // from the checkpoint (clean shutdown) or from scanning batches below the log start (recovery).
    this.epochs.truncateFromStart(this._logStartOffset)
    this.epochs.truncateFromEnd(this._logEndOffset)
    this.producers.onLogStartOffset(this._logStartOffset)
    this._highWatermark = Math.min(Math.max(this.persistedHighWatermark, this._logStartOffset), this._logEndOffset)
    this.producers.onHighWatermark(this._highWatermark)
    if (this._firstDirtyOffset > this._logEndOffset) this._firstDirtyOffset = this._logEndOffset
    this.writeEpochCheckpoint()
    this.flush()
  }

  private setLogEndFromSegments(): void {
    let end = this.segments[0]!.baseOffset
    for (const s of this.segments) end = s.lastOffset >= 0 ? s.lastOffset + 1 : Math.max(end, s.baseOffset)
    this._logEndOffset = end
  }

  /**
   * Crash recovery: scans every segment's headers to rebuild indexes, epochs and producer state, and from the
   * segment holding the recovery point on (the active segment at least) also validates each batch.
   * The first invalid batch and everything after it is cut: a torn write never survives, and no complete
   * valid batch before it is lost.
   */
  private recover(): void {
    const validateFrom = this.segmentIndexFor(this.recoveryPoint)
    this.producers = new ProducerState()
    // Markers already below the persisted high watermark need not hold the LSO back while the log loads.
    this.producers.onHighWatermark(this.persistedHighWatermark)
    this.hasProducerData = false
    let next = -1
    for (let i = 0; i < this.segments.length; i++) next = this.loadSegment(i, i >= validateFrom, true, next, false).next
    this.setLogEndFromSegments()
  }

  /**
   * Rebuilds segment `i`'s indexes by scanning it; with `validate` each batch is checked whole (size, magic,
   * CRC), and offsets must increase from `next` in any case. With `rebuild` the epochs and producer state
   * follow the batches. The first batch that fails is cut with the rest of the segment and every later
   * segment, and the cut is reported. Returns the offset expected next (-1 while none) and whether it cut.
   */
  private loadSegment(
    i: number,
    validate: boolean,
    rebuild: boolean,
    expected: number,
    cleanShutdown: boolean
  ): { readonly next: number; readonly cut: boolean } {
    const segment = this.segments[i]!
    let next = expected
    let reason = "incomplete batch (torn write)"
    segment.resetIndexes()
    const stop = scan(segment.file, 0, segment.size, validate, (b, at, position, size) => {
      const base = RecordBatch.baseOffset(b, at)
      const delta = RecordBatch.lastOffsetDelta(b, at)
      if (validate) {
        const magic = RecordBatch.magic(b, at)
        const invalid =
          magic !== 2
            ? `unsupported magic ${magic}`
            : delta < 0
              ? `negative last offset delta ${delta}`
              : crcValid(b, at, size)
                ? undefined
                : "CRC mismatch"
        if (invalid !== undefined) {
          reason = invalid
          return false
        }
      }
      if (base < segment.baseOffset || base < next || base + delta - segment.baseOffset > INT32_MAX) {
        reason = `batch offset ${base} out of order (expected at least ${Math.max(next, segment.baseOffset)})`
        return false
      }
      segment.observe(position, size, base, base + delta, RecordBatch.maxTimestamp(b, at))
      if (rebuild) {
        this.epochs.assign(RecordBatch.partitionLeaderEpoch(b, at), base)
        this.applyProducer(b, at, validate ? size : Math.min(size, 128))
      }
      next = base + delta + 1
      return true
    })
    if (segment.rollBaseMs < 0 && segment.maxTimestamp >= 0) segment.rollBaseMs = segment.maxTimestamp
    const cut = stop < segment.size
    if (cut) {
      const removed = { bytes: 0, records: 0, lastOffset: -1 }
      // Counted from the headers that still look like batches of this log; garbage ends the count.
      const measure = (s: Segment, from: number): void => {
        removed.bytes += s.size - from
        scan(s.file, from, s.size, false, (b, at) => {
          const plausible =
            RecordBatch.magic(b, at) === 2 &&
            RecordBatch.lastOffsetDelta(b, at) >= 0 &&
            RecordBatch.baseOffset(b, at) >= Math.max(next, segment.baseOffset)
          if (!plausible) return false
          removed.records += Math.max(0, RecordBatch.recordCount(b, at))
          removed.lastOffset = Math.max(removed.lastOffset, RecordBatch.lastOffset(b, at))
          return true
        })
      }
      measure(segment, stop)
      const later = this.segments.splice(i + 1)
      for (const s of later) {
        measure(s, 0)
        s.delete()
      }
      segment.truncateAt(stop)
      const truncation: RecoveryTruncation = {
        topic: this.topic,
        partition: this.partition,
        segment: fileName(segment.baseOffset, LOG_SUFFIX),
        position: stop,
        reason,
        cleanShutdown,
        logEndOffset: segment.lastOffset >= 0 ? segment.lastOffset + 1 : Math.max(expected, segment.baseOffset),
        lastRemovedOffset: removed.lastOffset,
        removedBytes: removed.bytes,
        removedRecords: removed.records,
        removedSegments: later.length,
        highWatermark: this.persistedHighWatermark
      }
      this.events.recoveryTruncated?.(truncation)
    }
    segment.persistIndexes(false)
    return { next, cut }
  }
}

const readJson = (bytes: Uint8Array | undefined): object | undefined => {
  if (bytes === undefined) return undefined
  try {
    const value: unknown = JSON.parse(Buffer.from(bytes).toString("utf8"))
    return typeof value === "object" && value !== null ? value : undefined
  } catch {
    return undefined
  }
}
