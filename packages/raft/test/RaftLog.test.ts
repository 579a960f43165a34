import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import type { LogRecord } from "../src/RaftMessages.js"
import * as RaftLog from "../src/RaftLog.js"

/** A log as epochs of runs: [epoch increments, run lengths]. */
const runsArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 6 })), { maxLength: 8 })

const build = (runs: ReadonlyArray<readonly [number, number]>) => {
  const records: Array<LogRecord<string>> = []
  let epoch = 0
  for (const [bump, length] of runs) {
    epoch += bump
    for (let i = 0; i < length; i++)
      records.push({ _tag: "Data", offset: records.length, epoch: epoch, value: `${records.length}` })
  }
  return records
}

/** The reference answer of endOffsetForEpoch, straight from the records. */
const reference = (records: ReadonlyArray<LogRecord<string>>, epoch: number) => {
  const below = records.filter((r) => r.epoch <= epoch)
  const last = below[below.length - 1]
  if (last === undefined) return { epoch: -1, endOffset: -1 }
  return { epoch: last.epoch, endOffset: last.offset + 1 }
}

describe("RaftLog", () => {
  it.prop(
    "endOffsetForEpoch answers as the records do",
    [runsArb, fc.integer({ min: 0, max: 30 })],
    ([runs, epoch]) => {
      const records = build(runs)
      const view = RaftLog.append(RaftLog.empty, records)
      expect(RaftLog.endOffsetForEpoch(view, epoch)).toEqual(reference(records, epoch))
      expect(view.endOffset).toBe(records.length)
      expect(RaftLog.lastEpoch(view)).toBe(records[records.length - 1]?.epoch ?? 0)
    }
  )

  it.prop(
    "a truncation gives the view of the shorter log, and appends in any batching give the same view",
    [runsArb, fc.nat(), fc.integer({ min: 1, max: 5 })],
    ([runs, cut, batch]) => {
      const records = build(runs)
      const at = records.length === 0 ? 0 : cut % (records.length + 1)
      let batched = RaftLog.empty
      for (let i = 0; i < records.length; i += batch) batched = RaftLog.append(batched, records.slice(i, i + batch))
      expect(batched).toEqual(RaftLog.append(RaftLog.empty, records))
      const truncated = RaftLog.truncateTo(RaftLog.flushed(batched, records.length), at)
      const direct = RaftLog.flushed(RaftLog.append(RaftLog.empty, records.slice(0, at)), at)
      expect(truncated).toEqual(direct)
    }
  )

  it.prop(
    "after a snapshot the epochs past it answer as before, and older epochs point at the snapshot",
    [runsArb, fc.nat(), fc.integer({ min: 0, max: 30 })],
    ([runs, cut, epoch]) => {
      const records = build(runs)
      fc.pre(records.length > 0)
      const end = 1 + (cut % records.length)
      const view = RaftLog.append(RaftLog.empty, records)
      const id = { endOffset: end, epoch: RaftLog.epochAt(view, end - 1) }
      expect(id.epoch).toBe(records[end - 1]?.epoch)
      const snap = RaftLog.snapshotTaken(view, id)
      expect(snap.logStartOffset).toBe(end)
      const before = RaftLog.endOffsetForEpoch(view, epoch)
      const after = RaftLog.endOffsetForEpoch(snap, epoch)
      if (before.endOffset >= end) expect(after).toEqual(before)
      else if (epoch >= id.epoch) expect(after).toEqual({ epoch: id.epoch, endOffset: end })
      else expect(after).toEqual({ epoch: -1, endOffset: -1 })
    }
  )

  it("compares logs by last epoch, then end offset", () => {
    const view = RaftLog.append(RaftLog.empty, build([[2, 3]]))
    expect(RaftLog.isUpToDate(view, 2, 3)).toBe(true)
    expect(RaftLog.isUpToDate(view, 2, 2)).toBe(false)
    expect(RaftLog.isUpToDate(view, 3, 0)).toBe(true)
    expect(RaftLog.isUpToDate(view, 1, 99)).toBe(false)
  })
})
