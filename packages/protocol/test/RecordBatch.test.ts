import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import * as Crc32c from "../src/Crc32c.js"
import * as RecordBatch from "../src/RecordBatch.js"

const NUM_RUNS = 100

const bytes = fc.option(fc.uint8Array({ maxLength: 48 }), { nil: null })

const recordInput = fc.record({
  key: bytes,
  value: bytes,
  headers: fc.array(fc.record({ key: fc.string({ maxLength: 12 }), value: bytes }), { maxLength: 3 }),
  timestamp: fc.integer({ min: 0, max: 2 ** 45 })
})

const buildOptions = fc.record({
  records: fc.array(recordInput, { minLength: 1, maxLength: 12 }),
  baseOffset: fc.integer({ min: 0, max: 2 ** 40 }),
  compression: fc.constantFrom<RecordBatch.CompressionType>(0, 1, 2, 3, 4),
  producerId: fc.bigInt(-1n, 2n ** 62n),
  producerEpoch: fc.integer({ min: -1, max: 32767 }),
  baseSequence: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
  isTransactional: fc.boolean(),
  isControl: fc.boolean(),
  partitionLeaderEpoch: fc.integer({ min: -1, max: 2 ** 31 - 1 })
})

const hex = (b: Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString("hex"))

const normalize = (r: {
  readonly key?: Uint8Array | null
  readonly value?: Uint8Array | null
  readonly headers?: ReadonlyArray<RecordBatch.Header>
}) => ({
  key: hex(r.key ?? null),
  value: hex(r.value ?? null),
  headers: (r.headers ?? []).map((h) => ({ key: h.key, value: hex(h.value) }))
})

/** Rewrites the CRC so a deliberately altered batch still passes the checksum. */
const reseal = (b: Buffer): Buffer => {
  b.writeUInt32BE(Crc32c.compute(b.subarray(RecordBatch.ATTRIBUTES)), RecordBatch.CRC)
  return b
}

const expectCorrupt = (
  result: Either.Either<unknown, RecordBatch.CorruptBatch>,
  reason?: RecordBatch.CorruptReason
) => {
  expect(Either.isLeft(result)).toBe(true)
  if (Either.isLeft(result)) {
    expect(result.left._tag).toBe("CorruptBatch")
    if (reason !== undefined) expect(result.left.reason).toBe(reason)
  }
}

