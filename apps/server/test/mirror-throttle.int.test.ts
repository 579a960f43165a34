/**
 * The mirror replication throttle (KIP-1279 §6.1) end to end, between two one-node clusters of ours as
 * separate processes. Two source topics get the same few MB; the destination mirrors both, with
 * `mirror.replication.throttled.rate` set low for every broker (`kafka-configs --entity-type brokers
 * --entity-default`) and `mirror.replication.throttled.replicas=*` on one mirror topic only. The
 * unthrottled topic catches up (lag 0, byte-identical to the source) while the throttled one is still far
 * behind, though its high watermark keeps rising; once `kafka-configs --delete-config` removes the
 * topic's throttle, it catches up and is byte-identical as well. Nothing here bounds a duration.
 */
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, DescribeConfigs, ListOffsets, Produce, RecordBatch } from "@clustermirror/protocol"
import { JavaTools, MirrorCheck, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ServerHandle, startServer } from "./harness.js"

const MIRROR = "dr"
const FAST = "fast"
const SLOW = "slow"
/** 4,000 records of about 1 KB: 4 MB per topic, produced in batches of 100. */
const RECORDS = 4_000
const BATCH = 100
/** The mirror rate bound, bytes/s: the throttled topic would need about two minutes for its 4 MB. */
const RATE = 32_768
const TOPIC_RESOURCE = 2
const BROKER_RESOURCE = 4

const LATEST = -1n

const batchOf = (topic: string, first: number) =>
  RecordBatch.build({
    records: Array.from({ length: BATCH }, (_, i) => ({
      key: null,
      value: Buffer.from(`${topic}-${String(first + i).padStart(6, "0")}-${"x".repeat(1000)}`)
    })),
    timestamp: Date.now()
  })

