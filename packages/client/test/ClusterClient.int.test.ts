import { ApiVersions, CreateTopics, Errors, Fetch, Metadata, Produce, RecordBatch } from "@clustermirror/protocol"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ServerProcess } from "@clustermirror/testkit"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ClientClosed, KafkaError, type RequestTimeout } from "../src/ClientError.js"
import * as ClusterClient from "../src/ClusterClient.js"
import * as Fake from "./FakeBroker.js"

const NODE_ID = 3

/** The cluster id a node recorded in its data dir's `meta.properties` (Kafka's format) when it started. */
const storedClusterId = (dataDir: string | undefined): string => {
  if (dataDir === undefined) throw new Error("the server has no known data dir")
  const m = /^cluster\.id=(.+)$/m.exec(fs.readFileSync(path.join(dataDir, "meta.properties"), "utf8"))
  if (m === null) throw new Error(`no cluster.id in ${dataDir}/meta.properties`)
  return m[1]!.trim()
}

const fastRetry = { attempts: 4, baseMs: 10, maxMs: 50, jitter: 0 }

const produceBody = (topic: string, partition: number, values: ReadonlyArray<string>) => ({
  transactionalId: null,
  acks: -1,
  timeoutMs: 5000,
  topicData: [
    {
      name: topic,
      partitionData: [
        {
          index: partition,
          records: RecordBatch.build({ records: values.map((v) => ({ value: Buffer.from(v) })), timestamp: Date.now() })
        }
      ]
    }
  ]
})

describe("ClusterClient against our broker", () => {
  let broker: ServerProcess.ServerHandle
  let clusterId: string
  let client: ClusterClient.Client

  beforeAll(async () => {
    // The server's own defaults (no config file), as in production, on a free port and a temp data dir.
    broker = await ServerProcess.start({ args: ["--node-id", String(NODE_ID)], tempPrefix: "cm-cluster-client-" })
    clusterId = storedClusterId(broker.dataDir)
    client = new ClusterClient.Client({ bootstrapServers: [broker.bootstrap], retry: fastRetry })
  })
  afterAll(async () => {
    await client?.close()
    await broker?.stop()
  })

  it("bootstraps: brokers, cluster id and controller from Metadata", async () => {
    const snap = await client.metadata([])
    expect(snap.clusterId).toBe(clusterId)
    expect([...snap.brokers.keys()]).toEqual([NODE_ID])
    expect(snap.brokers.get(NODE_ID)!.port).toBe(broker.port)
  })

  it("creates a topic through any broker, caches its leaders and routes to them", async () => {
    const created = await client.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: "routed", numPartitions: 3, replicationFactor: 1 }],
      timeoutMs: 5000
    })
    expect(created.topics[0]!.errorCode).toBe(0)
    const leader = await client.leaderFor("routed", 2)
    expect(leader.nodeId).toBe(NODE_ID)
    expect(leader.leaderEpoch).toBeGreaterThanOrEqual(0)
    const cached = client.snapshot.topics.get("routed")!
    expect([...cached.partitions.keys()].sort()).toEqual([0, 1, 2])
    const grouped = await client.leadersFor([0, 1, 2].map((partition) => ({ topic: "routed", partition })))
    expect([...grouped.keys()]).toEqual([NODE_ID])
    expect(grouped.get(NODE_ID)!.length).toBe(3)
  })

  it("produces then fetches through the leader", async () => {
    const produced = await client.sendToLeader(
      "routed",
      1,
      Produce.api,
      () => produceBody("routed", 1, ["x", "y", "z"]),
      (r) => r.responses[0]!.partitionResponses[0]!.errorCode
    )
    expect(produced.responses[0]!.partitionResponses[0]!.baseOffset).toBe(0n)
    const topicId = client.snapshot.topics.get("routed")!.topicId
    const fetched = await client.sendToLeader(
      "routed",
      1,
      Fetch.api,
      (leader) => ({
        replicaId: -1,
        maxWaitMs: 100,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          {
            topic: "routed",
            topicId,
            partitions: [
              { partition: 1, currentLeaderEpoch: leader.leaderEpoch, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }
            ]
          }
        ]
      }),
      (r) => (r.errorCode !== 0 ? r.errorCode : r.responses[0]!.partitions[0]!.errorCode)
    )
    const records = fetched.responses[0]!.partitions[0]!.records
    expect(records).not.toBeNull()
    const values = Either.getOrThrow(RecordBatch.records(Buffer.from(records!))).map((r) =>
      Buffer.from(r.value!).toString()
    )
    expect(values).toEqual(["x", "y", "z"])
  })

  it("fails with KafkaError UNKNOWN_TOPIC_OR_PARTITION for a missing topic after bounded retries", async () => {
    const started = Date.now()
    const error = await client.leaderFor("no-such-topic", 0).then(
      () => null,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(KafkaError)
    expect((error as KafkaError).errorCode).toBe(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect(Date.now() - started).toBeLessThan(2000)
  })
})

