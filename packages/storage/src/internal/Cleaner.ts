/**
 * Log compaction of one partition, as Kafka's log cleaner does it, in bounded slices: a pass first reads
 * the dirty section (from the first dirty offset to the first uncleanable segment) into the key → offset
 * map, one segment per slice, then rewrites the log from its start up to where the map ends, one group of
 * segments (at most `segment.bytes` together) per slice. A record survives when it is the latest of its
 * key, unless it is a tombstone whose delete horizon passed; records of aborted transactions go; a
 * transaction marker goes once its transaction has no data left and its delete horizon passed. Offsets
 * never change: every retained batch keeps its base offset, last offset delta, producer id, epoch and base
 * sequence, so a cleaned log has gaps but the same offsets, and producer state rebuilt from it is right.
 *
 * The swap of a group is crash-safe: the cleaned segment is written and fsynced as `<base>.log.cleaned`,
 * the group's offset range is recorded in `cleaner-swap`, the file is renamed to `<base>.log.swap` (the
 * commit point), the old segments are deleted, the swap file is renamed to `<base>.log` and the record is
 * removed. Loading a log (`recoverSwap`) finishes a committed swap and discards an uncommitted one.
 */
import { Buffer } from "node:buffer"
import { Either } from "effect"
import { RecordBatch } from "@clustermirror/protocol"
import type { CleanableState, CleanStats, LogConfig } from "../PartitionLog.js"
import { corrupt } from "../StorageError.js"
import { CONTROL_ABORT, CONTROL_COMMIT, controlInfo, scan } from "./BatchScan.js"
import type { OffsetMap } from "./OffsetMap.js"
import type { AbortedTxn } from "./ProducerState.js"
import { INDEX_SUFFIX, LOG_SUFFIX, Segment, TIME_INDEX_SUFFIX, fileName } from "./Segment.js"
import type { Volume } from "./Volume.js"

export const CLEANED_SUFFIX = ".log.cleaned"
export const SWAP_SUFFIX = ".log.swap"
/** The offset range `[base, end)` a committed swap replaces; present from before the commit to its end. */
export const SWAP_STATE = "cleaner-swap"
/** The first dirty offset and the earliest delete horizon pending, rewritten after each pass. */
export const CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"

const INT32_MAX = 2147483647
const WRITE_CHUNK = 1024 * 1024

/** What the cleaner needs from the log it cleans (implemented by `Log`). */
export interface CleanerHost {
  readonly topic: string
  readonly partition: number
  readonly cleanerVolume: Volume
  readonly cleanerConfig: LogConfig
  /** Changes whenever segments go or are cut outside the cleaner (retention, truncation, close). */
  readonly generation: number
  readonly logStartOffset: number
  readonly lastStableOffset: number
  /** From the checkpoint; 0 when never cleaned. */
  readonly firstDirtyOffset: number
  /** The earliest delete horizon of a batch still holding tombstones or a removable marker, -1 when none. */
  readonly pendingHorizon: number
  cleanerSegments(): ReadonlyArray<Segment>
  cleanerAbortedTransactions(): ReadonlyArray<AbortedTxn>
  /** Replaces the segments of `group` by `cleaned` in the segment list. */
  installCleaned(group: ReadonlyArray<Segment>, cleaned: Segment): void
  /** A pass ended: records the new first dirty offset and pending horizon. */
  cleanerCheckpoint(firstDirtyOffset: number, pendingHorizon: number): void
  /** The files of a swap could not be completed: the log must not be used until it is loaded again. */
  cleanerFailed(cause: unknown): void
}

const clampMs = (v: number): number => Math.min(v, Number.MAX_SAFE_INTEGER)

