/**
 * The `mirror-memory` suite: heap and RSS of one destination broker per idle mirrored partition, and per
 * plain partition for comparison, so that the mirror's own share per partition shows.
 *
 * The measured broker runs alone in a child process started with `--expose-gc` (the hidden
 * `__mirror-memory-child` command): `Node.start` with the broker role, its controller a separate server
 * process; the source, for the mirrored run, is a single-node server process. The parent drives both
 * clusters over the wire, so that the child's heap holds the broker and nothing else, and asks the
 * child to measure after five full collections: (a) with a warm-up topic mirrored and caught up, (b)
 * with N more idle partitions, (c) with another N. A second child does the same with plain topics
 * created on the destination. Per partition: (b − a)/N and (c − b)/N of heapUsed and of RSS (RSS also
 * moves when V8 returns freed pages to the OS, so its figures are the coarser ones).
 *
 * It measures only, never judges a number. It owns the processes and temp dirs it starts and stops them.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { BrokerConfig } from "@clustermirror/broker-config"
import { Node } from "@clustermirror/broker"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics, RecordBatch, Uuid } from "@clustermirror/protocol"
import { Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { produceBatch } from "./MirrorSetups.js"

export const CHILD_COMMAND = "__mirror-memory-child"

export const DEFAULT_PARTITIONS = 1000

const MB = 1024 * 1024
const HOST = "127.0.0.1"
const CLIENT_ID = "clustermirror-bench-mirror-memory"
const MIRROR = "bench"
const WARMUP_TOPIC = "mirror-memory-warmup"
const CONTROLLER_ID = 1000
const BROKER_ID = 1
const REQUEST_TIMEOUT_MS = 30_000
const READY_TIMEOUT_MS = 120_000
const GC_PAUSE_MS = 200

export interface Options {
  /** N: idle partitions added per step (a multiple of `partitionsPerTopic`). */
  readonly partitions: number
  readonly partitionsPerTopic: number
  readonly warmupPartitions: number
  /** Records produced to each warm-up partition, so that the append and fetch paths are compiled. */
  readonly warmupRecords: number
  /** Wait after a step before measuring. */
  readonly settleMs: number
  readonly gcRounds: number
  readonly stepTimeoutMs: number
}

export const defaults: Omit<Options, "partitions"> = {
  partitionsPerTopic: 100,
  warmupPartitions: 20,
  warmupRecords: 100,
  settleMs: 5_000,
  gcRounds: 10,
  stepTimeoutMs: 300_000
}

export type Mode = "mirrored" | "plain"

/** `process.memoryUsage()` of the child and its `RssAnon`/`RssFile` from `/proc`, in bytes, after the collections. */
export interface Memory {
  readonly heapUsed: number
  readonly heapTotal: number
  readonly rss: number
  /** Anonymous resident memory (heaps, stacks): RSS without mapped files such as the node binary's code. */
  readonly rssAnon: number
  readonly rssFile: number
  readonly external: number
  readonly arrayBuffers: number
}

export interface Step {
  readonly label: string
  /** Partitions on the broker besides internal topics (warm-up plus idle). */
  readonly partitions: number
  /** From creating (and starting) the step's topics until all were led (and MIRRORING with lag 0). */
  readonly readySeconds: number
  readonly memory: Memory
}

/** Bytes per partition of one step over the previous one. */
export interface PerPartition {
  readonly heapBytes: number
  readonly rssBytes: number
  readonly rssAnonBytes: number
}

export interface RunResult {
  readonly mode: Mode
  readonly steps: ReadonlyArray<Step>
  /** (b − a) / N. */
  readonly first: PerPartition
  /** (c − b) / N. */
  readonly second: PerPartition
}

export interface Result {
  readonly suite: "mirror-memory"
  readonly date: string
  readonly options: Options
  readonly workload: Readonly<Record<string, unknown>>
  readonly mirrored: RunResult
  readonly plain: RunResult
  /** Mirrored minus plain, per partition. */
  readonly mirrorShare: { readonly first: PerPartition; readonly second: PerPartition }
}

/** What the parent passes to the child, as one JSON argument. */
interface ChildSettings {
  readonly clusterId: string
  readonly controllerPort: number
  readonly dataDir: string
}

type ToParent =
  | { readonly type: "ready"; readonly port: number }
  | { readonly type: "measured"; readonly memory: Memory }
  | { readonly type: "failed"; readonly message: string }

