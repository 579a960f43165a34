/**
 * Leader changes in a cluster of separate processes (one controller, three brokers).
 *
 * 1. An RF=3 topic with min.insync.replicas=2 takes acks=all messages; the leader of a partition is
 *    SIGKILLed and restarted at once (well inside broker.session.timeout.ms); Kafka's
 *    `kafka-leader-election --election-type PREFERRED --all-topic-partitions` gives it its leaderships
 *    back. Every ISR must be full again (replica.lag.time.max.ms is 5 s, so followers that stopped
 *    fetching would have left), an acks=all produce succeeds and the three copies of every partition
 *    end byte-identical.
 * 2. With 2,000 partitions (RF=3), restarting one broker fences no other broker, every ISR is full again,
 *    and the automatic leader rebalance (on a 5 s interval) gives the restarted broker its leaderships back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { JavaTools, Wait } from "@clustermirror/testkit"
import { type ClusterServer, type ServerHandle, startCluster } from "./harness.js"

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

interface Partition {
  readonly partitionId: number
  readonly leader: number
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
}

/** A controller and three brokers as processes; `stop()` ends them all. */
const startLeaderCluster = async (controllerConfig: Record<string, string | number | boolean>) => {
  const cluster = await startCluster({
    brokers: 3,
    controllerConfig,
    brokerConfig: {
      "broker.heartbeat.interval.ms": 500,
      "replica.lag.time.max.ms": 5000,
      "offsets.topic.replication.factor": 3
    }
  })
  const metadata = async (via: ServerHandle, topic: string): Promise<ReadonlyArray<Partition>> => {
    const admin = via.kafka("leader-change").admin()
    await admin.connect()
    try {
      return (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions
    } finally {
      await admin.disconnect()
    }
  }
  const liveBrokers = async (via: ServerHandle) => {
    const admin = via.kafka("leader-change").admin()
    await admin.connect()
    try {
      return (await admin.describeCluster()).brokers.length
    } finally {
      await admin.disconnect()
    }
  }
  return { ...cluster, metadata, liveBrokers }
}

const full = (ps: ReadonlyArray<Partition>) => ps.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length)

/** A broker's copy of a partition: its segment files, in offset order, concatenated. */
const logBytes = (broker: ClusterServer, topic: string, partition: number): Buffer => {
  const dir = path.join(broker.logDir, `${topic}-${partition}`)
  const segments = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".log"))
    .sort()
  return Buffer.concat(segments.map((f) => fs.readFileSync(path.join(dir, f))))
}

describe("followers follow every leader change (separate processes)", () => {
  let cluster: Awaited<ReturnType<typeof startLeaderCluster>>
  const TOPIC = "elected"

  beforeAll(async () => {
    // The preferred election is the tool's: the automatic rebalance stays off here.
    cluster = await startLeaderCluster({ "broker.session.timeout.ms": 6000, "auto.leader.rebalance.enable": false })
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it("after a leader restart and kafka-leader-election --election-type PREFERRED the ISR is full again", async () => {
    const [first] = cluster.brokers
    await Wait.eventually("3 live brokers", async () => ((await cluster.liveBrokers(first!)) === 3 ? true : undefined))
    const bootstrap = first!.bootstrap
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2"
      ])
    )
    const before = await Wait.eventually("full ISRs", async () => {
      const ps = await cluster.metadata(first!, TOPIC)
      return ps.length === 3 && full(ps) ? ps : undefined
    })
    const lines = `${Array.from({ length: 20_000 }, (_, i) => `m-${i}`).join("\n")}\n`
    JavaTools.expectSuccess(
      "kafka-console-producer",
      await JavaTools.consoleProducer(
        ["--bootstrap-server", bootstrap, "--topic", TOPIC, "--producer-property", "acks=all"],
        lines,
        { timeoutMs: 180_000 }
      )
    )

    // The leader of partition 0 dies and is back long before its session would expire.
    const leaderId = before.find((p) => p.partitionId === 0)!.leader
    const leader = cluster.brokers[leaderId - 1]!
    const survivor = cluster.brokers.find((b) => b !== leader)!
    await leader.kill("SIGKILL")
    await leader.restart()
    await Wait.eventually(
      "the restarted broker back in every ISR",
      async () => {
        const ps = await cluster.metadata(survivor, TOPIC)
        return (await cluster.liveBrokers(survivor)) === 3 && full(ps) ? true : undefined
      },
      120_000,
      500
    )

    JavaTools.expectSuccess(
      "kafka-leader-election",
      await JavaTools.leaderElection([
        "--bootstrap-server",
        survivor.bootstrap,
        "--election-type",
        "PREFERRED",
        "--all-topic-partitions"
      ])
    )
    await Wait.eventually(
      "preferred leaders",
      async () => {
        const ps = await cluster.metadata(survivor, TOPIC)
        return ps.every((p) => p.leader === p.replicas[0]) ? true : undefined
      },
      60_000,
      500
    )
    // Twice replica.lag.time.max.ms: followers that do not fetch from the new leaders have left the ISR by now.
    await sleep(10_000)
    const after = await Wait.eventually(
      "full ISRs at the preferred leaders",
      async () => {
        const ps = await cluster.metadata(survivor, TOPIC)
        return full(ps) && ps.every((p) => p.leader === p.replicas[0]) ? ps : undefined
      },
      60_000,
      500
    )
    expect(after.map((p) => p.isr.length)).toEqual([3, 3, 3])

    const producer = survivor.kafka("after-election").producer({ retry: { retries: 3 } })
    await producer.connect()
    try {
      await producer.send({
        topic: TOPIC,
        acks: -1,
        timeout: 30_000,
        messages: [0, 1, 2].map((partition) => ({ partition, value: `after-election-${partition}` }))
      })
    } finally {
      await producer.disconnect()
    }

    for (const partition of [0, 1, 2])
      await Wait.eventually(
        `identical copies of ${TOPIC}-${partition}`,
        async () => {
          const copies = cluster.brokers.map((b) => logBytes(b, TOPIC, partition))
          return copies[0]!.length > 0 && copies.every((c) => c.equals(copies[0]!)) ? true : undefined
        },
        60_000,
        500
      )
  })
})

