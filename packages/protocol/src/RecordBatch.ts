/**
 * Record batch v2 (magic 2): a zero-copy view of the 61-byte batch header.
 *
 * The data path reads and rewrites only these header fields, never the records. Offsets are JS numbers
 * (exact up to 2^53, far beyond any real log).
 *
 * RecordBatch => BaseOffset:int64 BatchLength:int32 PartitionLeaderEpoch:int32 Magic:int8 CRC:uint32
 *   Attributes:int16 LastOffsetDelta:int32 BaseTimestamp:int64 MaxTimestamp:int64 ProducerId:int64
 *   ProducerEpoch:int16 BaseSequence:int32 Records:[Record]   (CRC-32C over Attributes..end)
 * Record => Length:varint Attributes:int8 TimestampDelta:varlong OffsetDelta:varint
 *   Key:varint-bytes Value:varint-bytes Headers:[HeaderKey:varint-string HeaderValue:varint-bytes]
 *   (varint lengths, -1 = null; the header count is a varint; Records may be compressed as a whole)
 *
 * Besides the view it owns the builder (`build`), record iteration (`iterate`, `records`) and the
 * integrity checks the storage layer runs on appends and recovery (`validate`, `verifyCrc`). Iteration
 * decompresses, so it belongs to tools, tests and control-batch handling, not to the fetch/append path.
 * Corrupt input yields `CorruptBatch`, never an exception.
 */
import { Data, Either } from "effect"
import { Buffer } from "node:buffer"
import * as Codec from "./Compression.js"
import * as Crc32c from "./Crc32c.js"
import { Reader, Writer } from "./internal/Bytes.js"

export const BASE_OFFSET = 0
export const BATCH_LENGTH = 8
export const PARTITION_LEADER_EPOCH = 12
export const MAGIC = 16
export const CRC = 17
export const ATTRIBUTES = 21
export const LAST_OFFSET_DELTA = 23
export const BASE_TIMESTAMP = 27
export const MAX_TIMESTAMP = 35
export const PRODUCER_ID = 43
export const PRODUCER_EPOCH = 51
export const BASE_SEQUENCE = 53
export const RECORD_COUNT = 57
/** Size of the v2 header; records start here. */
export const HEADER_SIZE = 61
/** Bytes before BatchLength's payload: BaseOffset + BatchLength. */
export const LOG_OVERHEAD = 12

export const COMPRESSION_MASK = 0x07
export const TIMESTAMP_TYPE_MASK = 0x08
export const TRANSACTIONAL_MASK = 0x10
export const CONTROL_MASK = 0x20
export const DELETE_HORIZON_MASK = 0x40

export type CompressionType = Codec.CompressionType
export const Compression = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const

export const baseOffset = (b: Buffer, p = 0): number => Number(b.readBigInt64BE(p + BASE_OFFSET))
/** Bytes of the batch after the BatchLength field. */
export const batchLength = (b: Buffer, p = 0): number => b.readInt32BE(p + BATCH_LENGTH)
/** Whole size of the batch in bytes. */
export const sizeInBytes = (b: Buffer, p = 0): number => b.readInt32BE(p + BATCH_LENGTH) + LOG_OVERHEAD
export const partitionLeaderEpoch = (b: Buffer, p = 0): number => b.readInt32BE(p + PARTITION_LEADER_EPOCH)
export const magic = (b: Buffer, p = 0): number => b.readInt8(p + MAGIC)
export const crc = (b: Buffer, p = 0): number => b.readUInt32BE(p + CRC)
export const attributes = (b: Buffer, p = 0): number => b.readInt16BE(p + ATTRIBUTES)
export const lastOffsetDelta = (b: Buffer, p = 0): number => b.readInt32BE(p + LAST_OFFSET_DELTA)
export const lastOffset = (b: Buffer, p = 0): number => baseOffset(b, p) + lastOffsetDelta(b, p)
export const baseTimestamp = (b: Buffer, p = 0): number => Number(b.readBigInt64BE(p + BASE_TIMESTAMP))
export const maxTimestamp = (b: Buffer, p = 0): number => Number(b.readBigInt64BE(p + MAX_TIMESTAMP))
export const producerId = (b: Buffer, p = 0): bigint => b.readBigInt64BE(p + PRODUCER_ID)
export const producerEpoch = (b: Buffer, p = 0): number => b.readInt16BE(p + PRODUCER_EPOCH)
export const baseSequence = (b: Buffer, p = 0): number => b.readInt32BE(p + BASE_SEQUENCE)
export const recordCount = (b: Buffer, p = 0): number => b.readInt32BE(p + RECORD_COUNT)