type ToChild = { readonly type: "measure"; readonly gcRounds: number } | { readonly type: "stop" }

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const parseSettings = (json: string): ChildSettings => {
  const u: unknown = JSON.parse(json)
  if (
    !isRecord(u) ||
    typeof u["clusterId"] !== "string" ||
    typeof u["controllerPort"] !== "number" ||
    typeof u["dataDir"] !== "string"
  )
    throw new Error(`bad mirror-memory child settings: ${json}`)
  return { clusterId: u["clusterId"], controllerPort: u["controllerPort"], dataDir: u["dataDir"] }
}

/** A `kB` line of `/proc/self/status` in bytes (NaN where there is no such line). */
const statusBytes = (status: string, key: string): number => {
  const m = new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, "m").exec(status)
  return m === null ? Number.NaN : Number(m[1]) * 1024
}

const memoryNow = (): Memory => {
  const m = process.memoryUsage()
  let status = ""
  try {
    status = readFileSync("/proc/self/status", "utf8")
  } catch {
    // Not Linux: the anonymous and file-backed shares stay unknown.
  }
  return {
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    rss: m.rss,
    rssAnon: statusBytes(status, "RssAnon"),
    rssFile: statusBytes(status, "RssFile"),
    external: m.external,
    arrayBuffers: m.arrayBuffers
  }
}

/**
 * The child: one broker in this process, measured on the parent's request after `gcRounds` full
 * collections. Needs `--expose-gc` and an IPC channel to the parent.
 */
export const runChild = async (settingsJson: string): Promise<void> => {
  const send = process.send?.bind(process)
  if (send === undefined) throw new Error(`${CHILD_COMMAND} needs an IPC channel to its parent`)
  const toParent = (m: ToParent): void => {
    send(m)
  }
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error(`${CHILD_COMMAND} needs node --expose-gc`)
  const settings = parseSettings(settingsJson)
  const node = await Node.start({
    ...BrokerConfig.defaults,
    nodeId: BROKER_ID,
    processRoles: ["broker"],
    clusterId: settings.clusterId,
    controllerBootstrap: { host: HOST, port: settings.controllerPort },
    host: HOST,
    advertisedHost: HOST,
    port: 0,
    dataDir: settings.dataDir,
    offsetsTopicReplicationFactor: 1
  })
  process.on("message", (m: ToChild) => {
    if (m.type === "measure") {
      void (async () => {
        // The floor over the rounds: a round can land while a fetch response or a metadata batch is
        // being decoded, which is alive for a moment and not part of what idle partitions keep.
        let floor: Memory | undefined
        for (let i = 0; i < m.gcRounds; i++) {
          gc()
          const now = memoryNow()
          if (floor === undefined || now.heapUsed < floor.heapUsed) floor = now
          await sleep(GC_PAUSE_MS)
        }
        toParent({ type: "measured", memory: floor ?? memoryNow() })
      })()
    } else {
      node.close().then(
        () => process.exit(0),
        (e: unknown) => {
          toParent({ type: "failed", message: `broker close failed: ${String(e)}` })
          process.exit(1)
        }
      )
    }
  })
  toParent({ type: "ready", port: node.port })
}

/** The measured broker as a child process, spoken to over IPC. */
interface Child {
  readonly port: number
  readonly measure: (gcRounds: number) => Promise<Memory>
  readonly stop: () => Promise<void>
}

const STOP_TIMEOUT_MS = 30_000