/** Where cleaning could happen now, and whether it should (`min.cleanable.dirty.ratio`, lags, horizons). */
export const cleanableState = (host: CleanerHost, now: number): CleanableState | undefined => {
  const config = host.cleanerConfig
  if (!config.compact) return undefined
  const segments = host.cleanerSegments()
  if (segments.length < 2) return undefined
  const last = segments.length - 1
  const firstDirty = Math.max(host.firstDirtyOffset, host.logStartOffset)
  let bound = Math.min(host.lastStableOffset, segments[last]!.baseOffset)
  if (config.minCompactionLagMs > 0)
    for (let i = 0; i < last; i++) {
      const s = segments[i]!
      if (segments[i + 1]!.baseOffset <= firstDirty) continue
      if (s.maxTimestamp > now - config.minCompactionLagMs) {
        bound = Math.min(bound, s.baseOffset)
        break
      }
    }
  // Whole segments only: the first uncleanable offset is the base of the segment holding `bound`.
  let uncleanable = segments[0]!.baseOffset
  for (let i = 0; i < last && segments[i + 1]!.baseOffset <= bound; i++) uncleanable = segments[i + 1]!.baseOffset
  let cleanBytes = 0
  let dirtyBytes = 0
  let firstDirtyTime = -1
  for (let i = 0; i < last; i++) {
    const s = segments[i]!
    if (s.baseOffset >= uncleanable) break
    if (segments[i + 1]!.baseOffset <= firstDirty) cleanBytes += s.size
    else {
      dirtyBytes += s.size
      if (firstDirtyTime < 0) firstDirtyTime = s.rollBaseMs >= 0 ? s.rollBaseMs : s.maxTimestamp
    }
  }
  const total = cleanBytes + dirtyBytes
  const dirtyRatio = total === 0 ? 0 : dirtyBytes / total
  const maxLag = clampMs(config.maxCompactionLagMs)
  const lagDue = dirtyBytes > 0 && firstDirtyTime >= 0 && now - firstDirtyTime > maxLag
  const horizonDue = host.pendingHorizon >= 0 && now >= host.pendingHorizon && uncleanable > segments[0]!.baseOffset
  const ratioDue = dirtyBytes > 0 && dirtyRatio >= config.minCleanableDirtyRatio
  return {
    firstDirtyOffset: Math.min(firstDirty, uncleanable),
    firstUncleanableOffset: uncleanable,
    cleanBytes,
    dirtyBytes,
    dirtyRatio,
    due: ratioDue || lagDue || horizonDue
  }
}

interface Txn {
  retained: boolean
}

/** One cleaning pass of one log, run by `step` calls; the log may be used between them. */
export class CleanPass {
  private phase: "map" | "clean" | "done" = "map"
  private readonly generation: number
  private readonly dirty: Segment[]
  private mapIndex = 0
  /** Exclusive end of what the map covers: records at or above it are retained whatever their key. */
  private mapEnd: number
  private groups: Segment[][] = []
  private groupIndex = 0
  private readonly txns = new Map<bigint, Txn>()
  private readonly lastBatchOf = new Map<bigint, number>()
  private readonly aborted = new Map<bigint, AbortedTxn[]>()
  private minHorizon = Number.POSITIVE_INFINITY
  readonly stats: { -readonly [K in keyof CleanStats]: CleanStats[K] } = {
    bytesRead: 0,
    bytesWritten: 0,
    recordsRead: 0,
    recordsRetained: 0,
    segmentsCleaned: 0,
    passCompleted: false,
    aborted: false
  }

  constructor(
    private readonly host: CleanerHost,
    private readonly now: number,
    private readonly map: OffsetMap,
    private readonly state: CleanableState
  ) {
    this.generation = host.generation
    map.clear()
    this.mapEnd = state.firstDirtyOffset
    const segments = host.cleanerSegments()
    this.dirty = []
    for (let i = 0; i + 1 < segments.length; i++) {
      const s = segments[i]!
      if (s.baseOffset >= state.firstUncleanableOffset) break
      if (segments[i + 1]!.baseOffset > state.firstDirtyOffset) this.dirty.push(s)
    }
    for (const t of host.cleanerAbortedTransactions()) {
      const list = this.aborted.get(t.producerId)
      if (list === undefined) this.aborted.set(t.producerId, [t])
      else list.push(t)
    }
    // The last data batch of each producer: kept (emptied if need be) so that its sequence survives.
    for (const s of segments)
      scan(s.file, 0, s.size, false, (b, at) => {
        const pid = RecordBatch.producerId(b, at)
        if (pid >= 0n && !RecordBatch.isControl(b, at)) this.lastBatchOf.set(pid, RecordBatch.baseOffset(b, at))
        return true
      })
  }

