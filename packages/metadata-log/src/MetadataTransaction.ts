/**
 * MetadataTransaction: how every reader of the metadata log honours metadata transactions (KIP-868).
 * Records between BeginTransactionRecord and EndTransactionRecord apply together at the End; an
 * AbortTransactionRecord drops them; a transaction still open where the log ends (the writer failed
 * between two of its batches) is not applied until its End or Abort arrives. Outside a transaction
 * every record applies on its own.
 *
 * `TransactionBuffer` holds the records of the open transaction, each with whatever the reader needs
 * to apply it later (its offset, say). It decides nothing and applies nothing: the reader (the
 * broker's loader, the controller's restart) applies what `offer` hands back. It also owns how a
 * writer wraps records that do not fit one batch: `transactionBatches`.
 */
import { MetadataRecords } from "@clustermirror/protocol"
import { InvalidMetadataRecord } from "./MetadataLogError.js"

type MetadataRecord = MetadataRecords.MetadataRecord

/** Records per batch of the metadata log (Kafka's controller default for `max.records.per.batch`). */
export const MAX_RECORDS_PER_BATCH = 10_000

const invalid = (record: MetadataRecord, message: string): InvalidMetadataRecord =>
  new InvalidMetadataRecord({ message, recordType: record.type })

export class TransactionBuffer<A> {
  private pending: Array<A> | null = null
  private name: string | null = null

  /** Whether a transaction is open: its records are held until it ends. */
  get isOpen(): boolean {
    return this.pending !== null
  }

  /** The name the open transaction began with (null when unnamed or none is open). */
  get openName(): string | null {
    return this.name
  }

  /** How many records the open transaction holds. */
  get size(): number {
    return this.pending?.length ?? 0
  }

  /**
   * Takes the next record of the log (`item` is what the reader applies for it) and returns what to
   * apply now, in log order: the record itself outside a transaction, the whole transaction at its
   * End, nothing otherwise. Markers themselves are never handed back. Throws InvalidMetadataRecord on
   * a nested Begin or an End or Abort without a Begin: the log is corrupt.
   */
  offer(record: MetadataRecord, item: A): ReadonlyArray<A> {
    switch (record.type) {
      case "BeginTransactionRecord":
        if (this.pending !== null) throw invalid(record, "nested metadata transaction")
        this.pending = []
        this.name = record.data.name
        return []
      case "EndTransactionRecord": {
        const done = this.pending ?? []
        if (this.pending === null) throw invalid(record, "no metadata transaction to end")
        this.reset()
        return done
      }
      case "AbortTransactionRecord":
        if (this.pending === null) throw invalid(record, "no metadata transaction to abort")
        this.reset()
        return []
      default:
        if (this.pending === null) return [item]
        this.pending.push(item)
        return []
    }
  }

  /** Drops the open transaction, if any (a snapshot replaces everything before it). */
  reset(): void {
    this.pending = null
    this.name = null
  }
}

/**
 * The batches a writer appends for `records` so that readers apply them all or none: one batch when
 * they fit, else BeginTransactionRecord(name), the records and EndTransactionRecord, split into
 * batches of at most MAX_RECORDS_PER_BATCH records.
 */
export const transactionBatches = (
  name: string,
  records: ReadonlyArray<MetadataRecord>,
  maxRecordsPerBatch: number = MAX_RECORDS_PER_BATCH
): ReadonlyArray<ReadonlyArray<MetadataRecord>> => {
  if (records.length <= maxRecordsPerBatch) return records.length === 0 ? [] : [records]
  const all = [
    MetadataRecords.make("BeginTransactionRecord", { name }),
    ...records,
    MetadataRecords.make("EndTransactionRecord", {})
  ]
  const out: Array<ReadonlyArray<MetadataRecord>> = []
  for (let i = 0; i < all.length; i += maxRecordsPerBatch) out.push(all.slice(i, i + maxRecordsPerBatch))
  return out
}

/** The record a writer appends to close a transaction it could not finish. */
export const abortRecord = (reason: string): MetadataRecord =>
  MetadataRecords.make("AbortTransactionRecord", { reason })
