import { Buffer } from "node:buffer"
import { RecordBatch } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import * as Demo from "../src/Demo.js"
import type { PartitionRow } from "../src/LiveView.js"
import * as Producer from "../src/Producer.js"

const row = (partition: number, state: string, destinationOffset: number, lag: number): PartitionRow => ({
  topic: "orders",
  partition,
  state,
  sourceOffset: destinationOffset + Math.max(0, lag),
  destinationOffset,
  lag
})

describe("Demo", () => {
  it("parses its options, with defaults and both --name value and --name=value", () => {
    expect(Demo.parseArgs([])).toEqual(Demo.defaults)
    expect(Demo.parseArgs(["--records", "5000", "--data-dir=/data", "--rate", "100", "--verbose"])).toEqual({
      records: 5000,
      recordsPerSecond: 100,
      dataDir: "/data",
      verbose: true
    })
    expect(() => Demo.parseArgs(["--records", "-3"])).toThrow(/positive integer/)
    expect(() => Demo.parseArgs(["--records"])).toThrow(/missing value/)
    expect(() => Demo.parseArgs(["--records", "--verbose"])).toThrow(/missing value/)
    expect(() => Demo.parseArgs(["--brokers", "3"])).toThrow(/unknown option/)
  })

  it("mirrors every partition of three topics", () => {
    const partitions = Demo.partitionsOf(Demo.TOPICS, Demo.PARTITIONS_PER_TOPIC)
    expect(partitions.length).toBe(12)
    expect(partitions.slice(0, 5)).toEqual([
      { topic: "orders", partition: 0 },
      { topic: "orders", partition: 1 },
      { topic: "orders", partition: 2 },
      { topic: "orders", partition: 3 },
      { topic: "payments", partition: 0 }
    ])
  })

  it("spreads a total over parts that differ by at most one", () => {
    for (let n = 1; n <= 16; n++)
      for (let total = 0; total <= 200; total++) {
        const parts = Demo.spread(total, n)
        expect(parts.length).toBe(n)
        expect(parts.reduce((a, b) => a + b, 0)).toBe(total)
        expect(Math.max(...parts) - Math.min(...parts)).toBeLessThanOrEqual(1)
      }
    expect(Demo.spread(1000, 12)).toEqual([84, 84, 84, 84, 83, 83, 83, 83, 83, 83, 83, 83])
  })

  it("is caught up when every partition mirrors with little lag in total", () => {
    const mirroring = [row(0, "MIRRORING", 100, 300), row(1, "MIRRORING", 100, 600)]
    expect(Demo.isCaughtUp(mirroring, 2, 1000)).toBe(true)
    expect(Demo.isCaughtUp(mirroring, 2, 800)).toBe(false)
    expect(Demo.isCaughtUp(mirroring, 3, 1000)).toBe(false)
    expect(Demo.isCaughtUp([row(0, "MIRRORING", 100, 0), row(1, "LOG_TRUNCATION", -1, -1)], 2, 1000)).toBe(false)
  })

  it("is drained when every partition has lag 0 and holds exactly what was produced to it", () => {
    const ends = new Map([
      [0, 100],
      [1, 50]
    ])
    const endOf = (tp: { partition: number }) => ends.get(tp.partition) ?? 0
    expect(Demo.isDrained([row(0, "MIRRORING", 100, 0), row(1, "MIRRORING", 50, 0)], 2, endOf)).toBe(true)
    // Lag 0 against a source view that is behind the producer is not drained yet.
    expect(Demo.isDrained([row(0, "MIRRORING", 100, 0), row(1, "MIRRORING", 40, 0)], 2, endOf)).toBe(false)
    expect(Demo.isDrained([row(0, "MIRRORING", 100, 0), row(1, "MIRRORING", 50, 2)], 2, endOf)).toBe(false)
    expect(Demo.isDrained([row(0, "MIRRORING", 100, 0), row(1, "FAILED", 50, 0)], 2, endOf)).toBe(false)
  })

  it("is stopped only when every partition is STOPPED", () => {
    expect(Demo.isStopped([row(0, "STOPPED", -1, -1), row(1, "STOPPED", -1, -1)], 2)).toBe(true)
    expect(Demo.isStopped([row(0, "STOPPED", -1, -1), row(1, "STOPPING", -1, -1)], 2)).toBe(false)
    expect(Demo.isStopped([row(0, "STOPPED", -1, -1)], 2)).toBe(false)
  })

  it("turns a mirror description into rows", () => {
    const rows = Demo.rowsOf([
      {
        topic: "orders",
        partition: 2,
        sourceOffset: 10n,
        destinationOffset: 8n,
        lag: 2n,
        lagTimeMs: 40n,
        state: "MIRRORING",
        retryAttempt: -1,
        errorMessage: null
      }
    ])
    expect(rows).toEqual([
      { topic: "orders", partition: 2, state: "MIRRORING", sourceOffset: 10, destinationOffset: 8, lag: 2 }
    ])
  })

  it("describes a mismatch by partition, kind, offset and both sides", () => {
    const base = {
      topic: "orders",
      destinationTopic: "orders",
      partition: 3,
      sourceTopicId: "a",
      destinationTopicId: "a",
      batches: 4,
      records: 40,
      bytes: 4000,
      sourceStart: 0,
      sourceEnd: 50,
      destinationStart: 0,
      destinationEnd: 50
    }
    expect(
      Demo.describeMismatch({
        ...base,
        firstMismatch: { offset: 40, what: "crc", source: "0x00000001", destination: "0x00000002" }
      })
    ).toBe("orders-3: crc at offset 40: source 0x00000001, destination 0x00000002")
    expect(
      Demo.describeMismatch({ ...base, firstMismatch: { offset: -1, what: "topicId", source: "a", destination: "b" } })
    ).toBe("orders-3: topic id: source a, destination b")
  })

  it("makes record values of the asked size, half of them the same sentence", () => {
    const a = Producer.recordValue(200)
    const b = Producer.recordValue(200)
    expect(a.length).toBe(200)
    expect(a.subarray(100).equals(b.subarray(100))).toBe(true)
    expect(a.subarray(0, 100).equals(b.subarray(0, 100))).toBe(false)
    // lz4 shrinks a batch of them by about the repeated half.
    const records = Array.from({ length: 100 }, () => ({ value: Producer.recordValue(200) }))
    const plain = RecordBatch.build({ records })
    const lz4 = RecordBatch.build({ records, compression: RecordBatch.Compression.lz4 })
    expect(lz4.length).toBeLessThan(plain.length * 0.75)
    const decoded = RecordBatch.records(lz4)
    if (decoded._tag === "Left") throw decoded.left
    expect(decoded.right.map((r) => Buffer.from(r.value!).length)).toEqual(records.map(() => 200))
  })
})
