/**
 * MetadataLog: the metadata log `__cluster_metadata` partition 0 on a storage `PartitionLog`, and
 * its snapshots. The active controller appends records as leader (one record batch per append,
 * fsynced before the append returns); brokers append the batches they fetched from the controller as
 * followers, bytes unchanged. Both restart from the latest snapshot plus the log tail, through a
 * `MetadataLoader`.
 *
 * Batch values are Kafka-framed metadata records (`MetadataRecords.encode`). Snapshot files sit in
 * the partition directory as `<20-digit end offset>-<10-digit epoch>.checkpoint`: record batches of
 * framed records (CRC-protected), written atomically. A snapshot at end offset N holds every record
 * below N.
 *
 * The metadata log has a single writer, so everything it holds is committed: the high watermark
 * follows the log end. This module moves and decodes bytes; it must not decide anything, and the
 * network (serving or sending Fetch) belongs to the nodes.
 */
import { MetadataRecords, RecordBatch, Uuid } from "@clustermirror/protocol"
import { PartitionLogStore, StorageError } from "@clustermirror/storage"
import type { PartitionLog } from "@clustermirror/storage"
import { Buffer } from "node:buffer"
import * as path from "node:path"
import { Clock, Context, Effect, Either, Layer, Option } from "effect"
import * as SnapshotFiles from "./internal/SnapshotFiles.js"
import type * as MetadataImage from "./MetadataImage.js"
import { CorruptMetadataBatch, DivergentFetch, type NotLeader, SnapshotError } from "./MetadataLogError.js"
import * as MetadataProvenance from "./MetadataProvenance.js"
import type { MetadataBatch, MetadataLoader } from "./MetadataPublisher.js"
import * as Snapshot from "./Snapshot.js"

export const METADATA_TOPIC = "__cluster_metadata"
export const METADATA_PARTITION = 0
export const METADATA_TOPIC_ID: Uuid.Uuid = Uuid.METADATA_TOPIC_ID

/** Largest single append; Kafka's controller uses the same bound for an atomic batch. */
export const MAX_BATCH_BYTES = 8 * 1024 * 1024

/** Records per batch inside a snapshot file. */
const SNAPSHOT_RECORDS_PER_BATCH = 1000

const LOG_CONFIG = { maxMessageBytes: MAX_BATCH_BYTES }

// ---------------------------------------------------------------------------------------------------
// Batches

/** Builds one uncompressed batch of framed metadata records (offsets and epoch are the log's to set). */
export const encodeBatch = (
  records: ReadonlyArray<MetadataRecords.MetadataRecord>,
  options: { readonly baseOffset?: number; readonly leaderEpoch?: number; readonly timestamp: number }
): Buffer =>
  RecordBatch.build({
    records: records.map((r) => ({ value: MetadataRecords.encode(r) })),
    baseOffset: options.baseOffset ?? 0,
    partitionLeaderEpoch: options.leaderEpoch ?? -1,
    timestamp: options.timestamp
  })

/**
 * The records and provenance of the batch at `position`. Control batches (Kafka's leader-change and
 * snapshot markers) carry no metadata: their records are empty but their provenance still counts.
 */
export const decodeBatch = (bytes: Buffer, position = 0): Either.Either<MetadataBatch, CorruptMetadataBatch> => {
  const offset = bytes.length - position >= RecordBatch.LOG_OVERHEAD ? RecordBatch.baseOffset(bytes, position) : -1
  const corrupt = (message: string) => Either.left(new CorruptMetadataBatch({ message, offset }))
  const decoded = RecordBatch.records(bytes, position)
  if (Either.isLeft(decoded)) return corrupt(decoded.left.message)
  const provenance = MetadataProvenance.make(
    RecordBatch.lastOffset(bytes, position),
    RecordBatch.partitionLeaderEpoch(bytes, position),
    RecordBatch.maxTimestamp(bytes, position)
  )
  if (RecordBatch.isControl(bytes, position)) return Either.right({ records: [], provenance })
  const records: MetadataRecords.MetadataRecord[] = []
  for (const r of decoded.right) {
    if (r.value === null) return corrupt(`record at offset ${r.offset} has no value`)
    const record = MetadataRecords.decode(r.value)
    if (Either.isLeft(record)) return corrupt(`record at offset ${r.offset}: ${record.left.message}`)
    records.push(record.right)
  }
  return Either.right({ records, provenance })
}

