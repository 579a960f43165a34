/**
 * The copy setups the `mirror` suite compares, behind one shape: (a) Apache Kafka → MirrorMaker 2
 * → Apache Kafka, (b) Apache Kafka → our destination cluster (KIP-1279 mirror), (b-tls) the same with
 * the mirror reading the source's SSL listener, (c) our cluster → our cluster, (d) Apache Kafka's own
 * follower replication (a partition reassignment adds a follower on a second broker). Each starts its
 * processes, creates the topic on the source, starts the copy on request, reports its progress, and
 * names every process whose CPU counts.
 *
 * It starts and stops processes and drives them over the wire; it measures nothing itself (the suite
 * does) and never judges a number. Every process it starts is stopped by `stop()`, also after a failure
 * half-way through `start`.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  AlterPartitionReassignments,
  CreateTopics,
  ListOffsets,
  Produce,
  RecordBatch,
  Uuid
} from "@clustermirror/protocol"
import { ApacheKafka, Certificates, MirrorMaker, ServerProcess, Wait } from "@clustermirror/testkit"

const HOST = "127.0.0.1"
const CLIENT_ID = "clustermirror-bench-mirror"
const READY_TIMEOUT_MS = 120_000
const REQUEST_TIMEOUT_MS = 30_000
const PRODUCE_VERSION = 9
const SEGMENT = /^\d{20}\.log$/
export const MIRROR = "bench"

export type SetupId = "a" | "b" | "b-tls" | "c" | "d"

export const labels: Readonly<Record<SetupId, string>> = {
  a: "(a) Kafka -> MirrorMaker 2 -> Kafka",
  b: "(b) Kafka -> our destination",
  "b-tls": "(b-tls) Kafka -> our destination over TLS",
  c: "(c) ours -> ours",
  d: "(d) Kafka follower replication"
}

export interface SetupOptions {
  readonly topic: string
  readonly partitions: number
  /** Brokers of each of our clusters (one process with a controller). */
  readonly ourBrokers: number
  /** MirrorMaker's `tasks.max`. */
  readonly mm2Tasks: number
  /** Settings of MirrorMaker's producers to the target: the suite's producer settings. */
  readonly mm2Producer: Readonly<Record<string, string | number>>
  /** Directory for our destination's `--cpu-prof` output, when profiling it. */
  readonly cpuProfileDir: string | undefined
}

/** One process of a setup whose CPU counts. */
export interface SetupProcess {
  readonly role: string
  readonly pid: number
}

export interface Progress {
  /** Records on the destination so far (for follower replication: estimated from segment bytes until done). */
  readonly copiedRecords: number
  readonly done: boolean
}

/** What the stop of many partitions took on our destination. */
export interface StopTiming {
  readonly partitions: number
  /** Creating and starting the topics until every partition was MIRRORING (untimed setup). */
  readonly setupSeconds: number
  /** StopMirrorTopics until every partition was STOPPED. */
  readonly toStoppedSeconds: number
  /** StopMirrorTopics until a Produce to every partition had succeeded. */
  readonly toWritableSeconds: number
}