/**
 * A fake cluster of scripted brokers sharing one metadata view. `leader` is the node id the
 * metadata names as leader of t-0.
 */
const fakeCluster = async (
  ids: ReadonlyArray<number>,
  onProduce: (nodeId: number, req: Fake.Incoming) => void,
  silent: ReadonlySet<number> = new Set()
) => {
  const state = { leader: ids[0]!, leaderEpoch: 5, metadataRequests: 0, produced: new Map<number, number>() }
  const ports = new Map<number, number>()
  const brokers = await Promise.all(
    ids.map((id) =>
      Fake.start((req) => {
        if (silent.has(id)) return
        if (req.apiKey === ApiVersions.api.key) return Fake.answerApiVersions(req)
        if (req.apiKey === Metadata.api.key) {
          state.metadataRequests++
          const asked = Fake.decode(req, Metadata.api)
          return Fake.respond(req, Metadata.api, req.apiVersion, {
            brokers: ids.map((n) => ({ nodeId: n, host: "127.0.0.1", port: ports.get(n)!, rack: null })),
            clusterId: "fake-cluster",
            controllerId: ids[0]!,
            topics: (asked.topics ?? [{ name: "t" }]).map((t) =>
              t.name === "t"
                ? {
                    errorCode: 0,
                    name: "t",
                    topicId: "AAAAAAAAAAAAAAAAAAAAAg",
                    partitions: [
                      {
                        errorCode: 0,
                        partitionIndex: 0,
                        leaderId: state.leader,
                        leaderEpoch: state.leaderEpoch,
                        replicaNodes: [...ids],
                        isrNodes: [...ids]
                      }
                    ]
                  }
                : { errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name: t.name, partitions: [] }
            )
          })
        }
        if (req.apiKey === Produce.api.key) {
          state.produced.set(id, (state.produced.get(id) ?? 0) + 1)
          return onProduce(id, req)
        }
      })
    )
  )
  for (const [i, id] of ids.entries()) ports.set(id, brokers[i]!.port)
  return {
    state,
    bootstrap: [`127.0.0.1:${brokers[0]!.port}`],
    close: () => Promise.all(brokers.map((b) => b.close()))
  }
}

const answerProduce = (req: Fake.Incoming, errorCode: number, baseOffset: bigint) =>
  Fake.respond(req, Produce.api, req.apiVersion, {
    responses: [{ name: "t", partitionResponses: [{ index: 0, errorCode, baseOffset }] }]
  })

