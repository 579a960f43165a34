/**
 * Configs across separate processes: a controller and three brokers, all with min.insync.replicas=2,
 * the brokers with num.partitions=3 and default.replication.factor=3. Kafka's ConfigCommand alters a
 * broker's and the cluster default's message.max.bytes, describes them back with their sources, and
 * produce proves each value applies without a restart; read-only and unsupported keys are refused by
 * name; a topic's max.message.bytes raised or lowered later applies; auto-created topics take the
 * brokers' defaults; with two followers killed and the ISR shrunk to the leader, acks=all answers
 * NOT_ENOUGH_REPLICAS (not a timeout) until the topic's min.insync.replicas is lowered to 1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Connection } from "@clustermirror/client"
import { Errors, Metadata, Produce, RecordBatch } from "@clustermirror/protocol"
import { JavaTools, Wait } from "@clustermirror/testkit"
import { type Cluster, type ServerHandle, startCluster } from "./harness.js"

const E = Errors.ErrorCode

describe("broker and topic configs (separate processes)", () => {
  let cluster: Cluster
  let brokers: ReadonlyArray<ServerHandle>
  let bootstrap: string

  beforeAll(async () => {
    cluster = await startCluster({
      brokers: 3,
      controllerConfig: { "broker.session.timeout.ms": 3000, "min.insync.replicas": 2 },
      brokerConfig: {
        "broker.heartbeat.interval.ms": 300,
        "replica.lag.time.max.ms": 5000,
        "offsets.topic.replication.factor": 3,
        "min.insync.replicas": 2,
        "num.partitions": 3,
        "default.replication.factor": 3,
        "num.io.threads": 4
      }
    })
    brokers = cluster.brokers
    bootstrap = `127.0.0.1:${brokers[0]!.port}`
  }, 240_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  const configs = (args: ReadonlyArray<string>) => JavaTools.configs(["--bootstrap-server", bootstrap, ...args])

  const withConnection = async <A>(port: number, f: (c: Connection.Connection) => Promise<A>): Promise<A> => {
    const conn = await Connection.open({ host: "127.0.0.1", port, requestTimeoutMs: 60_000 })
    try {
      return await f(conn)
    } finally {
      conn.close()
    }
  }

  const killed = new Set<ServerHandle>()
  /** The topic's partitions as a live broker describes them. */
  const partitions = (topic: string) =>
    withConnection(brokers.find((b) => !killed.has(b))!.port, async (c) => {
      const res = await c.call(Metadata.api, {
        topics: [{ name: topic, topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false
      })
      return res.topics[0]?.partitions ?? []
    })

  /** One record of `bytes` bytes to partition 0 of `topic` on its leader; the error code. */
  const produce = async (topic: string, bytes: number, acks: number): Promise<number> => {
    const p = (await partitions(topic)).find((x) => x.partitionIndex === 0)!
    const leader = brokers[p.leaderId - 1]!
    return withConnection(leader.port, async (c) => {
      const res = await c.call(Produce.api, {
        transactionalId: null,
        acks,
        timeoutMs: 30_000,
        topicData: [
          {
            name: topic,
            topicId: "AAAAAAAAAAAAAAAAAAAAAA",
            partitionData: [
              { index: 0, records: RecordBatch.build({ records: [{ value: Buffer.alloc(bytes, 120) }], timestamp: 1 }) }
            ]
          }
        ]
      })
      return res.responses[0]!.partitionResponses[0]!.errorCode
    })
  }

  const createTopic = async (topic: string) => {
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "3"
      ])
    )
    await Wait.eventually(
      `ISR of 3 for ${topic}`,
      async () => ((await partitions(topic))[0]?.isrNodes.length === 3 ? true : undefined),
      60_000
    )
  }

  it("stores, describes and applies broker configs and the cluster default; refuses read-only and unsupported keys", async () => {
    await Wait.eventually("3 live brokers", async () =>
      withConnection(brokers[0]!.port, async (c) => {
        const res = await c.call(Metadata.api, {
          topics: [],
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false
        })
        return res.brokers.length === 3 ? true : undefined
      })
    )
    await createTopic("sized")
    const leaderId = (await partitions("sized"))[0]!.leaderId
    expect(await produce("sized", 4000, 1)).toBe(E.NONE)

    JavaTools.expectSuccess(
      "kafka-configs --alter --entity-default",
      await configs([
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config",
        "message.max.bytes=3000"
      ])
    )
    expect(
      await Wait.eventually("the cluster default applied", async () => {
        const code = await produce("sized", 4000, 1)
        return code === E.MESSAGE_TOO_LARGE ? code : undefined
      })
    ).toBe(E.MESSAGE_TOO_LARGE)

    JavaTools.expectSuccess(
      "kafka-configs --alter --entity-name",
      await configs([
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        String(leaderId),
        "--add-config",
        "message.max.bytes=6000"
      ])
    )
    expect(
      await Wait.eventually("the broker's own value applied", async () => {
        const code = await produce("sized", 4000, 1)
        return code === E.NONE ? code : undefined
      })
    ).toBe(E.NONE)

    const perBroker = JavaTools.expectSuccess(
      "kafka-configs --describe --entity-name",
      await configs(["--describe", "--entity-type", "brokers", "--entity-name", String(leaderId)])
    ).stdout
    expect(perBroker).toContain("message.max.bytes=6000")
    expect(perBroker).toContain("DYNAMIC_BROKER_CONFIG:message.max.bytes=6000")
    expect(perBroker).toContain("DYNAMIC_DEFAULT_BROKER_CONFIG:message.max.bytes=3000")
    const clusterDefault = JavaTools.expectSuccess(
      "kafka-configs --describe --entity-default",
      await configs(["--describe", "--entity-type", "brokers", "--entity-default"])
    ).stdout
    expect(clusterDefault).toContain("message.max.bytes=3000")

    const cleaner = await configs([
      "--alter",
      "--entity-type",
      "brokers",
      "--entity-name",
      "1",
      "--add-config",
      "log.cleaner.io.buffer.size=1048576"
    ])
    expect(cleaner.code).toBe(1)
    expect(cleaner.stdout + cleaner.stderr).toContain("log.cleaner.io.buffer.size is not supported: the log cleaner")
    const readOnly = await configs([
      "--alter",
      "--entity-type",
      "brokers",
      "--entity-default",
      "--add-config",
      "num.partitions=5"
    ])
    expect(readOnly.code).toBe(1)
    expect(readOnly.stdout + readOnly.stderr).toContain("Cannot update these configs dynamically: [num.partitions]")

    JavaTools.expectSuccess(
      "kafka-configs --delete-config",
      await configs([
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-name",
        String(leaderId),
        "--delete-config",
        "message.max.bytes"
      ])
    )
    JavaTools.expectSuccess(
      "kafka-configs --delete-config --entity-default",
      await configs(["--alter", "--entity-type", "brokers", "--entity-default", "--delete-config", "message.max.bytes"])
    )
  }, 300_000)

  it("applies a topic's max.message.bytes altered after creation", async () => {
    await createTopic("capped")
    await Wait.eventually("default broker limit back", async () =>
      (await produce("capped", 4000, 1)) === E.NONE ? true : undefined
    )
    JavaTools.expectSuccess(
      "kafka-configs --alter topic",
      await configs([
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "capped",
        "--add-config",
        "max.message.bytes=1000"
      ])
    )
    expect(
      await Wait.eventually("the topic's limit applied", async () => {
        const code = await produce("capped", 4000, 1)
        return code === E.MESSAGE_TOO_LARGE ? code : undefined
      })
    ).toBe(E.MESSAGE_TOO_LARGE)
  }, 300_000)

  it("auto-created topics take the brokers' num.partitions and default.replication.factor", async () => {
    const parts = await Wait.eventually("auto-created topic", async () => {
      const res = await withConnection(brokers[0]!.port, (c) =>
        c.call(Metadata.api, {
          topics: [{ name: "auto-made", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
          allowAutoTopicCreation: true,
          includeTopicAuthorizedOperations: false
        })
      )
      const t = res.topics[0]
      return t !== undefined && t.errorCode === 0 ? t.partitions : undefined
    })
    expect(parts.length).toBe(3)
    for (const p of parts) expect(p.replicaNodes.length).toBe(3)
  }, 120_000)

  it("describes the brokers' min.insync.replicas on a new topic and enforces it: NOT_ENOUGH_REPLICAS, never a timeout", async () => {
    await createTopic("durable")
    const described = JavaTools.expectSuccess(
      "kafka-configs --describe topic",
      await configs(["--describe", "--entity-type", "topics", "--entity-name", "durable", "--all"])
    ).stdout
    expect(described).toMatch(
      /min\.insync\.replicas=2 sensitive=false synonyms=\{STATIC_BROKER_CONFIG:min\.insync\.replicas=2/
    )
    expect(await produce("durable", 100, -1)).toBe(E.NONE)

    const leaderId = (await partitions("durable"))[0]!.leaderId
    for (const b of brokers)
      if (b !== brokers[leaderId - 1]) {
        killed.add(b)
        await b.kill("SIGKILL")
      }
    await Wait.eventually(
      "ISR shrunk to the leader",
      async () => ((await partitions("durable"))[0]?.isrNodes.length === 1 ? true : undefined),
      60_000
    )
    // Not REQUEST_TIMED_OUT: the leader refuses before appending.
    expect(await produce("durable", 100, -1)).toBe(E.NOT_ENOUGH_REPLICAS)

    JavaTools.expectSuccess(
      "kafka-configs --alter min.insync.replicas",
      await configs([
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        "durable",
        "--add-config",
        "min.insync.replicas=1"
      ])
    )
    expect(
      await Wait.eventually("min ISR 1 applied", async () => {
        const code = await produce("durable", 100, -1)
        return code === E.NONE ? code : undefined
      })
    ).toBe(E.NONE)
  }, 300_000)
})
