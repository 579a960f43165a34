/**
 * The `mirror` suite: our KIP-1279 cluster mirroring against the alternatives, on the same machine with
 * the same data. The setups run one after the other: (a) Apache Kafka → MirrorMaker 2 → Apache Kafka,
 * (b) Apache Kafka → our destination cluster, (b-tls) the same with the mirror reading the source's SSL
 * listener, (c) our cluster → our cluster, (d) Apache Kafka's own follower replication (see
 * `MirrorSetups`).
 *
 * Per setup: a fixed total of 1 KB records in lz4 batches is produced, untimed, to a topic of several
 * partitions on the source; then the copy starts and the catch-up is timed from the first record seen
 * on the destination until the destination holds every record (progress polled), with the CPU seconds
 * of every process of the setup over the same window (`/proc`), giving MB/s and MB per CPU second.
 * Then a steady load at half of that setup's catch-up rate runs for a fixed time while a consumer on the
 * destination takes every record's end-to-end lag (p50/p99). Last, on our destination, the time to stop
 * 1,000 mirrored partitions until all are STOPPED and writable. The results go to a table and JSON; with
 * profiling, (b)'s destination runs under `--cpu-prof` and its hottest functions are printed.
 *
 * It measures only: it checks that every record arrived, never judges a number. It owns the processes
 * and temp files it starts and stops them all.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { KafkaPeer, ProcStats } from "@clustermirror/testkit"
import * as MirrorLag from "./MirrorLag.js"
import * as MirrorSetups from "./MirrorSetups.js"
import * as Profile from "./Profile.js"
import * as Replication from "./Replication.js"

const MB = 1024 * 1024
const TOPIC = "bench-mirror"
const PROGRESS_EVERY_MS = 5_000
const PROFILE_TOP = 20
const PROFILE_PATHS = 8
const PROFILE_DEPTH = 8
/** How long the lag consumer may trail the producer's end before the phase gives up. */
const LAG_TAIL_TIMEOUT_MS = 120_000

export const DEFAULT_MB = 1024

/** The goals of the issue, as ratios of MB per CPU second. */
export const GOALS = { bOverA: 5, bOverD: 0.8 } as const

export interface Options {
  /** Record value bytes produced to the source before each copy. */
  readonly totalBytes: number
  readonly recordSize: number
  readonly partitions: number
  readonly setups: ReadonlyArray<MirrorSetups.SetupId>
  /** Brokers of each of our clusters (one process each, with a controller). */
  readonly ourBrokers: number
  readonly mm2Tasks: number
  /** ProducerPerformance settings (the replication suite's), also MirrorMaker's producer settings. */
  readonly producerProps: Readonly<Record<string, string | number>>
  readonly pollMs: number
  readonly catchUpTimeoutMs: number
  /** The steady load's rate as a share of the setup's catch-up MB/s, and its duration. */
  readonly lagRateShare: number
  readonly lagSeconds: number
  /** Partitions mirrored then stopped on our destination (topics of `stopPerTopic`); 0 skips it. */
  readonly stopPartitions: number
  readonly stopPerTopic: number
  /** Directory for (b)'s destination `--cpu-prof` output, when profiling. */
  readonly cpuProfileDir: string | undefined
}

export const defaults: Omit<Options, "totalBytes" | "cpuProfileDir"> = {
  recordSize: 1024,
  partitions: 8,
  setups: ["a", "b", "c", "d"],
  ourBrokers: 1,
  mm2Tasks: 2,
  producerProps: Replication.defaults.producerProps,
  pollMs: 50,
  catchUpTimeoutMs: 600_000,
  lagRateShare: 0.5,
  lagSeconds: 20,
  stopPartitions: 1000,
  stopPerTopic: 100
}

/** The timed copy of the pre-produced records. */
export interface CatchUp {
  readonly totalRecords: number
  /** From starting the copy until the first record was seen on the destination. */
  readonly startSeconds: number
  /** Records copied inside the measured window (first record seen → all copied). */
  readonly windowRecords: number
  readonly seconds: number
  readonly mbPerSec: number
  readonly cpuSeconds: number
  readonly mbPerCpuSecond: number
  readonly cpuSecondsByProcess: Readonly<Record<string, number>>
  /** The same from starting the copy (includes MirrorMaker's JVM start, our mirror's first fetches). */
  readonly fromStart: {
    readonly seconds: number
    readonly mbPerSec: number
    readonly cpuSeconds: number
    readonly mbPerCpuSecond: number
  }
}