  get done(): boolean {
    return this.phase === "done"
  }

  /** Abandons the pass (the log is closing); a `.cleaned` file left is discarded at the next load. */
  abort(): void {
    if (this.phase === "done") return
    this.phase = "done"
    this.stats.aborted = true
  }

  /** Runs one slice; returns the bytes it read (for throttling), 0 when the pass is over. */
  step(): number {
    if (this.phase === "done") return 0
    if (this.host.generation !== this.generation) {
      this.abort()
      return 0
    }
    return this.phase === "map" ? this.mapStep() : this.cleanStep()
  }

  private isAborted(pid: bigint, offset: number): boolean {
    const list = this.aborted.get(pid)
    if (list === undefined) return false
    for (const t of list) if (t.firstOffset <= offset && offset <= t.lastOffset) return true
    return false
  }

  private mapStep(): number {
    const segment = this.dirty[this.mapIndex]
    if (segment === undefined) {
      this.startCleaning(this.dirty.length > 0 ? this.state.firstUncleanableOffset : this.state.firstDirtyOffset)
      return 0
    }
    let full = false
    const from = this.state.firstDirtyOffset
    scan(segment.file, 0, segment.size, true, (b, at, _position, size) => {
      this.stats.bytesRead += size
      if (RecordBatch.lastOffset(b, at) < from || RecordBatch.isControl(b, at)) return true
      const pid = RecordBatch.producerId(b, at)
      if (RecordBatch.isTransactional(b, at) && this.isAborted(pid, RecordBatch.baseOffset(b, at))) return true
      for (const r of decode(b, at, this.host)) {
        if (r.offset < from || r.key === null) continue
        if (!this.map.canPut(r.key)) {
          this.mapEnd = r.offset
          full = true
          return false
        }
        this.map.put(r.key, r.offset)
      }
      return true
    })
    this.mapIndex++
    if (full) this.startCleaning(this.mapEnd)
    else if (this.mapIndex === this.dirty.length) this.startCleaning(this.state.firstUncleanableOffset)
    return segment.size
  }

  /** Groups the segments below `end` by `segment.bytes` and moves to rewriting them. */
  private startCleaning(end: number): void {
    this.mapEnd = end
    this.phase = "clean"
    const segments = this.host.cleanerSegments()
    const limit = this.host.cleanerConfig.segmentBytes
    let group: Segment[] = []
    let size = 0
    for (let i = 0; i + 1 < segments.length; i++) {
      const s = segments[i]!
      if (s.baseOffset >= end) break
      const upper = segments[i + 1]!.baseOffset
      const fits = group.length > 0 && size + s.size <= limit && upper - 1 - group[0]!.baseOffset <= INT32_MAX
      if (group.length > 0 && !fits) {
        this.groups.push(group)
        group = []
        size = 0
      }
      group.push(s)
      size += s.size
    }
    if (group.length > 0) this.groups.push(group)
  }

  private cleanStep(): number {
    const group = this.groups[this.groupIndex]
    if (group === undefined) {
      this.phase = "done"
      this.stats.passCompleted = true
      const horizon = Number.isFinite(this.minHorizon) ? this.minHorizon : -1
      this.host.cleanerCheckpoint(this.mapEnd, horizon)
      return 0
    }
    this.groupIndex++
    return this.cleanGroup(group)
  }

  private cleanGroup(group: ReadonlyArray<Segment>): number {
    const volume = this.host.cleanerVolume
    const base = group[0]!.baseOffset
    const cleanedName = fileName(base, CLEANED_SUFFIX)
    volume.remove(cleanedName)
    const out = volume.open(cleanedName)
    const chunks: Buffer[] = []
    let chunkBytes = 0
    const emit = (bytes: Buffer, copy: boolean): void => {
      chunks.push(copy ? Buffer.from(bytes) : bytes)
      chunkBytes += bytes.length
      this.stats.bytesWritten += bytes.length
      if (chunkBytes >= WRITE_CHUNK) {
        out.append(Buffer.concat(chunks))
        chunks.length = 0
        chunkBytes = 0
      }
    }
    let read = 0
    try {
      for (const segment of group) {
        read += segment.size
        scan(segment.file, 0, segment.size, true, (b, at, _position, size) => {
          this.stats.bytesRead += size
          this.cleanBatch(b, at, size, emit)
          return true
        })
      }
      if (chunks.length > 0) out.append(Buffer.concat(chunks))
      out.sync()
    } finally {
      out.close()
    }
    this.swap(group, base)
    this.stats.segmentsCleaned += group.length
    return read
  }

