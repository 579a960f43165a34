/**
 * The coordinator runtime: shards load by replaying their `__mirror_state` partition, writes are
 * appended before they are applied, a failed append changes nothing, and leadership loss clears.
 */
import { Errors, MirrorPartitionState, MirrorStateRecords, Uuid } from "@clustermirror/protocol"
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { ClusterMirrorCoordinator } from "../src/ClusterMirrorCoordinator.js"
import * as MirrorStateShard from "../src/MirrorStateShard.js"

const TOPIC_ID = Uuid.random()
const N = 3

const make = () => {
  const logs = new Map<number, Array<MirrorStateRecords.MirrorStateRecord>>()
  const loaded: Array<{ partition: number; ms: number }> = []
  let fail = false
  const c = new ClusterMirrorCoordinator({
    onLoaded: (partition, ms) => loaded.push({ partition, ms }),
    log: {
      readAll: (p) => [...(logs.get(p) ?? [])],
      append: async (p, _e, records) => {
        if (fail) throw Object.assign(new Error("boom"), { errorCode: Errors.ErrorCode.NOT_ENOUGH_REPLICAS })
        logs.set(p, [...(logs.get(p) ?? []), ...records])
      }
    },
    context: { topicId: (n) => (n === "t" ? TOPIC_ID : undefined), leaderEpoch: () => 0 }
  })
  return { c, logs, loaded, setFail: (f: boolean) => (fail = f) }
}

const write = (partitions: ReadonlyArray<number>, state: MirrorPartitionState.MirrorPartitionState) => ({
  mirrorName: "m",
  stoppedTopics: [],
  topics: [
    {
      name: "t",
      partitions: partitions.map((partitionIndex) => ({
        partitionIndex,
        lastMirrorEpoch: -1,
        state: MirrorPartitionState.toByte(state),
        leaderEpoch: -1,
        stateEpoch: -1
      }))
    }
  ]
})

