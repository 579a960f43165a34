import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { RecordBatch } from "@clustermirror/protocol"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { CLEANED_SUFFIX, SWAP_STATE, SWAP_SUFFIX } from "../src/internal/Cleaner.js"
import { fileName } from "../src/internal/Segment.js"
import { Log } from "../src/internal/Log.js"
import { fileRoot, type LogFile, memoryRoot, type Volume } from "../src/internal/Volume.js"
import * as LogCleaner from "../src/LogCleaner.js"
import { defaultConfig, type LogConfig, type PartitionLog } from "../src/PartitionLog.js"
import * as StorageError from "../src/StorageError.js"
import { control } from "./Batches.js"

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "cleaner-test-"))
let dirs = 0
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }))

const RETENTION = 1000
const config = (over: Partial<LogConfig> = {}): LogConfig => ({
  ...defaultConfig,
  segmentBytes: 400,
  indexIntervalBytes: 64,
  compact: true,
  minCleanableDirtyRatio: 0.01,
  deleteRetentionMs: RETENTION,
  ...over
})

interface Input {
  readonly key: string
  /** null: a tombstone. */
  readonly value: string | null
}

const keyed = (
  records: ReadonlyArray<Input>,
  opts: { compression?: RecordBatch.CompressionType; timestamp?: number } & Partial<RecordBatch.BuildOptions> = {}
): Buffer =>
  RecordBatch.build({
    timestamp: opts.timestamp ?? 1,
    compression: opts.compression ?? 0,
    ...opts,
    records: records.map((r) => ({
      key: Buffer.from(r.key),
      value: r.value === null ? null : Buffer.from(r.value)
    }))
  })

interface Read {
  readonly offset: number
  readonly key: string | null
  readonly value: string | null
}

/** Every record of the log, in offset order, with the batches they came in. */
const readRecords = (log: PartitionLog): { records: Read[]; batches: Buffer[] } => {
  const records: Read[] = []
  const batches: Buffer[] = []
  let offset = log.logStartOffset
  while (offset < log.logEndOffset) {
    const { records: bytes } = log.read(offset, 1 << 20, { maxOffset: log.logEndOffset })
    if (bytes.length === 0) break
    const { batches: refs } = RecordBatch.split(bytes)
    for (const { position, size } of refs) {
      const b = Buffer.from(bytes.subarray(position, position + size))
      batches.push(b)
      const rs = RecordBatch.records(b)
      if (Either.isLeft(rs)) throw rs.left
      if (!RecordBatch.isControl(b))
        for (const r of rs.right)
          records.push({
            offset: r.offset,
            key: r.key === null ? null : Buffer.from(r.key).toString(),
            value: r.value === null ? null : Buffer.from(r.value).toString()
          })
      offset = RecordBatch.lastOffset(b) + 1
    }
  }
  return { records, batches }
}

/** Runs passes until the log is not due any more. */
const cleanAll = (log: PartitionLog, now: number, mapBytes = 1 << 20): number => {
  const map = LogCleaner.offsetMap(mapBytes)
  let passes = 0
  for (let i = 0; i < 1000; i++) {
    const state = log.cleanableState(now)
    if (state === undefined || !state.due) return passes
    const pass = log.beginClean(now, map)
    if (pass === undefined) return passes
    while (!pass.done) pass.step()
    expect(pass.stats.aborted).toBe(false)
    passes++
  }
  throw new Error("cleaning never ends")
}

const memoryLog = (over: Partial<LogConfig> = {}): { log: Log; volume: Volume; reopen: () => Log } => {
  const volume = memoryRoot().volume("t-0")
  const c = config(over)
  return { log: new Log("t", 0, volume, c), volume, reopen: () => new Log("t", 0, volume, c) }
}

/** Appends `inputs` in batches of `sizes` and rolls past them, so that all of them are cleanable. */
const appendAll = (log: PartitionLog, inputs: ReadonlyArray<Input>, sizes: ReadonlyArray<number>, codec = 0): void => {
  let i = 0
  let s = 0
  while (i < inputs.length) {
    const n = Math.max(1, sizes[s++ % sizes.length]!)
    log.appendAsLeader(keyed(inputs.slice(i, i + n), { compression: codec as RecordBatch.CompressionType }), 0, 0)
    i += n
  }
}