export const compression = (b: Buffer, p = 0): CompressionType =>
  (attributes(b, p) & COMPRESSION_MASK) as CompressionType
export const isTransactional = (b: Buffer, p = 0): boolean => (attributes(b, p) & TRANSACTIONAL_MASK) !== 0

/** Whether produced records hold a transactional batch (v2 batches; a truncated tail is not looked at). */
export const hasTransactionalBatch = (records: Uint8Array | null): boolean => {
  if (records === null) return false
  const b = Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength)
  for (let p = 0; p + HEADER_SIZE <= b.length; p += sizeInBytes(b, p)) {
    if (magic(b, p) === 2 && isTransactional(b, p)) return true
    if (batchLength(b, p) <= 0) return false
  }
  return false
}
export const isControl = (b: Buffer, p = 0): boolean => (attributes(b, p) & CONTROL_MASK) !== 0
/** The delete horizon the log cleaner set on the batch (KIP-534), -1 when none. */
export const deleteHorizonMs = (b: Buffer, p = 0): number =>
  (attributes(b, p) & DELETE_HORIZON_MASK) !== 0 ? baseTimestamp(b, p) : -1
export const hasProducerId = (b: Buffer, p = 0): boolean => producerId(b, p) >= 0n

/** Rewrites the base offset in place (leader append assigns offsets; CRC does not cover it). */
export const setBaseOffset = (b: Buffer, offset: number, p = 0): void => {
  b.writeBigInt64BE(BigInt(offset), p + BASE_OFFSET)
}

/** Rewrites the partition leader epoch in place (not covered by the CRC). */
export const setPartitionLeaderEpoch = (b: Buffer, epoch: number, p = 0): void => {
  b.writeInt32BE(epoch, p + PARTITION_LEADER_EPOCH)
}

/** One batch located in a buffer. */
export interface BatchRef {
  readonly position: number
  readonly size: number
}

/**
 * Splits a buffer of back-to-back batches. Stops at the first incomplete batch (a fetch response may
 * end with a partial one); `rest` is the position where complete batches end.
 */
export const split = (b: Buffer): { batches: BatchRef[]; rest: number } => {
  const batches: BatchRef[] = []
  let p = 0
  while (b.length - p >= LOG_OVERHEAD) {
    const size = b.readInt32BE(p + BATCH_LENGTH) + LOG_OVERHEAD
    if (size < HEADER_SIZE || p + size > b.length) break
    batches.push({ position: p, size })
    p += size
  }
  return { batches, rest: p }
}

export type TimestampType = "CreateTime" | "LogAppendTime"

export const timestampType = (b: Buffer, p = 0): TimestampType =>
  (attributes(b, p) & TIMESTAMP_TYPE_MASK) !== 0 ? "LogAppendTime" : "CreateTime"

// ---------------------------------------------------------------------------------------------------
// Records

export interface Header {
  readonly key: string
  readonly value: Uint8Array | null
}

/** A record as stored in a batch: offset and timestamp relative to the batch's base. */
export interface Record {
  readonly offsetDelta: number
  readonly timestampDelta: number
  readonly key: Uint8Array | null
  readonly value: Uint8Array | null
  readonly headers: ReadonlyArray<Header>
}