  private noteHorizon(h: number): void {
    if (h < this.minHorizon) this.minHorizon = h
  }

  private cleanBatch(b: Buffer, at: number, size: number, emit: (bytes: Buffer, copy: boolean) => void): void {
    const now = this.now
    const retention = clampMs(this.host.cleanerConfig.deleteRetentionMs)
    const whole = b.subarray(at, at + size)
    const base = RecordBatch.baseOffset(b, at)
    const pid = RecordBatch.producerId(b, at)
    const horizon = RecordBatch.deleteHorizonMs(b, at)
    if (RecordBatch.isControl(b, at)) {
      const info = controlInfo(b, at, size)
      this.stats.recordsRead += RecordBatch.recordCount(b, at)
      if (info.type !== CONTROL_ABORT && info.type !== CONTROL_COMMIT) return emit(whole, true)
      const txn = this.txns.get(pid)
      this.txns.delete(pid)
      if (txn?.retained === true) return emit(whole, true)
      // The transaction has no data left: the marker goes once its delete horizon passed.
      if (horizon >= 0 && now >= horizon) return
      this.stats.recordsRetained += RecordBatch.recordCount(b, at)
      if (horizon >= 0) {
        this.noteHorizon(horizon)
        return emit(whole, true)
      }
      this.noteHorizon(now + retention)
      return emit(rebuild(b, at, decode(b, at, this.host), now + retention), false)
    }
    const transactional = RecordBatch.isTransactional(b, at)
    const aborted = transactional && this.isAborted(pid, base)
    if (transactional && !aborted && !this.txns.has(pid)) this.txns.set(pid, { retained: false })
    const records = decode(b, at, this.host)
    this.stats.recordsRead += records.length
    let tombstones = false
    const kept = aborted
      ? []
      : records.filter((r) => {
          if (r.key === null) return false
          if (this.map.get(r.key) > r.offset) return false
          if (r.value === null) {
            if (horizon >= 0 && now >= horizon) return false
            tombstones = true
          }
          return true
        })
    this.stats.recordsRetained += kept.length
    if (transactional && !aborted && kept.length > 0) this.txns.get(pid)!.retained = true
    if (tombstones) this.noteHorizon(horizon >= 0 ? horizon : now + retention)
    if (kept.length === records.length && (!tombstones || horizon >= 0)) return emit(whole, true)
    if (kept.length === 0) {
      if (pid >= 0n && this.lastBatchOf.get(pid) === base) emit(rebuild(b, at, [], undefined), false)
      return
    }
    emit(rebuild(b, at, kept, tombstones ? (horizon >= 0 ? horizon : now + retention) : undefined), false)
  }

  /** Commits the cleaned file of `group` in place of its segments (see the module comment). */
  private swap(group: ReadonlyArray<Segment>, base: number): void {
    const volume = this.host.cleanerVolume
    const segments = this.host.cleanerSegments()
    const lastIndex = segments.indexOf(group[group.length - 1]!)
    const end = segments[lastIndex + 1]!.baseOffset
    volume.writeFileAtomic(SWAP_STATE, Buffer.from(JSON.stringify({ base, end })))
    volume.rename(fileName(base, CLEANED_SUFFIX), fileName(base, SWAP_SUFFIX))
    try {
      for (let i = group.length - 1; i >= 0; i--) group[i]!.delete()
      volume.rename(fileName(base, SWAP_SUFFIX), fileName(base, LOG_SUFFIX))
      volume.remove(SWAP_STATE)
      const cleaned = new Segment(volume, base, this.host.cleanerConfig.indexIntervalBytes)
      cleaned.load()
      cleaned.persistIndexes(true)
      this.host.installCleaned(group, cleaned)
    } catch (e) {
      this.phase = "done"
      this.stats.aborted = true
      this.host.cleanerFailed(e)
      throw e
    }
  }
}