/** Rolls the active segment away by filling a fresh one with an unrelated key (not compared). */
const roll = (log: PartitionLog): void => {
  log.appendAsLeader(keyed([{ key: "~roll", value: "x".repeat(5000) }]), 0, 0)
  log.appendAsLeader(keyed([{ key: "~roll", value: "y" }]), 0, 0)
  log.updateHighWatermark(log.logEndOffset)
}

/** The model: the latest record of each key with its offset; tombstones too while `tombstones`. */
const expected = (inputs: ReadonlyArray<Input>, tombstones: boolean): Read[] => {
  const last = new Map<string, Read>()
  inputs.forEach((r, offset) => {
    last.set(r.key, { offset, key: r.key, value: r.value })
  })
  return [...last.values()].filter((r) => tombstones || r.value !== null).sort((a, b) => a.offset - b.offset)
}

const visible = (log: PartitionLog): Read[] => readRecords(log).records.filter((r) => r.key !== "~roll")

describe("LogCleaner", () => {
  it("property: a cleaned log is the last value per key at its offset; tombstones go after delete.retention.ms", () => {
    const input = fc.array(
      fc.record({ key: fc.constantFrom("a", "b", "c", "d", "e"), value: fc.option(fc.string({ maxLength: 30 })) }),
      { minLength: 1, maxLength: 120 }
    )
    fc.assert(
      fc.property(
        input,
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 5 }),
        fc.constantFrom(0, 1, 3),
        fc.integer({ min: 48, max: 4096 }),
        (inputs, sizes, codec, mapBytes) => {
          const { log, reopen } = memoryLog()
          appendAll(log, inputs, sizes, codec)
          roll(log)
          const before = log.logEndOffset
          cleanAll(log, 10_000, mapBytes)
          expect(visible(log)).toEqual(expected(inputs, true))
          expect(log.logEndOffset).toBe(before)
          // After delete.retention.ms the tombstones are gone, the rest stays where it was.
          cleanAll(log, 10_000 + RETENTION, mapBytes)
          expect(visible(log)).toEqual(expected(inputs, false))
          log.close()
          expect(visible(reopen())).toEqual(expected(inputs, false))
        }
      ),
      { numRuns: 60 }
    )
  })

  it("keeps offsets, base offsets and the codec; cleans in several passes when the map is small", () => {
    const { log } = memoryLog({ segmentBytes: 2000 })
    const inputs: Input[] = []
    for (let i = 0; i < 200; i++) inputs.push({ key: `k${i % 20}`, value: `v${i}` })
    appendAll(log, inputs, [4], 3)
    roll(log)
    const originalBases = new Set(readRecords(log).batches.map((b) => RecordBatch.baseOffset(b)))
    // 3 slots hold 2 keys: 20 keys need many passes.
    const passes = cleanAll(log, 5000, 3 * 24)
    expect(passes).toBeGreaterThan(5)
    expect(visible(log)).toEqual(expected(inputs, true))
    for (const b of readRecords(log).batches) {
      expect(originalBases.has(RecordBatch.baseOffset(b))).toBe(true)
      if (RecordBatch.recordCount(b) > 0 && RecordBatch.baseOffset(b) < 200) expect(RecordBatch.compression(b)).toBe(3)
    }
  })

  it("rewrites only what changed; leaves the active segment and what is above the LSO alone", () => {
    const { log } = memoryLog()
    log.appendAsLeader(keyed([{ key: "a", value: "1" }]), 0, 0)
    log.appendAsLeader(keyed([{ key: "a", value: "2" }]), 0, 0)
    log.updateHighWatermark(log.logEndOffset)
    // Only the active segment: nothing to clean.
    expect(log.cleanableState(0)).toBeUndefined()
    expect(visible(log).map((r) => r.value)).toEqual(["1", "2"])
  })

  it("refuses records without a key on a compacted topic (INVALID_RECORD)", () => {
    const { log } = memoryLog()
    const noKey = RecordBatch.build({ records: [{ key: null, value: Buffer.from("v") }] })
    let error: unknown
    try {
      log.appendAsLeader(noKey, 0, 0)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(StorageError.CorruptRecordError)
    expect((error as StorageError.CorruptRecordError).errorCode).toBe(87)
    expect((error as Error).message).toBe("Compacted topic cannot accept message without key in topic partition t-0.")
    expect(log.logEndOffset).toBe(0)
    // A topic that does not compact takes it.
    const plain = memoryLog({ compact: false }).log
    plain.appendAsLeader(RecordBatch.build({ records: [{ key: null, value: Buffer.from("v") }] }), 0, 0)
    expect(plain.logEndOffset).toBe(1)
  })

  it("removes aborted transactions' records; keeps markers until their data is gone and delete.retention.ms passed", () => {
    const { log, reopen } = memoryLog()
    const txn = (pid: bigint, seq: number, records: Input[]) =>
      keyed(records, { producerId: pid, producerEpoch: 0, baseSequence: seq, isTransactional: true })
    log.appendAsLeader(txn(7n, 0, [{ key: "a", value: "aborted" }]), 0, 0)
    log.appendAsLeader(control(0, { producerId: 7n, producerEpoch: 0 }), 0, 0, "coordinator") // ABORT
    log.appendAsLeader(txn(8n, 0, [{ key: "b", value: "committed" }]), 0, 0)
    log.appendAsLeader(control(1, { producerId: 8n, producerEpoch: 0 }), 0, 0, "coordinator") // COMMIT
    log.appendAsLeader(keyed([{ key: "b", value: "later" }]), 0, 0)
    roll(log)
    const markers = () =>
      readRecords(log)
        .batches.filter((b) => RecordBatch.isControl(b))
        .map((b) => RecordBatch.baseOffset(b))
    cleanAll(log, 100)
    expect(visible(log)).toEqual([{ offset: 4, key: "b", value: "later" }])
    // Both transactions have no data left: their markers stay until the delete horizon.
    expect(markers()).toEqual([1, 3])
    cleanAll(log, 100 + RETENTION)
    expect(markers()).toEqual([])
    expect(visible(log)).toEqual([{ offset: 4, key: "b", value: "later" }])
    log.close()
    expect(visible(reopen())).toEqual([{ offset: 4, key: "b", value: "later" }])
  })

  it("keeps an idempotent producer's last batch, emptied, so its sequence survives a restart", () => {
    const { log, volume } = memoryLog()
    const idem = (seq: number, records: Input[]) =>
      keyed(records, { producerId: 5n, producerEpoch: 1, baseSequence: seq })
    log.appendAsLeader(idem(0, [{ key: "a", value: "1" }]), 0, 0)
    log.appendAsLeader(idem(1, [{ key: "a", value: "2" }]), 0, 0)
    log.appendAsLeader(keyed([{ key: "a", value: "3" }]), 0, 0)
    roll(log)
    cleanAll(log, 100)
    const batches = readRecords(log).batches
    const empty = batches.find((b) => RecordBatch.baseOffset(b) === 1)!
    expect(RecordBatch.recordCount(empty)).toBe(0)
    expect(RecordBatch.producerId(empty)).toBe(5n)
    expect(RecordBatch.baseSequence(empty)).toBe(1)
    expect(batches.some((b) => RecordBatch.baseOffset(b) === 0)).toBe(false)
    // A restart without a clean shutdown rebuilds producer state from the cleaned log.
    const recovered = new Log("t", 0, volume, config())
    expect(() => recovered.appendAsLeader(idem(3, [{ key: "a", value: "4" }]), 0, 0)).toThrow(/sequence 3, expected 2/)
    expect(recovered.appendAsLeader(idem(2, [{ key: "a", value: "4" }]), 0, 0).duplicate).toBe(false)
    // A follower takes the emptied batch as the leader has it.
    const follower = memoryLog().log
    for (const b of batches) follower.appendAsFollower(b, 0)
    expect(follower.logEndOffset).toBe(log.logEndOffset)
  })

  it("stops a pass when retention or truncation changes the log under it", () => {
    const { log } = memoryLog()
    const inputs: Input[] = []
    for (let i = 0; i < 60; i++) inputs.push({ key: `k${i % 3}`, value: `v${i}` })
    appendAll(log, inputs, [3])
    roll(log)
    const pass = log.beginClean(100, LogCleaner.offsetMap(1 << 16))!
    pass.step()
    log.truncateTo(log.logEndOffset - 1)
    pass.step()
    expect(pass.done).toBe(true)
    expect(pass.stats.aborted).toBe(true)
  })

  it("LogCleaner service cleans due logs in slices and counts", async () => {
    const { log } = memoryLog()
    const inputs: Input[] = []
    for (let i = 0; i < 100; i++) inputs.push({ key: `k${i % 4}`, value: `v${i}` })
    appendAll(log, inputs, [2])
    roll(log)
    const cleaner = LogCleaner.make({ ...LogCleaner.defaultConfig, dedupeBufferSize: 1 << 16 }, () => [{ log }], {
      now: () => 50
    })
    expect(await cleaner.cleanNow()).toBe(1)
    expect(visible(log)).toEqual(expected(inputs, true))
    const stats = cleaner.stats()
    expect(stats.passes).toBe(1)
    expect(stats.recordsRetained).toBeLessThan(stats.recordsRead)
    expect(await cleaner.cleanNow()).toBe(0)
  })
})

