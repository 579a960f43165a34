/**
 * The `cleaner` suite: log compaction by our storage package's `LogCleaner` over a compacted partition
 * log with many updates to few keys (default 200 MB of 1 KB values over 10,000 keys, uncompressed batches
 * of 32 records, 16 MB segments), against a baseline in the same process: a plain read + write + fsync
 * copy of the same segment files, which is what cleaning costs in I/O alone. Reported: MB/s of the
 * cleaned section (its segment bytes before cleaning), CPU seconds per MB (`process.cpuUsage`, user +
 * system, every thread of the process), bytes read and written, records read and retained.
 *
 * The log is built once and copied (untimed) before every round, so each round cleans the same input.
 * After each cleaning it checks that the log holds exactly the last record of every key of the cleaned
 * section plus every record after it; it never judges a number.
 */
import { Buffer } from "node:buffer"
import {
  closeSync,
  cpSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Either } from "effect"
import { RecordBatch } from "@clustermirror/protocol"
import { LogCleaner, type PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import * as Replication from "./Replication.js"

const MB = 1024 * 1024
const TOPIC = "bench-compacted"
const COPY_CHUNK = 1024 * 1024
const SEGMENT_FILE = /^\d{20}\.log$/

export interface Options {
  /** Record value bytes written to the log. */
  readonly totalBytes: number
  readonly recordSize: number
  readonly keys: number
  readonly recordsPerBatch: number
  readonly segmentBytes: number
  /** log.cleaner.dedupe.buffer.size */
  readonly dedupeBufferSize: number
  /** Rounds of baseline copy then cleaning, each on a fresh copy of the built log. */
  readonly rounds: number
}

export const defaults: Omit<Options, "totalBytes"> = {
  recordSize: 1024,
  keys: 10_000,
  recordsPerBatch: 32,
  segmentBytes: 16 * MB,
  dedupeBufferSize: LogCleaner.defaultConfig.dedupeBufferSize,
  rounds: 3
}

export const DEFAULT_MB = 200

/** One timed phase over the cleaned section. */
export interface Phase {
  /** Segment bytes of the cleaned section before cleaning. */
  readonly sectionBytes: number
  readonly seconds: number
  readonly cpuSeconds: number
  readonly bytesRead: number
  readonly bytesWritten: number
}

export interface Figures {
  readonly mbPerSec: number
  readonly cpuSecondsPerMb: number
}

/** MB/s of the section and CPU seconds per MB of it. */
export const figures = (p: Phase): Figures => ({
  mbPerSec: p.seconds > 0 ? p.sectionBytes / MB / p.seconds : Number.POSITIVE_INFINITY,
  cpuSecondsPerMb: p.sectionBytes > 0 ? p.cpuSeconds / (p.sectionBytes / MB) : Number.NaN
})

export interface Round {
  readonly round: number
  readonly copy: Phase
  readonly clean: Phase & {
    readonly recordsRead: number
    readonly recordsRetained: number
    readonly segmentsCleaned: number
    readonly passes: number
  }
}

export interface Comparison {
  readonly copy: Figures
  readonly clean: Figures
  /** Cleaner MB/s over copy MB/s. */
  readonly speedVsCopy: number
  /** Cleaner CPU per MB over copy CPU per MB. */
  readonly cpuVsCopy: number
  /** Cleaner CPU seconds per MB beyond the copy's. */
  readonly extraCpuSecondsPerMb: number
}

const medianBy = <A>(xs: ReadonlyArray<A>, f: (a: A) => number): A => {
  const sorted = [...xs].sort((a, b) => f(a) - f(b))
  const m = sorted[Math.floor((sorted.length - 1) / 2)]
  if (m === undefined) throw new Error("no rounds")
  return m
}

/** The medians (by MB/s) of the copy and of the cleaning over the rounds, and their ratios. */
export const compare = (rounds: ReadonlyArray<Round>): Comparison => {
  const copy = figures(medianBy(rounds, (r) => figures(r.copy).mbPerSec).copy)
  const clean = figures(medianBy(rounds, (r) => figures(r.clean).mbPerSec).clean)
  return {
    copy,
    clean,
    speedVsCopy: clean.mbPerSec / copy.mbPerSec,
    cpuVsCopy: clean.cpuSecondsPerMb / copy.cpuSecondsPerMb,
    extraCpuSecondsPerMb: clean.cpuSecondsPerMb - copy.cpuSecondsPerMb
  }
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

export const table = (rounds: ReadonlyArray<Round>, c: Comparison): string => {
  const header = ["phase", "section MB", "MB/s", "CPU-s/MB", "vs copy MB/s", "vs copy CPU/MB", "MB read", "MB written"]
  const row = (name: string, p: Phase, f: Figures, speed: number, cpu: number): string[] => [
    name,
    fmt(p.sectionBytes / MB),
    fmt(f.mbPerSec),
    fmt(f.cpuSecondsPerMb, 4),
    `${fmt(speed, 2)}x`,
    `${fmt(cpu, 2)}x`,
    fmt(p.bytesRead / MB),
    fmt(p.bytesWritten / MB)
  ]
  const copy = medianBy(rounds, (r) => figures(r.copy).mbPerSec).copy
  const clean = medianBy(rounds, (r) => figures(r.clean).mbPerSec).clean
  const body = [
    row("read+write copy", copy, c.copy, 1, 1),
    row("log cleaner", clean, c.clean, c.speedVsCopy, c.cpuVsCopy)
  ]
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

export interface Result {
  readonly suite: "cleaner"
  readonly date: string
  readonly options: Readonly<Record<string, unknown>>
  readonly workload: Readonly<Record<string, unknown>>
  readonly rounds: ReadonlyArray<Round>
  readonly comparison: Comparison
}

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const logConfig = (o: Options): Partial<PartitionLog.LogConfig> => ({
  compact: true,
  segmentBytes: o.segmentBytes,
  minCleanableDirtyRatio: 0.5,
  minCompactionLagMs: 0
})

/** A deterministic key order (xorshift), so that every key is updated about equally but not in turn. */
const keyPicker = (keys: number): (() => number) => {
  let x = 0x9e3779b9
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) % keys
  }
}

const keyOf = (k: number): Buffer => Buffer.from(`key-${String(k).padStart(6, "0")}`)

/** Builds the log under `dataDir` and closes it; returns the key index of every offset. */
const build = (o: Options, dataDir: string, now: number): Int32Array => {
  const store = PartitionLogStore.makeFileStore(dataDir)
  const values = Replication.payloadLines(Replication.PAYLOAD_LINES, o.recordSize).map((l) => Buffer.from(l))
  const keys = Array.from({ length: o.keys }, (_, k) => keyOf(k))
  const pick = keyPicker(o.keys)
  const records = Math.max(o.keys, Math.round(o.totalBytes / o.recordSize))
  const keyAt = new Int32Array(records)
  try {
    const l = store.open(TOPIC, 0, logConfig(o))
    let written = 0
    while (written < records) {
      const n = Math.min(o.recordsPerBatch, records - written)
      const batchKeys = Array.from({ length: n }, (_, i) => (written + i < o.keys ? written + i : pick()))
      const batch = RecordBatch.build({
        timestamp: now,
        records: batchKeys.map((k, i) => ({ key: keys[k]!, value: values[(written + i) % values.length]! }))
      })
      const { firstOffset } = l.appendAsLeader(batch, 0, now)
      batchKeys.forEach((k, i) => {
        keyAt[firstOffset + i] = k
      })
      written += n
    }
    l.updateHighWatermark(l.logEndOffset)
    l.checkpointHighWatermark()
  } finally {
    store.closeAll()
  }
  return keyAt
}

const cpuNow = (): number => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1e6
}