export interface Lag {
  readonly targetMbPerSec: number
  readonly recordsPerSec: number
  readonly produce: Replication.PerfSummary
  readonly received: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
}

export interface SetupResult {
  readonly id: MirrorSetups.SetupId
  readonly label: string
  readonly counted: string
  readonly fill: Replication.PerfSummary
  readonly catchUp: CatchUp
  readonly lag: Lag
  /** Timing, or why the setup has none. */
  readonly stop: MirrorSetups.StopTiming | string | null
}

export interface Result {
  readonly suite: "mirror"
  readonly date: string
  readonly wallSeconds: number
  readonly options: Readonly<Record<string, unknown>>
  readonly workload: Readonly<Record<string, unknown>>
  readonly setups: ReadonlyArray<SetupResult>
  /** (b)/(a), (b)/(c), (b)/(d) and (b-tls)/(b) of MB per CPU second and of MB/s, when those setups ran. */
  readonly ratios: Readonly<Record<string, number>>
  readonly goals: typeof GOALS
  readonly profile: {
    readonly file: string
    readonly top: ReturnType<typeof Profile.topFrames>
    readonly paths: ReadonlyArray<Profile.HotPath>
  } | null
}

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

const perSecond = (amount: number, seconds: number): number =>
  seconds > 0 ? amount / seconds : Number.POSITIVE_INFINITY

const sumEnds = (xs: ReadonlyArray<bigint>): number => Number(xs.reduce((a, b) => a + b, 0n))

/** CPU seconds per process role now; a process not yet started counts 0, one that is gone its last reading. */
const cpuSnapshot = (
  processes: ReadonlyArray<MirrorSetups.SetupProcess>,
  last: Map<string, number>
): Map<string, number> => {
  for (const p of processes) {
    const s = ProcStats.cpuSeconds(p.pid)
    if (s !== undefined) last.set(p.role, s)
  }
  return new Map(last)
}

const cpuDelta = (from: Map<string, number>, to: Map<string, number>): Record<string, number> =>
  Object.fromEntries([...to].map(([role, s]) => [role, s - (from.get(role) ?? 0)]))

const total = (byRole: Record<string, number>): number => Object.values(byRole).reduce((a, b) => a + b, 0)

const catchUp = async (
  setup: MirrorSetups.Setup,
  o: Options,
  records: number,
  windows: Profile.Window[]
): Promise<CatchUp> => {
  const last = new Map<string, number>()
  const atStart = cpuSnapshot(setup.processes(), last)
  const started = Date.now()
  await setup.startCopy(records)
  let first: { t: number; copied: number; cpu: Map<string, number>; us: number } | undefined
  let nextProgress = started + PROGRESS_EVERY_MS
  const deadline = started + o.catchUpTimeoutMs
  for (;;) {
    const p = await setup.progress()
    const now = Date.now()
    if (first === undefined && p.copiedRecords > 0)
      first = { t: now, copied: p.copiedRecords, cpu: cpuSnapshot(setup.processes(), last), us: Profile.nowUs() }
    if (p.done) {
      const end = cpuSnapshot(setup.processes(), last)
      const endUs = Profile.nowUs()
      const fromStartCpu = total(cpuDelta(atStart, end))
      const fromStartSeconds = (now - started) / 1000
      const f = first!
      // A copy finished by the first poll that saw it has no window of its own: use the whole run.
      const degenerate = f.t === now
      const windowRecords = degenerate ? records : records - f.copied
      const seconds = degenerate ? fromStartSeconds : (now - f.t) / 1000
      const byProcess = cpuDelta(degenerate ? atStart : f.cpu, end)
      const cpuSeconds = total(byProcess)
      const mb = (windowRecords * o.recordSize) / MB
      windows.push({ startUs: f.us, endUs })
      return {
        totalRecords: records,
        startSeconds: (f.t - started) / 1000,
        windowRecords,
        seconds,
        mbPerSec: perSecond(mb, seconds),
        cpuSeconds,
        mbPerCpuSecond: perSecond(mb, cpuSeconds),
        cpuSecondsByProcess: byProcess,
        fromStart: {
          seconds: fromStartSeconds,
          mbPerSec: perSecond((records * o.recordSize) / MB, fromStartSeconds),
          cpuSeconds: fromStartCpu,
          mbPerCpuSecond: perSecond((records * o.recordSize) / MB, fromStartCpu)
        }
      }
    }
    if (now > deadline)
      throw new Error(`${setup.id}: ${p.copiedRecords} of ${records} copied after ${o.catchUpTimeoutMs} ms`)
    if (now >= nextProgress) {
      log(`  ${p.copiedRecords} of ${records} records copied after ${fmt((now - started) / 1000)} s`)
      nextProgress = now + PROGRESS_EVERY_MS
    }
    await sleep(o.pollMs)
  }
}

