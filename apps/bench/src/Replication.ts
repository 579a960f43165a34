/**
 * The `replication` suite: acks=all produce throughput to an RF=2 topic on a cluster of separate
 * processes (one controller, two brokers), for our cluster and for Apache Kafka started in the same run
 * on the same machine, both driven by the same client (Kafka's `ProducerPerformance`). Reports MB/s, the
 * ratio ours/Kafka, the client's latencies, CPU seconds of every server process, MB per CPU second and
 * peak RSS; with profiling, our brokers run under `--cpu-prof`.
 *
 * It measures only: it checks that every record was acknowledged and reports whether the ISR stayed
 * whole, but never judges a number. It owns the processes and temp files it starts and stops them all.
 * `runOurs` measures our cluster alone, as a baseline for other suites.
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Metadata, RecordBatch, Uuid } from "@clustermirror/protocol"
import { ApacheKafka, JavaTools, Ports, ServerProcess, ProcStats } from "@clustermirror/testkit"
import { KafkaConnection } from "./KafkaConnection.js"
import * as Profile from "./Profile.js"

const MB = 1024 * 1024
const HOST = "127.0.0.1"
const CLIENT_ID = "clustermirror-bench"
const TOPIC = "bench-replication"
const WARMUP_TOPIC = "bench-replication-warmup"
const METADATA_VERSION = 9
const CONTROLLER_ID = 1000
/** Distinct payload lines in the file ProducerPerformance picks each record's value from at random. */
export const PAYLOAD_LINES = 4096
const READY_TIMEOUT_MS = 60_000
const PERF_TIMEOUT_MS = 240_000
const PROFILE_TOP = 20

