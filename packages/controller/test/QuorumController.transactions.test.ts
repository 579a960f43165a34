/**
 * Decisions larger than one batch of the metadata log: the runtime writes them as one metadata
 * transaction (BeginTransactionRecord … EndTransactionRecord over several batches), a restart applies
 * only whole transactions and aborts one left unfinished, and one StartMirrorTopics or
 * StopMirrorTopics covers 100,000 partitions.
 */
import { describe, expect, it } from "@effect/vitest"
import { MetadataLog, MetadataPublisher } from "@clustermirror/metadata-log"
import { Errors, MetadataRecords, MirrorPartitionState } from "@clustermirror/protocol"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as MirrorControl from "../src/MirrorControl.js"
import { QuorumController } from "../src/QuorumController.js"
import * as ReplicationControl from "../src/ReplicationControl.js"
import { CLUSTER_ID, heartbeat, registration, uuid } from "./clusterFixtures.js"

const E = Errors.ErrorCode
const STOPPED = MirrorPartitionState.toByte("STOPPED")

const open = (log: MetadataLog.MetadataLogService, extra: { maxRecordsPerBatch?: number } = {}) =>
  QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log, snapshotEveryRecords: 1_000_000_000, ...extra })

/** One live broker and mirror m. */
const withMirror = async (c: QuorumController) => {
  const r = await c.registerBroker(registration(1))
  expect(r.errorCode).toBe(E.NONE)
  const h = await c.brokerHeartbeat(heartbeat(1, r.brokerEpoch, { currentMetadataOffset: c.committedOffset }))
  expect(h.isFenced).toBe(false)
  const created = await c.createClusterMirror({
    mirrorName: "m",
    config: [
      { name: "bootstrap.servers", value: "source:9092" },
      { name: "mirror.source.cluster.id", value: "source-cluster" }
    ]
  })
  expect(created.errorCode).toBe(E.NONE)
}

const names = (topics: number) => Array.from({ length: topics }, (_, i) => `t${String(i).padStart(4, "0")}`)

const startAll = (c: QuorumController, topics: ReadonlyArray<string>, partitions: number) =>
  c.startMirrorTopics({
    mirrorName: "m",
    topics: topics.map((topicName, i) => ({
      topicName,
      topicId: uuid(1000 + i),
      numPartitions: partitions,
      configs: []
    })),
    includePatterns: [],
    excludePatterns: [],
    stateValidationOffset: -1n,
    defaultReplicationFactor: -1
  })

const stopAll = (c: QuorumController, topics: ReadonlyArray<string>) =>
  c.stopMirrorTopics({
    mirrorName: "m",
    topics: topics.map((topicName) => ({ topicName })),
    patterns: [],
    stateValidationOffset: c.committedOffset
  })

/** Every batch of the log from `from` on, decoded. */
const batchesFrom = async (log: MetadataLog.MetadataLogService, from: number) => {
  const out: Array<ReadonlyArray<MetadataRecords.MetadataRecord>> = []
  const end = await Effect.runPromise(log.logEndOffset)
  let offset = from
  while (offset < end) {
    const read = await Effect.runPromise(log.readFrom(offset))
    for (const bytes of read.batches) {
      const b = Either.getOrThrow(MetadataLog.decodeBatch(bytes))
      if (b.provenance.lastOffset < offset) continue
      out.push(b.records)
      offset = b.provenance.lastOffset + 1
    }
  }
  return out
}

/** What a broker loading the log sees. */
const brokerImage = async (log: MetadataLog.MetadataLogService) => {
  const loader = await Effect.runPromise(MetadataPublisher.make())
  return Effect.runPromise(log.loadInto(loader))
}

const desiredStates = (c: QuorumController) =>
  [...c.current.replication.topicsById.values()]
    .filter((t) => t.mirrorName === "m")
    .map((t) => [t.name, t.partitions.size, t.desiredMirrorState] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))

