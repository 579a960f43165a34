/**
 * DeleteRecords (key 21) on a controller and three broker processes, with Kafka's own tool and kafkajs:
 *
 * 1. `kafka-delete-records --offset-json-file` moves the log start of an RF=3 topic on every replica (each
 *    broker's log-state checkpoint, ListOffsets earliest, a consumer from the beginning), answering the
 *    low watermark Kafka's tool prints; an offset above the high watermark is OFFSET_OUT_OF_RANGE.
 * 2. After every broker is SIGKILLed and restarted, the log starts are still there.
 * 3. kafkajs `admin.deleteTopicRecords` moves it further.
 * 4. A mirror topic (mirrored from a second server of ours) refuses the tool with READ_ONLY_TOPIC while it
 *    mirrors; a deletion on the source reaches it through the mirror; once stopped, the tool works on it.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ClusterClient } from "@clustermirror/client"
import { DeleteRecords, Errors } from "@clustermirror/protocol"
import { JavaTools, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClusterServer, type ServerHandle, cli, startCluster, startServer } from "./harness.js"

const TOPIC = "purged"
const RECORDS = 100

/** The log start a broker's copy of a partition has checkpointed (its `log-state-checkpoint`). */
const checkpointedLogStart = (broker: ClusterServer, topic: string, partition: number): number => {
  const file = path.join(broker.logDir, `${topic}-${partition}`, "log-state-checkpoint")
  return JSON.parse(fs.readFileSync(file, "utf8")).logStartOffset
}