/** The load generator gets the server JIT and a roomy heap so that it is not the bottleneck of either setup. */
const PERF_JVM_FLAGS: ReadonlyArray<string> = ["-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]

export interface Options {
  /** Record value bytes of the measured run. */
  readonly totalBytes: number
  readonly recordSize: number
  readonly partitions: number
  readonly replicationFactor: number
  readonly brokers: number
  /** Share of the measured run's records produced, untimed, to another topic first (JIT warm-up). */
  readonly warmupShare: number
  /** Measured runs per setup, alternating between the setups so that a change in background load hits both. */
  readonly rounds: number
  /** Producer settings given to ProducerPerformance for both setups. */
  readonly producerProps: Readonly<Record<string, string | number>>
  /** Directory for our brokers' `--cpu-prof` output, when profiling. */
  readonly cpuProfileDir: string | undefined
}

export const defaults: Omit<Options, "totalBytes" | "cpuProfileDir"> = {
  recordSize: 1024,
  partitions: 4,
  replicationFactor: 2,
  brokers: 2,
  warmupShare: 0.1,
  rounds: 3,
  producerProps: { acks: "all", "compression.type": "lz4", "linger.ms": 5, "batch.size": 262144 }
}

export const DEFAULT_MB = 256

/** ProducerPerformance's closing summary line. */
export interface PerfSummary {
  readonly records: number
  readonly recordsPerSec: number
  readonly mbPerSec: number
  readonly avgLatencyMs: number
  readonly maxLatencyMs: number
  readonly p50Ms: number
  readonly p95Ms: number
  readonly p99Ms: number
  readonly p999Ms: number
}

const SUMMARY =
  /(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th/

/** The last summary line of ProducerPerformance's stdout (the periodic lines lack the percentiles). */
export const parseSummary = (stdout: string): PerfSummary | undefined => {
  let found: PerfSummary | undefined
  for (const line of stdout.split("\n")) {
    const m = SUMMARY.exec(line)
    if (m === null) continue
    const n = m.slice(1).map(Number)
    found = {
      records: n[0]!,
      recordsPerSec: n[1]!,
      mbPerSec: n[2]!,
      avgLatencyMs: n[3]!,
      maxLatencyMs: n[4]!,
      p50Ms: n[5]!,
      p95Ms: n[6]!,
      p99Ms: n[7]!,
      p999Ms: n[8]!
    }
  }
  return found
}

/**
 * Payload lines of exactly `size` ASCII characters: half random base64url (which lz4 cannot shrink),
 * half a repeated phrase (which it can), like the produce-fetch suite's values.
 */
export const payloadLines = (count: number, size: number): ReadonlyArray<string> => {
  const half = Math.floor(size / 2)
  const phrase = "clustermirror benchmark payload ".repeat(Math.ceil((size - half) / 32)).slice(0, size - half)
  return Array.from(
    { length: count },
    () =>
      randomBytes(Math.ceil((half * 3) / 4) + 3)
        .toString("base64url")
        .slice(0, half) + phrase
  )
}

/** lz4 batch bytes over uncompressed batch bytes for a batch-sized sample of the payloads. */
const lz4Ratio = (lines: ReadonlyArray<string>, recordsPerBatch: number): number => {
  const records = Array.from({ length: recordsPerBatch }, (_, i) => ({
    key: null,
    value: Buffer.from(lines[i % lines.length]!)
  }))
  const now = Date.now()
  const plain = RecordBatch.build({ records, timestamp: now })
  const lz4 = RecordBatch.build({ records, timestamp: now, compression: RecordBatch.Compression.lz4 })
  return lz4.length / plain.length
}

/** One server process of a setup, read through `/proc`. */
export interface ServerProc {
  readonly role: string
  readonly pid: () => number
  readonly cpuSeconds: () => number
  readonly peakRssMb: () => number
}

export interface Setup {
  readonly name: string
  readonly bootstrap: string
  /** A broker's client port, for metadata polling. */
  readonly metadataPort: number
  readonly processes: ReadonlyArray<ServerProc>
  readonly stop: () => Promise<void>
}

export interface ProcessReport {
  readonly role: string
  readonly pid: number
  readonly peakRssMb: number
}

/** One measured ProducerPerformance run against one setup. */
export interface RoundResult {
  readonly round: number
  readonly summary: PerfSummary
  /** Wall time of the tool, its JVM start included. */
  readonly seconds: number
  /** CPU seconds of all the setup's server processes while the tool ran. */
  readonly cpuSeconds: number
  readonly processCpuSeconds: ReadonlyArray<number>
  readonly mbPerCpuSecond: number
  /** CPU seconds of the ProducerPerformance JVM (the load generator). */
  readonly clientCpuSeconds: number
  /** CPU seconds the rest of the machine used meanwhile (other processes, the other, idle setup). */
  readonly otherCpuSeconds: number
  /** ISR size of each partition right after the run. */
  readonly isrAfter: ReadonlyArray<number>
}

export interface SetupResult {
  readonly setup: string
  readonly startSeconds: number
  readonly warmup: PerfSummary
  readonly rounds: ReadonlyArray<RoundResult>
  /** The round with the median throughput; the table shows it. */
  readonly median: RoundResult
  /** Sum of the server processes' peak RSS (VmHWM) over the whole run. */
  readonly peakRssMb: number
  readonly processes: ReadonlyArray<ProcessReport>
}

export interface Result {
  readonly suite: "replication"
  readonly date: string
  readonly options: Readonly<Record<string, unknown>>
  readonly workload: Readonly<Record<string, unknown>>
  readonly setups: ReadonlyArray<SetupResult>
  /** Median MB/s of our cluster over median MB/s of Apache Kafka. */
  readonly ratio: number
  /** Ours over Kafka, round by round. */
  readonly roundRatios: ReadonlyArray<number>
  readonly profiles: ReadonlyArray<{ readonly role: string; readonly file: string; readonly top: unknown }>
}

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Polls Metadata on one broker until `check` returns a value, or fails after the timeout. */
export const pollMetadata = async <A>(
  port: number,
  what: string,
  topics: ReadonlyArray<string> | null,
  check: (m: Metadata.Response) => A | undefined
): Promise<A> => {
  const deadline = Date.now() + READY_TIMEOUT_MS
  let last = "no answer"
  while (Date.now() < deadline) {
    let conn: KafkaConnection | undefined
    try {
      conn = await KafkaConnection.open(port, CLIENT_ID, HOST)
      const m = await conn.request(Metadata.api, METADATA_VERSION, {
        topics: topics === null ? null : topics.map((name) => ({ name })),
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false
      })
      const a = check(m)
      if (a !== undefined) return a
      last = JSON.stringify(m, (_, v) => (typeof v === "bigint" ? v.toString() : v))
    } catch (e) {
      last = e instanceof Error ? e.message : String(e)
    } finally {
      conn?.close()
    }
    await sleep(200)
  }
  throw new Error(`timed out waiting for ${what}; last metadata: ${last.slice(0, 2_000)}`)
}

/** ISR sizes of the topic's partitions once every partition has a leader, else undefined. */
const isrSizes = (m: Metadata.Response, topic: string, partitions: number): ReadonlyArray<number> | undefined => {
  const t = m.topics.find((x) => x.name === topic)
  if (t === undefined || t.errorCode !== 0 || t.partitions.length !== partitions) return undefined
  if (t.partitions.some((p) => p.errorCode !== 0 || p.leaderId < 0)) return undefined
  return [...t.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex).map((p) => p.isrNodes.length)
}

export const createTopic = async (s: Setup, o: Options, topic: string): Promise<void> => {
  JavaTools.expectSuccess(
    `kafka-topics --create ${topic}`,
    await JavaTools.kafkaTopics([
      "--bootstrap-server",
      s.bootstrap,
      "--create",
      "--topic",
      topic,
      "--partitions",
      String(o.partitions),
      "--replication-factor",
      String(o.replicationFactor)
    ])
  )
  await pollMetadata(s.metadataPort, `${topic}: every partition led, ISR of ${o.replicationFactor}`, [topic], (m) => {
    const sizes = isrSizes(m, topic, o.partitions)
    return sizes?.every((n) => n === o.replicationFactor) ? sizes : undefined
  })
}

/**
 * Runs ProducerPerformance against `s` with `o.producerProps` (and `extraProps` over them, `toolArgs` after
 * the tool's other arguments), as fast as it can or at `recordsPerSec`; fails unless every record was
 * acknowledged.
 */
export const producerPerf = async (
  s: Pick<Setup, "name" | "bootstrap">,
  o: Options,
  topic: string,
  records: number,
  payloadFile: string,
  recordsPerSec = -1,
  extra: {
    readonly props?: Readonly<Record<string, string | number>>
    readonly toolArgs?: ReadonlyArray<string>
  } = {}
): Promise<PerfSummary> => {
  const props = Object.entries({
    "bootstrap.servers": s.bootstrap,
    "client.id": CLIENT_ID,
    ...o.producerProps,
    ...extra.props
  }).map(([k, v]) => `${k}=${v}`)
  const result = JavaTools.expectSuccess(
    "ProducerPerformance",
    await JavaTools.producerPerf(
      [
        "--topic",
        topic,
        "--num-records",
        String(records),
        "--payload-file",
        payloadFile,
        "--throughput",
        String(recordsPerSec),
        ...(extra.toolArgs ?? []),
        "--producer-props",
        ...props
      ],
      { jvmFlags: PERF_JVM_FLAGS, timeoutMs: PERF_TIMEOUT_MS }
    )
  )
  const summary = parseSummary(result.stdout)
  if (summary === undefined)
    throw new Error(`no summary line from ProducerPerformance:\n${result.stdout.slice(-4_000)}`)
  // The summary counts acknowledged records only; a shortfall means some sends failed.
  if (summary.records !== records)
    throw new Error(`${s.name}: ${summary.records} of ${records} records acknowledged:\n${result.stderr.slice(-4_000)}`)
  return summary
}

/** Our controller and brokers, each its own `apps/server` process. */
export const startOurs = async (o: Options): Promise<Setup> => {
  const clusterId = Uuid.random()
  const controllerPort = await Ports.freePort()
  const started: ServerProcess.ServerHandle[] = []
  try {
    const controller = await ServerProcess.start({
      port: false,
      config: {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "cluster.id": clusterId,
        listeners: `CONTROLLER://${HOST}:${controllerPort}`
      },
      tempPrefix: "clustermirror-bench-controller-"
    })
    started.push(controller)
    for (let id = 1; id <= o.brokers; id++)
      started.push(
        await ServerProcess.start({
          config: {
            "process.roles": "broker",
            "node.id": id,
            "cluster.id": clusterId,
            "controller.quorum.bootstrap.servers": `${HOST}:${controllerPort}`,
            "auto.create.topics.enable": false,
            "num.partitions": o.partitions,
            "socket.request.max.bytes": 104857600
          },
          tempPrefix: `clustermirror-bench-broker-${id}-`,
          ...(o.cpuProfileDir === undefined ? {} : { cpuProfileDir: o.cpuProfileDir })
        })
      )
  } catch (e) {
    await Promise.allSettled(started.map((s) => s.stop()))
    throw e
  }
  const brokers = started.slice(1)
  return {
    name: "clustermirror",
    bootstrap: brokers.map((b) => b.bootstrap).join(","),
    metadataPort: brokers[0]!.port,
    processes: started.map((h, i) => ({
      role: i === 0 ? "controller" : `broker ${i}`,
      pid: () => h.pid,
      cpuSeconds: () => h.cpuSeconds(),
      peakRssMb: () => h.peakRssMb()
    })),
    stop: async () => {
      // Brokers first, so that none of them spends its shutdown looking for the controller.
      const results = await Promise.allSettled(brokers.map((b) => b.stop()))
      await started[0]!.stop()
      for (const r of results) if (r.status === "rejected") throw r.reason
    }
  }
}

/** A Kafka node read through /proc; the peak is remembered because VmHWM vanishes with the process. */
const kafkaProc = (role: string, node: ApacheKafka.KafkaNode): ServerProc => {
  let peak = 0
  return {
    role,
    pid: () => node.pid,
    cpuSeconds: () => ProcStats.cpuSeconds(node.pid) ?? 0,
    peakRssMb: () => {
      peak = Math.max(peak, ProcStats.peakRssMb(node.pid) ?? 0)
      return peak
    }
  }
}

/** Apache Kafka with Kafka's default broker settings and JVM flags: a dedicated controller plus brokers. */
export const startKafka = async (o: Options): Promise<Setup> => {
  const cluster = await ApacheKafka.startKafkaCluster({
    brokers: o.brokers,
    properties: { "auto.create.topics.enable": false, "num.partitions": o.partitions }
  })
  return {
    name: "apache-kafka",
    bootstrap: cluster.bootstrap,
    metadataPort: cluster.brokers[0]!.port,
    processes: [
      kafkaProc("controller", cluster.controller),
      ...cluster.brokers.map((b) => kafkaProc(`broker ${b.nodeId}`, b))
    ],
    stop: () => cluster.stop()
  }
}

/** A started setup with its topics created and warmed up, collecting rounds. */
interface Running {
  readonly setup: Setup
  readonly startSeconds: number
  readonly warmup: PerfSummary
  readonly rounds: RoundResult[]
  readonly windows: Profile.Window[]
}

const prepare = async (
  start: (o: Options) => Promise<Setup>,
  label: string,
  o: Options,
  records: number,
  payloadFile: string
): Promise<Running> => {
  log(`${label}: starting a controller and ${o.brokers} brokers`)
  const t0 = Date.now()
  const s = await start(o)
  const startSeconds = (Date.now() - t0) / 1000
  try {
    await pollMetadata(s.metadataPort, `${o.brokers} registered brokers`, null, (m) =>
      m.brokers.length >= o.brokers ? true : undefined
    )
    log(`${s.name}: up in ${startSeconds.toFixed(1)} s; creating topics`)
    await createTopic(s, o, WARMUP_TOPIC)
    await createTopic(s, o, TOPIC)
    const warmupRecords = Math.max(1_000, Math.round(records * o.warmupShare))
    const warmup = await producerPerf(s, o, WARMUP_TOPIC, warmupRecords, payloadFile)
    log(`${s.name}: warm-up ${warmupRecords} records at ${warmup.mbPerSec} MB/s`)
    return { setup: s, startSeconds, warmup, rounds: [], windows: [] }
  } catch (e) {
    await s.stop()
    throw e
  }
}

const measureRound = async (
  r: Running,
  o: Options,
  round: number,
  records: number,
  payloadFile: string
): Promise<RoundResult> => {
  const s = r.setup
  const cpuBefore = s.processes.map((p) => p.cpuSeconds())
  const clientBefore = ProcStats.childrenCpuSeconds()
  const machineBefore = ProcStats.machineBusySeconds()
  const startUs = Profile.nowUs()
  const began = process.hrtime.bigint()
  const summary = await producerPerf(s, o, TOPIC, records, payloadFile)
  const seconds = Number(process.hrtime.bigint() - began) / 1e9
  const endUs = Profile.nowUs()
  const machine = ProcStats.machineBusySeconds() - machineBefore
  const clientCpuSeconds = ProcStats.childrenCpuSeconds() - clientBefore
  const processCpuSeconds = s.processes.map((p, i) => p.cpuSeconds() - cpuBefore[i]!)
  // The client's own send period (its records over its rate), so the JVM's start-up stays out of the profile.
  const sendUs = (summary.records / summary.recordsPerSec) * 1e6
  r.windows.push({ startUs: Math.max(startUs, endUs - sendUs), endUs })
  const isrAfter = await pollMetadata(s.metadataPort, `${TOPIC} metadata`, [TOPIC], (m) =>
    isrSizes(m, TOPIC, o.partitions)
  )
  const cpuSeconds = processCpuSeconds.reduce((a, b) => a + b, 0)
  const valueMb = (summary.records * o.recordSize) / MB
  const result: RoundResult = {
    round,
    summary,
    seconds,
    cpuSeconds,
    processCpuSeconds,
    mbPerCpuSecond: cpuSeconds > 0 ? valueMb / cpuSeconds : Number.POSITIVE_INFINITY,
    clientCpuSeconds,
    otherCpuSeconds: Math.max(0, machine - cpuSeconds - clientCpuSeconds),
    isrAfter
  }
  log(
    `${s.name} round ${round + 1}: ${summary.mbPerSec} MB/s, avg latency ${summary.avgLatencyMs} ms, server CPU ` +
      `${fmt(cpuSeconds)} s, client CPU ${fmt(clientCpuSeconds)} s, rest of the machine ${fmt(result.otherCpuSeconds)} CPU-s, ISR after ${isrAfter.join(",")}`
  )
  return result
}

const medianRound = (rounds: ReadonlyArray<RoundResult>): RoundResult => {
  const sorted = [...rounds].sort((a, b) => a.summary.mbPerSec - b.summary.mbPerSec)
  return sorted[Math.floor((sorted.length - 1) / 2)]!
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

export const table = (setups: ReadonlyArray<SetupResult>, kafkaMbPerSec: number): string => {
  const header = [
    "setup",
    "MB/s",
    "ours/Kafka",
    "p50 ms",
    "avg ms",
    "max ms",
    "CPU-s",
    "MB/CPU-s",
    "client CPU-s",
    "other CPU-s",
    "peak RSS MB"
  ]
  const body = setups.map((r) => [
    r.setup,
    fmt(r.median.summary.mbPerSec, 2),
    `${fmt(r.median.summary.mbPerSec / kafkaMbPerSec, 2)}x`,
    String(r.median.summary.p50Ms),
    fmt(r.median.summary.avgLatencyMs, 1),
    fmt(r.median.summary.maxLatencyMs, 0),
    fmt(r.median.cpuSeconds, 1),
    fmt(r.median.mbPerCpuSecond, 1),
    fmt(r.median.clientCpuSeconds, 1),
    fmt(r.median.otherCpuSeconds, 1),
    fmt(r.peakRssMb, 0)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

/** The main-thread CPU profile node wrote for `pid` (`CPU.<date>.<time>.<pid>.0.<seq>.cpuprofile`). */
const profileOf = (dir: string, pid: number): string | undefined => {
  const f = readdirSync(dir).find((name) => name.includes(`.${pid}.0.`) && name.endsWith(".cpuprofile"))
  return f === undefined ? undefined : join(dir, f)
}

const setupResult = (r: Running, processes: ReadonlyArray<ProcessReport>): SetupResult => ({
  setup: r.setup.name,
  startSeconds: r.startSeconds,
  warmup: r.warmup,
  rounds: r.rounds,
  median: medianRound(r.rounds),
  peakRssMb: processes.reduce((a, p) => a + p.peakRssMb, 0),
  processes
})

/**
 * Our cluster only, without Apache Kafka: the same start, warm-up and measured rounds as `run`, for
 * suites that compare something with our replication. Prints its progress lines; saves nothing.
 */
export const runOurs = async (o: Options): Promise<SetupResult> => {
  const records = Math.max(1, Math.round(o.totalBytes / o.recordSize))
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-replication-"))
  try {
    const payloadFile = join(scratch, "payloads.txt")
    writeFileSync(payloadFile, payloadLines(PAYLOAD_LINES, o.recordSize).join("\n"))
    const r = await prepare(startOurs, "clustermirror", o, records, payloadFile)
    let processes: ReadonlyArray<ProcessReport>
    try {
      for (let round = 0; round < o.rounds; round++)
        r.rounds.push(await measureRound(r, o, round, records, payloadFile))
      processes = r.setup.processes.map((p) => ({ role: p.role, pid: p.pid(), peakRssMb: p.peakRssMb() }))
    } finally {
      await r.setup.stop()
    }
    return setupResult(r, processes)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}

/** Runs the suite, prints its table (and profile summaries) and saves `replication.json` in `resultsDir`. */
export const run = async (o: Options, resultsDir: string, repoRoot: string): Promise<Result> => {
  const records = Math.max(1, Math.round(o.totalBytes / o.recordSize))
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-replication-"))
  try {
    const payloadFile = join(scratch, "payloads.txt")
    const lines = payloadLines(PAYLOAD_LINES, o.recordSize)
    writeFileSync(payloadFile, lines.join("\n"))
    const batchSize = Number(o.producerProps["batch.size"] ?? 16384)
    const ratioSample = lz4Ratio(lines, Math.max(1, Math.floor(batchSize / o.recordSize)))
    log(
      `workload: ${records} records of ${o.recordSize} B (${fmt((records * o.recordSize) / MB, 0)} MB of values) to ` +
        `${o.partitions} partitions, RF=${o.replicationFactor}, ${Object.entries(o.producerProps)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ")}; payloads from a file of ${PAYLOAD_LINES} lines, half random (lz4 ratio ~${fmt(ratioSample, 2)})`
    )
    // Both setups stay up for the whole suite so that their rounds can alternate.
    const running: Running[] = []
    const rssPeaks: ProcessReport[][] = []
    try {
      running.push(await prepare(startOurs, "clustermirror", o, records, payloadFile))
      running.push(await prepare(startKafka, "apache-kafka", o, records, payloadFile))
      for (let round = 0; round < o.rounds; round++) {
        const order = round % 2 === 0 ? running : [...running].reverse()
        for (const r of order) r.rounds.push(await measureRound(r, o, round, records, payloadFile))
      }
      for (const r of running)
        rssPeaks.push(r.setup.processes.map((p) => ({ role: p.role, pid: p.pid(), peakRssMb: p.peakRssMb() })))
    } finally {
      for (const r of running.reverse()) await r.setup.stop()
      running.reverse()
    }
    const [ours, kafka] = running as [Running, Running]
    const setups: SetupResult[] = running.map((r, i) => setupResult(r, rssPeaks[i]!))
    const kafkaMbPerSec = setups[1]!.median.summary.mbPerSec
    const ratio = setups[0]!.median.summary.mbPerSec / kafkaMbPerSec
    const roundRatios = ours.rounds.map((r, i) => r.summary.mbPerSec / kafka.rounds[i]!.summary.mbPerSec)

    const profiles: Array<{ role: string; file: string; top: ReturnType<typeof Profile.topFrames> }> = []
    if (o.cpuProfileDir !== undefined)
      for (const b of setups[0]!.processes.filter((p) => p.role.startsWith("broker"))) {
        const file = profileOf(o.cpuProfileDir, b.pid)
        if (file === undefined) log(`no CPU profile for our ${b.role} (pid ${b.pid})`)
        else profiles.push({ role: b.role, file, top: Profile.topFrames(file, PROFILE_TOP, repoRoot, ours.windows) })
      }

    const result: Result = {
      suite: "replication",
      date: new Date().toISOString(),
      options: { ...o, records },
      workload: {
        records,
        recordValueBytes: records * o.recordSize,
        payload: `file of ${PAYLOAD_LINES} lines of ${o.recordSize} ASCII bytes, half random base64url, half a repeated phrase`,
        lz4RatioSample: ratioSample,
        client: "org.apache.kafka.tools.ProducerPerformance"
      },
      setups,
      ratio,
      roundRatios,
      profiles
    }
    log(
      `\nreplication (${fmt((records * o.recordSize) / MB, 0)} MB of 1 KB record values, RF=${o.replicationFactor}, acks=all, lz4, ${o.partitions} partitions)`
    )
    log(table(setups, kafkaMbPerSec))
    log(
      `ours/Kafka throughput ratio (medians of ${o.rounds} alternating rounds): ${fmt(ratio, 2)}; ` +
        `round by round: ${roundRatios.map((x) => fmt(x, 2)).join(", ")}`
    )
    for (const s of setups)
      log(
        `${s.setup}: MB/s by round ${s.rounds.map((r) => fmt(r.summary.mbPerSec, 1)).join(", ")}; ` +
          `${s.processes.map((p, i) => `${p.role} ${fmt(s.median.processCpuSeconds[i] ?? 0, 1)} CPU-s ${fmt(p.peakRssMb, 0)} MB`).join(", ")}; ` +
          `ISR after ${s.median.isrAfter.join(",")}`
      )
    const file = join(resultsDir, "replication.json")
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
    log(`saved ${file}`)
    for (const p of profiles) log(`\nCPU profile of our ${p.role}: ${p.file}\n${Profile.format(p.top)}`)
    return result
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
