/**
 * A disaster-recovery drill for an exactly-once Kafka Streams application (KIP-1279 §5.4, §5.9 c): the
 * word count (`exactly_once_v2`) runs on Apache Kafka 4.4 over input written by a transactional Java
 * producer (committed transactions, an aborted one, one left open), then stops. Every topic of the
 * application (input, repartition, changelog, output) is mirrored to our 3-broker cluster with group
 * offset sync, so the offsets Streams committed with TxnOffsetCommit reach the destination; the mirror is
 * stopped (failover, the source transaction still open).
 *
 * Then the same second phase runs on both clusters: more transactional input, and the application
 * restarted with the same application id and an empty state dir (the machine was lost). On the
 * destination it restores its store from the mirrored changelog and resumes from the synced offsets; on
 * Kafka it does the same from Kafka's own topics, as the reference. Both end with the counts of the
 * committed input of both phases, no word of an aborted (or open at the failover) transaction counted, and
 * the destination's output continues the mirrored one, whose offsets and bytes are the source's.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  ApacheKafka,
  IsolatedConsumer,
  JavaTools,
  KafkaPeer,
  KafkaStreams,
  Kcat,
  MirrorCheck,
  Ports,
  ServerProcess,
  TransactionalProducer,
  Wait
} from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const PARTITIONS = 3
const APP = "wordcount"
const INPUT = "lines"
const OUTPUT = "word-counts"
const REPARTITION = `${APP}-words-repartition`
const CHANGELOG = `${APP}-counts-changelog`
const TOPICS = [INPUT, REPARTITION, CHANGELOG, OUTPUT]
const MIRROR = "dr"

type Plan = ReadonlyArray<TransactionalProducer.Step>
/** Phase 1 on the source: the last transaction is still open at the failover. */
const PLAN_1: Plan = [
  { kind: "commit", records: 150 },
  { kind: "abort", records: 40 },
  { kind: "commit", records: 150 },
  { kind: "open", records: 30 }
]
/** Phase 2, the same on both clusters after the failover. */
const PLAN_2: Plan = [
  { kind: "commit", records: 80 },
  { kind: "abort", records: 20 },
  { kind: "commit", records: 80 }
]

/**
 * The lines of a plan: the committed steps' from `KafkaStreams.sampleLines(phase)`, the others' of words
 * no committed line has (`lost<phase>x<n>`), so a count of one of them is a counted aborted record.
 */
const linesFor = (phase: number, plan: Plan): ReadonlyArray<string> => {
  const committed = plan.filter(TransactionalProducer.isCommitted).reduce((n, s) => n + s.records, 0)
  const sample = KafkaStreams.sampleLines(phase, committed)
  let next = 0
  return plan.flatMap((s) =>
    TransactionalProducer.isCommitted(s)
      ? sample.slice(next, (next += s.records))
      : Array.from({ length: s.records }, (_, i) => `lost${phase}x${i % 7} LOST${phase}x${i % 5}`)
  )
}
const LINES_1 = linesFor(0, PLAN_1)
const LINES_2 = linesFor(1, PLAN_2)
const COMMITTED_1 = TransactionalProducer.linesOf(PLAN_1, LINES_1, TransactionalProducer.isCommitted)
const COMMITTED_2 = TransactionalProducer.linesOf(PLAN_2, LINES_2, TransactionalProducer.isCommitted)

/** A group's committed offsets as Kafka's consumer-groups tool shows them: `topic:partition` → offset. */
const groupOffsets = async (bootstrap: string, group: string): Promise<Record<string, number>> => {
  const r = JavaTools.expectSuccess(
    "kafka-consumer-groups",
    await JavaTools.consumerGroups(["--bootstrap-server", bootstrap, "--describe", "--group", group])
  )
  const out: Record<string, number> = {}
  for (const f of JavaTools.lines(r.stdout).map((l) => l.trim().split(/\s+/)))
    if (f[0] === group && /^\d+$/.test(f[2] ?? "") && /^\d+$/.test(f[3] ?? "")) out[`${f[1]}:${f[2]}`] = Number(f[3])
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)))
}