/** A record read from a batch, with its absolute offset and timestamp. */
export interface BatchRecord extends Record {
  readonly offset: number
  readonly timestamp: number
}

/** What made a batch unreadable. */
export type CorruptReason =
  | "Truncated"
  | "InvalidSize"
  | "InvalidMagic"
  | "CrcMismatch"
  | "InvalidHeader"
  | "UnsupportedCompression"
  | "Compression"
  | "InvalidRecord"
  | "RecordCountMismatch"

/** A batch that fails validation or whose records cannot be decoded; `position` is the batch's. */
export class CorruptBatch extends Data.TaggedError("CorruptBatch")<{
  readonly reason: CorruptReason
  readonly message: string
  readonly position: number
}> {}

const corrupt = (reason: CorruptReason, position: number, message: string): CorruptBatch =>
  new CorruptBatch({ reason, position, message })

/** The CRC-32C the batch at `p` (of `size` bytes) should carry. */
const computeCrc = (b: Buffer, p: number, size: number): number => Crc32c.compute(b.subarray(p + ATTRIBUTES, p + size))

/** Whether the batch at `p` is complete and its stored CRC matches its bytes; false for any short input. */
export const verifyCrc = (b: Buffer, p = 0): boolean => {
  if (p < 0 || b.length - p < HEADER_SIZE) return false
  const size = sizeInBytes(b, p)
  if (size < HEADER_SIZE || size > b.length - p) return false
  return computeCrc(b, p, size) === crc(b, p)
}

/**
 * Checks the batch at `p` without reading its records: complete, a sane size, magic 2, a matching
 * CRC, a non-negative record count and a known codec. Returns where the batch lies.
 */
export const validate = (b: Buffer, p = 0): Either.Either<BatchRef, CorruptBatch> => {
  if (!Number.isInteger(p) || p < 0 || b.length - p < HEADER_SIZE)
    return Either.left(corrupt("Truncated", p, `need ${HEADER_SIZE} header bytes, have ${Math.max(0, b.length - p)}`))
  const size = sizeInBytes(b, p)
  if (size < HEADER_SIZE) return Either.left(corrupt("InvalidSize", p, `batch size ${size} is below ${HEADER_SIZE}`))
  if (size > b.length - p) return Either.left(corrupt("Truncated", p, `batch of ${size} bytes, have ${b.length - p}`))
  const m = magic(b, p)
  if (m !== 2) return Either.left(corrupt("InvalidMagic", p, `magic ${m}, expected 2`))
  const computed = computeCrc(b, p, size)
  if (computed !== crc(b, p))
    return Either.left(corrupt("CrcMismatch", p, `stored CRC ${crc(b, p)} but computed ${computed}`))
  if (recordCount(b, p) < 0) return Either.left(corrupt("InvalidHeader", p, `record count ${recordCount(b, p)}`))
  const codec = attributes(b, p) & COMPRESSION_MASK
  if (!Codec.isCompressionType(codec))
    return Either.left(corrupt("UnsupportedCompression", p, `compression type ${codec}`))
  return Either.right({ position: p, size })
}

/** Thrown only inside `readRecord`; `iterate` turns it into a `CorruptBatch`. */
class RecordFailure extends Error {}

const readBytes = (r: Reader): Uint8Array | null => {
  const n = r.varint()
  if (n < -1) throw new RecordFailure(`negative length ${n}`)
  return n === -1 ? null : r.bytes(n)
}

const readRecord = (r: Reader): Record => {
  const length = r.varint()
  if (length < 0 || length > r.remaining) throw new RecordFailure(`record length ${length}, ${r.remaining} bytes left`)
  const end = r.pos + length
  const f = new Reader(r.buf, r.pos, end)
  f.int8() // record attributes: unused in v2
  const timestampDelta = Number(f.varlong())
  const offsetDelta = f.varint()
  const key = readBytes(f)
  const value = readBytes(f)
  const count = f.varint()
  if (count < 0 || count > f.remaining) throw new RecordFailure(`header count ${count}`)
  const headers: Header[] = []
  for (let i = 0; i < count; i++) {
    const n = f.varint()
    if (n < 0) throw new RecordFailure(`header key length ${n}`)
    headers.push({ key: f.utf8(n), value: readBytes(f) })
  }
  if (f.pos !== end) throw new RecordFailure(`record declares ${length} bytes but uses ${f.pos - (end - length)}`)
  r.pos = end
  return { offsetDelta, timestampDelta, key, value, headers }
}

