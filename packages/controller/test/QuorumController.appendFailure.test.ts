/**
 * A metadata append that fails is fatal for the controller's in-memory state: it never carries on with
 * a state the log may not hold. It reopens its state from the log (snapshot + tail) and goes on from
 * there; while the log cannot be read either, every write fails with a retriable error.
 */
import { describe, expect, it } from "@effect/vitest"
import { MetadataLog } from "@clustermirror/metadata-log"
import { Errors } from "@clustermirror/protocol"
import { Effect, TestClock } from "effect"
import * as ControllerError from "../src/ControllerError.js"
import { QuorumController } from "../src/QuorumController.js"
import { CLUSTER_ID, heartbeat, registration } from "./clusterFixtures.js"
import { replayOfLog } from "./logReplay.js"

const E = Errors.ErrorCode

/** A memory log whose appends (and reads) can be made to fail. */
const faultyLog = () => {
  const inner = MetadataLog.makeMemory()
  const faults = { append: "none" as "none" | "before" | "after", read: false }
  const log: MetadataLog.MetadataLogService = {
    ...inner,
    append: (records, epoch) =>
      Effect.suspend(() => {
        switch (faults.append) {
          case "before":
            return Effect.die(new Error("disk full"))
          // Written, then reported lost (an fsync that failed after the write reached the file).
          case "after":
            return Effect.flatMap(inner.append(records, epoch), () => Effect.die(new Error("fsync failed")))
          case "none":
            return inner.append(records, epoch)
        }
      }),
    readFrom: (offset, maxBytes) =>
      Effect.suspend(() => (faults.read ? Effect.die(new Error("read failed")) : inner.readFrom(offset, maxBytes)))
  }
  return { log, faults }
}

const topic = (name: string) => ({
  topics: [{ name, numPartitions: 2, replicationFactor: 1, assignments: [], configs: [], mirrorInfo: null }],
  timeoutMs: 1000,
  validateOnly: false
})

const withBroker = async (c: QuorumController) => {
  const r = await c.registerBroker(registration(1))
  expect(r.errorCode).toBe(E.NONE)
  const h = await c.brokerHeartbeat(heartbeat(1, r.brokerEpoch, { currentMetadataOffset: c.committedOffset }))
  expect(h.isFenced).toBe(false)
}

const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => expect.fail("expected a rejection"),
    (e: unknown) => e
  )

