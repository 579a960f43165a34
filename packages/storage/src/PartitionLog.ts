/**
 * The partition log: an append-only sequence of record batches with Kafka's offsets, leader epochs, producer
 * state and retention. This module holds the contract; `PartitionLogStore` opens logs on files or in memory.
 * It knows nothing about mirrors, metadata or the network: callers pass epochs, time and offsets in.
 */
import type { Buffer } from "node:buffer"

/** Topic-level settings of one log (Kafka topic-config names in comments). */
export interface LogConfig {
  /** segment.bytes */
  readonly segmentBytes: number
  /** segment.ms */
  readonly segmentMs: number
  /** index.interval.bytes */
  readonly indexIntervalBytes: number
  /** retention.bytes (-1 = unlimited) */
  readonly retentionBytes: number
  /** retention.ms (-1 = forever) */
  readonly retentionMs: number
  /** flush.messages */
  readonly flushMessages: number
  /** flush.ms */
  readonly flushMs: number
  /** max.message.bytes */
  readonly maxMessageBytes: number
  /** message.timestamp.type */
  readonly messageTimestampType: "CreateTime" | "LogAppendTime"
  /** cleanup.policy includes compact: the log cleaner compacts the log, and records need a key. */
  readonly compact: boolean
  /** delete.retention.ms: how long a tombstone (or a removable marker) stays after its first cleaning. */
  readonly deleteRetentionMs: number
  /** min.cleanable.dirty.ratio */
  readonly minCleanableDirtyRatio: number
  /** min.compaction.lag.ms: a segment with a record newer than this is not cleaned yet. */
  readonly minCompactionLagMs: number
  /** max.compaction.lag.ms: a dirty segment older than this is cleaned whatever the dirty ratio. */
  readonly maxCompactionLagMs: number
}

const DAY_MS = 24 * 60 * 60 * 1000

export const defaultConfig: LogConfig = {
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * DAY_MS,
  indexIntervalBytes: 4096,
  retentionBytes: -1,
  retentionMs: 7 * DAY_MS,
  flushMessages: Number.MAX_SAFE_INTEGER,
  flushMs: Number.MAX_SAFE_INTEGER,
  maxMessageBytes: 1048588,
  messageTimestampType: "CreateTime",
  compact: false,
  deleteRetentionMs: DAY_MS,
  minCleanableDirtyRatio: 0.5,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.MAX_SAFE_INTEGER
}

/** Where a compacted log could be cleaned now (whole segments below the LSO and the active segment). */
export interface CleanableState {
  readonly firstDirtyOffset: number
  /** Base of the first segment that may not be cleaned (active, holding the LSO, or younger than the lag). */
  readonly firstUncleanableOffset: number
  readonly cleanBytes: number
  readonly dirtyBytes: number
  readonly dirtyRatio: number
  /** The dirty ratio reached min.cleanable.dirty.ratio, max.compaction.lag.ms passed, or a delete horizon did. */
  readonly due: boolean
}

export interface CleanStats {
  readonly bytesRead: number
  readonly bytesWritten: number
  readonly recordsRead: number
  readonly recordsRetained: number
  readonly segmentsCleaned: number
  /** The pass ran to its end (the first dirty offset moved). */
  readonly passCompleted: boolean
  /** The pass stopped early: the log changed under it (retention, truncation, close) or a swap failed. */
  readonly aborted: boolean
}

/** A cleaning pass in progress: `step` runs one bounded slice (one segment mapped or one group rewritten). */
export interface CleanPass {
  readonly done: boolean
  readonly stats: CleanStats
  /** Runs one slice; returns the bytes read, for throttling. */
  step(): number
  abort(): void
}

/** The cleaner's key → offset map, sized by log.cleaner.dedupe.buffer.size (see `LogCleaner.offsetMap`). */
export interface KeyOffsetMap {
  readonly slots: number
  readonly maxEntries: number
}

/** Where an append landed. */
export interface AppendInfo {
  readonly firstOffset: number
  readonly lastOffset: number
  /** The broker time stamped into the batches, -1 unless LogAppendTime. */
  readonly logAppendTime: number
  readonly logStartOffset: number
  /** The batch was already appended (idempotent retry); the offsets are the original ones. */
  readonly duplicate: boolean
}