describe("a broker restart at 2,000 partitions (separate processes)", () => {
  let cluster: Awaited<ReturnType<typeof startLeaderCluster>>
  const TOPIC = "many"
  const PARTITIONS = 2000

  beforeAll(async () => {
    cluster = await startLeaderCluster({ "leader.imbalance.check.interval.seconds": 5 })
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it("fences no healthy broker, fills every ISR again and rebalances leadership to preferred replicas", async () => {
    const [first] = cluster.brokers
    await Wait.eventually("3 live brokers", async () => ((await cluster.liveBrokers(first!)) === 3 ? true : undefined))
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        first!.bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        String(PARTITIONS),
        "--replication-factor",
        "3"
      ])
    )
    await Wait.eventually(
      "full ISRs",
      async () => {
        const ps = await cluster.metadata(first!, TOPIC)
        return ps.length === PARTITIONS && full(ps) ? true : undefined
      },
      180_000,
      1000
    )
    const fencingLines = () =>
      cluster.controller
        .output()
        .split("\n")
        .filter((l) => l.includes("fenced brokers"))
    const fencedBefore = fencingLines().length

    const restarted = cluster.brokers[1]!
    const others = cluster.brokers.filter((b) => b !== restarted)
    await restarted.kill("SIGKILL")
    await restarted.restart()

    const settled = await Wait.eventually(
      "every ISR full and leadership back on the preferred replicas",
      async () => {
        const ps = await cluster.metadata(others[0]!, TOPIC)
        if (ps.length !== PARTITIONS || !full(ps)) return undefined
        // Kafka's rule: a broker leading all but leader.imbalance.per.broker.percentage (10%) of what it prefers.
        for (const id of [1, 2, 3]) {
          const preferred = ps.filter((p) => p.replicas[0] === id)
          const led = preferred.filter((p) => p.leader === id).length
          if (led < preferred.length * 0.9) return undefined
        }
        return ps
      },
      240_000,
      2000
    )
    const leaders = [1, 2, 3].map((id) => settled.filter((p) => p.leader === id).length)
    console.log(`leaders per broker after the restart of broker 2: ${leaders.join(" / ")}`)
    for (const n of leaders) expect(n).toBeGreaterThan(PARTITIONS / 3 - PARTITIONS * 0.05)
    // Only the restarted broker may have been fenced (its old session), never the healthy ones.
    const fenced = fencingLines().slice(fencedBefore)
    for (const line of fenced) expect(line).toMatch(/fenced brokers 2 \(session expired\)/)
  })
})
