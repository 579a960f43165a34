/**
 * The `transactions` suite: transactional produce throughput (Kafka's `ProducerPerformance` with
 * `--transactional-id` and `--transaction-duration-ms`, acks=all) to an RF=3 topic on our 3-broker cluster
 * and on a 3-broker Apache Kafka cluster started in the same run, with plain idempotent produce by the same
 * tool as a reference row on both, so that the cost of transactions shows next to the ratio ours/Kafka.
 *
 * It measures only: it checks that every record was acknowledged and that no transaction is left open
 * (the read_committed end offset of every partition reaches its high watermark), never that a number is
 * high enough. It owns the processes and temp files it starts and stops them all.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ClusterClient } from "@clustermirror/client"
import { ListOffsets } from "@clustermirror/protocol"
import { ProcStats } from "@clustermirror/testkit"
import * as Replication from "./Replication.js"

const MB = 1024 * 1024
const CLIENT_ID = "clustermirror-bench"
const REQUEST_TIMEOUT_MS = 30_000
const TRANSACTIONAL_ID = "clustermirror-bench-txn"

export type Mode = "idempotent" | "transactional"
export const MODES: ReadonlyArray<Mode> = ["idempotent", "transactional"]

export interface Options extends Replication.Options {
  /** `--transaction-duration-ms`: the tool commits once a transaction has been open this long. */
  readonly transactionDurationMs: number
}

export const defaults: Omit<Options, "totalBytes" | "cpuProfileDir"> = {
  ...Replication.defaults,
  partitions: 6,
  replicationFactor: 3,
  brokers: 3,
  transactionDurationMs: 100,
  producerProps: { ...Replication.defaults.producerProps, "enable.idempotence": "true" }
}

export const DEFAULT_MB = 128

/** One measured ProducerPerformance run of one mode against one setup. */
export interface Run {
  readonly setup: string
  readonly mode: Mode
  readonly round: number
  readonly summary: Replication.PerfSummary
  /** Wall time of the tool, its JVM start included. */
  readonly seconds: number
  /** CPU seconds of all the setup's server processes while the tool ran. */
  readonly cpuSeconds: number
  /** CPU seconds of the ProducerPerformance JVM. */
  readonly clientCpuSeconds: number
  /** Offsets the run added over the topic's partitions (records plus, when transactional, commit markers). */
  readonly offsetsAdded: number
}

/** The median run of one setup and mode, with its ratios. */
export interface Row {
  readonly setup: string
  readonly mode: Mode
  readonly median: Run
  /** MB/s of every round, in round order. */
  readonly mbPerSecByRound: ReadonlyArray<number>
  /** Median MB/s over the Kafka setup's median MB/s in the same mode. */
  readonly vsKafka: number
  /** Median MB/s over the same setup's idempotent median MB/s (1 for the idempotent row). */
  readonly vsIdempotent: number
  /** Value MB per server CPU second of the median run. */
  readonly mbPerCpuSecond: number
}

const median = (runs: ReadonlyArray<Run>): Run => {
  const sorted = [...runs].sort((a, b) => a.summary.mbPerSec - b.summary.mbPerSec)
  const m = sorted[Math.floor((sorted.length - 1) / 2)]
  if (m === undefined) throw new Error("no runs")
  return m
}

/**
 * One row per setup and mode (in the order the setups and modes first appear in `runs`): the median round
 * by MB/s, its ratio to `kafkaSetup` in the same mode and to the same setup's idempotent median.
 */
