/**
 * KIP-1279 end to end between two 3-broker clusters of ours: the source runs embedded in one process,
 * the destination as a controller and three broker processes (so one broker can be SIGKILLed). kcat
 * produces 1,000,000 lz4 records with an idempotent producer into 8 topics × 4 partitions; the mirror
 * copies them and every partition is compared batch by batch (offsets, CRCs, leader epochs, bytes) and by
 * topic id. Then pause/resume/stop, the source going away and coming back, and the loss of the broker
 * leading a `__mirror_state` partition.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  CreateTopics,
  Errors,
  Metadata,
  Produce,
  ReadMirrorStates,
  RecordBatch,
  Hashing,
  MirrorPartitionState
} from "@clustermirror/protocol"
import { Kcat, MirrorCheck, Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ServerHandle, startServer } from "./harness.js"

const TOPICS = Array.from({ length: 8 }, (_, i) => `orders-${i}`)
const PARTITIONS = 4
const RECORDS = 1_000_000
const MIRROR = "dr"
const STATE_PARTITIONS = 6

const cliMain = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url))
const cliDir = fileURLToPath(new URL("../../cli/", import.meta.url))

/** Runs the operator CLI as a process. */
const cli = (args: ReadonlyArray<string>): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", cliMain, ...args], { cwd: cliDir })
    let stdout = ""
    let stderr = ""
    p.stdout.on("data", (d) => (stdout += d))
    p.stderr.on("data", (d) => (stderr += d))
    p.on("close", (code) => resolve({ code, stdout, stderr }))
  })

const values = (prefix: string, n: number): string => {
  const out = new Array<string>(n)
  for (let i = 0; i < n; i++) out[i] = `${prefix}-${i}-${(i * 2654435761) % 1000003}-${"payload".repeat(8)}`
  return `${out.join("\n")}\n`
}

