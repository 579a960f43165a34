/**
 * The mirror-level sync of KIP-1279 §5.9 c between two of our clusters in this process (real TCP, real
 * files): topic configs changed on the source reach the destination while excluded ones never do, and a
 * kafkajs consumer group's offsets committed on the source let a consumer of the same group start, after
 * failover, exactly where the group left off; an active destination group is left alone, and the
 * per-group status says what happened, through MirrorAdmin and the CLI. The first tests run the sync tasks
 * as the refresh loop runs them, with a context built here from the destination broker's metadata image;
 * the last one leaves them to the loop itself.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BrokerConfig } from "@clustermirror/broker-config"
import { ClusterBroker, ControllerServer, Node } from "@clustermirror/broker"
import type { MirrorSync } from "@clustermirror/mirror"
import * as MirrorsCommand from "@clustermirror/cli"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { DescribeConfigs, IncrementalAlterConfigs, ListOffsets, OffsetFetch } from "@clustermirror/protocol"
import { Wait } from "@clustermirror/testkit"
import { type Consumer, Kafka, logLevel } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const TOPIC = "orders"
const PARTITIONS = 2
const RECORDS = 100
const MIRROR = "dr"
/** Where the group stops on the source, per partition: mid-topic. */
const COMMITTED = [37, 61]

const kafkaFor = (bootstrap: string, clientId: string) =>
  new Kafka({
    clientId,
    brokers: bootstrap.split(","),
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10_000,
    requestTimeout: 30_000
  })

const base = (dataDir: string): BrokerConfig.BrokerConfig => ({
  ...BrokerConfig.defaults,
  port: 0,
  dataDir,
  numPartitions: PARTITIONS,
  defaultReplicationFactor: 1,
  offsetsTopicReplicationFactor: 1,
  mirrorStateTopicNumPartitions: 3,
  mirrorStateTopicReplicationFactor: 1,
  groupInitialRebalanceDelayMs: 0,
  brokerHeartbeatIntervalMs: 200,
  mirrorFailedRetryInitialBackoffMs: 300,
  mirrorFailedRetryMaxBackoffMs: 2000
})

/** A controller and one broker in this process, keeping the broker's handle (its sync tasks). */
const startDestination = async (dir: string) => {
  const config = base(dir)
  const controllerDir = path.join(dir, "controller")
  const clusterId = Node.formatClusterId(controllerDir, null, 1000, true)
  const controller = await ControllerServer.start({
    nodeId: 1000,
    clusterId,
    host: "127.0.0.1",
    port: 0,
    dataDir: controllerDir,
    maxFrameBytes: config.socketRequestMaxBytes,
    defaultPartitions: config.numPartitions,
    defaultReplicationFactor: 1,
    sessionTimeoutMs: config.brokerSessionTimeoutMs,
    uncleanLeaderElectionEnable: false,
    mirrorStateTopicPartitions: config.mirrorStateTopicNumPartitions,
    mirrorStateTopicReplicationFactor: 1,
    log: () => {}
  })
  const brokerDir = path.join(dir, "broker-1")
  Node.formatClusterId(brokerDir, clusterId, 1, true)
  const broker = await ClusterBroker.start({
    ...config,
    nodeId: 1,
    processRoles: ["broker"],
    clusterId,
    host: "127.0.0.1",
    advertisedHost: "127.0.0.1",
    controllerBootstrap: { host: "127.0.0.1", port: controller.port },
    dataDir: brokerDir
  })
  return {
    broker,
    bootstrap: `127.0.0.1:${broker.port}`,
    close: async () => {
      await broker.close()
      await controller.close()
    }
  }
}