/**
 * Who appends as leader (Kafka's AppendOrigin): a client's batches get every check; a coordinator's (the
 * group coordinator's transactional offset commits, transaction markers) skip the sequence checks, since
 * the coordinator, not the producer, numbers them. Only a coordinator may append control batches.
 */
export type AppendOrigin = "client" | "coordinator"

export interface ReadInfo {
  /** Whole batches, possibly empty. */
  readonly records: Buffer
  readonly highWatermark: number
  readonly logStartOffset: number
  readonly lastStableOffset: number
  readonly logEndOffset: number
}

/** OffsetForLeaderEpoch answer; -1/-1 when unknown. */
export interface EpochEndOffset {
  readonly epoch: number
  readonly endOffset: number
}

export interface TimestampOffset {
  readonly timestamp: number
  readonly offset: number
  readonly leaderEpoch: number
}

export interface AbortedTransaction {
  readonly producerId: bigint
  readonly firstOffset: number
}

export interface OpenTransaction {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly firstOffset: number
  /** The coordinator epoch of the producer's last COMMIT/ABORT marker in this log, -1 when none. */
  readonly coordinatorEpoch: number
}

/** A producer the log has state for (DescribeProducers). */
export interface ActiveProducer {
  readonly producerId: bigint
  readonly producerEpoch: number
  /** The last sequence of its last retained data batch, -1 when none. */
  readonly lastSequence: number
  /** The max timestamp of its last batch (data or marker). */
  readonly lastTimestamp: number
  /** The coordinator epoch of its last COMMIT/ABORT marker, -1 when none. */
  readonly coordinatorEpoch: number
  /** The first offset of its open transaction, -1 when none. */
  readonly currentTxnStartOffset: number
}

export interface ReadOptions {
  /** Exclusive bound: no batch with an offset at or above it is returned (e.g. HW or LSO for consumers). */
  readonly maxOffset?: number
  /** Return the first batch even when it exceeds `maxBytes` (default true). */
  readonly minOneMessage?: boolean
}

/** ListOffsets special timestamps. */
export const LATEST_TIMESTAMP = -1
export const EARLIEST_TIMESTAMP = -2
export const MAX_TIMESTAMP = -3
export const EARLIEST_LOCAL_TIMESTAMP = -4

export interface PartitionLog {
  readonly topic: string
  readonly partition: number
  readonly logStartOffset: number
  readonly logEndOffset: number
  readonly highWatermark: number
  /**
   * The high watermark, or the first offset of the oldest transaction still open or ended by a marker not
   * yet below the high watermark, whichever is lower (read_committed consumers read below it).
   */
  readonly lastStableOffset: number
  readonly sizeInBytes: number
  /**
   * Validates (magic 2, sizes, CRC), assigns offsets from the log end, stamps `leaderEpoch` into every batch
   * (in place), checks producer epochs and (for `client`, the default) idempotent producer sequences;
   * duplicates return the original offsets. A COMMIT/ABORT marker of an older producer epoch fails with
   * INVALID_PRODUCER_EPOCH, of an older coordinator epoch with TRANSACTION_COORDINATOR_FENCED; a client's
   * control batch with INVALID_RECORD.
   */
  appendAsLeader(records: Buffer, leaderEpoch: number, now: number, origin?: AppendOrigin): AppendInfo
  /**
   * Appends batches that carry their own offsets and epochs (replica or mirror), bytes unchanged; the first
   * offset must be >= the log end (gaps allowed). Epoch cache and producer state follow the batches.
   */
  appendAsFollower(records: Buffer, now: number): AppendInfo
  /**
   * Whole batches from the one containing `offset`, at most `maxBytes` (at least one batch when
   * `minOneMessage`), never at or past `maxOffset`. Reads within one segment, like Kafka.
   */
  read(offset: number, maxBytes: number, opts?: ReadOptions): ReadInfo
  /** Clamped to [logStartOffset, logEndOffset]. */
  updateHighWatermark(offset: number): void
  /** Removes offsets >= `offset`. */
  truncateTo(offset: number): void
  /** Empties the log and restarts it at `offset`. */
  truncateFullyAndStartAt(offset: number): void
  /** -1 if none. */
  latestEpoch(): number
  /** OffsetForLeaderEpoch: the largest epoch <= `epoch` and its end offset. */
  endOffsetForEpoch(epoch: number): EpochEndOffset
  /** ListOffsets: -1 latest, -2 earliest, -3 max timestamp, else the first batch with timestamp >= it. */
  offsetForTimestamp(timestamp: number): TimestampOffset | null
  /** Producers with a transaction still open (no COMMIT or ABORT marker yet), oldest first. */
  openTransactions(): ReadonlyArray<OpenTransaction>
  /** Every producer with state in this log (idempotent or transactional), by producer id. */
  activeProducers(): ReadonlyArray<ActiveProducer>
  /**
   * The highest producer id of any batch appended or loaded (header field only), -1n when none: kept through
   * MIRROR_PID_RESET, producer-state rebuilds and retention, so that ids allocated later can be placed above it.
   */
  highestProducerId(): bigint
  /** Aborted transactions overlapping `[fetchOffset, upperOffset)`, for READ_COMMITTED fetches. */
  abortedTransactions(fetchOffset: number, upperOffset: number): ReadonlyArray<AbortedTransaction>
  /** Advances the log start (DeleteRecords); `offset` must not exceed the high watermark. */
  deleteRecordsBefore(offset: number): void
  /** Deletes segments past retention (size, time, log start); returns how many. */
  enforceRetention(now: number): number
  /**
   * Persists the high watermark (with the log start and recovery point) when it moved since the last
   * checkpoint, so a restart after a crash answers from it (`replica.high.watermark.checkpoint.interval.ms`).
   */
  checkpointHighWatermark(): void
  /** Where the log could be cleaned now; undefined unless compacted with a segment besides the active one. */
  cleanableState(now: number): CleanableState | undefined
  /** Starts a cleaning pass using `map` (cleared first); undefined when there is nothing to clean. */
  beginClean(now: number, map: KeyOffsetMap): CleanPass | undefined
  /** fsyncs data and indexes. */
  flush(): void
  close(): void
}