/**
 * The records of the batch at `p`, decompressed, one `Either` each. After a `Left` (the batch is
 * invalid, its records do not decode, or they do not match the record count) iteration ends. The CRC
 * is checked first, so no record of a corrupt batch is ever yielded. Keys and values of uncompressed
 * batches are views into `b`.
 */
export function* iterate(b: Buffer, p = 0): Generator<Either.Either<BatchRecord, CorruptBatch>, void, undefined> {
  const checked = validate(b, p)
  if (Either.isLeft(checked)) {
    yield Either.left(checked.left)
    return
  }
  const size = checked.right.size
  const data = Codec.decompress(compression(b, p), b.subarray(p + HEADER_SIZE, p + size))
  if (Either.isLeft(data)) {
    yield Either.left(corrupt("Compression", p, data.left.message))
    return
  }
  const count = recordCount(b, p)
  const base = baseOffset(b, p)
  const baseTs = baseTimestamp(b, p)
  // With LogAppendTime the broker's append time (kept in MaxTimestamp) is every record's timestamp.
  const appendTime = timestampType(b, p) === "LogAppendTime" ? maxTimestamp(b, p) : null
  const r = new Reader(data.right)
  for (let i = 0; i < count; i++) {
    if (r.remaining === 0) {
      yield Either.left(corrupt("RecordCountMismatch", p, `header says ${count} records, found ${i}`))
      return
    }
    let record: Record
    try {
      record = readRecord(r)
    } catch (e) {
      yield Either.left(corrupt("InvalidRecord", p, `record ${i}: ${e instanceof Error ? e.message : String(e)}`))
      return
    }
    yield Either.right({
      ...record,
      offset: base + record.offsetDelta,
      timestamp: appendTime ?? baseTs + record.timestampDelta
    })
  }
  if (r.remaining !== 0)
    yield Either.left(corrupt("RecordCountMismatch", p, `${r.remaining} bytes after the ${count} declared records`))
}

/** All records of the batch at `p`, or the first reason it cannot be read. */
export const records = (b: Buffer, p = 0): Either.Either<Array<BatchRecord>, CorruptBatch> => {
  const out: BatchRecord[] = []
  for (const item of iterate(b, p)) {
    if (Either.isLeft(item)) return Either.left(item.left)
    out.push(item.right)
  }
  return Either.right(out)
}

// ---------------------------------------------------------------------------------------------------
// Builder

export interface RecordInput {
  readonly key?: Uint8Array | null
  readonly value?: Uint8Array | null
  readonly headers?: ReadonlyArray<Header>
  /** Defaults to the batch's `timestamp`. */
  readonly timestamp?: number
  /** Defaults to the record's index; compacted batches keep their original deltas. */
  readonly offsetDelta?: number
}

export interface BuildOptions {
  readonly records: ReadonlyArray<RecordInput>
  readonly baseOffset?: number
  readonly compression?: CompressionType
  readonly timestampType?: TimestampType
  /** Timestamp of records without one, and the append time for LogAppendTime (default 0). */
  readonly timestamp?: number
  readonly producerId?: bigint
  readonly producerEpoch?: number
  readonly baseSequence?: number
  readonly isTransactional?: boolean
  readonly isControl?: boolean
  readonly partitionLeaderEpoch?: number
  /** For a batch emptied by compaction, which keeps the offset range it had; otherwise derived. */
  readonly lastOffsetDelta?: number
  /**
   * The log cleaner's delete horizon (KIP-534): stored as the base timestamp with the delete-horizon
   * attribute set; record timestamps stay absolute (their deltas are relative to it).
   */
  readonly deleteHorizonMs?: number
}

