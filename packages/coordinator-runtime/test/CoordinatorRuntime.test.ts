import { assert, describe, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Either, Exit, Fiber, Option, TestClock, TestContext } from "effect"
import * as fc from "fast-check"
import * as CoordinatorLog from "../src/CoordinatorLog.js"
import * as CoordinatorResult from "../src/CoordinatorResult.js"
import * as CoordinatorRuntime from "../src/CoordinatorRuntime.js"
import * as CoordinatorShard from "../src/CoordinatorShard.js"

/** A test shard: a map of keys to numbers; `null` deletes; the key "bad" violates an invariant. */
interface Put {
  readonly key: string
  readonly value: number | null
}
type State = ReadonlyMap<string, number>

const def = CoordinatorShard.make<State, Put>({
  name: "__test",
  empty: () => new Map(),
  replay: (state, record) => {
    if (record.key === "bad") throw new Error("invariant violated")
    const next = new Map(state)
    if (record.value === null) next.delete(record.key)
    else next.set(record.key, record.value)
    return next
  },
  onLoaded: (state) =>
    [...state.keys()]
      .filter((k) => k.startsWith("session-"))
      .map((key) => ({
        key,
        delayMs: 1000,
        op: () => Either.right(CoordinatorResult.of([{ key, value: null }], "expired"))
      }))
})

const put = (key: string, value: number | null) => () =>
  Either.right(CoordinatorResult.of<Put, string>([{ key, value }], `put ${key}`))
/** Adds one to `key` on the candidate state. */
const increment = (key: string) => (state: State) =>
  Either.right(
    CoordinatorResult.of<Put, number>([{ key, value: (state.get(key) ?? 0) + 1 }], (state.get(key) ?? 0) + 1)
  )
const get = (key: string) => (state: State) => state.get(key)

/** Lets forked fibers run until `cond` holds (no clock involved). */
const until = (cond: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1000 && !cond(); i++) yield* Effect.yieldNow()
    assert.isTrue(cond(), "condition never held")
  })

const setup = (log = CoordinatorLog.memory<Put>(), options: CoordinatorRuntime.Options = {}) =>
  Effect.map(CoordinatorRuntime.make(def, log, options), (runtime) => ({ log, runtime }))
const setupOver = (log: CoordinatorLog.CoordinatorLog<Put>) => CoordinatorRuntime.make(def, log)

