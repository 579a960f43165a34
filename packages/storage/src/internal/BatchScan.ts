/**
 * Sequential scanning of batch headers in a log file through one shared read window, so a scan costs a few
 * large reads instead of one read per batch and no partition keeps a buffer of its own. Records are never
 * decoded, except the key of a control record (a few bytes right after the header).
 */
import { Buffer } from "node:buffer"
import { Crc32c, RecordBatch } from "@clustermirror/protocol"
import type { LogFile } from "./Volume.js"

const WINDOW = Buffer.allocUnsafe(64 * 1024)
/** Bytes loaded per batch when only the header (and a control key) is needed. */
const PEEK = 128

/**
 * Calls `onBatch` for each batch from `start` while the next batch is complete before `end`; with `full`
 * the whole batch is in `buf`, otherwise at least its header. The callback must not start another scan.
 * Returns the position where the scan stopped (the first incomplete or rejected batch, or `end`).
 */
export const scan = (
  file: LogFile,
  start: number,
  end: number,
  full: boolean,
  onBatch: (buf: Buffer, at: number, position: number, size: number) => boolean
): number => {
  let buf: Buffer = WINDOW
  let winStart = 0
  let winEnd = 0
  const load = (position: number, need: number): boolean => {
    if (position >= winStart && position + need <= winEnd) return true
    buf = need > WINDOW.length ? Buffer.allocUnsafe(need) : WINDOW
    const length = Math.min(buf.length, end - position)
    const n = file.read(buf, 0, length, position)
    winStart = position
    winEnd = position + n
    return n >= need
  }
  let position = start
  while (end - position >= RecordBatch.LOG_OVERHEAD) {
    if (!load(position, RecordBatch.LOG_OVERHEAD)) break
    const size = RecordBatch.sizeInBytes(buf, position - winStart)
    if (size < RecordBatch.HEADER_SIZE || position + size > end) break
    if (!load(position, full ? size : Math.min(size, PEEK))) break
    if (!onBatch(buf, position - winStart, position, size)) break
    position += size
  }
  return position
}

/** Reads bytes `[start, end)` of a file into a new buffer. */
export const readRange = (file: LogFile, start: number, end: number): Buffer => {
  const out = Buffer.allocUnsafe(end - start)
  const n = file.read(out, 0, out.length, start)
  return n === out.length ? out : out.subarray(0, n)
}

/** Reads one batch header at `position`, or undefined when none fits there. */
export const readHeader = (file: LogFile, position: number): Buffer | undefined => {
  const out = Buffer.allocUnsafe(RecordBatch.HEADER_SIZE)
  return file.read(out, 0, out.length, position) === out.length ? out : undefined
}

/** Checks magic, minimal length and CRC-32C over attributes..end of a complete batch. */
export const crcValid = (buf: Buffer, at: number, size: number): boolean => {
  return Crc32c.compute(buf.subarray(at + RecordBatch.ATTRIBUTES, at + size)) === RecordBatch.crc(buf, at)
}

export const CONTROL_ABORT = 0
export const CONTROL_COMMIT = 1
export const CONTROL_MIRROR_PID_RESET = 7

/** What the log keeps from a control batch's first record: its type and, for a marker, the coordinator epoch. */
export interface ControlInfo {
  /** The control record type, -1 when the bytes at hand do not hold it. */
  readonly type: number
  /** The coordinator epoch of an ABORT/COMMIT marker (value: int16 version, int32 epoch), else -1. */
  readonly coordinatorEpoch: number
}

const UNKNOWN_CONTROL: ControlInfo = { type: -1, coordinatorEpoch: -1 }

/**
 * The first control record of a control batch (key: int16 version, int16 type; a marker's value: int16
 * version, int32 coordinator epoch). Control batches are never compressed, so the record is readable in place.
 */
export const controlInfo = (buf: Buffer, at: number, available: number): ControlInfo => {
  let p = at + RecordBatch.HEADER_SIZE
  const limit = at + available
  const skipVarint = (): boolean => {
    for (let i = 0; i < 10; i++) {
      if (p >= limit) return false
      if ((buf[p++]! & 0x80) === 0) return true
    }
    return false
  }
  const readVarint = (): number | undefined => {
    let raw = 0
    let shift = 0
    for (let i = 0; i < 5; i++) {
      if (p >= limit) return undefined
      const byte = buf[p++]!
      raw |= (byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return (raw >>> 1) ^ -(raw & 1)
      shift += 7
    }
    return undefined
  }
  // length, attributes, timestampDelta, offsetDelta, keyLength, key, valueLength, value
  if (!skipVarint()) return UNKNOWN_CONTROL
  p += 1
  if (!skipVarint() || !skipVarint()) return UNKNOWN_CONTROL
  const keyLength = readVarint()
  if (keyLength === undefined || keyLength < 4 || p + keyLength > limit) return UNKNOWN_CONTROL
  const type = buf.readInt16BE(p + 2)
  p += keyLength
  if (type !== CONTROL_ABORT && type !== CONTROL_COMMIT) return { type, coordinatorEpoch: -1 }
  const valueLength = readVarint()
  if (valueLength === undefined || valueLength < 6 || p + 6 > limit) return { type, coordinatorEpoch: -1 }
  return { type, coordinatorEpoch: buf.readInt32BE(p + 2) }
}