describe("RecordBatch", () => {
  it.prop(
    "build then records returns the same records, offsets and timestamps, for every codec",
    [buildOptions],
    ([options]) => {
      const batch = RecordBatch.build(options)
      const decoded = Either.getOrThrow(RecordBatch.records(batch))
      expect(decoded.map(normalize)).toEqual(options.records.map(normalize))
      expect(decoded.map((r) => r.offset)).toEqual(options.records.map((_, i) => options.baseOffset + i))
      expect(decoded.map((r) => r.timestamp)).toEqual(options.records.map((r) => r.timestamp))
      expect(decoded.map((r) => r.offsetDelta)).toEqual(options.records.map((_, i) => i))
    },
    { fastCheck: { numRuns: NUM_RUNS } }
  )

  it.prop(
    "the header view agrees with the builder's inputs",
    [buildOptions],
    ([o]) => {
      const b = RecordBatch.build(o)
      const timestamps = o.records.map((r) => r.timestamp)
      expect(RecordBatch.sizeInBytes(b)).toBe(b.length)
      expect(RecordBatch.baseOffset(b)).toBe(o.baseOffset)
      expect(RecordBatch.partitionLeaderEpoch(b)).toBe(o.partitionLeaderEpoch)
      expect(RecordBatch.magic(b)).toBe(2)
      expect(RecordBatch.lastOffsetDelta(b)).toBe(o.records.length - 1)
      expect(RecordBatch.lastOffset(b)).toBe(o.baseOffset + o.records.length - 1)
      expect(RecordBatch.baseTimestamp(b)).toBe(timestamps[0])
      expect(RecordBatch.maxTimestamp(b)).toBe(Math.max(...timestamps))
      expect(RecordBatch.producerId(b)).toBe(o.producerId)
      expect(RecordBatch.hasProducerId(b)).toBe(o.producerId >= 0n)
      expect(RecordBatch.producerEpoch(b)).toBe(o.producerEpoch)
      expect(RecordBatch.baseSequence(b)).toBe(o.baseSequence)
      expect(RecordBatch.recordCount(b)).toBe(o.records.length)
      expect(RecordBatch.compression(b)).toBe(o.compression)
      expect(RecordBatch.isTransactional(b)).toBe(o.isTransactional)
      expect(RecordBatch.isControl(b)).toBe(o.isControl)
      expect(RecordBatch.timestampType(b)).toBe("CreateTime")
      expect(RecordBatch.split(b)).toEqual({ batches: [{ position: 0, size: b.length }], rest: b.length })
      expect(RecordBatch.validate(b)).toEqual(Either.right({ position: 0, size: b.length }))
    },
    { fastCheck: { numRuns: NUM_RUNS } }
  )

  it("finds a transactional batch among produced batches", () => {
    const plain = RecordBatch.build({ records: [{ value: Buffer.from("a") }], timestamp: 1 })
    const txn = RecordBatch.build({
      records: [{ value: Buffer.from("b") }],
      timestamp: 1,
      producerId: 3n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true
    })
    expect(RecordBatch.hasTransactionalBatch(null)).toBe(false)
    expect(RecordBatch.hasTransactionalBatch(plain)).toBe(false)
    expect(RecordBatch.hasTransactionalBatch(Buffer.concat([plain, txn]))).toBe(true)
    expect(RecordBatch.hasTransactionalBatch(new Uint8Array(Buffer.concat([plain, txn])))).toBe(true)
  })

  it("applies the defaults of an unspecified batch", () => {
    const b = RecordBatch.build({ records: [{ value: Buffer.from("v") }] })
    expect(RecordBatch.baseOffset(b)).toBe(0)
    expect(RecordBatch.partitionLeaderEpoch(b)).toBe(-1)
    expect(RecordBatch.producerId(b)).toBe(-1n)
    expect(RecordBatch.producerEpoch(b)).toBe(-1)
    expect(RecordBatch.baseSequence(b)).toBe(-1)
    expect(RecordBatch.attributes(b)).toBe(0)
    // 61-byte header + length(1) attributes(1) tsDelta(1) offsetDelta(1) key(1) value(1+1) headers(1)
    expect(b.length).toBe(61 + 8)
    expect(b.subarray(61).toString("hex")).toBe("0e" + "00" + "00" + "00" + "01" + "02" + "76" + "00")
  })

  it.prop(
    "batches read at a position inside a larger buffer",
    [buildOptions, buildOptions, fc.uint8Array({ maxLength: 20 })],
    ([a, b, prefix]) => {
      const first = RecordBatch.build(a)
      const second = RecordBatch.build(b)
      const buf = Buffer.concat([prefix, first, second])
      const at = prefix.length + first.length
      expect(RecordBatch.verifyCrc(buf, at)).toBe(true)
      expect(RecordBatch.validate(buf, at)).toEqual(Either.right({ position: at, size: second.length }))
      expect(Either.getOrThrow(RecordBatch.records(buf, at)).map(normalize)).toEqual(b.records.map(normalize))
    },
    { fastCheck: { numRuns: 30 } }
  )

  it("gives every record the append time of a LogAppendTime batch", () => {
    const b = RecordBatch.build({
      records: [{ timestamp: 5 }, { timestamp: 9 }],
      timestampType: "LogAppendTime",
      timestamp: 1000
    })
    expect(RecordBatch.timestampType(b)).toBe("LogAppendTime")
    expect(RecordBatch.maxTimestamp(b)).toBe(1000)
    expect(Either.getOrThrow(RecordBatch.records(b)).map((r) => r.timestamp)).toEqual([1000, 1000])
  })

  it("keeps explicit offset deltas and the offset range of an emptied batch", () => {
    const b = RecordBatch.build({ records: [{ offsetDelta: 0 }, { offsetDelta: 3 }], baseOffset: 10 })
    expect(RecordBatch.lastOffset(b)).toBe(13)
    expect(Either.getOrThrow(RecordBatch.records(b)).map((r) => r.offset)).toEqual([10, 13])
    const empty = RecordBatch.build({ records: [], baseOffset: 10, lastOffsetDelta: 4 })
    expect(RecordBatch.lastOffset(empty)).toBe(14)
    expect(RecordBatch.recordCount(empty)).toBe(0)
    expect(Either.getOrThrow(RecordBatch.records(empty))).toEqual([])
  })

  it("leaves the CRC valid when the base offset and leader epoch are rewritten", () => {
    const b = RecordBatch.build({ records: [{ value: Buffer.from("x") }] })
    RecordBatch.setBaseOffset(b, 42)
    RecordBatch.setPartitionLeaderEpoch(b, 7)
    expect(RecordBatch.verifyCrc(b)).toBe(true)
    expect(Either.getOrThrow(RecordBatch.records(b))[0]!.offset).toBe(42)
  })

  it.prop(
    "a flipped byte in the CRC or the bytes it covers fails the CRC",
    [buildOptions, fc.nat(), fc.integer({ min: 1, max: 255 })],
    ([o, at, xor]) => {
      const b = RecordBatch.build(o)
      expect(RecordBatch.verifyCrc(b)).toBe(true)
      const i = RecordBatch.CRC + (at % (b.length - RecordBatch.CRC))
      b[i] = b[i]! ^ xor
      expect(RecordBatch.verifyCrc(b)).toBe(false)
      expectCorrupt(RecordBatch.validate(b), "CrcMismatch")
      expectCorrupt(RecordBatch.records(b), "CrcMismatch")
    },
    { fastCheck: { numRuns: NUM_RUNS } }
  )

  it("reports truncation, bad sizes and bad magic", () => {
    const b = RecordBatch.build({ records: [{ value: Buffer.from("abc") }] })
    expectCorrupt(RecordBatch.validate(b.subarray(0, b.length - 1)), "Truncated")
    expectCorrupt(RecordBatch.validate(b.subarray(0, 30)), "Truncated")
    expectCorrupt(RecordBatch.validate(b, b.length), "Truncated")
    const small = Buffer.from(b)
    small.writeInt32BE(10, RecordBatch.BATCH_LENGTH)
    expectCorrupt(RecordBatch.validate(small), "InvalidSize")
    const v1 = Buffer.from(b)
    v1.writeInt8(1, RecordBatch.MAGIC)
    expectCorrupt(RecordBatch.validate(v1), "InvalidMagic")
    const codec = Buffer.from(b)
    codec.writeInt16BE(6, RecordBatch.ATTRIBUTES)
    expectCorrupt(RecordBatch.validate(reseal(codec)), "UnsupportedCompression")
  })

  it.each([0, 1, 2, 3, 4] as const)(
    "reports a record count that does not match the records (codec %i)",
    (compression) => {
      const b = RecordBatch.build({ records: [{ value: Buffer.from("a") }, { value: Buffer.from("b") }], compression })
      const more = Buffer.from(b)
      more.writeInt32BE(3, RecordBatch.RECORD_COUNT)
      expectCorrupt(RecordBatch.records(reseal(more)), "RecordCountMismatch")
      const fewer = Buffer.from(b)
      fewer.writeInt32BE(1, RecordBatch.RECORD_COUNT)
      expectCorrupt(RecordBatch.records(reseal(fewer)), "RecordCountMismatch")
      const negative = Buffer.from(b)
      negative.writeInt32BE(-1, RecordBatch.RECORD_COUNT)
      expectCorrupt(RecordBatch.validate(reseal(negative)), "InvalidHeader")
    }
  )

  it("yields the records before the first bad one, then the error", () => {
    const b = RecordBatch.build({ records: [{ value: Buffer.from("a") }, { value: Buffer.from("b") }] })
    // The second record starts right after the first (length byte + 7 bytes); make its length varint run on.
    const second = RecordBatch.HEADER_SIZE + 8
    b.fill(0xff, second, b.length)
    const items = [...RecordBatch.iterate(reseal(b))]
    expect(items).toHaveLength(2)
    expect(Either.isRight(items[0]!)).toBe(true)
    expectCorrupt(items[1]!, "InvalidRecord")
  })

  it("reports undecodable compressed data", () => {
    const b = RecordBatch.build({ records: [{ value: Buffer.from("a".repeat(100)) }], compression: 4 })
    b.fill(0, RecordBatch.HEADER_SIZE)
    expectCorrupt(RecordBatch.records(reseal(b)), "Compression")
  })

  it.prop(
    "random bytes make validate and iterate fail with CorruptBatch, never throw",
    [fc.uint8Array({ maxLength: 200 }), fc.nat({ max: 250 })],
    ([raw, at]) => {
      const b = Buffer.from(raw)
      const v = RecordBatch.validate(b, at)
      if (Either.isLeft(v)) expect(v.left._tag).toBe("CorruptBatch")
      expect(typeof RecordBatch.verifyCrc(b, at)).toBe("boolean")
      for (const item of RecordBatch.iterate(b, at))
        if (Either.isLeft(item)) expect(item.left._tag).toBe("CorruptBatch")
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "a valid header over random record bytes decodes or fails with CorruptBatch, never throws",
    [
      fc.uint8Array({ maxLength: 200 }),
      fc.integer({ min: 0, max: 20 }),
      fc.constantFrom<RecordBatch.CompressionType>(0, 1, 2, 3, 4)
    ],
    ([section, count, compression]) => {
      const b = Buffer.alloc(RecordBatch.HEADER_SIZE + section.length)
      b.writeInt32BE(b.length - RecordBatch.LOG_OVERHEAD, RecordBatch.BATCH_LENGTH)
      b.writeInt8(2, RecordBatch.MAGIC)
      b.writeInt16BE(compression, RecordBatch.ATTRIBUTES)
      b.writeInt32BE(count, RecordBatch.RECORD_COUNT)
      b.set(section, RecordBatch.HEADER_SIZE)
      const result = RecordBatch.records(reseal(b))
      if (Either.isLeft(result)) expect(result.left._tag).toBe("CorruptBatch")
      else expect(result.right).toHaveLength(count)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "well-formed record sections with random varints decode or fail with CorruptBatch",
    [fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 12 })],
    ([ints]) => {
      const section = Buffer.concat(
        ints.map((n) => {
          const u = ((n << 1) ^ (n >> 31)) >>> 0
          const out: number[] = []
          let v = u
          while (v >= 0x80) {
            out.push((v & 0x7f) | 0x80)
            v >>>= 7
          }
          out.push(v)
          return Buffer.from(out)
        })
      )
      const b = Buffer.alloc(RecordBatch.HEADER_SIZE + section.length)
      b.writeInt32BE(b.length - RecordBatch.LOG_OVERHEAD, RecordBatch.BATCH_LENGTH)
      b.writeInt8(2, RecordBatch.MAGIC)
      b.writeInt32BE(1, RecordBatch.RECORD_COUNT)
      section.copy(b, RecordBatch.HEADER_SIZE)
      const result = RecordBatch.records(reseal(b))
      if (Either.isLeft(result)) expect(result.left._tag).toBe("CorruptBatch")
    },
    { fastCheck: { numRuns: 300 } }
  )
})
