/**
 * A real Apache Kafka 4.x broker (KRaft, from Maven Central) as the source of a mirror into our cluster:
 * kcat produces with an idempotent producer in every compression codec; the mirror copies every batch
 * unchanged, so offsets, CRCs, leader epochs, bytes and topic ids are identical on both sides. Kafka
 * does not implement KIP-1279, so mirroring is one way (no last mirror epochs on the source) and the
 * stop still makes the topic writable on our side. The periodic refresh works against Kafka too: a topic
 * created there later is discovered by its pattern, and its configs and a consumer group's offsets
 * (set with Kafka's own tools) reach our cluster, where Kafka's consumer-groups tool reads them back.
 */
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { DescribeConfigs, IncrementalAlterConfigs } from "@clustermirror/protocol"
import {
  ApacheKafka,
  JavaTools,
  Kcat,
  KafkaPeer,
  MirrorCheck,
  Ports,
  ServerProcess,
  Wait
} from "@clustermirror/testkit"
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
  it("refreshes from Kafka: a topic created later is discovered by pattern; its configs and a group's offsets follow", async () => {
    const topic = "kafka-later"
    const altered = await client.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType: 64,
          resourceName: "from-kafka",
          configs: [{ name: "mirror.metadata.refresh.interval.ms", configOperation: 0, value: "500" }]
        }
      ],
      validateOnly: false
    })
    expect(altered.responses.map((r) => r.errorCode)).toEqual([0])
    expect(await admin.startMirrorTopics("from-kafka", [], { include: ["kafka-later.*"] })).toEqual([])

    const tool = async (run: Promise<JavaTools.ToolResult>) => {
      const r = await run
      expect(r.code, r.stderr).toBe(0)
      return r.stdout
    }
    await tool(
      JavaTools.kafkaTopics([
        "--bootstrap-server",
        kafka.bootstrap,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "3",
        "--config",
        "retention.ms=86400002"
      ])
    )
    for (let p = 0; p < 3; p++)
      await Kcat.forBootstrap(kafka.bootstrap)(["-P", "-t", topic, "-p", String(p)], { input: lines(`later${p}`, 30) })
    await tool(
      JavaTools.consumerGroups([
        "--bootstrap-server",
        kafka.bootstrap,
        "--reset-offsets",
        "--group",
        "billing",
        "--topic",
        `${topic}:0,2`,
        "--to-offset",
        "7",
        "--execute"
      ])
    )

    const sourceClient = new ClusterClient.Client({ bootstrapServers: [kafka.bootstrap], requestTimeoutMs: 30_000 })
    try {
      const sourceId = (await sourceClient.metadata([topic])).topics.get(topic)?.topicId
      expect(sourceId).toBeDefined()
      const retentionOn = async (c: ClusterClient.Client) => {
        const res = await c.sendToAnyBroker(DescribeConfigs.api, {
          resources: [{ resourceType: 2, resourceName: topic, configurationKeys: null }],
          includeSynonyms: false,
          includeDocumentation: false
        })
        const configs = res.results[0]?.configs ?? []
        const get = (name: string) => configs.find((c) => c.name === name)
        return { retention: get("retention.ms"), minIsr: get("min.insync.replicas") }
      }
      await Wait.eventually(
        "the later topic mirrored by its pattern, its config and group offsets synced",
        async () => {
          const ps = ((await admin.describeClusterMirrors(["from-kafka"])).mirrors[0]?.partitions ?? []).filter(
            (p) => p.topic === topic
          )
          const { retention } = await retentionOn(client)
          const billing = (await admin.describeGroupSync("from-kafka")).find((g) => g.group === "billing")
          return ps.length === 3 &&
            ps.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.destinationOffset === 30n) &&
            retention?.value === "86400002" &&
            billing?.state === "SYNCED"
            ? true
            : undefined
        },
        120_000,
        250
      )
      expect((await client.metadata([topic])).topics.get(topic)?.topicId).toBe(sourceId)

      // Kafka's own tool reads the group's offsets on our cluster.
      const described = await tool(
        JavaTools.consumerGroups(["--bootstrap-server", destinationBootstrap, "--describe", "--group", "billing"])
      )
      const offsets = described
        .split("\n")
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f[0] === "billing" && f[1] === topic)
        .map((f) => [Number(f[2]), Number(f[3])])
        .sort((a, b) => a[0]! - b[0]!)
      expect(offsets).toEqual([
        [0, 7],
        [2, 7]
      ])

      // A later change on Kafka follows; an excluded property never does.
      await tool(
        JavaTools.configs([
          "--bootstrap-server",
          kafka.bootstrap,
          "--alter",
          "--entity-type",
          "topics",
          "--entity-name",
          topic,
          "--add-config",
          "retention.ms=86400003,min.insync.replicas=1"
        ])
      )
      await Wait.eventually(
        "the changed retention synced",
        async () => ((await retentionOn(client)).retention?.value === "86400003" ? true : undefined),
        60_000,
        250
      )
      expect((await retentionOn(sourceClient)).minIsr?.configSource).toBe(1)
      expect((await retentionOn(client)).minIsr?.configSource).not.toBe(1)
    } finally {
      await sourceClient.close()
    }
  })
})
