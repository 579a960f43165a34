/**
 * Partition reassignment (AlterPartitionReassignments / ListPartitionReassignments) on a controller and
 * three broker processes, driven by Kafka 4.4's `kafka-reassign-partitions`:
 *
 * 1. A plan for a topic with RF=2 and data that moves a follower (partition 0: 1,2 → 1,3) and a leader
 *    (partition 1: 2,1 → 3,1) to the third broker (`--generate` proposes one from the broker list first),
 *    started with `--execute --throttle` (KIP-73 replication quotas: the rates on brokers 1-3, the throttled
 *    replicas on the topic, both seen with `kafka-configs --describe` while the ~2.5 MB move takes several
 *    seconds at the rate), then `--verify` until complete, which clears the throttles. The new replica's segment
 *    files are byte-identical to the leader's, the removed replicas' directories are gone, `kafka-topics
 *    --describe` shows the new replicas, leader and ISR, kcat reads every record, and new records replicate to
 *    the new replicas.
 * 2. A mirror topic (mirrored from a server of ours) whose leader is moved off by a reassignment keeps
 *    mirroring on the new leader: new source records arrive, lag back to 0, logs identical to the source.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { JavaTools, Kcat, MirrorCheck, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ClusterServer, type ServerHandle, cli, startCluster, startServer } from "./harness.js"

const TOPIC = "moved"
/** Records per partition before the move, ~1 KB each: about 2.5 MB to move at `THROTTLE`. */
const RECORDS = 1250
const PAD = "x".repeat(1000)
/** `--throttle`, bytes/s: the move of both partitions (all on broker 3) takes several seconds. */
const THROTTLE = 300_000

/** The value of record `i` of a partition; padded for the records written before the move. */
const recordValue = (topic: string, partition: number, i: number): string =>
  `${topic}-${partition}-${i}${topic === TOPIC && i < RECORDS ? PAD : ""}`

/** A partition directory's segment files (`*.log`) and their bytes. */
const segments = (broker: ClusterServer, topic: string, partition: number): ReadonlyMap<string, Buffer> => {
  const dir = path.join(broker.logDir, `${topic}-${partition}`)
  return new Map(
    fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".log"))
      .sort()
      .map((f) => [f, fs.readFileSync(path.join(dir, f))])
  )
}

const hosts = (broker: ClusterServer, topic: string, partition: number): boolean =>
  fs.existsSync(path.join(broker.logDir, `${topic}-${partition}`))

