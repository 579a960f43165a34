/**
 * Log compaction against Apache Kafka 4.4: the same keyed input (updates to a few keys, then tombstones),
 * produced with kcat to a compacted topic on our server and on Kafka, ends with the same records at the
 * same offsets on both once the cleaners ran: the last value per key, at its original offset, and the
 * tombstones gone after `delete.retention.ms`. A compacted Kafka topic (offset gaps) is then mirrored
 * byte for byte (the mirror topic compacted from its creation: it has Kafka's topic configs as soon as the
 * start answers), keeps mirroring while Kafka compacts again, and after a failover is compacted here.
 */
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { ApacheKafka, JavaTools, Kcat, KafkaPeer, MirrorCheck, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const TOPIC = "compacted"
const TOPIC_CONFIGS = {
  "cleanup.policy": "compact",
  "segment.ms": "100",
  "min.cleanable.dirty.ratio": "0.01",
  "delete.retention.ms": "1000",
  "min.compaction.lag.ms": "0"
}
const CLEANER = { "log.cleaner.backoff.ms": 100, "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024 }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("log compaction, compared with Apache Kafka", () => {
  let kafka: ApacheKafka.KafkaNode
  let ours: ServerProcess.ServerHandle

  beforeAll(async () => {
    await KafkaPeer.libs()
    ;[kafka, ours] = await Promise.all([
      ApacheKafka.startKafka({ jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS, properties: CLEANER }),
      ServerProcess.start({
        tempPrefix: "cm-compaction-",
        config: {
          ...ServerProcess.TEST_DEFAULTS,
          ...CLEANER,
          "mirror.state.topic.num.partitions": 1,
          "mirror.state.topic.replication.factor": 1,
          // The source's topic configs (cleanup.policy=compact) come with the start, not with a refresh.
          "mirror.metadata.refresh.interval.ms": 600_000
        }
      })
    ])
  }, 300_000)

  afterAll(async () => {
    await ours?.stop()
    await kafka?.stop()
  })

  const createTopic = async (bootstrap: string, topic: string) =>
    JavaTools.expectSuccess(
      "kafka-topics",
      await JavaTools.kafkaTopics([
        ...["--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "1"],
        ...["--replication-factor", "1"],
        ...Object.entries(TOPIC_CONFIGS).flatMap(([k, v]) => ["--config", `${k}=${v}`])
      ])
    )
  /** Every record of `topic` from the start: offset, key, value (NULL for a tombstone). */
  const readAll = async (bootstrap: string, topic: string) =>
    JavaTools.lines(
      (await Kcat.kcat(["-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-Z", "-f", "%o %k %s\\n"]))
        .stdout
    )
  const produce = (bootstrap: string, topic: string, records: ReadonlyArray<readonly [string, string | null]>) =>
    Kcat.kcat(["-b", bootstrap, "-P", "-t", topic, "-K:", "-Z"], {
      input: `${records.map(([k, v]) => `${k}:${v ?? ""}`).join("\n")}\n`
    })

  it("keeps the same last value per key at the same offsets, and drops tombstones after delete.retention.ms", async () => {
    const clusters = [kafka.bootstrap, ours.bootstrap]
    for (const bootstrap of clusters)
      JavaTools.expectSuccess(
        "kafka-topics",
        await JavaTools.kafkaTopics([
          ...["--bootstrap-server", bootstrap, "--create", "--topic", TOPIC, "--partitions", "1"],
          ...["--replication-factor", "1"],
          ...Object.entries(TOPIC_CONFIGS).flatMap(([k, v]) => ["--config", `${k}=${v}`])
        ])
      )
    // Each round goes to both at once, then waits past segment.ms so that the next round rolls a segment.
    const round = async (records: ReadonlyArray<readonly [string, string | null]>) => {
      const input = `${records.map(([k, v]) => `${k}:${v ?? ""}`).join("\n")}\n`
      await Promise.all(clusters.map((b) => Kcat.kcat(["-b", b, "-P", "-t", TOPIC, "-K:", "-Z"], { input })))
      await sleep(400)
    }
    const keys = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `k${from + i}`)
    await round(keys(0, 10).map((k) => [k, `${k}-a`] as const))
    await round(keys(0, 10).map((k) => [k, `${k}-b`] as const))
    await round(keys(0, 3).map((k) => [k, null] as const))
    await round(keys(3, 6).map((k) => [k, `${k}-c`] as const))
    await round([["roll-1", "x"]])

    /** Every record from the start: offset, key, value (NULL for a tombstone). */
    const read = async (bootstrap: string) =>
      JavaTools.lines(
        (
          await Kcat.kcat([
            "-b",
            bootstrap,
            "-C",
            "-t",
            TOPIC,
            "-o",
            "beginning",
            "-e",
            "-q",
            "-Z",
            "-f",
            "%o %k %s\\n"
          ])
        ).stdout
      )
    // First cleaning: one record per key left; the tombstones stay until delete.retention.ms after it.
    for (const bootstrap of clusters)
      await Wait.eventually(
        `first cleaning on ${bootstrap}`,
        async () => ((await read(bootstrap)).some((l) => l.endsWith("-a")) ? undefined : true),
        120_000,
        200
      )
    await sleep(1_500)
    // New dirty data makes both clean again, past the tombstones' horizon.
    await round([["k6", "k6-d"]])
    await round([["roll-2", "y"]])
    const expected = [
      "23 k3 k3-c",
      "24 k4 k4-c",
      "25 k5 k5-c",
      "17 k7 k7-b",
      "18 k8 k8-b",
      "19 k9 k9-b",
      "26 roll-1 x",
      "27 k6 k6-d",
      "28 roll-2 y"
    ].sort()
    const settled: Array<ReadonlyArray<string>> = []
    for (const bootstrap of clusters)
      settled.push(
        await Wait.eventually(
          `tombstones gone on ${bootstrap}`,
          async () => {
            const records = await read(bootstrap)
            return [...records].sort().join("\n") === expected.join("\n") ? records : undefined
          },
          120_000,
          200
        )
      )
    // Same records, same offsets, same order on both.
    expect(settled[1]).toEqual(settled[0])
  }, 400_000)

  it("mirrors a compacted Kafka topic byte for byte, keeps mirroring while Kafka compacts, and compacts it after a failover", async () => {
    const topic = "compacted-mirrored"
    await createTopic(kafka.bootstrap, topic)
    const keys = Array.from({ length: 5 }, (_, i) => `m${i}`)
    for (const v of ["a", "b"]) {
      await produce(
        kafka.bootstrap,
        topic,
        keys.map((k) => [k, `${k}-${v}`] as const)
      )
      await sleep(400)
    }
    await produce(kafka.bootstrap, topic, [["roll-1", "x"]])
    await Wait.eventually(
      "Kafka compacted the topic (offset gaps)",
      async () => ((await readAll(kafka.bootstrap, topic)).some((l) => l.endsWith("-a")) ? undefined : true),
      120_000,
      200
    )
    const client = new ClusterClient.Client({ bootstrapServers: [ours.bootstrap], requestTimeoutMs: 30_000 })
    const admin = new MirrorAdmin.MirrorAdmin(client)
    try {
      await admin.createClusterMirror("compacting", new Map([["bootstrap.servers", kafka.bootstrap]]))
      expect((await admin.startMirrorTopics("compacting", [topic])).map((t) => t.error)).toEqual([null])
      // The mirror topic has Kafka's topic configs (compaction included) from its creation: described once,
      // right after the start, with no refresh in between (the refresh interval is far longer than the test).
      const described = await JavaTools.configs([
        ...["--bootstrap-server", ours.bootstrap, "--describe", "--entity-type", "topics", "--entity-name", topic]
      ])
      for (const [k, v] of Object.entries(TOPIC_CONFIGS)) expect(described.stdout).toContain(`${k}=${v}`)
      const mirrored = async () => {
        const p = (await admin.describeClusterMirrors(["compacting"])).mirrors[0]?.partitions[0]
        return p?.state === "MIRRORING" && p.lag === 0n ? p : undefined
      }
      await Wait.eventually("mirroring with lag 0", mirrored, 120_000, 250)
      const compared = await MirrorCheck.compareClusters({
        source: kafka.bootstrap,
        destination: ours.bootstrap,
        topics: [topic],
        upTo: "sourceHighWatermark"
      })
      expect(compared.partitions.map((p) => p.firstMismatch)).toEqual([null])
      expect(compared.identical).toBe(true)

      // Kafka compacts again while the mirror runs: new updates and tombstones arrive and are mirrored.
      await sleep(400)
      await produce(kafka.bootstrap, topic, [
        ["m0", null],
        ["m1", "m1-c"]
      ])
      await sleep(400)
      await produce(kafka.bootstrap, topic, [["roll-2", "y"]])
      await Wait.eventually(
        "Kafka compacted the new updates",
        async () => ((await readAll(kafka.bootstrap, topic)).some((l) => l.endsWith("m1-b")) ? undefined : true),
        120_000,
        200
      )
      const lastOnKafka = await readAll(kafka.bootstrap, topic)
      const lastOffset = Number(lastOnKafka[lastOnKafka.length - 1]!.split(" ")[0])
      await Wait.eventually(
        "mirrored to the end",
        async () =>
          (await readAll(ours.bootstrap, topic)).some((l) => l.startsWith(`${lastOffset} `)) ? true : undefined,
        120_000,
        250
      )
      expect(await mirrored()).toBeDefined()

      // Failover: the stopped topic is compacted here, to what Kafka keeps (same offsets).
      await admin.stopMirrorTopics("compacting", [topic])
      await Wait.eventually(
        "stopped",
        async () =>
          (await admin.describeClusterMirrors(["compacting"])).mirrors[0]?.partitions[0]?.state === "STOPPED"
            ? true
            : undefined,
        60_000,
        250
      )
      await sleep(1_500)
      await produce(ours.bootstrap, topic, [["local", "z"]])
      await sleep(400)
      await produce(ours.bootstrap, topic, [["local-roll", "w"]])
      // Tombstones go only after delete.retention.ms past a cleaning: compared without them on both sides.
      const live = (l: string) => !l.endsWith(" NULL") && !l.split(" ")[1]!.startsWith("local")
      const expected = lastOnKafka.filter(live).sort()
      await Wait.eventually(
        "compacted after the failover",
        async () => {
          const ourRecords = (await readAll(ours.bootstrap, topic)).filter(live)
          return [...ourRecords].sort().join("\n") === expected.join("\n") ? true : undefined
        },
        120_000,
        250
      )
    } finally {
      await client.close()
    }
  }, 400_000)
})