/**
 * The steady load runs at `lagRateShare` of the setup's maximum rate: the smaller of its catch-up MB/s
 * and the MB/s the source took from the producer while it was filled (a copy cannot go faster than its
 * source is written), so the producer is not the bottleneck of the lag it measures.
 */
const steadyLag = async (
  setup: MirrorSetups.Setup,
  o: Options,
  payloadFile: string,
  maxMbPerSec: number
): Promise<Lag> => {
  const targetMbPerSec = maxMbPerSec * o.lagRateShare
  const recordsPerSec = Math.max(1, Math.round((targetMbPerSec * MB) / o.recordSize))
  const records = recordsPerSec * o.lagSeconds
  const from = await MirrorSetups.endOffsets(setup.destination, TOPIC, o.partitions)
  const consumer = MirrorLag.start(setup.destination, TOPIC, from)
  let produce: Replication.PerfSummary
  try {
    produce = await Replication.producerPerf(
      { name: setup.id, bootstrap: setup.sourceBootstrap },
      {
        ...Replication.defaults,
        recordSize: o.recordSize,
        producerProps: o.producerProps,
        totalBytes: 0,
        cpuProfileDir: undefined
      },
      TOPIC,
      records,
      payloadFile,
      recordsPerSec
    )
    const deadline = Date.now() + LAG_TAIL_TIMEOUT_MS
    while (consumer.records() < records && Date.now() < deadline) await sleep(50)
  } catch (e) {
    await consumer.stop().catch(() => undefined)
    throw e
  }
  const sample = await consumer.stop()
  if (sample.records < records)
    throw new Error(`${setup.id}: the lag consumer saw ${sample.records} of ${records} records`)
  let max = 0
  for (const l of sample.lagsMs) if (l > max) max = l
  return {
    targetMbPerSec,
    recordsPerSec,
    produce,
    received: sample.records,
    p50Ms: MirrorLag.quantile(sample.lagsMs, 0.5),
    p99Ms: MirrorLag.quantile(sample.lagsMs, 0.99),
    maxMs: max
  }
}

