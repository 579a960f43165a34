/**
 * The metadata log of a controller quorum, as the controller sees it: `MetadataLog.MetadataLogService`
 * over a KRaft voter (`RaftRuntime`). An append goes through the Raft leader and returns once a majority
 * of voters has the records durably (`NotLeader` on any other voter, or when leadership moved before the
 * records committed); reads see the committed log only (below the high watermark), so a standby replays
 * and brokers fetch nothing that could still be truncated. The log's batches are the Raft log's own,
 * byte-identical on every voter: metadata records framed as Kafka frames them, and the leader-change
 * control batches (which carry no records).
 *
 * Snapshots are the voter's (KIP-630), when `snapshots` is on: `writeSnapshot` hands the image's records
 * to the raft runtime, which writes the snapshot file and moves the log start past it; a read below the
 * log start is OFFSET_OUT_OF_RANGE (the standby resets to the snapshot the voter's commit stream brings
 * first). Off, `writeSnapshot` keeps nothing and the log keeps every record: brokers cannot load a
 * snapshot from the controller yet, so a broker that starts empty needs the log from offset 0. The voter
 * keeps its log itself: a broker's `appendFetched` and `loadInto` are not a controller's and fail.
 */
import { MetadataLog, MetadataLogError, MetadataProvenance, Snapshot } from "@clustermirror/metadata-log"
import { StorageError } from "@clustermirror/storage"
import { MetadataRecords, RecordBatch } from "@clustermirror/protocol"
import type { RaftRuntime } from "@clustermirror/raft-runtime"
import { Clock, Effect, Option } from "effect"
import { Buffer } from "node:buffer"

/** The controller's log over `raft`. */
export const make = (raft: RaftRuntime.RaftRuntime, snapshots = false): MetadataLog.MetadataLogService => {
  const notAController = (what: string) =>
    Effect.dieMessage(`${what} is a broker's operation: a controller quorum's log is kept by its voters`)

  const readFrom = (offset: number, maxBytes = MetadataLog.MAX_BATCH_BYTES) =>
    Effect.gen(function* () {
      const highWatermark = yield* raft.highWatermark
      const bytes = yield* Effect.mapError(
        raft.readCommitted(offset),
        (e) =>
          new StorageError.OffsetOutOfRangeError({
            message: e.message,
            offset: e.offset,
            logStartOffset: e.logStartOffset,
            logEndOffset: highWatermark
          })
      )
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
          .append(records.map(MetadataRecords.encode))
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
    writeSnapshot: (image, endOffset) =>
      snapshots
        ? raft.snapshot(endOffset, Snapshot.imageToRecords(image).map(MetadataRecords.encode)).pipe(
            Effect.mapError((e) => new MetadataLogError.SnapshotError({ message: e.message, cause: e })),
            Effect.asVoid
          )
        : Effect.void,
    latestSnapshot: Effect.succeed(Option.none()),
    loadInto: () => notAController("loadInto"),
    // The voter's scope closes its log.
    close: Effect.void
  }
}
