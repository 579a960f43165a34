/**
 * Reading a coordinator topic partition (`__consumer_offsets`, `__mirror_state`) from its log start:
 * the keyed records of every data batch in offset order, for a coordinator that replays them when it
 * becomes leader. Control batches are skipped; a batch that does not decode is an error naming the
 * partition. Owns no state.
 */
import { RecordBatch } from "@clustermirror/protocol"
import type { PartitionLog } from "@clustermirror/storage"
import { Either } from "effect"

/** The (key, value) of every keyed record of `log`'s data batches, from its log start to its end. */
export function* keyedRecords(
  log: PartitionLog.PartitionLog,
  what: string
): Generator<{ readonly key: Uint8Array; readonly value: Uint8Array | null }> {
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const { records } = log.read(offset, 4 * 1024 * 1024, { minOneMessage: true })
    const { batches } = RecordBatch.split(records)
    if (batches.length === 0) break
    for (const b of batches) {
      const batch = records.subarray(b.position, b.position + b.size)
      offset = RecordBatch.lastOffset(batch) + 1
      if (RecordBatch.isControl(batch)) continue
      const decoded = RecordBatch.records(batch)
      if (Either.isLeft(decoded)) throw new Error(`corrupt batch in ${what}: ${decoded.left.message}`)
      for (const r of decoded.right) if (r.key !== null) yield { key: r.key, value: r.value }
    }
  }
}
