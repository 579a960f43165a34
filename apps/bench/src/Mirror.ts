/**
 * The `mirror` suite: how fast a destination cluster of ours copies a source cluster of ours with
 * KIP-1279 cluster mirroring, next to our own replication (the `replication` suite's code path, our
 * cluster only) measured in the same run.
 *
 * Source and destination are each one server process running a controller and two brokers
 * (`--embedded 2`). The source gets a 4-partition RF=1 topic filled, untimed, by Kafka's
 * `ProducerPerformance` with the replication suite's lz4 payloads; then a mirror is created on the
 * destination and the topic started, and the catch-up is timed until every partition is MIRRORING
 * with lag 0 at the source's end offsets. A steady-state phase then produces to the source while it is
 * mirrored and times the copy end to end. Reports MB/s of record values and of log bytes, CPU seconds
 * of both processes, MB per destination CPU second, the destination's peak RSS, and the ratios to
 * replication.
 *
 * It measures only: it checks that the destination reached the source's end offsets, never judges a
 * number. It owns the processes and temp files it starts and stops them all.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, ListOffsets } from "@clustermirror/protocol"
import { ServerProcess, Wait } from "@clustermirror/testkit"
import * as Profile from "./Profile.js"
import * as Replication from "./Replication.js"

const MB = 1024 * 1024
const HOST = "127.0.0.1"
const CLIENT_ID = "clustermirror-bench-mirror"
const TOPIC = "bench-mirror"
const MIRROR = "bench"
const READY_TIMEOUT_MS = 60_000
const REQUEST_TIMEOUT_MS = 30_000
const PROGRESS_EVERY_MS = 5_000
const PROFILE_TOP = 20
const SEGMENT = /^\d{20}\.log$/

export const DEFAULT_MB = 1024

/** Record value MB of the replication baseline's rounds (and of the steady-state phase), at most `--mb`. */
export const BASELINE_MB = 256

export interface Options {
  /** Record value bytes produced to the source before the mirror starts (the catch-up). */
  readonly totalBytes: number
  readonly recordSize: number
  readonly partitions: number
  /** Brokers of each cluster (all in one process with a controller). */
  readonly brokers: number
  /** Record value bytes of each measured round of the replication baseline. */
  readonly baselineBytes: number
  readonly baselineRounds: number
  /** Record value bytes produced to the source while it is mirrored; 0 skips the steady-state phase. */
  readonly steadyBytes: number
  /** ProducerPerformance settings, the replication suite's. */
  readonly producerProps: Readonly<Record<string, string | number>>
  /** DescribeClusterMirrors polling interval while timing. */
  readonly pollMs: number
  readonly catchUpTimeoutMs: number
  /** Directory for the destination process's `--cpu-prof` output, when profiling. */
  readonly cpuProfileDir: string | undefined
}

export const defaults: Omit<Options, "totalBytes" | "baselineBytes" | "steadyBytes" | "cpuProfileDir"> = {
  recordSize: 1024,
  partitions: 4,
  brokers: 2,
  baselineRounds: Replication.defaults.rounds,
  producerProps: Replication.defaults.producerProps,
  pollMs: 200,
  catchUpTimeoutMs: 600_000
}

/** The replication baseline as the table shows it: the median round, CPU of the brokers only. */
export interface Baseline {
  readonly recordValueBytes: number
  /** The client's send period of the median round (records over its rate). */
  readonly seconds: number
  readonly mbPerSec: number
  readonly brokerCpuSeconds: number
  readonly mbPerBrokerCpuSecond: number
  /** Sum of the controller's and brokers' peak RSS. */
  readonly peakRssMb: number
  readonly setup: Replication.SetupResult
}

/** One timed copy from the source to the destination. */
export interface CopyResult {
  readonly recordValueBytes: number
  /** Bytes of the topic's segment files on the source (and on the destination) once caught up. */
  readonly sourceLogBytes: number
  readonly destinationLogBytes: number
  readonly seconds: number
  readonly mbPerSec: number
  readonly logMbPerSec: number
  readonly destinationCpuSeconds: number
  readonly mbPerDestinationCpuSecond: number
  readonly sourceCpuSeconds: number
  /** The destination process's peak RSS (VmHWM) at the end of the phase. */
  readonly destinationPeakRssMb: number
  /** Source end offset per partition that the destination reached. */
  readonly endOffsets: ReadonlyArray<string>
}