export interface Setup {
  readonly id: SetupId
  /** Where the data is produced. */
  readonly source: ClusterClient.Client
  readonly sourceBootstrap: string
  /** Where the lag consumer reads. */
  readonly destination: ClusterClient.Client
  /** What the CPU figures count, in words. */
  readonly counted: string
  /** Every process whose CPU counts (call after `startCopy`: MirrorMaker's JVM starts there). */
  processes(): ReadonlyArray<SetupProcess>
  /** Starts copying the topic, which holds `records` records in total. */
  startCopy(records: number): Promise<void>
  progress(): Promise<Progress>
  /** Stops mirroring `partitions` partitions on our destination and times it; a reason when the setup has no such thing. */
  stopPartitions(partitions: number, perTopic: number): Promise<StopTiming | string>
  stop(): Promise<void>
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

const newClient = (bootstrap: string): ClusterClient.Client =>
  new ClusterClient.Client({
    bootstrapServers: bootstrap.split(","),
    clientId: CLIENT_ID,
    requestTimeoutMs: REQUEST_TIMEOUT_MS
  })

/** Runs the cleanups in reverse order, reporting (not throwing) failures so that all of them run. */
const cleanupAll = async (cleanups: Array<() => Promise<unknown>>): Promise<void> => {
  for (const c of cleanups.reverse())
    await c().catch((e: unknown) => process.stderr.write(`cleanup failed: ${String(e)}\n`))
}

/** One of our clusters as a single `--embedded` process. */
const startOurs = async (name: string, o: SetupOptions, cpuProfileDir?: string) => {
  const server = await ServerProcess.start({
    port: false,
    args: ["--embedded", String(o.ourBrokers)],
    readyLines: o.ourBrokers + 1,
    config: {
      listeners: `PLAINTEXT://${HOST}:0`,
      "auto.create.topics.enable": false,
      "num.partitions": o.partitions,
      "socket.request.max.bytes": 104857600
    },
    tempPrefix: `clustermirror-bench-mirror-${name}-`,
    ...(cpuProfileDir === undefined ? {} : { cpuProfileDir })
  })
  const bootstrap = server
    .ports()
    .slice(1)
    .map((p) => `${HOST}:${p}`)
    .join(",")
  const client = newClient(bootstrap)
  const stop = async (): Promise<void> => {
    await client.close()
    await server.stop()
  }
  try {
    await waitBrokers(name, client, o.ourBrokers)
  } catch (e) {
    await stop()
    throw e
  }
  return { server, bootstrap, client, stop }
}

const waitBrokers = (name: string, client: ClusterClient.Client, n: number) =>
  Wait.eventually(
    `${name}: ${n} registered brokers`,
    async () => ((await client.metadata([])).brokers.size >= n ? true : undefined),
    READY_TIMEOUT_MS,
    200
  )

/** Creates topics (all partitions on `onBroker` when given) and waits until every partition is led. */
export const createTopics = async (
  client: ClusterClient.Client,
  names: ReadonlyArray<string>,
  partitions: number,
  onBroker?: number
): Promise<void> => {
  const res = await client.sendToAnyBroker(CreateTopics.api, {
    topics: names.map((name) => ({
      name,
      numPartitions: onBroker === undefined ? partitions : -1,
      replicationFactor: onBroker === undefined ? 1 : -1,
      assignments:
        onBroker === undefined
          ? []
          : Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, brokerIds: [onBroker] })),
      configs: []
    })),
    timeoutMs: REQUEST_TIMEOUT_MS,
    validateOnly: false
  })
  const failed = res.topics.filter((t) => t.errorCode !== 0)
  if (failed.length > 0)
    throw new Error(`CreateTopics failed: ${failed.map((t) => `${t.name} error ${t.errorCode}`).join(", ")}`)
  await Wait.eventually(
    `every partition of ${names.length} topic(s) led`,
    async () => {
      const m = await client.metadata(names)
      return names.every((n) => {
        const info = m.topics.get(n)
        return (
          info !== undefined &&
          info.partitions.size === partitions &&
          [...info.partitions.values()].every((p) => p.errorCode === 0 && p.leaderId >= 0)
        )
      })
        ? true
        : undefined
    },
    READY_TIMEOUT_MS,
    200
  )
}

