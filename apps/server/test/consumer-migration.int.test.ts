/**
 * Consumer groups of KIP-848 side by side with Apache Kafka 4.4, the same scenario on both at once:
 *
 * - Java console consumers with `group.protocol=consumer`: two share a 6-partition topic, a third joins
 *   and leaves again; every record is consumed exactly once, and `kafka-consumer-groups --describe
 *   --members --verbose` shows the same columns, member count and partitions per member on both while
 *   the three are reconciled, and two members once the third left.
 * - A rolling upgrade of a classic group: one of two classic members is restarted with
 *   `group.protocol=consumer`. On Kafka the group becomes a consumer group keeping the classic member
 *   (online upgrade); clustermirror does not keep classic members in a consumer group, so the restarted
 *   member is refused with GROUP_ID_NOT_FOUND naming why, and the classic member consumes the rest. On
 *   both, every record is consumed exactly once.
 */
import { ApacheKafka, JavaTools, KafkaPeer, ServerProcess } from "@clustermirror/testkit"
import { Kafka, logLevel } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const GROUP_CONFIG = {
  "offsets.topic.replication.factor": 1,
  "offsets.topic.num.partitions": 1,
  "group.initial.rebalance.delay.ms": 0,
  "group.consumer.heartbeat.interval.ms": 500,
  "group.consumer.session.timeout.ms": 10_000
}
// Kafka bounds the consumer group intervals from below (5 s and 45 s by default).
const KAFKA_BOUNDS = {
  "group.consumer.min.heartbeat.interval.ms": 500,
  "group.consumer.min.session.timeout.ms": 10_000
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 40_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(300)
  }
}

interface Peer {
  readonly name: string
  readonly bootstrap: string
}

const client = (p: Peer) =>
  new Kafka({ clientId: "cgm", brokers: [p.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 20 } })

const createTopic = async (p: Peer, topic: string, partitions: number) => {
  const admin = client(p).admin()
  await admin.connect()
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }] })
  } finally {
    await admin.disconnect()
  }
}

/**
 * Produces `perTick` records every 600 ms, one to each of partitions 0..perTick-1, until stopped (so that members with an idle timeout stay busy
 * while the group changes); `stop` answers every value sent.
 */
const producing = async (p: Peer, topic: string, prefix: string, perTick: number) => {
  const producer = client(p).producer()
  await producer.connect()
  const sent: Array<string> = []
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const batch = Array.from({ length: perTick }, (_, i) => `${prefix}-${sent.length + i}`)
      // One record to each partition per tick: keys alone would leave some partitions without records (k0..k5
      // hash to four of six), and a member holding only those would idle out of the group.
      await producer.send({
        topic,
        acks: -1,
        messages: batch.map((value, i) => ({ key: `k${i}`, value, partition: i % perTick }))
      })
      sent.push(...batch)
      await sleep(600)
    }
  })()
  let done: Promise<ReadonlyArray<string>> | undefined
  return {
    stop: (): Promise<ReadonlyArray<string>> => {
      stopped = true
      done ??= loop.then(() => producer.disconnect()).then(() => sent)
      return done
    }
  }
}

/**
 * A Java console consumer of `group`: until idle for `idleMs`, or, with `maxMessages`, until it printed
 * that many (one record per poll, so that the offsets it commits on close are exactly those it printed).
 */
const consumer = (
  p: Peer,
  topic: string,
  group: string,
  protocol: "consumer" | "classic",
  idleMs: number,
  maxMessages?: number
) =>
  JavaTools.consoleConsumer(
    [
      ...["--bootstrap-server", p.bootstrap, "--topic", topic, "--group", group, "--from-beginning"],
      ...["--timeout-ms", String(idleMs)],
      ...["--consumer-property", `group.protocol=${protocol}`],
      ...["--consumer-property", "auto.commit.interval.ms=300"],
      ...(maxMessages === undefined
        ? []
        : ["--max-messages", String(maxMessages), "--consumer-property", "max.poll.records=1"])
    ],
    { timeoutMs: 80_000 }
  )

/** `--describe --members --verbose`: the header's columns and one row per member, by column. */
const describeMembers = async (p: Peer, group: string) => {
  const r = await JavaTools.consumerGroups([
    ...["--bootstrap-server", p.bootstrap, "--describe", "--group", group, "--members", "--verbose"]
  ])
  const lines = JavaTools.lines(r.stdout)
  const header =
    lines
      .find((l) => l.startsWith("GROUP"))
      ?.trim()
      .split(/\s+/) ?? []
  const rows = lines
    .filter((l) => l.startsWith(group))
    .map((l) =>
      Object.fromEntries(
        l
          .trim()
          .split(/\s+/)
          .map((v, i) => [header[i] ?? String(i), v])
      )
    )
  return { header, rows, raw: r.stdout + r.stderr.slice(-1000) }
}

const partitionCounts = (rows: ReadonlyArray<Record<string, string>>) =>
  rows.map((r) => Number(r["#PARTITIONS"])).sort((a, b) => a - b)

const values = (outputs: ReadonlyArray<JavaTools.ToolResult>, prefix: RegExp) =>
  outputs
    .flatMap((r) => JavaTools.lines(r.stdout))
    .filter((l) => prefix.test(l))
    .sort()