const runSetup = async (
  id: MirrorSetups.SetupId,
  o: Options,
  payloadFile: string,
  records: number,
  windows: Profile.Window[]
): Promise<SetupResult> => {
  log(`\n${MirrorSetups.labels[id]}: starting`)
  const setup = await MirrorSetups.start(id, {
    topic: TOPIC,
    partitions: o.partitions,
    ourBrokers: o.ourBrokers,
    mm2Tasks: o.mm2Tasks,
    mm2Producer: o.producerProps,
    cpuProfileDir: o.cpuProfileDir
  })
  try {
    log(`  producing ${records} records of ${o.recordSize} B to ${o.partitions} partitions (untimed)`)
    const fill = await Replication.producerPerf(
      { name: id, bootstrap: setup.sourceBootstrap },
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
    const ends = await MirrorSetups.endOffsets(setup.source, TOPIC, o.partitions)
    if (sumEnds(ends) !== records) throw new Error(`${id}: source holds ${sumEnds(ends)} records, expected ${records}`)
    log(`  source filled at ${fill.mbPerSec} MB/s; copying`)
    const c = await catchUp(setup, o, records, id === "b" ? windows : [])
    log(
      `  caught up: ${fmt(c.mbPerSec)} MB/s, ${fmt(c.cpuSeconds)} CPU-s, ${fmt(c.mbPerCpuSecond)} MB/CPU-s ` +
        `(first record after ${fmt(c.startSeconds, 2)} s)`
    )
    const maxMbPerSec = Math.min(c.mbPerSec, fill.mbPerSec)
    log(`  steady load at ${fmt(maxMbPerSec * o.lagRateShare)} MB/s for ${o.lagSeconds} s`)
    const lag = await steadyLag(setup, o, payloadFile, maxMbPerSec)
    log(
      `  lag p50 ${fmt(lag.p50Ms, 0)} ms, p99 ${fmt(lag.p99Ms, 0)} ms (producer ${lag.produce.mbPerSec} MB/s, ` +
        `its own ack latency p50 ${lag.produce.p50Ms} ms, p99 ${lag.produce.p99Ms} ms)`
    )
    let stop: SetupResult["stop"] = null
    if (o.stopPartitions > 0) {
      stop = await setup.stopPartitions(o.stopPartitions, o.stopPerTopic)
      if (typeof stop !== "string")
        log(
          `  stop of ${stop.partitions} partitions: STOPPED after ${fmt(stop.toStoppedSeconds, 2)} s, ` +
            `writable after ${fmt(stop.toWritableSeconds, 2)} s`
        )
    }
    return { id, label: MirrorSetups.labels[id], counted: setup.counted, fill, catchUp: c, lag, stop }
  } finally {
    await setup.stop()
  }
}

const stopCell = (s: SetupResult["stop"]): string =>
  s === null ? "-" : typeof s === "string" ? "n/a" : `${fmt(s.toStoppedSeconds, 2)} / ${fmt(s.toWritableSeconds, 2)}`

export const table = (r: Result): string => {
  const header = [
    "setup",
    "MB",
    "s",
    "MB/s",
    "CPU-s",
    "MB/CPU-s",
    "start s",
    "lag load MB/s",
    "lag p50 ms",
    "lag p99 ms",
    "ack p50/p99 ms",
    `stop ${r.options["stopPartitions"]} s (STOPPED / writable)`
  ]
  const body = r.setups.map((s) => [
    s.label,
    fmt((s.catchUp.windowRecords * Number(r.options["recordSize"])) / MB, 0),
    fmt(s.catchUp.seconds, 2),
    fmt(s.catchUp.mbPerSec),
    fmt(s.catchUp.cpuSeconds),
    fmt(s.catchUp.mbPerCpuSecond),
    fmt(s.catchUp.startSeconds, 2),
    fmt(s.lag.produce.mbPerSec),
    fmt(s.lag.p50Ms, 0),
    fmt(s.lag.p99Ms, 0),
    `${s.lag.produce.p50Ms}/${s.lag.produce.p99Ms}`,
    stopCell(s.stop)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((x) => x[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

const ratiosOf = (setups: ReadonlyArray<SetupResult>): Record<string, number> => {
  const by = new Map(setups.map((s) => [s.id, s.catchUp]))
  const b = by.get("b")
  const bTls = by.get("b-tls")
  const out: Record<string, number> = {}
  if (b === undefined) return out
  for (const other of ["a", "c", "d"] as const) {
    const x = by.get(other)
    if (x === undefined) continue
    out[`b/${other} MB/CPU-s`] = b.mbPerCpuSecond / x.mbPerCpuSecond
    out[`b/${other} MB/s`] = b.mbPerSec / x.mbPerSec
  }
  if (bTls !== undefined) {
    out["b-tls/b MB/CPU-s"] = bTls.mbPerCpuSecond / b.mbPerCpuSecond
    out["b-tls/b MB/s"] = bTls.mbPerSec / b.mbPerSec
  }
  return out
}

/** Runs the suite, prints its table and saves `mirror.json` and `mirror-<timestamp>.json` in `resultsDir`. */
export const run = async (o: Options, resultsDir: string, repoRoot: string): Promise<Result> => {
  const began = Date.now()
  const records = Math.max(1, Math.round(o.totalBytes / o.recordSize))
  // Resolve the jars first, so that a first-time download is not part of any setup.
  await Promise.all([KafkaPeer.libs(), o.setups.includes("a") ? KafkaPeer.connectMirrorLibs() : Promise.resolve("")])
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-mirror-"))
  const windows: Profile.Window[] = []
  const profileSince = Date.now()
  try {
    const payloadFile = join(scratch, "payloads.txt")
    writeFileSync(payloadFile, Replication.payloadLines(Replication.PAYLOAD_LINES, o.recordSize).join("\n"))
    const setups: SetupResult[] = []
    for (const id of o.setups) setups.push(await runSetup(id, o, payloadFile, records, windows))

    let profile: Result["profile"] = null
    if (o.cpuProfileDir !== undefined && o.setups.includes("b")) {
      const file = Profile.newest(o.cpuProfileDir, profileSince)
      if (file === undefined) log("no CPU profile of (b)'s destination was written")
      else
        profile = {
          file,
          top: Profile.topFrames(file, PROFILE_TOP, repoRoot, windows),
          paths: Profile.hotPaths(file, PROFILE_PATHS, PROFILE_DEPTH, repoRoot, windows)
        }
    }
    const ratios = ratiosOf(setups)
    const result: Result = {
      suite: "mirror",
      date: new Date().toISOString(),
      wallSeconds: (Date.now() - began) / 1000,
      options: { ...o, records },
      workload: {
        topic: `${TOPIC}: ${o.partitions} partitions, RF=1 on the source`,
        payload: `${records} records of ${o.recordSize} B from a file of ${Replication.PAYLOAD_LINES} lines, half random base64url, half a repeated phrase`,
        client: "org.apache.kafka.tools.ProducerPerformance",
        producerProps: o.producerProps,
        kafka: `Apache Kafka ${KafkaPeer.version()} (Maven Central), Kafka's default JVM flags, 1 GB heap`,
        mirrorMaker: `MirrorMaker 2 ${KafkaPeer.connectMirrorVersion()} (connect-mirror from Maven Central), dedicated mode, tasks.max=${o.mm2Tasks}, IdentityReplicationPolicy, heartbeats/checkpoints/offset syncs/config syncs off, producer ${JSON.stringify(o.producerProps)}`,
        ours: `one server process per cluster: a controller and ${o.ourBrokers} broker(s) (--embedded ${o.ourBrokers}); the mirror created with bootstrap.servers only`,
        tls: "b-tls: the Kafka source gets a second client listener SSL (inline PEM keystore, Kafka's default TLS settings, no client certificates); the mirror is created with security.protocol=SSL and the CA as a PEM truststore and reads over SSL; producers and the bench's admin client use the PLAINTEXT listener, as in (b)",
        follower:
          "a controller and two broker JVMs; the topic created on broker 1 and filled, then reassigned to [1, 2]",
        window:
          "catch-up MB/s and CPU: from the first poll that saw a record on the destination to the poll that saw all (polled every pollMs); fromStart: from starting the copy",
        lag: `ProducerPerformance at ${o.lagRateShare} x the setup's maximum rate (the smaller of its catch-up MB/s and the MB/s its source was filled at) for ${o.lagSeconds} s (ack p50/p99: the producer's own send-to-acknowledgement latency); a Fetch consumer on the destination (for (d) the leader, which serves records once the follower has them) takes arrival time minus record timestamp (the producer's send time) per record`,
        counted: Object.fromEntries(setups.map((s) => [s.id, s.counted]))
      },
      setups,
      ratios,
      goals: GOALS,
      profile
    }
    log(
      `\nmirror: ${fmt((records * o.recordSize) / MB, 0)} MB of ${o.recordSize} B records, lz4, ${o.partitions} partitions; ` +
        `wall time ${fmt(result.wallSeconds, 0)} s`
    )
    log(table(result))
    for (const s of setups)
      log(
        `${s.label}: CPU-s ${Object.entries(s.catchUp.cpuSecondsByProcess)
          .map(([k, v]) => `${k} ${fmt(v)}`)
          .join(
            ", "
          )}; from start ${fmt(s.catchUp.fromStart.seconds, 2)} s, ${fmt(s.catchUp.fromStart.mbPerSec)} MB/s, ` +
          `${fmt(s.catchUp.fromStart.mbPerCpuSecond)} MB/CPU-s` +
          (typeof s.stop === "string" ? `; stop: ${s.stop}` : "")
      )
    const ratio = (k: string, goal?: number): string =>
      ratios[k] === undefined ? "" : `${k} ${fmt(ratios[k]!, 2)}x${goal === undefined ? "" : ` (goal >= ${goal}x)`}`
    log(
      [
        ratio("b/a MB/CPU-s", GOALS.bOverA),
        ratio("b/d MB/CPU-s", GOALS.bOverD),
        ratio("b/c MB/CPU-s"),
        ratio("b/a MB/s"),
        ratio("b/d MB/s"),
        ratio("b-tls/b MB/CPU-s"),
        ratio("b-tls/b MB/s")
      ]
        .filter((x) => x !== "")
        .join("; ")
    )
    mkdirSync(resultsDir, { recursive: true })
    const json = `${JSON.stringify(result, (_, v) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`
    const stamped = join(resultsDir, `mirror-${result.date.replace(/[:.]/g, "-")}.json`)
    writeFileSync(stamped, json)
    writeFileSync(join(resultsDir, "mirror.json"), json)
    log(`saved ${stamped}`)
    if (profile !== null)
      log(
        `\nCPU profile of (b)'s destination during its catch-up: ${profile.file}\n${Profile.format(profile.top)}` +
          `\nheaviest stacks (self time, innermost first):\n${Profile.formatPaths(profile.paths)}`
      )
    return result
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