/** The log end offset (latest) of every partition of `topic` on its leaders. */
export const endOffsets = (
  client: ClusterClient.Client,
  topic: string,
  partitions: number
): Promise<ReadonlyArray<bigint>> =>
  Promise.all(
    Array.from({ length: partitions }, async (_, partition) => {
      const res = await client.sendToLeader(
        topic,
        partition,
        ListOffsets.api,
        (leader) => ({
          replicaId: -1,
          isolationLevel: 0,
          topics: [
            {
              name: topic,
              partitions: [{ partitionIndex: partition, currentLeaderEpoch: leader.leaderEpoch, timestamp: -1n }]
            }
          ],
          timeoutMs: REQUEST_TIMEOUT_MS
        }),
        (r) => r.topics[0]?.partitions[0]?.errorCode ?? -1
      )
      return res.topics[0]!.partitions[0]!.offset
    })
  )

const sum = (xs: ReadonlyArray<bigint>): number => Number(xs.reduce((a, b) => a + b, 0n))

/** Bytes of the topic's segment files under a data dir. */
export const topicLogBytes = (dataDir: string, topic: string): number => {
  let total = 0
  const walk = (dir: string, inTopic: boolean): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) walk(path, e.name.startsWith(`${topic}-`) && /^\d+$/.test(e.name.slice(topic.length + 1)))
      else if (inTopic && e.isFile() && SEGMENT.test(e.name)) total += statSync(path).size
    }
  }
  walk(dataDir, false)
  return total
}

/** Progress of a KIP-1279 mirror of `topic` on our destination, from DescribeClusterMirrors. */
const mirrorProgress = async (
  admin: MirrorAdmin.MirrorAdmin,
  topic: string,
  partitions: number,
  records: number
): Promise<Progress> => {
  const d = await admin.describeClusterMirrors([MIRROR])
  const ps = (d.mirrors[0]?.partitions ?? []).filter((p) => p.topic === topic)
  const copiedRecords = ps.reduce((a, p) => a + (p.destinationOffset > 0n ? Number(p.destinationOffset) : 0), 0)
  const done =
    ps.length === partitions && ps.every((p) => p.state === "MIRRORING" && p.lag === 0n) && copiedRecords === records
  return { copiedRecords, done }
}

/** Produces `batch` to one partition's leader (acks=-1); rejects on a refusal. */
export const produceBatch = (client: ClusterClient.Client, topic: string, partition: number, batch: Buffer) =>
  client.sendToLeader(
    topic,
    partition,
    Produce.api,
    () => ({
      transactionalId: null,
      acks: -1,
      timeoutMs: REQUEST_TIMEOUT_MS,
      topicData: [{ name: topic, topicId: Uuid.ZERO, partitionData: [{ index: partition, records: batch }] }]
    }),
    (r) => r.responses[0]?.partitionResponses[0]?.errorCode ?? -1,
    { version: PRODUCE_VERSION }
  )

/** Produces one small record to every partition of `topics` (acks=-1); fails on the first refusal. */
const produceOneEach = async (
  client: ClusterClient.Client,
  topics: ReadonlyArray<string>,
  perTopic: number
): Promise<void> => {
  const batch = RecordBatch.build({ records: [{ key: null, value: Buffer.from("writable") }], timestamp: Date.now() })
  await Promise.all(
    topics.flatMap((topic) =>
      Array.from({ length: perTopic }, (_, partition) => produceBatch(client, topic, partition, batch))
    )
  )
}

/**
 * Mirrors `partitions` idle partitions (topics of `perTopic` partitions created on the source), waits
 * until all are MIRRORING, then times StopMirrorTopics until all are STOPPED and until every one took a
 * Produce.
 */
