/**
 * The control plane of KIP-1279 on a running cluster: a mirror is created, a topic started with the
 * source's topic id and partition count, produce refused while it mirrors, allowed once stopped, and the
 * mirror deleted — every step a request to a broker, forwarded to the controller.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import {
  CreateClusterMirror,
  DeleteClusterMirror,
  DeleteRecords,
  Errors,
  Metadata,
  Produce,
  RecordBatch,
  StartMirrorTopics,
  StopMirrorTopics
} from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

const SOURCE_TOPIC_ID = "q83vEjRWeJCrze8SNFZ4kA"

describe("cluster mirror operations", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-"))
  let cluster: Node.Embedded
  let conn: Connection.Connection

  beforeAll(async () => {
    cluster = await Node.embedded(3, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200
    })
    conn = await Connection.open({ host: "127.0.0.1", port: cluster.brokers[0]!.port })
  })
  afterAll(async () => {
    await conn.close()
    await cluster.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  /** Produces one record to partition 0 of "orders" on its leader; returns the partition's error code. */
  const produce = async () => {
    const leader = (await leaderOf("orders")).partitions.find((p) => p.partitionIndex === 0)!.leaderId
    const port = cluster.brokers.find((b) => b.nodeId === leader)!.port
    const to = await Connection.open({ host: "127.0.0.1", port })
    const res = await to.call(Produce.api, {
      acks: -1,
      timeoutMs: 5000,
      topicData: [
        {
          name: "orders",
          partitionData: [
            { index: 0, records: RecordBatch.build({ records: [{ value: Buffer.from("x") }], timestamp: 1 }) }
          ]
        }
      ]
    })
    await to.close()
    return res.responses[0]!.partitionResponses[0]!.errorCode
  }

  /** DeleteRecords up to the high watermark of "orders"-0 on its leader; returns the partition's answer. */
  const deleteRecords = async () => {
    const leader = (await leaderOf("orders")).partitions.find((p) => p.partitionIndex === 0)!.leaderId
    const port = cluster.brokers.find((b) => b.nodeId === leader)!.port
    const to = await Connection.open({ host: "127.0.0.1", port })
    const res = await to.call(DeleteRecords.api, {
      topics: [{ name: "orders", partitions: [{ partitionIndex: 0, offset: -1n }] }],
      timeoutMs: 10_000
    })
    await to.close()
    const p = res.topics[0]!.partitions[0]!
    return [p.errorCode, p.lowWatermark]
  }

  const leaderOf = async (topic: string) => {
    for (let i = 0; i < 100; i++) {
      const md = await conn.call(Metadata.api, {
        topics: [{ name: topic, topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
        allowAutoTopicCreation: false
      })
      const t = md.topics[0]!
      if (t.errorCode === 0 && t.partitions.every((p) => p.leaderId >= 0)) return t
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(`no leaders for ${topic}`)
  }

  it("creates a mirror, starts a topic with the source's id, refuses produce until stopped, deletes the mirror", async () => {
    const config = [
      { name: "bootstrap.servers", value: "127.0.0.1:19999" },
      { name: "mirror.source.cluster.id", value: "source-cluster" }
    ]
    expect((await conn.call(CreateClusterMirror.api, { mirrorName: "m", config })).errorCode).toBe(0)
    expect((await conn.call(CreateClusterMirror.api, { mirrorName: "m", config })).errorCode).toBe(
      Errors.ErrorCode.CLUSTER_MIRROR_ALREADY_EXISTS
    )
    const missing = await conn.call(CreateClusterMirror.api, { mirrorName: "n", config: [config[0]!] })
    expect(missing.errorCode).toBe(Errors.ErrorCode.INVALID_REQUEST)

    const started = await conn.call(StartMirrorTopics.api, {
      mirrorName: "m",
      topics: [{ topicId: SOURCE_TOPIC_ID, topicName: "orders", numPartitions: 3 }]
    })
    expect(started.topics.map((t) => [t.name, t.errorCode])).toEqual([["orders", 0]])
    const topic = await leaderOf("orders")
    expect(topic.topicId).toBe(SOURCE_TOPIC_ID)
    expect(topic.partitions.length).toBe(3)

    expect(await produce()).toBe(Errors.ErrorCode.READ_ONLY_TOPIC)
    // The source's deletions reach a mirror topic through the mirror; clients may not delete records in it.
    expect(await deleteRecords()).toEqual([Errors.ErrorCode.READ_ONLY_TOPIC, -1n])

    const wrongMirror = await conn.call(StopMirrorTopics.api, {
      mirrorName: "other",
      topics: [{ topicName: "orders" }]
    })
    expect(wrongMirror.topics[0]!.errorCode).not.toBe(0)
    const notEmpty = await conn.call(DeleteClusterMirror.api, { mirrorName: "m" })
    expect(notEmpty.errorCode).toBe(Errors.ErrorCode.CLUSTER_MIRROR_NOT_EMPTY)

    const stopped = await conn.call(StopMirrorTopics.api, { mirrorName: "m", topics: [{ topicName: "orders" }] })
    expect(stopped.topics.map((t) => t.errorCode)).toEqual([0])
    for (let i = 0; i < 100 && (await produce()) !== 0; i++) await new Promise((r) => setTimeout(r, 50))
    expect(await produce()).toBe(0)
    // Stopped: the log start moves to the high watermark (the records produced, after the stop's control batch).
    const [code, lowWatermark] = await deleteRecords()
    expect(code).toBe(0)
    expect(lowWatermark).toBeGreaterThan(1n)

    // Delete needs every partition STOPPED; the broker waits for those still stopping.
    const deleted = await conn.call(DeleteClusterMirror.api, { mirrorName: "m" })
    expect(deleted.errorCode).toBe(0)
    expect((await conn.call(DeleteClusterMirror.api, { mirrorName: "m" })).errorCode).toBe(
      Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR
    )
  })
})
