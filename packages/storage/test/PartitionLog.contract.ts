/**
 * The contract every PartitionLogStore layer passes. Run by PartitionLog.test.ts against files and memory.
 */
import { Buffer } from "node:buffer"
import { Crc32c, RecordBatch } from "@clustermirror/protocol"
import { beforeEach, describe, expect, it } from "@effect/vitest"
import type { LogConfig, PartitionLog } from "../src/PartitionLog.js"
import type { PartitionLogStoreService } from "../src/PartitionLogStore.js"
import * as StorageError from "../src/StorageError.js"
import { baseOffsets, batch, control } from "./Batches.js"

const crcOk = (b: Buffer, p: number): boolean =>
  Crc32c.compute(b.subarray(p + RecordBatch.ATTRIBUTES, p + RecordBatch.sizeInBytes(b, p))) === RecordBatch.crc(b, p)

/** Reads everything in [from, LEO) by following batches across segments. */
export const readAll = (log: PartitionLog, from = log.logStartOffset): Buffer => {
  const parts: Buffer[] = []
  let offset = from
  while (offset < log.logEndOffset) {
    const { records } = log.read(offset, 1 << 20)
    if (records.length === 0) break
    parts.push(records)
    const { batches } = RecordBatch.split(records)
    offset = RecordBatch.lastOffset(records, batches[batches.length - 1]!.position) + 1
  }
  return Buffer.concat(parts)
}

const throws = (f: () => unknown): unknown => {
  try {
    f()
  } catch (e) {
    return e
  }
  throw new Error("expected an error")
}

