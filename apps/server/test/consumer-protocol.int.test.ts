/**
 * The consumer group protocol of KIP-848 (`group.protocol=consumer`) on a 3-broker cluster: Java
 * console consumers of one group share a 6-partition topic while a third member joins and leaves
 * again; every record is consumed exactly once overall (the leaving member commits and revokes before
 * its partitions move), `kafka-consumer-groups --describe --members` shows the three members while they
 * are in the group, and the committed offsets cover every record. Then confluent-kafka (librdkafka 2.16)
 * with `group.protocol=consumer` consumes a topic of its own.
 */
import { ConfluentKafka, JavaTools } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, startCluster } from "./harness.js"

const TOPIC = "cgp-orders"
const GROUP = "cgp-group"
const PARTITIONS = 6
const PER_BATCH = 120

let lastDescribe = ""
const describeMembers = async (bootstrap: string): Promise<ReadonlyArray<string>> => {
  const r = await JavaTools.consumerGroups([
    "--bootstrap-server",
    bootstrap,
    "--describe",
    "--group",
    GROUP,
    "--members"
  ])
  lastDescribe = r.stdout + r.stderr.slice(-2000)
  return JavaTools.lines(r.stdout).filter((l) => l.startsWith(GROUP))
}

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 500))
  }
}

describe("consumer group protocol (KIP-848)", () => {
  let cluster: Cluster
  let bootstrap: string

  beforeAll(async () => {
    cluster = await startCluster({
      brokers: 3,
      brokerConfig: {
        "offsets.topic.replication.factor": 3,
        "group.consumer.heartbeat.interval.ms": 500,
        "group.consumer.session.timeout.ms": 10000
      }
    })
    bootstrap = cluster.brokers.map((b) => b.bootstrap).join(",")
    const admin = cluster.brokers[0]!.kafka().admin()
    await admin.connect()
    try {
      await admin.createTopics({
        topics: [
          { topic: TOPIC, numPartitions: PARTITIONS, replicationFactor: 3 },
          { topic: "cgp-librdkafka", numPartitions: 3, replicationFactor: 3 }
        ]
      })
    } finally {
      await admin.disconnect()
    }
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  const produce = async (topic: string, prefix: string, count: number) => {
    const producer = cluster.brokers[0]!.kafka().producer()
    await producer.connect()
    try {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: count }, (_, i) => ({ key: `k${i}`, value: `${prefix}-${i}` }))
      })
    } finally {
      await producer.disconnect()
    }
  }

  const committedTotal = async (): Promise<bigint> => {
    const admin = cluster.brokers[0]!.kafka().admin()
    await admin.connect()
    try {
      const [t] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
      return (t?.partitions ?? []).reduce((n, p) => n + (BigInt(p.offset) > 0n ? BigInt(p.offset) : 0n), 0n)
    } finally {
      await admin.disconnect()
    }
  }

  const consumer = (idleMs: number) =>
    JavaTools.consoleConsumer(
      [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--group",
        GROUP,
        "--from-beginning",
        "--timeout-ms",
        String(idleMs),
        "--consumer-property",
        "group.protocol=consumer",
        "--consumer-property",
        "auto.commit.interval.ms=500"
      ],
      { timeoutMs: 240_000 }
    )

  it("three Java consumers share a topic across a member joining and leaving, each record once", async () => {
    await produce(TOPIC, "b1", PER_BATCH)
    const a = consumer(30_000)
    const b = consumer(30_000)
    await until("the first batch committed by two members", async () => (await committedTotal()) === BigInt(PER_BATCH))
    const c = consumer(12_000)
    let members: ReadonlyArray<string> = []
    // Reconciled: each of the three has partitions of the topic.
    await until("three members with partitions", async () => {
      members = await describeMembers(bootstrap)
      // The last column is the member's #PARTITIONS.
      return members.length === 3 && members.every((l) => Number(l.trim().split(/\s+/).pop()) > 0)
    }).catch((e: Error) => {
      throw new Error(`${e.message}; last seen:\n${lastDescribe}`)
    })
    await produce(TOPIC, "b2", PER_BATCH)
    const left = await c
    expect(left.code).toBe(0)
    await until("two members once the third left", async () => (await describeMembers(bootstrap)).length === 2)
    await produce(TOPIC, "b3", PER_BATCH)
    const [ra, rb] = await Promise.all([a, b])
    const consumed = [ra, rb, left].flatMap((r) => JavaTools.lines(r.stdout).filter((l) => /^b\d-\d+$/.test(l)))
    const expected = ["b1", "b2", "b3"].flatMap((p) => Array.from({ length: PER_BATCH }, (_, i) => `${p}-${i}`))
    expect([...consumed].sort()).toEqual([...expected].sort())
    expect(await committedTotal()).toBe(BigInt(3 * PER_BATCH))
  }, 240_000)

  it("confluent-kafka with group.protocol=consumer consumes every record", async () => {
    await produce("cgp-librdkafka", "r", 90)
    const script = `
import json, sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "cgp-librdkafka-group", "group.protocol": "consumer",
              "auto.offset.reset": "earliest"})
c.subscribe(["cgp-librdkafka"])
values, deadline = [], time.time() + 90
while len(values) < 90 and time.time() < deadline:
    m = c.poll(1.0)
    if m is None or m.error() is not None:
        continue
    values.append(m.value().decode())
c.close()
print(json.dumps(values))
`
    const { result } = await ConfluentKafka.run<ReadonlyArray<string>>(script, [bootstrap], { timeoutMs: 150_000 })
    expect([...result].sort()).toEqual(Array.from({ length: 90 }, (_, i) => `r-${i}`).sort())
  }, 180_000)
})
