import { describe, expect, it } from "@effect/vitest"
import { MetadataLog } from "@clustermirror/metadata-log"
import { Errors } from "@clustermirror/protocol"
import { Effect, Either, TestClock } from "effect"
import * as ControllerError from "../src/ControllerError.js"
import * as FeatureControl from "../src/FeatureControl.js"
import * as ReplicationControl from "../src/ReplicationControl.js"
import { QuorumController } from "../src/QuorumController.js"
import { replayOfLog } from "./logReplay.js"

const CLUSTER = "AAAAAAAAAAAAAAAAAAAAAB"

const register = (c: QuorumController, brokerId: number) =>
  c.registerBroker({
    brokerId,
    clusterId: CLUSTER,
    incarnationId: `AAAAAAAAAAAAAAAAAAAA${String.fromCharCode(65 + brokerId)}A`,
    listeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9000 + brokerId, securityProtocol: 0 }],
    features: [
      { name: "metadata.version", minSupportedVersion: 7, maxSupportedVersion: 30 },
      { name: "mirror.version", minSupportedVersion: 0, maxSupportedVersion: 1 }
    ],
    rack: null,
    isMigratingZkBroker: false,
    logDirs: [],
    previousBrokerEpoch: -1n
  })

const heartbeat = (c: QuorumController, brokerId: number, brokerEpoch: bigint) =>
  c.brokerHeartbeat({
    brokerId,
    brokerEpoch,
    currentMetadataOffset: c.committedOffset,
    wantFence: false,
    wantShutDown: false,
    offlineLogDirs: [],
    cordonedLogDirs: null
  })

/** Three registered, unfenced brokers and one RF=3 topic with a config. */
const populate = async (c: QuorumController) => {
  for (const id of [1, 2, 3]) {
    const r = await register(c, id)
    expect(r.errorCode).toBe(0)
    const h = await heartbeat(c, id, r.brokerEpoch)
    expect(h.isFenced).toBe(false)
  }
  const [t] = await c.createTopics({
    topics: [
      {
        name: "orders",
        numPartitions: 3,
        replicationFactor: 3,
        assignments: [],
        configs: [{ name: "retention.ms", value: "1000" }],
        mirrorInfo: null
      }
    ],
    timeoutMs: 1000,
    validateOnly: false
  })
  expect(t!.errorCode).toBe(0)
}