// ------------------------------------------------------------------------------------------ crash safety

class Crash extends Error {}

/** A volume whose mutations (create, append, truncate, fsync, whole-file write, rename, remove) are counted; once armed, the `k`-th one from then throws. */
const crashing = (
  inner: Volume
): { volume: Volume; count: () => number; arm: (k: number) => void; lastDone: () => string | undefined } => {
  let ops = 0
  let at = Number.POSITIVE_INFINITY
  let done: string | undefined
  const tick = (what = "write"): void => {
    ops++
    if (ops === at) throw new Crash(`crash at operation ${ops}`)
    done = what
  }
  const file = (f: LogFile): LogFile => ({
    get size() {
      return f.size
    },
    append: (b) => {
      tick()
      f.append(b)
    },
    read: (t, o, l, p) => f.read(t, o, l, p),
    truncate: (s) => {
      tick()
      f.truncate(s)
    },
    sync: () => {
      tick()
      f.sync()
    },
    close: () => f.close()
  })
  return {
    volume: {
      open: (name) => {
        if (!inner.exists(name)) tick()
        return file(inner.open(name))
      },
      readFile: (name) => inner.readFile(name),
      writeFileAtomic: (name, b) => {
        tick()
        inner.writeFileAtomic(name, b)
      },
      appendFile: (name, b, sync) => {
        tick()
        inner.appendFile(name, b, sync)
      },
      exists: (name) => inner.exists(name),
      remove: (name) => {
        tick(`remove ${name}`)
        inner.remove(name)
      },
      rename: (from, to) => {
        tick(`rename ${from} to ${to}`)
        inner.rename(from, to)
      },
      list: () => inner.list()
    },
    count: () => ops,
    lastDone: () => done,
    arm: (k) => {
      at = ops + k
    }
  }
}

