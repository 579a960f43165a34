/**
 * The coordinator log port of the coordinator runtime over this broker's replica manager, for any
 * coordinator topic (`__mirror_state`, `__consumer_offsets`): a load reads the partition's keyed records
 * from its log start (control batches skipped, a batch or record that does not decode is an error
 * naming the partition); an append goes out as leader at the shard's epoch with acks=all and succeeds
 * once the high watermark passed it. Owns no state.
 */
import { CoordinatorLog, CoordinatorRuntimeError } from "@clustermirror/coordinator-runtime"
import { Errors, RecordBatch } from "@clustermirror/protocol"
import type { PartitionLog } from "@clustermirror/storage"
import { Clock, Effect, Either } from "effect"
import type { ReplicaManager } from "./ReplicaManager.js"

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

/** How a coordinator's records map to and from the keyed records of its topic. */
export interface RecordCodec<R> {
  readonly encode: (record: R) => RecordBatch.RecordInput
  readonly decode: (key: Uint8Array, value: Uint8Array | null) => Either.Either<R, { readonly message: string }>
}

export interface Options<R> {
  readonly replicas: ReplicaManager
  readonly nodeId: number
  /** The coordinator topic, e.g. `__mirror_state`. */
  readonly topic: string
  readonly codec: RecordCodec<R>
  /** How long an append waits for the ISR (default 5000 ms). */
  readonly appendTimeoutMs?: number
}

/** The log of coordinator topic `topic` on this broker. */
export const make = <R>(options: Options<R>): CoordinatorLog.CoordinatorLog<R> => {
  const { replicas, nodeId, topic, codec } = options
  const timeoutMs = options.appendTimeoutMs ?? 5000
  return CoordinatorLog.make<R>({
    read: (partition) =>
      Effect.try({
        try: () => {
          const state = replicas.get(topic, partition)
          const out: Array<R> = []
          if (state === undefined) return out
          const what = `${topic}-${partition}`
          for (const r of keyedRecords(state.log, what)) {
            const record = codec.decode(r.key, r.value)
            if (Either.isLeft(record)) throw new Error(`bad record in ${what}: ${record.left.message}`)
            out.push(record.right)
          }
          return out
        },
        catch: (e) =>
          new CoordinatorRuntimeError.CoordinatorLogError({
            partition,
            message: e instanceof Error ? e.message : String(e)
          })
      }),
    append: (partition, leaderEpoch, records) =>
      Effect.gen(function* () {
        const state = replicas.get(topic, partition)
        if (state === undefined || state.leader !== nodeId || state.leaderEpoch !== leaderEpoch)
          return yield* new CoordinatorRuntimeError.NotCoordinator({
            partition,
            message: `not the leader of ${topic}-${partition} at epoch ${leaderEpoch}`
          })
        const timestamp = yield* Clock.currentTimeMillis
        const batch = RecordBatch.build({ records: records.map(codec.encode), timestamp })
        const result = yield* Effect.tryPromise({
          try: async () => replicas.appendAsLeader(topic, partition, batch, false, -1, timeoutMs),
          catch: (e) =>
            new CoordinatorRuntimeError.AppendFailed({
              partition,
              errorCode: Errors.ErrorCode.UNKNOWN_SERVER_ERROR,
              message: `append to ${topic}-${partition}: ${e instanceof Error ? e.message : String(e)}`
            })
        })
        if (result.errorCode === Errors.ErrorCode.NONE) return
        const message = `append to ${topic}-${partition}: ${Errors.message(result.errorCode)}`
        return yield* result.errorCode === Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER
          ? new CoordinatorRuntimeError.NotCoordinator({ partition, message })
          : new CoordinatorRuntimeError.AppendFailed({ partition, errorCode: result.errorCode, message })
      })
  })
}