export const contract = (name: string, makeStore: () => PartitionLogStoreService): void => {
  describe(`PartitionLog contract (${name})`, () => {
    let store: PartitionLogStoreService
    const open = (config: Partial<LogConfig> = {}, topic = "t"): PartitionLog => store.open(topic, 0, config)
    beforeEach(() => {
      store = makeStore()
    })

    it("starts empty", () => {
      const log = open()
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark, log.lastStableOffset]).toEqual([0, 0, 0, 0])
      expect(log.latestEpoch()).toBe(-1)
      expect(log.read(0, 1000).records.length).toBe(0)
      expect(log.endOffsetForEpoch(0)).toEqual({ epoch: -1, endOffset: -1 })
    })

    it("assigns offsets from the log end and stamps the leader epoch in place, CRC intact", () => {
      const log = open()
      const a = batch({ count: 1, baseOffset: 77 })
      const b = Buffer.concat([batch({ count: 3 }), batch({ count: 2 })])
      expect(log.appendAsLeader(a, 4, 10)).toEqual({
        firstOffset: 0,
        lastOffset: 0,
        logAppendTime: -1,
        logStartOffset: 0,
        duplicate: false
      })
      expect(log.appendAsLeader(b, 4, 10)).toMatchObject({ firstOffset: 1, lastOffset: 5 })
      expect(RecordBatch.baseOffset(a)).toBe(0)
      expect(RecordBatch.partitionLeaderEpoch(b, 0)).toBe(4)
      expect(log.logEndOffset).toBe(6)
      const all = log.read(0, 1 << 20).records
      expect(baseOffsets(all)).toEqual([0, 1, 4])
      expect(Buffer.compare(all, Buffer.concat([a, b]))).toBe(0)
      for (const { position } of RecordBatch.split(all).batches) {
        expect(RecordBatch.partitionLeaderEpoch(all, position)).toBe(4)
        expect(crcOk(all, position)).toBe(true)
      }
      expect(log.sizeInBytes).toBe(a.length + b.length)
    })

    it("rejects corrupt, truncated, empty and oversized batches without appending anything", () => {
      const log = open({ maxMessageBytes: 200 })
      const bad = batch({ count: 2 })
      bad[bad.length - 1] ^= 0xff
      const e1 = throws(() => log.appendAsLeader(Buffer.concat([batch(), bad]), 0, 0))
      expect(e1).toBeInstanceOf(StorageError.CorruptRecordError)
      expect((e1 as StorageError.CorruptRecordError).errorCode).toBe(2)
      const torn = batch({ count: 2 }).subarray(0, 50)
      expect(throws(() => log.appendAsLeader(torn, 0, 0))).toBeInstanceOf(StorageError.CorruptRecordError)
      const magic1 = batch()
      magic1.writeInt8(1, RecordBatch.MAGIC)
      expect(throws(() => log.appendAsLeader(magic1, 0, 0))).toBeInstanceOf(StorageError.CorruptRecordError)
      const empty = batch({ count: 1 })
      empty.writeInt32BE(0, RecordBatch.RECORD_COUNT)
      empty.writeUInt32BE(Crc32c.compute(empty.subarray(RecordBatch.ATTRIBUTES)), RecordBatch.CRC)
      const e2 = throws(() => log.appendAsLeader(empty, 0, 0))
      expect((e2 as StorageError.CorruptRecordError).errorCode).toBe(87)
      const big = batch({ payload: Buffer.alloc(300) })
      const e3 = throws(() => log.appendAsLeader(big, 0, 0))
      expect(e3).toBeInstanceOf(StorageError.RecordTooLargeError)
      expect((e3 as StorageError.RecordTooLargeError).errorCode).toBe(10)
      expect(log.logEndOffset).toBe(0)
      expect(log.sizeInBytes).toBe(0)
    })

    it("with LogAppendTime rewrites the max timestamp, the timestamp type and the CRC", () => {
      const log = open({ messageTimestampType: "LogAppendTime" })
      const b = batch({ timestamp: 5 })
      expect(log.appendAsLeader(b, 0, 12345).logAppendTime).toBe(12345)
      const r = log.read(0, 1000).records
      expect(RecordBatch.maxTimestamp(r)).toBe(12345)
      expect(RecordBatch.attributes(r) & RecordBatch.TIMESTAMP_TYPE_MASK).not.toBe(0)
      expect(crcOk(r, 0)).toBe(true)
    })

    it("reads whole batches by offset, bounded by maxBytes, minOneMessage and maxOffset", () => {
      const log = open()
      const sizes: number[] = []
      for (let i = 0; i < 5; i++) {
        const b = batch({ count: 2 })
        sizes.push(b.length)
        log.appendAsLeader(b, 0, 0)
      }
      expect(log.logEndOffset).toBe(10)
      expect(baseOffsets(log.read(3, 1 << 20).records)).toEqual([2, 4, 6, 8])
      expect(baseOffsets(log.read(3, sizes[0]! * 2).records)).toEqual([2, 4])
      expect(baseOffsets(log.read(3, 10).records)).toEqual([2])
      expect(log.read(3, 10, { minOneMessage: false }).records.length).toBe(0)
      expect(baseOffsets(log.read(0, 1 << 20, { maxOffset: 6 }).records)).toEqual([0, 2, 4])
      expect(baseOffsets(log.read(0, 1 << 20, { maxOffset: 5 }).records)).toEqual([0, 2])
      expect(log.read(6, 1 << 20, { maxOffset: 6 }).records.length).toBe(0)
      expect(log.read(10, 1 << 20).records.length).toBe(0)
      const e = throws(() => log.read(11, 100))
      expect(e).toBeInstanceOf(StorageError.OffsetOutOfRangeError)
      expect((e as StorageError.OffsetOutOfRangeError).errorCode).toBe(1)
    })

    it("reads across segments and uses the index inside large segments", () => {
      const log = open({ segmentBytes: 1000, indexIntervalBytes: 100 })
      for (let i = 0; i < 60; i++) log.appendAsLeader(batch({ count: 1 + (i % 3) }), 0, 0)
      for (let offset = 0; offset < log.logEndOffset; offset += 7) {
        const first = log.read(offset, 1 << 20).records
        expect(RecordBatch.baseOffset(first)).toBeLessThanOrEqual(offset)
        expect(RecordBatch.lastOffset(first)).toBeGreaterThanOrEqual(offset)
      }
      const all = readAll(log, 0)
      const offsets = baseOffsets(all)
      expect(offsets.length).toBe(60)
      expect(
        RecordBatch.lastOffset(
          all,
          all.length - RecordBatch.sizeInBytes(all, RecordBatch.split(all).batches[59]!.position)
        )
      ).toBe(log.logEndOffset - 1)
    })

    it("appends as follower with given offsets and epochs, gaps allowed, bytes unchanged", () => {
      const log = open()
      const a = batch({ baseOffset: 0, count: 2, leaderEpoch: 1 })
      const b = batch({ baseOffset: 5, count: 1, leaderEpoch: 3 })
      const aCopy = Buffer.from(a)
      expect(log.appendAsFollower(Buffer.concat([a, b]), 0)).toMatchObject({ firstOffset: 0, lastOffset: 5 })
      expect(Buffer.compare(a, aCopy)).toBe(0)
      expect(log.logEndOffset).toBe(6)
      expect(log.latestEpoch()).toBe(3)
      expect(log.endOffsetForEpoch(1)).toEqual({ epoch: 1, endOffset: 5 })
      expect(baseOffsets(log.read(3, 1000).records)).toEqual([5])
      const e = throws(() => log.appendAsFollower(batch({ baseOffset: 5 }), 0))
      expect(e).toBeInstanceOf(StorageError.InvalidOffsetError)
      expect(log.logEndOffset).toBe(6)
    })

    it("answers endOffsetForEpoch with Kafka's semantics", () => {
      const log = open()
      log.appendAsLeader(batch({ count: 3 }), 1, 0) // 0..2
      log.appendAsLeader(batch({ count: 1 }), 1, 0) // 3
      log.appendAsLeader(batch({ count: 2 }), 3, 0) // 4..5
      log.appendAsLeader(batch({ count: 2 }), 5, 0) // 6..7
      expect(log.latestEpoch()).toBe(5)
      expect(log.endOffsetForEpoch(0)).toEqual({ epoch: 0, endOffset: 0 })
      expect(log.endOffsetForEpoch(1)).toEqual({ epoch: 1, endOffset: 4 })
      expect(log.endOffsetForEpoch(2)).toEqual({ epoch: 1, endOffset: 4 })
      expect(log.endOffsetForEpoch(3)).toEqual({ epoch: 3, endOffset: 6 })
      expect(log.endOffsetForEpoch(4)).toEqual({ epoch: 3, endOffset: 6 })
      expect(log.endOffsetForEpoch(5)).toEqual({ epoch: 5, endOffset: 8 })
      expect(log.endOffsetForEpoch(6)).toEqual({ epoch: -1, endOffset: -1 })
      expect(log.endOffsetForEpoch(-1)).toEqual({ epoch: -1, endOffset: -1 })
    })

    it("truncates to an offset: data, epochs and high watermark follow, appends continue", () => {
      const log = open({ segmentBytes: 300 })
      for (let i = 0; i < 10; i++) log.appendAsLeader(batch({ count: 2 }), i < 5 ? 1 : 2, 0) // epoch 2 from 10
      log.updateHighWatermark(20)
      expect(log.highWatermark).toBe(20)
      log.truncateTo(12)
      expect(log.logEndOffset).toBe(12)
      expect(log.highWatermark).toBe(12)
      expect(log.endOffsetForEpoch(2)).toEqual({ epoch: 2, endOffset: 12 })
      log.truncateTo(10)
      expect(log.latestEpoch()).toBe(1)
      expect(log.endOffsetForEpoch(2)).toEqual({ epoch: -1, endOffset: -1 })
      expect(baseOffsets(readAll(log))).toEqual([0, 2, 4, 6, 8])
      expect(log.appendAsLeader(batch(), 7, 0).firstOffset).toBe(10)
      expect(log.endOffsetForEpoch(1)).toEqual({ epoch: 1, endOffset: 10 })
      log.truncateTo(50)
      expect(log.logEndOffset).toBe(11)
    })

    it("truncates fully and restarts at an offset", () => {
      const log = open()
      log.appendAsLeader(batch({ count: 3 }), 2, 0)
      log.truncateFullyAndStartAt(100)
      expect([log.logStartOffset, log.logEndOffset, log.highWatermark, log.latestEpoch()]).toEqual([100, 100, 100, -1])
      expect(log.appendAsLeader(batch(), 3, 0).firstOffset).toBe(100)
      expect(throws(() => log.read(0, 100))).toBeInstanceOf(StorageError.OffsetOutOfRangeError)
      expect(baseOffsets(log.read(100, 1000).records)).toEqual([100])
    })

    it("deduplicates idempotent retries and rejects gaps and fenced epochs", () => {
      const log = open()
      const p = { producerId: 7n, producerEpoch: 0 }
      expect(log.appendAsLeader(batch({ ...p, baseSequence: 0, count: 2 }), 0, 0).firstOffset).toBe(0)
      log.appendAsLeader(batch({ count: 1 }), 0, 0)
      expect(log.appendAsLeader(batch({ ...p, baseSequence: 2, count: 3 }), 0, 0)).toMatchObject({
        firstOffset: 3,
        lastOffset: 5
      })
      expect(log.appendAsLeader(batch({ ...p, baseSequence: 2, count: 3 }), 0, 0)).toMatchObject({
        firstOffset: 3,
        lastOffset: 5,
        duplicate: true
      })
      expect(log.appendAsLeader(batch({ ...p, baseSequence: 0, count: 2 }), 0, 0)).toMatchObject({
        firstOffset: 0,
        duplicate: true
      })
      expect(log.logEndOffset).toBe(6)
      const gap = throws(() => log.appendAsLeader(batch({ ...p, baseSequence: 9 }), 0, 0))
      expect(gap).toBeInstanceOf(StorageError.OutOfOrderSequenceError)
      expect((gap as StorageError.OutOfOrderSequenceError).errorCode).toBe(45)
      const badStart = throws(() =>
        log.appendAsLeader(batch({ producerId: 7n, producerEpoch: 1, baseSequence: 5 }), 0, 0)
      )
      expect(badStart).toBeInstanceOf(StorageError.OutOfOrderSequenceError)
      log.appendAsLeader(batch({ producerId: 7n, producerEpoch: 1, baseSequence: 0 }), 0, 0)
      const fenced = throws(() => log.appendAsLeader(batch({ ...p, baseSequence: 5 }), 0, 0))
      expect(fenced).toBeInstanceOf(StorageError.InvalidProducerEpochError)
      expect((fenced as StorageError.InvalidProducerEpochError).errorCode).toBe(47)
      // An unknown producer may start anywhere (its state may have expired).
      expect(log.appendAsLeader(batch({ producerId: 8n, producerEpoch: 0, baseSequence: 40 }), 0, 0).duplicate).toBe(
        false
      )
      // Several batches of one request are checked against each other.
      const two = Buffer.concat([
        batch({ producerId: 8n, producerEpoch: 0, baseSequence: 41 }),
        batch({ producerId: 8n, producerEpoch: 0, baseSequence: 43 })
      ])
      expect(throws(() => log.appendAsLeader(two, 0, 0))).toBeInstanceOf(StorageError.OutOfOrderSequenceError)
      expect(log.logEndOffset).toBe(8)
    })

    it("holds the last stable offset at the first open transaction and records aborts", () => {
      const log = open()
      const txn = { producerId: 9n, producerEpoch: 0, transactional: true }
      log.appendAsLeader(batch({ count: 2 }), 0, 0) // 0..1
      log.appendAsLeader(batch({ ...txn, baseSequence: 0, count: 2 }), 0, 0) // 2..3
      log.appendAsLeader(batch({ count: 1 }), 0, 0) // 4
      log.updateHighWatermark(log.logEndOffset)
      expect(log.lastStableOffset).toBe(2)
      expect(log.openTransactions()).toEqual([
        { producerId: 9n, producerEpoch: 0, firstOffset: 2, coordinatorEpoch: -1 }
      ])
      expect(log.read(0, 1 << 20, { maxOffset: log.lastStableOffset }).records.length).toBeGreaterThan(0)
      expect(baseOffsets(log.read(0, 1 << 20, { maxOffset: log.lastStableOffset }).records)).toEqual([0])
      log.appendAsLeader(control(0, { producerId: 9n, producerEpoch: 0 }), 0, 0, "coordinator") // abort at 5
      log.updateHighWatermark(log.logEndOffset)
      expect(log.lastStableOffset).toBe(6)
      expect(log.openTransactions()).toEqual([])
      expect(log.abortedTransactions(0, 6)).toEqual([{ producerId: 9n, firstOffset: 2 }])
      expect(log.abortedTransactions(6, 10)).toEqual([])
      log.appendAsLeader(batch({ ...txn, baseSequence: 2 }), 0, 0) // 6
      log.appendAsLeader(control(1, { producerId: 9n, producerEpoch: 0 }), 0, 0, "coordinator") // commit at 7
      log.updateHighWatermark(log.logEndOffset)
      expect(log.lastStableOffset).toBe(8)
      expect(log.abortedTransactions(6, 10)).toEqual([])
      // Truncation rebuilds producer state: the transaction at 6 is open again.
      log.truncateTo(7)
      expect(log.lastStableOffset).toBe(6)
      expect(log.abortedTransactions(0, 7)).toEqual([{ producerId: 9n, firstOffset: 2 }])
    })

    it("fences transaction markers of an older producer or coordinator epoch, and control batches from clients", () => {
      const log = open()
      const txn = { producerId: 5n, producerEpoch: 3, transactional: true }
      log.appendAsLeader(batch({ ...txn, baseSequence: 0 }), 0, 0) // 0
      log.appendAsLeader(control(1, { producerId: 5n, producerEpoch: 3 }, 4), 0, 0, "coordinator") // commit at 1
      const before = log.logEndOffset
      const older = throws(() =>
        log.appendAsLeader(control(0, { producerId: 5n, producerEpoch: 2 }, 4), 0, 0, "coordinator")
      )
      expect(older).toBeInstanceOf(StorageError.InvalidProducerEpochError)
      const fenced = throws(() =>
        log.appendAsLeader(control(0, { producerId: 5n, producerEpoch: 3 }, 3), 0, 0, "coordinator")
      )
      expect(fenced).toBeInstanceOf(StorageError.TransactionCoordinatorFencedError)
      expect((fenced as StorageError.TransactionCoordinatorFencedError).errorCode).toBe(52)
      const client = throws(() => log.appendAsLeader(control(0, { producerId: 5n, producerEpoch: 3 }, 4), 0, 0))
      expect(client).toBeInstanceOf(StorageError.CorruptRecordError)
      expect(log.logEndOffset).toBe(before)
      // A newer coordinator epoch and a bumped producer epoch (an abort after a timeout) are taken.
      expect(
        log.appendAsLeader(control(0, { producerId: 5n, producerEpoch: 4 }, 5), 0, 0, "coordinator").firstOffset
      ).toBe(2)
    })

    it("describes its active producers: epoch, last sequence and timestamp, coordinator epoch, open transaction", () => {
      const log = store.open("producers", 0)
      log.appendAsLeader(batch({ producerId: 2n, producerEpoch: 0, baseSequence: 0, count: 3, timestamp: 40 }), 0, 0)
      const txn = { producerId: 1n, producerEpoch: 4, transactional: true }
      log.appendAsLeader(batch({ ...txn, baseSequence: 0, timestamp: 50 }), 0, 0) // 3
      log.appendAsLeader(control(1, { ...txn, timestamp: 60 }, 9), 0, 0, "coordinator") // 4
      log.appendAsLeader(batch({ ...txn, baseSequence: 1, count: 2, timestamp: 70 }), 0, 0) // 5..6
      log.appendAsLeader(batch({ count: 1 }), 0, 0)
      const described = [
        {
          producerId: 1n,
          producerEpoch: 4,
          lastSequence: 2,
          lastTimestamp: 70,
          coordinatorEpoch: 9,
          currentTxnStartOffset: 5
        },
        {
          producerId: 2n,
          producerEpoch: 0,
          lastSequence: 2,
          lastTimestamp: 40,
          coordinatorEpoch: -1,
          currentTxnStartOffset: -1
        }
      ]
      expect(log.activeProducers()).toEqual(described)
      store.closeAll()
      expect(store.open("producers", 0).activeProducers()).toEqual(described)
    })

    it("skips sequence checks for a coordinator's transactional batches, not their epoch checks", () => {
      const log = open()
      const txn = { producerId: 8n, producerEpoch: 1, transactional: true, baseSequence: 0 }
      expect(log.appendAsLeader(batch(txn), 0, 0, "coordinator")).toMatchObject({ firstOffset: 0, duplicate: false })
      // The same sequence again is a new batch from a coordinator (a client's would be a duplicate).
      expect(log.appendAsLeader(batch(txn), 0, 0, "coordinator")).toMatchObject({ firstOffset: 1, duplicate: false })
      expect(log.appendAsLeader(batch(txn), 0, 0)).toMatchObject({ duplicate: true })
      expect(throws(() => log.appendAsLeader(batch({ ...txn, producerEpoch: 0 }), 0, 0, "coordinator"))).toBeInstanceOf(
        StorageError.InvalidProducerEpochError
      )
    })

    it("clears all producer state on a MIRROR_PID_RESET control batch", () => {
      const log = open()
      log.appendAsFollower(
        batch({ baseOffset: 0, producerId: 3n, producerEpoch: 2, baseSequence: 0, transactional: true }),
        0
      )
      log.updateHighWatermark(1)
      expect(log.lastStableOffset).toBe(0)
      log.appendAsFollower(control(7, { baseOffset: 1 }), 0)
      log.updateHighWatermark(2)
      expect(log.lastStableOffset).toBe(2)
      expect(log.openTransactions()).toEqual([])
      // Producer 3 is unknown again: an older epoch is no longer fenced.
      expect(log.appendAsLeader(batch({ producerId: 3n, producerEpoch: 0, baseSequence: 0 }), 0, 0).firstOffset).toBe(2)
    })

    it("holds the last stable offset at a transaction until its marker is below the high watermark", () => {
      const log = open()
      const txn = { producerId: 4n, producerEpoch: 1, transactional: true }
      log.appendAsFollower(batch({ ...txn, baseOffset: 0, baseSequence: 0, count: 3 }), 0) // 0..2
      log.appendAsFollower(control(1, { ...txn, baseOffset: 3 }), 0) // commit at 3
      log.appendAsFollower(batch({ baseOffset: 4, count: 2 }), 0) // 4..5
      log.updateHighWatermark(3)
      // The COMMIT is in the log but not replicated: the transaction's records stay invisible.
      expect(log.lastStableOffset).toBe(0)
      expect(log.openTransactions()).toEqual([])
      log.updateHighWatermark(4)
      expect(log.lastStableOffset).toBe(4)
      log.appendAsFollower(batch({ ...txn, baseOffset: 6, baseSequence: 3, count: 2 }), 0) // 6..7
      log.appendAsFollower(control(0, { ...txn, baseOffset: 8 }), 0) // abort at 8
      log.updateHighWatermark(8)
      expect(log.lastStableOffset).toBe(6)
      expect(log.abortedTransactions(0, log.lastStableOffset)).toEqual([])
      log.updateHighWatermark(9)
      expect(log.lastStableOffset).toBe(9)
      expect(log.abortedTransactions(0, 9)).toEqual([{ producerId: 4n, firstOffset: 6 }])
      // Truncating the marker away reopens the transaction; the high watermark follows the log end.
      log.truncateTo(8)
      expect([log.highWatermark, log.lastStableOffset]).toEqual([8, 6])
      expect(log.openTransactions()).toEqual([
        { producerId: 4n, producerEpoch: 1, firstOffset: 6, coordinatorEpoch: 0 }
      ])
      expect(log.abortedTransactions(0, 8)).toEqual([])
    })

    it("keeps the coordinator epoch of a producer's last marker for its open transaction, across reopen", () => {
      const log = store.open("txn", 0)
      const txn = { producerId: 6n, producerEpoch: 2, transactional: true }
      log.appendAsFollower(batch({ ...txn, baseOffset: 0, baseSequence: 0 }), 0)
      log.appendAsFollower(control(1, { ...txn, baseOffset: 1 }, 17), 0)
      log.appendAsFollower(batch({ ...txn, producerEpoch: 3, baseOffset: 2, baseSequence: 0, count: 2 }), 0)
      log.updateHighWatermark(4)
      const open = [{ producerId: 6n, producerEpoch: 3, firstOffset: 2, coordinatorEpoch: 17 }]
      expect(log.openTransactions()).toEqual(open)
      expect(log.lastStableOffset).toBe(2)
      store.closeAll()
      const again = store.open("txn", 0)
      expect(again.openTransactions()).toEqual(open)
      expect(again.lastStableOffset).toBe(2)
    })

    it("after MIRROR_PID_RESET takes a new producer reusing a mirrored id and sequences as new, not as a duplicate", () => {
      const log = open()
      const mirrored = { producerId: 0n, producerEpoch: 0, baseSequence: 0, count: 3 }
      log.appendAsFollower(batch({ ...mirrored, baseOffset: 0 }), 0)
      // The same id, epoch and sequences from a producer of the destination cluster are a duplicate before the reset...
      expect(log.appendAsLeader(batch(mirrored), 0, 0)).toMatchObject({ duplicate: true, firstOffset: 0 })
      log.appendAsFollower(control(7, { baseOffset: 3 }), 0)
      // ...and new records after it.
      expect(log.appendAsLeader(batch(mirrored), 1, 0)).toMatchObject({ duplicate: false, firstOffset: 4 })
      expect(log.appendAsLeader(batch({ ...mirrored, baseSequence: 3, count: 1 }), 1, 0).firstOffset).toBe(7)
    })

    it("keeps the highest producer id it appended through MIRROR_PID_RESET, truncation and reopen", () => {
      const log = store.open("pids", 0)
      expect(log.highestProducerId()).toBe(-1n)
      log.appendAsFollower(batch({ baseOffset: 0, producerId: 7n, producerEpoch: 0, baseSequence: 0 }), 0)
      log.appendAsFollower(batch({ baseOffset: 1, producerId: 41n, producerEpoch: 0, baseSequence: 0 }), 0)
      log.appendAsFollower(batch({ baseOffset: 2 }), 0)
      log.appendAsFollower(control(7, { baseOffset: 3 }), 0)
      expect(log.activeProducers()).toEqual([])
      expect(log.highestProducerId()).toBe(41n)
      log.appendAsLeader(batch({ producerId: 3n, producerEpoch: 0, baseSequence: 0 }), 1, 0)
      expect(log.highestProducerId()).toBe(41n)
      log.updateHighWatermark(1)
      // The batch of producer 41 is cut away, but its id was in the log once: it stays the highest.
      log.truncateTo(1)
      expect(log.highestProducerId()).toBe(41n)
      store.closeAll()
      expect(store.open("pids", 0).highestProducerId()).toBe(41n)
    })

    it("finds offsets by timestamp (ListOffsets)", () => {
      const log = open({ indexIntervalBytes: 50 })
      log.appendAsLeader(batch({ timestamp: 100, count: 2 }), 1, 0) // 0..1
      log.appendAsLeader(batch({ timestamp: 300 }), 1, 0) // 2
      log.appendAsLeader(batch({ timestamp: 200 }), 2, 0) // 3
      log.appendAsLeader(batch({ timestamp: 400 }), 2, 0) // 4
      expect(log.offsetForTimestamp(-1)).toEqual({ timestamp: -1, offset: 5, leaderEpoch: 2 })
      expect(log.offsetForTimestamp(-2)).toEqual({ timestamp: -1, offset: 0, leaderEpoch: 1 })
      expect(log.offsetForTimestamp(-3)).toEqual({ timestamp: 400, offset: 4, leaderEpoch: 2 })
      expect(log.offsetForTimestamp(50)).toEqual({ timestamp: 100, offset: 0, leaderEpoch: 1 })
      expect(log.offsetForTimestamp(150)).toEqual({ timestamp: 300, offset: 2, leaderEpoch: 1 })
      expect(log.offsetForTimestamp(350)).toEqual({ timestamp: 400, offset: 4, leaderEpoch: 2 })
      expect(log.offsetForTimestamp(401)).toBeNull()
    })

    it("moves the log start with DeleteRecords, never above the high watermark", () => {
      const log = open({ segmentBytes: 200 })
      for (let i = 0; i < 6; i++) log.appendAsLeader(batch({ count: 2 }), i, 0)
      expect(throws(() => log.deleteRecordsBefore(4))).toBeInstanceOf(StorageError.OffsetOutOfRangeError)
      log.updateHighWatermark(12)
      const before = log.sizeInBytes
      log.deleteRecordsBefore(5)
      expect(log.logStartOffset).toBe(5)
      expect(log.sizeInBytes).toBeLessThan(before)
      expect(throws(() => log.read(4, 1000))).toBeInstanceOf(StorageError.OffsetOutOfRangeError)
      expect(baseOffsets(log.read(5, 1000).records)[0]).toBe(4)
      expect(log.offsetForTimestamp(-2)).toEqual({ timestamp: -1, offset: 5, leaderEpoch: 2 })
      // Epoch 1 is gone from the cache: below every known epoch, it ends where the first known one starts.
      expect(log.endOffsetForEpoch(1)).toEqual({ epoch: 1, endOffset: 5 })
      expect(log.endOffsetForEpoch(2)).toEqual({ epoch: 2, endOffset: 6 })
    })

    it("enforces size and time retention only below the high watermark", () => {
      const log = open({ segmentBytes: 200, retentionBytes: 400, retentionMs: -1 })
      const size = batch({ count: 2 }).length
      for (let i = 0; i < 10; i++) log.appendAsLeader(batch({ count: 2, timestamp: 1000 + i }), 0, 0)
      const segmentsBefore = Math.ceil(log.sizeInBytes / (size * Math.floor(200 / size)))
      expect(segmentsBefore).toBeGreaterThan(2)
      expect(log.enforceRetention(0)).toBe(0) // HW is 0: nothing may go
      log.updateHighWatermark(log.logEndOffset)
      const deleted = log.enforceRetention(0)
      expect(deleted).toBeGreaterThan(0)
      // Kafka's rule: delete oldest segments while the log stays at or above retention.bytes without them.
      expect(log.sizeInBytes).toBeGreaterThanOrEqual(400)
      expect(log.sizeInBytes).toBeLessThan(400 + 200)
      expect(log.logStartOffset).toBeGreaterThan(0)
      expect(log.logEndOffset).toBe(20)
      expect(baseOffsets(log.read(log.logStartOffset, 1 << 20).records)[0]).toBe(log.logStartOffset)

      const timed = open({ segmentBytes: 200, retentionMs: 1000 }, "timed")
      for (let i = 0; i < 10; i++) timed.appendAsLeader(batch({ count: 2, timestamp: i < 5 ? 1000 : 5000 }), 0, 0)
      timed.updateHighWatermark(14)
      const n = timed.enforceRetention(2500)
      expect(n).toBeGreaterThan(0)
      expect(timed.logStartOffset).toBeLessThanOrEqual(10)
      expect(timed.offsetForTimestamp(0)?.timestamp).toBe(timed.logStartOffset < 10 ? 1000 : 5000)
      // Everything expired, but nothing above the HW goes: the active segment stays.
      timed.enforceRetention(1_000_000)
      expect(timed.logEndOffset).toBe(20)
      expect(timed.logStartOffset).toBeLessThanOrEqual(14)
      timed.updateHighWatermark(20)
      timed.enforceRetention(1_000_000)
      expect([timed.logStartOffset, timed.logEndOffset, timed.sizeInBytes]).toEqual([20, 20, 0])
      expect(timed.appendAsLeader(batch(), 0, 0).firstOffset).toBe(20)
    })

    it("rolls segments on time", () => {
      const log = open({ segmentMs: 100 })
      log.appendAsLeader(batch(), 0, 1000)
      log.appendAsLeader(batch(), 0, 1050)
      log.appendAsLeader(batch(), 0, 1200)
      log.updateHighWatermark(3)
      // The first segment (offsets 0..1) can be dropped on its own once the log start passes it.
      log.deleteRecordsBefore(2)
      expect(log.sizeInBytes).toBe(batch().length)
    })

    it("keeps the same instance while open and the same state after close and reopen", () => {
      const log = store.open("t", 3, {}, "AAAAAAAAAAAAAAAAAAAAAA")
      expect(store.open("t", 3)).toBe(log)
      expect(store.get("t", 3)).toBe(log)
      log.appendAsLeader(batch({ count: 2 }), 1, 0)
      log.appendAsLeader(batch({ producerId: 5n, producerEpoch: 0, baseSequence: 0, transactional: true }), 2, 0)
      log.updateHighWatermark(3)
      const bytes = readAll(log)
      store.closeAll()
      expect(store.get("t", 3)).toBeUndefined()
      expect(store.list()).toContainEqual({ topic: "t", partition: 3, topicId: "AAAAAAAAAAAAAAAAAAAAAA" })
      const again = store.open("t", 3)
      expect(again).not.toBe(log)
      expect([again.logStartOffset, again.logEndOffset, again.highWatermark, again.lastStableOffset]).toEqual([
        0, 3, 3, 2
      ])
      expect(Buffer.compare(readAll(again), bytes)).toBe(0)
      expect(again.endOffsetForEpoch(1)).toEqual({ epoch: 1, endOffset: 2 })
      expect(
        again.appendAsLeader(batch({ producerId: 5n, producerEpoch: 0, baseSequence: 0, transactional: true }), 2, 0)
          .duplicate
      ).toBe(true)
      store.delete("t", 3)
      expect(store.list().some((p) => p.partition === 3)).toBe(false)
      expect(store.open("t", 3).logEndOffset).toBe(0)
    })
  })
}