const decode = (b: Buffer, at: number, host: CleanerHost): RecordBatch.BatchRecord[] => {
  const result = RecordBatch.records(b, at)
  if (Either.isLeft(result))
    throw corrupt(
      `log cleaner: batch at offset ${RecordBatch.baseOffset(b, at)} of ${host.topic}-${host.partition}: ${result.left.message}`
    )
  return result.right
}

/** The batch at `at` with only `records`, keeping its offsets, producer fields, epoch, codec and times. */
const rebuild = (
  b: Buffer,
  at: number,
  records: ReadonlyArray<RecordBatch.BatchRecord>,
  deleteHorizonMs: number | undefined
): Buffer => {
  const appendTime = RecordBatch.timestampType(b, at) === "LogAppendTime"
  return RecordBatch.build({
    records: records.map((r) => ({
      key: r.key,
      value: r.value,
      headers: r.headers,
      timestamp: r.timestamp,
      offsetDelta: r.offsetDelta
    })),
    baseOffset: RecordBatch.baseOffset(b, at),
    compression: records.length === 0 ? 0 : RecordBatch.compression(b, at),
    timestampType: appendTime ? "LogAppendTime" : "CreateTime",
    ...(appendTime ? { timestamp: RecordBatch.maxTimestamp(b, at) } : {}),
    producerId: RecordBatch.producerId(b, at),
    producerEpoch: RecordBatch.producerEpoch(b, at),
    baseSequence: RecordBatch.baseSequence(b, at),
    isTransactional: RecordBatch.isTransactional(b, at),
    isControl: RecordBatch.isControl(b, at),
    partitionLeaderEpoch: RecordBatch.partitionLeaderEpoch(b, at),
    lastOffsetDelta: RecordBatch.lastOffsetDelta(b, at),
    ...(deleteHorizonMs === undefined ? {} : { deleteHorizonMs })
  })
}

const SEGMENT_FILE = /^(\d{20})\.(log|index|timeindex)$/

/**
 * Finishes or discards a swap interrupted by a crash, before the log lists its segments: a `.swap` file
 * replaces every segment in the range `cleaner-swap` records and becomes the segment's `.log` (its indexes
 * are rebuilt); a `.cleaned` file (not committed) is removed. Returns what it did, for the log's owner.
 */
export const recoverSwap = (volume: Volume): { readonly completed: number; readonly discarded: number } => {
  const names = volume.list()
  const stateBytes = volume.readFile(SWAP_STATE)
  let state: { base: number; end: number } | undefined
  try {
    const parsed: unknown = stateBytes === undefined ? undefined : JSON.parse(Buffer.from(stateBytes).toString("utf8"))
    const base = parsed === undefined ? undefined : Reflect.get(parsed as object, "base")
    const end = parsed === undefined ? undefined : Reflect.get(parsed as object, "end")
    if (typeof base === "number" && typeof end === "number") state = { base, end }
  } catch {
    state = undefined
  }
  let completed = 0
  let discarded = 0
  for (const name of names) {
    if (!name.endsWith(SWAP_SUFFIX)) continue
    const base = Number(name.slice(0, 20))
    // Without the record (it is written before the commit, so only damage removes it) the swap replaces
    // the segment of its own base only.
    const end = state !== undefined && state.base === base ? state.end : base + 1
    for (const other of names) {
      const m = SEGMENT_FILE.exec(other)
      if (m === null) continue
      const b = Number(m[1])
      if (b >= base && b < end) volume.remove(other)
    }
    volume.remove(fileName(base, INDEX_SUFFIX))
    volume.remove(fileName(base, TIME_INDEX_SUFFIX))
    volume.rename(name, fileName(base, LOG_SUFFIX))
    completed++
  }
  for (const name of names)
    if (name.endsWith(CLEANED_SUFFIX)) {
      volume.remove(name)
      discarded++
    }
  if (stateBytes !== undefined) volume.remove(SWAP_STATE)
  return { completed, discarded }
}
