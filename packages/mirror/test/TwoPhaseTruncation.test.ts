import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, TestClock } from "effect"
import * as TwoPhaseTruncation from "../src/TwoPhaseTruncation.js"

/** A leader on broker 1 with a log ending at 10 and followers at the given log end offsets. */
const setup = (followers: ReadonlyArray<readonly [number, number]>) => {
  const log = {
    logStartOffset: 0,
    logEndOffset: 10,
    truncateTo(offset: number) {
      log.logEndOffset = offset
    },
    truncateFullyAndStartAt(offset: number) {
      log.logStartOffset = offset
      log.logEndOffset = offset
    }
  }
  const positions = new Map(followers.map(([r, leo]) => [r, { logEndOffset: leo }]))
  const partition: TwoPhaseTruncation.Partition = {
    leader: 1,
    leaderEpoch: 5,
    replicas: [1, ...followers.map(([r]) => r)],
    isr: [1, ...followers.map(([r]) => r)],
    minInsyncReplicas: 1,
    followers: positions,
    log
  }
  let appended = 0
  const replicas: TwoPhaseTruncation.Replicas = {
    nodeId: 1,
    get: () => partition,
    mirrorAppended: () => {
      appended++
    }
  }
  return { log, positions, replicas, appended: () => appended }
}

describe("TwoPhaseTruncation on Effect's clock", () => {
  it.effect("waits for the followers, cuts the leader, then waits for the followers to cut theirs", () =>
    Effect.gen(function* () {
      const { log, positions, replicas, appended } = setup([
        [2, 10],
        [3, 6]
      ])
      const fiber = yield* Effect.fork(
        TwoPhaseTruncation.truncateEffect(replicas, "t", 0, 4, { timeoutMs: 10_000, pollMs: 10 })
      )
      yield* TestClock.adjust(Duration.millis(50))
      expect(log.logEndOffset).toBe(10) // follower 3 is behind: nothing is cut yet
      positions.set(3, { logEndOffset: 10 })
      yield* TestClock.adjust(Duration.millis(10))
      expect(log.logEndOffset).toBe(4)
      expect(appended()).toBe(1)
      expect(fiber.unsafePoll()).toBeNull() // both followers still hold offsets 4-9
      positions.set(2, { logEndOffset: 4 })
      positions.set(3, { logEndOffset: 4 })
      yield* TestClock.adjust(Duration.millis(10))
      expect(Exit.isSuccess(yield* Fiber.await(fiber))).toBe(true)
    })
  )

  it.effect("gives up when a phase does not happen within the timeout", () =>
    Effect.gen(function* () {
      const { log, replicas } = setup([[2, 3]])
      const fiber = yield* Effect.fork(
        TwoPhaseTruncation.truncateEffect(replicas, "t", 0, 4, { timeoutMs: 1000, pollMs: 100 })
      )
      yield* TestClock.adjust(Duration.millis(1000))
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain("the ISR to catch up did not happen within 1000 ms")
      expect(log.logEndOffset).toBe(10)
    })
  )
})
