import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { RecordBatch } from "@clustermirror/protocol"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import {
  describeTruncation,
  LATEST_TIMESTAMP,
  type LogConfig,
  type PartitionLog,
  type RecoveryTruncation
} from "../src/PartitionLog.js"
import * as PartitionLogStore from "../src/PartitionLogStore.js"
import * as StorageError from "../src/StorageError.js"
import * as StorageTest from "../src/StorageTest.js"
import { baseOffsets, batch, control } from "./Batches.js"
import { contract, readAll } from "./PartitionLog.contract.js"

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "storage-test-"))
let dirs = 0
const tempDir = (): string => path.join(tmpRoot, `d${dirs++}`)
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }))

contract("memory", () => PartitionLogStore.makeMemoryStore())
contract("files", () => PartitionLogStore.makeFileStore(tempDir()))

const segmentFiles = (dir: string, suffix: string): string[] =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(suffix))
    .sort()

describe("PartitionLog on files", () => {
  const config: Partial<LogConfig> = { segmentBytes: 600, indexIntervalBytes: 64 }
  const fill = (log: PartitionLog, n: number): void => {
    for (let i = 0; i < n; i++)
      log.appendAsLeader(batch({ count: 1 + (i % 3), timestamp: 1000 + i }), 1 + Math.floor(i / 10), 0)
  }

  it("lays out Kafka-like files and rolls segments on size", () => {
    const dataDir = tempDir()
    const store = PartitionLogStore.makeFileStore(dataDir)
    const log = store.open("orders", 2, config, "AAAAAAAAAAAAAAAAAAAAAQ")
    fill(log, 30)
    store.closeAll()
    const dir = path.join(dataDir, "orders-2")
    const logs = segmentFiles(dir, ".log")
    expect(logs.length).toBeGreaterThan(3)
    expect(logs[0]).toBe("00000000000000000000.log")
    expect(segmentFiles(dir, ".index").length).toBe(logs.length)
    expect(segmentFiles(dir, ".timeindex").length).toBe(logs.length)
    for (const f of logs) expect(fs.statSync(path.join(dir, f)).size).toBeLessThanOrEqual(600)
    const second = Number(logs[1]!.slice(0, 20))
    expect(second).toBeGreaterThan(0)
    expect(fs.readFileSync(path.join(dir, "partition.metadata"), "utf8")).toBe(
      "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    )
    expect(fs.readFileSync(path.join(dir, "leader-epoch-checkpoint"), "utf8")).toBe("0\n3\n1 0\n2 19\n3 39\n")
    expect(store.list()).toEqual([{ topic: "orders", partition: 2, topicId: "AAAAAAAAAAAAAAAAAAAAAQ" }])
  })

  it("recovers from a torn tail: the partial batch goes, every earlier batch stays, appends continue", () => {
    for (const damage of ["truncate", "garbage", "bitflip"] as const) {
      const dataDir = tempDir()
      const first = PartitionLogStore.makeFileStore(dataDir)
      const log = first.open("t", 0, config)
      fill(log, 20)
      const before = readAll(log)
      const lastSize = batch({ count: 3 }).length
      log.appendAsLeader(batch({ count: 3 }), 9, 0)
      const leo = log.logEndOffset
      // Crash: no close. Damage the last batch of the active segment.
      const dir = path.join(dataDir, "t-0")
      const active = path.join(dir, segmentFiles(dir, ".log").at(-1)!)
      const size = fs.statSync(active).size
      if (damage === "truncate") fs.truncateSync(active, size - 5)
      else if (damage === "garbage") {
        fs.truncateSync(active, size - lastSize)
        fs.appendFileSync(active, Buffer.alloc(30, 0xab))
      } else {
        const bytes = fs.readFileSync(active)
        bytes[bytes.length - 3] ^= 0x55
        fs.writeFileSync(active, bytes)
      }
      const reopened = PartitionLogStore.makeFileStore(dataDir).open("t", 0, config)
      expect(reopened.logEndOffset).toBe(leo - 3)
      expect(Buffer.compare(readAll(reopened), before)).toBe(0)
      expect(reopened.latestEpoch()).toBe(2)
      expect(reopened.appendAsLeader(batch(), 4, 0).firstOffset).toBe(leo - 3)
      expect(fs.statSync(active).size).toBe(size - lastSize + batch().length)
    }
  })

  it("rebuilds deleted or partially written index files", () => {
    const dataDir = tempDir()
    const store = PartitionLogStore.makeFileStore(dataDir)
    fill(store.open("t", 0, config), 30)
    const expected = readAll(store.get("t", 0)!)
    const probe = (log: PartitionLog): number[] =>
      [0, 5, 17, 33, 44].flatMap((o) => baseOffsets(log.read(o, 1 << 20).records).slice(0, 1))
    const baseline = probe(store.get("t", 0)!)
    store.closeAll()
    const dir = path.join(dataDir, "t-0")
    const indexes = segmentFiles(dir, ".index")
    expect(fs.statSync(path.join(dir, indexes[0]!)).size).toBeGreaterThan(0)
    fs.rmSync(path.join(dir, indexes[0]!))
    fs.rmSync(path.join(dir, segmentFiles(dir, ".timeindex")[1]!))
    fs.appendFileSync(path.join(dir, indexes[2]!), Buffer.from([1, 2, 3]))
    fs.writeFileSync(path.join(dir, indexes[3]!), Buffer.from([0, 0, 0, 1, 0, 0, 0, 7]))
    const again = PartitionLogStore.makeFileStore(dataDir).open("t", 0, config)
    expect(Buffer.compare(readAll(again), expected)).toBe(0)
    expect(probe(again)).toEqual(baseline)
    expect(again.offsetForTimestamp(1015)?.timestamp).toBe(1015)
    again.close()
    expect(fs.statSync(path.join(dir, indexes[0]!)).size).toBeGreaterThan(0)
    expect(fs.statSync(path.join(dir, indexes[2]!)).size % 8).toBe(0)
  })

  it("flushes per flush.messages and recovers only after the recovery point", () => {
    const dataDir = tempDir()
    const log = PartitionLogStore.makeFileStore(dataDir).open("t", 0, { ...config, flushMessages: 5 })
    fill(log, 12)
    const state = JSON.parse(fs.readFileSync(path.join(dataDir, "t-0", "log-state-checkpoint"), "utf8"))
    expect(state.recoveryPoint).toBeGreaterThan(0)
    expect(state.recoveryPoint).toBeLessThanOrEqual(log.logEndOffset)
  })

  it.effect("layer closes every log when released", () =>
    Effect.gen(function* () {
      const dataDir = tempDir()
      yield* Effect.scoped(
        Effect.gen(function* () {
          const store = yield* PartitionLogStore.PartitionLogStore
          store.open("t", 0).appendAsLeader(batch(), 0, 0)
        }).pipe(Effect.provide(PartitionLogStore.layer(dataDir)))
      )
      expect(fs.existsSync(path.join(dataDir, "t-0", "clean-shutdown"))).toBe(true)
      const reopened = PartitionLogStore.makeFileStore(dataDir).open("t", 0)
      expect(reopened.logEndOffset).toBe(1)
      expect(fs.existsSync(path.join(dataDir, "t-0", "clean-shutdown"))).toBe(false)
    })
  )
})

type Op =
  | { readonly op: "leader"; readonly count: number; readonly bytes: number; readonly epochBump: boolean }
  | { readonly op: "follower"; readonly gap: number; readonly count: number }
  | { readonly op: "truncate"; readonly back: number }
  | { readonly op: "reopen"; readonly crash: boolean }
  | { readonly op: "deleteBefore"; readonly forward: number }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("leader" as const),
      count: fc.integer({ min: 1, max: 4 }),
      bytes: fc.integer({ min: 0, max: 150 }),
      epochBump: fc.boolean()
    })
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("follower" as const),
      gap: fc.integer({ min: 0, max: 3 }),
      count: fc.integer({ min: 1, max: 3 })
    })
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("truncate" as const), back: fc.integer({ min: 0, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("reopen" as const), crash: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("deleteBefore" as const), forward: fc.integer({ min: 0, max: 4 }) })
  }
)