describe("QuorumController", () => {
  it("answers after the records are committed, and refuses what the control modules refuse", async () => {
    const log = MetadataLog.makeMemory()
    const c = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log })
    await populate(c)
    const end = await Effect.runPromise(log.logEndOffset)
    expect(BigInt(end - 1)).toBe(c.committedOffset)
    const [dup] = await c.createTopics({
      topics: [
        { name: "orders", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [], mirrorInfo: null }
      ],
      timeoutMs: 1000,
      validateOnly: false
    })
    expect(dup!.errorCode).toBe(Errors.ErrorCode.TOPIC_ALREADY_EXISTS)
    const wrongCluster = await c.registerBroker({ ...(await registration(4)), clusterId: "AAAAAAAAAAAAAAAAAAAAAC" })
    expect(wrongCluster.errorCode).toBe(Errors.ErrorCode.INCONSISTENT_CLUSTER_ID)
    await c.close()
  })

  it.effect("moves the leaderships and ISR memberships of a broker that registers as a new incarnation", () =>
    Effect.gen(function* () {
      // Given three brokers and an RF=3 topic; broker 1's process dies and its session expires.
      const c = yield* QuorumController.make({
        nodeId: 1000,
        clusterId: CLUSTER,
        log: MetadataLog.makeMemory(),
        sessionTimeoutMs: 1000
      })
      yield* Effect.promise(() => populate(c))
      const partitions = () => ReplicationControl.describe(c.current.replication)[0]!.partitions
      const before = partitions()
      const led = before.filter((p) => p.leader === 1)
      expect(led.length).toBeGreaterThan(0)
      yield* TestClock.adjust("5 seconds")
      for (const id of [2, 3]) yield* Effect.promise(() => heartbeat(c, id, c.current.cluster.brokers.get(id)!.epoch))
      // When it registers again with another incarnation id (before or after its old session was fenced)
      const again = yield* Effect.promise(() =>
        c.registerBroker({
          brokerId: 1,
          clusterId: CLUSTER,
          incarnationId: "AAAAAAAAAAAAAAAAAAAAXA",
          listeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9001, securityProtocol: 0 }],
          features: [
            { name: "metadata.version", minSupportedVersion: 7, maxSupportedVersion: 30 },
            { name: "mirror.version", minSupportedVersion: 0, maxSupportedVersion: 1 }
          ],
          rack: null,
          isMigratingZkBroker: false,
          logDirs: [],
          previousBrokerEpoch: -1n
        })
      )
      expect(again.errorCode).toBe(0)
      // Then it is in no ISR and leads nothing; its partitions have new leaders in new leader epochs.
      const after = partitions()
      for (const p of after) {
        expect(p.isr).not.toContain(1)
        expect(p.leader).not.toBe(1)
      }
      for (const p of led) {
        const q = after.find((x) => x.partitionIndex === p.partitionIndex)!
        expect(q.leaderEpoch).toBeGreaterThan(p.leaderEpoch)
        expect(q.leader).toBeGreaterThan(0)
      }
      yield* Effect.promise(() => c.close())
    })
  )

  it("answers a heartbeat that changes nothing while a slow write is in progress", async () => {
    // Given a cluster whose metadata log appends only when released
    const memory = MetadataLog.makeMemory()
    let release: (() => void) | undefined
    let hold = false
    const log: MetadataLog.MetadataLogService = {
      ...memory,
      append: (records, epoch) =>
        Effect.flatMap(
          Effect.promise(() => (hold ? new Promise<void>((r) => (release = r)) : Promise.resolve())),
          () => memory.append(records, epoch)
        )
    }
    const c = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log })
    await populate(c)
    hold = true
    const slow = c.createTopics({
      topics: [
        { name: "big", numPartitions: 10, replicationFactor: 3, assignments: [], configs: [], mirrorInfo: null }
      ],
      timeoutMs: 1000,
      validateOnly: false
    })
    await new Promise((r) => setTimeout(r, 10))
    expect(release).toBeDefined()
    // When a broker heartbeats, then it is answered before the write commits
    const answered = await Promise.race([
      heartbeat(c, 2, c.current.cluster.brokers.get(2)!.epoch),
      new Promise<"waiting">((r) => setTimeout(() => r("waiting"), 2000))
    ])
    expect(answered).toMatchObject({ errorCode: 0, isFenced: false })
    hold = false
    release!()
    expect((await slow)[0]!.errorCode).toBe(0)
    await c.close()
  })

  it("UpdateFeatures: validateOnly writes nothing, a valid change is committed, a refusal answers every feature", async () => {
    const c = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log: MetadataLog.makeMemory() })
    await populate(c)
    const request = (feature: string, maxVersionLevel: number, upgradeType: number, validateOnly: boolean) => ({
      timeoutMs: 1000,
      featureUpdates: [{ feature, maxVersionLevel, upgradeType, allowDowngrade: false }],
      validateOnly
    })
    const before = c.committedOffset
    const dry = await c.updateFeatures(request("mirror.version", 0, 2, true))
    expect([dry.errorCode, dry.results]).toEqual([0, [{ feature: "mirror.version", errorCode: 0, errorMessage: null }]])
    expect(c.committedOffset).toBe(before)
    expect(FeatureControl.level(c.current.features, "mirror.version")).toBe(1)
    const done = await c.updateFeatures(request("mirror.version", 0, 2, false))
    expect(done.errorCode).toBe(0)
    expect(c.committedOffset).toBeGreaterThan(before)
    expect(FeatureControl.level(c.current.features, "mirror.version")).toBe(0)
    const unknown = await c.updateFeatures(request("no.such.feature", 1, 1, false))
    const message =
      "The update failed for all features since the following feature had an error: Invalid update version 1 for feature no.such.feature. Local controller 1000 does not support this feature."
    expect([unknown.errorCode, unknown.errorMessage]).toEqual([Errors.ErrorCode.INVALID_UPDATE_VERSION, message])
    expect(unknown.results).toEqual([
      { feature: "no.such.feature", errorCode: Errors.ErrorCode.INVALID_UPDATE_VERSION, errorMessage: message }
    ])
    await c.close()
  })

  it("refuses requests once closed, and fails those that arrived while it closed", async () => {
    const c = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log: MetadataLog.makeMemory() })
    await populate(c)
    const closing = c.close()
    const during = c.createPartitions({
      topics: [{ name: "orders", count: 5, assignments: null }],
      timeoutMs: 1000,
      validateOnly: false
    })
    await closing
    await expect(during).rejects.toBeInstanceOf(ControllerError.ControllerClosed)
    await expect(c.registerBroker(await registration(4))).rejects.toBeInstanceOf(ControllerError.ControllerClosed)
  })

  it("writes a BumpLeaderEpochs' producer id floor in the batch of its epoch bump; a replay and a snapshot keep it", async () => {
    const log = MetadataLog.makeMemory()
    const c = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log })
    await populate(c)
    const block = await c.allocateProducerIds(1, c.current.cluster.brokers.get(1)!.epoch)
    expect(Either.getOrThrow(block).firstProducerId).toBe(0n)
    const topicId = c.current.replication.topicIdsByName.get("orders")!
    const res = await c.bumpLeaderEpochs({
      topics: [{ topicId, partitions: [{ partitionIndex: 0, minLeaderEpoch: 3 }] }],
      minProducerId: 4321n
    })
    expect(res.errorCode).toBe(0)
    expect(c.current.producerIds).toEqual({ nextProducerId: 4322n, floor: 4322n })
    const batches = (await Effect.runPromise(Effect.orDie(log.readFrom(0)))).batches.map(
      (b) => Either.getOrThrow(MetadataLog.decodeBatch(b)).records
    )
    const withFloor = batches.filter((rs) => rs.some((r) => r.type === "ProducerIdsRecord" && r.data.brokerId === -1))
    expect(withFloor.map((rs) => rs.map((r) => r.type))).toEqual([["PartitionChangeRecord", "ProducerIdsRecord"]])
    // Asked again with a lower id: the floor already covers it, nothing is written.
    const offset = c.committedOffset
    await c.bumpLeaderEpochs({ topics: [], minProducerId: 4000n })
    expect(c.committedOffset).toBe(offset)
    expect(c.current).toEqual(await Effect.runPromise(replayOfLog(log)))
    const next = Either.getOrThrow(await c.allocateProducerIds(2, c.current.cluster.brokers.get(2)!.epoch))
    expect(next.firstProducerId).toBe(4322n)
    await c.close()
    const snapshotted = MetadataLog.makeMemory()
    const s1 = await QuorumController.open({
      nodeId: 1000,
      clusterId: CLUSTER,
      log: snapshotted,
      snapshotEveryRecords: 3
    })
    await populate(s1)
    await s1.bumpLeaderEpochs({ topics: [], minProducerId: 99n })
    await s1.allocateProducerIds(1, s1.current.cluster.brokers.get(1)!.epoch)
    const before = s1.current.producerIds
    expect(before).toEqual({ nextProducerId: 1100n, floor: 100n })
    await s1.close()
    expect((await Effect.runPromise(snapshotted.latestSnapshot))._tag).toBe("Some")
    const s2 = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log: snapshotted })
    expect(s2.current.producerIds).toEqual(before)
    await s2.close()
  })

  it("restarts from a snapshot plus the log tail into the same state", async () => {
    const log = MetadataLog.makeMemory()
    const first = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log, snapshotEveryRecords: 5 })
    await populate(first)
    // more records after the last snapshot: a log tail to replay
    await first.createPartitions({
      topics: [{ name: "orders", count: 4, assignments: null }],
      timeoutMs: 1000,
      validateOnly: false
    })
    const before = first.current
    await first.close()
    expect((await Effect.runPromise(log.latestSnapshot))._tag).toBe("Some")

    const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log })
    const after = second.current
    const describe = (s: typeof before) =>
      ReplicationControl.describe(s.replication).map((t) => ({
        ...t,
        partitions: t.partitions.map((p) => ({ ...p }))
      }))
    expect(describe(after)).toEqual(describe(before))
    expect([...after.cluster.brokers.keys()]).toEqual([...before.cluster.brokers.keys()])
    expect(after.configs).toEqual(before.configs)
    expect(second.committedOffset).toBe(first.committedOffset)
    await second.close()
  })
})

const registration = async (brokerId: number) => ({
  brokerId,
  clusterId: CLUSTER,
  incarnationId: "AAAAAAAAAAAAAAAAAAAAZA",
  listeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9100, securityProtocol: 0 }],
  features: [],
  rack: null,
  isMigratingZkBroker: false,
  logDirs: [],
  previousBrokerEpoch: -1n
})
