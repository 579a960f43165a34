/**
 * Mirror metrics and data-loss detection between two clusters of ours: a one-broker source and a
 * three-broker destination (one process each, `--embedded`), every destination broker serving Prometheus
 * metrics on its own port. The endpoints are scraped with fetch(): every metric the README documents is
 * there, lag rises while the mirror is paused and falls after resume, and when size retention on the source
 * deletes records a paused mirror had not copied yet, the partition goes FAILED with the data-loss reason
 * (describe, `--describe --failed`, the counter, a log line) instead of jumping, until the operator
 * recovers it accepting the loss: it then mirrors from the new source log start, equal to the source.
 */
import * as fs from "node:fs"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { ClientError, ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, DeleteTopics, IncrementalAlterConfigs, ListOffsets } from "@clustermirror/protocol"
import { Kcat, Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const TOPIC = "lossy"
const MIRROR = "dr"
const README = fileURLToPath(new URL("../../../README.md", import.meta.url))
const cliMain = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url))
const cliDir = fileURLToPath(new URL("../../cli/", import.meta.url))

/** The metric names of the README's Metrics table. */
const documentedMetrics = (): ReadonlyArray<string> => {
  const text = fs.readFileSync(README, "utf8")
  const section = text.slice(text.indexOf("## Metrics"), text.indexOf("\n## ", text.indexOf("## Metrics") + 1))
  return [...new Set([...section.matchAll(/^\| `(clustermirror_[a-z_]+)` \|/gm)].map((m) => m[1]!))]
}

/** One scrape: the families typed in it and every sample by `name{labels}` as written. */
interface Scrape {
  readonly types: ReadonlyMap<string, string>
  readonly samples: ReadonlyMap<string, number>
}

const scrape = async (port: number): Promise<Scrape> => {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  expect(res.status).toBe(200)
  expect(res.headers.get("content-type")).toContain("version=0.0.4")
  const types = new Map<string, string>()
  const samples = new Map<string, number>()
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("# HELP")) continue
    const t = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (t !== null) {
      types.set(t[1]!, t[2]!)
      continue
    }
    const i = line.lastIndexOf(" ")
    samples.set(line.slice(0, i), Number(line.slice(i + 1)))
  }
  return { types, samples }
}

/** A sample summed over the destination brokers (partition metrics live on the partition's leader). */
const total = (scrapes: ReadonlyArray<Scrape>, series: string): number | undefined => {
  let sum: number | undefined
  for (const s of scrapes) {
    const v = s.samples.get(series)
    if (v !== undefined) sum = (sum ?? 0) + v
  }
  return sum
}

const lines = (prefix: string, n: number): string =>
  `${Array.from({ length: n }, (_, i) => `${prefix}-${i}-${"v".repeat(100)}`).join("\n")}\n`

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

const LAG_RECORDS = `clustermirror_mirror_partition_lag_records{mirror="${MIRROR}",topic="${TOPIC}",partition="0"}`
const LAG_SECONDS = `clustermirror_mirror_partition_lag_seconds{mirror="${MIRROR}",topic="${TOPIC}",partition="0"}`
const partitionsIn = (state: string) => `clustermirror_mirror_partitions{mirror="${MIRROR}",state="${state}"}`
const counter = (name: string) => `clustermirror_mirror_${name}_total{mirror="${MIRROR}"}`

