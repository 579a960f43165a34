/**
 * The metadata log of a controller quorum, as the controller sees it: `MetadataLog.MetadataLogService`
 * over a KRaft voter (`RaftRuntime`). An append goes through the Raft leader and returns once a majority
 * of voters has the records durably (`NotLeader` on any other voter, or when leadership moved before the
 * records committed); reads see the committed log only (below the high watermark), so a standby replays
 * and brokers fetch nothing that could still be truncated. The log's batches are the Raft log's own,
 * byte-identical on every voter: metadata records framed as Kafka frames them, and the leader-change
 * control batches (which carry no records).
 *
 * The voter keeps its log itself: a broker's `appendFetched` and `loadInto` are not a controller's and
 * fail; snapshots are not taken on a quorum's log yet (`writeSnapshot` keeps nothing, so a restarted
 * voter replays its whole log).
 */
import { MetadataLog, MetadataLogError, MetadataProvenance } from "@clustermirror/metadata-log"
import { MetadataRecords, RecordBatch } from "@clustermirror/protocol"
import type { RaftRuntime } from "@clustermirror/raft-runtime"
import { Clock, Effect, Option } from "effect"
import { Buffer } from "node:buffer"

/** The controller's log over `raft`. */
export const make = (raft: RaftRuntime.RaftRuntime): MetadataLog.MetadataLogService => {
  const notAController = (what: string) =>
    Effect.dieMessage(`${what} is a broker's operation: a controller quorum's log is kept by its voters`)

  const readFrom = (offset: number, maxBytes = MetadataLog.MAX_BATCH_BYTES) =>
    Effect.gen(function* () {
      const bytes = yield* raft.readCommitted(offset)
      const highWatermark = yield* raft.highWatermark
      // At least one batch, then as many whole ones as fit.
      const batches: Array<Buffer> = []
      let size = 0
      for (const ref of RecordBatch.split(bytes).batches) {
        if (batches.length > 0 && size + ref.size > maxBytes) break
        batches.push(bytes.subarray(ref.position, ref.position + ref.size))
        size += ref.size
      }
      const records = batches.length === 0 ? Buffer.alloc(0) : bytes.subarray(0, size)
      return { records, batches, highWatermark, logEndOffset: highWatermark }
    })

  return {
    append: (records, leaderEpoch) =>
      Effect.gen(function* () {
        const lastOffset = yield* raft
          .append(records.map((r) => Buffer.from(MetadataRecords.encode(r))))
          .pipe(
            Effect.mapError((e) => new MetadataLogError.NotLeader({ message: `${e.message}`, leaderId: e.leaderId }))
          )
        const now = yield* Clock.currentTimeMillis
        return {
          baseOffset: lastOffset - records.length + 1,
          lastOffset,
          provenance: MetadataProvenance.make(lastOffset, leaderEpoch, now)
        }
      }),
    readFrom,
    appendFetched: () => notAController("appendFetched"),
    logEndOffset: raft.highWatermark,
    latestEpoch: Effect.map(raft.leader, (l) => l.leaderEpoch),
    writeSnapshot: () => Effect.void,
    latestSnapshot: Effect.succeed(Option.none()),
    loadInto: () => notAController("loadInto"),
    // The voter's scope closes its log.
    close: Effect.void
  }
}