const timeStop = async (
  source: ClusterClient.Client,
  destination: ClusterClient.Client,
  admin: MirrorAdmin.MirrorAdmin,
  partitions: number,
  perTopic: number
): Promise<StopTiming> => {
  const names = Array.from({ length: Math.ceil(partitions / perTopic) }, (_, i) => `bench-stop-${i}`)
  const total = names.length * perTopic
  const began = Date.now()
  await createTopics(source, names, perTopic)
  const started = await admin.startMirrorTopics(MIRROR, names)
  const refused = started.filter((r) => r.error !== null)
  if (refused.length > 0) throw new Error(`StartMirrorTopics failed: ${refused.map((r) => String(r.error)).join("; ")}`)
  const states = async (): Promise<ReadonlyArray<MirrorAdmin.PartitionDescription>> =>
    ((await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions ?? []).filter((p) =>
      p.topic.startsWith("bench-stop-")
    )
  await Wait.eventually(
    `${total} partitions MIRRORING`,
    async () => {
      const ps = await states()
      return ps.length === total && ps.every((p) => p.state === "MIRRORING") ? true : undefined
    },
    300_000,
    500
  )
  const setupSeconds = (Date.now() - began) / 1000
  const t0 = Date.now()
  const stopped = await admin.stopMirrorTopics(MIRROR, names)
  const failed = stopped.filter((r) => r.error !== null)
  if (failed.length > 0) throw new Error(`StopMirrorTopics failed: ${failed.map((r) => String(r.error)).join("; ")}`)
  let stoppedAt: number | undefined
  const deadline = t0 + 300_000
  while (stoppedAt === undefined) {
    const ps = await states()
    if (ps.length === total && ps.every((p) => p.state === "STOPPED")) stoppedAt = Date.now()
    else if (Date.now() > deadline) throw new Error(`${total} partitions not STOPPED within 300 s`)
    else await sleep(50)
  }
  await produceOneEach(destination, names, perTopic)
  const writableAt = Date.now()
  return {
    partitions: total,
    setupSeconds,
    toStoppedSeconds: (stoppedAt - t0) / 1000,
    toWritableSeconds: (writableAt - t0) / 1000
  }
}

const kafkaNodeOptions: ApacheKafka.KafkaOptions = {
  // Kafka's default JVM flags and broker settings, as operators run it; a roomier heap than the testkit's.
  heap: "1g"
}

/** (a) Apache Kafka → MirrorMaker 2 → Apache Kafka: two single-node KRaft clusters and a MirrorMaker JVM. */
const startMirrorMaker2 = async (o: SetupOptions): Promise<Setup> => {
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const [a, b] = await Promise.all([
      ApacheKafka.startKafka(kafkaNodeOptions),
      ApacheKafka.startKafka(kafkaNodeOptions)
    ])
    cleanups.push(
      () => a.stop(),
      () => b.stop()
    )
    const source = newClient(a.bootstrap)
    const destination = newClient(b.bootstrap)
    cleanups.push(
      () => source.close(),
      () => destination.close()
    )
    await createTopics(source, [o.topic], o.partitions)
    // Created up front with the source's partition count, so progress can be read from the first poll.
    await createTopics(destination, [o.topic], o.partitions)
    let mm2: MirrorMaker.MirrorMakerProcess | undefined
    let total = 0
    return {
      id: "a",
      source,
      sourceBootstrap: a.bootstrap,
      destination,
      counted: "both Kafka JVMs (source and target, each a combined broker+controller) and the MirrorMaker 2 JVM",
      processes: () => [
        { role: "kafka source", pid: a.pid },
        { role: "kafka target", pid: b.pid },
        ...(mm2 === undefined ? [] : [{ role: "mirror maker", pid: mm2.pid }])
      ],
      startCopy: async (records) => {
        total = records
        mm2 = await MirrorMaker.start({
          source: a.bootstrap,
          target: b.bootstrap,
          topics: o.topic,
          tasksMax: o.mm2Tasks,
          targetProducer: o.mm2Producer
        })
        const started = mm2
        cleanups.push(() => started.stop())
      },
      progress: async () => {
        if (mm2 !== undefined && !mm2.isAlive()) throw new Error(`MirrorMaker exited:\n${mm2.logs().slice(-4_000)}`)
        const copiedRecords = sum(await endOffsets(destination, o.topic, o.partitions))
        return { copiedRecords, done: copiedRecords >= total }
      },
      stopPartitions: async () =>
        "n/a: MirrorMaker 2 has no stop that hands a topic over to local writers (it only stops copying)",
      stop: () => cleanupAll(cleanups)
    }
  } catch (e) {
    await cleanupAll(cleanups)
    throw e
  }
}