describe("PartitionLog epochs across restarts", () => {
  it("a log emptied by deleteRecordsBefore reopens with the same epochs after a clean shutdown and after a crash", () => {
    const config: Partial<LogConfig> = { segmentBytes: 400, indexIntervalBytes: 60 }
    const dataDir = tempDir()
    let files = PartitionLogStore.makeFileStore(dataDir)
    let f = files.open("p", 0, config)
    f.appendAsFollower(batch({ baseOffset: 0, count: 1, leaderEpoch: 0 }), 0)
    f.updateHighWatermark(1)
    f.deleteRecordsBefore(1)
    files.closeAll()
    files = PartitionLogStore.makeFileStore(dataDir)
    f = files.open("p", 0, config)
    const clean = [f.logStartOffset, f.logEndOffset, f.latestEpoch()]
    // No close: the next open recovers by scanning, which sees the batch below the log start.
    files = PartitionLogStore.makeFileStore(dataDir)
    f = files.open("p", 0, config)
    expect([f.logStartOffset, f.logEndOffset, f.latestEpoch()]).toEqual(clean)
    files.closeAll()
  })
})

describe("PartitionLog property", () => {
  it.prop(
    "memory and file layers give identical logs under appends, truncations and restarts",
    [fc.array(opArb, { minLength: 1, maxLength: 30 })],
    ([ops]) => {
      const config: Partial<LogConfig> = { segmentBytes: 400, indexIntervalBytes: 60 }
      const memory = PartitionLogStore.makeMemoryStore()
      const dataDir = tempDir()
      let files = PartitionLogStore.makeFileStore(dataDir)
      let m = memory.open("p", 0, config)
      let f = files.open("p", 0, config)
      let epoch = 0
      for (const o of ops) {
        switch (o.op) {
          case "leader": {
            if (o.epochBump) epoch++
            const b = batch({ count: o.count, payload: Buffer.alloc(o.bytes, o.count) })
            expect(f.appendAsLeader(Buffer.from(b), epoch, 0)).toEqual(m.appendAsLeader(b, epoch, 0))
            break
          }
          case "follower": {
            const b = batch({ baseOffset: m.logEndOffset + o.gap, count: o.count, leaderEpoch: epoch })
            expect(f.appendAsFollower(Buffer.from(b), 0)).toEqual(m.appendAsFollower(b, 0))
            break
          }
          case "truncate": {
            const to = Math.max(m.logStartOffset, m.logEndOffset - o.back)
            m.truncateTo(to)
            f.truncateTo(to)
            break
          }
          case "reopen": {
            // A crash keeps every complete batch; a clean close keeps everything.
            if (!o.crash) files.closeAll()
            files = PartitionLogStore.makeFileStore(dataDir)
            f = files.open("p", 0, config)
            memory.closeAll()
            m = memory.open("p", 0, config)
            break
          }
          case "deleteBefore": {
            m.updateHighWatermark(m.logEndOffset)
            f.updateHighWatermark(f.logEndOffset)
            const to = Math.min(m.logEndOffset, m.logStartOffset + o.forward)
            m.deleteRecordsBefore(to)
            f.deleteRecordsBefore(to)
            break
          }
        }
        expect([f.logStartOffset, f.logEndOffset, f.latestEpoch()]).toEqual([
          m.logStartOffset,
          m.logEndOffset,
          m.latestEpoch()
        ])
        expect(Buffer.compare(readAll(f), readAll(m))).toBe(0)
        for (let e = 0; e <= epoch + 1; e++) expect(f.endOffsetForEpoch(e)).toEqual(m.endOffsetForEpoch(e))
      }
      const all = readAll(m)
      const offsets = baseOffsets(all)
      for (let i = 1; i < offsets.length; i++) expect(offsets[i]!).toBeGreaterThan(offsets[i - 1]!)
      for (const { position } of RecordBatch.split(all).batches)
        expect(RecordBatch.lastOffset(all, position)).toBeLessThan(m.logEndOffset)
      files.closeAll()
    },
    { fastCheck: { numRuns: 60 } }
  )
})

