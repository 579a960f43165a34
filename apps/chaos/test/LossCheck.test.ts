import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as LossCheck from "../src/LossCheck.js"

const topics = ["t-a", "t-b"]

/** Acknowledged records at distinct offsets, with unique values. */
const ackedRecords = fc
  .uniqueArray(
    fc.record({
      topic: fc.constantFrom(...topics),
      partition: fc.integer({ min: 0, max: 3 }),
      offset: fc.integer({ min: 0, max: 500 })
    }),
    { minLength: 1, maxLength: 200, selector: (a) => `${a.topic}-${a.partition}-${a.offset}` }
  )
  .map((as) => as.map((a, i) => ({ ...a, value: `v-${i}` })))

/** What a log holds: every acked record, plus unacknowledged ones at other offsets. */
const contentsOf = (
  acked: ReadonlyArray<LossCheck.Acked>,
  extra: ReadonlyArray<{ partition: number; offset: number }> = []
): Map<string, Map<number, string>> => {
  const out = new Map<string, Map<number, string>>()
  const put = (topic: string, partition: number, offset: number, value: string) => {
    const key = LossCheck.partitionKey(topic, partition)
    let m = out.get(key)
    if (m === undefined) out.set(key, (m = new Map()))
    if (!m.has(offset)) m.set(offset, value)
  }
  for (const a of acked) put(a.topic, a.partition, a.offset, a.value)
  for (const e of extra) put("t-a", e.partition, e.offset, "unacked")
  return out
}

describe("LossCheck", () => {
  it.prop(
    "passes when every acked record is there, whatever else the log holds",
    [ackedRecords, fc.array(fc.record({ partition: fc.integer({ min: 0, max: 3 }), offset: fc.nat(600) }))],
    ([acked, extra]) => {
      const r = LossCheck.check(acked, contentsOf(acked, extra))
      expect(r).toEqual({ checked: acked.length, lost: [], changed: [] })
    }
  )

  it.prop("finds a missing record", [ackedRecords, fc.nat()], ([acked, i]) => {
    const victim = acked[i % acked.length]!
    const contents = contentsOf(acked)
    contents.get(LossCheck.partitionKey(victim.topic, victim.partition))!.delete(victim.offset)
    const r = LossCheck.check(acked, contents)
    expect(r.lost).toEqual([victim])
    expect(r.changed).toEqual([])
  })

  it.prop("finds a changed record", [ackedRecords, fc.nat()], ([acked, i]) => {
    const victim = acked[i % acked.length]!
    const contents = contentsOf(acked)
    contents.get(LossCheck.partitionKey(victim.topic, victim.partition))!.set(victim.offset, "other")
    const r = LossCheck.check(acked, contents)
    expect(r.lost).toEqual([])
    expect(r.changed).toEqual([{ acked: victim, found: "other" }])
  })

  it.prop("finds every record of a partition that is gone", [ackedRecords], ([acked]) => {
    const first = acked[0]!
    const key = LossCheck.partitionKey(first.topic, first.partition)
    const contents = contentsOf(acked)
    contents.delete(key)
    const r = LossCheck.check(acked, contents)
    expect(r.lost).toEqual(acked.filter((a) => LossCheck.partitionKey(a.topic, a.partition) === key))
  })

  it("parses kcat's offset and value lines", () => {
    const c = LossCheck.parseOffsetsAndValues("0 a\n1 b c\n\n17 d\n")
    expect([...c]).toEqual([
      [0, "a"],
      [1, "b c"],
      [17, "d"]
    ])
  })
})