describe("QuorumController metadata transactions", () => {
  it("given a start larger than one batch, when it is written, then the log holds BeginTransactionRecord … EndTransactionRecord in batches under the cap, and a restart from the log rebuilds the same state and offsets", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-controller-txn-"))
    const log = await Effect.runPromise(MetadataLog.makeFile(path.join(dir, "live")))
    const c = await open(log, { maxRecordsPerBatch: 10 })
    await withMirror(c)
    const from = Number(c.committedOffset + 1n)
    const topics = names(6)
    const started = await startAll(c, topics, 4)
    expect(started.topics.map((t) => t.errorCode)).toEqual(topics.map(() => E.NONE))

    const batches = await batchesFrom(log, from)
    const all = batches.flat()
    expect(batches.length).toBeGreaterThan(1)
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(10)
    expect(all[0]).toEqual(MetadataRecords.make("BeginTransactionRecord", { name: "StartMirrorTopics" }))
    expect(all[all.length - 1]).toEqual(MetadataRecords.make("EndTransactionRecord", {}))
    expect(all.filter((r) => r.type === "PartitionRecord")).toHaveLength(24)
    expect(BigInt(from + all.length - 1)).toBe(c.committedOffset)

    const before = desiredStates(c)
    const lastChanges = c.current.replication.topicsById
    // A restart from the log alone (no snapshot), as after a crash.
    fs.cpSync(path.join(dir, "live"), path.join(dir, "crashed"), { recursive: true })
    await c.close()
    await Effect.runPromise(log.close)
    const copy = await Effect.runPromise(MetadataLog.makeFile(path.join(dir, "crashed")))
    const reopened = await open(copy)
    try {
      expect(desiredStates(reopened)).toEqual(before)
      for (const [id, t] of reopened.current.replication.topicsById)
        expect(t.lastMirrorStateChangeOffset, t.name).toBe(lastChanges.get(id)!.lastMirrorStateChangeOffset)
    } finally {
      await reopened.close()
      await Effect.runPromise(copy.close)
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("given a transaction torn at the log tail (the controller died between its batches), when the controller reopens, then none of it applies, it is aborted, and brokers never see it", async () => {
    const log = MetadataLog.makeMemory()
    const c = await open(log)
    await withMirror(c)
    const before = desiredStates(c)
    const committed = c.committedOffset
    await c.close()
    // What a controller that died after the first batch of a start leaves behind.
    const torn = [
      MetadataRecords.make("BeginTransactionRecord", { name: "StartMirrorTopics" }),
      MetadataRecords.make("TopicRecord", { name: "torn", topicId: uuid(7) }),
      MetadataRecords.mirrorTopicStateChange(uuid(7), "m", "MIRRORING")
    ]
    await Effect.runPromise(log.append(torn, 1))
    const halfway = await brokerImage(log)
    expect(halfway.topics.byName.has("torn")).toBe(false)

    const reopened = await open(log)
    try {
      expect(desiredStates(reopened)).toEqual(before)
      expect(ReplicationControl.topicByName(reopened.current.replication, "torn")).toBeUndefined()
      const tail = (await batchesFrom(log, Number(committed + 1n))).flat()
      expect(tail.map((r) => r.type)).toEqual([
        "BeginTransactionRecord",
        "TopicRecord",
        "MirrorTopicStateChangeRecord",
        "AbortTransactionRecord"
      ])
      // Writing goes on after the abort, outside the dead transaction.
      const started = await startAll(reopened, ["fresh"], 2)
      expect(started.errorCode).toBe(E.NONE)
      const image = await brokerImage(log)
      expect(image.topics.byName.has("torn")).toBe(false)
      expect(image.topics.byName.get("fresh")?.partitions.size).toBe(2)
      expect(BigInt(image.provenance.lastOffset)).toBe(reopened.committedOffset)
    } finally {
      await reopened.close()
    }
  })

  it("given an append that fails after the first batch of a transaction, when the controller writes, then the transaction is aborted and nothing of the decision is adopted", async () => {
    const inner = MetadataLog.makeMemory()
    let appends = 0
    let failAt = -1
    const log: MetadataLog.MetadataLogService = {
      ...inner,
      append: (records, epoch) =>
        Effect.suspend(() => {
          appends++
          return appends === failAt ? Effect.die(new Error("disk full")) : inner.append(records, epoch)
        })
    }
    const c = await open(log, { maxRecordsPerBatch: 5 })
    try {
      await withMirror(c)
      const before = desiredStates(c)
      failAt = appends + 2
      await expect(startAll(c, names(3), 4)).rejects.toThrow("disk full")
      expect(desiredStates(c)).toEqual(before)
      const image = await brokerImage(inner)
      expect([...image.topics.byName.keys()].filter((n) => n.startsWith("t"))).toEqual([])
      expect(BigInt(image.provenance.lastOffset)).toBe(c.committedOffset)
      const started = await startAll(c, names(3), 4)
      expect(started.topics.map((t) => t.errorCode)).toEqual([E.NONE, E.NONE, E.NONE])
      expect((await brokerImage(inner)).topics.byName.get("t0002")?.partitions.size).toBe(4)
    } finally {
      await c.close()
    }
  })

  it("given 100,000 partitions, when they are started in one request and stopped in one request, then both succeed for every topic", async () => {
    const log = MetadataLog.makeMemory()
    const c = await open(log)
    try {
      await withMirror(c)
      const topics = names(1000)
      const started = await startAll(c, topics, 100)
      expect([started.errorCode, started.errorMessage]).toEqual([E.NONE, null])
      expect(started.topics.filter((t) => t.errorCode !== E.NONE)).toEqual([])
      const mirrored = MirrorControl.topicsOf(c.current, "m")
      expect(mirrored.reduce((n, t) => n + t.partitions.size, 0)).toBe(100_000)

      const stopped = await stopAll(c, topics)
      expect([stopped.errorCode, stopped.errorMessage]).toEqual([E.NONE, null])
      expect(stopped.topics.filter((t) => t.errorCode !== E.NONE)).toEqual([])
      for (const t of MirrorControl.topicsOf(c.current, "m")) expect(t.desiredMirrorState, t.name).toBe(STOPPED)
    } finally {
      await c.close()
    }
  }, 300_000)
})
