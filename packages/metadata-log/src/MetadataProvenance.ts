/**
 * MetadataProvenance: where a metadata image comes from in the metadata log: the offset and leader
 * epoch of the last record it contains, and the append time of the batch holding that record. Pure
 * data; it must not read the log itself.
 */

export interface MetadataProvenance {
  /** Offset of the last record applied; -1 before any. */
  readonly lastOffset: number
  /** Leader epoch of the batch holding that record; -1 before any. */
  readonly lastEpoch: number
  /** Append time of that batch in ms; -1 before any. */
  readonly lastContainedLogTimeMs: number
}

/** The provenance of the empty image. */
export const empty: MetadataProvenance = { lastOffset: -1, lastEpoch: -1, lastContainedLogTimeMs: -1 }

export const make = (lastOffset: number, lastEpoch: number, lastContainedLogTimeMs: number): MetadataProvenance => ({
  lastOffset,
  lastEpoch,
  lastContainedLogTimeMs
})

/** The offset a reader continues from after an image of this provenance. */
export const nextOffset = (p: MetadataProvenance): number => p.lastOffset + 1