describe("ClusterClient leader routing against scripted brokers", () => {
  for (const code of [
    Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER,
    Errors.ErrorCode.FENCED_LEADER_EPOCH,
    Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
  ]) {
    it(`refreshes metadata on error ${code} and retries at the new leader`, async () => {
      const cluster = await fakeCluster([1, 2], (nodeId, req) => {
        if (nodeId === 1) {
          // Leadership moved to node 2 (with a new epoch) before node 1 answers.
          cluster.state.leader = 2
          cluster.state.leaderEpoch = 6
          answerProduce(req, code, -1n)
        } else answerProduce(req, 0, 42n)
      })
      const client = new ClusterClient.Client({ bootstrapServers: cluster.bootstrap, retry: fastRetry })
      try {
        const epochs: Array<number> = []
        const res = await client.sendToLeader(
          "t",
          0,
          Produce.api,
          (leader) => {
            epochs.push(leader.leaderEpoch)
            return produceBody("t", 0, ["v"])
          },
          (r) => r.responses[0]!.partitionResponses[0]!.errorCode
        )
        expect(res.responses[0]!.partitionResponses[0]!.baseOffset).toBe(42n)
        expect(epochs).toEqual([5, 6])
        expect(cluster.state.produced.get(1)).toBe(1)
        expect(cluster.state.produced.get(2)).toBe(1)
        expect(cluster.state.metadataRequests).toBeGreaterThanOrEqual(2)
      } finally {
        await client.close()
        await cluster.close()
      }
    })
  }

  it("gives up with KafkaError after the bounded attempts when the leader never answers well", async () => {
    const cluster = await fakeCluster([1], (_, req) => answerProduce(req, Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER, -1n))
    const client = new ClusterClient.Client({ bootstrapServers: cluster.bootstrap, retry: fastRetry })
    try {
      const error = await client
        .sendToLeader(
          "t",
          0,
          Produce.api,
          () => produceBody("t", 0, ["v"]),
          (r) => r.responses[0]!.partitionResponses[0]!.errorCode
        )
        .then(
          () => null,
          (e: unknown) => e
        )
      expect(error).toBeInstanceOf(KafkaError)
      expect((error as KafkaError).errorCode).toBe(Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER)
      expect(cluster.state.produced.get(1)).toBe(fastRetry.attempts)
    } finally {
      await client.close()
      await cluster.close()
    }
  })

  it("does not retry a non-retriable error", async () => {
    const cluster = await fakeCluster([1], (_, req) => answerProduce(req, Errors.ErrorCode.MESSAGE_TOO_LARGE, -1n))
    const client = new ClusterClient.Client({ bootstrapServers: cluster.bootstrap, retry: fastRetry })
    try {
      const error = await client
        .sendToLeader(
          "t",
          0,
          Produce.api,
          () => produceBody("t", 0, ["v"]),
          (r) => r.responses[0]!.partitionResponses[0]!.errorCode
        )
        .then(
          () => null,
          (e: unknown) => e
        )
      expect((error as KafkaError).errorCode).toBe(Errors.ErrorCode.MESSAGE_TOO_LARGE)
      expect(cluster.state.produced.get(1)).toBe(1)
    } finally {
      await client.close()
      await cluster.close()
    }
  })
})

describe("ClusterClient Effect service", () => {
  // Live clock: the fan-out timeout is real time against a silent peer.
  it.live("fans out to every broker with a timeout, merges, and closes with its scope", () =>
    Effect.gen(function* () {
      const cluster = yield* Effect.acquireRelease(
        Effect.promise(() => fakeCluster([1, 2, 3], () => {}, new Set([3]))),
        (c) => Effect.promise(() => c.close())
      )
      const closedClient = yield* Effect.gen(function* () {
        const cc = yield* ClusterClient.ClusterClient
        const merged = yield* cc.forEachBroker(
          (b) => cc.sendToNode(b.nodeId, Metadata.api, { topics: [] }).pipe(Effect.map((r) => r.clusterId)),
          (results) => ({
            ok: results.filter((r) => Either.isRight(r.result)).map((r) => r.broker.nodeId),
            timedOut: results.flatMap((r) =>
              Either.isLeft(r.result) && r.result.left._tag === "RequestTimeout"
                ? [(r.result.left as RequestTimeout).api]
                : []
            )
          }),
          { concurrency: 3, timeoutMs: 300 }
        )
        expect(merged.ok.sort()).toEqual([1, 2])
        expect(merged.timedOut).toEqual(["fan-out to broker 3"])
        const leader = yield* cc.leaderFor("t", 0)
        expect(leader.nodeId).toBe(1)
        return cc.client
      }).pipe(
        Effect.provide(ClusterClient.layer({ bootstrapServers: cluster.bootstrap, retry: fastRetry })),
        Effect.scoped
      )
      const after = yield* Effect.promise(() =>
        closedClient.metadata([]).then(
          () => null,
          (e: unknown) => e
        )
      )
      expect(after).toBeInstanceOf(ClientClosed)
    }).pipe(Effect.scoped)
  )
})