describe("the mirror replication throttle", () => {
  let source: ServerHandle
  let destination: ServerHandle
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin

  beforeAll(async () => {
    ;[source, destination] = await Promise.all([
      startServer({ config: { "offsets.topic.replication.factor": 1, "default.replication.factor": 1 } }),
      startServer({ config: { "offsets.topic.replication.factor": 1, "default.replication.factor": 1 } })
    ])
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(dst)
  }, 120_000)

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await destination?.stop()
    await source?.stop()
  })

  const configs = async (args: ReadonlyArray<string>) =>
    JavaTools.expectSuccess(
      `kafka-configs ${args.join(" ")}`,
      await JavaTools.configs(["--bootstrap-server", destination.bootstrap, ...args])
    )

  /** The mirror's view of a topic's only partition. */
  const mirrorPartition = async (topic: string) => {
    const d = await admin.describeClusterMirrors([MIRROR])
    return (d.mirrors[0]?.partitions ?? []).find((p) => p.topic === topic && p.partition === 0)
  }

  /** A cluster's high watermark of a topic's only partition. */
  const highWatermark = async (client: ClusterClient.Client, topic: string): Promise<number> => {
    const leader = await client.leaderFor(topic, 0)
    const res = await client.sendToNode(leader.nodeId, ListOffsets.api, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: topic, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: LATEST }] }],
      timeoutMs: 10_000
    })
    const p = res.topics[0]!.partitions[0]!
    expect(p.errorCode).toBe(0)
    return Number(p.offset)
  }

  /** Appends RECORDS records to a source topic's only partition, a batch at a time. */
  const produce = async (topic: string) => {
    const leader = await src.leaderFor(topic, 0)
    for (let first = 0; first < RECORDS; first += BATCH) {
      const res = await src.sendToNode(leader.nodeId, Produce.api, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 10_000,
        topicData: [
          {
            name: topic,
            topicId: "AAAAAAAAAAAAAAAAAAAAAA",
            partitionData: [{ index: 0, records: batchOf(topic, first) }]
          }
        ]
      })
      expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
    }
  }

  const compare = (topics: ReadonlyArray<string>, upTo?: MirrorCheck.Bound) =>
    MirrorCheck.compareClusters({
      source: source.bootstrap,
      destination: destination.bootstrap,
      topics,
      ...(upTo === undefined ? {} : { upTo })
    })

  /** The value of one config of a destination resource, as the destination broker describes it. */
  const describedValue = async (resourceType: number, resourceName: string, key: string) => {
    const res = await dst.sendToAnyBroker(DescribeConfigs.api, {
      resources: [{ resourceType, resourceName, configurationKeys: [key] }],
      includeSynonyms: false,
      includeDocumentation: false
    })
    return res.results[0]?.configs.find((c) => c.name === key)?.value ?? null
  }

  it("holds back only the throttled mirror topic, which still makes progress, and catches up once the throttle is removed", async () => {
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [FAST, SLOW].map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: []
      })),
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0, 0])
    // Small fetches, so one answer overshoots the rate by little.
    await admin.createClusterMirror(
      MIRROR,
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.fetch.max.bytes", "65536"]
      ])
    )
    const started = await admin.startMirrorTopics(MIRROR, [FAST, SLOW])
    expect(started.map((r) => [r.name, r.error])).toEqual([
      [FAST, null],
      [SLOW, null]
    ])
    await Wait.eventually(
      "both mirror topics MIRRORING",
      async () => {
        const states = await Promise.all([FAST, SLOW].map(mirrorPartition))
        return states.every((p) => p?.state === "MIRRORING") ? true : undefined
      },
      60_000,
      250
    )

    await configs([
      ...["--entity-type", "brokers", "--entity-default", "--alter"],
      ...["--add-config", `mirror.replication.throttled.rate=${RATE}`]
    ])
    await configs([
      ...["--entity-type", "topics", "--entity-name", SLOW, "--alter"],
      ...["--add-config", "mirror.replication.throttled.replicas=*"]
    ])
    const [broker] = [...(await dst.metadata([])).brokers.keys()]
    await Wait.eventually(
      "the destination broker sees the throttle",
      async () =>
        (await describedValue(BROKER_RESOURCE, String(broker), "mirror.replication.throttled.rate")) === String(RATE) &&
        (await describedValue(TOPIC_RESOURCE, SLOW, "mirror.replication.throttled.replicas")) === "*"
          ? true
          : undefined,
      30_000,
      100
    )

    await Promise.all([FAST, SLOW].map(produce))
    expect(await Promise.all([FAST, SLOW].map((t) => highWatermark(src, t)))).toEqual([RECORDS, RECORDS])

    await Wait.eventually(
      "the unthrottled topic caught up",
      async () => {
        const p = await mirrorPartition(FAST)
        return p?.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= BigInt(RECORDS) ? true : undefined
      },
      60_000,
      100
    )
    // Right then the throttled topic is far behind, and what it has is the source's prefix, byte for byte.
    const behind = await compare([FAST, SLOW])
    const [fast, slow] = behind.partitions
    expect(fast!.topic).toBe(FAST)
    expect(fast!.destinationEnd).toBe(RECORDS)
    expect(behind.identical).toBe(true)
    expect(slow!.topic).toBe(SLOW)

    expect(slow!.sourceEnd).toBe(RECORDS)
    expect(slow!.destinationEnd).toBeLessThan(RECORDS / 2)
    expect(slow!.bytes).toBeLessThan(fast!.bytes / 2)

    // It makes progress: its high watermark rises over successive observations.
    const seen = [slow!.destinationEnd]
    for (let i = 0; i < 2; i++) {
      const previous = seen[seen.length - 1]!
      seen.push(
        await Wait.eventually(
          `the throttled topic's high watermark above ${previous}`,
          async () => {
            const end = await highWatermark(dst, SLOW)
            return end > previous ? end : undefined
          },
          30_000,
          200
        )
      )
    }
    expect(seen[2]!).toBeLessThan(RECORDS)

    await configs([
      ...["--entity-type", "topics", "--entity-name", SLOW, "--alter"],
      ...["--delete-config", "mirror.replication.throttled.replicas"]
    ])
    await Wait.eventually(
      "the throttled topic caught up once the throttle is gone",
      async () => {
        const p = await mirrorPartition(SLOW)
        return p?.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= BigInt(RECORDS) ? true : undefined
      },
      60_000,
      100
    )
    const after = await compare([FAST, SLOW], "sourceHighWatermark")
    expect(after.partitions.map((p) => [p.topic, p.destinationEnd, p.firstMismatch])).toEqual([
      [FAST, RECORDS, null],
      [SLOW, RECORDS, null]
    ])
    expect(after.identical).toBe(true)
  }, 150_000)
})