const startChild = async (settings: ChildSettings): Promise<Child> => {
  const main = fileURLToPath(new URL("./main.ts", import.meta.url))
  const proc: ChildProcess = spawn(
    process.execPath,
    ["--expose-gc", ...process.execArgv, main, CHILD_COMMAND, JSON.stringify(settings)],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] }
  )
  const killOnExit = (): void => {
    proc.kill("SIGKILL")
  }
  process.once("exit", killOnExit)
  const exited = new Promise<string>((resolve) =>
    proc.once("exit", (code, signal) => resolve(`broker child exited (code ${code}, signal ${signal})`))
  )
  const next = <T extends ToParent["type"]>(type: T, timeoutMs: number): Promise<Extract<ToParent, { type: T }>> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.off("message", onMessage)
        reject(new Error(`no "${type}" from the broker child within ${timeoutMs} ms`))
      }, timeoutMs)
      const onMessage = (m: ToParent): void => {
        if (m.type !== type && m.type !== "failed") return
        clearTimeout(timer)
        proc.off("message", onMessage)
        if (m.type === "failed") reject(new Error(m.message))
        else resolve(m as Extract<ToParent, { type: T }>)
      }
      proc.on("message", onMessage)
      void exited.then((why) => {
        clearTimeout(timer)
        proc.off("message", onMessage)
        reject(new Error(why))
      })
    })
  const tell = (m: ToChild): void => {
    proc.send(m)
  }
  let ready: Extract<ToParent, { type: "ready" }>
  try {
    ready = await next("ready", READY_TIMEOUT_MS)
  } catch (e) {
    proc.kill("SIGKILL")
    process.off("exit", killOnExit)
    throw e
  }
  return {
    port: ready.port,
    measure: async (gcRounds) => {
      const answer = next("measured", READY_TIMEOUT_MS)
      tell({ type: "measure", gcRounds })
      return (await answer).memory
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) {
        tell({ type: "stop" })
        const timer = setTimeout(() => proc.kill("SIGKILL"), STOP_TIMEOUT_MS)
        await exited
        clearTimeout(timer)
      }
      process.off("exit", killOnExit)
    }
  }
}

const createTopics = async (
  client: ClusterClient.Client,
  names: ReadonlyArray<string>,
  partitions: number
): Promise<void> => {
  const res = await client.sendToAnyBroker(CreateTopics.api, {
    topics: names.map((name) => ({
      name,
      numPartitions: partitions,
      replicationFactor: 1,
      assignments: [],
      configs: []
    })),
    timeoutMs: REQUEST_TIMEOUT_MS,
    validateOnly: false
  })
  const failed = res.topics.filter((t) => t.errorCode !== 0)
  if (failed.length > 0)
    throw new Error(`CreateTopics failed: ${failed.map((t) => `${t.name} error ${t.errorCode}`).join(", ")}`)
}

/** Waits until every partition of `names` has a leader, as `client`'s cluster says. */
const waitLed = (
  client: ClusterClient.Client,
  names: ReadonlyArray<string>,
  partitions: number,
  timeoutMs: number
): Promise<true> =>
  Wait.eventually(
    `${names.length} topics led`,
    async () => {
      const snap = await client.metadata(names)
      const ok = names.every((n) => {
        const t = snap.topics.get(n)
        return (
          t !== undefined &&
          t.errorCode === 0 &&
          t.partitions.size === partitions &&
          [...t.partitions.values()].every((p) => p.errorCode === 0 && p.leaderId >= 0)
        )
      })
      return ok ? true : undefined
    },
    timeoutMs,
    500
  )

/** Produces `records` small records to every partition of `topic`. */
const produceWarmup = async (client: ClusterClient.Client, topic: string, o: Options): Promise<void> => {
  const batch = RecordBatch.build({
    records: Array.from({ length: o.warmupRecords }, (_, i) => ({ key: null, value: Buffer.from(`warm-up ${i}`) })),
    timestamp: Date.now()
  })
  await Promise.all(
    Array.from({ length: o.warmupPartitions }, (_, partition) => produceBatch(client, topic, partition, batch))
  )
}

