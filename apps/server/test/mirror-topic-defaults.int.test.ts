/**
 * The defaults of destination topics a mirror creates, with every node a separate process: a one-node
 * source, and a destination of a controller whose properties set no `default.replication.factor` and
 * three brokers with `default.replication.factor=3` and `min.insync.replicas=2`. A topic started by
 * name and a topic found by pattern discovery both come out with three replicas (the forwarding
 * broker's default, not the controller's 1), as `kafka-topics --describe` shows, and describe the
 * destination brokers' `min.insync.replicas` (the source topic sets none). A mirror's own
 * `replication.factor` wins over the brokers' default. With one broker stopped, a started topic gets
 * the two live brokers as replicas instead of failing, and its result and the controller's log say so.
 */
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, DescribeConfigs, StartMirrorTopics } from "@clustermirror/protocol"
import { JavaTools, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, type ServerHandle, startCluster, startServer } from "./harness.js"

const TOPIC_RESOURCE = 2
const STATIC_BROKER_CONFIG = 4

describe("destination topics created by a mirror take the brokers' topic defaults", () => {
  let source: ServerHandle
  let cluster: Cluster
  let controller: ServerHandle
  let brokers: ReadonlyArray<ServerHandle>
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin

  beforeAll(async () => {
    source = await startServer({ config: { "default.replication.factor": 1, "offsets.topic.replication.factor": 1 } })
    cluster = await startCluster({
      brokers: 3,
      controllerConfig: { "broker.session.timeout.ms": 3000, "mirror.state.topic.num.partitions": 3 },
      brokerConfig: {
        "broker.heartbeat.interval.ms": 300,
        "default.replication.factor": 3,
        "min.insync.replicas": 2,
        "offsets.topic.replication.factor": 3
      }
    })
    controller = cluster.controller
    brokers = cluster.brokers
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: brokers.map((b) => b.bootstrap), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(dst)
    await Wait.eventually(
      "3 live destination brokers",
      async () => ((await dst.metadata([])).brokers.size === 3 ? true : undefined),
      60_000
    )
  })

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await cluster?.stop()
    await source?.stop()
  })

  const createSourceTopic = async (name: string, partitions: number) => {
    const res = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(res.topics[0]!.errorCode).toBe(0)
  }

  /** Replica counts of the destination topic's partitions once it has `partitions` of them. */
  const destinationReplicas = (topic: string, partitions: number) =>
    Wait.eventually(
      `destination topic ${topic}`,
      async () => {
        const t = (await dst.metadata([topic])).topics.get(topic)
        if (t === undefined || t.errorCode !== 0 || t.partitions.size !== partitions) return undefined
        return [...t.partitions.values()].map((p) => p.replicas.length)
      },
      120_000,
      250
    )

  const describeTopic = async (topic: string) =>
    JavaTools.expectSuccess(
      "kafka-topics --describe",
      await JavaTools.kafkaTopics(["--bootstrap-server", brokers[0]!.bootstrap, "--describe", "--topic", topic])
    ).stdout

  it("a started topic gets the brokers' default.replication.factor and min.insync.replicas", async () => {
    await createSourceTopic("orders", 2)
    await admin.createClusterMirror("dr", new Map([["bootstrap.servers", source.bootstrap]]))
    const started = await admin.startMirrorTopics("dr", ["orders"])
    expect(started.map((r) => [r.name, r.error])).toEqual([["orders", null]])

    expect(await destinationReplicas("orders", 2)).toEqual([3, 3])
    expect(await describeTopic("orders")).toMatch(
      /Topic: orders\s+TopicId: \S+\s+PartitionCount: 2\s+ReplicationFactor: 3/
    )

    const res = await dst.sendToAnyBroker(DescribeConfigs.api, {
      resources: [{ resourceType: TOPIC_RESOURCE, resourceName: "orders", configurationKeys: ["min.insync.replicas"] }],
      includeSynonyms: true,
      includeDocumentation: false
    })
    const minIsr = res.results[0]!.configs.find((c) => c.name === "min.insync.replicas")
    expect(minIsr?.value).toBe("2")
    expect(minIsr?.configSource).toBe(STATIC_BROKER_CONFIG)
  })

  it("a topic found by pattern discovery gets them too; the mirror's replication.factor wins over them", async () => {
    await admin.createClusterMirror(
      "found",
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.metadata.refresh.interval.ms", "500"]
      ])
    )
    await admin.startMirrorTopics("found", [], { include: ["found-.*"] })
    await createSourceTopic("found-1", 3)
    expect(await destinationReplicas("found-1", 3)).toEqual([3, 3, 3])
    expect(await describeTopic("found-1")).toMatch(/PartitionCount: 3\s+ReplicationFactor: 3/)

    await admin.createClusterMirror(
      "pinned",
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["replication.factor", "2"]
      ])
    )
    await createSourceTopic("pinned-1", 1)
    const started = await admin.startMirrorTopics("pinned", ["pinned-1"])
    expect(started.map((r) => [r.name, r.error])).toEqual([["pinned-1", null]])
    expect(await destinationReplicas("pinned-1", 1)).toEqual([2])
  })

  it("with a broker down, a default above the live brokers is capped and the start says so", async () => {
    await cluster.cluster.kill(3, "SIGTERM")
    await Wait.eventually(
      "broker 3 fenced",
      async () => ((await dst.metadata([])).brokers.size === 2 ? true : undefined),
      60_000,
      250
    )
    await createSourceTopic("capped", 2)
    const started = await admin.startMirrorTopics("dr", ["capped"])
    expect(started.map((r) => [r.name, r.error])).toEqual([["capped", null]])
    expect(await destinationReplicas("capped", 2)).toEqual([2, 2])
    // The result of a capped topic is a success that says why it has fewer replicas.
    await createSourceTopic("capped-2", 1)
    const [sourceTopic] = await admin.sourceTopics("dr", ["capped-2"])
    const res = await dst.sendToAnyBroker(StartMirrorTopics.api, {
      mirrorName: "dr",
      topics: [{ topicName: "capped-2", topicId: sourceTopic!.topicId, numPartitions: 1 }]
    })
    expect(res.topics).toEqual([
      {
        name: "capped-2",
        errorCode: 0,
        errorMessage:
          "Created with replication factor 2, the number of live brokers: the default.replication.factor of the broker that forwarded the request is 3."
      }
    ])
    expect(res.errorCode).toBe(0)
    expect(controller.output()).toContain(
      "mirror dr: topic capped-2: Created with replication factor 2, the number of live brokers"
    )
  })
})