export interface CatchUp extends CopyResult {
  /** ProducerPerformance filling the source, untimed. */
  readonly produce: Replication.PerfSummary
  readonly createMirrorSeconds: number
  /** From StartMirrorTopics until every partition was MIRRORING. */
  readonly toMirroringSeconds: number
  readonly destinationRssBeforeMb: number
}

export interface SteadyState extends CopyResult {
  readonly produce: Replication.PerfSummary
  /** From the producer's exit until the destination was seen at the source's end offsets (0 when it already was). */
  readonly tailSeconds: number
}

export interface Result {
  readonly suite: "mirror"
  readonly date: string
  readonly options: Readonly<Record<string, unknown>>
  readonly workload: Readonly<Record<string, unknown>>
  readonly baseline: Baseline
  readonly catchUp: CatchUp
  readonly steadyState: SteadyState | null
  /** Mirror over replication: catch-up MB/s, catch-up MB per CPU second, and the same for steady state. */
  readonly ratios: Readonly<Record<string, number>>
  readonly profile: { readonly file: string; readonly top: ReturnType<typeof Profile.topFrames> } | null
}

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

const perSecond = (amount: number, seconds: number): number =>
  seconds > 0 ? amount / seconds : Number.POSITIVE_INFINITY

/** One of our clusters as a single `--embedded` process, with a client on its brokers. */
interface Cluster {
  readonly name: string
  readonly server: ServerProcess.ServerHandle
  readonly bootstrap: string
  readonly client: ClusterClient.Client
  readonly stop: () => Promise<void>
}

interface Clusters {
  readonly source: Cluster
  readonly destination: Cluster
  readonly admin: MirrorAdmin.MirrorAdmin
}