/** The segment files of the section the cleaner will clean: every segment below `end`, by base offset. */
const sectionFiles = (dir: string, end: number): ReadonlyArray<string> =>
  readdirSync(dir)
    .filter((f) => SEGMENT_FILE.test(f) && Number(f.slice(0, 20)) < end)
    .sort()
    .map((f) => join(dir, f))

/** Reads every file in 1 MB chunks and writes it to a copy, fsynced, as the cleaner writes its output. */
const copyFiles = (files: ReadonlyArray<string>, outDir: string): Phase => {
  mkdirSync(outDir, { recursive: true })
  const buf = Buffer.allocUnsafe(COPY_CHUNK)
  let bytes = 0
  const cpu0 = cpuNow()
  const t0 = process.hrtime.bigint()
  for (const file of files) {
    const input = openSync(file, "r")
    const output = openSync(join(outDir, `${file.slice(file.lastIndexOf("/") + 1)}.copy`), "w")
    try {
      for (;;) {
        const n = readSync(input, buf, 0, COPY_CHUNK, null)
        if (n === 0) break
        writeSync(output, buf, 0, n)
        bytes += n
      }
      fsyncSync(output)
    } finally {
      closeSync(input)
      closeSync(output)
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9
  return { sectionBytes: bytes, seconds, cpuSeconds: cpuNow() - cpu0, bytesRead: bytes, bytesWritten: bytes }
}

/** Every data record of the log: offset and key. */
const readAll = (l: PartitionLog.PartitionLog): Array<{ offset: number; key: string }> => {
  const out: Array<{ offset: number; key: string }> = []
  let offset = l.logStartOffset
  while (offset < l.logEndOffset) {
    const { records: bytes } = l.read(offset, 4 * MB, { maxOffset: l.logEndOffset })
    if (bytes.length === 0) break
    for (const { position, size } of RecordBatch.split(bytes).batches) {
      const b = bytes.subarray(position, position + size)
      const rs = RecordBatch.records(b)
      if (Either.isLeft(rs)) throw new Error(`corrupt batch after cleaning at ${RecordBatch.baseOffset(b)}`)
      for (const r of rs.right) out.push({ offset: r.offset, key: r.key === null ? "" : Buffer.from(r.key).toString() })
      offset = RecordBatch.lastOffset(b) + 1
    }
  }
  return out
}

/**
 * The cleaned log holds, below `end` (the cleaned section), the last record of each key there, and every
 * record from `end` on.
 */
const verify = (l: PartitionLog.PartitionLog, keyAt: Int32Array, end: number, total: number): void => {
  const last = new Map<string, number>()
  for (let offset = 0; offset < end; offset++) last.set(keyOf(keyAt[offset]!).toString(), offset)
  const records = readAll(l)
  const below = records.filter((r) => r.offset < end)
  const wrong = below.find((r) => last.get(r.key) !== r.offset)
  if (wrong !== undefined) throw new Error(`record ${wrong.offset} of ${wrong.key} survived the cleaning`)
  const expectedBelow = [...last.values()].filter((x) => x < end).length
  if (below.length !== expectedBelow)
    throw new Error(`${below.length} records below ${end} after cleaning, expected ${expectedBelow}`)
  if (records.length - below.length !== total - end)
    throw new Error(`${records.length - below.length} records from ${end} on after cleaning, expected ${total - end}`)
}

const cleanRound = async (
  o: Options,
  built: string,
  scratch: string,
  round: number,
  now: number,
  keyAt: Int32Array
): Promise<Round> => {
  const dataDir = join(scratch, `round-${round}`)
  cpSync(built, dataDir, { recursive: true })
  const partitionDir = join(dataDir, `${TOPIC}-0`)
  const store = PartitionLogStore.makeFileStore(dataDir)
  try {
    const l = store.open(TOPIC, 0, logConfig(o))
    const state = l.cleanableState(now)
    if (state === undefined || !state.due)
      throw new Error(`the built log is not due for cleaning: ${JSON.stringify(state)}`)
    const end = state.firstUncleanableOffset
    const files = sectionFiles(partitionDir, end)
    const sectionBytes = files.reduce((a, f) => a + statSync(f).size, 0)
    const copy = copyFiles(files, join(scratch, `copy-${round}`))
    rmSync(join(scratch, `copy-${round}`), { recursive: true, force: true })

    const cleaner = LogCleaner.make(
      { ...LogCleaner.defaultConfig, dedupeBufferSize: o.dedupeBufferSize },
      () => [{ log: l }],
      {
        now: () => now
      }
    )
    const cpu0 = cpuNow()
    const t0 = process.hrtime.bigint()
    const passes = await cleaner.cleanNow(now)
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9
    const cpuSeconds = cpuNow() - cpu0
    const s = cleaner.stats()
    if (s.failures > 0 || passes === 0) throw new Error(`the cleaner failed: ${JSON.stringify(s)}`)
    verify(l, keyAt, end, l.logEndOffset)
    const clean = {
      sectionBytes,
      seconds,
      cpuSeconds,
      bytesRead: s.bytesRead,
      bytesWritten: s.bytesWritten,
      recordsRead: s.recordsRead,
      recordsRetained: s.recordsRetained,
      segmentsCleaned: s.segmentsCleaned,
      passes
    }
    log(
      `round ${round + 1}: copy ${fmt(figures(copy).mbPerSec)} MB/s ${fmt(figures(copy).cpuSecondsPerMb, 4)} CPU-s/MB; ` +
        `cleaner ${fmt(figures(clean).mbPerSec)} MB/s ${fmt(figures(clean).cpuSecondsPerMb, 4)} CPU-s/MB, ` +
        `${s.recordsRead} records read, ${s.recordsRetained} retained, ${fmt(s.bytesWritten / MB)} MB written`
    )
    return { round, copy, clean }
  } finally {
    store.closeAll()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** Runs the suite, prints its table and saves `cleaner.json` in `resultsDir`. */
export const run = async (o: Options, resultsDir: string): Promise<Result> => {
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-cleaner-"))
  try {
    const now = Date.now()
    const built = join(scratch, "built")
    const t0 = Date.now()
    const keyAt = build(o, built, now)
    const files = readdirSync(join(built, `${TOPIC}-0`)).filter((f) => SEGMENT_FILE.test(f))
    const logBytes = files.reduce((a, f) => a + statSync(join(built, `${TOPIC}-0`, f)).size, 0)
    log(
      `workload: ${fmt(o.totalBytes / MB, 0)} MB of ${o.recordSize} B values over ${o.keys} keys in uncompressed batches of ` +
        `${o.recordsPerBatch}, ${fmt(logBytes / MB)} MB of log in ${files.length} segments of ${fmt(o.segmentBytes / MB, 0)} MB ` +
        `(built in ${fmt((Date.now() - t0) / 1000)} s)`
    )
    const rounds: Round[] = []
    for (let round = 0; round < o.rounds; round++) rounds.push(await cleanRound(o, built, scratch, round, now, keyAt))
    const comparison = compare(rounds)
    const result: Result = {
      suite: "cleaner",
      date: new Date().toISOString(),
      options: { ...o },
      workload: { logBytes, segments: files.length, keys: o.keys },
      rounds,
      comparison
    }
    log(`\ncleaner (${fmt(logBytes / MB, 0)} MB log, ${o.keys} keys; medians of ${o.rounds} rounds)`)
    log(table(rounds, comparison))
    log(
      `the cleaner costs ${fmt(comparison.extraCpuSecondsPerMb, 4)} CPU-s per MB beyond the copy ` +
        `(${fmt(comparison.cpuVsCopy, 2)}x the copy's CPU, ${fmt(comparison.speedVsCopy, 2)}x its speed)`
    )
    const file = join(resultsDir, "cleaner.json")
    mkdirSync(resultsDir, { recursive: true })
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
    log(`saved ${file}`)
    return result
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