describe("cluster mirroring between two 3-broker clusters", () => {
  const clusterId = randomBytes(16).toString("base64url").slice(0, 22)
  let source: ServerProcess.ServerHandle
  let controller: ServerHandle
  const brokers: Array<ServerHandle> = []
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  let sourceBootstrap: string
  let destinationBootstrap: string

  beforeAll(async () => {
    const sourcePort = await Ports.freePort()
    source = await ServerProcess.start({
      tempPrefix: "cm-mirror-src-",
      port: sourcePort,
      args: ["--embedded", "3"],
      readyLines: 4,
      config: {
        "num.partitions": PARTITIONS,
        "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3,
        "broker.heartbeat.interval.ms": 300,
        "socket.request.max.bytes": 104857600
      }
    })
    sourceBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${sourcePort + i}`).join(",")
    const controllerPort = await Ports.freePort()
    controller = await startServer({
      config: {
        "process.roles": "controller",
        "node.id": 1000,
        "cluster.id": clusterId,
        listeners: `CONTROLLER://127.0.0.1:${controllerPort}`,
        "broker.session.timeout.ms": 3000,
        "default.replication.factor": 3,
        "mirror.state.topic.num.partitions": STATE_PARTITIONS
      }
    })
    for (let id = 1; id <= 3; id++)
      brokers.push(
        await startServer({
          config: {
            "process.roles": "broker",
            "node.id": id,
            "cluster.id": clusterId,
            "controller.quorum.bootstrap.servers": `127.0.0.1:${controllerPort}`,
            "broker.heartbeat.interval.ms": 300,
            "replica.lag.time.max.ms": 5000,
            "offsets.topic.replication.factor": 3,
            "default.replication.factor": 3,
            "mirror.failed.retry.initial.backoff.ms": 500,
            "mirror.failed.retry.max.backoff.ms": 4000
          }
        })
      )
    destinationBootstrap = brokers.map((b) => b.bootstrap).join(",")
    src = new ClusterClient.Client({ bootstrapServers: sourceBootstrap.split(","), requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: destinationBootstrap.split(","), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(dst)
    await Wait.eventually("3 live destination brokers", async () =>
      (await dst.metadata([])).brokers.size === 3 ? true : undefined
    )
    await Wait.eventually("3 live source brokers", async () =>
      (await src.metadata([])).brokers.size === 3 ? true : undefined
    )
  })

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    for (const b of brokers) await b.stop()
    await controller?.stop()
    await source?.stop()
  })

  /** Every partition of the mirror, as the brokers describe it. */
  const describeAll = async () => {
    const d = await admin.describeClusterMirrors([MIRROR])
    return d.mirrors[0]?.partitions ?? []
  }

  const waitCaughtUp = (topics: ReadonlyArray<string>, what: string, timeoutMs = 240_000) =>
    Wait.eventually(
      what,
      async () => {
        const parts = (await describeAll()).filter((p) => topics.includes(p.topic))
        if (parts.length !== topics.length * PARTITIONS) return undefined
        if (!parts.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= 0n)) return undefined
        return parts
      },
      timeoutMs,
      500
    )

  const expectIdentical = async (topics: ReadonlyArray<string>) => {
    const c = await MirrorCheck.compareClusters({
      source: sourceBootstrap,
      destination: destinationBootstrap,
      topics,
      upTo: "sourceHighWatermark"
    })
    const mismatches = c.partitions.filter((p) => p.firstMismatch !== null)
    expect(mismatches.map((p) => `${p.topic}-${p.partition}: ${JSON.stringify(p.firstMismatch)}`)).toEqual([])
    expect(c.identical).toBe(true)
    return c
  }

  /** Produces one batch of `n` records to a destination partition with our client; the error code. */
  const produceToDestination = async (topic: string, partition: number, n: number): Promise<number> => {
    const batch = RecordBatch.build({
      records: Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`local-${i}`) })),
      timestamp: Date.now()
    })
    const leader = await dst.leaderFor(topic, partition)
    const res = await dst.sendToNode(leader.nodeId, Produce.api, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 10_000,
      topicData: [
        { name: topic, topicId: "AAAAAAAAAAAAAAAAAAAAAA", partitionData: [{ index: partition, records: batch }] }
      ]
    })
    return res.responses[0]!.partitionResponses[0]!.errorCode
  }

  it("mirrors 1,000,000 lz4 records of 8 topics × 4 partitions with the same offsets, batches, epochs and topic ids", async () => {
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: TOPICS.map((name) => ({
        name,
        numPartitions: PARTITIONS,
        replicationFactor: 3,
        assignments: [],
        configs: []
      })),
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual(TOPICS.map(() => 0))
    const kcat = Kcat.forBootstrap(sourceBootstrap)
    const started = Date.now()
    await Promise.all(
      TOPICS.flatMap((t) =>
        Array.from({ length: PARTITIONS }, (_, p) =>
          kcat(
            [
              "-P",
              "-t",
              t,
              "-p",
              String(p),
              "-z",
              "lz4",
              "-X",
              "enable.idempotence=true",
              "-X",
              "acks=all",
              "-X",
              "linger.ms=20"
            ],
            { input: values(`${t}-${p}`, RECORDS / TOPICS.length / PARTITIONS) }
          )
        )
      )
    )
    console.log(`produced ${RECORDS} records to the source in ${Date.now() - started} ms`)

    const config = path.join(os.tmpdir(), `cm-mirror-${process.pid}.properties`)
    fs.writeFileSync(config, `bootstrap.servers=${sourceBootstrap}\nrequest.timeout.ms=3000\n`)
    const create = await cli([
      "--bootstrap-server",
      destinationBootstrap,
      "--create",
      "--mirror",
      MIRROR,
      "--mirror-config",
      config
    ])
    fs.rmSync(config, { force: true })
    expect(create).toMatchObject({ code: 0, stdout: `Created mirror ${MIRROR}.\n` })
    const mirrorStarted = Date.now()
    const start = await cli([
      "--bootstrap-server",
      destinationBootstrap,
      "--start",
      "--mirror",
      MIRROR,
      "--topics",
      "orders-.*"
    ])
    expect(start.code).toBe(0)
    expect(start.stdout).toContain(`Started ${TOPICS.length} mirror topic(s) in mirror ${MIRROR}`)

    const parts = await waitCaughtUp(TOPICS, "all 32 partitions mirrored with lag 0")
    console.log(`mirror caught up with ${RECORDS} records in ${Date.now() - mirrorStarted} ms`)
    const total = parts.reduce((n, p) => n + Number(p.destinationOffset), 0)
    expect(total).toBe(RECORDS)

    const c = await expectIdentical(TOPICS)
    expect(c.partitions).toHaveLength(TOPICS.length * PARTITIONS)
    expect(c.partitions.reduce((n, p) => n + p.records, 0)).toBe(RECORDS)
    for (const p of c.partitions) {
      expect(p.destinationTopicId).toBe(p.sourceTopicId)
      expect(p.batches).toBeGreaterThan(0)
    }

    const described = await cli(["--bootstrap-server", destinationBootstrap, "--describe", "--mirror", MIRROR])
    expect(described.code).toBe(0)
    expect(described.stdout.split("\n")[0]).toMatch(
      /^MIRROR\s+TOPIC\s+PARTITION\s+SOURCE-OFFSET\s+DESTINATION-OFFSET\s+LAG\s+STATE/
    )
    expect(described.stdout.split("\n").filter((l) => l.includes("MIRRORING"))).toHaveLength(TOPICS.length * PARTITIONS)
  })

  it("pause stops the fetcher and keeps the topic read-only; resume continues without gaps; stop makes it writable above the LME", async () => {
    const topic = TOPICS[0]!
    const kcat = Kcat.forBootstrap(sourceBootstrap)
    expect(await produceToDestination(topic, 0, 1)).toBe(Errors.ErrorCode.READ_ONLY_TOPIC)

    await admin.pauseMirrorTopics(MIRROR, [topic])
    await Wait.eventually("paused", async () => {
      const ps = (await describeAll()).filter((p) => p.topic === topic)
      return ps.length === PARTITIONS && ps.every((p) => p.state === "PAUSED") ? ps : undefined
    })
    const before = await MirrorCheck.compareClusters({
      source: sourceBootstrap,
      destination: destinationBootstrap,
      topics: [topic],
      upTo: "destinationHighWatermark"
    })
    await kcat(["-P", "-t", topic, "-z", "lz4", "-X", "enable.idempotence=true", "-X", "acks=all"], {
      input: values("paused", 4000)
    })
    await new Promise((r) => setTimeout(r, 2000))
    const during = await MirrorCheck.compareClusters({
      source: sourceBootstrap,
      destination: destinationBootstrap,
      topics: [topic],
      upTo: "destinationHighWatermark"
    })
    // Nothing was copied while paused, and the topic stays read-only.
    expect(during.partitions.map((p) => p.destinationEnd)).toEqual(before.partitions.map((p) => p.destinationEnd))
    expect(during.partitions.some((p, i) => p.sourceEnd > before.partitions[i]!.sourceEnd)).toBe(true)
    expect(await produceToDestination(topic, 1, 1)).toBe(Errors.ErrorCode.READ_ONLY_TOPIC)

    await admin.resumeMirrorTopics(MIRROR, [topic])
    await waitCaughtUp([topic], "resumed and caught up", 60_000)
    await expectIdentical([topic])

    await admin.stopMirrorTopics(MIRROR, [topic])
    await Wait.eventually("stopped", async () => {
      const ps = (await describeAll()).filter((p) => p.topic === topic)
      return ps.length === PARTITIONS && ps.every((p) => p.state === "STOPPED") ? ps : undefined
    })
    const meta = await dst.sendToAnyBroker(Metadata.api, {
      topics: [{ name: topic, topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false
    })
    const sourceMeta = await src.sendToAnyBroker(Metadata.api, {
      topics: [{ name: topic, topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      allowAutoTopicCreation: false,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false
    })
    for (const p of meta.topics[0]!.partitions) {
      const sourceEpoch = sourceMeta.topics[0]!.partitions.find(
        (s) => s.partitionIndex === p.partitionIndex
      )!.leaderEpoch
      // The last mirrored batch carries at most the source epoch; the destination leader is above it.
      expect(p.leaderEpoch).toBeGreaterThan(sourceEpoch)
    }
    // The stop wrote the last mirror epoch of each partition to its coordinator.
    const lmes = await readLastMirrorEpochs(topic)
    expect(lmes.every((e) => e >= 0)).toBe(true)
    for (let p = 0; p < PARTITIONS; p++) {
      const epoch = meta.topics[0]!.partitions.find((x) => x.partitionIndex === p)!.leaderEpoch
      expect(epoch).toBeGreaterThan(lmes[p]!)
      expect(await produceToDestination(topic, p, 10)).toBe(0)
    }
  })

  /** ReadMirrorStates from the coordinator of each partition of `topic`: the last mirror epochs. */
  const readLastMirrorEpochs = async (topic: string): Promise<ReadonlyArray<number>> => {
    const meta = await dst.metadata([topic, "__mirror_state"])
    const t = meta.topics.get(topic)!
    const state = meta.topics.get("__mirror_state")!
    const out: Array<number> = []
    for (let p = 0; p < PARTITIONS; p++) {
      const sp = Hashing.mirrorStatePartition(MIRROR, t.topicId, p, state.partitions.size)
      const leader = state.partitions.get(sp)!.leaderId
      const res = await dst.sendToNode(leader, ReadMirrorStates.api, {
        mirrorName: MIRROR,
        topics: [{ name: topic, partitions: [{ partitionIndex: p, leaderEpoch: -1, stateEpoch: -1 }] }]
      })
      const r = res.topics[0]!.partitions[0]!
      expect(r.errorCode).toBe(0)
      expect(r.state).toBe(MirrorPartitionState.toByte("STOPPED"))
      out.push(r.lastMirrorEpoch)
    }
    return out
  }

  it("the source goes away: partitions go FAILED with a reason, retry with growing delay, and recover when it returns", async () => {
    const active = TOPICS.slice(1)
    await source.kill("SIGTERM")
    try {
      const seen = new Map<string, number>()
      await Wait.eventually(
        "failed partitions retrying at attempt 2 or more",
        async () => {
          const failed = (await describeAll()).filter((p) => p.state === "FAILED")
          for (const p of failed)
            seen.set(`${p.topic}-${p.partition}`, Math.max(seen.get(`${p.topic}-${p.partition}`) ?? 0, p.retryAttempt))
          return failed.length > 0 && failed.some((p) => p.retryAttempt >= 2) ? failed : undefined
        },
        120_000,
        250
      )
      // A failing partition spends its backoff in FAILED and its retries in its previous state: the CLI is
      // asked until it catches some in FAILED.
      const rows = await Wait.eventually(
        "the CLI listing failed partitions",
        async () => {
          const failedCli = await cli([
            "--bootstrap-server",
            destinationBootstrap,
            "--describe",
            "--failed",
            "--mirror",
            MIRROR
          ])
          expect(failedCli.code).toBe(0)
          if (failedCli.stdout.startsWith("No failed partitions found")) return undefined
          const header = failedCli.stdout.split("\n")[0]!
          expect(header).toMatch(/^MIRROR\s+TOPIC\s+PARTITION\s+RETRY\s+ERROR/)
          const listed = failedCli.stdout
            .split("\n")
            .slice(1)
            .filter((l) => l.trim().length > 0)
          return listed.length > 0 ? listed : undefined
        },
        60_000,
        250
      )
      // Attempt over the maximum, and the reason.
      expect(rows.some((r) => /\s\d+\/100\s/.test(r) && /(Fetch|source|metadata|Failed)/i.test(r))).toBe(true)
      await Wait.eventually(
        "a retry attempt of 3",
        async () => ((await describeAll()).some((p) => p.state === "FAILED" && p.retryAttempt >= 3) ? true : undefined),
        120_000,
        250
      )
    } catch (e) {
      // The tests after this one need the source back.
      await source.restart().catch(() => {})
      throw e
    }
    await source.restart()
    await Wait.eventually("3 live source brokers again", async () =>
      (await src.metadata([])).brokers.size === 3 ? true : undefined
    )
    const kcat = Kcat.forBootstrap(sourceBootstrap)
    await kcat(["-P", "-t", active[0]!, "-z", "lz4", "-X", "enable.idempotence=true", "-X", "acks=all"], {
      input: values("back", 5000)
    })
    await waitCaughtUp(active, "recovered and caught up", 180_000)
    await expectIdentical(active)
  })

  it("SIGKILL of the broker leading a __mirror_state partition: the new leader replays it, no state is lost, mirroring continues", async () => {
    const active = TOPICS.slice(1)
    const before = new Map((await describeAll()).map((p) => [`${p.topic}-${p.partition}`, p.state]))
    expect(before.size).toBe(TOPICS.length * PARTITIONS)
    const meta = await dst.metadata(["__mirror_state"])
    const state = meta.topics.get("__mirror_state")!
    const victimId = state.partitions.get(0)!.leaderId
    const victim = brokers[victimId - 1]!
    await victim.kill("SIGKILL")
    await Wait.eventually(
      "__mirror_state-0 led elsewhere",
      async () => {
        dst.invalidate("__mirror_state")
        const m = await dst.metadata(["__mirror_state"])
        const l = m.topics.get("__mirror_state")?.partitions.get(0)?.leaderId
        return l !== undefined && l >= 0 && l !== victimId ? l : undefined
      },
      60_000,
      200
    )
    const kcat = Kcat.forBootstrap(sourceBootstrap)
    await Promise.all(
      active.map((t) =>
        kcat(["-P", "-t", t, "-z", "lz4", "-X", "enable.idempotence=true", "-X", "acks=all"], {
          input: values("after-kill", 2000)
        })
      )
    )
    await waitCaughtUp(active, "mirroring continues after the kill", 180_000)
    const after = new Map((await describeAll()).map((p) => [`${p.topic}-${p.partition}`, p.state]))
    expect(after).toEqual(before)
    // The stopped topic's last mirror epochs survived on the new coordinators.
    expect((await readLastMirrorEpochs(TOPICS[0]!)).every((e) => e >= 0)).toBe(true)
    await expectIdentical(active)
    await victim.restart()
    await Wait.eventually("the killed broker is back", async () =>
      (await dst.metadata([])).brokers.size === 3 ? true : undefined
    )
  })
})
