/**
 * MirrorLeaderEpoch between our broker and a follower over TCP (KIP-1279 §6.4, JR36): the leader's Fetch
 * handler answers a follower of a mirror partition with the latest epoch in its log (file-backed), the
 * follower's replica fetcher rejects batches of an epoch it has not learned, learns it, and appends them on
 * the next fetch. A topic without a mirror name is answered -1.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Connection } from "@clustermirror/client"
import { type LeaderEndpoint, NetworkLeaderEndpoint, ReplicaFetcher } from "@clustermirror/fetcher"
import { Fetch, RecordBatch } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import { ProducerIdManager } from "@clustermirror/transaction-coordinator"
import { register } from "../src/KafkaApis.js"
import type * as MetadataView from "../src/MetadataView.js"
import { ReplicaManager } from "@clustermirror/replication/ReplicaManager"
import { Handlers } from "@clustermirror/network/RequestChannel"
import * as SocketServer from "@clustermirror/network/SocketServer"

const MIRRORED = { name: "mirrored", id: "q83vEjRWeJCrze8SNFZ4kA" }
const PLAIN = { name: "plain", id: "AAAAAAAAAAAAAAAAAAAAAQ" }
const LEADER_EPOCH = 21

const batch = (tag: string, epoch: number) =>
  RecordBatch.build({
    records: [0, 1].map((i) => ({ value: Buffer.from(`${tag}#${i}`) })),
    timestamp: 1,
    partitionLeaderEpoch: epoch
  })

/** Every batch of a log, as separate buffers. */
const batches = (log: PartitionLog.PartitionLog): string[] => {
  const { records } = log.read(log.logStartOffset, 1 << 20, { maxOffset: log.logEndOffset })
  return RecordBatch.split(records).batches.map((b) =>
    records.subarray(b.position, b.position + b.size).toString("hex")
  )
}

describe("MirrorLeaderEpoch over the wire", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mle-"))
  const leaderStore = PartitionLogStore.makeFileStore(path.join(dir, "leader"))
  const followerStore = PartitionLogStore.makeFileStore(path.join(dir, "follower"))
  const replicas = new ReplicaManager({ store: leaderStore, nodeId: 1 })
  let server: SocketServer.SocketServer
  let connection: Connection.Connection

  const topicView = (t: { name: string; id: string }, readOnly: boolean): MetadataView.TopicView => ({
    name: t.name,
    topicId: t.id,
    partitions: [
      { partitionId: 0, leader: 1, leaderEpoch: LEADER_EPOCH, partitionEpoch: 0, replicas: [1, 2], isr: [1, 2] }
    ],
    configs: new Map(),
    readOnly
  })
  const topics = [topicView(MIRRORED, true), topicView(PLAIN, false)]

  beforeAll(async () => {
    for (const t of [MIRRORED, PLAIN]) {
      const { state } = replicas.applyRegistration(
        t.name,
        0,
        t.id,
        { replicas: [1, 2], isr: [1, 2], leader: 1, leaderEpoch: LEADER_EPOCH, partitionEpoch: 0 },
        PartitionLog.defaultConfig,
        false
      )
      // Offsets 0-1 at batch epoch 2, as a mirror fetcher appends them (source epochs kept).
      state.log.appendAsFollower(batch(t.name, 2), 0)
    }
    const admin: MetadataView.TopicAdmin = {
      createTopics: async () => [],
      allocateProducerIds: async () => ({ firstProducerId: 0n, size: 0n })
    }
    const handlers = new Handlers()
    register(handlers, {
      config: { ...BrokerConfig.defaults, nodeId: 1 },
      view: {
        clusterId: "mle-test",
        controllerId: () => 1,
        topicByName: (name) => topics.find((t) => t.name === name),
        topicById: (id) => topics.find((t) => t.topicId === id),
        topics: () => topics,
        brokers: () => [],
        broker: () => undefined
      },
      admin,
      replicas,
      producerIds: new ProducerIdManager.ProducerIdManager({
        allocateBlock: admin.allocateProducerIds,
        floor: () => -1n
      })
    })
    server = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1 << 20,
      handle: handlers.frameHandler(() => {})
    })
    connection = await Connection.open({ host: "127.0.0.1", port: server.port, clientId: "broker-2-fetcher-1" })
  })

  afterAll(async () => {
    await connection?.close()
    await server?.close()
    replicas.close()
    followerStore.closeAll()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  /** A follower (broker 2) of one topic; records what it sent and what the leader answered. */
  const follower = (t: { name: string; id: string }) => {
    const inner = NetworkLeaderEndpoint.make({
      leaderId: 1,
      brokerId: 2,
      fetchVersion: Either.getOrThrow(connection.versionFor(Fetch.api)),
      connection: { request: (api, version, body) => connection.request(api, version, body) }
    })
    const sent: number[] = []
    const answered: number[] = []
    const endpoint: LeaderEndpoint.LeaderEndpoint = {
      ...inner,
      fetch: async (request, version) => {
        for (const tp of request.topics) for (const p of tp.partitions) sent.push(p.mirrorLeaderEpoch)
        const response = await inner.fetch(request, version)
        for (const tp of response.responses) for (const p of tp.partitions) answered.push(p.mirrorLeaderEpoch)
        return response
      }
    }
    const log = followerStore.open(t.name, 0, {}, t.id)
    const fetcher = new ReplicaFetcher.ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      endpoint,
      config: { replicaFetchWaitMaxMs: 0, replicaFetchBackoffMs: 1 },
      isMirrorTopic: () => true
    })
    fetcher.addPartitions([{ topic: t.name, topicId: t.id, partition: 0, log, currentLeaderEpoch: LEADER_EPOCH }])
    return { fetcher, log, sent, answered }
  }

  it("a follower starting at 0 fetches, rejects epoch 2, learns 2 from the leader, refetches and appends", async () => {
    expect(connection.versionFor(Fetch.api)).toEqual(Either.right(Fetch.api.maxVersion))
    const f = follower(MIRRORED)
    const leaderLog = replicas.get(MIRRORED.name, 0)!.log

    await f.fetcher.runOnce()
    expect(f.log.logEndOffset).toBe(0)
    await f.fetcher.runOnce()
    expect(f.log.logEndOffset).toBe(2)
    await f.fetcher.runOnce()

    expect(f.sent).toEqual([0, 2, 2])
    expect(f.answered).toEqual([2, 2, 2])
    expect(batches(f.log)).toEqual(batches(leaderLog))
    expect(leaderLog.logEndOffset).toBe(2)
    // The leader learned the follower's position from its fetch offsets: 0, 0, then 2.
    expect(replicas.get(MIRRORED.name, 0)!.followers.get(2)?.logEndOffset).toBe(2)
    expect(leaderLog.highWatermark).toBe(2)
  })

  it("answers -1 for a topic without a mirror name", async () => {
    const f = follower(PLAIN)
    await f.fetcher.runOnce()
    expect(f.sent).toEqual([0])
    expect(f.answered).toEqual([-1])
    expect(f.log.logEndOffset).toBe(0)
  })
})
