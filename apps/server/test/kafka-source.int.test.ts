/**
 * A real Apache Kafka 4.x broker (KRaft, from Maven Central) as the source of a mirror into our cluster:
 * kcat produces with an idempotent producer in every compression codec; the mirror copies every batch
 * unchanged, so offsets, CRCs, leader epochs, bytes and topic ids are identical on both sides. Kafka
 * does not implement KIP-1279, so mirroring is one way (no last mirror epochs on the source) and the
 * stop still makes the topic writable on our side.
 */
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { ApacheKafka, Kcat, KafkaPeer, MirrorCheck, Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const
const PARTITIONS = 3
const RECORDS = 20_000

const lines = (prefix: string, n: number): string =>
  `${Array.from({ length: n }, (_, i) => `${prefix}-${i}-${(i * 2654435761) % 1000003}-${"kafka".repeat(6)}`).join("\n")}\n`

describe("mirroring from a real Apache Kafka source", () => {
  let kafka: ApacheKafka.KafkaNode
  let destination: ServerProcess.ServerHandle
  let client: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  let destinationBootstrap: string

  beforeAll(async () => {
    await KafkaPeer.libs()
    const port = await Ports.freePort()
    ;[kafka, destination] = await Promise.all([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "num.partitions": PARTITIONS }
      }),
      ServerProcess.start({
        tempPrefix: "cm-kafka-src-dst-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "broker.heartbeat.interval.ms": 300,
          "mirror.state.topic.num.partitions": 5
        }
      })
    ])
    destinationBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
    client = new ClusterClient.Client({ bootstrapServers: destinationBootstrap.split(","), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(client)
    await Wait.eventually("3 destination brokers", async () =>
      (await client.metadata([])).brokers.size === 3 ? true : undefined
    )
  }, 300_000)

  afterAll(async () => {
    await client?.close()
    await destination?.stop()
    await kafka?.stop()
  })

  it("copies idempotent batches of every codec with identical offsets, bytes, epochs and topic ids, and stops to a writable topic", async () => {
    const kcat = Kcat.forBootstrap(kafka.bootstrap)
    const topics = CODECS.map((c) => `kafka-${c}`)
    await Promise.all(
      CODECS.map((codec, i) =>
        kcat(
          ["-P", "-t", topics[i]!, "-z", codec, "-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=5"],
          { input: lines(codec, RECORDS) }
        )
      )
    )
    await admin.createClusterMirror("from-kafka", new Map([["bootstrap.servers", kafka.bootstrap]]))
    const started = await admin.startMirrorTopics("from-kafka", topics)
    expect(started.map((t) => t.error)).toEqual(topics.map(() => null))
    await Wait.eventually(
      "every partition mirrored with lag 0",
      async () => {
        const ps = (await admin.describeClusterMirrors(["from-kafka"])).mirrors[0]?.partitions ?? []
        return ps.length === topics.length * PARTITIONS &&
          ps.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= 0n)
          ? ps
          : undefined
      },
      180_000,
      250
    )
    const c = await MirrorCheck.compareClusters({
      source: kafka.bootstrap,
      destination: destinationBootstrap,
      topics,
      upTo: "sourceHighWatermark"
    })
    expect(c.partitions.filter((p) => p.firstMismatch !== null).map((p) => JSON.stringify(p.firstMismatch))).toEqual([])
    expect(c.identical).toBe(true)
    expect(c.partitions.reduce((n, p) => n + p.records, 0)).toBe(RECORDS * CODECS.length)
    for (const p of c.partitions) expect(p.destinationTopicId).toBe(p.sourceTopicId)

    // Kafka holds no last mirror epochs: the stop still completes, and the topic takes writes.
    await admin.stopMirrorTopics("from-kafka", [topics[3]!])
    await Wait.eventually(
      "stopped",
      async () => {
        const ps = ((await admin.describeClusterMirrors(["from-kafka"])).mirrors[0]?.partitions ?? []).filter(
          (p) => p.topic === topics[3]
        )
        return ps.length === PARTITIONS && ps.every((p) => p.state === "STOPPED") ? true : undefined
      },
      60_000,
      250
    )
    await Kcat.forBootstrap(destinationBootstrap)(["-P", "-t", topics[3]!, "-X", "acks=all"], {
      input: lines("local", 100)
    })
    const consumed = await Kcat.forBootstrap(destinationBootstrap)([
      "-C",
      "-t",
      topics[3]!,
      "-e",
      "-q",
      "-o",
      "beginning",
      "-f",
      "%s\\n"
    ])
    const all = consumed.stdout.split("\n").filter((l) => l.length > 0)
    expect(all.filter((l) => l.startsWith("lz4-")).length).toBe(RECORDS)
    expect(all.filter((l) => l.startsWith("local-")).length).toBe(100)
  })
})
