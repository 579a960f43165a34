/**
 * What the demo shows while it runs: the per-partition table of a mirror (state, source offset,
 * destination offset, lag), a one-line summary per tick, the verification line and the final report.
 *
 * The formatting is pure (lines of text from values); `LiveView` only decides where the lines go: on
 * a terminal it redraws the table in place with ANSI cursor movement, elsewhere it appends one summary
 * line per tick. It never talks to a cluster.
 */

/** One mirror partition as the view shows it; offsets and lag are -1 when unknown. */
export interface PartitionRow {
  readonly topic: string
  readonly partition: number
  readonly state: string
  readonly sourceOffset: number
  readonly destinationOffset: number
  readonly lag: number
}

/** Everything one tick shows. */
export interface Tick {
  /** Seconds since mirroring started. */
  readonly elapsedSeconds: number
  /** Records the source producer had acknowledged. */
  readonly produced: number
  readonly rows: ReadonlyArray<PartitionRow>
  /** Why the mirror could not be described this tick, if it could not. */
  readonly error: string | null
}

/** `12345` → `12,345`; negative values (unknown) → `-`. */
export const count = (n: number): string => (n < 0 ? "-" : Math.round(n).toLocaleString("en-US"))

/** Seconds with one decimal. */
export const seconds = (s: number): string => `${s.toFixed(1)} s`

/** Bytes as decimal megabytes with one decimal. */
export const megabytes = (bytes: number): string => `${(bytes / 1_000_000).toFixed(1)} MB`

/** The sum of the known lags (-1 entries ignored). */
export const totalLag = (rows: ReadonlyArray<PartitionRow>): number => rows.reduce((n, r) => n + Math.max(0, r.lag), 0)

/** How many partitions are in each state, states in order of first appearance: `MIRRORING 10, FAILED 2`. */
export const stateCounts = (rows: ReadonlyArray<PartitionRow>): string => {
  const counts = new Map<string, number>()
  for (const r of rows) counts.set(r.state, (counts.get(r.state) ?? 0) + 1)
  return [...counts].map(([state, n]) => `${state} ${n}`).join(", ")
}

const pad = (s: string, width: number, right: boolean): string => (right ? s.padStart(width) : s.padEnd(width))

/** Rows of cells as aligned columns (numbers right-aligned), two spaces apart. */
export const columns = (
  header: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  rightAligned: ReadonlyArray<boolean>
): ReadonlyArray<string> => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  return [header, ...rows].map((cells) =>
    cells
      .map((c, i) => pad(c, widths[i]!, rightAligned[i] === true))
      .join("  ")
      .trimEnd()
  )
}

/** The one-line summary of a tick. */
export const summaryLine = (tick: Tick): string => {
  const head = `[${tick.elapsedSeconds.toFixed(1).padStart(5)} s] produced ${count(tick.produced)}`
  if (tick.error !== null) return `${head}  mirror: ${tick.error}`
  if (tick.rows.length === 0) return `${head}  mirror: no partitions yet`
  const known = tick.rows.filter((r) => r.destinationOffset >= 0)
  // Offsets are known only while partitions mirror; a stopped mirror shows its states alone.
  const offsets =
    known.length === 0
      ? ""
      : `  mirrored ${count(known.reduce((n, r) => n + r.destinationOffset, 0))}  lag ${count(totalLag(known))}`
  return `${head}${offsets}  ${stateCounts(tick.rows)}`
}

/** The table of a tick: one line per partition, then the summary line. */
export const table = (tick: Tick): ReadonlyArray<string> => [
  ...columns(
    ["PARTITION", "STATE", "SOURCE", "DESTINATION", "LAG"],
    tick.rows.map((r) => [
      `${r.topic}-${r.partition}`,
      r.state,
      count(r.sourceOffset),
      count(r.destinationOffset),
      count(r.lag)
    ]),
    [false, false, true, true, true]
  ),
  summaryLine(tick)
]

/** The line the demo prints once the clusters compared equal. */
export const verifiedLine = (partitions: number, batches: number, records: number): string =>
  `offsets and batch bytes identical: ${count(partitions)} partitions, ${count(batches)} batches, ${count(records)} records`

/** What the final report shows. */
export interface Report {
  readonly topics: number
  readonly partitions: number
  readonly recordsMirrored: number
  readonly bytesMirrored: number
  /** From StartMirrorTopics until every partition mirrored with little lag. */
  readonly catchUpMs: number
  /** From StartMirrorTopics until every partition had lag 0 after the producer stopped. */
  readonly mirroringMs: number
  /** From StopMirrorTopics until every partition was STOPPED. */
  readonly failoverMs: number
  /** The error name a produce to a mirrored topic got before the stop. */
  readonly refusedBeforeStop: string
  /** Records produced to the destination after the stop. */
  readonly producedAfterStop: number
}

/** Bytes per second as MB/s; 0 when no time passed. */
export const throughput = (bytes: number, ms: number): string =>
  `${ms <= 0 ? "0.0" : (bytes / 1_000_000 / (ms / 1000)).toFixed(1)} MB/s`

/** The final report, one fact per line. */
export const report = (r: Report): ReadonlyArray<string> => {
  const facts: ReadonlyArray<readonly [string, string]> = [
    ["partitions", `${count(r.partitions)} (${count(r.topics)} topics)`],
    ["records mirrored", count(r.recordsMirrored)],
    ["data mirrored", `${megabytes(r.bytesMirrored)} (record batches as produced)`],
    ["time to catch up", seconds(r.catchUpMs / 1000)],
    [
      "throughput",
      `${throughput(r.bytesMirrored, r.mirroringMs)} (data mirrored / ${seconds(r.mirroringMs / 1000)} from start to lag 0)`
    ],
    ["failover", `${seconds(r.failoverMs / 1000)} (StopMirrorTopics until every partition STOPPED)`],
    [
      "writes",
      `refused while mirroring (${r.refusedBeforeStop}), ${count(r.producedAfterStop)} records accepted after the stop`
    ]
  ]
  const width = Math.max(...facts.map(([k]) => k.length))
  return ["report", ...facts.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)]
}

/** Where the view writes: stdout, or a test double. */
export interface Output {
  readonly isTTY: boolean
  readonly write: (text: string) => void
}

/** ANSI: move the cursor up `n` lines to the start of the line, then clear to the end of the screen. */
export const redraw = (n: number): string => (n > 0 ? `\x1b[${n}F\x1b[J` : "\x1b[J")

/** Shows ticks: redrawn in place on a terminal, one summary line per tick elsewhere. */
export class LiveView {
  private drawn = 0

  constructor(private readonly out: Output) {}

  show(tick: Tick): void {
    if (!this.out.isTTY) {
      this.out.write(`${summaryLine(tick)}\n`)
      return
    }
    const lines = table(tick)
    this.out.write(`${redraw(this.drawn)}${lines.join("\n")}\n`)
    this.drawn = lines.length
  }

  /** Ends the live part: the next output goes below the last table. */
  done(): void {
    this.drawn = 0
  }
}