describe("partition reassignment on a 3-broker cluster (separate processes)", () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>
  let source: ServerHandle
  let bootstrap: string
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "cm-reassign-"))

  const file = (name: string, content: unknown): string => {
    const f = path.join(tmp, name)
    fs.writeFileSync(f, JSON.stringify(content))
    return f
  }

  const reassign = (args: ReadonlyArray<string>) =>
    JavaTools.reassignPartitions(["--bootstrap-server", bootstrap, ...args])

  /** `kafka-reassign-partitions --execute` of a plan file (the tool reads the replicas' log dirs first); its output. */
  const execute = async (plan: string) =>
    JavaTools.expectSuccess("--execute", await reassign(["--execute", "--reassignment-json-file", plan])).stdout
  const started = (partitions: ReadonlyArray<string>) =>
    new RegExp(`Successfully started partition reassignments? for ${partitions.join(",")}`)

  /** `--verify` until every partition of the plan is complete; its last output. */
  const verifyUntilDone = (plan: string, partitions: ReadonlyArray<string>) =>
    Wait.eventually(
      "kafka-reassign-partitions --verify: complete",
      async () => {
        const r = JavaTools.expectSuccess("--verify", await reassign(["--verify", "--reassignment-json-file", plan]))
        return partitions.every((p) => r.stdout.includes(`Reassignment of partition ${p} is completed.`))
          ? r.stdout
          : undefined
      },
      120_000,
      1000
    )

  const metadata = async (via: ServerHandle, topic: string) => {
    const admin = via.kafka("reassign").admin()
    await admin.connect()
    try {
      const ps = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]!.partitions
      return [...ps].sort((a, b) => a.partitionId - b.partitionId)
    } finally {
      await admin.disconnect()
    }
  }

  const produce = async (
    via: ServerHandle,
    topic: string,
    partitions: ReadonlyArray<number>,
    from: number,
    n: number
  ) => {
    const producer = via.kafka("reassign").producer({ idempotent: true })
    await producer.connect()
    try {
      for (const partition of partitions)
        for (let i = 0; i < n; i += 50)
          await producer.send({
            topic,
            acks: -1,
            messages: Array.from({ length: Math.min(50, n - i) }, (_, j) => ({
              partition,
              value: recordValue(topic, partition, from + i + j)
            }))
          })
    } finally {
      await producer.disconnect()
    }
  }

  beforeAll(async () => {
    cluster = await startCluster({
      brokers: 3,
      controllerConfig: { "broker.session.timeout.ms": 6000, "default.replication.factor": 2 },
      brokerConfig: {
        "broker.heartbeat.interval.ms": 500,
        "replica.lag.time.max.ms": 10_000,
        "default.replication.factor": 2,
        "mirror.failed.retry.initial.backoff.ms": 500,
        "mirror.failed.retry.max.backoff.ms": 4000
      }
    })
    bootstrap = cluster.brokers.map((b) => b.bootstrap).join(",")
    source = await startServer({ config: { "num.partitions": 1 } })
  })
  afterAll(async () => {
    await source?.stop()
    await cluster?.stop()
    fs.rmSync(tmp, { recursive: true, force: true })
  })

  it("moves a follower and a leader to the third broker, kafka-reassign-partitions --verify and --cancel follow it", async () => {
    const [b1, b2, b3] = cluster.brokers as [ClusterServer, ClusterServer, ClusterServer]
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--replica-assignment",
        "1:2,2:1"
      ])
    )
    await Wait.eventually("full ISRs", async () => {
      const ps = await metadata(b1, TOPIC)
      return ps.length === 2 && ps.every((p) => p.leader >= 0 && p.isr.length === 2) ? true : undefined
    })
    await produce(b1, TOPIC, [0, 1], 0, RECORDS)

    const generated = JavaTools.expectSuccess(
      "--generate",
      await reassign([
        "--generate",
        "--topics-to-move-json-file",
        file("topics.json", { version: 1, topics: [{ topic: TOPIC }] }),
        "--broker-list",
        "1,3"
      ])
    ).stdout
    expect(generated).toContain("Current partition replica assignment")
    const proposed = JSON.parse(generated.split("Proposed partition reassignment configuration")[1]!.trim()) as {
      partitions: ReadonlyArray<{ topic: string; partition: number; replicas: ReadonlyArray<number> }>
    }
    expect(proposed.partitions.map((p) => [p.partition, [...p.replicas].sort()])).toEqual([
      [0, [1, 3]],
      [1, [1, 3]]
    ])

    const plan = file("plan.json", {
      version: 1,
      partitions: [
        { topic: TOPIC, partition: 0, replicas: [1, 3] },
        { topic: TOPIC, partition: 1, replicas: [3, 1] }
      ]
    })
    const moving = [0, 1].reduce(
      (n, p) => n + [...segments(p === 0 ? b1 : b2, TOPIC, p).values()].reduce((m, b) => m + b.length, 0),
      0
    )
    expect(moving).toBeGreaterThan(2_400_000)
    const executed = JavaTools.expectSuccess(
      "--execute --throttle",
      await reassign(["--execute", "--reassignment-json-file", plan, "--throttle", String(THROTTLE)])
    ).stdout
    expect(executed).toMatch(started([`${TOPIC}-0`, `${TOPIC}-1`]))
    expect(executed).toContain(`The inter-broker throttle limit was set to ${THROTTLE} B/s`)
    // Timed from the tool's exit, so the move's time is under-counted, never over.
    const since = performance.now()
    const moved = Wait.eventually(
      "broker 3 in both ISRs",
      async () => ((await metadata(b1, TOPIC)).every((p) => p.isr.includes(3)) ? performance.now() - since : undefined),
      120_000,
      100
    )
    void moved.catch(() => undefined)
    // While it moves, the throttles are in force: the rates on every broker of the move, the replicas on the topic.
    const describe = async (...entity: ReadonlyArray<string>) =>
      JavaTools.expectSuccess(
        "kafka-configs --describe",
        await JavaTools.configs(["--bootstrap-server", bootstrap, "--describe", "--entity-type", ...entity])
      ).stdout
    /** Each broker's dynamic configs, from `kafka-configs --describe --entity-type brokers` (every broker). */
    const brokerConfigs = async () =>
      new Map(
        (await describe("brokers"))
          .split("Dynamic configs for broker ")
          .slice(1)
          .map((block) => [block.slice(0, block.indexOf(" ")), block] as const)
      )
    const rates = await brokerConfigs()
    expect([...rates.keys()].sort()).toEqual(["1", "2", "3"])
    for (const block of rates.values()) {
      expect(block).toContain(`leader.replication.throttled.rate=${THROTTLE} `)
      expect(block).toContain(`follower.replication.throttled.rate=${THROTTLE} `)
    }
    const topicThrottles = await describe("topics", "--entity-name", TOPIC)
    const listed = (key: string) =>
      (new RegExp(`${key.replaceAll(".", "\\.")}=([0-9:,*]+)`).exec(topicThrottles)?.[1] ?? "").split(",").sort()
    expect(listed("leader.replication.throttled.replicas")).toEqual(["0:1", "0:2", "1:1", "1:2"])
    expect(listed("follower.replication.throttled.replicas")).toEqual(["0:3", "1:3"])
    // At the rate the move takes bytes/rate (less the first window's burst); unthrottled it takes well under 1 s.
    const tookMs = await moved
    expect(tookMs).toBeGreaterThanOrEqual(0.4 * (moving / THROTTLE) * 1000)

    const verified = await verifyUntilDone(plan, [`${TOPIC}-0`, `${TOPIC}-1`])
    expect(verified).toContain("Clearing broker-level throttles on brokers 1,2,3")
    expect(verified).toContain(`Clearing topic-level throttles on topic ${TOPIC}`)
    for (const block of (await brokerConfigs()).values()) expect(block).not.toContain("replication.throttled")
    expect(await describe("topics", "--entity-name", TOPIC)).not.toContain("replication.throttled")

    const described = JavaTools.expectSuccess(
      "kafka-topics --describe",
      await JavaTools.kafkaTopics(["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC])
    ).stdout
    expect(described).toMatch(/Partition: 0\s+Leader: 1\s+Replicas: 1,3\s+Isr: 1,3/)
    expect(described).toMatch(/Partition: 1\s+Leader: 3\s+Replicas: 3,1\s+Isr: 1,3/)

    // The removed replicas' data is deleted; broker 2 hosts nothing of the topic any more.
    await Wait.eventually(
      "the removed replicas' directories gone",
      async () => (!hosts(b2, TOPIC, 0) && !hosts(b2, TOPIC, 1) ? true : undefined),
      30_000,
      200
    )
    // The new replicas hold the leaders' segments byte for byte.
    for (const [partition, leader, moved] of [
      [0, b1, b3],
      [1, b3, b1]
    ] as const) {
      const want = segments(leader, TOPIC, partition)
      expect([...want.values()].reduce((n, b) => n + b.length, 0)).toBeGreaterThan(RECORDS * 10)
      const got = segments(moved, TOPIC, partition)
      expect([...got.keys()]).toEqual([...want.keys()])
      for (const [name, bytes] of want) expect(got.get(name)!.equals(bytes), `${TOPIC}-${partition}/${name}`).toBe(true)
    }

    // New records replicate to the new replica sets, and kcat reads every record of both partitions.
    await produce(b3, TOPIC, [0, 1], RECORDS, 50)
    const kcat = Kcat.forBootstrap(bootstrap)
    for (const partition of [0, 1]) {
      const out = await kcat(["-C", "-t", TOPIC, "-p", String(partition), "-o", "beginning", "-e", "-q"])
      const values = out.stdout.split("\n").filter((l) => l !== "")
      expect(values).toEqual(Array.from({ length: RECORDS + 50 }, (_, i) => recordValue(TOPIC, partition, i)))
    }
    await Wait.eventually(
      "the new records on every new replica",
      async () => {
        const ps = await metadata(b1, TOPIC)
        if (!ps.every((p) => p.isr.length === 2)) return undefined
        const same = [
          [0, b1, b3],
          [1, b3, b1]
        ].every(([partition, leader, moved]) => {
          const a = segments(leader as ClusterServer, TOPIC, partition as number)
          const b = segments(moved as ClusterServer, TOPIC, partition as number)
          return [...a].every(([name, bytes]) => b.get(name)?.equals(bytes) === true)
        })
        return same ? true : undefined
      },
      30_000,
      200
    )
    // Nothing is being reassigned any more, so a cancel finds nothing.
    const cancel = await reassign(["--cancel", "--reassignment-json-file", plan])
    expect(cancel.stdout).toContain("None of the specified partition moves are active.")
  })

  it("keeps mirroring a mirror topic whose leader a reassignment moves to another broker", async () => {
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
    await produce(source, mirrored, [0], 0, 100)
    const config = path.join(tmp, "mirror.properties")
    fs.writeFileSync(config, `bootstrap.servers=${source.bootstrap}\n`)
    expect(
      (await cli(["--bootstrap-server", bootstrap, "--create", "--mirror", "dr", "--mirror-config", config])).code
    ).toBe(0)
    expect((await cli(["--bootstrap-server", bootstrap, "--start", "--mirror", "dr", "--topics", mirrored])).code).toBe(
      0
    )

    const client = new ClusterClient.Client({ bootstrapServers: bootstrap.split(","), requestTimeoutMs: 30_000 })
    const admin = new MirrorAdmin.MirrorAdmin(client)
    const caughtUp = (offset: bigint, what: string) =>
      Wait.eventually(
        what,
        async () => {
          const d = await admin.describeClusterMirrors(["dr"])
          const p = (d.mirrors[0]?.partitions ?? []).find((x) => x.topic === mirrored)
          return p !== undefined && p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= offset ? p : undefined
        },
        120_000,
        500
      )
    try {
      await caughtUp(99n, "the mirror caught up")
      await Wait.eventually("both destination replicas in sync", async () => {
        const [p] = await metadata(cluster.brokers[0]!, mirrored)
        return p !== undefined && p.isr.length === 2 ? true : undefined
      })
      const [before] = await metadata(cluster.brokers[0]!, mirrored)
      const third = [1, 2, 3].find((b) => !before!.replicas.includes(b))!
      const kept = before!.replicas.find((b) => b !== before!.leader)!
      // The leader (where the mirror fetcher runs) is replaced by the third broker.
      const plan = file("mirror-plan.json", {
        version: 1,
        partitions: [{ topic: mirrored, partition: 0, replicas: [third, kept] }]
      })
      expect(await execute(plan)).toMatch(started([`${mirrored}-0`]))
      await verifyUntilDone(plan, [`${mirrored}-0`])
      const [after] = await metadata(cluster.brokers[0]!, mirrored)
      expect(after).toMatchObject({ leader: third, replicas: [third, kept] })
      const oldLeader = cluster.brokers[before!.leader - 1]!
      await Wait.eventually(
        "the old leader's replica deleted",
        async () => (!hosts(oldLeader, mirrored, 0) ? true : undefined),
        30_000,
        200
      )

      // New source records reach the destination through the new leader's mirror fetcher.
      await produce(source, mirrored, [0], 100, 50)
      await caughtUp(149n, "the mirror caught up again on the new leader")
      const c = await MirrorCheck.compareClusters({
        source: source.bootstrap,
        destination: bootstrap,
        topics: [mirrored],
        upTo: "sourceHighWatermark"
      })
      expect(c.partitions.filter((p) => p.firstMismatch !== null)).toEqual([])
      expect(c.identical).toBe(true)
    } finally {
      await client.close()
    }
  })
})
