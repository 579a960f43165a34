/**
 * Failover and failback between two 3-broker clusters of ours (KIP-1279 §5.4, §5.5): A mirrors to B; B
 * stops the mirror (failover) and takes writes while A, the old primary, takes writes of its own; then A
 * mirrors back from B. A must be cut at the last mirrored epoch, lose its own writes after the failover,
 * and end byte-identical to B. Starting a mirror in both directions on the same topic is refused as a
 * mirror loop. The dry run (failback preview) names the truncation offsets the failback then applies.
 * A's partitions have three replicas: the truncation runs in two phases (§5.5 step 7), and once A is shut
 * down every replica's files hold the same batches, byte for byte.
 */
import * as path from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, Hashing, MirrorPartitionState, ReadMirrorStates, RecordBatch } from "@clustermirror/protocol"
import { PartitionLogStore } from "@clustermirror/storage"
import { Kcat, MirrorCheck, Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const PARTITIONS = 2

/** Produces `n` lines to every partition (kcat's sticky partitioner could leave a partition empty). */
const produceEach = async (c: Cluster, topic: string, prefix: string, n: number) => {
  for (let p = 0; p < PARTITIONS; p++)
    await c.kcat(["-P", "-t", topic, "-p", String(p), "-z", "lz4", "-X", "enable.idempotence=true"], {
      input: lines(prefix, n)
    })
}

/** The batches of one partition in a stopped broker's data directory, as hex strings, and its log end. */
const replicaLog = (
  brokerDir: string,
  topic: string,
  partition: number
): { readonly batches: string[]; readonly logEndOffset: number } => {
  const store = PartitionLogStore.makeFileStore(brokerDir)
  try {
    const log = store.open(topic, partition)
    const out: string[] = []
    let offset = log.logStartOffset
    while (offset < log.logEndOffset) {
      const { records } = log.read(offset, 1 << 20, { maxOffset: log.logEndOffset })
      const { batches } = RecordBatch.split(records)
      if (batches.length === 0) break
      for (const b of batches) out.push(records.subarray(b.position, b.position + b.size).toString("hex"))
      offset = RecordBatch.lastOffset(records, batches[batches.length - 1]!.position) + 1
    }
    return { batches: out, logEndOffset: log.logEndOffset }
  } finally {
    store.closeAll()
  }
}

const lines = (prefix: string, n: number): string =>
  `${Array.from({ length: n }, (_, i) => `${prefix}-${i}-${"x".repeat(40)}`).join("\n")}\n`

interface Cluster {
  readonly server: ServerProcess.ServerHandle
  readonly bootstrap: string
  readonly client: ClusterClient.Client
  readonly admin: MirrorAdmin.MirrorAdmin
  readonly kcat: (args: ReadonlyArray<string>, opts?: Kcat.KcatOptions) => Promise<Kcat.KcatResult>
}

const startCluster = async (prefix: string): Promise<Cluster> => {
  // --embedded 3 listens on port..port+2 and more: only the first is known free, so a start whose
  // other listeners are taken by then is tried again on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(prefix)
    } catch (e) {
      if (attempt < 3 && e instanceof Error && e.message.includes("EADDRINUSE")) continue
      throw e
    }
  }
}

const startClusterOnce = async (prefix: string): Promise<Cluster> => {
  const port = await Ports.freePort()
  const server = await ServerProcess.start({
    tempPrefix: prefix,
    port,
    args: ["--embedded", "3"],
    readyLines: 4,
    config: {
      "default.replication.factor": 3,
      "offsets.topic.replication.factor": 3,
      "broker.heartbeat.interval.ms": 300,
      "mirror.state.topic.num.partitions": 5,
      "mirror.failed.retry.initial.backoff.ms": 300,
      "mirror.failed.retry.max.backoff.ms": 2000
    }
  })
  const bootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
  const client = new ClusterClient.Client({ bootstrapServers: bootstrap.split(","), requestTimeoutMs: 30_000 })
  await Wait.eventually(`${prefix}: 3 brokers`, async () =>
    (await client.metadata([])).brokers.size === 3 ? true : undefined
  )
  return { server, bootstrap, client, admin: new MirrorAdmin.MirrorAdmin(client), kcat: Kcat.forBootstrap(bootstrap) }
}

