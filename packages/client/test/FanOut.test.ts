import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, TestClock } from "effect"
import * as FanOut from "../src/FanOut.js"

describe("FanOut.forEachBroker", () => {
  it.effect("keeps every target's outcome, in order, and merges once", () =>
    Effect.gen(function* () {
      const merged = yield* FanOut.forEachBroker(
        [1, 2, 3],
        (n) => (n === 2 ? Effect.fail(`broker ${n} down`) : Effect.succeed(n * 10)),
        (outcomes) => outcomes.map((o) => [o.target, Either.isRight(o.result) ? o.result.right : "failed"]),
        { timeoutMs: 1000 }
      )
      assert.deepStrictEqual(merged, [
        [1, 10],
        [2, "failed"],
        [3, 30]
      ])
    })
  )

  it.effect("a target that does not answer in time is a RequestTimeout naming it; the others answer", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        FanOut.forEachBroker(
          ["a", "b"],
          (t) => (t === "a" ? Effect.never : Effect.succeed(t)),
          (outcomes) => outcomes,
          { timeoutMs: 500, describe: (t) => `broker ${t}` }
        )
      )
      yield* TestClock.adjust("499 millis")
      assert.isUndefined(fiber.unsafePoll() ?? undefined)
      yield* TestClock.adjust("1 millis")
      const outcomes = yield* Fiber.join(fiber)
      const a = outcomes[0]?.result
      assert.isTrue(a !== undefined && Either.isLeft(a) && a.left instanceof Error)
      assert.include(a !== undefined && Either.isLeft(a) ? String(a.left) : "", "broker a")
      assert.deepStrictEqual(outcomes[1]?.result, Either.right("b"))
    })
  )

  it.effect("runs at most `concurrency` requests at once", () =>
    Effect.gen(function* () {
      let running = 0
      let peak = 0
      yield* FanOut.forEachBroker(
        [1, 2, 3, 4, 5],
        () =>
          Effect.gen(function* () {
            running++
            peak = Math.max(peak, running)
            yield* Effect.yieldNow()
            running--
          }),
        () => undefined,
        { timeoutMs: 1000, concurrency: 2 }
      )
      assert.strictEqual(peak, 2)
    })
  )
})