/** Every complete batch in `bytes`, decoded; an incomplete trailing batch is ignored. */
export const decodeBatches = (bytes: Buffer): Either.Either<Array<MetadataBatch>, CorruptMetadataBatch> => {
  const out: MetadataBatch[] = []
  for (const ref of RecordBatch.split(bytes).batches) {
    const batch = decodeBatch(bytes, ref.position)
    if (Either.isLeft(batch)) return Either.left(batch.left)
    out.push(batch.right)
  }
  return Either.right(out)
}

// ---------------------------------------------------------------------------------------------------
// Snapshot files

const SNAPSHOT_NAME = /^(\d{20})-(\d{10})\.checkpoint$/

const pad = (n: number, width: number): string => String(n).padStart(width, "0")

/** The file name of a snapshot ending at `endOffset`, taken in `epoch`. */
export const snapshotFileName = (endOffset: number, epoch: number): string =>
  `${pad(endOffset, 20)}-${pad(Math.max(epoch, 0), 10)}.checkpoint`

/** A snapshot read back: its records rebuild the image of every record below `endOffset`. */
export interface StoredSnapshot {
  readonly endOffset: number
  readonly provenance: MetadataProvenance.MetadataProvenance
  readonly records: ReadonlyArray<MetadataRecords.MetadataRecord>
}

/** The bytes of a snapshot file: batches of framed records, stamped with the image's provenance. */
export const encodeSnapshot = (image: MetadataImage.MetadataImage): Buffer => {
  const records = Snapshot.imageToRecords(image)
  const { lastEpoch, lastContainedLogTimeMs } = image.provenance
  const chunks: Buffer[] = []
  // At least one batch, even for an empty image, so that the provenance is always written.
  for (let i = 0; i === 0 || i < records.length; i += SNAPSHOT_RECORDS_PER_BATCH)
    chunks.push(
      RecordBatch.build({
        records: records.slice(i, i + SNAPSHOT_RECORDS_PER_BATCH).map((r) => ({ value: MetadataRecords.encode(r) })),
        baseOffset: i,
        partitionLeaderEpoch: lastEpoch,
        timestampType: "LogAppendTime",
        timestamp: lastContainedLogTimeMs
      })
    )
  return Buffer.concat(chunks)
}

/** Reads a snapshot file's bytes back; anything short of whole valid batches is an error. */
export const decodeSnapshot = (endOffset: number, bytes: Buffer): Either.Either<StoredSnapshot, SnapshotError> => {
  const { batches, rest } = RecordBatch.split(bytes)
  if (batches.length === 0 || rest !== bytes.length)
    return Either.left(new SnapshotError({ message: `snapshot ${endOffset} is incomplete` }))
  const records: MetadataRecords.MetadataRecord[] = []
  for (const ref of batches) {
    const batch = decodeBatch(bytes, ref.position)
    if (Either.isLeft(batch))
      return Either.left(
        new SnapshotError({ message: `snapshot ${endOffset}: ${batch.left.message}`, cause: batch.left })
      )
    records.push(...batch.right.records)
  }
  const first = batches[0]!.position
  const provenance = MetadataProvenance.make(
    endOffset - 1,
    RecordBatch.partitionLeaderEpoch(bytes, first),
    RecordBatch.maxTimestamp(bytes, first)
  )
  return Either.right({ endOffset, provenance, records })
}

// ---------------------------------------------------------------------------------------------------
// The service

export interface AppendResult {
  readonly baseOffset: number
  readonly lastOffset: number
  /** The provenance of an image that includes this append. */
  readonly provenance: MetadataProvenance.MetadataProvenance
}

export interface ReadResult {
  /** Whole batches, back to back (what a Fetch response carries). */
  readonly records: Buffer
  /** The same bytes, one view per batch. */
  readonly batches: ReadonlyArray<Buffer>
  readonly highWatermark: number
  readonly logEndOffset: number
}