describe("mirror metrics and data-loss detection", () => {
  let source: ServerProcess.ServerHandle
  let destination: ServerProcess.ServerHandle
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  let sourceBootstrap: string
  let destinationBootstrap: string
  let metricsPorts: ReadonlyArray<number>
  const produce = (n: number, prefix: string) =>
    // Batches of 10 records (over 1 KB): with segment.bytes=1024 each batch gets a segment of its own.
    Kcat.forBootstrap(sourceBootstrap)(["-P", "-t", TOPIC, "-p", "0", "-X", "batch.num.messages=10"], {
      input: lines(prefix, n)
    })
  const scrapeAll = () => Promise.all(metricsPorts.map(scrape))
  const partition = async () =>
    (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions.find((p) => p.topic === TOPIC)
  const waitPartition = (what: string, check: (p: MirrorAdmin.PartitionDescription) => boolean) =>
    Wait.eventually(
      what,
      async () => {
        const p = await partition()
        return p !== undefined && check(p) ? p : undefined
      },
      60_000,
      200
    )
  const offsetOf = async (client: ClusterClient.Client, timestamp: bigint): Promise<number> => {
    const leader = await client.leaderFor(TOPIC, 0)
    const res = await client.sendToNode(leader.nodeId, ListOffsets.api, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp }] }],
      timeoutMs: 10_000
    })
    const p = res.topics[0]!.partitions[0]!
    expect(p.errorCode).toBe(0)
    return Number(p.offset)
  }

  beforeAll(async () => {
    const [sourcePort, destinationPort, metricsPort] = await Ports.freePorts(3)
    source = await ServerProcess.start({
      tempPrefix: "cm-metrics-src-",
      port: sourcePort!,
      args: ["--embedded", "1"],
      readyLines: 2,
      config: { "broker.heartbeat.interval.ms": 300, "log.retention.check.interval.ms": 200 }
    })
    destination = await ServerProcess.start({
      tempPrefix: "cm-metrics-dst-",
      port: destinationPort!,
      args: ["--embedded", "3", "--metrics-port", String(metricsPort)],
      readyLines: 4,
      config: {
        "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3,
        "broker.heartbeat.interval.ms": 300,
        "mirror.state.topic.num.partitions": 3
      }
    })
    metricsPorts = [0, 1, 2].map((i) => metricsPort! + i)
    sourceBootstrap = `127.0.0.1:${sourcePort}`
    destinationBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${destinationPort! + i}`).join(",")
    src = new ClusterClient.Client({ bootstrapServers: [sourceBootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: destinationBootstrap.split(","), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(dst)
    await Wait.eventually("3 destination brokers", async () =>
      (await dst.metadata([])).brokers.size === 3 ? true : undefined
    )
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [
        {
          name: TOPIC,
          numPartitions: 1,
          replicationFactor: 1,
          assignments: [],
          // Size retention the test can drive: small segments, 40 KB kept.
          configs: [
            { name: "segment.bytes", value: "1024" },
            { name: "retention.bytes", value: "40000" }
          ]
        }
      ],
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
  }, 120_000)

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await destination?.stop()
    await source?.stop()
  })

  it("exposes every documented metric; lag rises while paused and falls after resume", async () => {
    const documented = documentedMetrics()
    expect(documented.length).toBeGreaterThanOrEqual(9)
    await produce(100, "first")
    await admin.createClusterMirror(MIRROR, new Map([["bootstrap.servers", sourceBootstrap]]))
    await admin.startMirrorTopics(MIRROR, [TOPIC])
    await waitPartition(
      "mirroring, caught up",
      (p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset === 100n
    )

    const mirroring = await Wait.eventually("the leader's metrics show the partition", async () => {
      const s = await scrapeAll()
      return total(s, partitionsIn("MIRRORING")) === 1 && total(s, LAG_RECORDS) === 0 ? s : undefined
    })
    for (const s of mirroring)
      for (const name of documented) expect(s.types.get(name), `${name} on every broker`).toMatch(/^(counter|gauge)$/)
    expect(total(mirroring, partitionsIn("FAILED"))).toBe(0)
    expect(total(mirroring, counter("fetched_records"))).toBe(100)
    expect(total(mirroring, counter("fetched_bytes"))).toBeGreaterThan(100 * 100)
    expect(total(mirroring, counter("data_loss"))).toBe(0)
    expect(total(mirroring, counter("retry_attempts"))).toBe(0)
    expect(total(mirroring, LAG_SECONDS)).toBe(0)
    // The brokers leading `__mirror_state` partitions loaded them: each of the 3 partitions has a load time.
    const loads = mirroring.flatMap((s) =>
      [...s.samples].filter(([k]) => k.startsWith("clustermirror_mirror_coordinator_load_seconds{"))
    )
    expect(new Set(loads.map(([k]) => /partition="(\d+)"/.exec(k)![1]))).toEqual(new Set(["0", "1", "2"]))
    for (const [, seconds] of loads) expect(seconds).toBeGreaterThanOrEqual(0)

    // Paused: the source grows, the lag follows in records and in time.
    await admin.pauseMirrorTopics(MIRROR, [TOPIC])
    await waitPartition("paused", (p) => p.state === "PAUSED")
    await produce(50, "paused")
    const paused = await Wait.eventually("lag while paused", async () => {
      const s = await scrapeAll()
      return total(s, LAG_RECORDS) === 50 && (total(s, LAG_SECONDS) ?? 0) > 0 ? s : undefined
    })
    expect(total(paused, partitionsIn("PAUSED"))).toBe(1)
    expect(total(paused, partitionsIn("MIRRORING"))).toBe(0)
    expect(total(paused, counter("fetched_records"))).toBe(100)
    // The describe tells the same while paused: the source is asked for the partitions without a fetcher.
    const described = await waitPartition("describe shows the lag while paused", (p) => p.lag === 50n)
    expect([described.state, described.sourceOffset, described.destinationOffset]).toEqual(["PAUSED", 150n, 100n])
    expect(described.lagTimeMs).toBeGreaterThan(0n)

    // Resumed: the lag falls back to 0 and the fetched counters grow by what was copied.
    await admin.resumeMirrorTopics(MIRROR, [TOPIC])
    const resumed = await Wait.eventually("lag gone after resume", async () => {
      const s = await scrapeAll()
      return total(s, LAG_RECORDS) === 0 && total(s, LAG_SECONDS) === 0 && total(s, partitionsIn("MIRRORING")) === 1
        ? s
        : undefined
    })
    expect(total(resumed, counter("fetched_records"))).toBe(150)
    expect(total(resumed, counter("fetched_bytes"))).toBeGreaterThan(total(mirroring, counter("fetched_bytes"))!)
  })

  it("retention outrunning a paused mirror fails the partition with the data-loss reason; recovery accepts the loss", async () => {
    await waitPartition("caught up at 150", (p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset === 150n)
    await admin.pauseMirrorTopics(MIRROR, [TOPIC])
    await waitPartition("paused", (p) => p.state === "PAUSED")

    // The source takes 600 more records (about 70 KB): size retention deletes the oldest segments,
    // past offset 150 where the paused mirror stands.
    await produce(600, "overflow")
    const sourceStart = await Wait.eventually("the source log start past the mirror position", async () => {
      const start = await offsetOf(src, -2n)
      return start > 150 ? start : undefined
    })
    expect(await offsetOf(src, -1n)).toBe(750)

    await admin.resumeMirrorTopics(MIRROR, [TOPIC])
    const failed = await waitPartition("FAILED on data loss", (p) => p.state === "FAILED")
    expect(failed.errorMessage).toMatch(
      /^Data loss: the source log start (\d+) passed the mirror position 150 \((\d+) records were deleted on the source before they were mirrored\)$/
    )
    const [, start, deleted] = /source log start (\d+).*\((\d+) records/.exec(failed.errorMessage!)!
    expect(Number(start)).toBeGreaterThanOrEqual(sourceStart)
    expect(Number(deleted)).toBe(Number(start) - 150)
    expect(failed.retryAttempt).toBe(-1)
    // No silent jump: the destination still ends where the mirror stood.
    expect(await offsetOf(dst, -1n)).toBe(150)

    const described = await admin.describeClusterMirrors([MIRROR])
    const failedRows = described.mirrors.flatMap((m) => m.partitions.filter((p) => p.state === "FAILED"))
    expect(failedRows.map((p) => [p.topic, p.partition])).toEqual([[TOPIC, 0]])
    const shown = await cli(["--bootstrap-server", destinationBootstrap, "--describe", "--mirror", MIRROR, "--failed"])
    expect(shown.code).toBe(0)
    expect(shown.stdout).toContain("NonRetryable")
    expect(shown.stdout).toContain("Data loss: the source log start")

    const counted = await Wait.eventually("the data-loss counter", async () => {
      const s = await scrapeAll()
      return total(s, counter("data_loss")) === 1 ? s : undefined
    })
    expect(total(counted, `clustermirror_mirror_sync_errors_total{mirror="${MIRROR}",kind="data_loss"}`)).toBe(1)
    expect(total(counted, partitionsIn("FAILED"))).toBe(1)
    expect(total(counted, LAG_RECORDS)).toBe(750 - 150)
    expect(destination.output()).toMatch(
      new RegExp(`mirror ${MIRROR}: DATA LOSS on ${TOPIC}-0: the source log start \\d+ passed the mirror position 150`)
    )

    // A plain recover refuses and says how to accept; the partition stays FAILED.
    const refused = await admin.recoverMirrorTopics(MIRROR, [TOPIC]).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ClientError.KafkaError)
    expect(refused instanceof ClientError.KafkaError && refused.errorMessage).toContain("--accept-data-loss")
    expect((await partition())?.state).toBe("FAILED")

    // Accepting the loss: mirroring restarts at the source log start and ends equal to the source.
    const cliRecover = await cli([
      "--bootstrap-server",
      destinationBootstrap,
      "--recover",
      "--mirror",
      MIRROR,
      "--topics",
      TOPIC,
      "--accept-data-loss"
    ])
    expect(cliRecover.code, cliRecover.stderr).toBe(0)
    await waitPartition(
      "mirroring from the new log start",
      (p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset === 750n
    )
    const newStart = await offsetOf(src, -2n)
    expect(await offsetOf(dst, -2n)).toBe(newStart)
    expect(await offsetOf(dst, -1n)).toBe(750)
    // Record by record from the new log start: the same offsets and values on both sides.
    const consume = (bootstrap: string) =>
      Kcat.forBootstrap(bootstrap)(["-C", "-t", TOPIC, "-p", "0", "-o", String(newStart), "-e", "-f", "%o %s\\n"])
    const [fromSource, fromDestination] = await Promise.all([consume(sourceBootstrap), consume(destinationBootstrap)])
    const sourceLines = fromSource.stdout.split("\n").filter((l) => l !== "")
    expect(sourceLines).toHaveLength(750 - newStart)
    expect(sourceLines[0]!.startsWith(`${newStart} `)).toBe(true)
    expect(fromDestination.stdout).toBe(fromSource.stdout)

    const after = await scrapeAll()
    expect(total(after, counter("data_loss"))).toBe(1)
    expect(total(after, partitionsIn("FAILED"))).toBe(0)
    expect(total(after, LAG_RECORDS)).toBe(0)
  })
  it("a source topic deleted under a running mirror: FAILED for good, a log line, and a topic_deleted sync error in the metrics", async () => {
    const gone = "gone"
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: gone, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
    await Kcat.forBootstrap(sourceBootstrap)(["-P", "-t", gone, "-p", "0"], { input: lines("g", 20) })
    // The mirror refreshes every 500 ms from now on.
    const altered = await dst.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType: 64,
          resourceName: MIRROR,
          configs: [{ name: "mirror.metadata.refresh.interval.ms", configOperation: 0, value: "500" }]
        }
      ],
      validateOnly: false
    })
    expect(altered.responses.map((r) => r.errorCode)).toEqual([0])
    expect((await admin.startMirrorTopics(MIRROR, [gone])).map((t) => t.error)).toEqual([null])
    const goneState = async () =>
      (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions.find((p) => p.topic === gone)
    await Wait.eventually(
      "the new topic mirrored",
      async () => ((await goneState())?.state === "MIRRORING" ? true : undefined),
      60_000,
      200
    )
    const before = total(
      await scrapeAll(),
      `clustermirror_mirror_sync_errors_total{mirror="${MIRROR}",kind="topic_deleted"}`
    )
    expect(before ?? 0).toBe(0)

    const deleted = await src.sendToAnyBroker(DeleteTopics.api, {
      topics: [{ name: gone, topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      topicNames: [gone],
      timeoutMs: 30_000
    })
    expect(deleted.responses.map((r) => r.errorCode)).toEqual([0])
    const failed = await Wait.eventually(
      "the partition failed for good",
      async () => {
        const p = await goneState()
        return p?.state === "FAILED" && p.errorMessage?.includes("source topic deleted") ? p : undefined
      },
      60_000,
      200
    )
    expect(failed.retryAttempt).toBe(-1)
    await Wait.eventually(
      "the sync error counted",
      async () =>
        (total(await scrapeAll(), `clustermirror_mirror_sync_errors_total{mirror="${MIRROR}",kind="topic_deleted"}`) ??
          0) >= 1
          ? true
          : undefined,
      30_000,
      200
    )
    expect(destination.output()).toContain("source topic deleted")
    // The operator's view: --describe --failed lists it with the reason.
    const described = await cli([
      "--bootstrap-server",
      destinationBootstrap,
      "--describe",
      "--mirror",
      MIRROR,
      "--failed"
    ])
    expect(described.code, described.stderr).toBe(0)
    expect(described.stdout).toContain(gone)
    expect(described.stdout).toContain("source topic deleted")
  })
})
