/**
 * Builds valid record batches v2 for storage tests: a correct header, opaque record bytes, and the CRC-32C
 * over attributes..end. Control batches carry a real first control record so the key type is readable.
 */
import { Buffer } from "node:buffer"
import { Crc32c, RecordBatch } from "@clustermirror/protocol"

export interface BatchSpec {
  readonly baseOffset?: number
  readonly leaderEpoch?: number
  readonly count?: number
  readonly timestamp?: number
  readonly producerId?: bigint
  readonly producerEpoch?: number
  readonly baseSequence?: number
  readonly transactional?: boolean
  /** Opaque record bytes (defaults to a small pattern). */
  readonly payload?: Buffer
}

const finish = (header: Buffer, body: Buffer, attributes: number): Buffer => {
  const b = Buffer.concat([header, body])
  b.writeInt32BE(b.length - RecordBatch.LOG_OVERHEAD, RecordBatch.BATCH_LENGTH)
  b.writeInt8(2, RecordBatch.MAGIC)
  b.writeInt16BE(attributes, RecordBatch.ATTRIBUTES)
  b.writeUInt32BE(Crc32c.compute(b.subarray(RecordBatch.ATTRIBUTES)), RecordBatch.CRC)
  return b
}

const header = (spec: BatchSpec, count: number): Buffer => {
  const h = Buffer.alloc(RecordBatch.HEADER_SIZE)
  const ts = spec.timestamp ?? 1_000
  h.writeBigInt64BE(BigInt(spec.baseOffset ?? 0), RecordBatch.BASE_OFFSET)
  h.writeInt32BE(spec.leaderEpoch ?? -1, RecordBatch.PARTITION_LEADER_EPOCH)
  h.writeInt32BE(count - 1, RecordBatch.LAST_OFFSET_DELTA)
  h.writeBigInt64BE(BigInt(ts), RecordBatch.BASE_TIMESTAMP)
  h.writeBigInt64BE(BigInt(ts), RecordBatch.MAX_TIMESTAMP)
  h.writeBigInt64BE(spec.producerId ?? -1n, RecordBatch.PRODUCER_ID)
  h.writeInt16BE(spec.producerEpoch ?? -1, RecordBatch.PRODUCER_EPOCH)
  h.writeInt32BE(spec.baseSequence ?? -1, RecordBatch.BASE_SEQUENCE)
  h.writeInt32BE(count, RecordBatch.RECORD_COUNT)
  return h
}

/** A data batch of `count` records. */
export const batch = (spec: BatchSpec = {}): Buffer => {
  const count = spec.count ?? 1
  const payload = spec.payload ?? Buffer.alloc(10 * count, count & 0xff)
  return finish(header(spec, count), payload, spec.transactional === true ? RecordBatch.TRANSACTIONAL_MASK : 0)
}

const zigzag = (n: number): number[] => {
  let v = (n << 1) ^ (n >> 31)
  const out: number[] = []
  while ((v & ~0x7f) !== 0) {
    out.push((v & 0x7f) | 0x80)
    v >>>= 7
  }
  out.push(v)
  return out
}

/**
 * A control batch with one record of `type` (0 ABORT, 1 COMMIT, 7 MIRROR_PID_RESET); a marker's value
 * carries `coordinatorEpoch`.
 */
export const control = (type: number, spec: BatchSpec = {}, coordinatorEpoch = 0): Buffer => {
  const key = Buffer.alloc(4)
  key.writeInt16BE(0, 0)
  key.writeInt16BE(type, 2)
  const value = Buffer.alloc(6)
  value.writeInt32BE(coordinatorEpoch, 2)
  const inner = Buffer.concat([
    Buffer.from([0, ...zigzag(0), ...zigzag(0), ...zigzag(key.length)]),
    key,
    Buffer.from(zigzag(value.length)),
    value,
    Buffer.from(zigzag(0))
  ])
  const record = Buffer.concat([Buffer.from(zigzag(inner.length)), inner])
  const transactional = type === 7 ? 0 : RecordBatch.TRANSACTIONAL_MASK
  return finish(header(spec, 1), record, RecordBatch.CONTROL_MASK | transactional)
}

/** Base offsets of the batches in `records`. */
export const baseOffsets = (records: Buffer): number[] =>
  RecordBatch.split(records).batches.map((b) => RecordBatch.baseOffset(records, b.position))
