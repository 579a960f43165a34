/**
 * The mirror metrics of one broker (and its log recovery counters): a small registry of counters and gauges with labels, their Prometheus
 * text exposition (format 0.0.4), and an HTTP server that answers `GET /metrics` on the broker's
 * `metrics.port`. Counters are counted where things happen (the `MirrorMetrics` methods are the hooks the
 * mirror runtime, the refresh loop and the sync tasks call); gauges of partition states and lag are
 * computed at scrape time from the collector the runtime registers.
 *
 * It owns only numbers and its listening socket. It must not read partitions, metadata or source clusters
 * itself, nor decide anything: what it reports comes from its callers.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { MirrorPartitionState } from "@clustermirror/protocol"

/** The label values of one series, by label name. */
export type Labels = Readonly<Record<string, string>>

/** One value of a collected gauge. */
export interface Sample {
  readonly labels: Labels
  readonly value: number
}

/** The content type of the text exposition format 0.0.4. */
export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/

/** HELP text: backslash and line feed escaped. */
export const escapeHelp = (s: string): string => s.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

/** A label value: backslash, double quote and line feed escaped. */
export const escapeLabelValue = (s: string): string =>
  s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")

/** A sample value as Prometheus reads it (Go float syntax, with NaN, +Inf and -Inf). */
export const formatValue = (v: number): string =>
  Number.isNaN(v)
    ? "NaN"
    : v === Number.POSITIVE_INFINITY
      ? "+Inf"
      : v === Number.NEGATIVE_INFINITY
        ? "-Inf"
        : String(v)

type Collect = () => Iterable<Sample> | Promise<Iterable<Sample>>

/** A metric family: its name, help, type, label names (in exposition order) and series. */
class Family {
  /** Series by their label values joined with NUL, each with the values in label-name order. */
  readonly series = new Map<string, { readonly values: ReadonlyArray<string>; value: number }>()

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge",
    readonly labelNames: ReadonlyArray<string>,
    readonly collect: Collect | undefined
  ) {
    if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name ${JSON.stringify(name)}`)
    for (const l of labelNames)
      if (!LABEL_NAME.test(l) || l.startsWith("__")) throw new Error(`invalid label name ${JSON.stringify(l)}`)
    if (new Set(labelNames).size !== labelNames.length) throw new Error(`duplicate label names on ${name}`)
  }

  /** The label values of `labels` in label-name order; every label must be given, and no other. */
  values(labels: Labels): ReadonlyArray<string> {
    const given = Object.keys(labels)
    if (given.length !== this.labelNames.length || given.some((k) => !this.labelNames.includes(k)))
      throw new Error(`${this.name} takes the labels ${this.labelNames.join(", ")}; got ${given.join(", ")}`)
    return this.labelNames.map((l) => labels[l]!)
  }

  entry(labels: Labels): { readonly values: ReadonlyArray<string>; value: number } {
    const values = this.values(labels)
    const key = values.join("\u0000")
    let e = this.series.get(key)
    if (e === undefined) this.series.set(key, (e = { values, value: 0 }))
    return e
  }

  get(labels: Labels): number | undefined {
    return this.series.get(this.values(labels).join("\u0000"))?.value
  }

  line(values: ReadonlyArray<string>, value: number): string {
    if (this.labelNames.length === 0) return `${this.name} ${formatValue(value)}`
    const pairs = this.labelNames.map((l, i) => `${l}="${escapeLabelValue(values[i]!)}"`)
    return `${this.name}{${pairs.join(",")}} ${formatValue(value)}`
  }

  async expose(): Promise<string> {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`]
    let rows: Array<{ readonly key: string; readonly values: ReadonlyArray<string>; readonly value: number }>
    if (this.collect !== undefined) {
      const byKey = new Map<string, { key: string; values: ReadonlyArray<string>; value: number }>()
      for (const s of await this.collect()) {
        const values = this.values(s.labels)
        const key = values.join("\u0000")
        // Samples of one series add up (a collector may report a series in parts).
        const seen = byKey.get(key)
        byKey.set(key, { key, values, value: (seen?.value ?? 0) + s.value })
      }
      rows = [...byKey.values()]
    } else rows = [...this.series].map(([key, e]) => ({ key, values: e.values, value: e.value }))
    rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    for (const r of rows) lines.push(this.line(r.values, r.value))
    return `${lines.join("\n")}\n`
  }
}