describe("QuorumController after a failed metadata append", () => {
  it.effect(
    "given an append that fails before it is written, then the request fails retriably, the state is a replay of the log, and the next request succeeds",
    () =>
      Effect.gen(function* () {
        const { log, faults } = faultyLog()
        const c = yield* QuorumController.make({ nodeId: 1000, clusterId: CLUSTER_ID, log })
        yield* Effect.promise(() => withBroker(c))
        faults.append = "before"
        const error = yield* Effect.promise(() => rejection(c.createTopics(topic("lost"))))
        expect(error).toBeInstanceOf(ControllerError.MetadataAppendFailed)
        expect(ControllerError.isRetriable(error as ControllerError.MetadataAppendFailed)).toBe(true)
        expect((error as Error).message).toContain("disk full")
        expect(c.current).toEqual(yield* replayOfLog(log))
        expect(c.current.replication.topicIdsByName.has("lost")).toBe(false)
        faults.append = "none"
        const [created] = yield* Effect.promise(() => c.createTopics(topic("kept")))
        expect(created!.errorCode).toBe(E.NONE)
        expect(c.current).toEqual(yield* replayOfLog(log))
        expect(c.committedOffset).toBe(BigInt((yield* log.logEndOffset) - 1))
        yield* Effect.promise(() => c.close())
      })
  )

  it.effect(
    "given an append that is written but reported failed, then the controller reopens from the log and holds what the log holds",
    () =>
      Effect.gen(function* () {
        const { log, faults } = faultyLog()
        const c = yield* QuorumController.make({ nodeId: 1000, clusterId: CLUSTER_ID, log })
        yield* Effect.promise(() => withBroker(c))
        faults.append = "after"
        yield* Effect.promise(() => rejection(c.createTopics(topic("written"))))
        faults.append = "none"
        // The log has the topic; so does the controller, at the log's offsets.
        expect(c.current.replication.topicIdsByName.has("written")).toBe(true)
        expect(c.current).toEqual(yield* replayOfLog(log))
        expect(c.committedOffset).toBe(BigInt((yield* log.logEndOffset) - 1))
        const [again] = yield* Effect.promise(() => c.createTopics(topic("written")))
        expect(again!.errorCode).toBe(E.TOPIC_ALREADY_EXISTS)
        yield* Effect.promise(() => c.close())
      })
  )

  it.effect(
    "given a log that can be read neither, then every write fails with a retriable error until a reload succeeds",
    () =>
      Effect.gen(function* () {
        const { log, faults } = faultyLog()
        const lines: string[] = []
        const c = yield* QuorumController.make({
          nodeId: 1000,
          clusterId: CLUSTER_ID,
          log,
          log_: (line) => lines.push(line)
        })
        yield* Effect.promise(() => withBroker(c))
        faults.append = "before"
        faults.read = true
        yield* Effect.promise(() => rejection(c.createTopics(topic("a"))))
        faults.append = "none"
        const unavailable = yield* Effect.promise(() => rejection(c.createTopics(topic("b"))))
        expect(unavailable).toBeInstanceOf(ControllerError.MetadataLogUnavailable)
        expect(ControllerError.isRetriable(unavailable as ControllerError.MetadataLogUnavailable)).toBe(true)
        expect((unavailable as Error).message).toContain("read failed")
        expect(c.current.replication.topicIdsByName.has("b")).toBe(false)
        faults.read = false
        const [created] = yield* Effect.promise(() => c.createTopics(topic("b")))
        expect(created!.errorCode).toBe(E.NONE)
        expect(c.current).toEqual(yield* replayOfLog(log))
        expect(lines.some((l) => l.includes("reopened from the metadata log"))).toBe(true)
        yield* Effect.promise(() => c.close())
      })
  )

  it.effect(
    "given a failed append in the middle of a metadata transaction, then the reload aborts the transaction and the state is a replay of the log",
    () =>
      Effect.gen(function* () {
        const { log, faults } = faultyLog()
        const inner = log.append
        let appends = Number.NEGATIVE_INFINITY
        const counting: MetadataLog.MetadataLogService = {
          ...log,
          append: (records, epoch) =>
            Effect.suspend(() => {
              appends++
              if (appends === 2) faults.append = "before"
              return Effect.ensuring(
                inner(records, epoch),
                Effect.sync(() => (faults.append = "none"))
              )
            })
        }
        const c = yield* QuorumController.make({
          nodeId: 1000,
          clusterId: CLUSTER_ID,
          log: counting,
          maxRecordsPerBatch: 2
        })
        yield* Effect.promise(() => withBroker(c))
        appends = 0
        yield* Effect.promise(() => rejection(c.createTopics(topic("torn"))))
        expect(c.current.replication.topicIdsByName.has("torn")).toBe(false)
        expect(c.current).toEqual(yield* replayOfLog(log))
        const [created] = yield* Effect.promise(() => c.createTopics(topic("whole")))
        expect(created!.errorCode).toBe(E.NONE)
        expect(c.current).toEqual(yield* replayOfLog(log))
        yield* Effect.promise(() => c.close())
      })
  )

  it.effect(
    "given a session that expires while appends fail, then the fencing surfaces the failure, is logged with its reason, and fences once the log takes appends again",
    () =>
      Effect.gen(function* () {
        const { log, faults } = faultyLog()
        const lines: string[] = []
        const c = yield* QuorumController.make({
          nodeId: 1000,
          clusterId: CLUSTER_ID,
          log,
          sessionTimeoutMs: 3000,
          log_: (line) => lines.push(line)
        })
        yield* Effect.promise(() => withBroker(c))
        faults.append = "before"
        yield* TestClock.adjust("5 seconds")
        // The timer's fencing failed: logged with the reason, nothing fenced in memory or in the log.
        expect(
          lines.some((l) => l.includes("fencing brokers whose session expired failed") && l.includes("disk full"))
        ).toBe(true)
        expect(c.current.cluster.brokers.get(1)!.fenced).toBe(false)
        expect(c.current).toEqual(yield* replayOfLog(log))
        // Called directly, the failure rejects instead of answering "nothing fenced".
        const error = yield* Effect.promise(() => rejection(c.fenceStaleBrokers()))
        expect(error).toBeInstanceOf(ControllerError.MetadataAppendFailed)
        faults.append = "none"
        yield* TestClock.adjust("1 second")
        expect(c.current.cluster.brokers.get(1)!.fenced).toBe(true)
        expect(c.current).toEqual(yield* replayOfLog(log))
        yield* Effect.promise(() => c.close())
      })
  )
})
