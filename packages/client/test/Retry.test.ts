import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import * as fc from "fast-check"
import * as Retry from "../src/Retry.js"

describe("Retry", () => {
  const policy: Retry.Policy = { attempts: 5, baseMs: 100, maxMs: 1000, jitter: 0.2 }

  it("doubles from the base delay and caps at the maximum", () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => Retry.baseDelay(policy, n))).toEqual([100, 200, 400, 800, 1000, 1000])
  })

  it("a jittered delay stays within the jitter band of the base delay", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retry, r) => {
          const d = Retry.delay(policy, retry, () => r)
          const base = Retry.baseDelay(policy, retry)
          expect(d).toBeGreaterThanOrEqual(Math.floor(base * 0.8))
          expect(d).toBeLessThanOrEqual(Math.ceil(base * 1.2))
        }
      )
    )
  })

  it.effect("the schedule makes exactly `attempts` tries, backing off between them", () =>
    Effect.gen(function* () {
      let tries = 0
      const fiber = yield* Effect.fork(
        Effect.suspend(() => {
          tries++
          return Effect.fail("nope")
        }).pipe(Effect.retry(Retry.schedule({ ...policy, jitter: 0 })))
      )
      yield* TestClock.adjust("99 millis")
      expect(tries).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(tries).toBe(2)
      yield* TestClock.adjust("10 seconds")
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(tries).toBe(policy.attempts)
    })
  )
})