describe("PartitionLog transactions across a crash", () => {
  it("rebuilds open transactions, coordinator epochs and the held LSO from the log alone", () => {
    const dataDir = tempDir()
    let files = PartitionLogStore.makeFileStore(dataDir)
    let f = files.open("x", 0)
    const a = { producerId: 1n, producerEpoch: 0, transactional: true }
    const b = { producerId: 2n, producerEpoch: 5, transactional: true }
    f.appendAsFollower(batch({ ...a, baseOffset: 0, baseSequence: 0 }), 0)
    f.appendAsFollower(control(0, { ...a, baseOffset: 1 }, 3), 0)
    f.appendAsFollower(batch({ ...b, baseOffset: 2, baseSequence: 0 }), 0)
    f.appendAsFollower(control(1, { ...b, baseOffset: 3 }, 9), 0)
    f.appendAsFollower(batch({ ...b, producerEpoch: 6, baseOffset: 4, baseSequence: 0 }), 0)
    f.updateHighWatermark(3)
    f.flush()
    const before = [f.lastStableOffset, f.openTransactions(), f.abortedTransactions(0, 5)]
    expect(before).toEqual([
      2,
      [{ producerId: 2n, producerEpoch: 6, firstOffset: 4, coordinatorEpoch: 9 }],
      [{ producerId: 1n, firstOffset: 0 }]
    ])
    // No close: the next open recovers by scanning the segments.
    files = PartitionLogStore.makeFileStore(dataDir)
    f = files.open("x", 0)
    expect([f.lastStableOffset, f.openTransactions(), f.abortedTransactions(0, 5)]).toEqual(before)
    f.updateHighWatermark(5)
    expect(f.lastStableOffset).toBe(4)
    files.closeAll()
  })
})

