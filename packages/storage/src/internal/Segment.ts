/**
 * One log segment: a `.log` file of whole batches starting at `baseOffset`, with its sparse offset index
 * (relative offset → file position, 8 bytes per entry) and time index (max timestamp so far → relative
 * offset, 12 bytes per entry). Indexes live in typed arrays that grow on demand and are written to their
 * files at roll, flush and close; they are rebuilt from the log whenever their files cannot be trusted.
 */
import { Buffer } from "node:buffer"
import { RecordBatch } from "@clustermirror/protocol"
import { readHeader, scan } from "./BatchScan.js"
import type { LogFile, Volume } from "./Volume.js"

export const fileName = (baseOffset: number, suffix: string): string =>
  `${String(baseOffset).padStart(20, "0")}${suffix}`

export const LOG_SUFFIX = ".log"
export const INDEX_SUFFIX = ".index"
export const TIME_INDEX_SUFFIX = ".timeindex"

// Empty indexes share one zero-length array each (never written: entries grow into new arrays), so an
// idle partition's segment holds no index arrays of its own.
const NO_INT32: Int32Array<ArrayBuffer> = new Int32Array(0)
const NO_FLOAT64: Float64Array<ArrayBuffer> = new Float64Array(0)

export class Segment {
  readonly file: LogFile
  /** Offset index: relative offsets and positions. */
  private rel = NO_INT32
  private pos = NO_INT32
  private entries = 0
  private persistedEntries = 0
  /** Time index: max timestamp so far and the relative offset where that entry was taken. */
  private timeTs = NO_FLOAT64
  private timeRel = NO_INT32
  private timeEntries = 0
  private persistedTimeEntries = 0
  private bytesSinceIndex = 0
  /** Last offset of the last batch, -1 when empty. */
  lastOffset = -1
  maxTimestamp = -1
  /** Time the segment got its first batch (segment.ms). */
  rollBaseMs = -1

  constructor(
    private readonly volume: Volume,
    readonly baseOffset: number,
    private readonly indexIntervalBytes: number
  ) {
    this.file = volume.open(fileName(baseOffset, LOG_SUFFIX))
  }

  get size(): number {
    return this.file.size
  }

  /** Accounts for a batch written at `position` (append, scan, or rebuild all follow the same rule). */
  observe(position: number, size: number, baseOffset: number, lastOffset: number, maxTimestamp: number): void {
    if (this.bytesSinceIndex > this.indexIntervalBytes) {
      this.addIndexEntry(baseOffset - this.baseOffset, position)
      const maxSoFar = Math.max(this.maxTimestamp, maxTimestamp)
      if (maxSoFar >= 0 && (this.timeEntries === 0 || maxSoFar > this.timeTs[this.timeEntries - 1]!))
        this.addTimeEntry(maxSoFar, baseOffset - this.baseOffset)
      this.bytesSinceIndex = 0
    }
    this.bytesSinceIndex += size
    if (maxTimestamp > this.maxTimestamp) this.maxTimestamp = maxTimestamp
    this.lastOffset = lastOffset
  }

  private addIndexEntry(rel: number, position: number): void {
    if (this.entries === this.rel.length) {
      const cap = Math.max(8, this.rel.length * 2)
      this.rel = grow(this.rel, cap)
      this.pos = grow(this.pos, cap)
    }
    this.rel[this.entries] = rel
    this.pos[this.entries] = position
    this.entries++
  }

  private addTimeEntry(ts: number, rel: number): void {
    if (this.timeEntries === this.timeTs.length) {
      const cap = Math.max(8, this.timeTs.length * 2)
      const ts2 = new Float64Array(cap)
      ts2.set(this.timeTs)
      this.timeTs = ts2
      this.timeRel = grow(this.timeRel, cap)
    }
    this.timeTs[this.timeEntries] = ts
    this.timeRel[this.timeEntries] = rel
    this.timeEntries++
  }