export interface MetadataLogService {
  /**
   * Controller: appends the records as one batch as leader in `leaderEpoch`, durable (fsynced, and on a
   * quorum's log committed by a majority) before returning. `NotLeader` only from a quorum's log.
   */
  readonly append: (
    records: ReadonlyArray<MetadataRecords.MetadataRecord>,
    leaderEpoch: number
  ) => Effect.Effect<AppendResult, StorageError.StorageError | NotLeader>
  /** Whole batches from the one holding `offset`, at most `maxBytes` (at least one batch). */
  readonly readFrom: (offset: number, maxBytes?: number) => Effect.Effect<ReadResult, StorageError.StorageError>
  /**
   * Broker: appends fetched batches as follower (bytes unchanged, fsynced) and returns the ones that
   * are new, decoded for the loader. Batches wholly below the log end (a repeated fetch) are skipped;
   * a batch that starts past the log end or straddles it is a `DivergentFetch`.
   */
  readonly appendFetched: (
    bytes: Buffer
  ) => Effect.Effect<ReadonlyArray<MetadataBatch>, StorageError.StorageError | CorruptMetadataBatch | DivergentFetch>
  /** The next offset to append (a broker's fetch offset). */
  readonly logEndOffset: Effect.Effect<number>
  /** The epoch of the last batch; -1 when empty (a broker's last fetched epoch). */
  readonly latestEpoch: Effect.Effect<number>
  /** Writes `image` as the snapshot ending at `endOffset`, which must follow its last record. */
  readonly writeSnapshot: (image: MetadataImage.MetadataImage, endOffset: number) => Effect.Effect<void, SnapshotError>
  /** The newest readable snapshot; unreadable newer files are passed over. */
  readonly latestSnapshot: Effect.Effect<Option.Option<StoredSnapshot>>
  /**
   * Restart: loads the latest snapshot (if any) into the loader, then every batch after it, and
   * returns the loaded image. A log that ends before the snapshot restarts empty at its end.
   */
  readonly loadInto: (
    loader: MetadataLoader
  ) => Effect.Effect<MetadataImage.MetadataImage, StorageError.StorageError | CorruptMetadataBatch | SnapshotError>
  /** Flushes and closes the log. */
  readonly close: Effect.Effect<void, StorageError.StorageError>
}

export class MetadataLog extends Context.Tag("@clustermirror/metadata-log/MetadataLog")<
  MetadataLog,
  MetadataLogService
>() {}

const STORAGE_ERRORS = [
  StorageError.CorruptRecordError,
  StorageError.RecordTooLargeError,
  StorageError.OffsetOutOfRangeError,
  StorageError.OutOfOrderSequenceError,
  StorageError.InvalidProducerEpochError,
  StorageError.UnknownProducerIdError,
  StorageError.InvalidOffsetError,
  StorageError.KafkaStorageError
] as const

const isStorageError = (e: unknown): e is StorageError.StorageError => STORAGE_ERRORS.some((c) => e instanceof c)

/** Runs a storage call: its typed errors fail, anything else is a defect. */
const storage = <A>(f: () => A): Effect.Effect<A, StorageError.StorageError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(f())
    } catch (e) {
      return isStorageError(e) ? Effect.fail(e) : Effect.die(e)
    }
  })

const snapshotIo = <A>(what: string, f: () => A): Effect.Effect<A, SnapshotError> =>
  Effect.try({ try: f, catch: (cause) => new SnapshotError({ message: `${what}: ${String(cause)}`, cause }) })

