/**
 * Producer state of one partition: per producer id the epoch, the last five batches' sequence ranges and
 * offsets (idempotence), the first offset of its open transaction and the coordinator epoch of its last
 * marker; the aborted-transaction list; and the transactions whose marker is not yet below the high
 * watermark, which hold the LSO back like open ones (Kafka's unreplicated transactions).
 * `check` decides whether a leader append is acceptable; `apply` is the only mutation, used alike for
 * live appends (leader and follower) and for rebuilding from the log.
 */
import {
  InvalidProducerEpochError,
  OutOfOrderSequenceError,
  TransactionCoordinatorFencedError
} from "../StorageError.js"
import { CONTROL_ABORT, CONTROL_MIRROR_PID_RESET } from "./BatchScan.js"

const INT32_MAX = 2147483647
/** Kafka keeps this many batches per producer for duplicate detection. */
const RETAINED_BATCHES = 5

export interface BatchMetadata {
  readonly firstSeq: number
  readonly lastSeq: number
  readonly firstOffset: number
  readonly lastOffset: number
}

interface ProducerEntry {
  epoch: number
  batches: BatchMetadata[]
  /** First offset of the open transaction, -1 when none. */
  txnFirstOffset: number
  /** Coordinator epoch of the producer's last COMMIT/ABORT marker, -1 when none was seen. */
  coordinatorEpoch: number
  /** Max timestamp of the producer's last batch (data or marker), -1 when unknown. */
  lastTimestamp: number
}

/** A transaction ended by a marker that is not yet below the high watermark. */
interface CompletedTxn {
  readonly firstOffset: number
  /** Offset of the marker. */
  readonly lastOffset: number
}

export interface AbortedTxn {
  readonly producerId: bigint
  readonly firstOffset: number
  /** Offset of the ABORT marker. */
  readonly lastOffset: number
}

/** What the log knows about one batch from its header (and control key). */
export interface BatchInfo {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly baseSequence: number
  readonly baseOffset: number
  readonly lastOffsetDelta: number
  readonly isTransactional: boolean
  readonly isControl: boolean
  /** Control record type for control batches, -1 otherwise. */
  readonly controlType: number
  /** Coordinator epoch of a COMMIT/ABORT marker, -1 otherwise. */
  readonly coordinatorEpoch: number
  /** The batch's max timestamp. */
  readonly maxTimestamp: number
}

/** A producer the partition has state for (DescribeProducers). */
export interface ActiveProducer {
  readonly producerId: bigint
  readonly producerEpoch: number
  /** The last sequence of its last data batch, -1 when none is retained. */
  readonly lastSequence: number
  readonly lastTimestamp: number
  readonly coordinatorEpoch: number
  /** The first offset of its open transaction, -1 when none. */
  readonly currentTxnStartOffset: number
}

export interface OpenTxn {
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly firstOffset: number
  readonly coordinatorEpoch: number
}

const lastSequence = (info: BatchInfo): number => {
  const last = info.baseSequence + info.lastOffsetDelta
  return last > INT32_MAX ? last - INT32_MAX - 1 : last
}

const nextSequence = (seq: number): number => (seq === INT32_MAX ? 0 : seq + 1)

/** Pending per-request view so several batches of one append are checked against each other. */
export type Pending = Map<bigint, { epoch: number; lastSeq: number }>

// Idle partitions (most of a mirror's) never see a producer: they share these empty values and get their
// own map and list on the first write.
const NO_PRODUCERS: ReadonlyMap<bigint, ProducerEntry> = new Map()
const NO_ABORTED: ReadonlyArray<AbortedTxn> = []
const NO_COMPLETED: ReadonlyArray<CompletedTxn> = []

export class ProducerState {
  private producers: ReadonlyMap<bigint, ProducerEntry> = NO_PRODUCERS
  private aborted: ReadonlyArray<AbortedTxn> = NO_ABORTED
  /** In marker order, so the ones the high watermark passed are a prefix. */
  private completed: ReadonlyArray<CompletedTxn> = NO_COMPLETED
  private highWatermark = 0