/** A counter: only grows. */
export class Counter {
  constructor(private readonly family: Family) {}

  /** Adds `by` (default 1) to the series of `labels`; a negative or non-finite amount is a defect. */
  inc(labels: Labels = {}, by = 1): void {
    if (!Number.isFinite(by) || by < 0) throw new RangeError(`${this.family.name}: a counter cannot grow by ${by}`)
    this.family.entry(labels).value += by
  }

  /** Makes the series of `labels` exist (at 0 when new), so it is exposed before its first event. */
  touch(labels: Labels = {}): void {
    this.family.entry(labels)
  }

  /** The current value of a series; undefined when it does not exist. */
  get(labels: Labels = {}): number | undefined {
    return this.family.get(labels)
  }
}

/** A gauge set by its owner. */
export class Gauge {
  constructor(private readonly family: Family) {}

  set(labels: Labels, value: number): void {
    this.family.entry(labels).value = value
  }

  get(labels: Labels = {}): number | undefined {
    return this.family.get(labels)
  }
}

/** Metric families, exposed in registration order. */
export class Registry {
  private readonly families = new Map<string, Family>()

  private add(family: Family): Family {
    if (this.families.has(family.name)) throw new Error(`metric ${family.name} is registered twice`)
    this.families.set(family.name, family)
    return family
  }

  counter(name: string, help: string, labelNames: ReadonlyArray<string> = []): Counter {
    return new Counter(this.add(new Family(name, help, "counter", labelNames, undefined)))
  }

  gauge(name: string, help: string, labelNames: ReadonlyArray<string> = []): Gauge {
    return new Gauge(this.add(new Family(name, help, "gauge", labelNames, undefined)))
  }

  /** A gauge whose samples `collect` computes at each scrape. */
  collected(name: string, help: string, labelNames: ReadonlyArray<string>, collect: Collect): void {
    this.add(new Family(name, help, "gauge", labelNames, collect))
  }

  /** The text exposition of every family. */
  async expose(): Promise<string> {
    const parts: Array<string> = []
    for (const f of this.families.values()) parts.push(await f.expose())
    return parts.join("")
  }
}

// ---------------------------------------------------------------------------------------------------
// The mirror metrics

/** The metric names (documented in the README's Metrics section). */
export const Names = {
  partitions: "clustermirror_mirror_partitions",
  lagRecords: "clustermirror_mirror_partition_lag_records",
  lagSeconds: "clustermirror_mirror_partition_lag_seconds",
  fetchedBytes: "clustermirror_mirror_fetched_bytes_total",
  fetchedRecords: "clustermirror_mirror_fetched_records_total",
  syncErrors: "clustermirror_mirror_sync_errors_total",
  retryAttempts: "clustermirror_mirror_retry_attempts_total",
  dataLoss: "clustermirror_mirror_data_loss_total",
  coordinatorLoadSeconds: "clustermirror_mirror_coordinator_load_seconds",
  logRecoveryTruncations: "clustermirror_log_recovery_truncations_total",
  logRecoveryTruncatedBytes: "clustermirror_log_recovery_truncated_bytes_total",
  logRecoveryTruncatedRecords: "clustermirror_log_recovery_truncated_records_total"
} as const

/** A mirror partition this broker leads, as the runtime reports it at scrape time. */
export interface PartitionSample {
  readonly mirror: string
  readonly topic: string
  readonly partition: number
  readonly state: MirrorPartitionState.MirrorPartitionState
  /** Lag in records and seconds; undefined when the source position is not known. */
  readonly lag?: { readonly records: number; readonly seconds: number } | undefined
}