const NO_TIMESTAMP = -1

const writeBytes = (w: Writer, v: Uint8Array | null): void => {
  if (v === null) return w.varint(-1)
  w.varint(v.length)
  w.raw(v)
}

const encodeRecord = (out: Writer, r: RecordInput, offsetDelta: number, timestampDelta: number): void => {
  const w = new Writer(64)
  w.int8(0)
  w.varlong(BigInt(timestampDelta))
  w.varint(offsetDelta)
  writeBytes(w, r.key ?? null)
  writeBytes(w, r.value ?? null)
  const headers = r.headers ?? []
  w.varint(headers.length)
  for (const h of headers) {
    const key = Buffer.from(h.key, "utf8")
    w.varint(key.length)
    w.raw(key)
    writeBytes(w, h.value)
  }
  const body = w.finish()
  out.varint(body.length)
  out.raw(body)
}

/**
 * Builds one v2 batch: encodes and compresses the records, derives LastOffsetDelta, the base and max
 * timestamps and the record count, and seals it with the CRC-32C. A codec failing on valid input is a
 * defect (it throws its `CompressionError`).
 */
export const build = (options: BuildOptions): Buffer => {
  const type = options.compression ?? 0
  const defaultTs = options.timestamp ?? 0
  const inputs = options.records
  const timestamps = inputs.map((r) => r.timestamp ?? defaultTs)
  const horizon = options.deleteHorizonMs
  const baseTs = horizon !== undefined ? horizon : timestamps.length > 0 ? timestamps[0]! : NO_TIMESTAMP
  let maxTs = NO_TIMESTAMP
  for (const t of timestamps) if (t > maxTs) maxTs = t
  if (options.timestampType === "LogAppendTime") maxTs = defaultTs
  const w = new Writer(256)
  let lastDelta = 0
  inputs.forEach((r, i) => {
    const delta = r.offsetDelta ?? i
    lastDelta = delta
    encodeRecord(w, r, delta, timestamps[i]! - baseTs)
  })
  const compressed = Codec.compress(type, w.finish())
  if (Either.isLeft(compressed)) throw compressed.left
  const section = compressed.right
  const size = HEADER_SIZE + section.length
  const b = Buffer.alloc(size)
  const attrs =
    type |
    (options.timestampType === "LogAppendTime" ? TIMESTAMP_TYPE_MASK : 0) |
    (options.isTransactional === true ? TRANSACTIONAL_MASK : 0) |
    (options.isControl === true ? CONTROL_MASK : 0) |
    (horizon !== undefined ? DELETE_HORIZON_MASK : 0)
  b.writeBigInt64BE(BigInt(options.baseOffset ?? 0), BASE_OFFSET)
  b.writeInt32BE(size - LOG_OVERHEAD, BATCH_LENGTH)
  b.writeInt32BE(options.partitionLeaderEpoch ?? -1, PARTITION_LEADER_EPOCH)
  b.writeInt8(2, MAGIC)
  b.writeInt16BE(attrs, ATTRIBUTES)
  b.writeInt32BE(options.lastOffsetDelta ?? lastDelta, LAST_OFFSET_DELTA)
  b.writeBigInt64BE(BigInt(baseTs), BASE_TIMESTAMP)
  b.writeBigInt64BE(BigInt(maxTs), MAX_TIMESTAMP)
  b.writeBigInt64BE(options.producerId ?? -1n, PRODUCER_ID)
  b.writeInt16BE(options.producerEpoch ?? -1, PRODUCER_EPOCH)
  b.writeInt32BE(options.baseSequence ?? -1, BASE_SEQUENCE)
  b.writeInt32BE(inputs.length, RECORD_COUNT)
  section.copy(b, HEADER_SIZE)
  b.writeUInt32BE(computeCrc(b, 0, size), CRC)
  return b
}