const startCluster = async (name: string, o: Options, cpuProfileDir?: string): Promise<Cluster> => {
  const server = await ServerProcess.start({
    port: false,
    args: ["--embedded", String(o.brokers)],
    // The controller's listening line comes first, then one per broker.
    readyLines: o.brokers + 1,
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
  const client = new ClusterClient.Client({
    bootstrapServers: bootstrap.split(","),
    clientId: CLIENT_ID,
    requestTimeoutMs: REQUEST_TIMEOUT_MS
  })
  const stop = async (): Promise<void> => {
    await client.close()
    await server.stop()
  }
  try {
    await Wait.eventually(
      `${name}: ${o.brokers} registered brokers`,
      async () => ((await client.metadata([])).brokers.size >= o.brokers ? true : undefined),
      READY_TIMEOUT_MS,
      200
    )
  } catch (e) {
    await stop()
    throw e
  }
  return { name, server, bootstrap, client, stop }
}

const createTopic = async (c: Cluster, o: Options): Promise<void> => {
  const res = await c.client.sendToAnyBroker(CreateTopics.api, {
    topics: [{ name: TOPIC, numPartitions: o.partitions, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: REQUEST_TIMEOUT_MS,
    validateOnly: false
  })
  const t = res.topics[0]
  if (t === undefined || t.errorCode !== 0)
    throw new Error(`${c.name}: CreateTopics ${TOPIC} failed with error code ${t?.errorCode}`)
  await Wait.eventually(
    `${c.name}: every partition of ${TOPIC} led`,
    async () => {
      const info = (await c.client.metadata([TOPIC])).topics.get(TOPIC)
      if (info === undefined || info.partitions.size !== o.partitions) return undefined
      return [...info.partitions.values()].every((p) => p.errorCode === 0 && p.leaderId >= 0) ? true : undefined
    },
    READY_TIMEOUT_MS,
    200
  )
}

/** The source's log end offset (latest) of every partition of the topic. */
const endOffsets = async (c: Cluster, o: Options): Promise<ReadonlyArray<bigint>> =>
  Promise.all(
    Array.from({ length: o.partitions }, async (_, partition) => {
      const res = await c.client.sendToLeader(
        TOPIC,
        partition,
        ListOffsets.api,
        (leader) => ({
          replicaId: -1,
          isolationLevel: 0,
          topics: [
            {
              name: TOPIC,
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

/** Bytes of the topic's segment files under a server's data dir (every broker of the process). */
const topicLogBytes = (dataDir: string, topic: string): number => {
  const partitionDir = new RegExp(`^${topic.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-\\d+$`)
  let total = 0
  const walk = (dir: string, inTopic: boolean): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name)
      if (e.isDirectory()) walk(path, partitionDir.test(e.name))
      else if (inTopic && e.isFile() && SEGMENT.test(e.name)) total += statSync(path).size
    }
  }
  walk(dataDir, false)
  return total
}

/** ProducerPerformance to the source with the suite's settings; every record acknowledged. */
const produceToSource = (
  c: Clusters,
  o: Options,
  records: number,
  payloadFile: string
): Promise<Replication.PerfSummary> =>
  Replication.producerPerf(
    { name: "source", bootstrap: c.source.bootstrap },
    {
      ...Replication.defaults,
      recordSize: o.recordSize,
      producerProps: o.producerProps,
      totalBytes: 0,
      cpuProfileDir: undefined
    },
    TOPIC,
    records,
    payloadFile
  )

type Described = ReadonlyArray<MirrorAdmin.PartitionDescription>

/**
 * Polls DescribeClusterMirrors every `pollMs` until every partition of the topic is MIRRORING with lag
 * 0 and a destination offset equal to the source's end offset. Returns when that was first seen, and
 * when every partition was first MIRRORING (ms on `Date.now()`).
 */
const waitCaughtUp = async (
  admin: MirrorAdmin.MirrorAdmin,
  o: Options,
  ends: ReadonlyArray<bigint>,
  what: string
): Promise<{ readonly caughtUpAt: number; readonly mirroringAt: number }> => {
  const started = Date.now()
  const deadline = started + o.catchUpTimeoutMs
  const target = ends.reduce((a, b) => a + b, 0n)
  let mirroringAt: number | undefined
  let last: Described = []
  let lastError: unknown
  let nextProgress = started + PROGRESS_EVERY_MS
  while (Date.now() < deadline) {
    try {
      const d = await admin.describeClusterMirrors([MIRROR])
      last = (d.mirrors[0]?.partitions ?? []).filter((p) => p.topic === TOPIC)
      const now = Date.now()
      if (last.length === o.partitions) {
        if (mirroringAt === undefined && last.every((p) => p.state === "MIRRORING")) mirroringAt = now
        if (
          last.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.destinationOffset === ends[p.partition]) &&
          mirroringAt !== undefined
        )
          return { caughtUpAt: now, mirroringAt }
      }
      if (now >= nextProgress) {
        const copied = last.reduce((a, p) => a + (p.destinationOffset > 0n ? p.destinationOffset : 0n), 0n)
        log(`${what}: ${copied} of ${target} offsets copied after ${fmt((now - started) / 1000)} s`)
        nextProgress = now + PROGRESS_EVERY_MS
      }
    } catch (e) {
      lastError = e
    }
    await sleep(o.pollMs)
  }
  const state = last.map((p) => `${p.partition}:${p.state} ${p.destinationOffset}/${ends[p.partition]} lag ${p.lag}`)
  throw new Error(
    `${what}: not caught up within ${o.catchUpTimeoutMs} ms; last partitions ${state.join(", ") || "none"}` +
      (lastError === undefined ? "" : `; last error ${String(lastError)}`)
  )
}

interface LogBytes {
  readonly source: number
  readonly destination: number
}

const logBytes = (c: Clusters): LogBytes => ({
  source: topicLogBytes(c.source.server.dataDir!, TOPIC),
  destination: topicLogBytes(c.destination.server.dataDir!, TOPIC)
})

/** Copy figures of one phase from its window's measurements; log bytes are those written since `before`. */
const copyResult = (
  c: Clusters,
  o: Options,
  records: number,
  seconds: number,
  destinationCpuSeconds: number,
  sourceCpuSeconds: number,
  ends: ReadonlyArray<bigint>,
  before: LogBytes
): CopyResult => {
  const recordValueBytes = records * o.recordSize
  const after = logBytes(c)
  const sourceLogBytes = after.source - before.source
  return {
    recordValueBytes,
    sourceLogBytes,
    destinationLogBytes: after.destination - before.destination,
    seconds,
    mbPerSec: perSecond(recordValueBytes / MB, seconds),
    logMbPerSec: perSecond(sourceLogBytes / MB, seconds),
    destinationCpuSeconds,
    mbPerDestinationCpuSecond: perSecond(recordValueBytes / MB, destinationCpuSeconds),
    sourceCpuSeconds,
    destinationPeakRssMb: c.destination.server.peakRssMb(),
    endOffsets: ends.map(String)
  }
}

const catchUp = async (
  c: Clusters,
  o: Options,
  payloadFile: string,
  records: number,
  windows: Profile.Window[]
): Promise<CatchUp> => {
  log(`source: producing ${records} records of ${o.recordSize} B to ${TOPIC} (untimed)`)
  const produce = await produceToSource(c, o, records, payloadFile)
  const ends = await endOffsets(c.source, o)
  log(`source: ${produce.mbPerSec} MB/s; end offsets ${ends.join(",")}`)

  const createStarted = Date.now()
  await c.admin.createClusterMirror(MIRROR, new Map([["bootstrap.servers", c.source.bootstrap]]))
  await Wait.eventually(
    `mirror ${MIRROR} described`,
    async () => ((await c.admin.describeClusterMirrors([MIRROR])).mirrors[0]?.errorCode === 0 ? true : undefined),
    READY_TIMEOUT_MS,
    200
  )
  const createMirrorSeconds = (Date.now() - createStarted) / 1000
  const destinationRssBeforeMb = c.destination.server.rssMb()

  const destinationBefore = c.destination.server.cpuSeconds()
  const sourceBefore = c.source.server.cpuSeconds()
  const startUs = Profile.nowUs()
  const started = Date.now()
  const results = await c.admin.startMirrorTopics(MIRROR, [TOPIC])
  const failed = results.filter((r) => r.error !== null)
  if (failed.length > 0) throw new Error(`StartMirrorTopics failed: ${failed.map((r) => String(r.error)).join("; ")}`)
  const { caughtUpAt, mirroringAt } = await waitCaughtUp(c.admin, o, ends, "catch-up")
  windows.push({ startUs, endUs: Profile.nowUs() })
  const destinationCpuSeconds = c.destination.server.cpuSeconds() - destinationBefore
  const sourceCpuSeconds = c.source.server.cpuSeconds() - sourceBefore
  const seconds = (caughtUpAt - started) / 1000
  return {
    ...copyResult(c, o, records, seconds, destinationCpuSeconds, sourceCpuSeconds, ends, { source: 0, destination: 0 }),
    produce,
    createMirrorSeconds,
    toMirroringSeconds: (mirroringAt - started) / 1000,
    destinationRssBeforeMb
  }
}

const steadyState = async (
  c: Clusters,
  o: Options,
  payloadFile: string,
  records: number,
  windows: Profile.Window[]
): Promise<SteadyState> => {
  log(`steady state: producing ${records} records to the source while it is mirrored`)
  const before = logBytes(c)
  const destinationBefore = c.destination.server.cpuSeconds()
  const sourceBefore = c.source.server.cpuSeconds()
  const produce = await produceToSource(c, o, records, payloadFile)
  const producedAt = Date.now()
  const producedUs = Profile.nowUs()
  // The client's own send period, so that its JVM start-up stays out of the end-to-end time.
  const sendMs = (produce.records / produce.recordsPerSec) * 1000
  const ends = await endOffsets(c.source, o)
  const { caughtUpAt } = await waitCaughtUp(c.admin, o, ends, "steady state")
  windows.push({ startUs: producedUs - sendMs * 1000, endUs: Profile.nowUs() })
  const destinationCpuSeconds = c.destination.server.cpuSeconds() - destinationBefore
  const sourceCpuSeconds = c.source.server.cpuSeconds() - sourceBefore
  const seconds = (caughtUpAt - producedAt + sendMs) / 1000
  return {
    ...copyResult(c, o, records, seconds, destinationCpuSeconds, sourceCpuSeconds, ends, before),
    produce,
    tailSeconds: (caughtUpAt - producedAt) / 1000
  }
}

const baselineOf = (setup: Replication.SetupResult, o: Options): Baseline => {
  const m = setup.median
  const brokerCpuSeconds = setup.processes.reduce(
    (a, p, i) => (p.role.startsWith("broker") ? a + (m.processCpuSeconds[i] ?? 0) : a),
    0
  )
  const recordValueBytes = m.summary.records * o.recordSize
  return {
    recordValueBytes,
    seconds: m.summary.records / m.summary.recordsPerSec,
    mbPerSec: m.summary.mbPerSec,
    brokerCpuSeconds,
    mbPerBrokerCpuSecond: perSecond(recordValueBytes / MB, brokerCpuSeconds),
    peakRssMb: setup.peakRssMb,
    setup
  }
}

export const table = (r: Result): string => {
  const b = r.baseline
  const header = [
    "phase",
    "MB",
    "s",
    "MB/s",
    "log MB/s",
    "vs repl",
    "CPU-s",
    "MB/CPU-s",
    "vs repl",
    "source CPU-s",
    "peak RSS MB"
  ]
  const copyRow = (phase: string, x: CopyResult): ReadonlyArray<string> => [
    phase,
    fmt(x.recordValueBytes / MB, 0),
    fmt(x.seconds, 2),
    fmt(x.mbPerSec),
    fmt(x.logMbPerSec),
    `${fmt(x.mbPerSec / b.mbPerSec, 2)}x`,
    fmt(x.destinationCpuSeconds),
    fmt(x.mbPerDestinationCpuSecond),
    `${fmt(x.mbPerDestinationCpuSecond / b.mbPerBrokerCpuSecond, 2)}x`,
    fmt(x.sourceCpuSeconds),
    fmt(x.destinationPeakRssMb, 0)
  ]
  const body = [
    [
      `replication RF=${Replication.defaults.replicationFactor} acks=all (median of ${b.setup.rounds.length})`,
      fmt(b.recordValueBytes / MB, 0),
      fmt(b.seconds, 2),
      fmt(b.mbPerSec),
      "-",
      "1.00x",
      fmt(b.brokerCpuSeconds),
      fmt(b.mbPerBrokerCpuSecond),
      "1.00x",
      "-",
      fmt(b.peakRssMb, 0)
    ],
    copyRow("mirror catch-up", r.catchUp),
    ...(r.steadyState === null ? [] : [copyRow("mirror steady state", r.steadyState)])
  ]
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((x) => x[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

/** Runs the suite, prints its table and saves `mirror.json` in `resultsDir`. */
export const run = async (o: Options, resultsDir: string, repoRoot: string): Promise<Result> => {
  const records = Math.max(1, Math.round(o.totalBytes / o.recordSize))
  const steadyRecords = Math.round(o.steadyBytes / o.recordSize)
  log(
    `replication baseline: our cluster only, ${fmt(o.baselineBytes / MB, 0)} MB per round, ${o.baselineRounds} rounds`
  )
  const baselineSetup = await Replication.runOurs({
    ...Replication.defaults,
    totalBytes: o.baselineBytes,
    rounds: o.baselineRounds,
    recordSize: o.recordSize,
    partitions: o.partitions,
    producerProps: o.producerProps,
    cpuProfileDir: undefined
  })
  const baseline = baselineOf(baselineSetup, o)

  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-mirror-"))
  const profileSince = Date.now()
  const windows: Profile.Window[] = []
  try {
    const payloadFile = join(scratch, "payloads.txt")
    writeFileSync(payloadFile, Replication.payloadLines(Replication.PAYLOAD_LINES, o.recordSize).join("\n"))
    log(`mirror: starting a source and a destination cluster (${o.brokers} brokers each, one process each)`)
    const started: Cluster[] = []
    let catchUpResult: CatchUp
    let steady: SteadyState | null = null
    try {
      started.push(await startCluster("source", o))
      started.push(await startCluster("destination", o, o.cpuProfileDir))
      const [source, destination] = started as [Cluster, Cluster]
      const c: Clusters = { source, destination, admin: new MirrorAdmin.MirrorAdmin(destination.client) }
      await createTopic(source, o)
      catchUpResult = await catchUp(c, o, payloadFile, records, windows)
      log(
        `catch-up: ${fmt(catchUpResult.seconds, 2)} s, ${fmt(catchUpResult.mbPerSec)} MB/s of values, ` +
          `${fmt(catchUpResult.logMbPerSec)} MB/s of log, destination ${fmt(catchUpResult.destinationCpuSeconds)} CPU-s`
      )
      if (steadyRecords > 0) {
        steady = await steadyState(c, o, payloadFile, steadyRecords, windows)
        log(
          `steady state: ${fmt(steady.seconds, 2)} s end to end, ${fmt(steady.mbPerSec)} MB/s, ` +
            `${fmt(steady.tailSeconds, 2)} s after the producer finished`
        )
      }
    } finally {
      for (const s of started.reverse()) await s.stop()
    }

    let profile: Result["profile"] = null
    if (o.cpuProfileDir !== undefined) {
      const file = Profile.newest(o.cpuProfileDir, profileSince)
      if (file === undefined) log("no CPU profile of the destination was written")
      else profile = { file, top: Profile.topFrames(file, PROFILE_TOP, repoRoot, windows) }
    }

    const ratios: Record<string, number> = {
      catchUpMbPerSec: catchUpResult.mbPerSec / baseline.mbPerSec,
      catchUpMbPerCpuSecond: catchUpResult.mbPerDestinationCpuSecond / baseline.mbPerBrokerCpuSecond
    }
    if (steady !== null) {
      ratios["steadyStateMbPerSec"] = steady.mbPerSec / baseline.mbPerSec
      ratios["steadyStateMbPerCpuSecond"] = steady.mbPerDestinationCpuSecond / baseline.mbPerBrokerCpuSecond
    }
    const result: Result = {
      suite: "mirror",
      date: new Date().toISOString(),
      options: { ...o, records, steadyRecords },
      workload: {
        topic: `${TOPIC}: ${o.partitions} partitions, RF=1 on the source`,
        clusters: `source and destination: one process each, a controller and ${o.brokers} brokers (--embedded ${o.brokers})`,
        payload: `file of ${Replication.PAYLOAD_LINES} lines of ${o.recordSize} ASCII bytes, half random base64url, half a repeated phrase`,
        client: "org.apache.kafka.tools.ProducerPerformance",
        producerProps: o.producerProps,
        mirror: "created with bootstrap.servers only (every other mirror config at its default)",
        baseline: "the replication suite, our cluster only: a controller and 2 broker processes, RF=2, acks=all",
        cpu: "catch-up and steady state: the whole destination process (controller and brokers); replication: the broker processes"
      },
      baseline,
      catchUp: catchUpResult,
      steadyState: steady,
      ratios,
      profile
    }
    log(
      `\nmirror (${fmt((records * o.recordSize) / MB, 0)} MB of 1 KB record values, lz4, ${o.partitions} partitions; ` +
        `replication baseline ${fmt(baseline.recordValueBytes / MB, 0)} MB per round)`
    )
    log(table(result))
    log(
      "CPU-s and peak RSS: replication = its broker processes' CPU, its controller's and brokers' RSS summed; " +
        "mirror = the destination process (its controller and brokers)"
    )
    log(
      `catch-up: mirror created in ${fmt(catchUpResult.createMirrorSeconds, 2)} s; StartMirrorTopics to all MIRRORING ` +
        `${fmt(catchUpResult.toMirroringSeconds, 2)} s; log bytes source ${fmt(catchUpResult.sourceLogBytes / MB)} MB, ` +
        `destination ${fmt(catchUpResult.destinationLogBytes / MB)} MB; destination RSS before ` +
        `${fmt(catchUpResult.destinationRssBeforeMb, 0)} MB; source filled at ${catchUpResult.produce.mbPerSec} MB/s (untimed)`
    )
    if (steady !== null)
      log(
        `steady state: producer ${steady.produce.mbPerSec} MB/s; destination caught up ${fmt(steady.tailSeconds, 2)} s ` +
          `after the producer finished`
      )
    log(
      `mirror/replication: catch-up ${fmt(ratios["catchUpMbPerSec"]!, 2)}x MB/s, ${fmt(ratios["catchUpMbPerCpuSecond"]!, 2)}x MB/CPU-s` +
        (steady === null
          ? ""
          : `; steady state ${fmt(ratios["steadyStateMbPerSec"]!, 2)}x MB/s, ${fmt(ratios["steadyStateMbPerCpuSecond"]!, 2)}x MB/CPU-s`)
    )
    const file = join(resultsDir, "mirror.json")
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(file, `${JSON.stringify(result, (_, v) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`)
    log(`saved ${file}`)
    if (profile !== null) log(`\nCPU profile of the destination: ${profile.file}\n${Profile.format(profile.top)}`)
    return result
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