describe("PartitionLog highest producer id across a crash", () => {
  it("keeps the id of a segment retention removed, from the state checkpoint, when the log is recovered", () => {
    const dataDir = tempDir()
    let files = PartitionLogStore.makeFileStore(dataDir)
    let f = files.open("pids", 0, { segmentBytes: 100 })
    f.appendAsFollower(batch({ baseOffset: 0, producerId: 90n, producerEpoch: 0, baseSequence: 0 }), 0)
    f.appendAsFollower(batch({ baseOffset: 1, producerId: 5n, producerEpoch: 0, baseSequence: 0 }), 0)
    f.appendAsFollower(batch({ baseOffset: 2, producerId: 6n, producerEpoch: 0, baseSequence: 0 }), 0)
    f.updateHighWatermark(3)
    f.deleteRecordsBefore(2)
    f.flush()
    expect(f.highestProducerId()).toBe(90n)
    // No close: the next open recovers by scanning what is left, producers 5 and 6.
    files = PartitionLogStore.makeFileStore(dataDir)
    f = files.open("pids", 0, { segmentBytes: 100 })
    expect(f.logStartOffset).toBe(2)
    expect(f.highestProducerId()).toBe(90n)
    files.closeAll()
  })
})

type TxnOp =
  | { readonly op: "data"; readonly pid: number; readonly transactional: boolean; readonly count: number }
  | { readonly op: "marker"; readonly pid: number; readonly commit: boolean }
  | { readonly op: "reset" }
  | { readonly op: "hw"; readonly back: number }
  | { readonly op: "truncate"; readonly back: number }
  | { readonly op: "reopen"; readonly crash: boolean }

const txnOpArb: fc.Arbitrary<TxnOp> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("data" as const),
      pid: fc.integer({ min: 1, max: 3 }),
      transactional: fc.boolean(),
      count: fc.integer({ min: 1, max: 3 })
    })
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("marker" as const),
      pid: fc.integer({ min: 1, max: 3 }),
      commit: fc.boolean()
    })
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("reset" as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("hw" as const), back: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("truncate" as const), back: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("reopen" as const), crash: fc.boolean() }) }
)

/** What the log holds, batch by batch, as the reference model sees it. */
interface ModelBatch {
  readonly offset: number
  readonly lastOffset: number
  readonly pid: number
  readonly kind: "data" | "txn" | "commit" | "abort" | "reset"
}

/** LSO and aborted transactions by replaying the batches in order: the definition, not the implementation. */
const modelTransactions = (batches: ReadonlyArray<ModelBatch>, highWatermark: number) => {
  const open = new Map<number, number>()
  const unstable: number[] = []
  const aborted: Array<{ producerId: bigint; firstOffset: number }> = []
  for (const b of batches) {
    if (b.kind === "txn" && !open.has(b.pid)) open.set(b.pid, b.offset)
    if (b.kind === "reset") open.clear()
    if (b.kind !== "commit" && b.kind !== "abort") continue
    const first = open.get(b.pid)
    if (first === undefined) continue
    open.delete(b.pid)
    if (b.kind === "abort") aborted.push({ producerId: BigInt(b.pid), firstOffset: first })
    if (b.offset >= highWatermark) unstable.push(first)
  }
  return { lso: Math.min(highWatermark, ...open.values(), ...unstable), aborted }
}