/** Waits until the mirror has `count` partitions, every one MIRRORING with lag 0. */
const waitMirroring = (admin: MirrorAdmin.MirrorAdmin, count: number, timeoutMs: number): Promise<true> =>
  Wait.eventually(
    `${count} partitions MIRRORING with lag 0`,
    async () => {
      const parts = (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions ?? []
      const done = parts.filter((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset >= 0n).length
      return parts.length === count && done === count ? true : undefined
    },
    timeoutMs,
    1_000
  )

const perPartition = (from: Memory, to: Memory, n: number): PerPartition => ({
  heapBytes: (to.heapUsed - from.heapUsed) / n,
  rssBytes: (to.rss - from.rss) / n,
  rssAnonBytes: (to.rssAnon - from.rssAnon) / n
})

/** One child run: the broker with a warm-up topic, then N and 2N idle partitions of `mode`. */
const runOne = async (mode: Mode, o: Options): Promise<RunResult> => {
  const clusterId = Uuid.random()
  const scratch = mkdtempSync(join(tmpdir(), `clustermirror-bench-mirror-memory-${mode}-`))
  const stops: Array<() => Promise<unknown>> = []
  try {
    let source: ServerProcess.ServerHandle | undefined
    if (mode === "mirrored") {
      source = await ServerProcess.start({
        config: { "auto.create.topics.enable": false, "socket.request.max.bytes": 104857600 },
        tempPrefix: "clustermirror-bench-mirror-memory-source-"
      })
      stops.push(() => source!.stop())
    }
    const controllerPort = await Ports.freePort()
    const controller = await ServerProcess.start({
      port: false,
      config: {
        "process.roles": "controller",
        "node.id": CONTROLLER_ID,
        "cluster.id": clusterId,
        listeners: `CONTROLLER://${HOST}:${controllerPort}`
      },
      tempPrefix: "clustermirror-bench-mirror-memory-controller-"
    })
    stops.push(() => controller.stop())
    const child = await startChild({ clusterId, controllerPort, dataDir: join(scratch, "broker") })
    stops.push(() => child.stop())
    log(`${mode}: broker child on port ${child.port}`)

    const destination = new ClusterClient.Client({
      bootstrapServers: [`${HOST}:${child.port}`],
      clientId: CLIENT_ID,
      requestTimeoutMs: REQUEST_TIMEOUT_MS
    })
    stops.push(() => destination.close())
    const sourceClient =
      source === undefined
        ? undefined
        : new ClusterClient.Client({
            bootstrapServers: [source.bootstrap],
            clientId: CLIENT_ID,
            requestTimeoutMs: REQUEST_TIMEOUT_MS
          })
    if (sourceClient !== undefined) stops.push(() => sourceClient.close())
    const admin = new MirrorAdmin.MirrorAdmin(destination)
    await Wait.eventually(
      "the broker registered",
      async () => ((await destination.metadata([])).brokers.size >= 1 ? true : undefined),
      READY_TIMEOUT_MS,
      200
    )

    const steps: Step[] = []
    /** Creates (and for a mirror, starts) `names`, waits until they are ready and settled, and measures. */
    const step = async (label: string, names: ReadonlyArray<string>, partitions: number, total: number) => {
      const began = Date.now()
      if (sourceClient !== undefined) {
        await createTopics(sourceClient, names, partitions)
        await waitLed(sourceClient, names, partitions, o.stepTimeoutMs)
        if (names.includes(WARMUP_TOPIC)) await produceWarmup(sourceClient, WARMUP_TOPIC, o)
        const results = await admin.startMirrorTopics(MIRROR, names)
        const failed = results.filter((r) => r.error !== null)
        if (failed.length > 0)
          throw new Error(`StartMirrorTopics failed: ${failed.map((r) => String(r.error)).join("; ")}`)
        await waitMirroring(admin, total, o.stepTimeoutMs)
      } else {
        await createTopics(destination, names, partitions)
        await waitLed(destination, names, partitions, o.stepTimeoutMs)
        if (names.includes(WARMUP_TOPIC)) await produceWarmup(destination, WARMUP_TOPIC, o)
      }
      const readySeconds = (Date.now() - began) / 1000
      await sleep(o.settleMs)
      const memory = await child.measure(o.gcRounds)
      log(
        `${mode} ${label}: ${total} partitions ready in ${readySeconds.toFixed(1)} s; heap ${fmt(memory.heapUsed / MB, 2)} MB, ` +
          `RSS ${fmt(memory.rss / MB, 1)} MB`
      )
      steps.push({ label, partitions: total, readySeconds, memory })
    }

    if (source !== undefined)
      await admin.createClusterMirror(MIRROR, new Map([["bootstrap.servers", source.bootstrap]]))
    await step("a: warm-up only", [WARMUP_TOPIC], o.warmupPartitions, o.warmupPartitions)
    const topicsPerStep = o.partitions / o.partitionsPerTopic
    const idle = (from: number): ReadonlyArray<string> =>
      Array.from({ length: topicsPerStep }, (_, i) => `mirror-memory-idle-${from + i}`)
    await step(`b: +${o.partitions}`, idle(0), o.partitionsPerTopic, o.warmupPartitions + o.partitions)
    await step(
      `c: +${2 * o.partitions}`,
      idle(topicsPerStep),
      o.partitionsPerTopic,
      o.warmupPartitions + 2 * o.partitions
    )
    const [a, b, c] = steps as [Step, Step, Step]
    return {
      mode,
      steps,
      first: perPartition(a.memory, b.memory, o.partitions),
      second: perPartition(b.memory, c.memory, o.partitions)
    }
  } finally {
    // The broker first, then its controller, then the source.
    for (const stop of stops.reverse()) await stop().catch((e: unknown) => log(`stop failed: ${String(e)}`))
    rmSync(scratch, { recursive: true, force: true })
  }
}

const minus = (x: PerPartition, y: PerPartition): PerPartition => ({
  heapBytes: x.heapBytes - y.heapBytes,
  rssBytes: x.rssBytes - y.rssBytes,
  rssAnonBytes: x.rssAnonBytes - y.rssAnonBytes
})

export const table = (r: Result): string => {
  const n = r.options.partitions
  const header = [
    "per partition",
    `heap B (a→${n})`,
    `heap B (${n}→${2 * n})`,
    `RSS B (a→${n})`,
    `RSS B (${n}→${2 * n})`
  ]
  const row = (name: string, first: PerPartition, second: PerPartition): ReadonlyArray<string> => [
    name,
    fmt(first.heapBytes),
    fmt(second.heapBytes),
    fmt(first.rssBytes),
    fmt(second.rssBytes)
  ]
  const body = [
    row("mirrored", r.mirrored.first, r.mirrored.second),
    row("plain", r.plain.first, r.plain.second),
    row("mirror's share", r.mirrorShare.first, r.mirrorShare.second)
  ]
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

const stepsTable = (runs: ReadonlyArray<RunResult>): string => {
  const header = [
    "run",
    "step",
    "partitions",
    "ready s",
    "heapUsed MB",
    "heapTotal MB",
    "RSS MB",
    "anon RSS MB",
    "file RSS MB",
    "external MB"
  ]
  const body = runs.flatMap((r) =>
    r.steps.map((s) => [
      r.mode,
      s.label,
      String(s.partitions),
      fmt(s.readySeconds, 1),
      fmt(s.memory.heapUsed / MB, 2),
      fmt(s.memory.heapTotal / MB, 2),
      fmt(s.memory.rss / MB, 1),
      fmt(s.memory.rssAnon / MB, 1),
      fmt(s.memory.rssFile / MB, 1),
      fmt(s.memory.external / MB, 1)
    ])
  )
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

/** Runs the suite (a mirrored child, then a plain one), prints its tables and saves `mirror-memory.json`. */
export const run = async (o: Options, resultsDir: string): Promise<Result> => {
  if (!Number.isInteger(o.partitions / o.partitionsPerTopic) || o.partitions <= 0)
    throw new Error(`partitions must be a positive multiple of ${o.partitionsPerTopic}`)
  log(
    `mirror-memory: one destination broker with ${o.warmupPartitions} warm-up partitions, then +${o.partitions} and ` +
      `+${o.partitions} idle partitions (${o.partitionsPerTopic} per topic), mirrored, then plain`
  )
  const mirrored = await runOne("mirrored", o)
  const plain = await runOne("plain", o)
  const result: Result = {
    suite: "mirror-memory",
    date: new Date().toISOString(),
    options: o,
    workload: {
      broker:
        "one broker in a child process (node --expose-gc), its controller a separate process; every config at its default",
      mirrored: `source: one single-node server process; ${o.partitions / o.partitionsPerTopic} topics of ${o.partitionsPerTopic} partitions per step, created on the source and started on the destination's mirror, idle`,
      plain: `the same topics created on the destination, RF=1, idle`,
      warmup: `${WARMUP_TOPIC}: ${o.warmupPartitions} partitions with ${o.warmupRecords} records each (mirrored: produced to the source and mirrored)`,
      measurement: `process.memoryUsage() of the broker child after ${o.gcRounds} × gc() ${GC_PAUSE_MS} ms apart, ${o.settleMs} ms after the step was ready`
    },
    mirrored,
    plain,
    mirrorShare: { first: minus(mirrored.first, plain.first), second: minus(mirrored.second, plain.second) }
  }
  log(`\nmirror-memory (${o.partitions} idle partitions per step; bytes per partition)`)
  log(table(result))
  log(
    "heap = heapUsed (live JS objects after the collections); RSS also moves when V8 or the allocator hands " +
      "freed memory back to the OS, on its own schedule (the steps below show anonymous and file-backed RSS)"
  )
  log(`\n${stepsTable([mirrored, plain])}`)
  const file = join(resultsDir, "mirror-memory.json")
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
  log(`saved ${file}`)
  return result
}
