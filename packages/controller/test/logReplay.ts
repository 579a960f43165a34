import { MetadataLog, MetadataTransaction } from "@clustermirror/metadata-log"
import type { MetadataRecords } from "@clustermirror/protocol"
import { Effect, Either } from "effect"
import * as ControllerState from "../src/ControllerState.js"

/**
 * The controller state a replay of the whole metadata log from offset 0 gives (no snapshot): every
 * committed record in order at its own offset, a metadata transaction's records at its End, an
 * aborted or unfinished one never.
 */
export const replayOfLog = (log: MetadataLog.MetadataLogService): Effect.Effect<ControllerState.ControllerState> =>
  Effect.gen(function* () {
    let state = ControllerState.empty
    const transaction = new MetadataTransaction.TransactionBuffer<readonly [MetadataRecords.MetadataRecord, number]>()
    const end = yield* log.logEndOffset
    let offset = 0
    while (offset < end) {
      const read = yield* Effect.orDie(log.readFrom(offset))
      for (const bytes of read.batches) {
        const { records, provenance } = Either.getOrThrow(MetadataLog.decodeBatch(bytes))
        if (provenance.lastOffset < offset) continue
        const first = provenance.lastOffset - records.length + 1
        for (const [i, record] of records.entries())
          for (const [r, at] of transaction.offer(record, [record, first + i]))
            state = ControllerState.replayAll(state, [r], BigInt(at))
        offset = provenance.lastOffset + 1
      }
    }
    return state
  })