describe("PartitionLog transactions property", () => {
  it.prop(
    "the LSO and the aborted transactions are those of a replay of the batches, across truncation and restarts",
    [fc.array(txnOpArb, { minLength: 1, maxLength: 40 })],
    ([ops]) => {
      const dataDir = tempDir()
      let files = PartitionLogStore.makeFileStore(dataDir)
      let f = files.open("q", 0, { segmentBytes: 500, indexIntervalBytes: 60 })
      let model: ModelBatch[] = []
      const sequences = new Map<number, number>()
      const append = (b: Buffer, kind: ModelBatch["kind"], pid: number) => {
        const info = f.appendAsFollower(b, 0)
        model.push({ offset: info.firstOffset, lastOffset: info.lastOffset, pid, kind })
      }
      for (const o of ops) {
        const at = { baseOffset: f.logEndOffset }
        switch (o.op) {
          case "data": {
            const seq = sequences.get(o.pid) ?? 0
            sequences.set(o.pid, seq + o.count)
            const spec = { ...at, producerId: BigInt(o.pid), producerEpoch: 0, baseSequence: seq, count: o.count }
            append(batch({ ...spec, transactional: o.transactional }), o.transactional ? "txn" : "data", o.pid)
            break
          }
          case "marker":
            append(
              control(o.commit ? 1 : 0, { ...at, producerId: BigInt(o.pid), producerEpoch: 0 }),
              o.commit ? "commit" : "abort",
              o.pid
            )
            break
          case "reset":
            append(control(7, at), "reset", -1)
            break
          case "hw":
            // Like Kafka's, the high watermark only moves back by truncation (or a restart's older checkpoint).
            f.updateHighWatermark(Math.max(f.highWatermark, f.logEndOffset - o.back))
            break
          case "truncate": {
            const to = Math.max(0, f.logEndOffset - o.back)
            f.truncateTo(to)
            model = model.filter((b) => b.lastOffset < to)
            // A truncation cuts whole batches: the log end is where the last kept batch ends.
            expect(f.logEndOffset).toBe(to)
            break
          }
          case "reopen":
            if (!o.crash) files.closeAll()
            files = PartitionLogStore.makeFileStore(dataDir)
            f = files.open("q", 0, { segmentBytes: 500, indexIntervalBytes: 60 })
            break
        }
        const expected = modelTransactions(model, f.highWatermark)
        expect(f.lastStableOffset).toBe(expected.lso)
        expect(f.abortedTransactions(0, f.logEndOffset)).toEqual(expected.aborted)
      }
      files.closeAll()
    },
    { fastCheck: { numRuns: 80 } }
  )
})