describe("failover of an exactly-once Streams application from Apache Kafka", () => {
  let kafka: ApacheKafka.KafkaNode | undefined
  let destination: ServerProcess.ServerHandle | undefined
  let client: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  let destinationBootstrap: string
  const producers: TransactionalProducer.ProducerHandle[] = []
  const apps: KafkaStreams.WordCountHandle[] = []
  const stateDirs: string[] = []

  const produce = async (bootstrap: string, transactionalId: string, plan: Plan, lines: ReadonlyArray<string>) => {
    const p = await TransactionalProducer.start({
      bootstrap,
      topic: INPUT,
      partitions: PARTITIONS,
      transactionalId,
      compression: "lz4",
      prefix: transactionalId,
      plan,
      lines
    })
    producers.push(p)
    return p
  }
  /** The word count on `bootstrap` with a state dir of its own, empty. */
  const startApp = async (bootstrap: string, replicationFactor: number) => {
    const stateDir = mkdtempSync(join(tmpdir(), "cm-streams-dr-state-"))
    stateDirs.push(stateDir)
    const app = await KafkaStreams.startWordCount({
      bootstrap,
      applicationId: APP,
      inputTopic: INPUT,
      outputTopic: OUTPUT,
      stateDir,
      commitIntervalMs: 200,
      replicationFactor,
      properties: { "repartition.purge.interval.ms": 500 }
    })
    apps.push(app)
    return app
  }

  beforeAll(async () => {
    await Promise.all([KafkaPeer.libs(), KafkaPeer.streamsLibs()])
    const port = await Ports.freePort()
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: {
          ...ApacheKafka.QUICK_SESSION_PROPERTIES,
          "group.initial.rebalance.delay.ms": 0,
          "num.partitions": PARTITIONS
        }
      }).then((k) => (kafka = k)),
      ServerProcess.start({
        tempPrefix: "cm-streams-dr-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          ...ServerProcess.TEST_DEFAULTS,
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "transaction.state.log.replication.factor": 3,
          "transaction.state.log.min.isr": 2,
          "broker.heartbeat.interval.ms": 300,
          "mirror.state.topic.num.partitions": 5
        }
      }).then((d) => (destination = d))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    destinationBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
    client = new ClusterClient.Client({ bootstrapServers: destinationBootstrap.split(","), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(client)
    await Wait.eventually("3 destination brokers", async () =>
      (await client.metadata([])).brokers.size === 3 ? true : undefined
    )
  }, 300_000)

  afterAll(async () => {
    await Promise.all([...apps.map((a) => a.kill()), ...producers.map((p) => p.stop())])
    for (const d of stateDirs) rmSync(d, { recursive: true, force: true })
    await client?.close()
    await destination?.stop()
    await kafka?.stop()
  })

  it("resumes on the destination from the mirrored changelog and synced offsets, with Kafka's output", async () => {
    const source = kafka!.bootstrap
    const expected1 = KafkaStreams.expectedCounts(COMMITTED_1)
    const expectedBoth = KafkaStreams.expectedCounts([...COMMITTED_1, ...COMMITTED_2])
    // Phase 2 brings words of phase 1 (a store not restored would count them from zero) and new ones.
    const words2 = [...KafkaStreams.expectedCounts(COMMITTED_2).keys()]
    expect(words2.filter((w) => expected1.has(w)).length).toBeGreaterThan(0)
    expect(words2.filter((w) => !expected1.has(w)).length).toBeGreaterThan(0)

    // 1. Phase 1 on Kafka: the input, its last transaction left open, and the application up to its counts.
    for (const topic of [INPUT, OUTPUT])
      JavaTools.expectSuccess(
        "kafka-topics",
        await JavaTools.kafkaTopics([
          "--bootstrap-server",
          source,
          "--create",
          "--topic",
          topic,
          "--partitions",
          String(PARTITIONS)
        ])
      )
    const open = await produce(source, "lines-1", PLAN_1, LINES_1)
    expect(open.isAlive()).toBe(true)
    const first = await startApp(source, 1)
    expect(await KafkaStreams.awaitCounts(first, source, OUTPUT, expected1)).toEqual(KafkaStreams.toRecord(expected1))
    // Streams purges the repartition records it committed (DeleteRecords): the mirror starts from a moved log start.
    await Wait.eventually(
      "the repartition topic purged on Kafka",
      async () => {
        const start = await Kcat.partitionOffsets(source, REPARTITION, PARTITIONS, -2)
        return start.every((s) => s > 0) ? true : undefined
      },
      60_000,
      500
    )
    await first.close()
    const sourceGroup = await groupOffsets(source, APP)
    expect(Object.keys(sourceGroup)).toEqual(
      [INPUT, REPARTITION].flatMap((t) => Array.from({ length: PARTITIONS }, (_, p) => `${t}:${p}`)).sort()
    )

    // 2. Mirror every topic of the application, with the group's offsets, until lag 0 and the group synced.
    await admin.createClusterMirror(
      MIRROR,
      new Map([
        ["bootstrap.servers", source],
        ["mirror.metadata.refresh.interval.ms", "500"]
      ])
    )
    expect((await admin.startMirrorTopics(MIRROR, TOPICS)).map((t) => t.error)).toEqual(TOPICS.map(() => null))
    const partitions = async () => (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions ?? []
    const mirroredEnds = await Wait.eventually(
      "every partition mirrored with lag 0",
      async () => {
        const ps = await partitions()
        return ps.length === TOPICS.length * PARTITIONS && ps.every((p) => p.state === "MIRRORING" && p.lag === 0n)
          ? ps
          : undefined
      },
      90_000,
      250
    ).then((ps) => new Map(ps.map((p) => [`${p.topic}:${p.partition}`, Number(p.sourceOffset)])))
    const synced = await Wait.eventually(
      "the Streams group's offsets synced",
      async () => {
        const status = (await admin.describeGroupSync(MIRROR)).find((g) => g.group === APP)
        return status?.state === "SYNCED" && status.offsets.length === 2 * PARTITIONS ? status : undefined
      },
      60_000,
      250
    )
    expect(
      Object.fromEntries(synced.offsets.map((o) => [`${o.topic}:${o.partition}`, Number(o.sourceOffset)]))
    ).toEqual(sourceGroup)
    expect(synced.offsets.every((o) => o.offset === o.sourceOffset)).toBe(true)
    expect(await groupOffsets(destinationBootstrap, APP)).toEqual(sourceGroup)

    // 3. Failover: stop the mirror topics, the source's input transaction still open.
    await admin.stopMirrorTopics(MIRROR, TOPICS)
    await Wait.eventually(
      "every partition stopped",
      async () => {
        const ps = await partitions()
        return ps.length === TOPICS.length * PARTITIONS && ps.every((p) => p.state === "STOPPED") ? true : undefined
      },
      60_000,
      250
    )
    const compared = await MirrorCheck.compareClusters({
      source,
      destination: destinationBootstrap,
      topics: TOPICS,
      upTo: "sourceHighWatermark"
    })
    expect(compared.partitions.filter((p) => p.firstMismatch !== null).map((p) => JSON.stringify(p))).toEqual([])
    // Every topic of the application has 3 replicas on the destination (1 on the single Kafka node).
    const metadata = await client.metadata(TOPICS)
    for (const topic of TOPICS)
      expect([...metadata.topics.get(topic)!.partitions.values()].map((p) => [topic, p.replicas.length])).toEqual(
        Array.from({ length: PARTITIONS }, () => [topic, 3])
      )
    // The destination's logs start where the source's do: the repartition topic's where Streams purged it.
    for (const p of compared.partitions)
      expect([p.topic, p.partition, p.destinationStart]).toEqual([p.topic, p.partition, p.sourceStart])
    for (const p of compared.partitions.filter((c) => c.topic === REPARTITION)) expect(p.sourceStart).toBeGreaterThan(0)
    const sourceOutputEnds = await Kcat.partitionOffsets(source, OUTPUT, PARTITIONS, -1)
    sourceOutputEnds.forEach((end, p) => {
      expect(mirroredEnds.get(`${OUTPUT}:${p}`)).toBe(end)
    })
    // On the source, the open transaction ends as the stop ended it on the destination: aborted.
    await open.abort()

    // 4 and 5. Phase 2 on the destination and, as the reference, on Kafka: more input, the application
    // restarted with the same id and an empty state dir.
    const phase2 = async (bootstrap: string, replicationFactor: number) => {
      await produce(bootstrap, "lines-2", PLAN_2, LINES_2)
      const app = await startApp(bootstrap, replicationFactor)
      const seen = await KafkaStreams.awaitCounts(app, bootstrap, OUTPUT, expectedBoth)
      await app.close()
      return { seen, final: KafkaStreams.toRecord(await KafkaStreams.readCounts(bootstrap, OUTPUT)) }
    }
    const [onDestination, onKafka] = await Promise.all([phase2(destinationBootstrap, 3), phase2(source, 1)])
    const want = KafkaStreams.toRecord(expectedBoth)
    expect(onDestination.seen).toEqual(want)
    expect(onKafka.seen).toEqual(want)
    expect(onDestination.final).toEqual(onKafka.final)
    expect(onDestination.final).toEqual(want)
    for (const counts of [onDestination.final, onKafka.final])
      expect(Object.keys(counts).filter((w) => w.startsWith("lost"))).toEqual([])

    // The destination's output: the mirrored part at the source's offsets, then the new counts after it.
    const [dstOutput, srcOutput] = await Promise.all(
      [destinationBootstrap, source].map((bootstrap) =>
        IsolatedConsumer.consume({ bootstrap, topic: OUTPUT, partitions: PARTITIONS, isolationLevel: "read_committed" })
      )
    )
    const mirroredPart = (c: IsolatedConsumer.Consumed) =>
      c.records.filter((r) => r.offset < sourceOutputEnds[r.partition]!)
    expect(mirroredPart(dstOutput!)).toEqual(mirroredPart(srcOutput!))
    expect(mirroredPart(dstOutput!).length).toBeGreaterThan(0)
    for (let p = 0; p < PARTITIONS; p++) {
      const after = dstOutput!.records.filter((r) => r.partition === p && r.offset >= sourceOutputEnds[p]!)
      expect(after.length).toBeGreaterThan(0)
    }
  }, 400_000)
})
