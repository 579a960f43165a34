/**
 * Record batch v2 (magic 2): a zero-copy view of the 61-byte batch header.
 *
 * The data path reads and rewrites only these header fields, never the records. Offsets are JS numbers
 * (exact up to 2^53, far beyond any real log).
 *
 * RecordBatch => BaseOffset:int64 BatchLength:int32 PartitionLeaderEpoch:int32 Magic:int8 CRC:uint32
 *   Attributes:int16 LastOffsetDelta:int32 BaseTimestamp:int64 MaxTimestamp:int64 ProducerId:int64
 *   ProducerEpoch:int16 BaseSequence:int32 Records:[Record]   (CRC-32C over Attributes..end)
 */
import type { Buffer } from "node:buffer"

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

export type CompressionType = 0 | 1 | 2 | 3 | 4
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

export const compression = (b: Buffer, p = 0): CompressionType => (attributes(b, p) & COMPRESSION_MASK) as CompressionType
export const isTransactional = (b: Buffer, p = 0): boolean => (attributes(b, p) & TRANSACTIONAL_MASK) !== 0
export const isControl = (b: Buffer, p = 0): boolean => (attributes(b, p) & CONTROL_MASK) !== 0
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
