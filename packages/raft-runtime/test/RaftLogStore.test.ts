import { RecordBatch } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import fc from "fast-check"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as RaftLogStore from "../src/RaftLogStore.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "raft-log-"))
let n = 0
const dir = () => path.join(root, `d${n++}`)
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

type Record = RaftLogStore.Record
const data = (offset: number, epoch: number, text = `v${offset}`): Record => ({
  _tag: "Data",
  offset,
  epoch,
  value: Buffer.from(text)
})
const leaderChange = (offset: number, epoch: number, leaderId: number): Record => ({
  _tag: "LeaderChange",
  offset,
  epoch,
  value: { leaderId, voters: [1, 2, 3], grantingVoters: [leaderId, 2] }
})

const decode = (bytes: Buffer) => Either.getOrThrow(RaftLogStore.decodeBatches(bytes))
const segment = (d: string) => path.join(d, "__cluster_metadata-0", "00000000000000000000.log")

/** Epoch 1: a LeaderChange and two records; epoch 3: a LeaderChange and three records. */
const twoEpochs: ReadonlyArray<Record> = [
  leaderChange(0, 1, 1),
  data(1, 1),
  data(2, 1),
  leaderChange(3, 3, 2),
  data(4, 3),
  data(5, 3),
  data(6, 3)
]