  /**
   * Checks a leader append of `info`: returns the original batch when it is a duplicate, undefined when it is
   * acceptable; throws on a fenced producer or coordinator epoch, or (unless `sequences` is false: a
   * coordinator's batches) a sequence gap.
   */
  check(info: BatchInfo, pending: Pending, sequences = true): BatchMetadata | undefined {
    if (info.producerId < 0n) return undefined
    const entry = this.producers.get(info.producerId)
    const inFlight = pending.get(info.producerId)
    const currentEpoch = inFlight?.epoch ?? entry?.epoch ?? -1
    if (currentEpoch >= 0 && info.producerEpoch < currentEpoch)
      throw new InvalidProducerEpochError({
        message: `producer ${info.producerId} epoch ${info.producerEpoch} is older than ${currentEpoch}`,
        producerId: info.producerId,
        producerEpoch: info.producerEpoch,
        currentEpoch
      })
    if (info.isControl) {
      if (entry !== undefined && info.coordinatorEpoch >= 0 && info.coordinatorEpoch < entry.coordinatorEpoch)
        throw new TransactionCoordinatorFencedError({
          message: `producer ${info.producerId}: marker of coordinator epoch ${info.coordinatorEpoch}, older than ${entry.coordinatorEpoch}`,
          producerId: info.producerId,
          coordinatorEpoch: info.coordinatorEpoch,
          currentCoordinatorEpoch: entry.coordinatorEpoch
        })
      return undefined
    }
    if (!sequences) {
      pending.set(info.producerId, { epoch: info.producerEpoch, lastSeq: lastSequence(info) })
      return undefined
    }
    const firstSeq = info.baseSequence
    const lastSeq = lastSequence(info)
    if (inFlight === undefined && entry !== undefined && info.producerEpoch === entry.epoch) {
      const dup = entry.batches.find((b) => b.firstSeq === firstSeq && b.lastSeq === lastSeq)
      if (dup !== undefined) return dup
    }
    const outOfOrder = (expected: number): OutOfOrderSequenceError =>
      new OutOfOrderSequenceError({
        message: `producer ${info.producerId} epoch ${info.producerEpoch}: sequence ${firstSeq}, expected ${expected}`,
        producerId: info.producerId,
        expectedSequence: expected,
        sequence: firstSeq
      })
    // Unknown producers are accepted at any sequence (their state may have been removed), like Kafka 2.5+.
    if (currentEpoch < 0) {
      pending.set(info.producerId, { epoch: info.producerEpoch, lastSeq })
      return undefined
    }
    if (info.producerEpoch > currentEpoch) {
      if (firstSeq !== 0) throw outOfOrder(0)
    } else {
      const previous = inFlight?.lastSeq ?? entry?.batches[entry.batches.length - 1]?.lastSeq ?? -1
      const expected = nextSequence(previous)
      if (firstSeq !== expected) throw outOfOrder(expected)
    }
    pending.set(info.producerId, { epoch: info.producerEpoch, lastSeq })
    return undefined
  }

  /** Applies an appended batch. */
  apply(info: BatchInfo): void {
    if (info.isControl) {
      if (info.controlType === CONTROL_MIRROR_PID_RESET) {
        this.producers = NO_PRODUCERS
        return
      }
      if (info.producerId < 0n) return
      const entry = this.entry(info.producerId, info.producerEpoch)
      entry.lastTimestamp = info.maxTimestamp
      if (info.coordinatorEpoch >= 0) entry.coordinatorEpoch = info.coordinatorEpoch
      if (entry.txnFirstOffset >= 0) {
        if (info.controlType === CONTROL_ABORT)
          this.abortedList().push({
            producerId: info.producerId,
            firstOffset: entry.txnFirstOffset,
            lastOffset: info.baseOffset
          })
        if (info.baseOffset >= this.highWatermark)
          this.completedList().push({ firstOffset: entry.txnFirstOffset, lastOffset: info.baseOffset })
      }
      entry.txnFirstOffset = -1
      return
    }
    if (info.producerId < 0n) return
    const entry = this.entry(info.producerId, info.producerEpoch)
    entry.lastTimestamp = info.maxTimestamp
    entry.batches.push({
      firstSeq: info.baseSequence,
      lastSeq: lastSequence(info),
      firstOffset: info.baseOffset,
      lastOffset: info.baseOffset + info.lastOffsetDelta
    })
    if (entry.batches.length > RETAINED_BATCHES) entry.batches.shift()
    if (info.isTransactional && entry.txnFirstOffset < 0) entry.txnFirstOffset = info.baseOffset
  }

