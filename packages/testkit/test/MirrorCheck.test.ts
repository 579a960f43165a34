import { Buffer } from "node:buffer"
import { RecordBatch } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as MirrorCheck from "../src/MirrorCheck.js"

interface BatchSpec {
  readonly values: ReadonlyArray<string>
  readonly epoch: number
}

/** Back-to-back batches at consecutive offsets, as a leader would have appended them. */
const buildLog = (specs: ReadonlyArray<BatchSpec>, compression: RecordBatch.CompressionType = 0): Buffer[] => {
  let offset = 0
  return specs.map((s) => {
    const b = RecordBatch.build({
      records: s.values.map((v) => ({ value: Buffer.from(v) })),
      baseOffset: offset,
      partitionLeaderEpoch: s.epoch,
      timestamp: 1_700_000_000_000,
      compression
    })
    offset += s.values.length
    return b
  })
}

const copy = (batches: ReadonlyArray<Buffer>): Buffer[] => batches.map((b) => Buffer.from(b))

const batchSpec = fc.record({
  values: fc.array(fc.string({ maxLength: 20 }), { minLength: 1, maxLength: 5 }),
  epoch: fc.integer({ min: 0, max: 1000 })
})
const logSpec = fc.array(batchSpec, { minLength: 1, maxLength: 12 })

const recordsOf = (batches: ReadonlyArray<Buffer>): number =>
  batches.reduce((n, b) => n + RecordBatch.lastOffsetDelta(b) + 1, 0)

describe("MirrorCheck", () => {
  it.prop("a log compared with a copy of itself is identical, every batch counted", [logSpec], ([specs]) => {
    const log = buildLog(specs)
    const r = MirrorCheck.compareLogs(Buffer.concat(log), Buffer.concat(copy(log)))
    expect(r.firstMismatch).toBeNull()
    expect(r.batches).toBe(log.length)
    expect(r.records).toBe(recordsOf(log))
    expect(r.bytes).toBe(Buffer.concat(log).length)
  })

  it.prop(
    "a changed batch is the first mismatch, at its base offset and of the kind that was changed",
    [
      logSpec.chain((specs) =>
        fc.tuple(
          fc.constant(specs),
          fc.integer({ min: 0, max: specs.length - 1 }),
          fc.constantFrom<MirrorCheck.MismatchKind>("crc", "leaderEpoch", "bytes", "offset", "missing")
        )
      )
    ],
    ([[specs, k, kind]]) => {
      const source = buildLog(specs)
      const destination = copy(source)
      const base = RecordBatch.baseOffset(source[k]!)
      let expected: MirrorCheck.MismatchKind = kind
      switch (kind) {
        case "crc": {
          // Another first value: the same offsets, other bytes, so another CRC.
          const values = specs[k]!.values.map((v, i) => (i === 0 ? `${v}!` : v))
          destination[k] = buildLog([...specs.slice(0, k), { ...specs[k]!, values }])[k]!
          break
        }
        case "leaderEpoch":
          RecordBatch.setPartitionLeaderEpoch(destination[k]!, specs[k]!.epoch + 1)
          break
        case "bytes":
          // Not covered by the CRC, and neither an offset nor an epoch: only the full bytes tell.
          destination[k]![RecordBatch.MAGIC] = 3
          break
        case "offset":
          destination.splice(k, 1)
          if (k === source.length - 1) expected = "missing"
          break
        case "missing":
          destination.splice(k)
          break
      }
      const r = MirrorCheck.compareLogs(Buffer.concat(source), Buffer.concat(destination))
      expect(r.firstMismatch?.what).toBe(expected)
      expect(r.firstMismatch?.offset).toBe(base)
      expect(r.batches).toBe(k)
      expect(r.records).toBe(base)
    }
  )

  it.prop(
    "a shorter destination is identical up to its end",
    [logSpec.chain((specs) => fc.tuple(fc.constant(specs), fc.integer({ min: 0, max: specs.length })))],
    ([[specs, keep]]) => {
      const source = buildLog(specs)
      const destination = source.slice(0, keep)
      const end = recordsOf(destination)
      const r = MirrorCheck.compareLogs(Buffer.concat(source), Buffer.concat(destination), end)
      expect(r.firstMismatch).toBeNull()
      expect(r.batches).toBe(keep)
      expect(r.records).toBe(end)
    }
  )

  it("compares compressed batches as bytes, without decoding them", () => {
    const specs = [
      { values: ["a", "b", "c"], epoch: 0 },
      { values: ["d"], epoch: 2 }
    ]
    const source = Buffer.concat(buildLog(specs, RecordBatch.Compression.lz4))
    const destination = Buffer.from(source)
    // A record byte changed with the stored CRC left alone: a decoder would fail, the comparison does not.
    const second = RecordBatch.split(destination).batches[1]!
    const at = second.position + RecordBatch.HEADER_SIZE + 2
    destination[at] = destination[at]! ^ 0xff
    const r = MirrorCheck.compareLogs(source, destination)
    expect(r.firstMismatch).toEqual({
      offset: 3,
      what: "bytes",
      source: `byte ${RecordBatch.HEADER_SIZE + 2} = 0x${source[at]!.toString(16).padStart(2, "0")} of ${second.size}`,
      destination: `byte ${RecordBatch.HEADER_SIZE + 2} = 0x${destination[at]!.toString(16).padStart(2, "0")} of ${second.size}`
    })
    expect(r.batches).toBe(1)
    expect(r.records).toBe(3)
  })

  it("names both sides of a missing batch", () => {
    const log = buildLog([
      { values: ["a", "b"], epoch: 0 },
      { values: ["c"], epoch: 0 }
    ])
    const r = MirrorCheck.compareLogs(log[0]!, Buffer.concat(log))
    expect(r.firstMismatch).toEqual({
      offset: 2,
      what: "missing",
      source: "none (log ends at 2)",
      destination: "batch 2-2"
    })
  })

  it("ignores a partial batch at the end, as a fetch response may carry one", () => {
    const log = Buffer.concat(buildLog([{ values: ["a"], epoch: 0 }]))
    const partial = Buffer.concat([log, buildLog([{ values: ["b", "c"], epoch: 0 }])[0]!.subarray(0, 30)])
    const r = MirrorCheck.compareLogs(log, partial)
    expect(r.firstMismatch).toBeNull()
    expect(r.batches).toBe(1)
  })

  it("bounds by the chosen high watermark, by default the smaller one", () => {
    expect(MirrorCheck.boundOf(undefined, 10, 7)).toBe(7)
    expect(MirrorCheck.boundOf(undefined, 5, 7)).toBe(5)
    expect(MirrorCheck.boundOf("sourceHighWatermark", 10, 7)).toBe(10)
    expect(MirrorCheck.boundOf("destinationHighWatermark", 10, 7)).toBe(7)
  })
})