describe("consumer group migration and membership, compared with Apache Kafka 4.4", () => {
  let kafka: ApacheKafka.KafkaNode
  let ours: ServerProcess.ServerHandle
  let peers: ReadonlyArray<Peer>

  beforeAll(async () => {
    await KafkaPeer.libs()
    ;[kafka, ours] = await Promise.all([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...GROUP_CONFIG, ...KAFKA_BOUNDS }
      }),
      ServerProcess.start({
        tempPrefix: "cm-consumer-migration-",
        config: { ...ServerProcess.TEST_DEFAULTS, ...GROUP_CONFIG }
      })
    ])
    peers = [
      { name: "kafka", bootstrap: kafka.bootstrap },
      { name: "clustermirror", bootstrap: ours.bootstrap }
    ]
  }, 120_000)

  afterAll(async () => {
    await ours?.stop()
    await kafka?.stop()
  })

  it("two consumer-protocol members, a third joins and leaves: each record once, the same describe on both", async () => {
    const TOPIC = "cgm-grow"
    const GROUP = "cgm-grow-group"
    const run = async (p: Peer) => {
      await createTopic(p, TOPIC, 6)
      const records = await producing(p, TOPIC, "g", 6)
      try {
        const a = consumer(p, TOPIC, GROUP, "consumer", 8_000)
        const b = consumer(p, TOPIC, GROUP, "consumer", 8_000)
        let seen = await describeMembers(p, GROUP)
        const stage = (what: string, n: number) =>
          until(`${p.name}: ${what}`, async () => {
            seen = await describeMembers(p, GROUP)
            return seen.rows.length === n && partitionCounts(seen.rows).every((k) => k > 0)
          }).catch((e: Error) => Promise.reject(new Error(`${e.message}:\n${seen.raw}`)))
        await stage("two members with partitions", 2)
        const c = consumer(p, TOPIC, GROUP, "consumer", 20_000, 40)
        await stage("three reconciled members", 3)
        const three = seen
        const left = await c
        await stage("two members once the third left", 2)
        const after = seen
        const sent = await records.stop()
        const [ra, rb] = await Promise.all([a, b])
        return { outputs: [ra, rb, left], sent, three, after }
      } finally {
        await records.stop()
      }
    }
    const [onKafka, onUs] = await Promise.all(peers.map(run))
    for (const r of [onKafka!, onUs!]) {
      expect(r.outputs.map((o) => o.code)).toEqual([0, 0, 0])
      expect(values(r.outputs, /^g-\d+$/)).toEqual([...r.sent].sort())
      expect(values([r.outputs[2]!], /^g-\d+$/)).toHaveLength(40)
    }
    expect(onUs!.three.header).toEqual(onKafka!.three.header)
    expect(partitionCounts(onKafka!.three.rows)).toEqual([2, 2, 2])
    expect(partitionCounts(onUs!.three.rows)).toEqual(partitionCounts(onKafka!.three.rows))
    expect(partitionCounts(onUs!.after.rows)).toEqual(partitionCounts(onKafka!.after.rows))
  }, 100_000)

  it("a rolling upgrade of a classic group: Kafka converts it, clustermirror refuses the upgraded member; each record once on both", async () => {
    const TOPIC = "cgm-roll"
    const GROUP = "cgm-roll-group"
    /** Whether `--list --type consumer` lists the group (rows of `GROUP TYPE`). */
    const isConsumerGroup = async (p: Peer) =>
      JavaTools.lines(
        (await JavaTools.consumerGroups(["--bootstrap-server", p.bootstrap, "--list", "--type", "consumer"])).stdout
      ).some((l) => l.trim().split(/\s+/)[0] === GROUP)
    const run = async (p: Peer) => {
      await createTopic(p, TOPIC, 4)
      const records = await producing(p, TOPIC, "r", 4)
      try {
        const x = consumer(p, TOPIC, GROUP, "classic", 15_000)
        const y = consumer(p, TOPIC, GROUP, "classic", 20_000, 20)
        const first = await y
        // y is restarted with the consumer protocol.
        const upgraded = consumer(p, TOPIC, GROUP, "consumer", 15_000, 15)
        // While the upgraded member runs: a consumer group on Kafka (the classic member kept in it).
        let converted = false
        let running = true
        void upgraded.finally(() => {
          running = false
        })
        while (running && !converted) converted = await isConsumerGroup(p)
        const second = await upgraded
        const sent = await records.stop()
        return { outputs: [await x, first, second], sent, converted }
      } finally {
        await records.stop()
      }
    }
    const [onKafka, onUs] = await Promise.all(peers.map(run))
    for (const [name, r] of [
      ["kafka", onKafka!],
      ["clustermirror", onUs!]
    ] as const)
      expect(
        values(r.outputs, /^r-\d+$/),
        `${name}: ${r.outputs.map((o) => `exit ${o.code}, ${values([o], /^r-\d+$/).length} records: ${o.stderr.slice(-600)}`).join("\n")}`
      ).toEqual([...r.sent].sort())
    expect(onKafka!.outputs.map((o) => o.code)).toEqual([0, 0, 0])
    expect(onKafka!.converted).toBe(true)
    const [x, y, upgraded] = onUs!.outputs
    expect([x!.code, y!.code]).toEqual([0, 0])
    expect(upgraded!.stderr).toContain(`Cannot upgrade classic group ${GROUP} to consumer group`)
    expect(values([upgraded!], /^r-\d+$/)).toEqual([])
    expect(onUs!.converted).toBe(false)
  }, 100_000)
})
