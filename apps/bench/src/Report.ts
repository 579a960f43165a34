/**
 * Bench results: rows of one measured setup each, the printed table and the saved JSON. Sizes are in
 * MB of 2^20 bytes. It formats and saves; it never judges a number.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname } from "node:path"

const MB = 1024 * 1024

export interface Row {
  readonly setup: string
  readonly bytes: number
  readonly seconds: number
  readonly records: number
  /** CPU seconds of the process under test during this phase. */
  readonly cpuSeconds: number
  /** CPU seconds of the bench process itself (the load generator) during this phase. */
  readonly loadCpuSeconds: number
  readonly mbPerSec: number
  readonly recordsPerSec: number
  readonly mbPerCpuSecond: number
  /** MB/s relative to the baseline row of the same kind (1 for the baseline itself). */
  readonly vsBaseline?: number
}

export interface Result {
  readonly suite: string
  readonly date: string
  readonly options: Readonly<Record<string, unknown>>
  readonly workload: Readonly<Record<string, unknown>>
  readonly rows: ReadonlyArray<Row>
  readonly serverPeakRssMb: number
  readonly baselinePeakRssMb: number
  readonly serverExit: unknown
  /** When the measured phases ran against the server, on the monotonic clock in microseconds. */
  readonly serverWindows: ReadonlyArray<{ readonly startUs: number; readonly endUs: number }>
}

/** One timed phase: its result, wall time, and CPU of the process under test and of the load generator. */
export interface Measured<A> {
  readonly value: A
  readonly seconds: number
  readonly cpuSeconds: number
  readonly loadCpuSeconds: number
}

export const row = (setup: string, bytes: number, records: number, m: Measured<unknown>): Row => ({
  setup,
  bytes,
  seconds: m.seconds,
  records,
  cpuSeconds: m.cpuSeconds,
  loadCpuSeconds: m.loadCpuSeconds,
  mbPerSec: bytes / MB / m.seconds,
  recordsPerSec: records / m.seconds,
  mbPerCpuSecond: m.cpuSeconds > 0 ? bytes / MB / m.cpuSeconds : Number.POSITIVE_INFINITY
})

/** Adds `vsBaseline` to rows whose setup starts with a prefix, relative to the named baseline row. */
export const withBaselineRatios = (
  rows: ReadonlyArray<Row>,
  pairs: ReadonlyArray<readonly [prefix: string, baseline: string]>
): Row[] =>
  rows.map((r) => {
    for (const [prefix, name] of pairs) {
      const base = rows.find((b) => b.setup === name)
      if (base !== undefined && (r.setup === name || r.setup.startsWith(prefix)))
        return { ...r, vsBaseline: r.mbPerSec / base.mbPerSec }
    }
    return r
  })

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

export const table = (rows: ReadonlyArray<Row>): string => {
  const header = ["setup", "MB", "s", "MB/s", "records/s", "vs baseline", "CPU s", "MB/CPU-s", "load CPU s"]
  const body = rows.map((r) => [
    r.setup,
    fmt(r.bytes / MB),
    fmt(r.seconds, 2),
    fmt(r.mbPerSec),
    fmt(r.recordsPerSec, 0),
    r.vsBaseline === undefined ? "" : `${fmt(r.vsBaseline, 2)}x`,
    fmt(r.cpuSeconds, 2),
    fmt(r.mbPerCpuSecond),
    fmt(r.loadCpuSeconds, 2)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

export const save = (file: string, result: Result): void => {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, `${JSON.stringify(result, (_, v) => (typeof v === "bigint" ? v.toString() : v), 2)}\n`)
}
