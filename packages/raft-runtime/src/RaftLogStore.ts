/**
 * The replicated metadata log as the raft core sees it: `__cluster_metadata-0` on a storage
 * `PartitionLog` (the directory layout of `MetadataLog`), holding record batches whose
 * `partitionLeaderEpoch` is the epoch they were appended in, as in Kafka. The leader's records become
 * batches here (one batch per run of data records of an `AppendLog`, one control batch per
 * LeaderChange); a follower's fetched batches are appended bytes unchanged, so every voter's log is
 * byte-identical. Appends are not fsynced until `flush`, which the core asks for separately;
 * truncations are fsynced at once. Opening recovers the log (a torn tail after the last fsync is cut
 * to the last valid batch by the storage recovery) and rebuilds the epoch view from the batches.
 * Below the log start offset is the latest snapshot (`RaftSnapshotStore`): the log opens at the
 * snapshot's end offset (records below it are deleted, a log that ended before it restarts empty at
 * it), and a snapshot moves the log start up or replaces the whole log. It must not decide anything:
 * the core says what to write.
 */
import { METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID } from "@clustermirror/metadata-log/MetadataLog"
import { RecordBatch } from "@clustermirror/protocol"
import type { RaftLog, RaftMessages } from "@clustermirror/raft"
import { PartitionLogStore, type PartitionLog } from "@clustermirror/storage"
import { Either } from "effect"
import { Buffer } from "node:buffer"
import * as LeaderChange from "./internal/LeaderChange.js"

/** A record of the log as the core handles it: data records carry their value bytes. */
export type Record = RaftMessages.LogRecord<Buffer>

/** Largest batch the log accepts. */
export const MAX_BATCH_BYTES = 8 * 1024 * 1024

export interface RaftLogStore {
  /** The offsets and epochs of the log, as the core is told at start. */
  readonly view: () => RaftLog.LogView
  readonly endOffset: () => number
  readonly logStartOffset: () => number
  /** Whether a batch starts at `offset` (or the log ends there): a snapshot must end on a batch boundary. */
  readonly isBatchBoundary: (offset: number) => boolean
  /** A snapshot now holds the records below `offset` (a batch boundary): the log starts there, durably. */
  readonly deleteBefore: (offset: number, snapshotId: RaftMessages.SnapshotId) => void
  /** A snapshot fetched from the leader replaces the whole log: empty, starting at its end offset, durably. */
  readonly reset: (snapshotId: RaftMessages.SnapshotId) => void
  /** Appends the core's records (offsets and epochs as given) as new batches; not yet durable. */
  readonly appendRecords: (records: ReadonlyArray<Record>, now: number) => void
  /** Appends whole batches fetched from the leader, bytes unchanged; not yet durable. */
  readonly appendBatches: (batches: Buffer, now: number) => void
  /** Removes every record at and after `offset` (a batch boundary), durably. */
  readonly truncateTo: (offset: number) => void
  /** fsyncs the log; returns the end offset now durable. */
  readonly flush: () => number
  /** Whole batches whose base offset is in [from, to), back to back. */
  readonly read: (from: number, to: number) => Buffer
  readonly close: () => void
}

/**
 * Thrown on opening a log this runtime cannot serve (it starts past its snapshot: records are
 * missing) and on a truncation inside a batch.
 */
export class InvalidBatches extends Error {}

/** The records of whole batches (data records with their values, LeaderChange control records). */
export const decodeBatches = (bytes: Buffer): Either.Either<Array<Record>, string> => {
  const out: Array<Record> = []
  const { batches, rest } = RecordBatch.split(bytes)
  if (rest !== bytes.length) return Either.left(`${bytes.length - rest} bytes of a partial batch`)
  for (const ref of batches) {
    const p = ref.position
    const epoch = RecordBatch.partitionLeaderEpoch(bytes, p)
    const records = RecordBatch.records(bytes, p)
    if (Either.isLeft(records)) return Either.left(records.left.message)
    if (RecordBatch.isControl(bytes, p)) {
      for (const r of records.right) {
        const type = r.key !== null && r.key.length >= 4 ? Buffer.from(r.key).readInt16BE(2) : -1
        if (type !== LeaderChange.LEADER_CHANGE || r.value === null)
          return Either.left(`control record of type ${type} at offset ${r.offset}`)
        const value = LeaderChange.decode(r.value)
        if (Either.isLeft(value)) return Either.left(`LeaderChange at offset ${r.offset}: ${value.left}`)
        out.push({ _tag: "LeaderChange", offset: r.offset, epoch, value: value.right })
      }
      continue
    }
    for (const r of records.right) {
      if (r.value === null) return Either.left(`record at offset ${r.offset} has no value`)
      out.push({ _tag: "Data", offset: r.offset, epoch, value: Buffer.from(r.value) })
    }
  }
  return Either.right(out)
}

/** The batches holding `records`, which follow each other from the first's offset. */
export const encodeRecords = (records: ReadonlyArray<Record>, now: number): Array<Buffer> => {
  const out: Array<Buffer> = []
  let run: Array<Extract<Record, { _tag: "Data" }>> = []
  const close = () => {
    const first = run[0]
    if (first === undefined) return
    out.push(
      RecordBatch.build({
        records: run.map((r) => ({ value: r.value })),
        baseOffset: first.offset,
        partitionLeaderEpoch: first.epoch,
        timestamp: now
      })
    )
    run = []
  }
  for (const r of records) {
    if (r._tag === "LeaderChange") {
      close()
      out.push(
        RecordBatch.build({
          records: [{ key: LeaderChange.key(), value: LeaderChange.encode(r.value) }],
          baseOffset: r.offset,
          partitionLeaderEpoch: r.epoch,
          timestamp: now,
          isControl: true
        })
      )
    } else {
      const first = run[0]
      if (first !== undefined && first.epoch !== r.epoch) close()
      run.push(r)
    }
  }
  close()
  return out
}