const SWAP_STEPS = [
  "writing or written .cleaned",
  "renamed to .swap",
  "deleting the old segments",
  "old segments deleted",
  "swap renamed to .log, record left"
] as const
type SwapStep = (typeof SWAP_STEPS)[number]

/**
 * Where in a swap a crash left the files of `volume`, from the files and the last mutation that happened
 * (`done`, e.g. `rename a to b`); undefined when no swap was under way.
 */
const swapStep = (volume: Volume, done: string | undefined): SwapStep | undefined => {
  const names = volume.list()
  if (names.some((n) => n.endsWith(CLEANED_SUFFIX))) return "writing or written .cleaned"
  const record = volume.readFile(SWAP_STATE)
  const swap = names.find((n) => n.endsWith(SWAP_SUFFIX))
  if (swap === undefined) return record === undefined ? undefined : "swap renamed to .log, record left"
  // The record of the swap's range is written before the commit.
  expect(record).toBeDefined()
  const { base, end } = JSON.parse(Buffer.from(record!).toString("utf8")) as { base: number; end: number }
  expect(Number(swap.slice(0, 20))).toBe(base)
  if (done === `rename ${fileName(base, CLEANED_SUFFIX)} to ${swap}`) return "renamed to .swap"
  const left = names.filter((n) => {
    const m = /^(\d{20})\.(log|index|timeindex)$/.exec(n)
    return m !== null && Number(m[1]) >= base && Number(m[1]) < end
  })
  return left.length === 0 ? "old segments deleted" : "deleting the old segments"
}