export const summarize = (runs: ReadonlyArray<Run>, kafkaSetup: string, recordSize: number): ReadonlyArray<Row> => {
  const setups = [...new Set(runs.map((r) => r.setup))]
  const medianOf = (setup: string, mode: Mode): Run | undefined => {
    const of = runs.filter((r) => r.setup === setup && r.mode === mode)
    return of.length === 0 ? undefined : median(of)
  }
  const rows: Row[] = []
  for (const setup of setups)
    for (const mode of MODES) {
      const m = medianOf(setup, mode)
      if (m === undefined) continue
      const kafka = medianOf(kafkaSetup, mode)
      const idempotent = medianOf(setup, "idempotent")
      const valueMb = (m.summary.records * recordSize) / MB
      rows.push({
        setup,
        mode,
        median: m,
        mbPerSecByRound: runs
          .filter((r) => r.setup === setup && r.mode === mode)
          .sort((a, b) => a.round - b.round)
          .map((r) => r.summary.mbPerSec),
        vsKafka: kafka === undefined ? Number.NaN : m.summary.mbPerSec / kafka.summary.mbPerSec,
        vsIdempotent: idempotent === undefined ? Number.NaN : m.summary.mbPerSec / idempotent.summary.mbPerSec,
        mbPerCpuSecond: m.cpuSeconds > 0 ? valueMb / m.cpuSeconds : Number.POSITIVE_INFINITY
      })
    }
  return rows
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

export const table = (rows: ReadonlyArray<Row>): string => {
  const header = [
    "setup",
    "mode",
    "records/s",
    "MB/s",
    "ours/Kafka",
    "txn/idempotent",
    "p50 ms",
    "avg ms",
    "CPU-s",
    "MB/CPU-s",
    "client CPU-s"
  ]
  const body = rows.map((r) => [
    r.setup,
    r.mode,
    fmt(r.median.summary.recordsPerSec, 0),
    fmt(r.median.summary.mbPerSec, 2),
    `${fmt(r.vsKafka, 2)}x`,
    `${fmt(r.vsIdempotent, 2)}x`,
    String(r.median.summary.p50Ms),
    fmt(r.median.summary.avgLatencyMs, 1),
    fmt(r.median.cpuSeconds, 1),
    fmt(r.mbPerCpuSecond, 1),
    fmt(r.median.clientCpuSeconds, 1)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

export interface Result {
  readonly suite: "transactions"
  readonly date: string
  readonly options: Readonly<Record<string, unknown>>
  readonly workload: Readonly<Record<string, unknown>>
  readonly runs: ReadonlyArray<Run>
  readonly rows: ReadonlyArray<Row>
}

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const topicOf = (mode: Mode): string => `bench-${mode}`
const WARMUP_TOPIC = "bench-transactions-warmup"

/** `ProducerPerformance` arguments of a mode: transactions on, or idempotence only. */
const modeArgs = (o: Options, mode: Mode, idSuffix: string): ReadonlyArray<string> =>
  mode === "transactional"
    ? [
        "--transactional-id",
        `${TRANSACTIONAL_ID}-${idSuffix}`,
        "--transaction-duration-ms",
        String(o.transactionDurationMs)
      ]
    : []

/** Per partition: the high watermark (read_uncommitted) and the last stable offset (read_committed). */
const endOffsets = async (
  client: ClusterClient.Client,
  topic: string,
  partitions: number
): Promise<ReadonlyArray<{ readonly hw: bigint; readonly lso: bigint }>> => {
  const at = (partition: number, isolationLevel: number) =>
    client
      .sendToLeader(
        topic,
        partition,
        ListOffsets.api,
        (leader) => ({
          replicaId: -1,
          isolationLevel,
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
      .then((r) => r.topics[0]!.partitions[0]!.offset)
  return Promise.all(Array.from({ length: partitions }, async (_, p) => ({ hw: await at(p, 0), lso: await at(p, 1) })))
}

const sumHw = (xs: ReadonlyArray<{ readonly hw: bigint }>): number => Number(xs.reduce((a, x) => a + x.hw, 0n))

interface Running {
  readonly setup: Replication.Setup
  readonly client: ClusterClient.Client
}

const prepare = async (
  start: (o: Options) => Promise<Replication.Setup>,
  label: string,
  o: Options,
  records: number,
  payloadFile: string
): Promise<Running> => {
  log(`${label}: starting a controller and ${o.brokers} brokers`)
  const s = await start(o)
  const client = new ClusterClient.Client({
    bootstrapServers: s.bootstrap.split(","),
    clientId: CLIENT_ID,
    requestTimeoutMs: REQUEST_TIMEOUT_MS
  })
  try {
    await Replication.pollMetadata(s.metadataPort, `${o.brokers} registered brokers`, null, (m) =>
      m.brokers.length >= o.brokers ? true : undefined
    )
    for (const topic of [WARMUP_TOPIC, ...MODES.map(topicOf)]) await Replication.createTopic(s, o, topic)
    // Both modes warm up, so that the first transactional round does not pay for the transaction log's creation.
    const warmupRecords = Math.max(1_000, Math.round(records * o.warmupShare))
    for (const mode of MODES) {
      const w = await Replication.producerPerf(s, o, WARMUP_TOPIC, warmupRecords, payloadFile, -1, {
        toolArgs: modeArgs(o, mode, "warmup")
      })
      log(`${s.name}: ${mode} warm-up ${warmupRecords} records at ${w.mbPerSec} MB/s`)
    }
    return { setup: s, client }
  } catch (e) {
    await client.close()
    await s.stop()
    throw e
  }
}

const measure = async (
  r: Running,
  o: Options,
  mode: Mode,
  round: number,
  records: number,
  payloadFile: string
): Promise<Run> => {
  const s = r.setup
  const topic = topicOf(mode)
  const before = await endOffsets(r.client, topic, o.partitions)
  const cpuBefore = s.processes.map((p) => p.cpuSeconds())
  const clientBefore = ProcStats.childrenCpuSeconds()
  const began = process.hrtime.bigint()
  const summary = await Replication.producerPerf(s, o, topic, records, payloadFile, -1, {
    toolArgs: modeArgs(o, mode, String(round + 1))
  })
  const seconds = Number(process.hrtime.bigint() - began) / 1e9
  const clientCpuSeconds = ProcStats.childrenCpuSeconds() - clientBefore
  const cpuSeconds = s.processes.reduce((a, p, i) => a + p.cpuSeconds() - cpuBefore[i]!, 0)
  const after = await endOffsets(r.client, topic, o.partitions)
  const open = after.findIndex((x) => x.lso !== x.hw)
  if (open >= 0)
    throw new Error(
      `${s.name} ${mode}: partition ${open} has last stable offset ${after[open]!.lso} below its high watermark ${after[open]!.hw}`
    )
  const offsetsAdded = sumHw(after) - sumHw(before)
  if (offsetsAdded < records || (mode === "idempotent" && offsetsAdded !== records))
    throw new Error(`${s.name} ${mode}: ${records} records acknowledged but the partitions grew by ${offsetsAdded}`)
  log(
    `${s.name} ${mode} round ${round + 1}: ${summary.recordsPerSec} records/s, ${summary.mbPerSec} MB/s, ` +
      `avg latency ${summary.avgLatencyMs} ms, server CPU ${fmt(cpuSeconds)} s, client CPU ${fmt(clientCpuSeconds)} s, ` +
      `${offsetsAdded - records} offsets besides the records`
  )
  return { setup: s.name, mode, round, summary, seconds, cpuSeconds, clientCpuSeconds, offsetsAdded }
}

/** Runs the suite, prints its table and saves `transactions.json` in `resultsDir`. */
export const run = async (o: Options, resultsDir: string): Promise<Result> => {
  const records = Math.max(1, Math.round(o.totalBytes / o.recordSize))
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-transactions-"))
  try {
    const payloadFile = join(scratch, "payloads.txt")
    writeFileSync(payloadFile, Replication.payloadLines(Replication.PAYLOAD_LINES, o.recordSize).join("\n"))
    const props = Object.entries(o.producerProps)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")
    log(
      `workload: ${records} records of ${o.recordSize} B (${fmt((records * o.recordSize) / MB, 0)} MB of values) to ` +
        `${o.partitions} partitions, RF=${o.replicationFactor}, ${props}; transactional: --transaction-duration-ms ${o.transactionDurationMs}`
    )
    const running: Running[] = []
    const runs: Run[] = []
    try {
      running.push(await prepare(Replication.startOurs, "clustermirror", o, records, payloadFile))
      running.push(await prepare(Replication.startKafka, "apache-kafka", o, records, payloadFile))
      // Setups and modes alternate round by round, so that a change in background load hits all of them.
      for (let round = 0; round < o.rounds; round++) {
        const setups = round % 2 === 0 ? running : [...running].reverse()
        const modes = round % 2 === 0 ? MODES : [...MODES].reverse()
        for (const r of setups)
          for (const mode of modes) runs.push(await measure(r, o, mode, round, records, payloadFile))
      }
    } finally {
      for (const r of [...running].reverse()) {
        await r.client.close()
        await r.setup.stop()
      }
    }
    const rows = summarize(runs, "apache-kafka", o.recordSize)
    const result: Result = {
      suite: "transactions",
      date: new Date().toISOString(),
      options: { ...o, records },
      workload: {
        records,
        recordValueBytes: records * o.recordSize,
        client: "org.apache.kafka.tools.ProducerPerformance",
        transactional: `--transactional-id ${TRANSACTIONAL_ID}-<round> --transaction-duration-ms ${o.transactionDurationMs}`
      },
      runs,
      rows
    }
    log(
      `\ntransactions (${fmt((records * o.recordSize) / MB, 0)} MB of 1 KB record values per run, RF=${o.replicationFactor}, ` +
        `${o.brokers} brokers, ${o.partitions} partitions, acks=all, lz4; medians of ${o.rounds} alternating rounds)`
    )
    log(table(rows))
    for (const r of rows)
      log(`${r.setup} ${r.mode}: MB/s by round ${r.mbPerSecByRound.map((x) => fmt(x, 1)).join(", ")}`)
    const file = join(resultsDir, "transactions.json")
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
    log(`saved ${file}`)
    return result
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