describe("DeleteRecords on a 3-broker cluster (separate processes)", () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>
  let source: ServerHandle
  let bootstrap: string
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cm-delete-records-"))

  /** Runs kafka-delete-records with these offsets; its stdout (the tool exits 0 also when partitions fail). */
  const deleteRecords = async (
    via: string,
    partitions: ReadonlyArray<{ topic: string; partition: number; offset: number }>
  ) => {
    const file = path.join(tmp, `offsets-${Date.now()}.json`)
    fs.writeFileSync(file, JSON.stringify({ partitions, version: 1 }))
    const r = await JavaTools.deleteRecords(["--bootstrap-server", via, "--offset-json-file", file])
    return JavaTools.expectSuccess("kafka-delete-records", r).stdout
  }

  const offsets = async (via: ServerHandle, topic: string) => {
    const admin = via.kafka("delete-records").admin()
    await admin.connect()
    try {
      const os = await admin.fetchTopicOffsets(topic)
      return os.sort((a, b) => a.partition - b.partition).map((o) => [Number(o.low), Number(o.high)])
    } finally {
      await admin.disconnect()
    }
  }

  const metadata = async (via: ServerHandle, topic: string) => {
    const admin = via.kafka("delete-records").admin()
    await admin.connect()
    try {
      return (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions
    } finally {
      await admin.disconnect()
    }
  }

  const produce = async (via: ServerHandle, topic: string, partitions: ReadonlyArray<number>, n: number) => {
    const producer = via.kafka("delete-records").producer({ idempotent: true })
    await producer.connect()
    try {
      for (const partition of partitions)
        await producer.send({
          topic,
          acks: -1,
          messages: Array.from({ length: n }, (_, i) => ({ partition, value: `${topic}-${partition}-${i}` }))
        })
    } finally {
      await producer.disconnect()
    }
  }

  /** The records of one partition from the beginning, with Kafka's console consumer. */
  const consume = async (topic: string, partition: number, max: number) => {
    const r = await JavaTools.consoleConsumer([
      "--bootstrap-server",
      bootstrap,
      "--topic",
      topic,
      "--partition",
      String(partition),
      "--offset",
      "earliest",
      "--max-messages",
      String(max),
      "--timeout-ms",
      "20000"
    ])
    return JavaTools.lines(r.stdout)
  }

  beforeAll(async () => {
    cluster = await startCluster({
      brokers: 3,
      controllerConfig: { "broker.session.timeout.ms": 6000 },
      brokerConfig: { "broker.heartbeat.interval.ms": 500, "replica.lag.time.max.ms": 10_000 }
    })
    bootstrap = cluster.brokers.map((b) => b.bootstrap).join(",")
    source = await startServer({ config: { "num.partitions": 1 } })
  })
  afterAll(async () => {
    await source?.stop()
    await cluster?.stop()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it("kafka-delete-records moves the log start on every replica, and it survives a restart of every broker", async () => {
    const [first] = cluster.brokers
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        "2",
        "--replication-factor",
        "3"
      ])
    )
    await Wait.eventually("full ISRs", async () => {
      const ps = await metadata(first!, TOPIC)
      return ps.length === 2 && ps.every((p) => p.leader >= 0 && p.isr.length === 3) ? true : undefined
    })
    await produce(first!, TOPIC, [0, 1], RECORDS)

    const out = await deleteRecords(bootstrap, [
      { topic: TOPIC, partition: 0, offset: 40 },
      { topic: TOPIC, partition: 1, offset: -1 }
    ])
    expect(out).toContain(`partition: ${TOPIC}-0\tlow_watermark: 40`)
    expect(out).toContain(`partition: ${TOPIC}-1\tlow_watermark: ${RECORDS}`)
    // Answered once every in-sync replica had moved its log start: each has checkpointed it.
    for (const b of cluster.brokers) {
      expect(checkpointedLogStart(b, TOPIC, 0)).toBe(40)
      expect(checkpointedLogStart(b, TOPIC, 1)).toBe(RECORDS)
    }
    expect(await offsets(first!, TOPIC)).toEqual([
      [40, RECORDS],
      [RECORDS, RECORDS]
    ])
    const rest = await consume(TOPIC, 0, RECORDS - 40)
    expect(rest).toHaveLength(RECORDS - 40)
    expect(rest[0]).toBe(`${TOPIC}-0-40`)

    const above = await deleteRecords(bootstrap, [{ topic: TOPIC, partition: 0, offset: RECORDS + 1 }])
    expect(above).toMatch(new RegExp(`partition: ${TOPIC}-0\\terror: .*OffsetOutOfRange`))

    // Every broker dies at once: the log starts can only come from their own disks.
    for (const b of cluster.brokers) await b.kill("SIGKILL")
    for (const b of cluster.brokers) await b.restart()
    await Wait.eventually(
      "leaders after the restart",
      async () => {
        const ps = await metadata(first!, TOPIC)
        return ps.length === 2 && ps.every((p) => p.leader >= 0) ? true : undefined
      },
      120_000,
      500
    )
    expect(
      await Wait.eventually(
        "ListOffsets from the new leaders",
        async () => {
          try {
            return await offsets(first!, TOPIC)
          } catch {
            return undefined
          }
        },
        60_000,
        500
      )
    ).toEqual([
      [40, RECORDS],
      [RECORDS, RECORDS]
    ])
    for (const b of cluster.brokers) expect(checkpointedLogStart(b, TOPIC, 0)).toBe(40)

    // kafkajs: admin.deleteTopicRecords, through the leaders it finds.
    const admin = first!.kafka("delete-records").admin()
    await admin.connect()
    try {
      await Wait.eventually(
        "kafkajs deleteTopicRecords",
        async () => {
          try {
            // kafkajs finds the leaders in its metadata cache, which only a metadata request fills.
            await admin.fetchTopicMetadata({ topics: [TOPIC] })
            await admin.deleteTopicRecords({ topic: TOPIC, partitions: [{ partition: 0, offset: "70" }] })
            return true
          } catch {
            return undefined
          }
        },
        60_000,
        500
      )
    } finally {
      await admin.disconnect()
    }
    expect((await offsets(first!, TOPIC))[0]).toEqual([70, RECORDS])
    await Wait.eventually(
      "every replica at log start 70",
      async () => (cluster.brokers.every((b) => checkpointedLogStart(b, TOPIC, 0) === 70) ? true : undefined),
      60_000,
      500
    )
  })

  it("refuses a mirror topic with READ_ONLY_TOPIC, follows the source's deletions, and deletes once stopped", async () => {
    const mirrored = "mirrored"
    JavaTools.expectSuccess(
      "kafka-topics --create (source)",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        source.bootstrap,
        "--create",
        "--topic",
        mirrored,
        "--partitions",
        "1",
        "--replication-factor",
        "1"
      ])
    )
    await produce(source, mirrored, [0], RECORDS)
    const config = path.join(tmp, "mirror.properties")
    fs.writeFileSync(config, `bootstrap.servers=${source.bootstrap}\n`)
    const create = await cli(["--bootstrap-server", bootstrap, "--create", "--mirror", "dr", "--mirror-config", config])
    expect(create.code).toBe(0)
    const start = await cli(["--bootstrap-server", bootstrap, "--start", "--mirror", "dr", "--topics", mirrored])
    expect(start.code).toBe(0)
    const destination = cluster.brokers[0]!
    await Wait.eventually(
      "the mirror caught up",
      async () => {
        try {
          const [p] = await offsets(destination, mirrored)
          return p![1] === RECORDS ? true : undefined
        } catch {
          return undefined
        }
      },
      120_000,
      500
    )

    // Kafka 4.4's tool names error 134 after its own (later) use of that code, so the code is read with our client.
    const refused = await deleteRecords(bootstrap, [{ topic: mirrored, partition: 0, offset: 10 }])
    expect(refused).toContain(`partition: ${mirrored}-0\terror: `)
    const client = new ClusterClient.Client({ bootstrapServers: bootstrap.split(","), requestTimeoutMs: 30_000 })
    try {
      const leader = await client.leaderFor(mirrored, 0)
      const res = await client.sendToNode(leader.nodeId, DeleteRecords.api, {
        topics: [{ name: mirrored, partitions: [{ partitionIndex: 0, offset: 10n }] }],
        timeoutMs: 10_000
      })
      expect(res.topics[0]!.partitions[0]).toEqual({
        partitionIndex: 0,
        lowWatermark: -1n,
        errorCode: Errors.ErrorCode.READ_ONLY_TOPIC
      })
    } finally {
      await client.close()
    }
    expect((await offsets(destination, mirrored))[0]).toEqual([0, RECORDS])

    // The source's deletion arrives through the mirror fetcher.
    expect(await deleteRecords(source.bootstrap, [{ topic: mirrored, partition: 0, offset: 25 }])).toContain(
      `partition: ${mirrored}-0\tlow_watermark: 25`
    )
    await Wait.eventually(
      "the source's log start on the mirror topic",
      async () => ((await offsets(destination, mirrored))[0]![0] === 25 ? true : undefined),
      60_000,
      500
    )

    const stop = await cli(["--bootstrap-server", bootstrap, "--stop", "--mirror", "dr", "--topics", mirrored])
    expect(stop.code).toBe(0)
    const deleted = await Wait.eventually(
      "kafka-delete-records on the stopped topic",
      async () => {
        const out = await deleteRecords(bootstrap, [{ topic: mirrored, partition: 0, offset: 60 }])
        return out.includes("low_watermark: 60") ? out : undefined
      },
      120_000,
      1000
    )
    expect(deleted).toContain(`partition: ${mirrored}-0\tlow_watermark: 60`)
    expect((await offsets(destination, mirrored))[0]![0]).toBe(60)
  })
})