describe("PartitionLog validation on open", () => {
  const config: Partial<LogConfig> = { segmentBytes: 600, indexIntervalBytes: 64 }
  const fill = (log: PartitionLog, n: number): void => {
    for (let i = 0; i < n; i++) log.appendAsLeader(batch({ count: 1 + (i % 3), timestamp: 1000 + i }), 1, 0)
  }
  /** A file store that records the truncations its logs report while loading. */
  const recording = (dataDir: string) => {
    const truncations: RecoveryTruncation[] = []
    const store = PartitionLogStore.makeFileStore(dataDir, { recoveryTruncated: (t) => truncations.push(t) })
    return { store, truncations }
  }
  const activeSegment = (dataDir: string): string => {
    const dir = path.join(dataDir, "t-0")
    return path.join(dir, segmentFiles(dir, ".log").at(-1)!)
  }
  /** Positions, offsets and record counts of the batches of a segment file. */
  const batchesOf = (file: string) => {
    const bytes = fs.readFileSync(file)
    return RecordBatch.split(bytes).batches.map(({ position, size }) => ({
      position,
      size,
      baseOffset: RecordBatch.baseOffset(bytes, position),
      lastOffset: RecordBatch.lastOffset(bytes, position),
      records: RecordBatch.recordCount(bytes, position)
    }))
  }
  /** Appends one batch and checks that a read from its offset returns exactly it. */
  const appendIsReadable = (log: PartitionLog, expectedOffset: number): void => {
    const info = log.appendAsLeader(batch({ count: 2, payload: Buffer.alloc(20, 0x7e) }), 3, 0)
    expect(info.firstOffset).toBe(expectedOffset)
    const read = log.read(expectedOffset, 1 << 20)
    expect(baseOffsets(read.records)).toEqual([expectedOffset])
    expect(RecordBatch.split(read.records).rest).toBe(read.records.length)
  }

  it("cuts a torn last batch after a clean shutdown, reports it, and appends after the last whole batch", () => {
    const dataDir = tempDir()
    const first = PartitionLogStore.makeFileStore(dataDir)
    const log = first.open("t", 0, config)
    fill(log, 20)
    const before = readAll(log)
    log.appendAsLeader(batch({ count: 3 }), 1, 0)
    const leo = log.logEndOffset
    first.closeAll()
    expect(fs.existsSync(path.join(dataDir, "t-0", "clean-shutdown"))).toBe(true)
    const active = activeSegment(dataDir)
    const size = fs.statSync(active).size
    const last = batchesOf(active).at(-1)!
    fs.truncateSync(active, size - 5)

    const { store, truncations } = recording(dataDir)
    const reopened = store.open("t", 0, config)
    expect(reopened.logEndOffset).toBe(leo - 3)
    expect(Buffer.compare(readAll(reopened), before)).toBe(0)
    expect(truncations).toEqual([
      {
        topic: "t",
        partition: 0,
        segment: path.basename(active),
        position: last.position,
        reason: "incomplete batch (torn write)",
        cleanShutdown: true,
        logEndOffset: leo - 3,
        lastRemovedOffset: -1,
        removedBytes: last.size - 5,
        removedRecords: 0,
        removedSegments: 0,
        highWatermark: 0
      }
    ])
    expect(fs.statSync(active).size).toBe(last.position)
    appendIsReadable(reopened, leo - 3)
  })

  it("cuts a batch with a flipped byte after a clean shutdown and never serves it", () => {
    const dataDir = tempDir()
    const first = PartitionLogStore.makeFileStore(dataDir)
    const log = first.open("t", 0, config)
    fill(log, 20)
    log.updateHighWatermark(log.logEndOffset)
    first.closeAll()
    const active = activeSegment(dataDir)
    const batches = batchesOf(active)
    expect(batches.length).toBeGreaterThan(2)
    const hit = batches[1]!
    const bytes = fs.readFileSync(active)
    bytes[hit.position + hit.size - 2]! ^= 0x01
    fs.writeFileSync(active, bytes)

    const { store, truncations } = recording(dataDir)
    const reopened = store.open("t", 0, config)
    expect(reopened.logEndOffset).toBe(hit.baseOffset)
    expect(reopened.highWatermark).toBe(hit.baseOffset)
    expect(truncations).toHaveLength(1)
    expect(truncations[0]).toMatchObject({
      position: hit.position,
      reason: "CRC mismatch",
      cleanShutdown: true,
      logEndOffset: hit.baseOffset,
      lastRemovedOffset: batches.at(-1)!.lastOffset,
      removedBytes: bytes.length - hit.position,
      removedRecords: batches.slice(1).reduce((n, b) => n + b.records, 0),
      removedSegments: 0
    })
    expect(describeTruncation(truncations[0]!)).toContain(
      `records below the high watermark ${batches.at(-1)!.lastOffset + 1} were acknowledged`
    )
    const all = readAll(reopened)
    expect(baseOffsets(all).at(-1)).toBe(batches[0]!.baseOffset)
    appendIsReadable(reopened, hit.baseOffset)
  })

  it("cuts a corrupt batch in the middle of the log in crash recovery, with every later segment, and reports it", () => {
    const dataDir = tempDir()
    const { store: first } = recording(dataDir)
    const log = first.open("t", 0, config)
    fill(log, 40)
    const leo = log.logEndOffset
    // Crash: no close.
    const dir = path.join(dataDir, "t-0")
    const segments = segmentFiles(dir, ".log")
    expect(segments.length).toBeGreaterThan(3)
    const middle = path.join(dir, segments[1]!)
    const batches = batchesOf(middle)
    const hit = batches[2]!
    const bytes = fs.readFileSync(middle)
    bytes[hit.position + RecordBatch.HEADER_SIZE + 1]! ^= 0xff
    fs.writeFileSync(middle, bytes)
    const laterRecords = segments
      .slice(2)
      .flatMap((f) => batchesOf(path.join(dir, f)))
      .reduce((n, b) => n + b.records, 0)
    const laterBytes = segments.slice(2).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0)

    const { store, truncations } = recording(dataDir)
    const reopened = store.open("t", 0, config)
    expect(reopened.logEndOffset).toBe(hit.baseOffset)
    expect(segmentFiles(dir, ".log")).toEqual(segments.slice(0, 2))
    expect(truncations).toEqual([
      {
        topic: "t",
        partition: 0,
        segment: segments[1]!,
        position: hit.position,
        reason: "CRC mismatch",
        cleanShutdown: false,
        logEndOffset: hit.baseOffset,
        lastRemovedOffset: leo - 1,
        removedBytes: bytes.length - hit.position + laterBytes,
        removedRecords: batches.slice(2).reduce((n, b) => n + b.records, 0) + laterRecords,
        removedSegments: segments.length - 2,
        highWatermark: 0
      }
    ])
    const line = describeTruncation(truncations[0]!)
    expect(line).toContain(`t-0 segment ${segments[1]} at byte ${hit.position} (CRC mismatch)`)
    expect(line).toContain(`offsets ${hit.baseOffset}..${leo - 1}`)
    expect(line).toContain(`${truncations[0]!.removedRecords} records`)
    appendIsReadable(reopened, hit.baseOffset)
  })

  it("opens an undamaged log without reporting anything, after a clean shutdown and after a crash", () => {
    for (const crash of [false, true]) {
      const dataDir = tempDir()
      const first = PartitionLogStore.makeFileStore(dataDir)
      fill(first.open("t", 0, config), 30)
      const expected = readAll(first.get("t", 0)!)
      if (!crash) first.closeAll()
      const { store, truncations } = recording(dataDir)
      expect(Buffer.compare(readAll(store.open("t", 0, config)), expected)).toBe(0)
      expect(truncations).toEqual([])
    }
  })
})

