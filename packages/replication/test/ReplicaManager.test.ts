import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ControlRecord, Errors, RecordBatch } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore, StorageTest } from "@clustermirror/storage"
import { ReplicaManager, type Registration } from "../src/ReplicaManager.js"
import * as ReplicationQuota from "../src/ReplicationQuota.js"

const batch = (n: number) =>
  RecordBatch.build({ records: Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${i}`) })), timestamp: 1 })

/** A leader on broker 1 with followers 2 and 3, its clock and its ISR requests to the controller. */
const setup = (reg: Partial<Registration> = {}, minIsr = 1, isBrokerAlive?: (id: number) => boolean) => {
  let now = 1_000
  const proposals: Array<ReadonlyArray<number>> = []
  let partitionEpoch = reg.partitionEpoch ?? 0
  const rm = new ReplicaManager({
    store: PartitionLogStore.makeMemoryStore(),
    nodeId: 1,
    now: () => now,
    replicaLagTimeMaxMs: 10_000,
    ...(isBrokerAlive !== undefined && { isBrokerAlive }),
    isrChannel: {
      alterPartition: async (_p, newIsr) => {
        proposals.push(newIsr)
        partitionEpoch++
        return {
          errorCode: 0,
          registration: { replicas: [1, 2, 3], isr: newIsr, leader: 1, leaderEpoch: 5, partitionEpoch }
        }
      }
    }
  })
  rm.applyRegistration(
    "t",
    0,
    "q83vEjRWeJCrze8SNFZ4kA",
    { replicas: [1, 2, 3], isr: [1, 2, 3], leader: 1, leaderEpoch: 5, partitionEpoch: 0, ...reg },
    PartitionLog.defaultConfig,
    false,
    minIsr
  )
  const followerFetch = (replicaId: number, fetchOffset: number, lastFetchedEpoch = -1) =>
    rm.fetch({
      replicaId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [
        { topic: "t", partition: 0, fetchOffset, currentLeaderEpoch: 5, lastFetchedEpoch, partitionMaxBytes: 1 << 20 }
      ]
    })
  return { rm, proposals, followerFetch, advance: (ms: number) => (now += ms), log: rm.get("t", 0)!.log }
}

const flush = () => new Promise((r) => setTimeout(r, 0))

describe("ReplicaManager as leader", () => {
  it("advances the high watermark to the smallest ISR fetch position", async () => {
    const { rm, followerFetch, log } = setup()
    await rm.appendAsLeader("t", 0, batch(10), true, 1)
    expect(log.highWatermark).toBe(0)
    await followerFetch(2, 10)
    expect(log.highWatermark).toBe(0)
    await followerFetch(3, 4)
    expect(log.highWatermark).toBe(4)
    await followerFetch(3, 10)
    expect(log.highWatermark).toBe(10)
  })

  it("answers acks=-1 only once every ISR member has the batch", async () => {
    const { rm, followerFetch } = setup()
    let answered = false
    const result = Promise.resolve(rm.appendAsLeader("t", 0, batch(3), true, -1, 60_000)).then((r) => {
      answered = true
      return r
    })
    await followerFetch(2, 3)
    await flush()
    expect(answered).toBe(false)
    await followerFetch(3, 3)
    const r = await result
    expect(r.errorCode).toBe(0)
    expect(r.baseOffset).toBe(0n)
  })

  it("refuses acks=-1 below min.insync.replicas and accepts acks=1", async () => {
    const { rm } = setup({ isr: [1] }, 2)
    const refused = await rm.appendAsLeader("t", 0, batch(1), true, -1)
    expect(refused.errorCode).toBe(Errors.ErrorCode.NOT_ENOUGH_REPLICAS)
    const ok = await rm.appendAsLeader("t", 0, batch(1), true, 1)
    expect(ok.errorCode).toBe(0)
  })

  it("adds a caught-up follower to the ISR and drops a lagging one", async () => {
    const { rm, followerFetch, proposals, advance } = setup({ isr: [1, 2] })
    await rm.appendAsLeader("t", 0, batch(5), true, 1)
    await followerFetch(2, 5)
    await followerFetch(3, 5)
    await flush()
    expect(proposals).toEqual([[1, 2, 3]])
    expect(rm.get("t", 0)!.isr).toEqual([1, 2, 3])
    await rm.appendAsLeader("t", 0, batch(5), true, 1)
    await followerFetch(2, 10)
    advance(20_000)
    await followerFetch(2, 10)
    rm.shrinkIsrs()
    await flush()
    expect(proposals[1]).toEqual([1, 2])
  })

  it("takes a replica a reassignment adds as a follower that joins the ISR once caught up, and forgets a removed one", async () => {
    const { rm, followerFetch, proposals } = setup({ replicas: [1, 2], isr: [1, 2] })
    await rm.appendAsLeader("t", 0, batch(5), true, 1)
    await followerFetch(2, 5)
    // Same leader epoch: the replicas grow by 3 (the reassignment's adding replica).
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 3, 2], isr: [1, 2], leader: 1, leaderEpoch: 5, partitionEpoch: 1 },
      PartitionLog.defaultConfig,
      false
    )
    expect([...rm.get("t", 0)!.followers.keys()]).toEqual([3, 2])
    await followerFetch(3, 2)
    await flush()
    expect(proposals).toEqual([])
    await followerFetch(3, 5)
    await flush()
    expect(proposals).toEqual([[1, 2, 3]])
    // The reassignment completes without 2.
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 3], isr: [1, 3], leader: 1, leaderEpoch: 5, partitionEpoch: 3 },
      PartitionLog.defaultConfig,
      false
    )
    expect([...rm.get("t", 0)!.followers.keys()]).toEqual([3])
    expect(rm.get("t", 0)!.followers.get(3)!.logEndOffset).toBe(5)
  })

  it("tells a follower with a divergent suffix where its epoch ends", async () => {
    const { rm, followerFetch } = setup()
    await rm.appendAsLeader("t", 0, batch(4), true, 1)
    const [r] = await followerFetch(2, 9, 3)
    expect(r!.divergingEpoch).not.toBeNull()
    expect(r!.records.length).toBe(0)
  })

  it("serves read_committed fetches of mirrored transactions up to the LSO, which waits for the marker's replication", async () => {
    const { rm, followerFetch, log } = setup()
    const txn = { producerId: 7n, producerEpoch: 0, isTransactional: true, partitionLeaderEpoch: 3 }
    const records = (n: number) => Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`x${i}`) }))
    // What a mirror fetcher appends: an aborted transaction, a committed one, and an idempotent batch.
    log.appendAsFollower(RecordBatch.build({ ...txn, records: records(2), baseOffset: 0, baseSequence: 0 }), 0)
    log.appendAsFollower(
      ControlRecord.endTxnMarker({
        producerId: 7n,
        producerEpoch: 0,
        commit: false,
        coordinatorEpoch: 2,
        baseOffset: 2
      }),
      0
    )
    log.appendAsFollower(RecordBatch.build({ ...txn, records: records(3), baseOffset: 3, baseSequence: 2 }), 0)
    log.appendAsFollower(
      ControlRecord.endTxnMarker({
        producerId: 7n,
        producerEpoch: 0,
        commit: true,
        coordinatorEpoch: 2,
        baseOffset: 6
      }),
      0
    )
    rm.mirrorAppended("t", 0)
    const consumerFetch = async (isolationLevel: number) => {
      const [r] = await rm.fetch({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        isolationLevel,
        partitions: [
          {
            topic: "t",
            partition: 0,
            fetchOffset: 0,
            currentLeaderEpoch: 5,
            lastFetchedEpoch: -1,
            partitionMaxBytes: 1 << 20
          }
        ]
      })
      const offsets = RecordBatch.split(r!.records).batches.map((b) => RecordBatch.baseOffset(r!.records, b.position))
      return { r: r!, offsets }
    }
    // Followers have the data up to offset 6, not the COMMIT: the committed transaction stays invisible.
    await followerFetch(2, 6)
    await followerFetch(3, 6)
    expect(log.highWatermark).toBe(6)
    const held = await consumerFetch(1)
    expect([held.r.highWatermark, held.r.lastStableOffset]).toEqual([6n, 3n])
    expect(held.offsets).toEqual([0, 2])
    expect(held.r.abortedTransactions).toEqual([{ producerId: 7n, firstOffset: 0n }])
    expect((await consumerFetch(0)).offsets).toEqual([0, 2, 3])
    await followerFetch(2, 7)
    await followerFetch(3, 7)
    const released = await consumerFetch(1)
    expect([released.r.highWatermark, released.r.lastStableOffset]).toEqual([7n, 7n])
    expect(released.offsets).toEqual([0, 2, 3, 6])
    expect(released.r.abortedTransactions).toEqual([{ producerId: 7n, firstOffset: 0n }])
  })

  it("rejects produce and consumer fetch when not the leader, with a leader hint", async () => {
    const { rm } = setup({ leader: 2 })
    const r = await rm.appendAsLeader("t", 0, batch(1), true, 1)
    expect(r.errorCode).toBe(Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER)
    expect(r.currentLeader).toEqual({ leaderId: 2, leaderEpoch: 5 })
  })
})

describe("ReplicaManager retention", () => {
  it("applies size retention only to the topics the caller's policy accepts", async () => {
    const rm = new ReplicaManager({
      store: PartitionLogStore.makeMemoryStore(),
      nodeId: 1,
      now: () => 1_000,
      replicaLagTimeMaxMs: 10_000,
      isrChannel: { alterPartition: async () => ({ errorCode: 0, registration: null }) }
    })
    const config = { ...PartitionLog.defaultConfig, segmentBytes: 200, retentionBytes: 400 }
    for (const topic of ["kept", "trimmed"]) {
      rm.applyRegistration(
        topic,
        0,
        topic === "kept" ? "q83vEjRWeJCrze8SNFZ4kA" : "AAAAAAAAAAAAAAAAAAAAAQ",
        { replicas: [1], isr: [1], leader: 1, leaderEpoch: 0, partitionEpoch: 0 },
        config,
        false,
        1
      )
      for (let i = 0; i < 10; i++) await rm.appendAsLeader(topic, 0, batch(5), true, 1)
    }
    rm.enforceRetention((topic) => topic === "trimmed")
    expect(rm.get("kept", 0)!.log.logStartOffset).toBe(0)
    expect(rm.get("trimmed", 0)!.log.logStartOffset).toBeGreaterThan(0)
    expect(rm.get("trimmed", 0)!.log.logEndOffset).toBe(50)
  })
})

describe("ReplicaManager configs and min.insync.replicas", () => {
  it("applies a changed max.message.bytes to a hosted partition (MESSAGE_TOO_LARGE after the change)", async () => {
    const { rm } = setup({ replicas: [1], isr: [1] })
    const big = RecordBatch.build({ records: [{ value: Buffer.alloc(2000) }], timestamp: 1 })
    expect((await rm.appendAsLeader("t", 0, big, true, 1)).errorCode).toBe(0)
    rm.reconfigure("t", 0, { ...PartitionLog.defaultConfig, maxMessageBytes: 1000 }, 1)
    expect((await rm.appendAsLeader("t", 0, big, true, 1)).errorCode).toBe(Errors.ErrorCode.MESSAGE_TOO_LARGE)
  })

  it("acks=-1 with the ISR under a min.insync.replicas raised later: NOT_ENOUGH_REPLICAS at once", async () => {
    const { rm } = setup({ isr: [1] })
    expect((await rm.appendAsLeader("t", 0, batch(1), true, -1, 60_000)).errorCode).toBe(0)
    rm.reconfigure("t", 0, PartitionLog.defaultConfig, 2)
    const r = await rm.appendAsLeader("t", 0, batch(1), true, -1, 60_000)
    expect(r.errorCode).toBe(Errors.ErrorCode.NOT_ENOUGH_REPLICAS)
  })

  it("acks=-1 waiting while the ISR shrinks under min.insync.replicas: NOT_ENOUGH_REPLICAS_AFTER_APPEND, no timeout", async () => {
    const { rm } = setup({}, 2)
    const pending = Promise.resolve(rm.appendAsLeader("t", 0, batch(2), true, -1, 60_000))
    // The followers are gone: the controller's registration drops them from the ISR.
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 2, 3], isr: [1], leader: 1, leaderEpoch: 5, partitionEpoch: 1 },
      PartitionLog.defaultConfig,
      false,
      2
    )
    const r = await pending
    expect(r.errorCode).toBe(Errors.ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
  })
})

describe("ReplicaManager on a failing disk", () => {
  const leaderOn = (store: PartitionLogStore.PartitionLogStoreService, lines: string[], now: () => number) => {
    const rm = new ReplicaManager({ store, nodeId: 1, now, log: (line) => lines.push(line) })
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1], isr: [1], leader: 1, leaderEpoch: 0, partitionEpoch: 0 },
      PartitionLog.defaultConfig,
      false
    )
    return rm
  }
  const consumerFetch = (rm: ReplicaManager) =>
    rm.fetch({
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [
        {
          topic: "t",
          partition: 0,
          fetchOffset: 0,
          currentLeaderEpoch: -1,
          lastFetchedEpoch: -1,
          partitionMaxBytes: 1 << 20
        }
      ]
    })

  it("answers produce with KAFKA_STORAGE_ERROR, logs the cause at most once per interval, and recovers", async () => {
    let now = 1_000
    const lines: string[] = []
    const disk = StorageTest.faultyStore()
    const rm = leaderOn(disk.store, lines, () => now)
    expect((await rm.appendAsLeader("t", 0, batch(2), true, 1)).errorCode).toBe(0)
    disk.failWrites("ENOSPC")
    for (let i = 0; i < 3; i++) {
      const r = await rm.appendAsLeader("t", 0, batch(2), true, 1)
      expect(r.errorCode).toBe(Errors.ErrorCode.KAFKA_STORAGE_ERROR)
      expect(r.errorMessage).toContain("ENOSPC")
    }
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^WARN storage error on produce of t-0: .*ENOSPC.*; answered KAFKA_STORAGE_ERROR$/)
    now += 10_000
    expect((await rm.appendAsLeader("t", 0, batch(2), true, 1)).errorCode).toBe(Errors.ErrorCode.KAFKA_STORAGE_ERROR)
    expect(lines).toHaveLength(2)
    expect(lines[1]).toContain("(2 more produce storage errors since the last report)")
    disk.failWrites(null)
    const healed = await rm.appendAsLeader("t", 0, batch(2), true, 1)
    expect(healed.errorCode).toBe(0)
    expect(healed.baseOffset).toBe(2n)
    expect(rm.get("t", 0)!.log.highWatermark).toBe(4)
  })

  it("answers a fetch whose read fails with KAFKA_STORAGE_ERROR and logs it", async () => {
    const lines: string[] = []
    const disk = StorageTest.faultyStore()
    const rm = leaderOn(disk.store, lines, () => 1_000)
    await rm.appendAsLeader("t", 0, batch(2), true, 1)
    disk.failReads("EIO")
    const [r] = await consumerFetch(rm)
    expect(r!.errorCode).toBe(Errors.ErrorCode.KAFKA_STORAGE_ERROR)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^WARN storage error on fetch of t-0: .*EIO.*; answered KAFKA_STORAGE_ERROR$/)
    disk.failReads(null)
    const [ok] = await consumerFetch(rm)
    expect(ok!.errorCode).toBe(0)
    expect(ok!.records.length).toBeGreaterThan(0)
  })
})

describe("ReplicaManager high watermark checkpoint", () => {
  it("a leader restarted after a crash answers ListOffsets latest with the checkpointed high watermark", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "replica-manager-hw-"))
    try {
      const reg: Registration = { replicas: [1, 2, 3], isr: [1, 2, 3], leader: 1, leaderEpoch: 5, partitionEpoch: 0 }
      const open = () => {
        const rm = new ReplicaManager({ store: PartitionLogStore.makeFileStore(dataDir), nodeId: 1 })
        rm.applyRegistration("t", 0, "q83vEjRWeJCrze8SNFZ4kA", reg, PartitionLog.defaultConfig, false)
        return rm
      }
      const before = open()
      await before.appendAsLeader("t", 0, batch(10), true, 1)
      for (const replicaId of [2, 3])
        await before.fetch({
          replicaId,
          maxWaitMs: 0,
          minBytes: 0,
          maxBytes: 1 << 20,
          isolationLevel: 0,
          partitions: [
            {
              topic: "t",
              partition: 0,
              fetchOffset: 10,
              currentLeaderEpoch: 5,
              lastFetchedEpoch: 5,
              partitionMaxBytes: 1 << 20
            }
          ]
        })
      expect(before.get("t", 0)!.log.highWatermark).toBe(10)
      before.checkpointHighWatermarks()
      // Crash: the logs are never closed. The followers have not fetched from the restarted leader yet.
      const after = open()
      expect(after.listOffset("t", 0, -1, 0, -1)).toMatchObject({ errorCode: 0, offset: 10n })
      expect(after.get("t", 0)!.log.highWatermark).toBe(10)
      after.close()
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("ReplicaManager.close", () => {
  it("closes partition logs cleanly within its budget and leaves the rest to recovery: a broker of thousands of partitions stops in bounded time", async () => {
    let now = 0
    const rm = new ReplicaManager({ store: PartitionLogStore.makeMemoryStore(), nodeId: 1, now: () => now })
    const closed = new Set<number>()
    for (let p = 0; p < 10; p++) {
      rm.applyRegistration(
        "t",
        p,
        "q83vEjRWeJCrze8SNFZ4kA",
        { replicas: [1], isr: [1], leader: 1, leaderEpoch: 0, partitionEpoch: 0 },
        PartitionLog.defaultConfig,
        false,
        1
      )
      const log = rm.get("t", p)!.log
      // Each clean close (flush, checkpoints) takes 400 ms of the clock.
      const close = log.close.bind(log)
      log.close = () => {
        now += 400
        closed.add(p)
        close()
      }
    }
    for (let p = 0; p < 10; p++) await rm.appendAsLeader("t", p, batch(1), true, 1)
    // 1 s of budget: closes at 0, 400 and 800 ms, then the budget is spent.
    expect(rm.close(1000)).toBe(7)
    expect([...closed]).toEqual([0, 1, 2])
    expect(rm.get("t", 0)).toBeUndefined()
  })

  it("closes every log, and the store, when the budget allows", async () => {
    const { rm, log } = setup()
    await rm.appendAsLeader("t", 0, batch(3), true, 1)
    expect(rm.close()).toBe(0)
    expect(() => log.read(0, 1 << 20)).toThrow(/closed/)
  })
})

describe("ReplicaManager long poll", () => {
  it("tells the fetch how long it waited for data, which the request quota does not count", async () => {
    const { rm, advance } = setup()
    const waits: number[] = []
    const fetched = rm.fetch({
      replicaId: -1,
      maxWaitMs: 60_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [
        {
          topic: "t",
          partition: 0,
          fetchOffset: 0,
          currentLeaderEpoch: 5,
          lastFetchedEpoch: -1,
          partitionMaxBytes: 1 << 20
        }
      ],
      onWait: (ms) => waits.push(ms)
    })
    await flush()
    advance(700)
    // Single-replica ISR: the append moves the high watermark and wakes the fetch.
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1], isr: [1], leader: 1, leaderEpoch: 5, partitionEpoch: 1 },
      PartitionLog.defaultConfig,
      false,
      1
    )
    await rm.appendAsLeader("t", 0, batch(2), true, 1)
    const [result] = await fetched
    expect(result!.records.length).toBeGreaterThan(0)
    expect(waits).toEqual([700])
  })
})

describe("ReplicaManager DeleteRecords", () => {
  /** A follower fetch that reports the follower's log start, as Fetch v5+ does. */
  const fetchReporting = (rm: ReplicaManager, replicaId: number, fetchOffset: number, logStartOffset: number) =>
    rm.fetch({
      replicaId,
      maxWaitMs: 60_000,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [
        {
          topic: "t",
          partition: 0,
          fetchOffset,
          currentLeaderEpoch: 5,
          lastFetchedEpoch: -1,
          partitionMaxBytes: 1 << 20,
          logStartOffset
        }
      ]
    })

  it("moves the log start and answers once every ISR follower reports it", async () => {
    const { rm, followerFetch, log } = setup()
    await rm.appendAsLeader("t", 0, batch(10), true, 1)
    await followerFetch(2, 10)
    await followerFetch(3, 10)
    expect(log.highWatermark).toBe(10)
    let answered = false
    const result = Promise.resolve(rm.deleteRecords("t", 0, 6, 60_000)).then((r) => {
      answered = true
      return r
    })
    expect(log.logStartOffset).toBe(6)
    // A follower behind the log start is answered at once (no long poll), and learns it.
    const [r2] = await fetchReporting(rm, 2, 10, 0)
    expect(r2!.logStartOffset).toBe(6n)
    await fetchReporting(rm, 3, 10, 0)
    await flush()
    expect(answered).toBe(false)
    void fetchReporting(rm, 2, 10, 6)
    await flush()
    expect(answered).toBe(false)
    void fetchReporting(rm, 3, 10, 6)
    expect(await result).toEqual({ errorCode: 0, lowWatermark: 6n })
    rm.close()
  })

  it("takes -1 as the high watermark, refuses offsets above it, and answers at once without live followers", async () => {
    const { rm, followerFetch, log } = setup({ isr: [1] }, 1, () => false)
    await rm.appendAsLeader("t", 0, batch(8), true, 1)
    await followerFetch(2, 5)
    expect(log.highWatermark).toBe(8)
    expect(await rm.deleteRecords("t", 0, 9, 1000)).toEqual({
      errorCode: Errors.ErrorCode.OFFSET_OUT_OF_RANGE,
      lowWatermark: -1n
    })
    expect(await rm.deleteRecords("t", 0, -2, 1000)).toEqual({
      errorCode: Errors.ErrorCode.OFFSET_OUT_OF_RANGE,
      lowWatermark: -1n
    })
    expect(await rm.deleteRecords("t", 0, -1, 1000)).toEqual({ errorCode: 0, lowWatermark: 8n })
    expect(log.logStartOffset).toBe(8)
    // Below the log start: nothing moves, the low watermark is answered.
    expect(await rm.deleteRecords("t", 0, 3, 1000)).toEqual({ errorCode: 0, lowWatermark: 8n })
  })

  it("counts a live follower out of the ISR in the low watermark, and not a dead one (as Kafka does)", async () => {
    const alive = new Set([2, 3])
    const { rm, followerFetch, log } = setup({ isr: [1, 2] }, 1, (id) => alive.has(id))
    await rm.appendAsLeader("t", 0, batch(10), true, 1)
    await followerFetch(2, 10)
    void fetchReporting(rm, 2, 10, 0)
    await fetchReporting(rm, 3, 4, 0)
    expect(log.highWatermark).toBe(10)
    expect(rm.get("t", 0)!.isr).toEqual([1, 2])
    // Follower 3 is out of the ISR but alive: its log start (0) is the low watermark until it follows.
    expect(await rm.deleteRecords("t", 0, 5, 1)).toEqual({
      errorCode: Errors.ErrorCode.REQUEST_TIMED_OUT,
      lowWatermark: 0n
    })
    let answered = false
    const result = Promise.resolve(rm.deleteRecords("t", 0, 6, 60_000)).then((r) => {
      answered = true
      return r
    })
    void fetchReporting(rm, 2, 10, 6)
    await flush()
    expect(answered).toBe(false)
    void fetchReporting(rm, 3, 4, 6)
    expect(await result).toEqual({ errorCode: 0, lowWatermark: 6n })
    // A dead follower does not hold the answer back, whatever log start it reported last.
    alive.delete(3)
    void fetchReporting(rm, 2, 10, 8)
    expect(await rm.deleteRecords("t", 0, 8, 60_000)).toEqual({ errorCode: 0, lowWatermark: 8n })
    rm.close()
  })

  it("answers REQUEST_TIMED_OUT when a follower in the ISR does not follow, and errors per partition", async () => {
    const { rm, followerFetch } = setup()
    await rm.appendAsLeader("t", 0, batch(4), true, 1)
    await followerFetch(2, 4)
    await followerFetch(3, 4)
    expect(await rm.deleteRecords("t", 0, 2, 1)).toEqual({
      errorCode: Errors.ErrorCode.REQUEST_TIMED_OUT,
      lowWatermark: -1n
    })
    expect((await rm.deleteRecords("nope", 0, 2, 1)).errorCode).toBe(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect((await rm.deleteRecords("t", 0, 2, 1, () => Errors.ErrorCode.READ_ONLY_TOPIC)).errorCode).toBe(
      Errors.ErrorCode.READ_ONLY_TOPIC
    )
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 2, 3], isr: [2, 3], leader: 2, leaderEpoch: 6, partitionEpoch: 1 },
      PartitionLog.defaultConfig,
      false
    )
    expect((await rm.deleteRecords("t", 0, 2, 1)).errorCode).toBe(Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER)
  })

  it("fails a waiting deletion with NOT_LEADER_OR_FOLLOWER when leadership moves", async () => {
    const { rm, followerFetch } = setup()
    await rm.appendAsLeader("t", 0, batch(4), true, 1)
    await followerFetch(2, 4)
    await followerFetch(3, 4)
    const waiting = rm.deleteRecords("t", 0, 3, 60_000)
    rm.applyRegistration(
      "t",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 2, 3], isr: [2, 3], leader: 2, leaderEpoch: 6, partitionEpoch: 1 },
      PartitionLog.defaultConfig,
      false
    )
    expect(await waiting).toEqual({ errorCode: Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER, lowWatermark: -1n })
  })

  it("refuses internal topics with INVALID_TOPIC_EXCEPTION", async () => {
    const rm = new ReplicaManager({ store: PartitionLogStore.makeMemoryStore(), nodeId: 1 })
    rm.applyRegistration(
      "__consumer_offsets",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1], isr: [1], leader: 1, leaderEpoch: 0, partitionEpoch: 0 },
      PartitionLog.defaultConfig,
      true
    )
    expect((await rm.deleteRecords("__consumer_offsets", 0, 0, 1)).errorCode).toBe(
      Errors.ErrorCode.INVALID_TOPIC_EXCEPTION
    )
  })

  it("keeps the log start across a restart of a file log", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "delete-records-"))
    try {
      const open = () => {
        const rm = new ReplicaManager({ store: PartitionLogStore.makeFileStore(dir), nodeId: 1 })
        rm.applyRegistration(
          "t",
          0,
          "q83vEjRWeJCrze8SNFZ4kA",
          { replicas: [1], isr: [1], leader: 1, leaderEpoch: 0, partitionEpoch: 0 },
          PartitionLog.defaultConfig,
          false
        )
        return rm
      }
      const rm = open()
      for (let i = 0; i < 5; i++) await rm.appendAsLeader("t", 0, batch(2), true, 1)
      expect(await rm.deleteRecords("t", 0, 7, 1000)).toEqual({ errorCode: 0, lowWatermark: 7n })
      rm.close()
      const again = open()
      expect(again.get("t", 0)!.log.logStartOffset).toBe(7)
      expect(again.listOffset("t", 0, -2, 0, -1).offset).toBe(7n)
      again.close()
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("ReplicaManager replication throttling (KIP-73)", () => {
  const bigBatch = (n: number) =>
    RecordBatch.build({
      records: Array.from({ length: n }, (_, i) => ({ value: Buffer.alloc(100, i) })),
      timestamp: 1
    })

  /** Leader 1 of t-0 and u-0 (replicas 1,2,3, ISR 1,2), `leader.replication.throttled.replicas` of t: 0:1. */
  const throttled = (rate: number) => {
    let now = 1_000
    const topicConfigs = new Map([
      ["t", new Map([["leader.replication.throttled.replicas", "0:1"]])],
      ["u", new Map([["leader.replication.throttled.replicas", "0:2"]])]
    ])
    const rm = new ReplicaManager({
      store: PartitionLogStore.makeMemoryStore(),
      nodeId: 1,
      now: () => now,
      replicationQuotas: () => ({ ...ReplicationQuota.unlimitedConfig, leaderReplicationThrottledRate: rate }),
      topicConfigs: (t) => topicConfigs.get(t) ?? new Map(),
      isrChannel: {
        alterPartition: async () => ({ errorCode: Errors.ErrorCode.OPERATION_NOT_ATTEMPTED, registration: null })
      }
    })
    for (const topic of ["t", "u"])
      rm.applyRegistration(
        topic,
        0,
        "q83vEjRWeJCrze8SNFZ4kA",
        { replicas: [1, 2, 3], isr: [1, 2], leader: 1, leaderEpoch: 5, partitionEpoch: 0 },
        PartitionLog.defaultConfig,
        false
      )
    const fetch = async (topic: string, replicaId: number) => {
      const [r] = await rm.fetch({
        replicaId,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        partitions: [
          {
            topic,
            partition: 0,
            fetchOffset: 0,
            currentLeaderEpoch: 5,
            lastFetchedEpoch: -1,
            partitionMaxBytes: 1 << 20
          }
        ]
      })
      return r!
    }
    return { rm, fetch, advance: (ms: number) => (now += ms) }
  }

  it("sends no records to an out-of-sync follower of a throttled partition while the leader quota is exceeded", async () => {
    const { rm, fetch, advance } = throttled(1_000)
    await rm.appendAsLeader("t", 0, bigBatch(20), true, 1)
    await rm.appendAsLeader("u", 0, bigBatch(20), true, 1)
    const first = await fetch("t", 3)
    expect(first.records.length).toBeGreaterThan(2_000)
    expect(rm.leaderQuota.isQuotaExceeded()).toBe(true)
    // Exceeded: replica 3 (not in the ISR) gets the positions without records.
    const held = await fetch("t", 3)
    expect(held.errorCode).toBe(0)
    expect(held.records.length).toBe(0)
    expect(held.highWatermark).toBe(0n)
    expect(held.logStartOffset).toBe(0n)
    expect(rm.get("t", 0)!.log.logEndOffset).toBe(20)
    // In-sync replicas, consumers and partitions this broker does not throttle are served.
    expect((await fetch("t", 2)).records.length).toBe(first.records.length)
    expect((await fetch("t", -1)).records.length).toBe(0)
    expect((await fetch("u", 3)).records.length).toBeGreaterThan(2_000)
    // The bytes of the throttled partition (to replica 3 and 2) count; u's do not.
    expect(rm.leaderQuota.rate()).toBe(2 * first.records.length)
    // Once the rate is back under the bound the follower is served again.
    advance(Math.ceil(2 * first.records.length) + 1)
    expect((await fetch("t", 3)).records.length).toBe(first.records.length)
  })

  it("throttles nothing with the default (unlimited) rate", async () => {
    const { rm, fetch } = throttled(ReplicationQuota.UNLIMITED)
    await rm.appendAsLeader("t", 0, bigBatch(20), true, 1)
    for (let i = 0; i < 5; i++) expect((await fetch("t", 3)).records.length).toBeGreaterThan(2_000)
    expect(rm.leaderQuota.isQuotaExceeded()).toBe(false)
  })

  it("leaves out of the follower's fetches throttled partitions it is not in sync for, while the follower quota is exceeded", () => {
    let now = 0
    const topicConfigs = new Map([["follower.replication.throttled.replicas", "0:1,1:1"]])
    const rm = new ReplicaManager({
      store: PartitionLogStore.makeMemoryStore(),
      nodeId: 1,
      now: () => now,
      replicationQuotas: () => ({ ...ReplicationQuota.unlimitedConfig, followerReplicationThrottledRate: 1_000 }),
      topicConfigs: (t) => (t === "t" ? topicConfigs : new Map())
    })
    // Broker 1 follows t-0 (not in its ISR), t-1 (in its ISR) and t-2 (not throttled).
    for (const [partition, isr] of [
      [0, [2]],
      [1, [1, 2]],
      [2, [2]]
    ] as const)
      rm.applyRegistration(
        "t",
        partition,
        "q83vEjRWeJCrze8SNFZ4kA",
        { replicas: [2, 1], isr, leader: 2, leaderEpoch: 1, partitionEpoch: 0 },
        PartitionLog.defaultConfig,
        false
      )
    const left = () => [0, 1, 2].filter((partition) => rm.followerThrottle.shouldThrottle({ topic: "t", partition }))
    expect(left()).toEqual([])
    rm.followerThrottle.record({ topic: "t", partition: 2 }, 5_000)
    expect(left()).toEqual([])
    rm.followerThrottle.record({ topic: "t", partition: 1 }, 1_500)
    expect(left()).toEqual([0])
    now += 1_600
    expect(left()).toEqual([])
  })

  it("throttles mirror partitions listed for this broker whatever the ISR", () => {
    let now = 0
    const rm = new ReplicaManager({
      store: PartitionLogStore.makeMemoryStore(),
      nodeId: 1,
      now: () => now,
      replicationQuotas: () => ({ ...ReplicationQuota.unlimitedConfig, mirrorReplicationThrottledRate: 1_000 }),
      topicConfigs: (t) => (t === "m" ? new Map([["mirror.replication.throttled.replicas", "*"]]) : new Map())
    })
    rm.applyRegistration(
      "m",
      0,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 2], isr: [1, 2], leader: 1, leaderEpoch: 1, partitionEpoch: 0 },
      PartitionLog.defaultConfig,
      false
    )
    const m0 = { topic: "m", partition: 0 }
    rm.mirrorThrottle.record(m0, 2_000)
    rm.mirrorThrottle.record({ topic: "other", partition: 0 }, 50_000)
    expect(rm.mirrorQuota.rate()).toBe(2_000)
    expect(rm.mirrorThrottle.shouldThrottle(m0)).toBe(true)
    expect(rm.mirrorThrottle.shouldThrottle({ topic: "other", partition: 0 })).toBe(false)
    now += 2_001
    expect(rm.mirrorThrottle.shouldThrottle(m0)).toBe(false)
  })
})
