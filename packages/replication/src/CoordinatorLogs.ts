/**
 * The coordinator log port of the coordinator runtime over this broker's replica manager, for any
 * coordinator topic (`__mirror_state`, `__consumer_offsets`): a load reads the partition's keyed records
 * from its log start (a batch or record that does not decode is an error naming the partition); an append
 * goes out as leader at the shard's epoch with acks=all, as a coordinator's write, and succeeds once the
 * high watermark passed it. `make` keeps plain records (control batches skipped); `makeTransactional`
 * keeps `TxnEntry`s: records of a producer's transaction go in transactional batches of that producer and
 * COMMIT/ABORT markers in control batches, and a load reads them back as such. Owns no state.
 */
import { CoordinatorLog, CoordinatorRuntimeError } from "@clustermirror/coordinator-runtime"
import { ControlRecord, Errors, RecordBatch } from "@clustermirror/protocol"
import type { PartitionLog } from "@clustermirror/storage"
import { Clock, Effect, Either } from "effect"
import type { ReplicaManager } from "./ReplicaManager.js"

/** One batch of a coordinator log, from its header. */
interface BatchOf {
  readonly batch: Buffer
  readonly isControl: boolean
  readonly isTransactional: boolean
  readonly producerId: bigint
  readonly producerEpoch: number
}

/** Every batch of `log` from its log start to its end. */
function* batches(log: PartitionLog.PartitionLog): Generator<BatchOf> {
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const { records } = log.read(offset, 4 * 1024 * 1024, { minOneMessage: true })
    const refs = RecordBatch.split(records).batches
    if (refs.length === 0) break
    for (const b of refs) {
      const batch = records.subarray(b.position, b.position + b.size)
      offset = RecordBatch.lastOffset(batch) + 1
      yield {
        batch,
        isControl: RecordBatch.isControl(batch),
        isTransactional: RecordBatch.isTransactional(batch),
        producerId: RecordBatch.producerId(batch),
        producerEpoch: RecordBatch.producerEpoch(batch)
      }
    }
  }
}

/** The keyed records of a data batch. */
const keyed = (b: BatchOf, what: string): ReadonlyArray<{ key: Uint8Array; value: Uint8Array | null }> => {
  const decoded = RecordBatch.records(b.batch)
  if (Either.isLeft(decoded)) throw new Error(`corrupt batch in ${what}: ${decoded.left.message}`)
  return decoded.right.flatMap((r) => (r.key === null ? [] : [{ key: r.key, value: r.value }]))
}

/** The (key, value) of every keyed record of `log`'s data batches, from its log start to its end. */
export function* keyedRecords(
  log: PartitionLog.PartitionLog,
  what: string
): Generator<{ readonly key: Uint8Array; readonly value: Uint8Array | null }> {
  for (const b of batches(log)) if (!b.isControl) yield* keyed(b, what)
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

/** The log of coordinator topic `topic` on this broker, with `read` decoding and `toBatches` encoding. */
const over = <R, E>(
  options: Options<E>,
  read: (log: PartitionLog.PartitionLog, what: string) => Array<R>,
  toBatches: (records: ReadonlyArray<R>, timestamp: number) => Buffer
): CoordinatorLog.CoordinatorLog<R> => {
  const { replicas, nodeId, topic } = options
  const timeoutMs = options.appendTimeoutMs ?? 5000
  return CoordinatorLog.make<R>({
    read: (partition) =>
      Effect.try({
        try: () => {
          const state = replicas.get(topic, partition)
          return state === undefined ? [] : read(state.log, `${topic}-${partition}`)
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
        const batch = toBatches(records, timestamp)
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

const decodeWith = <R>(codec: RecordCodec<R>, key: Uint8Array, value: Uint8Array | null, what: string): R => {
  const record = codec.decode(key, value)
  if (Either.isLeft(record)) throw new Error(`bad record in ${what}: ${record.left.message}`)
  return record.right
}

/** The log of coordinator topic `topic` on this broker. */
export const make = <R>(options: Options<R>): CoordinatorLog.CoordinatorLog<R> =>
  over<R, R>(
    options,
    (log, what) => [...keyedRecords(log, what)].map((r) => decodeWith(options.codec, r.key, r.value, what)),
    (records, timestamp) => RecordBatch.build({ records: records.map(options.codec.encode), timestamp })
  )

/**
 * The log of coordinator topic `topic` on this broker holding transactions too: each run of consecutive
 * entries of one kind and producer is one batch of the append (plain, transactional, or a marker).
 */
export const makeTransactional = <R>(options: Options<R>): CoordinatorLog.CoordinatorLog<CoordinatorLog.TxnEntry<R>> =>
  over<CoordinatorLog.TxnEntry<R>, R>(
    options,
    (log, what) => {
      const out: Array<CoordinatorLog.TxnEntry<R>> = []
      for (const b of batches(log)) {
        if (b.isControl) {
          const control = ControlRecord.parseControl(b.batch)
          if (Either.isLeft(control)) throw new Error(`bad control batch in ${what}: ${control.left.message}`)
          const c = control.right
          if (c.type === "COMMIT" || c.type === "ABORT")
            out.push(CoordinatorLog.txnMarker(b, c.type === "COMMIT", c.coordinatorEpoch))
          continue
        }
        for (const r of keyed(b, what)) {
          const record = decodeWith(options.codec, r.key, r.value, what)
          out.push(b.isTransactional ? CoordinatorLog.inTransaction(b, record) : CoordinatorLog.plain(record))
        }
      }
      return out
    },
    (entries, timestamp) => {
      const out: Array<Buffer> = []
      let run: Array<CoordinatorLog.TxnEntry<R>> = []
      const close = () => {
        const first = run[0]
        if (first === undefined) return
        if (first._tag === "TxnMarker") out.push(ControlRecord.endTxnMarker({ ...first, timestamp }))
        else
          out.push(
            RecordBatch.build({
              records: run.flatMap((e) => (e._tag === "TxnMarker" ? [] : [options.codec.encode(e.record)])),
              timestamp,
              ...(first._tag === "TxnRecord"
                ? {
                    producerId: first.producerId,
                    producerEpoch: first.producerEpoch,
                    baseSequence: 0,
                    isTransactional: true
                  }
                : {})
            })
          )
        run = []
      }
      for (const e of entries) {
        const last = run[run.length - 1]
        const sameBatch =
          last !== undefined &&
          e._tag !== "TxnMarker" &&
          last._tag === e._tag &&
          (e._tag === "Record" ||
            (last._tag === "TxnRecord" && last.producerId === e.producerId && last.producerEpoch === e.producerEpoch))
        if (!sameBatch) close()
        run.push(e)
      }
      close()
      return Buffer.concat(out)
    }
  )