describe("PartitionLog high watermark checkpoint", () => {
  it("a crash restart answers the checkpointed high watermark, clamped to the recovered log", () => {
    const dataDir = tempDir()
    const log = PartitionLogStore.makeFileStore(dataDir).open("t", 0)
    for (let i = 0; i < 10; i++) log.appendAsLeader(batch({ count: 2 }), 1, 0)
    log.updateHighWatermark(14)
    log.checkpointHighWatermark()
    log.updateHighWatermark(18)
    // Crash: no close, no flush. The HW moved after the last checkpoint; the restart gets the checkpointed one.
    const state = JSON.parse(fs.readFileSync(path.join(dataDir, "t-0", "log-state-checkpoint"), "utf8"))
    expect(state.highWatermark).toBe(14)
    const reopened = PartitionLogStore.makeFileStore(dataDir).open("t", 0)
    expect(reopened.logEndOffset).toBe(20)
    expect(reopened.highWatermark).toBe(14)
    expect(reopened.offsetForTimestamp(LATEST_TIMESTAMP)?.offset).toBe(20)

    reopened.updateHighWatermark(20)
    reopened.checkpointHighWatermark()
    // The last batch is lost (a torn write): the checkpointed HW 20 is above the new log end.
    const active = path.join(dataDir, "t-0", segmentFiles(path.join(dataDir, "t-0"), ".log").at(-1)!)
    fs.truncateSync(active, fs.statSync(active).size - 3)
    const again = PartitionLogStore.makeFileStore(dataDir).open("t", 0)
    expect(again.logEndOffset).toBe(18)
    expect(again.highWatermark).toBe(18)
  })
})