const scanView = (log: PartitionLog.PartitionLog, snapshotId: RaftMessages.SnapshotId | null): RaftLog.LogView => {
  const epochs: Array<RaftLog.EpochEntry> = []
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const { records } = log.read(offset, MAX_BATCH_BYTES)
    const { batches } = RecordBatch.split(records)
    if (batches.length === 0) break
    for (const ref of batches) {
      const epoch = RecordBatch.partitionLeaderEpoch(records, ref.position)
      const last = epochs[epochs.length - 1]
      if (last === undefined || last.epoch !== epoch)
        epochs.push({ epoch, startOffset: RecordBatch.baseOffset(records, ref.position) })
      offset = RecordBatch.lastOffset(records, ref.position) + 1
    }
  }
  return {
    logStartOffset: log.logStartOffset,
    snapshotId,
    endOffset: log.logEndOffset,
    epochs,
    flushedOffset: log.logEndOffset
  }
}

const over = (log: PartitionLog.PartitionLog, snapshot: RaftMessages.SnapshotId | null): RaftLogStore => {
  let snapshotId = snapshot
  const start = snapshot?.endOffset ?? 0
  if (log.logStartOffset > start)
    throw new InvalidBatches(
      `the metadata log starts at ${log.logStartOffset}, past ${snapshot === null ? "offset 0 without a snapshot" : `the snapshot ending at ${start}`}: records are missing`
    )
  const isBatchBoundary = (offset: number): boolean => {
    if (offset >= log.logEndOffset) return offset === log.logEndOffset
    const { records } = log.read(offset, RecordBatch.HEADER_SIZE)
    return records.length >= RecordBatch.LOG_OVERHEAD && RecordBatch.baseOffset(records, 0) === offset
  }
  const deleteBefore = (offset: number) => {
    log.updateHighWatermark(offset)
    log.deleteRecordsBefore(offset)
  }
  if (log.logStartOffset < start) {
    // A crash after the snapshot was made and before the log followed it: the log catches up now.
    if (log.logEndOffset >= start && isBatchBoundary(start)) deleteBefore(start)
    else log.truncateFullyAndStartAt(start)
  }
  // What was recovered is made durable before the core is told it is flushed.
  log.flush()
  return {
    view: () => scanView(log, snapshotId),
    endOffset: () => log.logEndOffset,
    logStartOffset: () => log.logStartOffset,
    isBatchBoundary,
    deleteBefore: (offset, id) => {
      if (!isBatchBoundary(offset)) throw new InvalidBatches(`the log start cannot move inside a batch (${offset})`)
      deleteBefore(offset)
      log.flush()
      snapshotId = id
    },
    reset: (id) => {
      log.truncateFullyAndStartAt(id.endOffset)
      log.flush()
      snapshotId = id
    },
    appendRecords: (records, now) => {
      for (const batch of encodeRecords(records, now)) log.appendAsFollower(batch, now)
    },
    appendBatches: (batches, now) => {
      // The log may rewrite headers in place; the caller's buffer stays as it was.
      log.appendAsFollower(Buffer.from(batches), now)
    },
    truncateTo: (offset) => {
      if (offset >= log.logEndOffset) return
      // The storage log cuts whole batches: a cut inside one would lose records the core still counts.
      const { records } = log.read(offset, RecordBatch.HEADER_SIZE)
      const base = records.length >= RecordBatch.LOG_OVERHEAD ? RecordBatch.baseOffset(records, 0) : offset
      if (base !== offset) throw new InvalidBatches(`truncation to ${offset} is inside the batch starting at ${base}`)
      log.truncateTo(offset)
      log.flush()
    },
    flush: () => {
      log.flush()
      return log.logEndOffset
    },
    read: (from, to) => {
      const chunks: Array<Buffer> = []
      let offset = from
      while (offset < to && offset < log.logEndOffset) {
        const { records } = log.read(offset, MAX_BATCH_BYTES)
        const { batches } = RecordBatch.split(records)
        if (batches.length === 0) break
        for (const ref of batches) {
          if (RecordBatch.baseOffset(records, ref.position) >= to) return Buffer.concat(chunks)
          chunks.push(records.subarray(ref.position, ref.position + ref.size))
          offset = RecordBatch.lastOffset(records, ref.position) + 1
        }
      }
      return Buffer.concat(chunks)
    },
    close: () => log.close()
  }
}

/**
 * The metadata log under `dataDir` (`<dataDir>/__cluster_metadata-0`), recovered, starting at the end
 * of `snapshot` (the latest snapshot, or null). Throws storage errors.
 */
export const openFile = (dataDir: string, snapshot: RaftMessages.SnapshotId | null = null): RaftLogStore =>
  over(
    PartitionLogStore.makeFileStore(dataDir).open(
      METADATA_TOPIC,
      METADATA_PARTITION,
      { maxMessageBytes: MAX_BATCH_BYTES },
      METADATA_TOPIC_ID
    ),
    snapshot
  )

/** The same log in memory. */
export const openMemory = (): RaftLogStore =>
  over(
    PartitionLogStore.makeMemoryStore().open(
      METADATA_TOPIC,
      METADATA_PARTITION,
      { maxMessageBytes: MAX_BATCH_BYTES },
      METADATA_TOPIC_ID
    ),
    null
  )