type PartitionCollect = () => Iterable<PartitionSample> | Promise<Iterable<PartitionSample>>

export class MirrorMetrics {
  readonly registry = new Registry()
  private collect: PartitionCollect = () => []
  private readonly mirrors = new Set<string>()
  private readonly fetchedBytes: Counter
  private readonly fetchedRecords: Counter
  private readonly syncErrors: Counter
  private readonly retryAttempts: Counter
  private readonly dataLossEvents: Counter
  private readonly coordinatorLoad: Gauge
  private readonly recoveryTruncations: Counter
  private readonly recoveryTruncatedBytes: Counter
  private readonly recoveryTruncatedRecords: Counter
  /** The samples of the scrape under way: the three partition gauges read one collection. */
  private scrape: Promise<ReadonlyArray<PartitionSample>> | undefined

  constructor() {
    const r = this.registry
    r.collected(
      Names.partitions,
      "Mirror partitions this broker leads, per mirror and actual state.",
      ["mirror", "state"],
      async () => {
        const counts = new Map<string, Map<string, number>>()
        for (const m of this.mirrors) counts.set(m, new Map())
        for (const p of await this.samples()) {
          let byState = counts.get(p.mirror)
          if (byState === undefined) counts.set(p.mirror, (byState = new Map()))
          byState.set(p.state, (byState.get(p.state) ?? 0) + 1)
        }
        const out: Array<Sample> = []
        for (const [mirror, byState] of counts)
          for (const state of MirrorPartitionState.all)
            out.push({ labels: { mirror, state }, value: byState.get(state) ?? 0 })
        return out
      }
    )
    r.collected(
      Names.lagRecords,
      "Records the mirror partition is behind its source: source high watermark minus local high watermark.",
      ["mirror", "topic", "partition"],
      async () => this.lagSamples((l) => l.records)
    )
    r.collected(
      Names.lagSeconds,
      "Seconds since the mirror partition was last caught up with its source; 0 while caught up.",
      ["mirror", "topic", "partition"],
      async () => this.lagSamples((l) => l.seconds)
    )
    this.fetchedBytes = r.counter(Names.fetchedBytes, "Bytes of record batches fetched from the source and appended.", [
      "mirror"
    ])
    this.fetchedRecords = r.counter(
      Names.fetchedRecords,
      "Records fetched from the source and appended (control records included).",
      ["mirror"]
    )
    this.syncErrors = r.counter(Names.syncErrors, "Errors of mirror metadata and data sync, per kind.", [
      "mirror",
      "kind"
    ])
    this.retryAttempts = r.counter(Names.retryAttempts, "Automatic retries of FAILED mirror partitions.", ["mirror"])
    this.dataLossEvents = r.counter(
      Names.dataLoss,
      "Mirror partitions failed because the source deleted records before they were mirrored.",
      ["mirror"]
    )
    this.coordinatorLoad = r.gauge(
      Names.coordinatorLoadSeconds,
      "Seconds the last load of a __mirror_state partition took on this broker (replay on leadership gain).",
      ["partition"]
    )
    this.recoveryTruncations = r.counter(
      Names.logRecoveryTruncations,
      "Partition logs cut while loading because a batch failed validation (torn write, CRC mismatch)."
    )
    this.recoveryTruncatedBytes = r.counter(
      Names.logRecoveryTruncatedBytes,
      "Bytes cut from partition logs while loading, from the first invalid batch on."
    )
    this.recoveryTruncatedRecords = r.counter(
      Names.logRecoveryTruncatedRecords,
      "Records counted in the batch headers cut from partition logs while loading."
    )
    this.recoveryTruncations.touch()
    this.recoveryTruncatedBytes.touch()
    this.recoveryTruncatedRecords.touch()
  }

