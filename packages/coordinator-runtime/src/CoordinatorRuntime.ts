/**
 * The shard runtime of a coordinator log (Kafka's coordinator-common `CoordinatorRuntime`): one shard
 * per coordinator log partition this broker leads, loaded by replaying the partition at its leader
 * epoch, reloaded when the epoch changes, dropped when leadership goes. Writes per shard are
 * serialized: a decide runs on the shard's candidate state (committed + records not yet committed), its
 * records are replayed into a new candidate before they are appended (a replay defect aborts that write
 * with nothing written), writes decided while an append is in flight go out together in the next
 * append, and every write answers only once its records committed. Reads see committed state. Each
 * shard has keyed timers on Effect's `Clock`, whose ops are decides.
 *
 * An append failure reverts the candidate to the last committed state and fails every write not yet
 * committed: the writes of the failed batch and those decided after it on the reverted candidate (they
 * are failed, not re-decided, as Kafka does by reverting to its last committed snapshot). Callers retry.
 *
 * It knows nothing of what a shard decides: that is the `ShardDef`. Fibers exist only while work runs
 * (a flusher while writes are uncommitted, one per armed timer), so idle shards cost none.
 */
import { Clock, Deferred, Effect, Either, ExecutionStrategy, Exit, Fiber, Scope } from "effect"
import { Errors } from "@clustermirror/protocol"
import type { CoordinatorLog } from "./CoordinatorLog.js"
import {
  AppendFailed,
  CoordinatorLoadInProgress,
  type CoordinatorLogError,
  NotCoordinator,
  type ReadError,
  type WriteError
} from "./CoordinatorRuntimeError.js"
import { type Decide, replayAll, type ShardContext, type ShardDef } from "./CoordinatorShard.js"

export interface Options {
  /** Most records in one append; a single write larger than this still goes out alone. Default 1000. */
  readonly maxBatchRecords?: number
  /** An append not committed within this fails its writes with REQUEST_TIMED_OUT. Default 30000. */
  readonly appendTimeoutMs?: number
  /** After a load: the partition and how long reading and replaying its log took (metrics). */
  readonly onLoaded?: (partition: number, ms: number) => void
}

/** A loaded shard's committed state, as `shards` lists them. */
export interface LoadedShard<S> {
  readonly partition: number
  readonly leaderEpoch: number
  readonly state: S
}

export interface CoordinatorRuntime<S, R> {
  /**
   * Leadership of `partition`: at `leaderEpoch` loads it (replays the log from its start) unless it is
   * already loaded or loading at that epoch; loaded at another epoch, it is dropped and reloaded (a
   * leader that moved away and back may have missed writes); `null` drops it. Completes once the load
   * finished (or was superseded); fails when the log cannot be read, leaving the partition unloaded.
   */
  readonly onLeadership: (partition: number, leaderEpoch: number | null) => Effect.Effect<void, CoordinatorLogError>
  /** Decides on the candidate state, appends the records and answers the response once committed. */
  readonly write: <A, E>(
    partition: number,
    name: string,
    decide: Decide<S, R, A, E>
  ) => Effect.Effect<A, E | WriteError>
  /** `f` on the committed state of a loaded partition. */
  readonly read: <A>(partition: number, f: (state: S) => A) => Effect.Effect<A, ReadError>
  /** Arms (or re-arms, replacing) the timer `key` of a partition: `op` is written after `delayMs`. */
  readonly scheduleTimer: (
    partition: number,
    key: string,
    delayMs: number,
    op: Decide<S, R, unknown, unknown>
  ) => Effect.Effect<void, NotCoordinator>
  /** Disarms the timer `key` of a partition, if armed. */
  readonly cancelTimer: (partition: number, key: string) => Effect.Effect<void>
  /** The keys of a partition's armed timers, sorted. */
  readonly timers: (partition: number) => Effect.Effect<ReadonlyArray<string>>
  /** The partitions loaded here (not those still loading), sorted. */
  readonly loadedPartitions: () => Effect.Effect<ReadonlyArray<number>>
  /** The committed state of every loaded partition, by partition. */
  readonly shards: () => Effect.Effect<ReadonlyArray<LoadedShard<S>>>
}

interface Pending<S, R> {
  readonly records: ReadonlyArray<R>
  /** The candidate state after this write: the committed state once it commits. */
  readonly after: S
  readonly commit: Effect.Effect<void>
  readonly fail: (error: WriteError) => Effect.Effect<void>
}

interface Timer {
  readonly token: object
  readonly fiber: Fiber.RuntimeFiber<void>
}

interface Shard<S, R> {
  readonly ctx: ShardContext
  readonly scope: Scope.CloseableScope
  status: "loading" | "active"
  committed: S
  candidate: S
  /** Decided, waiting for the next append. */
  queue: Array<Pending<S, R>>
  /** In the append now in flight. */
  inflight: Array<Pending<S, R>>
  flushing: boolean
  /** Dropped: its fibers may still be winding down, but must append nothing more. */
  dropped: boolean
  readonly timers: Map<string, Timer>
}

