import { describe, expect, it } from "@effect/vitest"
import { RecordBatch } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { ReplicaManager } from "@clustermirror/replication/ReplicaManager"
import { TwoPhaseTruncation } from "@clustermirror/mirror"
import { Cause, Duration, Effect, Exit, type Fiber, TestClock } from "effect"

const EPOCH = 5

const batch = (n: number) =>
  RecordBatch.build({ records: Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${i}`) })), timestamp: 1 })

/** A leader on broker 1 of `t-0` (replicas as given), with 10 records at epoch 5. */
const setup = (replicas: ReadonlyArray<number>, isr: ReadonlyArray<number> = replicas, minIsr = 1) => {
  const rm = new ReplicaManager({ store: PartitionLogStore.makeMemoryStore(), nodeId: 1 })
  const register = (leader: number, leaderEpoch: number) =>
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas, isr, leader, leaderEpoch, partitionEpoch: 0 },
      PartitionLog.defaultConfig,
      false,
      minIsr
    )
  register(1, EPOCH)
  rm.appendAsLeader("t", 0, batch(10), true, 1)
  /** A follower's fetch: how the leader learns its log end offset (or tells it where it diverges). */
  const followerFetch = (replicaId: number, fetchOffset: number) =>
    rm.fetch({
      replicaId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [
        {
          topic: "t",
          partition: 0,
          fetchOffset,
          currentLeaderEpoch: EPOCH,
          lastFetchedEpoch: EPOCH,
          partitionMaxBytes: 1 << 20
        }
      ]
    })
  const log = rm.get("t", 0)!.log
  return { rm, log, followerFetch, register }
}

/** Lets the truncation's polling (every 1 ms of the TestClock) run a few times. */
const ticks = (ms = 30) => TestClock.adjust(Duration.millis(ms))

/** A truncation running in a fiber of the test, on its TestClock. */
const start = (...args: Parameters<typeof TwoPhaseTruncation.truncateEffect>) =>
  Effect.fork(TwoPhaseTruncation.truncateEffect(...args))

/** Whether the truncation ended; its failure, if it failed. */
const doneOf = (fiber: Fiber.RuntimeFiber<void, TwoPhaseTruncation.TruncationAbortedError>) =>
  fiber.unsafePoll() !== null
const errorOf = (fiber: Fiber.RuntimeFiber<void, TwoPhaseTruncation.TruncationAbortedError>) => {
  const exit = fiber.unsafePoll()
  return exit === null || Exit.isSuccess(exit) ? undefined : Cause.squash(exit.cause)
}

const fetched = <A>(p: Promise<A>) => Effect.promise(() => p)

describe("TwoPhaseTruncation", () => {
  it.effect("waits for the ISR to catch up, cuts the leader, then waits for the followers to cut theirs", () =>
    Effect.gen(function* () {
      const { rm, log, followerFetch } = setup([1, 2, 3])
      yield* fetched(followerFetch(2, 10))
      yield* fetched(followerFetch(3, 6))
      const run = yield* start(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1 })

      yield* ticks()
      expect(log.logEndOffset).toBe(10) // follower 3 is behind: nothing is cut yet
      yield* fetched(followerFetch(3, 10))
      yield* ticks(1)
      expect(log.logEndOffset).toBe(4)
      yield* ticks()
      expect(doneOf(run)).toBe(false) // both followers still hold offsets 4-9

      const diverging = yield* fetched(followerFetch(2, 10))
      expect(diverging[0]!.divergingEpoch).toEqual({ epoch: EPOCH, endOffset: 4n })
      yield* fetched(followerFetch(2, 4))
      yield* ticks()
      expect(doneOf(run)).toBe(false)
      yield* fetched(followerFetch(3, 4))
      yield* ticks(1)
      expect(doneOf(run)).toBe(true)
      expect(errorOf(run)).toBeUndefined()
    })
  )

  it.effect("does not cut below min.insync.replicas, and gives up after the timeout", () =>
    Effect.gen(function* () {
      const { rm, log } = setup([1, 2, 3], [1], 2)
      const run = yield* start(rm, "t", 0, 4, { timeoutMs: 50, pollMs: 1 })
      yield* ticks(49)
      expect(doneOf(run)).toBe(false)
      yield* ticks(1)
      const error = errorOf(run)
      expect(error).toBeInstanceOf(TwoPhaseTruncation.TruncationAbortedError)
      expect(String((error as Error).message)).toContain("the ISR to catch up")
      expect(log.logEndOffset).toBe(10)
    })
  )

  it.effect("gives up when leadership moves while it waits", () =>
    Effect.gen(function* () {
      const { rm, log, followerFetch, register } = setup([1, 2])
      yield* fetched(followerFetch(2, 7))
      const run = yield* start(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1 })
      yield* ticks()
      register(2, EPOCH + 1)
      yield* ticks(1)
      expect(errorOf(run)).toBeInstanceOf(TwoPhaseTruncation.TruncationAbortedError)
      expect(log.logEndOffset).toBe(10)
    })
  )

  it("completes at once on a single replica, and cuts nothing when the log ends at or below the target", async () => {
    const single = setup([1])
    await TwoPhaseTruncation.truncate(single.rm, "t", 0, 3, { timeoutMs: 10_000 })
    expect(single.log.logEndOffset).toBe(3)

    const short = setup([1, 2, 3])
    // Followers never fetched: waiting for them would time out, but there is nothing to cut.
    await TwoPhaseTruncation.truncate(short.rm, "t", 0, 10, { timeoutMs: 10 })
    expect(short.log.logEndOffset).toBe(10)
  })

  it.effect("does not wait for replicas outside the ISR", () =>
    Effect.gen(function* () {
      const { rm, log, followerFetch } = setup([1, 2, 3], [1, 2])
      yield* fetched(followerFetch(2, 10))
      const run = yield* start(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1 })
      yield* ticks(0)
      expect(log.logEndOffset).toBe(4)
      yield* fetched(followerFetch(2, 4))
      yield* ticks(1)
      expect(doneOf(run)).toBe(true)
      expect(errorOf(run)).toBeUndefined()
    })
  )

  it.effect("waits for every assigned replica with mirror.support.unclean.leader.election", () =>
    Effect.gen(function* () {
      const { rm, log, followerFetch } = setup([1, 2, 3], [1, 2])
      yield* fetched(followerFetch(2, 10))
      yield* fetched(followerFetch(3, 8))
      const run = yield* start(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1, allReplicas: true })
      yield* ticks()
      expect(log.logEndOffset).toBe(10) // replica 3 is out of the ISR, and behind
      yield* fetched(followerFetch(3, 10))
      yield* ticks(1)
      expect(log.logEndOffset).toBe(4)
      yield* fetched(followerFetch(2, 4))
      yield* ticks()
      expect(doneOf(run)).toBe(false)
      yield* fetched(followerFetch(3, 4))
      yield* ticks(1)
      expect(doneOf(run)).toBe(true)
      expect(errorOf(run)).toBeUndefined()
    })
  )

  it.effect("a partition waiting for its followers does not hold up another one", () =>
    Effect.gen(function* () {
      const rm = new ReplicaManager({ store: PartitionLogStore.makeMemoryStore(), nodeId: 1 })
      for (const topic of ["slow", "quick"]) {
        rm.applyRegistration(
          topic,
          0,
          topic === "slow" ? "q83vEjRWeJCrze8SNFZ4kA" : "AAAAAAAAAAAAAAAAAAAAAQ",
          { replicas: [1, 2], isr: [1, 2], leader: 1, leaderEpoch: EPOCH, partitionEpoch: 0 },
          PartitionLog.defaultConfig,
          false
        )
        rm.appendAsLeader(topic, 0, batch(10), true, 1)
      }
      const fetchAt = (topic: string, offset: number) =>
        fetched(
          rm.fetch({
            replicaId: 2,
            maxWaitMs: 0,
            minBytes: 0,
            maxBytes: 1 << 20,
            isolationLevel: 0,
            partitions: [
              {
                topic,
                partition: 0,
                fetchOffset: offset,
                currentLeaderEpoch: EPOCH,
                lastFetchedEpoch: EPOCH,
                partitionMaxBytes: 1 << 20
              }
            ]
          })
        )
      yield* fetchAt("slow", 3)
      yield* fetchAt("quick", 10)
      const slow = yield* start(rm, "slow", 0, 2, { timeoutMs: 10_000, pollMs: 1 })
      const quick = yield* start(rm, "quick", 0, 2, { timeoutMs: 10_000, pollMs: 1 })
      yield* ticks(0)
      expect(rm.get("quick", 0)!.log.logEndOffset).toBe(2)
      yield* fetchAt("quick", 2)
      yield* ticks(1)
      expect(doneOf(quick)).toBe(true)
      expect(doneOf(slow)).toBe(false)
      expect(rm.get("slow", 0)!.log.logEndOffset).toBe(10)
      yield* fetchAt("slow", 10)
      yield* ticks(1)
      expect(rm.get("slow", 0)!.log.logEndOffset).toBe(2)
      yield* fetchAt("slow", 2)
      yield* ticks(1)
      expect(doneOf(slow)).toBe(true)
      expect(errorOf(slow)).toBeUndefined()
    })
  )
})