describe("LogCleaner crash safety", () => {
  const inputs: Input[] = []
  for (let i = 0; i < 40; i++) inputs.push({ key: `k${i % 5}`, value: i % 9 === 8 ? null : `v${i}` })

  for (const layer of ["memory", "files"] as const) {
    it(`${layer}: a crash at any step of a pass loses nothing, and the next load finishes or discards the swap`, () => {
      const rootFor = () => (layer === "memory" ? memoryRoot() : fileRoot(path.join(tmpRoot, `crash${dirs++}`)))
      // Written in segments of 400 bytes, cleaned in groups of up to 1,300: a swap replaces several
      // segments, so the range recorded in `cleaner-swap` decides what recovery removes.
      const cleaning = config({ segmentBytes: 1300 })
      const segmentCount = (v: Volume) => v.list().filter((n) => /^\d{20}\.log$/.test(n)).length
      const prepared = (): { inner: Volume; c: ReturnType<typeof crashing>; log: Log } => {
        const inner = rootFor().volume("t-0")
        const setup = new Log("t", 0, inner, config())
        appendAll(setup, inputs, [2])
        roll(setup)
        setup.close()
        const c = crashing(inner)
        return { inner, c, log: new Log("t", 0, c.volume, cleaning) }
      }
      // Count the mutations of a full pass first.
      const probe = prepared()
      const segmentsBefore = segmentCount(probe.inner)
      const start = probe.c.count()
      cleanAll(probe.log, 100)
      const total = probe.c.count() - start
      expect(segmentCount(probe.inner)).toBeLessThan(segmentsBefore)
      expect(total).toBeGreaterThan(10)
      const end = probe.log.logEndOffset
      let crashes = 0
      const steps = new Map<SwapStep, number>()
      for (let k = 1; k <= total; k++) {
        const { inner, c, log } = prepared()
        c.arm(k)
        try {
          cleanAll(log, 100)
        } catch (e) {
          if (!(e instanceof Crash)) throw e
          crashes++
        }
        const step = swapStep(inner, c.lastDone())
        if (step !== undefined) steps.set(step, (steps.get(step) ?? 0) + 1)
        // Restart: recovery finishes a committed swap or discards an uncommitted one.
        const reopened = new Log("t", 0, inner, cleaning)
        const names = inner.list()
        expect(names.filter((n) => n.endsWith(CLEANED_SUFFIX) || n.endsWith(SWAP_SUFFIX) || n === SWAP_STATE)).toEqual(
          []
        )
        expect(reopened.logEndOffset).toBe(end)
        const { records, batches } = readRecords(reopened)
        // Offsets strictly increase, across batches and within them: no record twice, none out of place.
        const bases = batches.map((b) => RecordBatch.baseOffset(b))
        for (let i = 1; i < bases.length; i++) expect(bases[i]!).toBeGreaterThan(bases[i - 1]!)
        for (let i = 1; i < records.length; i++) expect(records[i]!.offset).toBeGreaterThan(records[i - 1]!.offset)
        // Nothing lost or changed: every record is one that was written at its offset, and every key's
        // latest record is there.
        const seen = records.filter((r) => r.key !== "~roll")
        for (const r of seen) expect(inputs[r.offset]).toEqual({ key: r.key, value: r.value })
        for (const r of expected(inputs, true)) expect(seen).toContainEqual(r)
        // Cleaning after the restart reaches the result of an uninterrupted pass.
        cleanAll(reopened, 100)
        expect(visible(reopened)).toEqual(expected(inputs, true))
        reopened.close()
      }
      expect(crashes).toBe(total)
      // Every step of a swap was crashed at, each more than once over the pass's groups.
      for (const step of SWAP_STEPS) expect(steps.get(step) ?? 0, step).toBeGreaterThan(1)
    }, 240_000)
  }

  it("stops at once while its workers wait out log.cleaner.backoff.ms, and starts again", async () => {
    // Nothing to clean: every worker sleeps the backoff (an hour here); stop must not wait for it.
    const cleaner = LogCleaner.make({ ...LogCleaner.defaultConfig, threads: 2, backoffMs: 3_600_000 }, () => [])
    cleaner.start()
    await new Promise((resolve) => setTimeout(resolve, 20))
    await cleaner.stop()
    cleaner.start()
    await cleaner.stop()
    expect(cleaner.stats().passes).toBe(0)
  }, 10_000)
})
