/**
 * What the core knows of its log: the offsets and the leader-epoch cache, never the records. The
 * runtime owns the records (files, or memory in the simulation) and tells the core the view it
 * recovered at start; after that the core keeps the view in step with the appends, truncations and
 * snapshots it asks for. Pure functions on an immutable value.
 */
import type { LogRecord, SnapshotId } from "./RaftMessages.js"

/** The first offset of each leader epoch present in the log, ascending. */
export interface EpochEntry {
  readonly epoch: number
  readonly startOffset: number
}

export interface LogView {
  /** The first offset in the log; the snapshot, if any, holds everything below it. */
  readonly logStartOffset: number
  /** The latest snapshot, ending at `logStartOffset`. */
  readonly snapshotId: SnapshotId | null
  /** The log end offset (the next offset to append). */
  readonly endOffset: number
  /** Epochs of the records in [logStartOffset, endOffset). */
  readonly epochs: ReadonlyArray<EpochEntry>
  /** Records below this offset are durable (fsynced). */
  readonly flushedOffset: number
}

export const empty: LogView = { logStartOffset: 0, snapshotId: null, endOffset: 0, epochs: [], flushedOffset: 0 }

/** The epoch of the last record, or of the snapshot when the log is empty past it, or 0. */
export const lastEpoch = (log: LogView): number => {
  const last = log.epochs[log.epochs.length - 1]
  return last !== undefined ? last.epoch : (log.snapshotId?.epoch ?? 0)
}

/**
 * The largest epoch at most `epoch` and the offset where it ends in this log (Kafka's
 * `endOffsetForEpoch`). `{ epoch: -1, endOffset: -1 }` when no such epoch is known here.
 */
export const endOffsetForEpoch = (log: LogView, epoch: number): SnapshotId => {
  for (let i = log.epochs.length - 1; i >= 0; i--) {
    const entry = log.epochs[i]
    if (entry !== undefined && entry.epoch <= epoch) {
      const next = log.epochs[i + 1]
      return { epoch: entry.epoch, endOffset: next !== undefined ? next.startOffset : log.endOffset }
    }
  }
  if (log.snapshotId !== null && log.snapshotId.epoch <= epoch)
    return { epoch: log.snapshotId.epoch, endOffset: log.logStartOffset }
  return { epoch: -1, endOffset: -1 }
}

/** The epoch of the record at `offset` (in [logStartOffset - 1, endOffset)), or -1. */
export const epochAt = (log: LogView, offset: number): number => {
  for (let i = log.epochs.length - 1; i >= 0; i--) {
    const entry = log.epochs[i]
    if (entry !== undefined && entry.startOffset <= offset) return entry.epoch
  }
  return log.snapshotId !== null && offset === log.snapshotId.endOffset - 1 ? log.snapshotId.epoch : -1
}

/** The view after appending `records`, which must start at the end offset. */
export const append = <V>(log: LogView, records: ReadonlyArray<LogRecord<V>>): LogView => {
  if (records.length === 0) return log
  let epochs = log.epochs
  let end = log.endOffset
  let last = lastEpoch(log)
  for (const r of records) {
    if (r.offset !== end) throw new Error(`append at ${r.offset}, the log ends at ${end}`)
    if (r.epoch < last) throw new Error(`append of epoch ${r.epoch} after epoch ${last}`)
    if (r.epoch > last || epochs.length === 0) {
      epochs = [...epochs, { epoch: r.epoch, startOffset: r.offset }]
      last = r.epoch
    }
    end++
  }
  return { ...log, endOffset: end, epochs }
}

/** The view after truncating to `offset` (records at and after it removed). */
export const truncateTo = (log: LogView, offset: number): LogView => {
  if (offset >= log.endOffset) return log
  return {
    ...log,
    endOffset: offset,
    epochs: log.epochs.filter((e) => e.startOffset < offset),
    flushedOffset: Math.min(log.flushedOffset, offset)
  }
}

/** The view after a flush made the records below `offset` durable. */
export const flushed = (log: LogView, offset: number): LogView => {
  const to = Math.min(offset, log.endOffset)
  return to > log.flushedOffset ? { ...log, flushedOffset: to } : log
}

/** The view after a local snapshot at `snapshotId` removed the log before its end offset. */
export const snapshotTaken = (log: LogView, snapshotId: SnapshotId): LogView => {
  const start = snapshotId.endOffset
  const epochs: Array<EpochEntry> = []
  for (let i = 0; i < log.epochs.length; i++) {
    const entry = log.epochs[i]
    const next = log.epochs[i + 1]
    if (entry === undefined) continue
    const end = next !== undefined ? next.startOffset : log.endOffset
    if (end > start) epochs.push({ epoch: entry.epoch, startOffset: Math.max(entry.startOffset, start) })
  }
  return { ...log, logStartOffset: start, snapshotId, epochs }
}

/** The view after a snapshot fetched from the leader replaced the whole log. */
export const snapshotInstalled = (snapshotId: SnapshotId): LogView => ({
  logStartOffset: snapshotId.endOffset,
  snapshotId,
  endOffset: snapshotId.endOffset,
  epochs: [],
  flushedOffset: snapshotId.endOffset
})

/** Whether a log ending with (`epoch`, `endOffset`) is at least as up to date as this one. */
export const isUpToDate = (log: LogView, epoch: number, endOffset: number): boolean => {
  const mine = lastEpoch(log)
  return epoch > mine || (epoch === mine && endOffset >= log.endOffset)
}
