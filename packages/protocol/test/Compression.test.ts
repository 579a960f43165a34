import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import { readFileSync } from "node:fs"
import { compressSync as rawSnappy } from "snappy"
import * as Compression from "../src/Compression.js"
import * as RecordBatch from "../src/RecordBatch.js"

const fixture = (codec: string): Buffer => readFileSync(new URL(`./fixtures/batches/${codec}.bin`, import.meta.url))

/** What `fixtures/capture-batches.mjs` sends with kcat. */
const HEADER_VALUE = "kcat-golden-".repeat(8)

const XERIAL_MAGIC = "82534e4150505900"

describe("Compression", () => {
  for (const type of Compression.all) {
    it.prop(
      `${Compression.names[type]}: decompress(compress(x)) = x`,
      [fc.uint8Array({ maxLength: 4096 }), fc.constantFrom(1, 7, 100)],
      ([data, repeat]) => {
        const input = Buffer.concat(Array.from({ length: repeat }, () => data))
        const compressed = Either.getOrThrow(Compression.compress(type, input))
        expect(Either.getOrThrow(Compression.decompress(type, compressed)).equals(input)).toBe(true)
      },
      { fastCheck: { numRuns: 30 } }
    )
  }

  for (const type of [1, 2, 3, 4] as const) {
    it.prop(
      `${Compression.names[type]}: arbitrary bytes decompress or fail with CompressionError, never throw`,
      [fc.uint8Array({ maxLength: 256 })],
      ([data]) => {
        const result = Compression.decompress(type, data)
        if (Either.isLeft(result)) {
          expect(result.left._tag).toBe("CompressionError")
          expect(result.left.codec).toBe(Compression.names[type])
        }
      },
      { fastCheck: { numRuns: 200 } }
    )
  }

  it("writes snappy with the xerial framing, in 32 KiB blocks, and reads it back", () => {
    const input = Buffer.alloc(80 * 1024, "clustermirror")
    const framed = Either.getOrThrow(Compression.compress(2, input))
    expect(framed.subarray(0, 16).toString("hex")).toBe(XERIAL_MAGIC + "00000001" + "00000001")
    let blocks = 0
    for (let p = 16; p < framed.length; p += 4 + framed.readInt32BE(p)) blocks++
    expect(blocks).toBe(3)
    expect(Either.getOrThrow(Compression.decompress(2, framed)).equals(input)).toBe(true)
  })

  it("reads raw snappy blocks, as librdkafka writes them", () => {
    const input = Buffer.from("m0m1m2m3".repeat(50))
    expect(Either.getOrThrow(Compression.decompress(2, rawSnappy(input))).equals(input)).toBe(true)
  })

  it("rejects a xerial stream with a truncated block", () => {
    const framed = Either.getOrThrow(Compression.compress(2, Buffer.from("abc".repeat(100))))
    const result = Compression.decompress(2, framed.subarray(0, framed.length - 2))
    expect(Either.isLeft(result) && result.left.operation).toBe("decompress")
  })

  it("writes the same LZ4 frame descriptor as librdkafka (independent blocks, 64 KiB, no checksums)", () => {
    const kcat = fixture("lz4").subarray(RecordBatch.HEADER_SIZE)
    const ours = Either.getOrThrow(Compression.compress(3, Buffer.from("abc".repeat(100))))
    // magic (4) + FLG + BD + header checksum
    expect(ours.subarray(0, 7).toString("hex")).toBe(kcat.subarray(0, 7).toString("hex"))
    expect(ours.subarray(0, 7).toString("hex")).toBe("04224d18604082")
  })

  describe("golden batches produced by kcat (librdkafka 2.0.2)", () => {
    for (const type of Compression.all) {
      const codec = Compression.names[type]
      it(`${codec}: valid CRC, codec ${type}, records k0..k9 / m0..m9 with their header`, () => {
        const b = fixture(codec)
        expect(RecordBatch.split(b)).toEqual({ batches: [{ position: 0, size: b.length }], rest: b.length })
        expect(RecordBatch.verifyCrc(b)).toBe(true)
        expect(Either.isRight(RecordBatch.validate(b))).toBe(true)
        expect(RecordBatch.compression(b)).toBe(type)
        expect(RecordBatch.recordCount(b)).toBe(10)
        expect(RecordBatch.lastOffsetDelta(b)).toBe(9)
        expect(RecordBatch.producerId(b)).toBe(-1n)
        const records = Either.getOrThrow(RecordBatch.records(b))
        expect(records.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        expect(records.map((r) => Buffer.from(r.key!).toString())).toEqual(records.map((_, i) => `k${i}`))
        expect(records.map((r) => Buffer.from(r.value!).toString())).toEqual(records.map((_, i) => `m${i}`))
        for (const r of records) {
          expect(r.headers.map((h) => [h.key, Buffer.from(h.value!).toString()])).toEqual([["origin", HEADER_VALUE]])
          expect(r.timestamp).toBeGreaterThanOrEqual(RecordBatch.baseTimestamp(b))
          expect(r.timestamp).toBeLessThanOrEqual(RecordBatch.maxTimestamp(b))
        }
      })
    }

    it("compressed sections decompress to the uncompressed batch's record layout", () => {
      const plain = fixture("none")
      for (const type of [1, 2, 3, 4] as const) {
        const b = fixture(Compression.names[type])
        const section = Either.getOrThrow(Compression.decompress(type, b.subarray(RecordBatch.HEADER_SIZE)))
        // Timestamps differ between runs, and with them a byte or two per record; sizes do not.
        expect(section.length).toBe(plain.length - RecordBatch.HEADER_SIZE)
      }
    })

    it("building kcat's records again reproduces its uncompressed batch byte for byte", () => {
      const plain = fixture("none")
      const original = Either.getOrThrow(RecordBatch.records(plain))
      const rebuilt = RecordBatch.build({
        records: original.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })),
        partitionLeaderEpoch: RecordBatch.partitionLeaderEpoch(plain)
      })
      expect(rebuilt.toString("hex")).toBe(plain.toString("hex"))
    })

    it("re-encoding the decoded records with each codec gives the same records", () => {
      const original = Either.getOrThrow(RecordBatch.records(fixture("none")))
      for (const type of Compression.all) {
        const rebuilt = RecordBatch.build({
          records: original.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })),
          compression: type
        })
        const back = Either.getOrThrow(RecordBatch.records(rebuilt))
        expect(back.map((r) => [r.offset, r.timestamp, Buffer.from(r.value!).toString()])).toEqual(
          original.map((r) => [r.offset, r.timestamp, Buffer.from(r.value!).toString()])
        )
      }
    })
  })
})
