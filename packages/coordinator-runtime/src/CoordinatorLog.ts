/**
 * The port of a coordinator log (`__mirror_state`, `__consumer_offsets`, ...): read a partition from its
 * log start for a load, and append as leader at an epoch, succeeding only once the records are
 * committed (acks=all: the high watermark passed them). The broker implements it over its replica
 * manager; `memory` is the in-memory log of the tests, with controls to hold commits, fail appends and
 * move leadership. `TxnEntry` is what a log that also holds transactions appends and reads. It owns no
 * coordinator state.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { AppendFailed, CoordinatorLogError, NotCoordinator } from "./CoordinatorRuntimeError.js"

export interface CoordinatorLog<R> {
  /** Every record of `partition` from its log start, in offset order (for a load). */
  readonly read: (partition: number) => Effect.Effect<Iterable<R>, CoordinatorLogError>
  /** Appends as leader at `leaderEpoch`; succeeds once the records are committed. */
  readonly append: (
    partition: number,
    leaderEpoch: number,
    records: ReadonlyArray<R>
  ) => Effect.Effect<void, NotCoordinator | AppendFailed>
}

/** The producer of a transactional batch. */
export interface Producer {
  readonly producerId: bigint
  readonly producerEpoch: number
}

/**
 * A coordinator's record as a log that also holds transactions keeps it (Kafka's group coordinator on
 * `__consumer_offsets`): a plain record, a record of a producer's transaction (appended in a transactional
 * batch of that producer), or the COMMIT/ABORT marker that ends it (a control batch of the producer,
 * written by WriteTxnMarkers through the coordinator). The log appends consecutive entries of the same kind
 * and producer in one batch, and a load reads them back as they were appended.
 */
export type TxnEntry<R> =
  | { readonly _tag: "Record"; readonly record: R }
  | ({ readonly _tag: "TxnRecord"; readonly record: R } & Producer)
  | ({ readonly _tag: "TxnMarker"; readonly commit: boolean; readonly coordinatorEpoch: number } & Producer)

/** A plain record. */
export const plain = <R>(record: R): TxnEntry<R> => ({ _tag: "Record", record })

/** A record of `producer`'s transaction. */
export const inTransaction = <R>(producer: Producer, record: R): TxnEntry<R> => ({
  _tag: "TxnRecord",
  producerId: producer.producerId,
  producerEpoch: producer.producerEpoch,
  record
})

/** The marker ending `producer`'s transaction. */
export const txnMarker = <R>(producer: Producer, commit: boolean, coordinatorEpoch: number): TxnEntry<R> => ({
  _tag: "TxnMarker",
  producerId: producer.producerId,
  producerEpoch: producer.producerEpoch,
  commit,
  coordinatorEpoch
})

/** A tag for the log of one coordinator's records, e.g. `tag<MirrorStateRecord>("@clustermirror/...")`. */
export const tag = <R>(key: string): Context.Tag<CoordinatorLog<R>, CoordinatorLog<R>> =>
  Context.GenericTag<CoordinatorLog<R>>(key)

/** A log from its two functions. */
export const make = <R>(log: CoordinatorLog<R>): CoordinatorLog<R> => log

/** A layer providing `tag` with an in-memory log, for tests that take the log from the context. */
export const layerMemory = <R>(
  tag: Context.Tag<CoordinatorLog<R>, CoordinatorLog<R>>,
  initial: Iterable<readonly [number, ReadonlyArray<R>]> = []
): Layer.Layer<CoordinatorLog<R>> => Layer.sync(tag, () => memory<R>(initial))

/** One append the in-memory log committed. */
export interface AppendedBatch<R> {
  readonly partition: number
  readonly leaderEpoch: number
  readonly records: ReadonlyArray<R>
}

/** The in-memory log and its test controls. */
export interface MemoryLog<R> extends CoordinatorLog<R> {
  /** Committed records of a partition, in order. */
  readonly records: (partition: number) => ReadonlyArray<R>
  /** Every committed append, in commit order. */
  readonly batches: () => ReadonlyArray<AppendedBatch<R>>
  /** Appends from now on wait until `releaseCommits` (the ISR lags). */
  readonly holdCommits: () => Effect.Effect<void>
  /** Commits every held append, in order (those of an epoch no longer the leader's fail), and stops holding. */
  readonly releaseCommits: () => Effect.Effect<void>
  /** Fails every held append with this error code (nothing of them is written) and stops holding. */
  readonly failHeldAppends: (errorCode?: number) => Effect.Effect<void>
  /** How many appends wait for a commit. */
  readonly heldAppends: () => number
  /** The next append fails with this error code (default UNKNOWN_SERVER_ERROR: -1), writing nothing. */
  readonly failNextAppend: (errorCode?: number) => Effect.Effect<void>
  /** Only appends at this leader epoch succeed or commit (null: none); unset partitions accept any epoch. */
  readonly setLeader: (partition: number, leaderEpoch: number | null) => Effect.Effect<void>
  /** Records another leader committed (e.g. while this broker was not the leader). */
  readonly appendExternal: (partition: number, records: ReadonlyArray<R>) => Effect.Effect<void>
  /** The next read of this partition fails. */
  readonly failNextRead: (partition: number) => Effect.Effect<void>
}