/** A runtime for the shards of `def` over `log`; closing the scope drops every shard. */
export const make = <S, R>(
  def: ShardDef<S, R>,
  log: CoordinatorLog<R>,
  options: Options = {}
): Effect.Effect<CoordinatorRuntime<S, R>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const runtimeScope = yield* Effect.scope
    const maxBatchRecords = Math.max(1, options.maxBatchRecords ?? 1000)
    const appendTimeoutMs = options.appendTimeoutMs ?? 30_000
    const shards = new Map<number, Shard<S, R>>()

    const notCoordinator = (partition: number, why: string) =>
      new NotCoordinator({ partition, message: `${def.name}-${partition}: ${why}` })

    const drop = (shard: Shard<S, R>, why: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (shards.get(shard.ctx.partition) === shard) shards.delete(shard.ctx.partition)
        shard.dropped = true
        const error = notCoordinator(shard.ctx.partition, why)
        const pending = [...shard.inflight, ...shard.queue]
        shard.inflight = []
        shard.queue = []
        shard.timers.clear()
        // The shard's fibers are interrupted without waiting for them, so a drop stays synchronous; with
        // the shard gone from the map and its timers cleared, whatever they still do touches nothing.
        return Effect.forEach(pending, (p) => p.fail(error), { discard: true }).pipe(
          Effect.zipRight(Effect.forkDaemon(Scope.close(shard.scope, Exit.void))),
          Effect.asVoid
        )
      })

    const appendBatch = (shard: Shard<S, R>, records: ReadonlyArray<R>): Effect.Effect<void, WriteError> =>
      log.append(shard.ctx.partition, shard.ctx.leaderEpoch, records).pipe(
        Effect.timeoutFail({
          duration: appendTimeoutMs,
          onTimeout: () =>
            new AppendFailed({
              partition: shard.ctx.partition,
              errorCode: Errors.ErrorCode.REQUEST_TIMED_OUT,
              message: `${def.name}-${shard.ctx.partition}: append not committed within ${appendTimeoutMs} ms`
            })
        })
      )

    /** Appends the queue batch by batch until it is empty; the only fiber of a shard with uncommitted writes. */
    const flush = (shard: Shard<S, R>): Effect.Effect<void> =>
      Effect.gen(function* () {
        while (!shard.dropped && shard.queue.length > 0) {
          let n = 0
          let count = 0
          while (n < shard.queue.length && (n === 0 || count + shard.queue[n]!.records.length <= maxBatchRecords)) {
            count += shard.queue[n]!.records.length
            n++
          }
          const batch = shard.queue.splice(0, n)
          shard.inflight = batch
          const records = batch.flatMap((p) => p.records)
          const result =
            records.length === 0 ? Either.right(undefined) : yield* Effect.either(appendBatch(shard, records))
          if (shard.dropped) break
          shard.inflight = []
          if (Either.isRight(result)) {
            shard.committed = batch[batch.length - 1]!.after
            for (const p of batch) yield* p.commit
          } else {
            shard.candidate = shard.committed
            const rest = shard.queue.splice(0)
            for (const p of [...batch, ...rest]) yield* p.fail(result.left)
          }
        }
        shard.flushing = false
      })

    const write = <A, E>(
      partition: number,
      name: string,
      decide: Decide<S, R, A, E>
    ): Effect.Effect<A, E | WriteError> =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const done = yield* Deferred.make<A, WriteError>()
        // No yield from here to the queue push: the shard cannot be dropped or reloaded under the decision.
        const shard = shards.get(partition)
        if (shard === undefined) return yield* notCoordinator(partition, "not the leader")
        if (shard.status === "loading")
          return yield* new CoordinatorLoadInProgress({ partition, message: `${def.name}-${partition} is loading` })
        const decided = decide(shard.candidate, now)
        if (Either.isLeft(decided)) return yield* Effect.fail(decided.left)
        const { records, response } = decided.right
        // Replayed before the append: a record the state machine rejects dies here, with nothing written.
        const after = replayAll(def, shard.candidate, records)
        if (records.length === 0 && shard.queue.length === 0 && shard.inflight.length === 0) return response
        shard.candidate = after
        shard.queue.push({
          records,
          after,
          commit: Deferred.succeed(done, response),
          fail: (error) => Deferred.fail(done, error)
        })
        if (!shard.flushing) {
          shard.flushing = true
          yield* Effect.forkIn(flush(shard), shard.scope)
        }
        return yield* Deferred.await(done)
      }).pipe(Effect.withSpan("CoordinatorRuntime.write", { attributes: { coordinator: def.name, name, partition } }))

    const scheduleTimer = (
      partition: number,
      key: string,
      delayMs: number,
      op: Decide<S, R, unknown, unknown>
    ): Effect.Effect<void, NotCoordinator> =>
      Effect.gen(function* () {
        const shard = shards.get(partition)
        if (shard === undefined) return yield* notCoordinator(partition, "not the leader")
        const token = {}
        const fire = Effect.suspend(() => {
          if (shard.timers.get(key)?.token !== token) return Effect.void
          shard.timers.delete(key)
          return write(partition, `timer ${key}`, op).pipe(
            Effect.catchAllCause((cause) =>
              Effect.logDebug(`${def.name}-${partition} timer ${key} did not write`, cause)
            ),
            Effect.asVoid
          )
        })
        const fiber = yield* Effect.forkIn(Effect.zipRight(Effect.sleep(Math.max(0, delayMs)), fire), shard.scope)
        const previous = shard.timers.get(key)
        shard.timers.set(key, { token, fiber })
        if (previous !== undefined) yield* Fiber.interruptFork(previous.fiber)
      })

    const cancelTimer = (partition: number, key: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        const shard = shards.get(partition)
        const timer = shard?.timers.get(key)
        if (shard === undefined || timer === undefined) return Effect.void
        shard.timers.delete(key)
        return Fiber.interruptFork(timer.fiber)
      })

    const load = (partition: number, leaderEpoch: number): Effect.Effect<void, CoordinatorLogError> =>
      Effect.gen(function* () {
        const ctx: ShardContext = { partition, leaderEpoch }
        const scope = yield* Scope.fork(runtimeScope, ExecutionStrategy.sequential)
        const empty = def.empty(ctx)
        const shard: Shard<S, R> = {
          ctx,
          scope,
          status: "loading",
          committed: empty,
          candidate: empty,
          queue: [],
          inflight: [],
          flushing: false,
          dropped: false,
          timers: new Map()
        }
        shards.set(partition, shard)
        const started = yield* Clock.currentTimeNanos
        const loaded = yield* log.read(partition).pipe(
          Effect.flatMap((records) => Effect.sync(() => replayAll(def, empty, records))),
          Effect.onError(() => (shards.get(partition) === shard ? drop(shard, "load failed") : Effect.void))
        )
        // Superseded while reading (dropped, or reloaded at another epoch): this load is void.
        if (shards.get(partition) !== shard) return
        shard.committed = loaded
        shard.candidate = loaded
        shard.status = "active"
        const ms = Number((yield* Clock.currentTimeNanos) - started) / 1e6
        options.onLoaded?.(partition, ms)
        // A drop between two timers fails the rest with NotCoordinator: they are gone with the shard anyway.
        for (const t of def.onLoaded?.(loaded, ctx) ?? [])
          yield* Effect.ignore(scheduleTimer(partition, t.key, t.delayMs, t.op))
      }).pipe(
        Effect.withSpan("CoordinatorRuntime.load", { attributes: { coordinator: def.name, partition, leaderEpoch } })
      )

    const onLeadership = (partition: number, leaderEpoch: number | null): Effect.Effect<void, CoordinatorLogError> =>
      Effect.suspend(() => {
        const current = shards.get(partition)
        if (leaderEpoch === null) return current === undefined ? Effect.void : drop(current, "leadership lost")
        if (current !== undefined && current.ctx.leaderEpoch === leaderEpoch) return Effect.void
        return Effect.zipRight(
          current === undefined ? Effect.void : drop(current, `leader epoch moved to ${leaderEpoch}`),
          load(partition, leaderEpoch)
        )
      })

    yield* Effect.addFinalizer(() =>
      Effect.forEach([...shards.values()], (shard) => drop(shard, "coordinator closed"), { discard: true })
    )

    return {
      onLeadership,
      write,
      read: <A>(partition: number, f: (state: S) => A): Effect.Effect<A, ReadError> =>
        Effect.suspend((): Effect.Effect<A, ReadError> => {
          const shard = shards.get(partition)
          if (shard === undefined) return Effect.fail(notCoordinator(partition, "not the leader"))
          if (shard.status === "loading")
            return Effect.fail(
              new CoordinatorLoadInProgress({ partition, message: `${def.name}-${partition} is loading` })
            )
          return Effect.succeed(f(shard.committed))
        }),
      scheduleTimer,
      cancelTimer,
      timers: (partition) => Effect.sync(() => [...(shards.get(partition)?.timers.keys() ?? [])].sort()),
      loadedPartitions: () =>
        Effect.sync(() =>
          [...shards.values()]
            .filter((s) => s.status === "active")
            .map((s) => s.ctx.partition)
            .sort((a, b) => a - b)
        ),
      shards: () =>
        Effect.sync(() =>
          [...shards.values()]
            .filter((s) => s.status === "active")
            .sort((a, b) => a.ctx.partition - b.ctx.partition)
            .map((s) => ({ partition: s.ctx.partition, leaderEpoch: s.ctx.leaderEpoch, state: s.committed }))
        )
    }
  })
