import { MetadataRecords } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import * as MetadataTransaction from "../src/MetadataTransaction.js"
import { uuid } from "./arbitrary.js"

const records = (n: number): MetadataRecords.MetadataRecord[] =>
  Array.from({ length: n }, (_, i) => MetadataRecords.make("TopicRecord", { name: `t${i}`, topicId: uuid(i) }))

const BEGIN = MetadataRecords.make("BeginTransactionRecord", { name: "op" })
const END = MetadataRecords.make("EndTransactionRecord", {})

describe("MetadataTransaction.transactionBatches", () => {
  it("keeps records that fit one batch as that batch, without markers", () => {
    expect(MetadataTransaction.transactionBatches("op", [])).toEqual([])
    const fit = records(10)
    expect(MetadataTransaction.transactionBatches("op", fit, 10)).toEqual([fit])
  })

  it("wraps more records than one batch in Begin … End, split into batches under the cap, in order", () => {
    for (const [n, cap] of [
      [11, 10],
      [18, 10],
      [19, 10],
      [25_001, MetadataTransaction.MAX_RECORDS_PER_BATCH]
    ] as const) {
      const rs = records(n)
      const batches = MetadataTransaction.transactionBatches("op", rs, cap)
      for (const b of batches) expect(b.length, `${n}/${cap}`).toBeLessThanOrEqual(cap)
      expect(batches.flat(), `${n}/${cap}`).toEqual([BEGIN, ...rs, END])
      expect(batches.length).toBe(Math.ceil((n + 2) / cap))
    }
  })
})

describe("MetadataTransaction.TransactionBuffer", () => {
  it("hands records back at once outside a transaction, the whole transaction at its End, nothing of an aborted one", () => {
    const b = new MetadataTransaction.TransactionBuffer<number>()
    const [r0, r1, r2, r3] = records(4)
    expect(b.offer(r0!, 0)).toEqual([0])
    expect(b.offer(BEGIN, -1)).toEqual([])
    expect([b.isOpen, b.openName]).toEqual([true, "op"])
    expect(b.offer(r1!, 1)).toEqual([])
    expect(b.offer(r2!, 2)).toEqual([])
    expect(b.size).toBe(2)
    expect(b.offer(END, -1)).toEqual([1, 2])
    expect(b.isOpen).toBe(false)
    expect(b.offer(BEGIN, -1)).toEqual([])
    expect(b.offer(r3!, 3)).toEqual([])
    expect(b.offer(MetadataTransaction.abortRecord("failover"), -1)).toEqual([])
    expect([b.isOpen, b.size]).toEqual([false, 0])
  })

  it("dies on a nested Begin and on an End or Abort without a Begin", () => {
    const b = new MetadataTransaction.TransactionBuffer<number>()
    expect(() => b.offer(END, 0)).toThrow("no metadata transaction to end")
    expect(() => b.offer(MetadataTransaction.abortRecord("x"), 0)).toThrow("no metadata transaction to abort")
    b.offer(BEGIN, 0)
    expect(() => b.offer(BEGIN, 0)).toThrow("nested metadata transaction")
  })
})
