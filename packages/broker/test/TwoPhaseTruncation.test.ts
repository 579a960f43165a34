import { describe, expect, it, vi } from "@effect/vitest"
import { RecordBatch } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { ReplicaManager } from "@clustermirror/replication/ReplicaManager"
import { TwoPhaseTruncation } from "@clustermirror/mirror"

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

/** Lets the truncation's polling run a few times. */
const ticks = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms))

const track = (p: Promise<void>) => {
  const state = { done: false, error: undefined as unknown }
  p.then(
    () => {
      state.done = true
    },
    (e: unknown) => {
      state.error = e
    }
  )
  return state
}

describe("TwoPhaseTruncation", () => {
  it("waits for the ISR to catch up, cuts the leader, then waits for the followers to cut theirs", async () => {
    const { rm, log, followerFetch } = setup([1, 2, 3])
    await followerFetch(2, 10)
    await followerFetch(3, 6)
    const run = track(TwoPhaseTruncation.truncate(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1 }))

    await ticks()
    expect(log.logEndOffset).toBe(10) // follower 3 is behind: nothing is cut yet
    await followerFetch(3, 10)
    await vi.waitFor(() => expect(log.logEndOffset).toBe(4))
    await ticks()
    expect(run.done).toBe(false) // both followers still hold offsets 4-9

    const diverging = await followerFetch(2, 10)
    expect(diverging[0]!.divergingEpoch).toEqual({ epoch: EPOCH, endOffset: 4n })
    await followerFetch(2, 4)
    await ticks()
    expect(run.done).toBe(false)
    await followerFetch(3, 4)
    await vi.waitFor(() => expect(run.done).toBe(true))
    expect(run.error).toBeUndefined()
  })

  it("does not cut below min.insync.replicas, and gives up after the timeout", async () => {
    const { rm, log } = setup([1, 2, 3], [1], 2)
    const error = await TwoPhaseTruncation.truncate(rm, "t", 0, 4, { timeoutMs: 50, pollMs: 1 }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(TwoPhaseTruncation.TruncationAbortedError)
    expect(String((error as Error).message)).toContain("the ISR to catch up")
    expect(log.logEndOffset).toBe(10)
  })

  it("gives up when leadership moves while it waits", async () => {
    const { rm, log, followerFetch, register } = setup([1, 2])
    await followerFetch(2, 7)
    const run = track(TwoPhaseTruncation.truncate(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1 }))
    await ticks()
    register(2, EPOCH + 1)
    await vi.waitFor(() => expect(run.error).toBeInstanceOf(TwoPhaseTruncation.TruncationAbortedError))
    expect(log.logEndOffset).toBe(10)
  })

  it("completes at once on a single replica, and cuts nothing when the log ends at or below the target", async () => {
    const single = setup([1])
    await TwoPhaseTruncation.truncate(single.rm, "t", 0, 3, { timeoutMs: 10_000 })
    expect(single.log.logEndOffset).toBe(3)

    const short = setup([1, 2, 3])
    // Followers never fetched: waiting for them would time out, but there is nothing to cut.
    await TwoPhaseTruncation.truncate(short.rm, "t", 0, 10, { timeoutMs: 10 })
    expect(short.log.logEndOffset).toBe(10)
  })

  it("does not wait for replicas outside the ISR", async () => {
    const { rm, log, followerFetch } = setup([1, 2, 3], [1, 2])
    await followerFetch(2, 10)
    const run = track(TwoPhaseTruncation.truncate(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1 }))
    await vi.waitFor(() => expect(log.logEndOffset).toBe(4))
    await followerFetch(2, 4)
    await vi.waitFor(() => expect(run.done).toBe(true))
  })

  it("waits for every assigned replica with mirror.support.unclean.leader.election", async () => {
    const { rm, log, followerFetch } = setup([1, 2, 3], [1, 2])
    await followerFetch(2, 10)
    await followerFetch(3, 8)
    const run = track(TwoPhaseTruncation.truncate(rm, "t", 0, 4, { timeoutMs: 10_000, pollMs: 1, allReplicas: true }))
    await ticks()
    expect(log.logEndOffset).toBe(10) // replica 3 is out of the ISR, and behind
    await followerFetch(3, 10)
    await vi.waitFor(() => expect(log.logEndOffset).toBe(4))
    await followerFetch(2, 4)
    await ticks()
    expect(run.done).toBe(false)
    await followerFetch(3, 4)
    await vi.waitFor(() => expect(run.done).toBe(true))
  })

  it("a partition waiting for its followers does not hold up another one", async () => {
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
    await fetchAt("slow", 3)
    await fetchAt("quick", 10)
    const slow = track(TwoPhaseTruncation.truncate(rm, "slow", 0, 2, { timeoutMs: 10_000, pollMs: 1 }))
    const quick = track(TwoPhaseTruncation.truncate(rm, "quick", 0, 2, { timeoutMs: 10_000, pollMs: 1 }))
    await vi.waitFor(() => expect(rm.get("quick", 0)!.log.logEndOffset).toBe(2))
    await fetchAt("quick", 2)
    await vi.waitFor(() => expect(quick.done).toBe(true))
    expect(slow.done).toBe(false)
    expect(rm.get("slow", 0)!.log.logEndOffset).toBe(10)
    await fetchAt("slow", 10)
    await vi.waitFor(() => expect(rm.get("slow", 0)!.log.logEndOffset).toBe(2))
    await fetchAt("slow", 2)
    await vi.waitFor(() => expect(slow.done).toBe(true))
  })
})
