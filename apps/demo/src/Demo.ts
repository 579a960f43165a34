/**
 * The demo, start to end, in one process: a source and a destination cluster (three brokers each,
 * `Node.embedded`, fresh data dirs), three topics of four partitions on the source under a steady
 * idempotent lz4 load, the cluster mirror "demo" mirroring them while a live view shows every
 * partition, then with the load stopped and the lag at 0 a byte-for-byte comparison of both clusters
 * (`MirrorCheck`), a failover (StopMirrorTopics, every partition STOPPED, the destination takes
 * writes that it refused while mirroring), and a report.
 *
 * Each expectation that does not hold ends the run with a `DemoFailure` saying why. It owns the
 * clusters, clients and data dirs it creates and always releases them; the decisions (what a mirror
 * does, when a partition is STOPPED) are the clusters', the demo only asks and checks.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { BrokerConfig } from "@clustermirror/broker-config"
import { Node } from "@clustermirror/broker"
import { ClientError, ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, Errors } from "@clustermirror/protocol"
import { MirrorCheck } from "@clustermirror/testkit"
import * as LiveView from "./LiveView.js"
import { IdempotentProducer, produceOnce, recordValue, SteadyProducer, type TopicPartition } from "./Producer.js"

export const MIRROR = "demo"
export const TOPICS: ReadonlyArray<string> = ["orders", "payments", "shipments"]
export const PARTITIONS_PER_TOPIC = 4
export const REPLICATION_FACTOR = 3
export const BROKERS = 3
/** Records written to the destination after the failover. */
export const RECORDS_AFTER_FAILOVER = 1_000
export const VALUE_BYTES = 200

const E = Errors.ErrorCode
const TICK_MS = 500
const CLUSTER_READY_TIMEOUT_MS = 30_000
/** From StartMirrorTopics until every partition mirrors with a small lag. */
const CATCH_UP_TIMEOUT_MS = 30_000
/** From stopping the load until every partition has lag 0. */
const DRAIN_TIMEOUT_MS = 20_000
/** From StopMirrorTopics until every partition is STOPPED. */
const STOP_TIMEOUT_MS = 20_000
/** Until a produce to a just-started mirror topic gets its answer (the topic appears on the destination). */
const READ_ONLY_TIMEOUT_MS = 15_000
const CLOSE_TIMEOUT_MS = 20_000

export interface Options {
  /** Records the load writes at least before it stops (it also waits for the mirror to catch up). */
  readonly records: number
  /** Records per second of the load, over all partitions. */
  readonly recordsPerSecond: number
  /** Where the clusters' temporary data dirs go (default: the OS temp dir); removed at the end. */
  readonly dataDir: string | undefined
  /** Cluster logs to stderr as they come, instead of only on failure. */
  readonly verbose: boolean
}

export const defaults: Options = { records: 200_000, recordsPerSecond: 20_000, dataDir: undefined, verbose: false }

export const usage =
  "usage: demo [--records N] [--rate RECORDS_PER_SECOND] [--data-dir DIR] [--verbose]\n" +
  `  --records   records to produce at least before the load stops (default ${defaults.records})\n` +
  `  --rate      records per second over all partitions (default ${defaults.recordsPerSecond})\n` +
  "  --data-dir  parent of the clusters' temporary data dirs (default: the OS temp dir)\n" +
  "  --verbose   print the clusters' logs"

