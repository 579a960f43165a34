/**
 * A cluster of separate processes: one controller and three brokers. An RF=3 topic takes 100,000
 * acknowledged (acks=all) messages; the leader's broker is SIGKILLed; a new leader from the ISR serves;
 * kcat reads exactly the acknowledged messages; the restarted broker catches up and rejoins the ISR.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Connection } from "@clustermirror/client"
import { BrokerHeartbeat, CreateTopics, Errors, IncrementalAlterConfigs } from "@clustermirror/protocol"
import { JavaTools, Wait } from "@clustermirror/testkit"
import { type Cluster, type ServerHandle, startCluster } from "./harness.js"

const TOPIC = "replicated"
const MESSAGES = 100_000

describe("a 3-broker cluster (separate processes)", () => {
  let cluster: Cluster
  let controller: ServerHandle
  let brokers: ReadonlyArray<ServerHandle>

  beforeAll(async () => {
    cluster = await startCluster({
      brokers: 3,
      controllerConfig: { "broker.session.timeout.ms": 2000 },
      brokerConfig: {
        "broker.heartbeat.interval.ms": 300,
        "replica.lag.time.max.ms": 5000,
        "offsets.topic.replication.factor": 3
      }
    })
    controller = cluster.controller
    brokers = cluster.brokers
  })

  afterAll(async () => {
    await cluster?.stop()
  })

  const metadata = async (via: ServerHandle) => {
    const admin = via.kafka("cluster-test").admin()
    await admin.connect()
    try {
      return (await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics[0]!.partitions
    } finally {
      await admin.disconnect()
    }
  }

  it("replicates an RF=3 topic, fails over on SIGKILL and lets the broker rejoin", async () => {
    const first = brokers[0]!
    const admin = first.kafka("cluster-test").admin()
    await admin.connect()
    await Wait.eventually("3 live brokers", async () =>
      (await admin.describeCluster()).brokers.length === 3 ? true : undefined
    )
    await admin.disconnect()
    const bootstrap = `127.0.0.1:${first.port}`
    const create = ["--create", "--topic", TOPIC, "--partitions", "1", "--replication-factor", "3"]
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics(["--bootstrap-server", bootstrap, ...create])
    )
    const before = await Wait.eventually("ISR of 3", async () => {
      const ps = await metadata(first)
      return ps[0]!.isr.length === 3 ? ps : undefined
    })
    expect([...before[0]!.replicas].sort()).toEqual([1, 2, 3])
    const described = JavaTools.expectSuccess(
      "kafka-topics --describe",
      await JavaTools.kafkaTopics(["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC])
    ).stdout
    expect(described).toMatch(new RegExp(`Leader: ${before[0]!.leader}\\s+Replicas: \\d,\\d,\\d\\s+Isr: \\d,\\d,\\d`))

    const lines = Array.from({ length: MESSAGES }, (_, i) => `m-${i}`).join("\n") + "\n"
    const producerProps = ["--producer-property", "acks=all", "--producer-property", "linger.ms=5"]
    JavaTools.expectSuccess(
      "kafka-console-producer",
      await JavaTools.consoleProducer(["--bootstrap-server", bootstrap, "--topic", TOPIC, ...producerProps], lines, {
        timeoutMs: 180_000
      })
    )

    const leaderId = before[0]!.leader
    const leader = brokers[leaderId - 1]!
    const survivor = brokers.find((b) => b !== leader)!
    const killedAt = Date.now()
    await leader.kill("SIGKILL")

    // The failover is over when an acks=all produce on the new leader succeeds.
    const producer = survivor.kafka("failover").producer({ retry: { retries: 0 } })
    await producer.connect()
    const newLeader = await Wait.eventually(
      "a new leader serving produce",
      async () => {
        const ps = await metadata(survivor)
        const p = ps[0]!
        if (p.leader === leaderId || p.leader < 0) return undefined
        await producer.send({ topic: TOPIC, acks: -1, messages: [{ value: "after-failover", partition: 0 }] })
        return p.leader
      },
      60_000,
      100
    )
    const failoverMs = Date.now() - killedAt
    await producer.disconnect()
    console.log(`failover: broker ${newLeader} leads after ${failoverMs} ms (broker ${leaderId} killed)`)
    expect(before[0]!.isr).toContain(newLeader)

    const consumed = await survivor.kcat(["-C", "-t", TOPIC, "-o", "beginning", "-e", "-q", "-f", "%s\n"], {
      timeoutMs: 120_000
    })
    const values = consumed.stdout.split("\n").filter((l) => l !== "")
    expect(values.length).toBe(MESSAGES + 1)
    expect(values.slice(0, MESSAGES)).toEqual(lines.split("\n").slice(0, MESSAGES))
    expect(values[MESSAGES]).toBe("after-failover")
    const consumerArgs = ["--topic", TOPIC, "--from-beginning", "--max-messages", String(MESSAGES + 1)]
    const javaConsumed = JavaTools.expectSuccess(
      "kafka-console-consumer",
      await JavaTools.consoleConsumer(["--bootstrap-server", `127.0.0.1:${survivor.port}`, ...consumerArgs], {
        timeoutMs: 180_000
      })
    )
    expect(JavaTools.lines(javaConsumed.stdout)).toEqual(values)

    await leader.restart()
    const rejoined = await Wait.eventually(
      "the restarted broker back in the ISR",
      async () => {
        const ps = await metadata(survivor)
        return ps[0]!.isr.includes(leaderId) ? ps[0]! : undefined
      },
      60_000,
      200
    )
    expect(rejoined.isr.sort()).toEqual([1, 2, 3])
  })

  it("answers invalid topic requests with Kafka's error codes, forwarded to the controller", async () => {
    const conn = await Connection.open({ host: "127.0.0.1", port: brokers[1]!.port })
    try {
      const topic = (
        name: string,
        numPartitions: number,
        replicationFactor: number,
        configs: Array<{ name: string; value: string }> = []
      ) => ({
        name,
        numPartitions,
        replicationFactor,
        assignments: [],
        configs
      })
      const res = await conn.call(CreateTopics.api, {
        topics: [
          topic("bad name!", 1, 1),
          topic("x".repeat(250), 1, 1),
          topic("too-many-replicas", 1, 4),
          topic("no-partitions", 0, 1),
          topic("unknown-config", 1, 1, [{ name: "no.such.config", value: "1" }]),
          topic("fine", 2, 3)
        ],
        timeoutMs: 10_000,
        validateOnly: false
      })
      expect(res.topics.map((t) => [t.name.slice(0, 20), t.errorCode])).toEqual([
        ["bad name!", Errors.ErrorCode.INVALID_TOPIC_EXCEPTION],
        ["x".repeat(20), Errors.ErrorCode.INVALID_TOPIC_EXCEPTION],
        ["too-many-replicas", Errors.ErrorCode.INVALID_REPLICATION_FACTOR],
        ["no-partitions", Errors.ErrorCode.INVALID_PARTITIONS],
        ["unknown-config", Errors.ErrorCode.INVALID_CONFIG],
        ["fine", 0]
      ])
      const alter = await conn.call(IncrementalAlterConfigs.api, {
        resources: [
          {
            resourceType: 2,
            resourceName: "fine",
            configs: [{ name: "retention.ms", configOperation: 0, value: "soon" }]
          }
        ],
        validateOnly: false
      })
      expect(alter.responses[0]!.errorCode).toBe(Errors.ErrorCode.INVALID_CONFIG)
    } finally {
      await conn.close()
    }
    // A controller-only API sent to a broker: the broker does not serve it and closes the connection.
    const raw = await Connection.open({ host: "127.0.0.1", port: brokers[1]!.port })
    await expect(
      raw.request(BrokerHeartbeat.api, 0, {
        brokerId: 9,
        brokerEpoch: 1n,
        currentMetadataOffset: 0n,
        wantFence: false,
        wantShutDown: false
      })
    ).rejects.toThrow()
    await raw.close().catch(() => {})
  })

  it("keeps topics, configs, ISR and leader epochs across a controller restart; brokers carry on", async () => {
    const survivor = brokers[1]!
    const conn = await Connection.open({ host: "127.0.0.1", port: survivor.port })
    await conn.call(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType: 2,
          resourceName: TOPIC,
          configs: [{ name: "retention.ms", configOperation: 0, value: "86400000" }]
        }
      ],
      validateOnly: false
    })
    await conn.close()
    const describe = async () =>
      (
        await JavaTools.kafkaTopics([
          "--bootstrap-server",
          `127.0.0.1:${survivor.port}`,
          "--describe",
          "--topic",
          TOPIC
        ])
      ).stdout
    const before = await metadata(survivor)
    const configsBefore = await describe()
    expect(configsBefore).toContain("retention.ms=86400000")
    await controller.kill("SIGKILL")
    // Without a controller the data path goes on.
    await survivor.kcat(["-P", "-t", TOPIC, "-p", "0", "-X", "acks=all"], { input: "while-controller-down\n" })
    await controller.restart()
    const after = await Wait.eventually("brokers back with the restarted controller", async () => {
      const c = survivor.kafka("after-restart").admin()
      await c.connect()
      try {
        return (await c.describeCluster()).brokers.length === 3 ? await metadata(survivor) : undefined
      } finally {
        await c.disconnect()
      }
    })
    expect(after[0]!.leader).toBe(before[0]!.leader)
    expect([...after[0]!.isr].sort()).toEqual([...before[0]!.isr].sort())
    expect(await describe()).toContain("retention.ms=86400000")
    const created = await survivor.kafka("after-restart").admin()
    await created.connect()
    await created.createTopics({
      topics: [{ topic: "after-restart", numPartitions: 1, replicationFactor: 3 }],
      waitForLeaders: true
    })
    await created.disconnect()
  })
})