  /** Position to start scanning for `offset`: the last indexed batch at or below it. */
  lookup(offset: number): number {
    const target = offset - this.baseOffset
    let lo = 0
    let hi = this.entries - 1
    let found = 0
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      if (this.rel[mid]! <= target) {
        found = this.pos[mid]!
        lo = mid + 1
      } else hi = mid - 1
    }
    return found
  }

  /** Position to start scanning for the first batch with max timestamp >= `timestamp`. */
  lookupTimestamp(timestamp: number): number {
    let start = 0
    for (let i = 0; i < this.timeEntries && this.timeTs[i]! < timestamp; i++) start = i
    return this.timeEntries > 0 && this.timeTs[0]! < timestamp ? this.lookup(this.baseOffset + this.timeRel[start]!) : 0
  }

  /** Forgets all index state (before a rebuild by scanning). */
  resetIndexes(): void {
    this.entries = 0
    this.timeEntries = 0
    this.persistedEntries = -1
    this.persistedTimeEntries = -1
    this.bytesSinceIndex = 0
    this.lastOffset = -1
    this.maxTimestamp = -1
  }

  /** Rebuilds indexes and summary fields by scanning headers from the last entry still valid. */
  scanTail(): void {
    const start = this.entries > 0 ? this.pos[this.entries - 1]! : 0
    this.bytesSinceIndex = 0
    this.maxTimestamp = this.timeEntries > 0 ? this.timeTs[this.timeEntries - 1]! : -1
    this.lastOffset = -1
    if (start === 0) {
      this.entries = 0
      this.timeEntries = 0
    }
    scan(this.file, start, this.file.size, false, (b, at, position, size) => {
      this.observe(
        position,
        size,
        RecordBatch.baseOffset(b, at),
        RecordBatch.lastOffset(b, at),
        RecordBatch.maxTimestamp(b, at)
      )
      return true
    })
  }

  /** Cuts the log file at `position` and drops index entries at or after it. */
  truncateAt(position: number): void {
    this.file.truncate(position)
    let n = this.entries
    while (n > 0 && this.pos[n - 1]! >= position) n--
    const removedRel = n < this.entries ? this.rel[n]! : Number.POSITIVE_INFINITY
    this.entries = n
    let t = this.timeEntries
    while (t > 0 && this.timeRel[t - 1]! >= removedRel) t--
    this.timeEntries = t
    if (this.persistedEntries > n) this.persistedEntries = -1
    if (this.persistedTimeEntries > t) this.persistedTimeEntries = -1
    this.scanTail()
  }

  /** Writes index entries not yet on disk (whole files when entries were removed). */
  persistIndexes(sync: boolean): void {
    const idx = fileName(this.baseOffset, INDEX_SUFFIX)
    const tix = fileName(this.baseOffset, TIME_INDEX_SUFFIX)
    const from = Math.max(0, this.persistedEntries)
    if (this.persistedEntries < 0 || from < this.entries || sync) {
      const b = Buffer.allocUnsafe((this.entries - from) * 8)
      for (let i = from; i < this.entries; i++) {
        b.writeInt32BE(this.rel[i]!, (i - from) * 8)
        b.writeInt32BE(this.pos[i]!, (i - from) * 8 + 4)
      }
      if (this.persistedEntries < 0) this.volume.writeFileAtomic(idx, b)
      else this.volume.appendFile(idx, b, sync)
      this.persistedEntries = this.entries
    }
    const tfrom = Math.max(0, this.persistedTimeEntries)
    if (this.persistedTimeEntries < 0 || tfrom < this.timeEntries || sync) {
      const b = Buffer.allocUnsafe((this.timeEntries - tfrom) * 12)
      for (let i = tfrom; i < this.timeEntries; i++) {
        b.writeBigInt64BE(BigInt(this.timeTs[i]!), (i - tfrom) * 12)
        b.writeInt32BE(this.timeRel[i]!, (i - tfrom) * 12 + 8)
      }
      if (this.persistedTimeEntries < 0) this.volume.writeFileAtomic(tix, b)
      else this.volume.appendFile(tix, b, sync)
      this.persistedTimeEntries = this.timeEntries
    }
  }

  /**
   * Loads the index files if they are consistent with the log (whole entries, increasing, pointing at real
   * batches), then scans the unindexed tail; otherwise rebuilds everything from the log.
   */
  load(): void {
    if (this.loadIndexFiles()) this.scanTail()
    else {
      this.resetIndexes()
      this.scanTail()
      this.persistIndexes(false)
    }
    if (this.rollBaseMs < 0 && this.maxTimestamp >= 0) this.rollBaseMs = this.maxTimestamp
  }

  private loadIndexFiles(): boolean {
    const idx = this.volume.readFile(fileName(this.baseOffset, INDEX_SUFFIX))
    const tix = this.volume.readFile(fileName(this.baseOffset, TIME_INDEX_SUFFIX))
    if (idx === undefined || tix === undefined || idx.length % 8 !== 0 || tix.length % 12 !== 0) return false
    const ib = Buffer.from(idx.buffer, idx.byteOffset, idx.length)
    const tb = Buffer.from(tix.buffer, tix.byteOffset, tix.length)
    this.entries = 0
    this.timeEntries = 0
    for (let i = 0; i < idx.length / 8; i++) {
      const rel = ib.readInt32BE(i * 8)
      const position = ib.readInt32BE(i * 8 + 4)
      if (rel < 0 || position < 0 || position >= this.file.size) return false
      if (i > 0 && (rel <= this.rel[i - 1]! || position <= this.pos[i - 1]!)) return false
      this.addIndexEntry(rel, position)
    }
    for (let i = 0; i < tix.length / 12; i++) {
      const ts = Number(tb.readBigInt64BE(i * 12))
      const rel = tb.readInt32BE(i * 12 + 8)
      if (ts < 0 || rel < 0 || (i > 0 && (ts <= this.timeTs[i - 1]! || rel <= this.timeRel[i - 1]!))) return false
      this.addTimeEntry(ts, rel)
    }
    if (
      this.timeEntries > 0 &&
      this.timeRel[this.timeEntries - 1]! > (this.entries > 0 ? this.rel[this.entries - 1]! : -1)
    )
      return false
    if (this.entries > 0) {
      const header = readHeader(this.file, this.pos[this.entries - 1]!)
      if (header === undefined || RecordBatch.baseOffset(header) !== this.baseOffset + this.rel[this.entries - 1]!)
        return false
    }
    this.persistedEntries = this.entries
    this.persistedTimeEntries = this.timeEntries
    return true
  }

  /** Removes the segment's files. */
  delete(): void {
    this.file.close()
    for (const suffix of [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX])
      this.volume.remove(fileName(this.baseOffset, suffix))
  }
}

const grow = (a: Int32Array<ArrayBuffer>, cap: number): Int32Array<ArrayBuffer> => {
  const b = new Int32Array(cap)
  b.set(a)
  return b
}