describe("PartitionLog on a failing disk", () => {
  it("an append whose write, checkpoint or fsync fails leaves the log unchanged, and appends continue once the disk heals", () => {
    for (const [fault, where, config] of [
      ["ENOSPC", "write", {}],
      ["ENOSPC", "checkpoint", {}],
      ["EIO", "fsync", { flushMessages: 1 }]
    ] as const) {
      const disk = StorageTest.faultyStore()
      const log = disk.store.open("t", 0, config)
      log.appendAsLeader(batch({ count: 2 }), 1, 0)
      if (where === "write") disk.failWrites(fault)
      else disk.failSyncs(fault)
      // A new epoch rewrites the epoch checkpoint after the data was written; flushMessages 1 fsyncs it.
      let failure: unknown
      try {
        log.appendAsLeader(batch({ count: 3, producerId: 7n, producerEpoch: 0, baseSequence: 0 }), 2, 0)
      } catch (e) {
        failure = e
      }
      expect(failure).toBeInstanceOf(StorageError.KafkaStorageError)
      expect((failure as StorageError.KafkaStorageError).errorCode).toBe(56)
      expect(String((failure as Error).message)).toContain(fault)
      expect(log.logEndOffset).toBe(2)
      expect(log.latestEpoch()).toBe(1)
      expect(baseOffsets(readAll(log))).toEqual([0])
      disk.failWrites(null)
      disk.failSyncs(null)
      // The retry is not a duplicate: the failed batch left no producer state behind.
      const retry = log.appendAsLeader(batch({ count: 3, producerId: 7n, producerEpoch: 0, baseSequence: 0 }), 2, 0)
      expect(retry).toMatchObject({ firstOffset: 2, lastOffset: 4, duplicate: false })
      expect(baseOffsets(readAll(log))).toEqual([0, 2])
      expect(log.latestEpoch()).toBe(2)
    }
  })

  it("a roll whose new segment cannot be created keeps the active segment", () => {
    const disk = StorageTest.faultyStore()
    const log = disk.store.open("t", 0)
    log.appendAsFollower(batch({ leaderEpoch: 1 }), 0)
    log.truncateTo(0)
    // An empty log receiving a replica's batch far beyond its base offset moves to a new segment.
    const far = 3_000_000_000
    disk.failWrites("ENOSPC")
    expect(() => log.appendAsFollower(batch({ baseOffset: far, leaderEpoch: 1 }), 0)).toThrow(
      StorageError.KafkaStorageError
    )
    expect(log.logEndOffset).toBe(0)
    disk.failWrites(null)
    expect(log.appendAsFollower(batch({ baseOffset: far, leaderEpoch: 1 }), 0).firstOffset).toBe(far)
    expect(baseOffsets(log.read(far, 1 << 20).records)).toEqual([far])
  })

  it("a truncation that cannot create its new segment leaves the log as it was", () => {
    const disk = StorageTest.faultyStore({ dataDir: tempDir() })
    const log = disk.store.open("t", 0)
    log.truncateFullyAndStartAt(10)
    for (let i = 0; i < 3; i++) log.appendAsFollower(batch({ baseOffset: 10 + 2 * i, count: 2, leaderEpoch: 1 }), 0)
    const before = readAll(log)
    disk.failWrites("ENOSPC")
    expect(() => log.truncateFullyAndStartAt(100)).toThrow(StorageError.KafkaStorageError)
    // Below the log start: the log restarts at 5 in a new segment.
    expect(() => log.truncateTo(5)).toThrow(StorageError.KafkaStorageError)
    expect(log.logStartOffset).toBe(10)
    expect(log.logEndOffset).toBe(16)
    expect(Buffer.compare(readAll(log), before)).toBe(0)
    disk.failWrites(null)
    log.truncateFullyAndStartAt(100)
    expect(log.appendAsFollower(batch({ baseOffset: 100, leaderEpoch: 2 }), 0).firstOffset).toBe(100)
    expect(baseOffsets(log.read(100, 1 << 20).records)).toEqual([100])
  })

  it("a read that fails raises KAFKA_STORAGE_ERROR", () => {
    const disk = StorageTest.faultyStore()
    const log = disk.store.open("t", 0)
    log.appendAsLeader(batch({ count: 2 }), 1, 0)
    disk.failReads("EIO")
    expect(() => log.read(0, 1 << 20)).toThrow(StorageError.KafkaStorageError)
    disk.failReads(null)
    expect(baseOffsets(log.read(0, 1 << 20).records)).toEqual([0])
  })
})