/**
 * Loading a log cut bytes that failed validation (a torn write, a CRC mismatch, offsets out of order): the
 * first invalid batch of a segment and everything after it in the log. Nothing cut is ever served.
 */
export interface RecoveryTruncation {
  readonly topic: string
  readonly partition: number
  /** The segment file holding the first invalid batch. */
  readonly segment: string
  /** Byte position of the first invalid batch in that segment. */
  readonly position: number
  readonly reason: string
  /** Whether the previous shutdown was clean (the cut is then damage to files at rest). */
  readonly cleanShutdown: boolean
  /** The log end offset after the cut: the first offset that is gone. */
  readonly logEndOffset: number
  /** The last offset named by a readable batch header in the cut bytes, -1 when none was readable. */
  readonly lastRemovedOffset: number
  readonly removedBytes: number
  /** Records counted from the readable batch headers in the cut bytes. */
  readonly removedRecords: number
  /** Later segments deleted with the cut. */
  readonly removedSegments: number
  /** The high watermark checkpointed before the cut; above `logEndOffset` acknowledged records were lost. */
  readonly highWatermark: number
}

/** One log line for a recovery truncation, naming the partition, segment, offsets and amounts. */
export const describeTruncation = (t: RecoveryTruncation): string => {
  const range =
    t.lastRemovedOffset >= t.logEndOffset
      ? `offsets ${t.logEndOffset}..${t.lastRemovedOffset}`
      : `offsets from ${t.logEndOffset}`
  const lost =
    t.highWatermark > t.logEndOffset
      ? `; ${t.highWatermark - t.logEndOffset} records below the high watermark ${t.highWatermark} were acknowledged and are lost on this replica`
      : ""
  return (
    `log recovery truncated ${t.topic}-${t.partition} segment ${t.segment} at byte ${t.position} (${t.reason}` +
    `${t.cleanShutdown ? ", after a clean shutdown" : ""}): ${range}, ${t.removedRecords} records, ` +
    `${t.removedBytes} bytes${t.removedSegments > 0 ? `, ${t.removedSegments} later segments deleted` : ""}; ` +
    `log end offset now ${t.logEndOffset}${lost}`
  )
}

/** What a store tells its owner about the logs it opens. */
export interface LogEvents {
  /** A log cut invalid bytes while loading. */
  readonly recoveryTruncated?: (t: RecoveryTruncation) => void
}