/** A metadata log over an opened partition log and a place for snapshot files. */
export const make = (log: PartitionLog.PartitionLog, snapshots: SnapshotFiles.SnapshotFiles): MetadataLogService => {
  const commit = (): void => {
    log.flush()
    log.updateHighWatermark(log.logEndOffset)
  }

  const readFrom = (offset: number, maxBytes = 1024 * 1024) =>
    storage(() => {
      const info = log.read(offset, maxBytes)
      const batches = RecordBatch.split(info.records).batches.map((b) =>
        info.records.subarray(b.position, b.position + b.size)
      )
      return {
        records: info.records,
        batches,
        highWatermark: info.highWatermark,
        logEndOffset: info.logEndOffset
      }
    })

  const latestSnapshot: Effect.Effect<Option.Option<StoredSnapshot>> = Effect.sync(() => {
    const found: Array<{ name: string; endOffset: number }> = []
    for (const name of snapshots.list()) {
      const m = SNAPSHOT_NAME.exec(name)
      if (m !== null) found.push({ name, endOffset: Number(m[1]) })
    }
    found.sort((a, b) => b.endOffset - a.endOffset)
    for (const { name, endOffset } of found) {
      const bytes = snapshots.read(name)
      if (bytes === undefined) continue
      const decoded = decodeSnapshot(endOffset, bytes)
      if (Either.isRight(decoded)) return Option.some(decoded.right)
    }
    return Option.none()
  })

  return {
    append: Effect.fn("MetadataLog.append")(function* (records, leaderEpoch) {
      const now = yield* Clock.currentTimeMillis
      if (records.length === 0) {
        const end = log.logEndOffset
        return {
          baseOffset: end,
          lastOffset: end - 1,
          provenance: MetadataProvenance.make(end - 1, leaderEpoch, now)
        }
      }
      const batch = encodeBatch(records, { leaderEpoch, timestamp: now })
      const info = yield* storage(() => {
        const appended = log.appendAsLeader(batch, leaderEpoch, now)
        commit()
        return appended
      })
      return {
        baseOffset: info.firstOffset,
        lastOffset: info.lastOffset,
        provenance: MetadataProvenance.make(info.lastOffset, leaderEpoch, now)
      }
    }),
    readFrom,
    appendFetched: Effect.fn("MetadataLog.appendFetched")(function* (bytes) {
      const end = log.logEndOffset
      const fresh: Buffer[] = []
      const decoded: MetadataBatch[] = []
      let next = end
      for (const ref of RecordBatch.split(bytes).batches) {
        const base = RecordBatch.baseOffset(bytes, ref.position)
        const last = RecordBatch.lastOffset(bytes, ref.position)
        if (last < end) continue
        if (base !== next)
          return yield* new DivergentFetch({
            message: `fetched batch at ${base} does not continue the log at ${next}`,
            offset: base,
            logEndOffset: end
          })
        const batch = decodeBatch(bytes, ref.position)
        if (Either.isLeft(batch)) return yield* batch.left
        fresh.push(bytes.subarray(ref.position, ref.position + ref.size))
        decoded.push(batch.right)
        next = last + 1
      }
      if (fresh.length === 0) return decoded
      // The log may rewrite headers in place; the caller's buffer stays as it was.
      const copy = Buffer.concat(fresh)
      const now = yield* Clock.currentTimeMillis
      yield* storage(() => {
        log.appendAsFollower(copy, now)
        commit()
      })
      return decoded
    }),
    logEndOffset: Effect.sync(() => log.logEndOffset),
    latestEpoch: Effect.sync(() => log.latestEpoch()),
    writeSnapshot: Effect.fn("MetadataLog.writeSnapshot")(function* (image, endOffset) {
      if (endOffset !== MetadataProvenance.nextOffset(image.provenance))
        return yield* new SnapshotError({
          message: `an image whose last offset is ${image.provenance.lastOffset} cannot be the snapshot ending at ${endOffset}`
        })
      const bytes = encodeSnapshot(image)
      const name = snapshotFileName(endOffset, image.provenance.lastEpoch)
      yield* snapshotIo(`write ${name}`, () => snapshots.writeAtomic(name, bytes))
    }),
    latestSnapshot,
    loadInto: Effect.fn("MetadataLog.loadInto")(function* (loader) {
      const snapshot = yield* latestSnapshot
      let from = log.logStartOffset
      if (Option.isSome(snapshot)) {
        yield* loader.loadSnapshot(snapshot.value.records, snapshot.value.provenance)
        from = snapshot.value.endOffset
        // The tail after the snapshot was lost (or never fetched): continue from the snapshot.
        if (from > log.logEndOffset || from < log.logStartOffset)
          yield* storage(() => log.truncateFullyAndStartAt(from))
      } else if (from > 0)
        return yield* new SnapshotError({
          message: `the log starts at ${from} and no snapshot covers the records before`
        })
      while (from < log.logEndOffset) {
        const read = yield* readFrom(from)
        if (read.batches.length === 0) break
        const batches = yield* decodeBatches(read.records)
        yield* loader.handleCommit(batches)
        from = batches[batches.length - 1]!.provenance.lastOffset + 1
      }
      return yield* loader.image
    }),
    close: storage(() => log.close())
  }
}

const open = (store: PartitionLogStore.PartitionLogStoreService): PartitionLog.PartitionLog =>
  store.open(METADATA_TOPIC, METADATA_PARTITION, LOG_CONFIG, METADATA_TOPIC_ID)

/** The metadata log under `dataDir` (`<dataDir>/__cluster_metadata-0`, snapshots beside the segments). */
export const makeFile = (dataDir: string): Effect.Effect<MetadataLogService, StorageError.StorageError> =>
  storage(() => {
    const log = open(PartitionLogStore.makeFileStore(dataDir))
    return make(log, SnapshotFiles.files(path.join(dataDir, `${METADATA_TOPIC}-${METADATA_PARTITION}`)))
  })

/** A metadata log in memory (same contract; gone when dropped). */
export const makeMemory = (): MetadataLogService =>
  make(open(PartitionLogStore.makeMemoryStore()), SnapshotFiles.memory())

/** The file-backed metadata log; closed when the layer is released. */
export const layer = (dataDir: string): Layer.Layer<MetadataLog, StorageError.StorageError> =>
  Layer.scoped(
    MetadataLog,
    Effect.acquireRelease(makeFile(dataDir), (log) => Effect.orDie(log.close))
  )

/** An in-memory metadata log. */
export const layerMemory: Layer.Layer<MetadataLog> = Layer.sync(MetadataLog, makeMemory)