describe("failover and failback between two of our clusters", () => {
  let a: Cluster
  let b: Cluster

  beforeAll(async () => {
    ;[a, b] = await Promise.all([startCluster("cm-fb-a-"), startCluster("cm-fb-b-")])
    const created = await a.client.sendToAnyBroker(CreateTopics.api, {
      topics: ["fb", "loop"].map((name) => ({
        name,
        numPartitions: PARTITIONS,
        replicationFactor: 3,
        assignments: [],
        configs: []
      })),
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0, 0])
    await a.admin.createClusterMirror("back", new Map([["bootstrap.servers", b.bootstrap]]))
    await b.admin.createClusterMirror("from-a", new Map([["bootstrap.servers", a.bootstrap]]))
  })

  afterAll(async () => {
    await a?.client.close()
    await b?.client.close()
    await a?.server.stop()
    await b?.server.stop()
  })

  const states = async (on: Cluster, mirror: string, topic: string) =>
    (await on.admin.describeClusterMirrors([mirror])).mirrors[0]?.partitions.filter((p) => p.topic === topic) ?? []

  const waitStates = (
    on: Cluster,
    mirror: string,
    topic: string,
    check: (p: MirrorAdmin.PartitionDescription) => boolean,
    what: string
  ) =>
    Wait.eventually(
      what,
      async () => {
        const ps = await states(on, mirror, topic)
        return ps.length === PARTITIONS && ps.every(check) ? ps : undefined
      },
      120_000,
      250
    )

  const caughtUp = (p: MirrorAdmin.PartitionDescription) =>
    p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= 0n

  it("refuses a mirror loop: A cannot mirror a topic from B while B mirrors it from A", async () => {
    await a.kcat(["-P", "-t", "loop", "-z", "lz4", "-X", "enable.idempotence=true"], { input: lines("loop", 500) })
    await b.admin.startMirrorTopics("from-a", ["loop"])
    await waitStates(b, "from-a", "loop", caughtUp, "B mirrors loop from A")
    await a.admin.startMirrorTopics("back", ["loop"])
    const failed = await waitStates(
      a,
      "back",
      "loop",
      (p) => p.state === "FAILED" && /mirror loop/.test(p.errorMessage ?? ""),
      "A refuses the loop"
    )
    expect(failed[0]!.errorMessage).toBe("Detected mirror loop for mirror:from-a")
    // A FAILED partition can be stopped by the operator.
    await a.admin.stopMirrorTopics("back", ["loop"])
    await waitStates(a, "back", "loop", (p) => p.state === "STOPPED", "A's loop attempt stopped")
    await waitStates(b, "from-a", "loop", caughtUp, "B still mirrors loop")
  })

  it("fails over to B, then fails back: A is cut at the last mirrored epoch and ends identical to B", async () => {
    await produceEach(a, "fb", "before", 1500)
    await b.admin.startMirrorTopics("from-a", ["fb"])
    await waitStates(b, "from-a", "fb", caughtUp, "B mirrors fb from A")
    const before = await MirrorCheck.compareClusters({ source: a.bootstrap, destination: b.bootstrap, topics: ["fb"] })
    expect(before.identical).toBe(true)
    const failoverPoint = before.partitions.map((p) => p.sourceEnd)

    // Failover: B stops mirroring and takes writes; A, cut off from its clients' view, takes some too.
    await b.admin.stopMirrorTopics("from-a", ["fb"])
    await waitStates(b, "from-a", "fb", (p) => p.state === "STOPPED", "B stopped")
    await produceEach(b, "fb", "on-b", 500)
    await produceEach(a, "fb", "lost-on-a", 250)

    // B's coordinators hold the last mirrored epoch of each partition.
    const meta = await b.client.metadata(["fb", "__mirror_state"])
    const topicId = meta.topics.get("fb")!.topicId
    const stateTopic = meta.topics.get("__mirror_state")!
    const lmes: Array<number> = []
    for (let p = 0; p < PARTITIONS; p++) {
      const sp = Hashing.mirrorStatePartition("from-a", topicId, p, stateTopic.partitions.size)
      const res = await b.client.sendToNode(stateTopic.partitions.get(sp)!.leaderId, ReadMirrorStates.api, {
        mirrorName: "from-a",
        topics: [{ name: "fb", partitions: [{ partitionIndex: p, leaderEpoch: -1, stateEpoch: -1 }] }]
      })
      const r = res.topics[0]!.partitions[0]!
      expect(r.state).toBe(MirrorPartitionState.toByte("STOPPED"))
      expect(r.lastMirrorEpoch).toBeGreaterThanOrEqual(0)
      lmes.push(r.lastMirrorEpoch)
    }

    // The dry run says where A will be cut: at the failover point, losing A's own later writes.
    const preview = await a.admin.previewTruncation("back", ["fb"])
    expect(preview.map((p) => [p.partition, p.lastMirrorEpoch, p.truncateTo])).toEqual(
      lmes.map((lme, p) => [p, lme, BigInt(failoverPoint[p]!)])
    )
    expect(preview.reduce((n, p) => n + p.recordsCut, 0n)).toBe(500n)

    // Failback: A mirrors fb back from B.
    await a.admin.startMirrorTopics("back", ["fb"])
    await waitStates(a, "back", "fb", caughtUp, "A mirrors fb back from B")
    const after = await MirrorCheck.compareClusters({
      source: b.bootstrap,
      destination: a.bootstrap,
      topics: ["fb"],
      upTo: "sourceHighWatermark"
    })
    expect(after.partitions.map((p) => p.firstMismatch)).toEqual(after.partitions.map(() => null))
    expect(after.identical).toBe(true)
    for (const p of after.partitions) {
      // A holds exactly B's log: everything up to the failover point, then B's writes; its own are gone.
      expect(p.destinationEnd).toBe(p.sourceEnd)
      expect(p.sourceEnd).toBeGreaterThan(failoverPoint[p.partition]!)
    }
    const onA = await a.kcat(["-C", "-t", "fb", "-e", "-q", "-o", "beginning", "-f", "%s\\n"])
    expect(onA.stdout).not.toContain("lost-on-a")
    expect(onA.stdout.split("\n").filter((l) => l.startsWith("on-b")).length).toBe(1000)
    expect(onA.stdout.split("\n").filter((l) => l.startsWith("before")).length).toBe(3000)

    // Every replica of A was cut too (followers through the diverging-epoch path, before mirroring resumed)
    // and caught up: after a clean shutdown the three replicas hold the same batches, byte for byte, and
    // as many as B's log holds.
    await a.server.kill("SIGTERM")
    const dataDir = a.server.dataDir!
    for (const p of after.partitions) {
      const replicas = [1, 2, 3].map((id) => replicaLog(path.join(dataDir, `broker-${id}`), "fb", p.partition))
      for (const r of replicas) expect(r.logEndOffset).toBe(Number(p.sourceEnd))
      expect(replicas[1]!.batches).toEqual(replicas[0]!.batches)
      expect(replicas[2]!.batches).toEqual(replicas[0]!.batches)
    }
  })
})
