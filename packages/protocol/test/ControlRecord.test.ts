import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import * as ControlRecord from "../src/ControlRecord.js"
import * as RecordBatch from "../src/RecordBatch.js"

const onlyRecord = (b: Buffer): RecordBatch.BatchRecord => {
  const records = Either.getOrThrow(RecordBatch.records(b))
  expect(records).toHaveLength(1)
  return records[0]!
}

describe("ControlRecord", () => {
  it.each([true, false])("endTxnMarker (commit=%s) builds a transactional control batch", (commit) => {
    const b = ControlRecord.endTxnMarker({
      producerId: 4000n,
      producerEpoch: 3,
      commit,
      coordinatorEpoch: 17,
      baseOffset: 120,
      leaderEpoch: 5,
      timestamp: 1_700_000_000_000
    })
    expect(RecordBatch.isControl(b)).toBe(true)
    expect(RecordBatch.isTransactional(b)).toBe(true)
    expect(RecordBatch.producerId(b)).toBe(4000n)
    expect(RecordBatch.producerEpoch(b)).toBe(3)
    expect(RecordBatch.baseOffset(b)).toBe(120)
    expect(RecordBatch.partitionLeaderEpoch(b)).toBe(5)
    expect(RecordBatch.maxTimestamp(b)).toBe(1_700_000_000_000)
    const r = onlyRecord(b)
    expect(Buffer.from(r.key!).toString("hex")).toBe(commit ? "00000001" : "00000000")
    expect(Buffer.from(r.value!).toString("hex")).toBe("0000" + "00000011")
    expect(Either.getOrThrow(ControlRecord.parseControl(b))).toEqual({
      type: commit ? "COMMIT" : "ABORT",
      version: 0,
      coordinatorEpoch: 17,
      producerId: 4000n,
      producerEpoch: 3
    })
  })

  it("mirrorPidReset builds a non-transactional control batch without a producer id", () => {
    const b = ControlRecord.mirrorPidReset({ sourceClusterId: "src", baseOffset: 9, leaderEpoch: 2, timestamp: 77 })
    expect(RecordBatch.isControl(b)).toBe(true)
    expect(RecordBatch.isTransactional(b)).toBe(false)
    expect(RecordBatch.producerId(b)).toBe(-1n)
    expect(RecordBatch.producerEpoch(b)).toBe(-1)
    expect(RecordBatch.baseOffset(b)).toBe(9)
    expect(RecordBatch.lastOffset(b)).toBe(9)
    expect(RecordBatch.partitionLeaderEpoch(b)).toBe(2)
    const r = onlyRecord(b)
    expect(Buffer.from(r.key!).toString("hex")).toBe("00000007")
    // Version int16, SourceClusterId as a compact string (length + 1), no tagged fields.
    expect(Buffer.from(r.value!).toString("hex")).toBe("0000" + "04" + Buffer.from("src").toString("hex") + "00")
    expect(Either.getOrThrow(ControlRecord.parseControl(b))).toEqual({
      type: "MIRROR_PID_RESET",
      version: 0,
      sourceClusterId: "src"
    })
  })

  it.prop(
    "mirrorPidReset round-trips any source cluster id",
    [fc.string({ maxLength: 40 })],
    ([id]) => {
      const parsed = Either.getOrThrow(
        ControlRecord.parseControl(ControlRecord.mirrorPidReset({ sourceClusterId: id }))
      )
      expect(parsed).toEqual({ type: "MIRROR_PID_RESET", version: 0, sourceClusterId: id })
    },
    { fastCheck: { numRuns: 100 } }
  )

  it("reports control types it does not know as UNKNOWN", () => {
    const b = RecordBatch.build({
      records: [{ key: ControlRecord.encodeKey(2), value: Buffer.alloc(0) }],
      isControl: true
    })
    expect(Either.getOrThrow(ControlRecord.parseControl(b))).toEqual({ type: "UNKNOWN", code: 2 })
  })

  it("rejects data batches and malformed control records with typed errors", () => {
    const data = RecordBatch.build({ records: [{ key: ControlRecord.encodeKey(1), value: Buffer.alloc(6) }] })
    const notControl = ControlRecord.parseControl(data)
    expect(Either.isLeft(notControl) && notControl.left._tag).toBe("DecodeError")
    const shortKey = RecordBatch.build({ records: [{ key: Buffer.from([0]), value: null }], isControl: true })
    expect(Either.isLeft(ControlRecord.parseControl(shortKey))).toBe(true)
    const shortValue = RecordBatch.build({
      records: [{ key: ControlRecord.encodeKey(0), value: Buffer.from([0, 0]) }],
      isControl: true
    })
    expect(Either.isLeft(ControlRecord.parseControl(shortValue))).toBe(true)
    const badReset = RecordBatch.build({
      records: [{ key: ControlRecord.encodeKey(7), value: Buffer.from([0, 0, 9]) }],
      isControl: true
    })
    const reset = ControlRecord.parseControl(badReset)
    expect(Either.isLeft(reset) && reset.left._tag).toBe("DecodeError")
    const corrupt = ControlRecord.mirrorPidReset({ sourceClusterId: "x" })
    corrupt[corrupt.length - 1] ^= 1
    const crc = ControlRecord.parseControl(corrupt)
    expect(Either.isLeft(crc) && crc.left._tag).toBe("CorruptBatch")
  })
})