/** Options from the command line; throws with the usage on a bad one. */
export const parseArgs = (argv: ReadonlyArray<string>): Options => {
  let o: Options = defaults
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const eq = arg.indexOf("=")
    const name = eq > 0 ? arg.slice(0, eq) : arg
    if (name === "--verbose") {
      o = { ...o, verbose: true }
      continue
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i]
    if (value === undefined || value.startsWith("--")) throw new Error(`missing value for ${name}`)
    const positive = (): number => {
      const n = Number(value)
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} takes a positive integer, not "${value}"`)
      return n
    }
    if (name === "--records") o = { ...o, records: positive() }
    else if (name === "--rate") o = { ...o, recordsPerSecond: positive() }
    else if (name === "--data-dir") o = { ...o, dataDir: value }
    else throw new Error(`unknown option ${arg}`)
  }
  return o
}

/** An expectation of the demo that did not hold. */
export class DemoFailure extends Error {}

/** The run was interrupted (SIGINT). */
export class Interrupted extends Error {}

/** Every partition of the demo's topics. */
export const partitionsOf = (topics: ReadonlyArray<string>, perTopic: number): ReadonlyArray<TopicPartition> =>
  topics.flatMap((topic) => Array.from({ length: perTopic }, (_, partition) => ({ topic, partition })))

/** `total` split over `n` parts as evenly as possible, the first parts taking the remainder. */
export const spread = (total: number, n: number): ReadonlyArray<number> =>
  Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0))

/** The view's rows from a mirror's description. */
export const rowsOf = (
  partitions: ReadonlyArray<MirrorAdmin.PartitionDescription>
): ReadonlyArray<LiveView.PartitionRow> =>
  partitions.map((p) => ({
    topic: p.topic,
    partition: p.partition,
    state: p.state,
    sourceOffset: Number(p.sourceOffset),
    destinationOffset: Number(p.destinationOffset),
    lag: Number(p.lag)
  }))

const allIn = (rows: ReadonlyArray<LiveView.PartitionRow>, expected: number, state: string): boolean =>
  rows.length === expected && rows.every((r) => r.state === state)

/** Every partition mirrors and the total lag is at most `maxLag` records. */
export const isCaughtUp = (rows: ReadonlyArray<LiveView.PartitionRow>, expected: number, maxLag: number): boolean =>
  allIn(rows, expected, "MIRRORING") && rows.every((r) => r.lag >= 0) && LiveView.totalLag(rows) <= maxLag

/** Every partition mirrors, has lag 0 and holds exactly what was produced to it (`endOf`). */
export const isDrained = (
  rows: ReadonlyArray<LiveView.PartitionRow>,
  expected: number,
  endOf: (tp: TopicPartition) => number
): boolean => allIn(rows, expected, "MIRRORING") && rows.every((r) => r.lag === 0 && r.destinationOffset === endOf(r))

/** Every partition is STOPPED. */
export const isStopped = (rows: ReadonlyArray<LiveView.PartitionRow>, expected: number): boolean =>
  allIn(rows, expected, "STOPPED")

/** The first mismatch of a comparison, readable. */
export const describeMismatch = (p: MirrorCheck.PartitionComparison): string => {
  const m = p.firstMismatch
  if (m === null) return `${p.topic}-${p.partition}: identical`
  const where = m.what === "topicId" ? "topic id" : `${m.what} at offset ${m.offset}`
  return `${p.topic}-${p.partition}: ${where}: source ${m.source}, destination ${m.destination}`
}

const errorName = (code: number): string => Errors.byCode.get(code)?.name ?? `error ${code}`
const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e))

/** Keeps the last lines of the clusters' logs, for the failure message. */
class LogTail {
  private readonly lines: string[] = []
  constructor(
    private readonly limit: number,
    private readonly echo: ((line: string) => void) | undefined
  ) {}
  readonly add = (line: string): void => {
    this.echo?.(line)
    this.lines.push(line)
    if (this.lines.length > this.limit) this.lines.shift()
  }
  toString(): string {
    return this.lines.join("\n")
  }
}

export interface Io {
  readonly out: LiveView.Output
  /** One line to stderr. */
  readonly err: (line: string) => void
  /** Aborted on SIGINT. */
  readonly signal: AbortSignal
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Interrupted("interrupted"))
    const onAbort = () => {
      clearTimeout(timer)
      reject(new Interrupted("interrupted"))
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal.addEventListener("abort", onAbort, { once: true })
  })

const withTimeout = <A>(what: string, ms: number, p: Promise<A>): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms)
    })
  ]).finally(() => clearTimeout(timer))
}

/** Polls `check` every tick until it returns a value, or fails with `what` after `timeoutMs`. */
const until = async <A>(
  what: string,
  timeoutMs: number,
  signal: AbortSignal,
  check: () => Promise<A | undefined>
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let last = ""
  for (;;) {
    try {
      const a = await check()
      if (a !== undefined) return a
    } catch (e) {
      if (e instanceof DemoFailure || e instanceof Interrupted) throw e
      last = messageOf(e)
    }
    if (Date.now() > deadline)
      throw new DemoFailure(`${what} did not happen within ${timeoutMs / 1000} s${last === "" ? "" : `: ${last}`}`)
    await sleep(200, signal)
  }
}

const clusterConfig = (dataDir: string): BrokerConfig.BrokerConfig => ({
  ...BrokerConfig.defaults,
  port: 0,
  dataDir,
  brokerHeartbeatIntervalMs: 200,
  defaultReplicationFactor: REPLICATION_FACTOR,
  mirrorStateTopicNumPartitions: 5,
  mirrorFailedRetryInitialBackoffMs: 500
})

/** Starts both clusters at once; if one fails, the other is closed again. */
const startClusters = async (
  root: string,
  log: (line: string) => void
): Promise<{ readonly source: Node.Embedded; readonly destination: Node.Embedded }> => {
  const started = await Promise.allSettled(
    (["source", "destination"] as const).map((name) => {
      const dir = join(root, name)
      mkdirSync(dir, { recursive: true })
      return Node.embedded(BROKERS, clusterConfig(dir), (line) => log(`[${name}] ${line}`))
    })
  )
  const [source, destination] = started
  if (source?.status === "fulfilled" && destination?.status === "fulfilled")
    return { source: source.value, destination: destination.value }
  for (const s of started) if (s.status === "fulfilled") await s.value.close().catch(() => undefined)
  const failed = started.find((s) => s.status === "rejected")
  throw new DemoFailure(`a cluster did not start: ${failed?.status === "rejected" ? messageOf(failed.reason) : "?"}`)
}

const clientFor = (cluster: Node.Embedded): ClusterClient.Client =>
  new ClusterClient.Client({ bootstrapServers: cluster.bootstrap.split(","), clientId: "clustermirror-demo" })

const awaitBrokers = (name: string, client: ClusterClient.Client, signal: AbortSignal) =>
  until(`${name}: ${BROKERS} brokers in metadata`, CLUSTER_READY_TIMEOUT_MS, signal, async () =>
    (await client.metadata([])).brokers.size >= BROKERS ? true : undefined
  )

/** Creates the topics on the source, retrying while too few brokers are registered for the replication factor. */
const createTopics = (client: ClusterClient.Client, signal: AbortSignal) =>
  until("creating the topics", CLUSTER_READY_TIMEOUT_MS, signal, async () => {
    const res = await client.sendToAnyBroker(CreateTopics.api, {
      topics: TOPICS.map((name) => ({
        name,
        numPartitions: PARTITIONS_PER_TOPIC,
        replicationFactor: REPLICATION_FACTOR
      })),
      timeoutMs: 10_000
    })
    for (const t of res.topics)
      if (t.errorCode !== E.NONE && t.errorCode !== E.TOPIC_ALREADY_EXISTS) {
        if (t.errorCode === E.INVALID_REPLICATION_FACTOR) return undefined
        throw new DemoFailure(`creating ${t.name} failed: ${errorName(t.errorCode)} ${t.errorMessage ?? ""}`)
      }
    const snap = await client.metadata(TOPICS)
    const led = TOPICS.every((name) => {
      const t = snap.topics.get(name)
      return (
        t !== undefined &&
        t.errorCode === E.NONE &&
        t.partitions.size === PARTITIONS_PER_TOPIC &&
        [...t.partitions.values()].every((p) => p.leaderId >= 0)
      )
    })
    return led ? true : undefined
  })

/**
 * Produces one record to a partition of a topic that was just started: the answer, once the topic
 * exists on the destination, must be READ_ONLY_TOPIC. Returns the error code it got.
 */
const produceWhileMirroring = (client: ClusterClient.Client, tp: TopicPartition, signal: AbortSignal) =>
  until(
    `an answer to a produce to ${tp.topic}-${tp.partition} on the destination`,
    READ_ONLY_TIMEOUT_MS,
    signal,
    async () => {
      const code = await produceOnce(client, tp, [recordValue(VALUE_BYTES)]).catch((e: unknown) => {
        if (e instanceof ClientError.KafkaError && e.errorCode !== E.UNKNOWN_TOPIC_OR_PARTITION) return e.errorCode
        throw e
      })
      return code === E.UNKNOWN_TOPIC_OR_PARTITION ? undefined : code
    }
  )

/** Runs the demo; resolves with the report (already printed), rejects with `DemoFailure` or `Interrupted`. */
export const run = async (options: Options, io: Io): Promise<LiveView.Report> => {
  const say = (line: string): void => io.out.write(`${line}\n`)
  const partitions = partitionsOf(TOPICS, PARTITIONS_PER_TOPIC)
  const parent = options.dataDir ?? tmpdir()
  mkdirSync(parent, { recursive: true })
  const root = mkdtempSync(join(parent, "clustermirror-demo-"))
  const logs = new LogTail(60, options.verbose ? io.err : undefined)
  const clients: ClusterClient.Client[] = []
  let clusters: { readonly source: Node.Embedded; readonly destination: Node.Embedded } | undefined
  let load: SteadyProducer | undefined
  try {
    say(`starting a source and a destination cluster (${BROKERS} brokers each) in ${root}`)
    clusters = await startClusters(root, logs.add)
    const { source, destination } = clusters
    say(`  source       ${source.bootstrap}  (cluster ${source.clusterId})`)
    say(`  destination  ${destination.bootstrap}  (cluster ${destination.clusterId})`)
    const sourceClient = clientFor(source)
    const destinationClient = clientFor(destination)
    clients.push(sourceClient, destinationClient)
    await awaitBrokers("source", sourceClient, io.signal)
    await awaitBrokers("destination", destinationClient, io.signal)

    say(
      `creating ${TOPICS.length} topics × ${PARTITIONS_PER_TOPIC} partitions (replication factor ${REPLICATION_FACTOR}) on the source: ${TOPICS.join(", ")}`
    )
    await createTopics(sourceClient, io.signal)
    const producer = await IdempotentProducer.init(sourceClient, VALUE_BYTES)
    load = new SteadyProducer(producer, { partitions, recordsPerSecond: options.recordsPerSecond })
    say(
      `producing ${LiveView.count(options.recordsPerSecond)} records/s (idempotent, lz4, producer id ${producer.producerId})`
    )

    const admin = new MirrorAdmin.MirrorAdmin(destinationClient)
    say(`creating cluster mirror "${MIRROR}" (bootstrap.servers=${source.bootstrap}) and starting its topics`)
    await admin.createClusterMirror(MIRROR, new Map([["bootstrap.servers", source.bootstrap]]))
    const startedAt = Date.now()
    const started = await admin.startMirrorTopics(MIRROR, TOPICS)
    const startErrors = started.filter((t) => t.error !== null)
    if (startErrors.length > 0)
      throw new DemoFailure(`StartMirrorTopics refused: ${startErrors.map((t) => t.error?.message).join("; ")}`)
    const refused = await produceWhileMirroring(destinationClient, partitions[0]!, io.signal)
    if (refused !== E.READ_ONLY_TOPIC)
      throw new DemoFailure(
        `a produce to mirrored ${partitions[0]!.topic}-0 on the destination got ${errorName(refused)}, expected READ_ONLY_TOPIC`
      )
    say(`a produce to the destination while mirroring is refused: ${errorName(refused)}`)

    const view = new LiveView.LiveView(io.out)
    const describe = async (): Promise<LiveView.Tick> => {
      const tick = { elapsedSeconds: (Date.now() - startedAt) / 1000, produced: producer.records }
      try {
        const d = await admin.describeClusterMirrors([MIRROR])
        const m = d.mirrors.find((x) => x.mirrorName === MIRROR)
        if (m === undefined || m.errorCode !== E.NONE)
          return { ...tick, rows: [], error: m === undefined ? "not described" : errorName(m.errorCode) }
        return { ...tick, rows: rowsOf(m.partitions), error: null }
      } catch (e) {
        return { ...tick, rows: [], error: messageOf(e) }
      }
    }
    const failedRows = (rows: ReadonlyArray<LiveView.PartitionRow>, tick: LiveView.Tick): string =>
      tick.error ?? (rows.length === 0 ? "no partitions described" : LiveView.stateCounts(rows))

    // Caught up: every partition mirrors, less than half a second of the load behind.
    const maxLag = Math.max(1_000, options.recordsPerSecond / 2)
    let caughtUpAt: number | undefined
    for (;;) {
      const tick = await describe()
      view.show(tick)
      if (load.error !== undefined) throw new DemoFailure(load.error.message)
      const caughtUp = isCaughtUp(tick.rows, partitions.length, maxLag)
      if (caughtUp) caughtUpAt ??= Date.now()
      if (caughtUp && producer.records >= options.records) break
      if (caughtUpAt === undefined && Date.now() - startedAt > CATCH_UP_TIMEOUT_MS) {
        const failed = tick.rows.filter((r) => r.state === "FAILED")
        throw new DemoFailure(
          `the mirror did not catch up within ${CATCH_UP_TIMEOUT_MS / 1000} s (${failedRows(tick.rows, tick)})` +
            (failed.length > 0 ? `; FAILED: ${failed.map((r) => `${r.topic}-${r.partition}`).join(", ")}` : "")
        )
      }
      await sleep(TICK_MS, io.signal)
    }
    const catchUpMs = (caughtUpAt ?? Date.now()) - startedAt

    await load.stop()
    load = undefined
    const drainStart = Date.now()
    for (;;) {
      const tick = await describe()
      view.show(tick)
      if (isDrained(tick.rows, partitions.length, (tp) => producer.recordsOf(tp))) break
      if (Date.now() - drainStart > DRAIN_TIMEOUT_MS)
        throw new DemoFailure(
          `the lag did not reach 0 within ${DRAIN_TIMEOUT_MS / 1000} s after the load stopped (${failedRows(tick.rows, tick)}, lag ${LiveView.count(LiveView.totalLag(tick.rows))})`
        )
      await sleep(TICK_MS, io.signal)
    }
    const mirroringMs = Date.now() - startedAt
    view.done()
    say(`caught up: ${LiveView.count(producer.records)} records in ${partitions.length} partitions mirrored, lag 0`)

    const check = await MirrorCheck.compareClusters({
      source: source.bootstrap,
      destination: destination.bootstrap,
      topics: TOPICS,
      upTo: "sourceHighWatermark"
    })
    if (!check.identical)
      throw new DemoFailure(
        `the clusters differ:\n${check.partitions
          .filter((p) => p.firstMismatch !== null)
          .map((p) => `  ${describeMismatch(p)}`)
          .join("\n")}`
      )
    const batches = check.partitions.reduce((n, p) => n + p.batches, 0)
    const records = check.partitions.reduce((n, p) => n + p.records, 0)
    if (records !== producer.records || check.partitions.length !== partitions.length)
      throw new DemoFailure(
        `compared ${LiveView.count(records)} records in ${check.partitions.length} partitions, produced ${LiveView.count(producer.records)} in ${partitions.length}`
      )
    say(LiveView.verifiedLine(check.partitions.length, batches, records))

    say(`failing over: StopMirrorTopics ${TOPICS.join(", ")}`)
    const stopAt = Date.now()
    const stopped = await admin.stopMirrorTopics(MIRROR, TOPICS)
    const stopErrors = stopped.filter((t) => t.error !== null)
    if (stopErrors.length > 0)
      throw new DemoFailure(`StopMirrorTopics refused: ${stopErrors.map((t) => t.error?.message).join("; ")}`)
    for (;;) {
      const tick = await describe()
      view.show(tick)
      if (isStopped(tick.rows, partitions.length)) break
      if (Date.now() - stopAt > STOP_TIMEOUT_MS)
        throw new DemoFailure(
          `not every partition was STOPPED within ${STOP_TIMEOUT_MS / 1000} s (${failedRows(tick.rows, tick)})`
        )
      await sleep(TICK_MS / 5, io.signal)
    }
    const failoverMs = Date.now() - stopAt
    view.done()

    const writer = await IdempotentProducer.init(destinationClient, VALUE_BYTES)
    const counts = spread(RECORDS_AFTER_FAILOVER, partitions.length)
    try {
      await Promise.all(partitions.map((tp, i) => (counts[i]! > 0 ? writer.send(tp, counts[i]!) : undefined)))
    } catch (e) {
      throw new DemoFailure(`producing to the destination after the failover failed: ${messageOf(e)}`)
    }
    say(`the destination takes writes: ${LiveView.count(writer.records)} records produced after the stop`)

    const result: LiveView.Report = {
      topics: TOPICS.length,
      partitions: partitions.length,
      recordsMirrored: records,
      bytesMirrored: check.bytes,
      catchUpMs,
      mirroringMs,
      failoverMs,
      refusedBeforeStop: errorName(refused),
      producedAfterStop: writer.records
    }
    for (const line of LiveView.report(result)) say(line)
    return result
  } catch (e) {
    if (!(e instanceof Interrupted)) io.err(`cluster log (last lines):\n${logs.toString()}`)
    throw e
  } finally {
    await load?.stop().catch(() => undefined)
    for (const c of clients) await c.close().catch(() => undefined)
    if (clusters !== undefined)
      for (const c of [clusters.source, clusters.destination])
        await withTimeout("closing a cluster", CLOSE_TIMEOUT_MS, c.close()).catch((e: unknown) => io.err(messageOf(e)))
    rmSync(root, { recursive: true, force: true })
  }
}