describe("RaftLogStore", () => {
  it("stores records as batches stamped with their epoch and rebuilds the epoch view on open", () => {
    const d = dir()
    const log = RaftLogStore.openFile(d)
    log.appendRecords(twoEpochs.slice(0, 3), 1000)
    log.appendRecords(twoEpochs.slice(3), 2000)
    expect(log.flush()).toBe(7)
    const bytes = log.read(0, 7)
    const batches = RecordBatch.split(bytes).batches.map((b) => ({
      base: RecordBatch.baseOffset(bytes, b.position),
      epoch: RecordBatch.partitionLeaderEpoch(bytes, b.position),
      control: RecordBatch.isControl(bytes, b.position)
    }))
    expect(batches).toEqual([
      { base: 0, epoch: 1, control: true },
      { base: 1, epoch: 1, control: false },
      { base: 3, epoch: 3, control: true },
      { base: 4, epoch: 3, control: false }
    ])
    expect(decode(bytes)).toEqual(twoEpochs)
    log.close()

    const reopened = RaftLogStore.openFile(d)
    expect(reopened.view()).toEqual({
      logStartOffset: 0,
      snapshotId: null,
      endOffset: 7,
      epochs: [
        { epoch: 1, startOffset: 0 },
        { epoch: 3, startOffset: 3 }
      ],
      flushedOffset: 7
    })
    expect(reopened.read(0, 7).equals(bytes)).toBe(true)
    // Whole batches whose base offset is in the range; a range ending inside a batch returns all of it.
    expect(decode(reopened.read(3, 5)).map((r) => r.offset)).toEqual([3, 4, 5, 6])
    expect(reopened.read(7, 10).length).toBe(0)
    reopened.close()
  })

  it("appends a follower's fetched batches bytes unchanged", () => {
    const leader = RaftLogStore.openMemory()
    leader.appendRecords(twoEpochs, 5000)
    const fetched = leader.read(0, 7)
    const follower = RaftLogStore.openFile(dir())
    follower.appendBatches(fetched.subarray(0, RecordBatch.sizeInBytes(fetched, 0)), 9999)
    follower.appendBatches(fetched.subarray(RecordBatch.sizeInBytes(fetched, 0)), 9999)
    expect(follower.read(0, 7).equals(fetched)).toBe(true)
    expect(follower.view().epochs).toEqual(leader.view().epochs)
    follower.close()
  })

  it("truncates durably to a batch boundary: later batches and their epochs go", () => {
    const d = dir()
    const log = RaftLogStore.openFile(d)
    log.appendRecords(twoEpochs, 1)
    log.flush()
    log.truncateTo(3)
    expect(log.endOffset()).toBe(3)
    expect(log.view().epochs).toEqual([{ epoch: 1, startOffset: 0 }])
    log.appendRecords([leaderChange(3, 4, 3), data(4, 4, "after")], 2)
    log.flush()
    log.close()
    const reopened = RaftLogStore.openFile(d)
    expect(reopened.view().epochs).toEqual([
      { epoch: 1, startOffset: 0 },
      { epoch: 4, startOffset: 3 }
    ])
    expect(decode(reopened.read(0, 10))).toEqual([...twoEpochs.slice(0, 3), leaderChange(3, 4, 3), data(4, 4, "after")])
    // Beyond the end is nothing to do; inside a batch is refused.
    reopened.truncateTo(99)
    expect(reopened.endOffset()).toBe(5)
    expect(() => reopened.truncateTo(2)).toThrow(/inside the batch starting at 1/)
    reopened.close()
  })

  it("recovers from a torn tail after the last fsync: cut to the last whole batch, epochs rebuilt", () => {
    const d = dir()
    const log = RaftLogStore.openFile(d)
    log.appendRecords(twoEpochs, 1)
    log.flush()
    const durable = fs.readFileSync(segment(d))
    // The next batch was half written when the power went.
    const next = RaftLogStore.encodeRecords([leaderChange(7, 5, 3), data(8, 5)], 2)
    log.close()
    fs.appendFileSync(segment(d), Buffer.concat(next).subarray(0, 70))
    const reopened = RaftLogStore.openFile(d)
    expect(reopened.endOffset()).toBe(7)
    expect(reopened.view().epochs).toEqual([
      { epoch: 1, startOffset: 0 },
      { epoch: 3, startOffset: 3 }
    ])
    expect(fs.readFileSync(segment(d)).equals(durable)).toBe(true)
    reopened.appendRecords([leaderChange(7, 5, 3)], 3)
    expect(reopened.view().endOffset).toBe(8)
    reopened.close()
  })

  it("refuses bytes that are not whole metadata batches", () => {
    const bytes = Buffer.concat(RaftLogStore.encodeRecords(twoEpochs, 1))
    expect(Either.isLeft(RaftLogStore.decodeBatches(bytes.subarray(0, bytes.length - 3)))).toBe(true)
    const flipped = Buffer.from(bytes)
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 0xff
    expect(Either.isLeft(RaftLogStore.decodeBatches(flipped))).toBe(true)
  })

  it("encodes and decodes any run of records unchanged (offsets, epochs, values, LeaderChange)", () => {
    const run = fc
      .array(
        fc.record({
          leaderChange: fc.boolean(),
          bump: fc.boolean(),
          value: fc.uint8Array({ maxLength: 40 }),
          leader: fc.integer({ min: 0, max: 5 })
        }),
        { minLength: 1, maxLength: 40 }
      )
      .map((steps) => {
        let epoch = 1
        return steps.map((s, offset): Record => {
          if (s.bump) epoch++
          return s.leaderChange
            ? {
                _tag: "LeaderChange",
                offset,
                epoch,
                value: { leaderId: s.leader, voters: [s.leader], grantingVoters: [] }
              }
            : { _tag: "Data", offset, epoch, value: Buffer.from(s.value) }
        })
      })
    fc.assert(
      fc.property(run, (records) => {
        const bytes = Buffer.concat(RaftLogStore.encodeRecords(records, 42))
        expect(decode(bytes)).toEqual(records)
      })
    )
  })

  it("moves its log start to a snapshot, is replaced by an installed one, and reopens at the snapshot", () => {
    const d = dir()
    const log = RaftLogStore.openFile(d)
    log.appendRecords(twoEpochs.slice(0, 3), 1000)
    log.appendRecords(twoEpochs.slice(3), 2000)
    log.flush()
    // The records below 3 are now in a snapshot; the log keeps epoch 3 on.
    expect(log.isBatchBoundary(3)).toBe(true)
    expect(log.isBatchBoundary(5)).toBe(false)
    expect(() => log.deleteBefore(5, { endOffset: 5, epoch: 3 })).toThrow(RaftLogStore.InvalidBatches)
    log.deleteBefore(3, { endOffset: 3, epoch: 1 })
    expect(log.logStartOffset()).toBe(3)
    expect(decode(log.read(3, 7)).map((r) => r.offset)).toEqual([3, 4, 5, 6])
    log.close()

    const reopened = RaftLogStore.openFile(d, { endOffset: 3, epoch: 1 })
    expect(reopened.view()).toEqual({
      logStartOffset: 3,
      snapshotId: { endOffset: 3, epoch: 1 },
      endOffset: 7,
      epochs: [{ epoch: 3, startOffset: 3 }],
      flushedOffset: 7
    })
    // A snapshot fetched from the leader replaces the whole log.
    reopened.reset({ endOffset: 40, epoch: 5 })
    expect(reopened.view()).toMatchObject({ logStartOffset: 40, endOffset: 40, epochs: [] })
    reopened.close()
    expect(RaftLogStore.openFile(d, { endOffset: 40, epoch: 5 }).view()).toMatchObject({
      logStartOffset: 40,
      snapshotId: { endOffset: 40, epoch: 5 },
      endOffset: 40
    })
  })

  it("catches up with a snapshot newer than the log on open, and refuses a log that starts past its snapshot", () => {
    const d = dir()
    const log = RaftLogStore.openFile(d)
    log.appendRecords(twoEpochs, 1000)
    log.flush()
    log.close()
    // A crash after the snapshot file was made, before the log followed it.
    const behind = RaftLogStore.openFile(d, { endOffset: 3, epoch: 1 })
    expect(behind.logStartOffset()).toBe(3)
    behind.close()
    expect(() => RaftLogStore.openFile(d, null)).toThrow(/starts at 3, past offset 0 without a snapshot/)
    // A snapshot past the log's end (installed, then the crash): the log restarts empty at its end.
    const installed = RaftLogStore.openFile(d, { endOffset: 20, epoch: 4 })
    expect(installed.view()).toMatchObject({ logStartOffset: 20, endOffset: 20 })
    installed.close()
  })
})
