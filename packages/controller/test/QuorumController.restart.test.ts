/**
 * The optimistic lock of KIP-1279 §5.8 across controller restarts: a controller reopened from its
 * metadata log (with or without a snapshot) keeps comparing offsets of the same log as the brokers,
 * so an operation a broker validated at its loaded offset goes through right after the restart.
 */
import { describe, expect, it } from "@effect/vitest"
import { MetadataLog, MetadataPublisher } from "@clustermirror/metadata-log"
import { Errors, type StopMirrorTopics } from "@clustermirror/protocol"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { QuorumController } from "../src/QuorumController.js"
import { CLUSTER_ID, heartbeat, registration, uuid } from "./clusterFixtures.js"

const E = Errors.ErrorCode

/** A controller with one live broker, mirror m, and `topics` × `partitions` mirrored partitions. */
const populate = async (c: QuorumController, topics: number, partitions: number) => {
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
  const names = Array.from({ length: topics }, (_, i) => `t${String(i).padStart(3, "0")}`)
  // One topic per request keeps each under one batch whatever the partition count.
  for (const [i, topicName] of names.entries()) {
    const started = await c.startMirrorTopics({
      mirrorName: "m",
      topics: [{ topicName, topicId: uuid(100 + i), numPartitions: partitions, configs: [] }],
      includePatterns: [],
      excludePatterns: [],
      stateValidationOffset: -1n,
      defaultReplicationFactor: -1
    })
    expect(started.errorCode, topicName).toBe(E.NONE)
  }
  return names
}

/** The offset a broker stamps after loading the metadata log: its image's last offset. */
const brokerOffset = async (log: MetadataLog.MetadataLogService): Promise<bigint> => {
  const loader = await Effect.runPromise(MetadataPublisher.make())
  const image = await Effect.runPromise(log.loadInto(loader))
  return BigInt(image.provenance.lastOffset)
}

const stopAll = (names: ReadonlyArray<string>, stateValidationOffset: bigint): StopMirrorTopics.Request => ({
  mirrorName: "m",
  topics: names.map((topicName) => ({ topicName })),
  patterns: [],
  stateValidationOffset
})

/** Every topic's last mirror-state change lies inside the log the controller has committed. */
const expectChangesInsideLog = (c: QuorumController) => {
  for (const t of c.current.replication.topicsById.values())
    expect(t.lastMirrorStateChangeOffset, t.name).toBeLessThanOrEqual(c.committedOffset)
}

const withTempDir = async (f: (dir: string) => Promise<void>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-controller-restart-"))
  try {
    await f(dir)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

describe("QuorumController restart and the optimistic lock (§5.8)", () => {
  it("given a controller restarted from a snapshot, when a broker that loaded the same log stops every topic at its offset, then the stop succeeds", async () => {
    const log = MetadataLog.makeMemory()
    const first = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    const names = await populate(first, 5, 3)
    const committed = first.committedOffset
    await first.close()
    expect((await Effect.runPromise(log.latestSnapshot))._tag).toBe("Some")

    const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    try {
      expect(second.committedOffset).toBe(committed)
      expectChangesInsideLog(second)
      // A broker that kept running is at the committed offset; one that restarted loads the snapshot.
      for (const stamp of [committed, await brokerOffset(log)]) expect(stamp).toBe(committed)
      const stopped = await second.stopMirrorTopics(stopAll(names, committed))
      expect([stopped.errorCode, stopped.errorMessage]).toEqual([E.NONE, null])
      expect(stopped.topics.map((t) => t.errorCode)).toEqual(names.map(() => E.NONE))
    } finally {
      await second.close()
    }
  })

  it("given a controller that crashed (no snapshot written at close), when it reopens from its log alone and a broker stops every topic at its offset, then the stop succeeds", async () => {
    await withTempDir(async (dir) => {
      const live = path.join(dir, "live")
      const crashed = path.join(dir, "crashed")
      const log = await Effect.runPromise(MetadataLog.makeFile(live))
      const first = await QuorumController.open({
        nodeId: 1000,
        clusterId: CLUSTER_ID,
        log,
        snapshotEveryRecords: 1_000_000
      })
      const names = await populate(first, 5, 3)
      const committed = first.committedOffset
      // What a crash leaves: the fsynced log as it is now, no snapshot.
      fs.cpSync(live, crashed, { recursive: true })
      await first.close()
      await Effect.runPromise(log.close)

      const reopened = await Effect.runPromise(MetadataLog.makeFile(crashed))
      expect((await Effect.runPromise(reopened.latestSnapshot))._tag).toBe("None")
      const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log: reopened })
      try {
        expect(second.committedOffset).toBe(committed)
        expectChangesInsideLog(second)
        expect(await brokerOffset(reopened)).toBe(committed)
        const stopped = await second.stopMirrorTopics(stopAll(names, committed))
        expect([stopped.errorCode, stopped.errorMessage]).toEqual([E.NONE, null])
      } finally {
        await second.close()
        await Effect.runPromise(reopened.close)
      }
    })
  })

  it("given 10,000 mirrored partitions and a controller restarted from a snapshot, when every topic is stopped in one request at the broker's offset, then the stop succeeds", async () => {
    const log = MetadataLog.makeMemory()
    const first = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    const names = await populate(first, 100, 100)
    await first.close()
    const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    try {
      expectChangesInsideLog(second)
      const stamp = await brokerOffset(log)
      expect(stamp).toBe(second.committedOffset)
      const stopped = await second.stopMirrorTopics(stopAll(names, stamp))
      expect([stopped.errorCode, stopped.errorMessage]).toEqual([E.NONE, null])
      expect(stopped.topics.filter((t) => t.errorCode !== E.NONE)).toEqual([])
    } finally {
      await second.close()
    }
  }, 120_000)
})