  private entry(producerId: bigint, epoch: number): ProducerEntry {
    let entry = this.producers.get(producerId)
    if (entry === undefined) {
      entry = { epoch, batches: [], txnFirstOffset: -1, coordinatorEpoch: -1, lastTimestamp: -1 }
      this.producerMap().set(producerId, entry)
    } else if (epoch !== entry.epoch) {
      entry.epoch = epoch
      entry.batches = []
    }
    return entry
  }

  private producerMap(): Map<bigint, ProducerEntry> {
    if (this.producers === NO_PRODUCERS) this.producers = new Map<bigint, ProducerEntry>()
    return this.producers as Map<bigint, ProducerEntry>
  }

  private abortedList(): AbortedTxn[] {
    if (this.aborted === NO_ABORTED) this.aborted = []
    return this.aborted as AbortedTxn[]
  }

  private completedList(): CompletedTxn[] {
    if (this.completed === NO_COMPLETED) this.completed = []
    return this.completed as CompletedTxn[]
  }

  /**
   * The first offset of the oldest transaction still open, or ended by a marker at or above `highWatermark`
   * (a consumer must not see its records before the marker is replicated); undefined when there is none.
   */
  firstUnstableOffset(highWatermark: number): number | undefined {
    let first: number | undefined
    for (const e of this.producers.values())
      if (e.txnFirstOffset >= 0 && (first === undefined || e.txnFirstOffset < first)) first = e.txnFirstOffset
    for (const t of this.completed)
      if (t.lastOffset >= highWatermark && (first === undefined || t.firstOffset < first)) first = t.firstOffset
    return first
  }

  /** Forgets the completed transactions whose marker is now below the high watermark. */
  onHighWatermark(highWatermark: number): void {
    this.highWatermark = highWatermark
    if (this.completed.length === 0 || this.completed[0]!.lastOffset >= highWatermark) return
    const rest = this.completed.filter((t) => t.lastOffset >= highWatermark)
    this.completed = rest.length === 0 ? NO_COMPLETED : rest
  }

  /** Producers with an open transaction, by the first offset of that transaction. */
  openTransactions(): ReadonlyArray<OpenTxn> {
    const open: OpenTxn[] = []
    for (const [producerId, e] of this.producers)
      if (e.txnFirstOffset >= 0)
        open.push({
          producerId,
          producerEpoch: e.epoch,
          firstOffset: e.txnFirstOffset,
          coordinatorEpoch: e.coordinatorEpoch
        })
    return open.sort((a, b) => a.firstOffset - b.firstOffset)
  }

  /** Every producer with state here, by producer id. */
  activeProducers(): ReadonlyArray<ActiveProducer> {
    const out: ActiveProducer[] = []
    for (const [producerId, e] of this.producers)
      out.push({
        producerId,
        producerEpoch: e.epoch,
        lastSequence: e.batches[e.batches.length - 1]?.lastSeq ?? -1,
        lastTimestamp: e.lastTimestamp,
        coordinatorEpoch: e.coordinatorEpoch,
        currentTxnStartOffset: e.txnFirstOffset
      })
    return out.sort((a, b) => (a.producerId < b.producerId ? -1 : a.producerId > b.producerId ? 1 : 0))
  }