describe("CoordinatorRuntime", () => {
  it.scoped("loads a partition by replaying its log, and reports the load", () =>
    Effect.gen(function* () {
      const loads: Array<number> = []
      const log = CoordinatorLog.memory<Put>([
        [
          0,
          [
            { key: "a", value: 1 },
            { key: "b", value: 2 },
            { key: "a", value: null }
          ]
        ]
      ])
      const { runtime } = yield* setup(log, { onLoaded: (p) => loads.push(p) })
      yield* runtime.onLeadership(0, 1)
      assert.deepStrictEqual(yield* runtime.read(0, (s) => [...s]), [["b", 2]])
      assert.deepStrictEqual(yield* runtime.loadedPartitions(), [0])
      assert.deepStrictEqual(loads, [0])
      const other = yield* Effect.flip(runtime.read(1, get("a")))
      assert.strictEqual(other._tag, "NotCoordinator")
      assert.strictEqual(other.errorCode, 16)
      assert.isTrue(other.retriable)
    })
  )

  it.scoped("reloads when the leader epoch changes, seeing writes of the leader in between (A→B→A)", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      assert.strictEqual(yield* runtime.write(0, "put", put("a", 1)), "put a")
      // The same epoch again is no reload: a record another leader wrote is not seen.
      yield* log.appendExternal(0, [{ key: "ghost", value: 0 }])
      yield* runtime.onLeadership(0, 1)
      assert.isUndefined(yield* runtime.read(0, get("ghost")))
      // B led at epoch 2 and wrote; A is back at epoch 3, seen in one delta as "leader at a higher epoch".
      yield* log.appendExternal(0, [{ key: "b", value: 2 }])
      yield* runtime.onLeadership(0, 3)
      assert.deepStrictEqual(yield* runtime.read(0, (s) => Object.fromEntries(s)), { a: 1, ghost: 0, b: 2 })
      // Writes go out at the new epoch.
      yield* runtime.write(0, "put", put("c", 3))
      assert.strictEqual(log.batches().at(-1)?.leaderEpoch, 3)
    })
  )

  it.scoped("on leadership loss fails pending writes NOT_COORDINATOR and stops the shard's timers", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      yield* runtime.scheduleTimer(0, "t", 1000, put("timer", 1))
      yield* log.holdCommits()
      const pending = yield* Effect.fork(runtime.write(0, "put", put("a", 1)))
      yield* until(() => log.heldAppends() === 1)
      yield* runtime.onLeadership(0, null)
      const exit = yield* Fiber.await(pending)
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(Fiber.join(pending))
      assert.strictEqual(error._tag, "NotCoordinator")
      assert.deepStrictEqual(yield* runtime.timers(0), [])
      assert.deepStrictEqual(yield* runtime.loadedPartitions(), [])
      yield* log.releaseCommits()
      yield* TestClock.adjust(Duration.seconds(5))
      assert.deepStrictEqual(
        log.records(0).map((r) => r.key),
        ["a"],
        "the timer wrote nothing"
      )
      assert.strictEqual((yield* Effect.flip(runtime.write(0, "put", put("b", 1))))._tag, "NotCoordinator")
    })
  )

  it.scoped("replays records into the candidate before appending: a replay defect writes nothing", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      const exit = yield* Effect.exit(runtime.write(0, "bad", put("bad", 1)))
      assert.isTrue(Exit.isFailure(exit) && Exit.causeOption(exit).pipe(Option.isSome))
      assert.deepStrictEqual(log.batches(), [])
      assert.strictEqual(yield* runtime.write(0, "inc", increment("n")), 1)
      assert.deepStrictEqual(yield* runtime.read(0, (s) => [...s]), [["n", 1]])
    })
  )

  it.scoped("a refused decision writes nothing and fails with the decider's error", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      const error = yield* Effect.flip(runtime.write(0, "refuse", () => Either.left("refused" as const)))
      assert.strictEqual(error, "refused")
      assert.deepStrictEqual(log.batches(), [])
    })
  )

  it.scoped("writes decided while an append is in flight go out together in the next append, on the candidate", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup(CoordinatorLog.memory(), { maxBatchRecords: 2 })
      yield* runtime.onLeadership(0, 1)
      yield* log.holdCommits()
      const first = yield* Effect.fork(runtime.write(0, "inc", increment("n")))
      yield* until(() => log.heldAppends() === 1)
      const more = yield* Effect.forEach([1, 2, 3], () => Effect.fork(runtime.write(0, "inc", increment("n"))))
      yield* Effect.yieldNow()
      assert.strictEqual(log.heldAppends(), 1, "nothing more is appended while one append is in flight")
      yield* log.releaseCommits()
      assert.strictEqual(yield* Fiber.join(first), 1)
      assert.deepStrictEqual(yield* Effect.forEach(more, Fiber.join), [2, 3, 4])
      assert.deepStrictEqual(
        log.batches().map((b) => b.records.map((r) => r.value)),
        [[1], [2, 3], [4]],
        "batched, bounded by maxBatchRecords"
      )
      assert.strictEqual(yield* runtime.read(0, get("n")), 4)
    })
  )

  it.scoped("answers a write only once its records are committed; reads see committed state", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      yield* log.holdCommits()
      const write = yield* Effect.fork(runtime.write(0, "put", put("a", 1)))
      // A write with no records waits for the earlier write's commit too.
      const empty = yield* Effect.fork(runtime.write(0, "none", () => Either.right(CoordinatorResult.response("ok"))))
      yield* until(() => log.heldAppends() === 1)
      yield* Effect.yieldNow()
      assert.isTrue(Option.isNone(yield* Fiber.poll(write)))
      assert.isTrue(Option.isNone(yield* Fiber.poll(empty)))
      assert.isUndefined(yield* runtime.read(0, get("a")))
      yield* log.releaseCommits()
      assert.strictEqual(yield* Fiber.join(write), "put a")
      assert.strictEqual(yield* Fiber.join(empty), "ok")
      assert.strictEqual(yield* runtime.read(0, get("a")), 1)
      // With nothing uncommitted, a write with no records answers at once.
      assert.strictEqual(yield* runtime.write(0, "none", () => Either.right(CoordinatorResult.response("now"))), "now")
    })
  )

  it.scoped("an append failure reverts the candidate and fails every uncommitted write", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      assert.strictEqual(yield* runtime.write(0, "inc", increment("n")), 1)
      yield* log.holdCommits()
      const inflight = yield* Effect.fork(runtime.write(0, "inc", increment("n")))
      yield* until(() => log.heldAppends() === 1)
      const queued = yield* Effect.fork(runtime.write(0, "inc", increment("n")))
      yield* Effect.yieldNow()
      yield* log.failHeldAppends(6)
      const a = yield* Effect.flip(Fiber.join(inflight))
      const b = yield* Effect.flip(Fiber.join(queued))
      assert.strictEqual(a._tag, "AppendFailed")
      assert.strictEqual(b._tag, "AppendFailed")
      if (a._tag === "AppendFailed") assert.strictEqual(a.errorCode, 6)
      assert.strictEqual(yield* runtime.read(0, get("n")), 1)
      // The next decision sees the committed state, not the failed candidate.
      assert.strictEqual(yield* runtime.write(0, "inc", increment("n")), 2)
      yield* log.failNextAppend()
      assert.strictEqual((yield* Effect.flip(runtime.write(0, "inc", increment("n"))))._tag, "AppendFailed")
      assert.strictEqual(yield* runtime.write(0, "inc", increment("n")), 3)
      assert.deepStrictEqual(
        log.records(0).map((r) => r.value),
        [1, 2, 3]
      )
    })
  )

  it.scoped("an append not committed in time fails with REQUEST_TIMED_OUT", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup(CoordinatorLog.memory(), { appendTimeoutMs: 5000 })
      yield* runtime.onLeadership(0, 1)
      yield* log.holdCommits()
      const write = yield* Effect.fork(runtime.write(0, "put", put("a", 1)))
      yield* until(() => log.heldAppends() === 1)
      yield* TestClock.adjust(Duration.millis(4999))
      assert.isTrue(Option.isNone(yield* Fiber.poll(write)))
      yield* TestClock.adjust(Duration.millis(1))
      const error = yield* Effect.flip(Fiber.join(write))
      assert.strictEqual(error._tag === "AppendFailed" ? error.errorCode : undefined, 7)
    })
  )

  it.scoped("an append at a stale leader epoch fails NOT_COORDINATOR", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      yield* log.setLeader(0, 2)
      assert.strictEqual((yield* Effect.flip(runtime.write(0, "put", put("a", 1))))._tag, "NotCoordinator")
      assert.deepStrictEqual(log.records(0), [])
    })
  )

  it.scoped("answers COORDINATOR_LOAD_IN_PROGRESS while the log is read, and a failed read leaves it unloaded", () =>
    Effect.gen(function* () {
      const memory = CoordinatorLog.memory<Put>([[0, [{ key: "a", value: 1 }]]])
      const gate = yield* Deferred.make<void>()
      const log = CoordinatorLog.make<Put>({
        read: (p) => Effect.zipRight(Deferred.await(gate), memory.read(p)),
        append: memory.append
      })
      const runtime = yield* setupOver(log)
      const loading = yield* Effect.fork(runtime.onLeadership(0, 1))
      yield* Effect.yieldNow()
      const error = yield* Effect.flip(runtime.read(0, get("a")))
      assert.strictEqual(error._tag, "CoordinatorLoadInProgress")
      assert.strictEqual(error.errorCode, 14)
      assert.strictEqual((yield* Effect.flip(runtime.write(0, "put", put("b", 1))))._tag, "CoordinatorLoadInProgress")
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(loading)
      assert.strictEqual(yield* runtime.read(0, get("a")), 1)

      yield* memory.failNextRead(1)
      assert.strictEqual((yield* Effect.flip(runtime.onLeadership(1, 1)))._tag, "CoordinatorLogError")
      assert.strictEqual((yield* Effect.flip(runtime.read(1, get("a"))))._tag, "NotCoordinator")
    })
  )

  it.scoped("a load superseded by a drop is void", () =>
    Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      const memory = CoordinatorLog.memory<Put>()
      const log = CoordinatorLog.make<Put>({
        read: (p) => Effect.zipRight(Deferred.await(gate), memory.read(p)),
        append: memory.append
      })
      const runtime = yield* setupOver(log)
      const loading = yield* Effect.fork(runtime.onLeadership(0, 1))
      yield* Effect.yieldNow()
      yield* runtime.onLeadership(0, null)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(loading)
      assert.deepStrictEqual(yield* runtime.loadedPartitions(), [])
    })
  )

  it.scoped("timers fire at their time on the clock, are keyed, cancel, and restart after a load", () =>
    Effect.gen(function* () {
      const { log, runtime } = yield* setup()
      yield* runtime.onLeadership(0, 1)
      yield* runtime.scheduleTimer(0, "t", 1000, put("t", 1))
      yield* TestClock.adjust(Duration.millis(999))
      assert.isUndefined(yield* runtime.read(0, get("t")))
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(yield* runtime.read(0, get("t")), 1)
      assert.deepStrictEqual(yield* runtime.timers(0), [])

      // Re-arming replaces: only the later deadline fires.
      yield* runtime.scheduleTimer(0, "u", 1000, put("u", 1))
      yield* runtime.scheduleTimer(0, "u", 3000, put("u", 2))
      yield* TestClock.adjust(Duration.millis(2000))
      assert.isUndefined(yield* runtime.read(0, get("u")))
      yield* TestClock.adjust(Duration.millis(1000))
      assert.strictEqual(yield* runtime.read(0, get("u")), 2)

      yield* runtime.scheduleTimer(0, "v", 1000, put("v", 1))
      yield* runtime.cancelTimer(0, "v")
      yield* TestClock.adjust(Duration.millis(5000))
      assert.isUndefined(yield* runtime.read(0, get("v")))

      // onLoaded restarts a timer per session key after a reload.
      yield* runtime.write(0, "put", put("session-1", 1))
      yield* runtime.onLeadership(0, 2)
      assert.deepStrictEqual(yield* runtime.timers(0), ["session-1"])
      yield* TestClock.adjust(Duration.millis(1000))
      assert.isUndefined(yield* runtime.read(0, get("session-1")))
      assert.deepStrictEqual(log.records(0).at(-1), { key: "session-1", value: null })
    })
  )

  it.scoped("closing the runtime's scope drops every shard", () =>
    Effect.gen(function* () {
      const log = CoordinatorLog.memory<Put>()
      const write = yield* Effect.scoped(
        Effect.gen(function* () {
          const runtime = yield* CoordinatorRuntime.make(def, log)
          yield* runtime.onLeadership(0, 1)
          yield* log.holdCommits()
          const write = yield* Effect.fork(runtime.write(0, "put", put("a", 1)))
          yield* until(() => log.heldAppends() === 1)
          return write
        })
      )
      assert.strictEqual((yield* Effect.flip(Fiber.join(write)))._tag, "NotCoordinator")
    })
  )

  it.scoped("runs over a log taken from the context", () =>
    Effect.gen(function* () {
      const Log = CoordinatorLog.tag<Put>("@clustermirror/coordinator-runtime/test/Log")
      const runtime = yield* Effect.flatMap(Log, setupOver).pipe(
        Effect.provide(CoordinatorLog.layerMemory(Log, [[0, [{ key: "a", value: 1 }]]]))
      )
      yield* runtime.onLeadership(0, 1)
      assert.strictEqual(yield* runtime.read(0, get("a")), 1)
    })
  )

  type Op =
    | { readonly _tag: "put"; readonly key: string; readonly value: number | null }
    | { readonly _tag: "inc"; readonly key: string }
    | { readonly _tag: "failNext" }
    | { readonly _tag: "hold" }
    | { readonly _tag: "release" }
    | { readonly _tag: "failHeld" }
    | { readonly _tag: "bounce" }
    | { readonly _tag: "timer"; readonly key: string; readonly delayMs: number }
    | { readonly _tag: "tick"; readonly ms: number }

  const key = fc.constantFrom("a", "b", "c")
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ _tag: fc.constant("put" as const), key, value: fc.option(fc.integer({ min: 0, max: 9 })) }),
    fc.record({ _tag: fc.constant("inc" as const), key }),
    fc.constant({ _tag: "failNext" as const }),
    fc.constant({ _tag: "hold" as const }),
    fc.constant({ _tag: "release" as const }),
    fc.constant({ _tag: "failHeld" as const }),
    fc.constant({ _tag: "bounce" as const }),
    fc.record({ _tag: fc.constant("timer" as const), key, delayMs: fc.integer({ min: 0, max: 100 }) }),
    fc.record({ _tag: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 100 }) })
  )

  it("the state after live writes equals the state after replaying the log from scratch", () =>
    fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), (ops) =>
        Effect.runPromise(
          Effect.scoped(
            Effect.gen(function* () {
              const { log, runtime } = yield* setup(CoordinatorLog.memory(), { maxBatchRecords: 3 })
              let epoch = 1
              yield* log.setLeader(0, epoch)
              yield* runtime.onLeadership(0, epoch)
              for (const o of ops) {
                switch (o._tag) {
                  case "put":
                    yield* Effect.fork(runtime.write(0, "put", put(o.key, o.value)))
                    break
                  case "inc":
                    yield* Effect.fork(runtime.write(0, "inc", increment(o.key)))
                    break
                  case "failNext":
                    yield* log.failNextAppend()
                    break
                  case "hold":
                    yield* log.holdCommits()
                    break
                  case "release":
                    yield* log.releaseCommits()
                    break
                  case "failHeld":
                    yield* log.failHeldAppends()
                    break
                  case "bounce":
                    // Led elsewhere and back: the log's leader moves first, as the partition's metadata does.
                    yield* log.setLeader(0, ++epoch)
                    yield* runtime.onLeadership(0, epoch)
                    break
                  case "timer":
                    yield* runtime.scheduleTimer(0, o.key, o.delayMs, increment(o.key))
                    break
                  case "tick":
                    yield* TestClock.adjust(Duration.millis(o.ms))
                    break
                }
                yield* Effect.yieldNow()
              }
              yield* log.releaseCommits()
              yield* TestClock.adjust(Duration.seconds(1))
              yield* log.releaseCommits()
              yield* until(() => log.heldAppends() === 0)
              yield* Effect.repeatN(Effect.yieldNow(), 20)
              const live = yield* runtime.read(0, (s) => Object.fromEntries(s))
              const replayed = Object.fromEntries(
                CoordinatorShard.replayAll(def, def.empty({ partition: 0, leaderEpoch: 0 }), log.records(0))
              )
              assert.deepStrictEqual(live, replayed)
            })
          ).pipe(Effect.provide(TestContext.TestContext))
        )
      ),
      { numRuns: 200 }
    ))
})