describe("mirror sync: topic configs and consumer group offsets", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-sync-"))
  let source: Node.Embedded
  let destination: Awaited<ReturnType<typeof startDestination>>
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  const consumers: Array<Consumer> = []
  const syncErrors: Array<string> = []

  /** The context the refresh loop gives the coordinator tasks, from the destination broker's image. */
  const context = (): MirrorSync.CoordinatorContext => {
    const image = destination.broker.image()
    const topics = [...image.topics.byId.values()]
      .filter((t) => t.mirrorName === MIRROR)
      .map((t) => ({ name: t.name, topicId: t.id, partitions: t.partitions.size, desiredState: t.desiredMirrorState }))
    const configs = [...image.configs.values()].find((c) => c.type === 64 && c.name === MIRROR)
    return {
      mirror: MIRROR,
      configs: new Map(configs?.values ?? []),
      source: src,
      destination: dst,
      topics,
      partitionState: () => undefined,
      syncError: (kind, error) => syncErrors.push(`${kind}: ${error}`)
    }
  }
  const runTask = async (name: string) => {
    const task = destination.broker.mirrorSyncTasks.find((t) => t.name === name)
    if (task === undefined) throw new Error(`no task ${name}`)
    await task.run(context())
  }

  const describeTopic = async (client: ClusterClient.Client, topic = TOPIC) => {
    const res = await client.sendToAnyBroker(DescribeConfigs.api, {
      resources: [{ resourceType: 2, resourceName: topic, configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false
    })
    return new Map(res.results[0]!.configs.map((c) => [c.name, { value: c.value, source: c.configSource }]))
  }

  const alterConfigs = async (
    client: ClusterClient.Client,
    resourceType: number,
    resourceName: string,
    configs: ReadonlyArray<{ name: string; op: number; value: string | null }>
  ) => {
    const res = await client.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType,
          resourceName,
          configs: configs.map((c) => ({ name: c.name, configOperation: c.op, value: c.value }))
        }
      ],
      validateOnly: false
    })
    expect(res.responses.map((r) => r.errorCode)).toEqual([0])
  }
  const alterSource = (configs: ReadonlyArray<{ name: string; op: number; value: string | null }>) =>
    alterConfigs(src, 2, TOPIC, configs)

  /** A group's committed offset and leader epoch per partition of the topic (-1 none). */
  const committedOn = async (client: ClusterClient.Client, group: string) => {
    const res = await client.sendToAnyBroker(OffsetFetch.api, {
      groupId: group,
      topics: [{ name: TOPIC, partitionIndexes: [0, 1] }],
      groups: [{ groupId: group, topics: [{ name: TOPIC, partitionIndexes: [0, 1] }] }]
    })
    const topics = res.groups.length > 0 ? res.groups[0]!.topics : res.topics
    return [...(topics[0]?.partitions ?? [])]
      .sort((a, b) => a.partitionIndex - b.partitionIndex)
      .map((p) => [Number(p.committedOffset), p.committedLeaderEpoch])
  }
  /** The destination group's committed offset per partition of the topic (-1 none). */
  const destinationOffsets = async (group: string) => (await committedOn(dst, group)).map(([offset]) => offset)

  beforeAll(async () => {
    fs.mkdirSync(path.join(dir, "source"))
    source = await Node.embedded(1, base(path.join(dir, "source")))
    destination = await startDestination(path.join(dir, "destination"))
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(dst)

    const kafka = kafkaFor(source.bootstrap, "sync-source")
    const sourceAdmin = kafka.admin()
    await sourceAdmin.connect()
    await sourceAdmin.createTopics({
      topics: [{ topic: TOPIC, numPartitions: PARTITIONS, replicationFactor: 1 }],
      waitForLeaders: true
    })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    for (let p = 0; p < PARTITIONS; p++)
      await producer.send({
        topic: TOPIC,
        acks: -1,
        messages: Array.from({ length: RECORDS }, (_, i) => ({
          partition: p,
          key: `k-${p}-${i}`,
          value: `v-${p}-${i}`
        }))
      })
    await producer.disconnect()
    // Groups that commit offsets but have no members: one filtered out, one active on the destination.
    for (const groupId of ["filtered-audit", "live"])
      await sourceAdmin.setOffsets({
        groupId,
        topic: TOPIC,
        partitions: [
          { partition: 0, offset: "10" },
          { partition: 1, offset: "10" }
        ]
      })
    // A group ahead of the destination's log on partition 0 (commits are not checked against the log).
    await sourceAdmin.setOffsets({
      groupId: "ahead",
      topic: TOPIC,
      partitions: [
        { partition: 0, offset: "500" },
        { partition: 1, offset: "20" }
      ]
    })
    await sourceAdmin.disconnect()

    await admin.createClusterMirror(
      MIRROR,
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.groups.exclude", "filtered-.*"]
      ])
    )
    const started = await admin.startMirrorTopics(MIRROR, [TOPIC])
    expect(started.map((t) => t.error)).toEqual([null])
    await Wait.eventually(
      "the topic mirrored and caught up",
      async () => {
        const m = (await admin.describeClusterMirrors([MIRROR])).mirrors[0]
        const ps = m?.partitions ?? []
        return ps.length === PARTITIONS &&
          ps.every((p) => p.state === "MIRRORING" && p.destinationOffset === BigInt(RECORDS))
          ? true
          : undefined
      },
      120_000,
      200
    )
  })

  afterAll(async () => {
    for (const c of consumers) await c.disconnect().catch(() => {})
    await src?.close()
    await dst?.close()
    await destination?.close()
    await source?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("copies changed dynamic topic configs (SET and DELETE), never excluded ones", async () => {
    await alterSource([
      { name: "retention.ms", op: 0, value: "123456789" },
      { name: "cleanup.policy", op: 0, value: "compact" },
      { name: "max.message.bytes", op: 0, value: "2000000" },
      // Excluded by default (mirror.topic.properties.exclude).
      { name: "message.timestamp.type", op: 0, value: "LogAppendTime" },
      { name: "min.insync.replicas", op: 0, value: "1" }
    ])
    await runTask("topic_configs")
    let configs = await describeTopic(dst)
    expect(configs.get("retention.ms")).toEqual({ value: "123456789", source: 1 })
    expect(configs.get("cleanup.policy")).toEqual({ value: "compact", source: 1 })
    expect(configs.get("max.message.bytes")).toEqual({ value: "2000000", source: 1 })
    expect(configs.get("message.timestamp.type")?.value).toBe("CreateTime")
    expect(configs.get("message.timestamp.type")?.source).not.toBe(1)
    expect(configs.get("min.insync.replicas")?.source).not.toBe(1)

    // A key removed on the source goes back to the destination's default; an unchanged run changes nothing.
    await alterSource([{ name: "max.message.bytes", op: 1, value: null }])
    await runTask("topic_configs")
    configs = await describeTopic(dst)
    expect(configs.get("max.message.bytes")?.source).not.toBe(1)
    expect(configs.get("retention.ms")).toEqual({ value: "123456789", source: 1 })
    expect(configs.get("message.timestamp.type")?.source).not.toBe(1)
    expect(syncErrors).toEqual([])
  })

  it("syncs a kafkajs group's offsets: after failover its consumer starts exactly at them; active groups are left alone", async () => {
    // The group consumes everything on the source but commits mid-topic.
    const onSource = kafkaFor(source.bootstrap, "app-source").consumer({ groupId: "app", sessionTimeout: 30_000 })
    await onSource.connect()
    await onSource.subscribe({ topics: [TOPIC], fromBeginning: true })
    let seen = 0
    await onSource.run({
      autoCommit: false,
      eachMessage: async () => {
        seen++
      }
    })
    await Wait.eventually("the source consumer read everything", () =>
      seen >= RECORDS * PARTITIONS ? true : undefined
    )
    await onSource.commitOffsets(
      COMMITTED.map((offset, partition) => ({ topic: TOPIC, partition, offset: String(offset) }))
    )
    await onSource.disconnect()

    // A consumer of group "live" is active on the destination (it commits nothing).
    const live = kafkaFor(destination.bootstrap, "live-destination").consumer({
      groupId: "live",
      sessionTimeout: 30_000
    })
    consumers.push(live)
    let joined = false
    live.on(live.events.GROUP_JOIN, () => {
      joined = true
    })
    await live.connect()
    await live.subscribe({ topics: [TOPIC], fromBeginning: true })
    await live.run({ autoCommit: false, eachMessage: async () => {} })
    await Wait.eventually("the live group joined", () => (joined ? true : undefined))

    await runTask("group_offsets")
    expect(syncErrors).toEqual([])

    const statuses = await admin.describeGroupSync(MIRROR)
    expect(statuses.map((s) => [s.group, s.state, s.detail])).toEqual([
      ["ahead", "CLAMPED", null],
      ["app", "SYNCED", null],
      ["filtered-audit", "FILTERED", null],
      ["live", "SKIPPED_ACTIVE", "Stable"]
    ])
    const ahead = statuses[0]!
    expect(ahead.offsets.map((o) => [o.partition, Number(o.sourceOffset), Number(o.offset)])).toEqual([
      [0, 500, RECORDS],
      [1, 20, 20]
    ])
    // Clamped to the log end, the epoch is the destination's latest; the mirrored log has the source's epochs.
    const sourceLatest = await src.sendToLeader(
      TOPIC,
      0,
      ListOffsets.api,
      () => ({
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] }]
      }),
      (r) => r.topics[0]!.partitions[0]!.errorCode
    )
    expect(ahead.offsets[0]!.leaderEpoch).toBe(sourceLatest.topics[0]!.partitions[0]!.leaderEpoch)
    expect(ahead.offsets[0]!.leaderEpoch).toBeGreaterThanOrEqual(0)
    expect(await destinationOffsets("ahead")).toEqual([RECORDS, 20])
    const app = statuses[1]!
    expect(app.offsets.map((o) => [o.topic, o.partition, Number(o.sourceOffset), Number(o.offset)])).toEqual(
      COMMITTED.map((offset, partition) => [TOPIC, partition, offset, offset])
    )
    // The committed leader epochs are kept (kafkajs commits none: -1).
    const sourceCommitted = await committedOn(src, "app")
    expect(app.offsets.map((o) => [Number(o.sourceOffset), o.leaderEpoch])).toEqual(sourceCommitted)
    expect(await committedOn(dst, "app")).toEqual(sourceCommitted)
    expect(app.lastSyncedMs).toBeGreaterThan(0)
    expect(statuses[3]!.lastSyncedMs).toBe(-1)
    expect(await destinationOffsets("app")).toEqual(COMMITTED)
    expect(await destinationOffsets("live")).toEqual([-1, -1])
    expect(await destinationOffsets("filtered-audit")).toEqual([-1, -1])

    // The CLI shows the same.
    const out: Array<string> = []
    const code = await MirrorsCommand.main(
      ["--bootstrap-server", destination.bootstrap, "--describe", "--groups", "--mirror", MIRROR],
      { out: (l) => out.push(l), err: (l) => out.push(`ERR ${l}`) }
    )
    expect(code).toBe(0)
    const rows = out
      .join("\n")
      .split("\n")
      .slice(1)
      .map((l) => l.split(/\s+/).slice(0, 6))
    expect(rows).toEqual([
      ["ahead", "CLAMPED", TOPIC, "0", "500", String(RECORDS)],
      ["ahead", "CLAMPED", TOPIC, "1", "20", "20"],
      ["app", "SYNCED", TOPIC, "0", "37", "37"],
      ["app", "SYNCED", TOPIC, "1", "61", "61"],
      ["filtered-audit", "FILTERED", "-", "-", "-", "-"],
      ["live", "SKIPPED_ACTIVE", "-", "-", "-", "-"]
    ])

    // Failover: the topic stops mirroring and becomes writable; the group moves to the destination.
    await admin.stopMirrorTopics(MIRROR, [TOPIC])
    await Wait.eventually(
      "the topic stopped",
      async () => {
        const ps = (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions ?? []
        return ps.length === PARTITIONS && ps.every((p) => p.state === "STOPPED") ? true : undefined
      },
      60_000,
      200
    )
    const onDestination = kafkaFor(destination.bootstrap, "app-destination").consumer({
      groupId: "app",
      sessionTimeout: 30_000
    })
    consumers.push(onDestination)
    const read = new Map<number, Array<number>>()
    await onDestination.connect()
    await onDestination.subscribe({ topics: [TOPIC], fromBeginning: true })
    await onDestination.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        let list = read.get(partition)
        if (list === undefined) read.set(partition, (list = []))
        list.push(Number(message.offset))
      }
    })
    const expected = COMMITTED.reduce((n, c) => n + RECORDS - c, 0)
    await Wait.eventually("the destination consumer read the rest", () => {
      const n = [...read.values()].reduce((s, l) => s + l.length, 0)
      return n >= expected ? true : undefined
    })
    for (let p = 0; p < PARTITIONS; p++)
      expect(read.get(p)).toEqual(Array.from({ length: RECORDS - COMMITTED[p]! }, (_, i) => COMMITTED[p]! + i))
  })
  it("runs both syncs from the refresh loop on its own, for a topic started later", async () => {
    const topic = "payments"
    const kafka = kafkaFor(source.bootstrap, "sync-source-later")
    const sourceAdmin = kafka.admin()
    await sourceAdmin.connect()
    await sourceAdmin.createTopics({
      topics: [
        { topic, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: "retention.ms", value: "86400001" }] }
      ],
      waitForLeaders: true
    })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: `p-${i}` }))
    })
    await producer.disconnect()
    await sourceAdmin.setOffsets({ groupId: "billing", topic, partitions: [{ partition: 0, offset: "4" }] })
    await sourceAdmin.disconnect()

    // The mirror refreshes every 500 ms from now on; nothing below runs a sync task by hand.
    await alterConfigs(dst, 64, MIRROR, [{ name: "mirror.metadata.refresh.interval.ms", op: 0, value: "500" }])
    const started = await admin.startMirrorTopics(MIRROR, [topic])
    expect(started.map((t) => t.error)).toEqual([null])
    await Wait.eventually(
      "the later topic's config and group offsets synced by the loop",
      async () => {
        const retention = (await describeTopic(dst, topic)).get("retention.ms")
        const status = (await admin.describeGroupSync(MIRROR)).find((g) => g.group === "billing")
        return retention?.value === "86400001" && retention.source === 1 && status?.state === "SYNCED"
          ? status
          : undefined
      },
      60_000,
      200
    )
    const res = await dst.sendToAnyBroker(OffsetFetch.api, {
      groupId: "billing",
      topics: [{ name: topic, partitionIndexes: [0] }],
      groups: [{ groupId: "billing", topics: [{ name: topic, partitionIndexes: [0] }] }]
    })
    const topics = res.groups.length > 0 ? res.groups[0]!.topics : res.topics
    expect(Number(topics[0]!.partitions[0]!.committedOffset)).toBe(4)

    // The failed-over topic belongs to the destination now: source config changes no longer reach it, while
    // those of the topic still mirrored do.
    const stoppedBefore = (await describeTopic(dst)).get("retention.ms")
    await alterSource([{ name: "retention.ms", op: 0, value: "55555555" }])
    await alterConfigs(src, 2, topic, [{ name: "retention.ms", op: 0, value: "86400009" }])
    await Wait.eventually(
      "the mirrored topic's change synced",
      async () => ((await describeTopic(dst, topic)).get("retention.ms")?.value === "86400009" ? true : undefined),
      60_000,
      200
    )
    expect((await describeTopic(dst)).get("retention.ms")).toEqual(stoppedBefore)
  })
})