describe("ClusterMirrorCoordinator", () => {
  it("reports each load on leadership gain with its duration, and not again for the same leadership", () => {
    const { c, loaded } = make()
    c.onBecomeLeader(1, 0, N)
    c.onBecomeLeader(1, 0, N)
    c.onBecomeLeader(2, 0, N)
    c.onBecomeLeader(1, 1, N)
    expect(loaded.map((l) => l.partition)).toEqual([1, 2, 1])
    for (const l of loaded) expect(l.ms).toBeGreaterThanOrEqual(0)
  })

  it("answers NOT_COORDINATOR for keys of partitions it does not lead", async () => {
    const { c } = make()
    const res = await c.write(write([0, 1, 2, 3], "LOG_TRUNCATION"))
    expect(res.topics[0]!.partitions.map((p) => p.errorCode)).toEqual(Array(4).fill(Errors.ErrorCode.NOT_COORDINATOR))
  })

  it("writes across shards in request order, and a new leader replays the same states", async () => {
    const { c, logs } = make()
    for (let p = 0; p < N; p++) c.onBecomeLeader(p, 0, N)
    const partitions = [0, 1, 2, 3, 4, 5, 6, 7]
    const res = await c.write(write(partitions, "LOG_TRUNCATION"))
    expect(res.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.stateEpoch])).toEqual(
      partitions.map((p) => [p, 0, 1])
    )
    expect([...logs.values()].flat()).toHaveLength(8)
    const other = new ClusterMirrorCoordinator({
      log: { readAll: (p) => [...(logs.get(p) ?? [])], append: async () => {} },
      context: { topicId: () => TOPIC_ID, leaderEpoch: () => 0 }
    })
    for (let p = 0; p < N; p++) other.onBecomeLeader(p, 1, N)
    for (const p of partitions)
      expect(other.get(MirrorStateRecords.key("m", TOPIC_ID, p), N)).toEqual(
        c.get(MirrorStateRecords.key("m", TOPIC_ID, p), N)
      )
    const read = other.read({
      mirrorName: "m",
      topics: [
        {
          name: "t",
          partitions: partitions.map((partitionIndex) => ({ partitionIndex, leaderEpoch: -1, stateEpoch: -1 }))
        }
      ]
    })
    expect(read.topics[0]!.partitions.every((p) => p.state === MirrorPartitionState.toByte("LOG_TRUNCATION"))).toBe(
      true
    )
  })

  it("changes nothing when the append fails, and forgets everything on resignation", async () => {
    const { c, setFail } = make()
    for (let p = 0; p < N; p++) c.onBecomeLeader(p, 0, N)
    setFail(true)
    const res = await c.write(write([0], "LOG_TRUNCATION"))
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.NOT_ENOUGH_REPLICAS)
    expect(c.get(MirrorStateRecords.key("m", TOPIC_ID, 0), N)?.state).toBe("UNKNOWN")
    setFail(false)
    await c.write(write([0], "LOG_TRUNCATION"))
    expect(c.get(MirrorStateRecords.key("m", TOPIC_ID, 0), N)?.state).toBe("LOG_TRUNCATION")
    for (let p = 0; p < N; p++) c.onResign(p)
    expect(c.get(MirrorStateRecords.key("m", TOPIC_ID, 0), N)).toBeUndefined()
    expect([...c.entries()]).toEqual([])
  })

  it("tombstones a deleted mirror in every loaded shard", async () => {
    const { c, logs } = make()
    for (let p = 0; p < N; p++) c.onBecomeLeader(p, 0, N)
    await c.write(write([0, 1, 2, 3], "LOG_TRUNCATION"))
    expect(await c.deleteMirror("m")).toBe(4)
    expect([...c.entries()]).toEqual([])
    expect([...logs.values()].flat().filter((r) => r.value === null)).toHaveLength(8)
    expect(await c.deleteMirror("m")).toBe(0)
  })

  it("a partition whose log cannot be read is not loaded, says why, and answers NOT_COORDINATOR", async () => {
    const log = CoordinatorLog.memory<MirrorStateRecords.MirrorStateRecord>()
    const failed: Array<{ partition: number; message: string }> = []
    const c = new ClusterMirrorCoordinator({
      log,
      context: { topicId: (n: string) => (n === "t" ? TOPIC_ID : undefined), leaderEpoch: () => 0 },
      onLoadFailed: (partition, message) => failed.push({ partition, message })
    })
    const p = c.partitionFor(MirrorStateRecords.key("m", TOPIC_ID, 0), N)
    await Effect.runPromise(log.failNextRead(p))
    expect(c.onBecomeLeader(p, 0, N)).toEqual([])
    expect(failed.map((f) => f.partition)).toEqual([p])
    expect(failed[0]!.message).not.toBe("")
    const res = await c.write(write([0], "LOG_TRUNCATION"))
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.NOT_COORDINATOR)
    await c.close()
  })

  it("a partition led A→B→A, seen by A as a higher leader epoch, is reloaded with what B wrote", async () => {
    const log = CoordinatorLog.memory<MirrorStateRecords.MirrorStateRecord>()
    const context = { topicId: (n: string) => (n === "t" ? TOPIC_ID : undefined), leaderEpoch: () => 0 }
    const a = new ClusterMirrorCoordinator({ log, context })
    const b = new ClusterMirrorCoordinator({ log, context })
    const key = MirrorStateRecords.key("m", TOPIC_ID, 0)
    const p = a.partitionFor(key, N)
    a.onBecomeLeader(p, 0, N)
    await a.write(write([0], "LOG_TRUNCATION"))
    // B leads at epoch 1 and moves the partition on; A hears of it only as leader again at epoch 2.
    b.onBecomeLeader(p, 1, N)
    const res = await b.write(write([0], "MIRRORING"))
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.NONE)
    expect(a.get(key, N)?.state).toBe("LOG_TRUNCATION")
    const entries = a.onBecomeLeader(p, 2, N)
    expect(a.get(key, N)?.state).toBe("MIRRORING")
    expect(entries.map((e) => e.value.state)).toEqual(["MIRRORING"])
    await a.write(write([0], "PAUSING"))
    expect(log.batches().map((batch) => batch.leaderEpoch)).toEqual([0, 1, 2])
    await Promise.all([a.close(), b.close()])
  })

  it("answers a write only once committed, and NOT_COORDINATOR when leadership goes before the commit", async () => {
    const log = CoordinatorLog.memory<MirrorStateRecords.MirrorStateRecord>()
    const context = { topicId: (n: string) => (n === "t" ? TOPIC_ID : undefined), leaderEpoch: () => 0 }
    const c = new ClusterMirrorCoordinator({ log, context })
    const key = MirrorStateRecords.key("m", TOPIC_ID, 0)
    const p = c.partitionFor(key, N)
    c.onBecomeLeader(p, 0, N)
    await Effect.runPromise(log.holdCommits())
    let answered = false
    const pending = c.write(write([0], "LOG_TRUNCATION")).then((res) => {
      answered = true
      return res
    })
    for (let i = 0; i < 10 && log.heldAppends() === 0; i++) await new Promise((r) => setImmediate(r))
    expect(log.heldAppends()).toBe(1)
    expect(answered).toBe(false)
    expect(c.get(key, N)?.state).toBe("UNKNOWN")
    c.onResign(p)
    const res = await pending
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.NOT_COORDINATOR)
    await c.close()
  })

  const states = ["LOG_TRUNCATION", "MIRRORING", "PAUSING", "PAUSED", "STOPPING", "STOPPED", "FAILED"] as const
  const arbOp = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        _tag: fc.constant("write" as const),
        partitions: fc.uniqueArray(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 4 }),
        state: fc.constantFrom(...states),
        stateEpoch: fc.constantFrom(-1, -1, 0, 1, 2)
      })
    },
    { weight: 1, arbitrary: fc.constant({ _tag: "delete" as const }) },
    { weight: 1, arbitrary: fc.constant({ _tag: "failNext" as const }) },
    { weight: 1, arbitrary: fc.constant({ _tag: "hold" as const }) },
    { weight: 1, arbitrary: fc.constant({ _tag: "release" as const }) }
  )

  it("the state after live writes equals the state after replaying its log from scratch", () =>
    fc.assert(
      fc.asyncProperty(fc.array(arbOp, { maxLength: 30 }), async (ops) => {
        const log = CoordinatorLog.memory<MirrorStateRecords.MirrorStateRecord>()
        const context = { topicId: (n: string) => (n === "t" ? TOPIC_ID : undefined), leaderEpoch: () => 0 }
        const c = new ClusterMirrorCoordinator({ log, context, maxBatchRecords: 3 })
        for (let p = 0; p < N; p++) c.onBecomeLeader(p, 0, N)
        // Writes are issued without waiting, so they queue behind held appends and are batched.
        const inFlight: Array<Promise<unknown>> = []
        for (const op of ops) {
          if (op._tag === "write") {
            const request = write(op.partitions, op.state)
            inFlight.push(
              c.write({
                ...request,
                topics: request.topics.map((t) => ({
                  ...t,
                  partitions: t.partitions.map((x) => ({ ...x, stateEpoch: op.stateEpoch }))
                }))
              })
            )
          } else if (op._tag === "delete") inFlight.push(c.deleteMirror("m").catch(() => 0))
          else if (op._tag === "failNext") await Effect.runPromise(log.failNextAppend())
          else if (op._tag === "hold") await Effect.runPromise(log.holdCommits())
          else await Effect.runPromise(log.releaseCommits())
          await Promise.resolve()
        }
        await Effect.runPromise(log.releaseCommits())
        await Promise.all(inFlight)
        for (let p = 0; p < N; p++) {
          const replayed = MirrorStateShard.loadFrom(p, N, 0, log.records(p))
          const live = [...c.entries()].filter((e) => c.partitionFor(e.key, N) === p)
          expect(live).toEqual(MirrorStateShard.entries(replayed))
        }
        await c.close()
      }),
      { numRuns: 100 }
    ))
})