interface Held<R> {
  readonly batch: AppendedBatch<R>
  readonly done: Deferred.Deferred<void, NotCoordinator | AppendFailed>
}

/** An in-memory coordinator log, committed synchronously unless commits are held. */
export const memory = <R>(initial: Iterable<readonly [number, ReadonlyArray<R>]> = []): MemoryLog<R> => {
  const logs = new Map<number, Array<R>>()
  for (const [p, rs] of initial) logs.set(p, [...rs])
  const committed: Array<AppendedBatch<R>> = []
  const leaders = new Map<number, number | null>()
  const held: Array<Held<R>> = []
  const failingReads = new Set<number>()
  let holding = false
  let failNext: number | undefined

  const commit = (batch: AppendedBatch<R>): void => {
    let log = logs.get(batch.partition)
    if (log === undefined) logs.set(batch.partition, (log = []))
    log.push(...batch.records)
    committed.push(batch)
  }

  return {
    read: (partition) =>
      Effect.suspend(() => {
        if (failingReads.delete(partition))
          return Effect.fail(new CoordinatorLogError({ partition, message: `reading partition ${partition} failed` }))
        return Effect.succeed([...(logs.get(partition) ?? [])])
      }),
    append: (partition, leaderEpoch, records) =>
      Effect.suspend(() => {
        const leader = leaders.get(partition)
        if (leader !== undefined && leader !== leaderEpoch)
          return Effect.fail(
            new NotCoordinator({ partition, message: `partition ${partition} is not led at epoch ${leaderEpoch}` })
          )
        if (failNext !== undefined) {
          const errorCode = failNext
          failNext = undefined
          return Effect.fail(new AppendFailed({ partition, errorCode, message: "append failed" }))
        }
        const batch = { partition, leaderEpoch, records: [...records] }
        if (!holding) {
          commit(batch)
          return Effect.void
        }
        return Effect.flatMap(Deferred.make<void, NotCoordinator | AppendFailed>(), (done) => {
          held.push({ batch, done })
          return Deferred.await(done)
        })
      }),
    records: (partition) => [...(logs.get(partition) ?? [])],
    batches: () => [...committed],
    holdCommits: () =>
      Effect.sync(() => {
        holding = true
      }),
    releaseCommits: () =>
      Effect.suspend(() => {
        holding = false
        const all = held.splice(0)
        return Effect.forEach(
          all,
          (h) =>
            Effect.suspend(() => {
              // A leader that lost its epoch while the append waited never gets it committed.
              const leader = leaders.get(h.batch.partition)
              if (leader !== undefined && leader !== h.batch.leaderEpoch)
                return Deferred.fail(
                  h.done,
                  new NotCoordinator({
                    partition: h.batch.partition,
                    message: `partition ${h.batch.partition} is no longer led at epoch ${h.batch.leaderEpoch}`
                  })
                )
              commit(h.batch)
              return Deferred.succeed(h.done, undefined)
            }),
          { discard: true }
        )
      }),
    failHeldAppends: (errorCode = -1) =>
      Effect.suspend(() => {
        holding = false
        const all = held.splice(0)
        return Effect.forEach(
          all,
          (h) =>
            Deferred.fail(
              h.done,
              new AppendFailed({ partition: h.batch.partition, errorCode, message: "append failed" })
            ),
          { discard: true }
        )
      }),
    heldAppends: () => held.length,
    failNextAppend: (errorCode = -1) =>
      Effect.sync(() => {
        failNext = errorCode
      }),
    setLeader: (partition, leaderEpoch) =>
      Effect.sync(() => {
        leaders.set(partition, leaderEpoch)
      }),
    appendExternal: (partition, records) =>
      Effect.sync(() => {
        commit({ partition, leaderEpoch: -1, records: [...records] })
      }),
    failNextRead: (partition) =>
      Effect.sync(() => {
        failingReads.add(partition)
      })
  }
}
