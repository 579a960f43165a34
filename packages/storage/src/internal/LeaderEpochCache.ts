/**
 * The leader-epoch cache of one partition: (epoch, startOffset) pairs in increasing order of both, persisted
 * in Kafka's `leader-epoch-checkpoint` text format. It knows nothing of segments; the log tells it where
 * epochs start and where the log was truncated.
 */

export interface EpochEntry {
  readonly epoch: number
  readonly startOffset: number
}

export class LeaderEpochCache {
  private entries: EpochEntry[] = []

  constructor(entries: ReadonlyArray<EpochEntry> = []) {
    this.entries = [...entries]
  }

  all(): ReadonlyArray<EpochEntry> {
    return this.entries
  }

  latestEpoch(): number {
    return this.entries.length === 0 ? -1 : this.entries[this.entries.length - 1]!.epoch
  }

  /** Records that `epoch` starts at `startOffset`; returns whether the cache changed. Older epochs are ignored. */
  assign(epoch: number, startOffset: number): boolean {
    if (epoch < 0 || epoch <= this.latestEpoch()) return false
    // A newer epoch starting below existing entries means those entries describe a diverged suffix.
    while (this.entries.length > 0 && this.entries[this.entries.length - 1]!.startOffset >= startOffset)
      this.entries.pop()
    this.entries.push({ epoch, startOffset })
    return true
  }

  /** Removes entries starting at or above `endOffset` (the log was truncated to `endOffset`). */
  truncateFromEnd(endOffset: number): boolean {
    const before = this.entries.length
    this.entries = this.entries.filter((e) => e.startOffset < endOffset)
    return this.entries.length !== before
  }

  /** The log now starts at `startOffset`: earlier entries go, the one covering it is moved up to it. */
  truncateFromStart(startOffset: number): boolean {
    let i = 0
    while (i + 1 < this.entries.length && this.entries[i + 1]!.startOffset <= startOffset) i++
    const first = this.entries[i]
    if (first === undefined) return false
    if (i === 0 && first.startOffset >= startOffset) return false
    const kept = this.entries.slice(i)
    if (first.startOffset < startOffset) kept[0] = { epoch: first.epoch, startOffset }
    this.entries = kept
    return true
  }

  clear(): void {
    this.entries = []
  }

  /** The epoch of the entry covering `offset`, or -1. */
  epochForOffset(offset: number): number {
    let epoch = -1
    for (const e of this.entries) {
      if (e.startOffset > offset) break
      epoch = e.epoch
    }
    return epoch
  }

  /**
   * OffsetForLeaderEpoch: the largest epoch <= `requested` and the offset where the next higher epoch
   * starts (the log end offset for the latest epoch); -1/-1 when unknown.
   */
  endOffsetFor(requested: number, logEndOffset: number): EpochEntryEnd {
    if (requested < 0 || this.entries.length === 0) return UNDEFINED
    if (requested === this.latestEpoch()) return { epoch: requested, endOffset: logEndOffset }
    const higherIndex = this.entries.findIndex((e) => e.epoch > requested)
    if (higherIndex < 0) return UNDEFINED
    const higher = this.entries[higherIndex]!
    // Below every known epoch: the requested epoch itself ends where the first known one starts.
    if (higherIndex === 0) return { epoch: requested, endOffset: higher.startOffset }
    return { epoch: this.entries[higherIndex - 1]!.epoch, endOffset: higher.startOffset }
  }

  encode(): string {
    return `0\n${this.entries.length}\n${this.entries.map((e) => `${e.epoch} ${e.startOffset}\n`).join("")}`
  }

  /** Parses a checkpoint; undefined when it is not in the expected format (then the log rebuilds it). */
  static decode(text: string): LeaderEpochCache | undefined {
    const lines = text.split("\n").filter((l) => l.length > 0)
    if (lines[0] !== "0") return undefined
    const count = Number(lines[1])
    if (!Number.isInteger(count) || lines.length !== count + 2) return undefined
    const entries: EpochEntry[] = []
    for (const line of lines.slice(2)) {
      const [e, o] = line.trim().split(/\s+/)
      const epoch = Number(e)
      const startOffset = Number(o)
      if (!Number.isInteger(epoch) || !Number.isInteger(startOffset)) return undefined
      entries.push({ epoch, startOffset })
    }
    return new LeaderEpochCache(entries)
  }
}

export interface EpochEntryEnd {
  readonly epoch: number
  readonly endOffset: number
}

const UNDEFINED: EpochEntryEnd = { epoch: -1, endOffset: -1 }