  /** Aborted transactions overlapping `[fetchOffset, upperOffset)`. */
  abortedTransactions(fetchOffset: number, upperOffset: number): ReadonlyArray<AbortedTxn> {
    return this.aborted.filter((t) => t.lastOffset >= fetchOffset && t.firstOffset < upperOffset)
  }

  /** Forgets aborted transactions wholly below the new log start. */
  onLogStartOffset(logStartOffset: number): void {
    this.aborted = this.aborted.filter((t) => t.lastOffset >= logStartOffset)
  }

  isEmpty(): boolean {
    return this.producers.size === 0 && this.aborted.length === 0 && this.completed.length === 0
  }

  clear(): void {
    this.producers = NO_PRODUCERS
    this.aborted = NO_ABORTED
    this.completed = NO_COMPLETED
    this.highWatermark = 0
  }

  /** A JSON-friendly snapshot, written at clean shutdown. */
  snapshot(): unknown {
    return {
      producers: [...this.producers].map(([id, e]) => [
        id.toString(),
        e.epoch,
        e.txnFirstOffset,
        e.batches.map((b) => [b.firstSeq, b.lastSeq, b.firstOffset, b.lastOffset]),
        e.coordinatorEpoch,
        e.lastTimestamp
      ]),
      aborted: this.aborted.map((t) => [t.producerId.toString(), t.firstOffset, t.lastOffset]),
      completed: this.completed.map((t) => [t.firstOffset, t.lastOffset])
    }
  }

  /** Restores a snapshot; undefined when it is not one. */
  static restore(value: unknown): ProducerState | undefined {
    const isNums = (a: unknown, n: number): a is number[] =>
      Array.isArray(a) && a.length === n && a.every((x) => Number.isInteger(x))
    if (typeof value !== "object" || value === null) return undefined
    const producers: unknown = Reflect.get(value, "producers")
    const aborted: unknown = Reflect.get(value, "aborted")
    if (!Array.isArray(producers) || !Array.isArray(aborted)) return undefined
    const state = new ProducerState()
    // Snapshots written before coordinator epochs, completed transactions and timestamps were kept lack them.
    const completed: unknown = Reflect.get(value, "completed") ?? []
    if (!Array.isArray(completed)) return undefined
    for (const p of producers) {
      if (!Array.isArray(p) || p.length < 4 || p.length > 6 || typeof p[0] !== "string") return undefined
      const [id, epoch, txnFirstOffset, batches, coordinatorEpoch = -1, lastTimestamp = -1]: unknown[] = p
      if (
        !Number.isInteger(epoch) ||
        !Number.isInteger(txnFirstOffset) ||
        !Array.isArray(batches) ||
        !Number.isInteger(coordinatorEpoch) ||
        !Number.isInteger(lastTimestamp)
      )
        return undefined
      const metas: BatchMetadata[] = []
      for (const b of batches) {
        if (!isNums(b, 4)) return undefined
        metas.push({ firstSeq: b[0]!, lastSeq: b[1]!, firstOffset: b[2]!, lastOffset: b[3]! })
      }
      state.producerMap().set(BigInt(String(id)), {
        epoch: Number(epoch),
        txnFirstOffset: Number(txnFirstOffset),
        batches: metas,
        coordinatorEpoch: Number(coordinatorEpoch),
        lastTimestamp: Number(lastTimestamp)
      })
    }
    for (const t of completed) {
      if (!isNums(t, 2)) return undefined
      state.completedList().push({ firstOffset: t[0]!, lastOffset: t[1]! })
    }
    for (const t of aborted) {
      if (!Array.isArray(t) || t.length !== 3 || typeof t[0] !== "string" || !isNums(t.slice(1), 2)) return undefined
      state.abortedList().push({ producerId: BigInt(t[0]), firstOffset: Number(t[1]), lastOffset: Number(t[2]) })
    }
    return state
  }
}