  /** Sets where the partition gauges come from (called at each scrape). */
  partitions(collect: PartitionCollect): void {
    this.collect = collect
  }

  /** A mirror this broker works for: its counters are exposed from now on, at 0 until something happens. */
  mirrorKnown(mirror: string): void {
    if (this.mirrors.has(mirror)) return
    this.mirrors.add(mirror)
    const labels = { mirror }
    this.fetchedBytes.touch(labels)
    this.fetchedRecords.touch(labels)
    this.retryAttempts.touch(labels)
    this.dataLossEvents.touch(labels)
  }

  /** A sync error of `kind` (short snake_case: topic_configs, group_offsets, data_loss, ...). */
  syncError(mirror: string, kind: string): void {
    this.syncErrors.inc({ mirror, kind })
  }

  retryAttempt(mirror: string): void {
    this.retryAttempts.inc({ mirror })
  }

  fetched(mirror: string, bytes: number, records: number): void {
    this.fetchedBytes.inc({ mirror }, bytes)
    this.fetchedRecords.inc({ mirror }, records)
  }

  /** A partition failed on data loss: counted here and as a `data_loss` sync error. */
  dataLoss(mirror: string): void {
    this.mirrorKnown(mirror)
    this.dataLossEvents.inc({ mirror })
    this.syncError(mirror, "data_loss")
  }

  /** A partition log cut `bytes` (holding `records` by their headers) while loading. */
  logRecoveryTruncated(bytes: number, records: number): void {
    this.recoveryTruncations.inc()
    this.recoveryTruncatedBytes.inc({}, bytes)
    this.recoveryTruncatedRecords.inc({}, records)
  }

  coordinatorLoaded(partition: number, ms: number): void {
    this.coordinatorLoad.set({ partition: String(partition) }, ms / 1000)
  }

  /** The Prometheus text exposition of every metric. */
  async expose(): Promise<string> {
    try {
      return await this.registry.expose()
    } finally {
      this.scrape = undefined
    }
  }

  private samples(): Promise<ReadonlyArray<PartitionSample>> {
    if (this.scrape === undefined) this.scrape = Promise.resolve(this.collect()).then((s) => [...s])
    return this.scrape
  }

  private async lagSamples(
    pick: (lag: { readonly records: number; readonly seconds: number }) => number
  ): Promise<Array<Sample>> {
    const out: Array<Sample> = []
    for (const p of await this.samples())
      if (p.lag !== undefined)
        out.push({ labels: { mirror: p.mirror, topic: p.topic, partition: String(p.partition) }, value: pick(p.lag) })
    return out
  }
}

// ---------------------------------------------------------------------------------------------------
// The endpoint

export interface MetricsServer {
  readonly port: number
  readonly close: () => Promise<void>
}

/** Serves `GET /metrics` (and `/`) with the exposition of `metrics` on `host:port` (0: any free port). */
export const serve = (
  metrics: { readonly expose: () => Promise<string> },
  options: { readonly host: string; readonly port: number; readonly log?: (line: string) => void }
): Promise<MetricsServer> =>
  new Promise((resolve, reject) => {
    const server = http.createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0]
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { allow: "GET, HEAD" }).end()
        return
      }
      if (path !== "/metrics" && path !== "/") {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found: scrape /metrics\n")
        return
      }
      metrics.expose().then(
        (text) => {
          res.writeHead(200, { "content-type": CONTENT_TYPE })
          res.end(req.method === "HEAD" ? undefined : text)
        },
        (e) => {
          options.log?.(`metrics scrape failed: ${e instanceof Error ? e.message : String(e)}`)
          res.writeHead(500, { "content-type": "text/plain" }).end("metrics collection failed\n")
        }
      )
    })
    server.once("error", reject)
    server.listen(options.port, options.host, () => {
      server.off("error", reject)
      const port = (server.address() as AddressInfo).port
      resolve({
        port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            server.closeAllConnections()
          })
      })
    })
  })