/**
 * The source of (b-tls): Apache Kafka with a second client listener, `SSL`, whose PEM keystore is given
 * inline (`ssl.keystore.type=PEM`, `ssl.keystore.key`, `ssl.keystore.certificate.chain`; no client
 * certificates asked for). PLAINTEXT stays its inter-broker listener and is where the producers and the
 * bench's admin client connect; the mirror connects to `SSL` with `security.protocol=SSL` and the CA as
 * a PEM truststore. The certificates live in a temp dir removed on cleanup.
 */
const startTlsKafka = async (cleanups: Array<() => Promise<unknown>>) => {
  const dir = mkdtempSync(join(tmpdir(), "clustermirror-bench-mirror-tls-"))
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
  const certs = Certificates.make(dir)
  const kafka = await ApacheKafka.startKafka({
    ...kafkaNodeOptions,
    extraListeners: [{ name: "SSL", protocol: "SSL" }],
    properties: {
      "listener.name.ssl.ssl.keystore.type": "PEM",
      "listener.name.ssl.ssl.keystore.key": readFileSync(certs.server.keyFile, "utf8"),
      "listener.name.ssl.ssl.keystore.certificate.chain":
        readFileSync(certs.server.certFile, "utf8") + readFileSync(certs.caFile, "utf8"),
      "listener.name.ssl.ssl.client.auth": "none"
    }
  })
  cleanups.push(() => kafka.stop())
  const mirrorConfig = new Map([
    ["bootstrap.servers", `${HOST}:${kafka.listenerPorts["SSL"]!}`],
    ["security.protocol", "SSL"],
    ["ssl.truststore.type", "PEM"],
    ["ssl.truststore.location", certs.caFile]
  ])
  return { kafka, mirrorConfig }
}

/**
 * (b), (b-tls) and (c): a KIP-1279 mirror on our destination, from Apache Kafka (over PLAINTEXT or its
 * SSL listener) or from our own cluster.
 */
const startOurMirror = async (id: "b" | "b-tls" | "c", o: SetupOptions): Promise<Setup> => {
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    let sourceBootstrap: string
    let sourceRole: string
    let sourcePid: () => number
    let mirrorConfig: Map<string, string> | undefined
    if (id === "b") {
      const kafka = await ApacheKafka.startKafka(kafkaNodeOptions)
      cleanups.push(() => kafka.stop())
      sourceBootstrap = kafka.bootstrap
      sourceRole = "kafka source"
      sourcePid = () => kafka.pid
    } else if (id === "b-tls") {
      const tls = await startTlsKafka(cleanups)
      sourceBootstrap = tls.kafka.bootstrap
      sourceRole = "kafka source"
      sourcePid = () => tls.kafka.pid
      mirrorConfig = tls.mirrorConfig
    } else {
      const ours = await startOurs("source", o)
      cleanups.push(() => ours.server.stop())
      sourceBootstrap = ours.bootstrap
      sourceRole = "our source"
      sourcePid = () => ours.server.pid
      await ours.client.close()
    }
    const dest = await startOurs("destination", o, id === "b" ? o.cpuProfileDir : undefined)
    cleanups.push(() => dest.stop())
    const source = newClient(sourceBootstrap)
    cleanups.push(() => source.close())
    const admin = new MirrorAdmin.MirrorAdmin(dest.client)
    await createTopics(source, [o.topic], o.partitions)
    await admin.createClusterMirror(MIRROR, mirrorConfig ?? new Map([["bootstrap.servers", sourceBootstrap]]))
    await Wait.eventually(
      `mirror ${MIRROR} described`,
      async () => ((await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.errorCode === 0 ? true : undefined),
      READY_TIMEOUT_MS,
      200
    )
    let total = 0
    return {
      id,
      source,
      sourceBootstrap,
      destination: dest.client,
      counted:
        id === "c"
          ? "our source process and our destination process (each a controller and its brokers)"
          : "the Kafka source JVM (combined broker+controller) and our destination process (its controller and brokers)",
      processes: () => [
        { role: sourceRole, pid: sourcePid() },
        { role: "our destination", pid: dest.server.pid }
      ],
      startCopy: async (records) => {
        total = records
        const res = await admin.startMirrorTopics(MIRROR, [o.topic])
        const failed = res.filter((r) => r.error !== null)
        if (failed.length > 0)
          throw new Error(`StartMirrorTopics failed: ${failed.map((r) => String(r.error)).join("; ")}`)
      },
      progress: () => mirrorProgress(admin, o.topic, o.partitions, total),
      stopPartitions: (partitions, perTopic) => timeStop(source, dest.client, admin, partitions, perTopic),
      stop: () => cleanupAll(cleanups)
    }
  } catch (e) {
    await cleanupAll(cleanups)
    throw e
  }
}

/**
 * (d) Kafka follower replication: a controller and two broker JVMs; the topic is created on broker 1
 * only and filled, then a reassignment adds broker 2 as a follower of every partition, which copies
 * the data. Done when broker 2's segment files hold as many bytes as broker 1's.
 */
const startFollower = async (o: SetupOptions): Promise<Setup> => {
  const cleanups: Array<() => Promise<unknown>> = []
  try {
    const cluster = await ApacheKafka.startKafkaCluster({ ...kafkaNodeOptions, brokers: 2 })
    cleanups.push(() => cluster.stop())
    const client = newClient(cluster.bootstrap)
    cleanups.push(() => client.close())
    await createTopics(client, [o.topic], o.partitions, 1)
    const leader = cluster.broker(1)
    const follower = cluster.broker(2)
    let total = 0
    let leaderBytes = 0
    return {
      id: "d",
      source: client,
      sourceBootstrap: cluster.bootstrap,
      destination: client,
      counted: "the controller JVM and both broker JVMs (leader and the new follower)",
      processes: () => [
        { role: "kafka controller", pid: cluster.controller.pid },
        { role: "kafka leader", pid: leader.pid },
        { role: "kafka follower", pid: follower.pid }
      ],
      startCopy: async (records) => {
        total = records
        leaderBytes = topicLogBytes(leader.dataDir, o.topic)
        const res = await client.sendToAnyBroker(AlterPartitionReassignments.api, {
          timeoutMs: REQUEST_TIMEOUT_MS,
          allowReplicationFactorChange: true,
          topics: [
            {
              name: o.topic,
              partitions: Array.from({ length: o.partitions }, (_, partitionIndex) => ({
                partitionIndex,
                replicas: [1, 2]
              }))
            }
          ]
        })
        const codes = [res.errorCode, ...res.responses.flatMap((t) => t.partitions.map((p) => p.errorCode))]
        if (codes.some((c) => c !== 0))
          throw new Error(`AlterPartitionReassignments failed: ${res.errorMessage ?? codes.join(",")}`)
      },
      progress: async () => {
        const copied = topicLogBytes(follower.dataDir, o.topic)
        const done = copied >= leaderBytes
        return { copiedRecords: done ? total : Math.floor((total * copied) / Math.max(1, leaderBytes)), done }
      },
      stopPartitions: async () => "n/a: follower replication has no mirror to stop",
      stop: () => cleanupAll(cleanups)
    }
  } catch (e) {
    await cleanupAll(cleanups)
    throw e
  }
}

/** Starts setup `id`, with the topic created on its source (empty). */
export const start = (id: SetupId, o: SetupOptions): Promise<Setup> =>
  id === "a" ? startMirrorMaker2(o) : id === "d" ? startFollower(o) : startOurMirror(id, o)
