import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Hashing from "../src/Hashing.js"

/** Java's String.hashCode computed with arbitrary precision, then wrapped to a signed 32-bit int. */
const referenceHashCode = (s: string): number => {
  let h = 0n
  for (let i = 0; i < s.length; i++) h = (31n * h + BigInt(s.charCodeAt(i))) % 2n ** 32n
  return Number(BigInt.asIntN(32, h))
}

const utf8 = (s: string) => new TextEncoder().encode(s)

describe("Hashing", () => {
  it("javaStringHashCode matches known JVM values", () => {
    expect(Hashing.javaStringHashCode("")).toBe(0)
    expect(Hashing.javaStringHashCode("hello")).toBe(99162322)
    expect(Hashing.javaStringHashCode("Aa")).toBe(2112)
    expect(Hashing.javaStringHashCode("BB")).toBe(2112)
    // The classic string whose hash is Integer.MIN_VALUE.
    expect(Hashing.javaStringHashCode("polygenelubricants")).toBe(-2147483648)
    // Non-BMP characters hash as their two UTF-16 surrogates: 31 * 0xd83d + 0xde42.
    expect(Hashing.javaStringHashCode("🙂")).toBe(1772965)
  })

  it("javaStringHashCode equals the arbitrary-precision definition", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 64 }), (s) => {
        expect(Hashing.javaStringHashCode(s)).toBe(referenceHashCode(s))
      }),
      { numRuns: 300 }
    )
  })

  it("kafkaAbs maps MIN_VALUE to 0 and is otherwise Math.abs; toPositive clears the sign bit", () => {
    expect(Hashing.kafkaAbs(-2147483648)).toBe(0)
    expect(Hashing.kafkaAbs(-5)).toBe(5)
    expect(Hashing.kafkaAbs(2147483647)).toBe(2147483647)
    expect(Hashing.toPositive(-5)).toBe(2147483643)
    expect(Hashing.toPositive(-2147483648)).toBe(0)
    expect(Hashing.toPositive(7)).toBe(7)
  })

  it("murmur2 matches the Java client's test vectors", () => {
    const vectors: ReadonlyArray<readonly [Uint8Array, number, number]> = [
      [utf8("21"), -973932308, 1173551340],
      [utf8("foobar"), -790332482, 1357151166],
      [new Uint8Array([12, 42, 56, 24, 109, 111]), 274204207, 274204207],
      [utf8("a-little-bit-long-string"), -985981536, 1161502112],
      [utf8("a-little-bit-longer-string"), -1486304829, 661178819],
      [utf8("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971, 2088585677],
      [utf8("abc"), 479470107, 479470107]
    ]
    for (const [bytes, hash, positive] of vectors) {
      expect(Hashing.murmur2(bytes)).toBe(hash)
      expect(Hashing.toPositive(Hashing.murmur2(bytes))).toBe(positive)
    }
    expect(Hashing.murmur2String("foobar")).toBe(-790332482)
    expect(Hashing.partitionForKey(utf8("21"), 10)).toBe(1173551340 % 10)
  })

  it("murmur2 covers every tail length and stays a signed 32-bit integer", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (b) => {
        const h = Hashing.murmur2(b)
        expect(Number.isInteger(h) && h >= -2147483648 && h <= 2147483647).toBe(true)
        expect(Hashing.murmur2(Uint8Array.from(b))).toBe(h)
      })
    )
  })

  it("groupCoordinatorPartition is abs(hashCode) % n, with MIN_VALUE landing on 0", () => {
    expect(Hashing.groupCoordinatorPartition("hello", 50)).toBe(99162322 % 50)
    expect(Hashing.groupCoordinatorPartition("polygenelubricants", 50)).toBe(0)
    // A negative hash: the absolute value is used (12), not the sign-cleared one (36).
    expect(referenceHashCode("my-group")).toBe(-1906497762)
    expect(Hashing.groupCoordinatorPartition("my-group", 50)).toBe(12)
    expect(Hashing.toPositive(Hashing.javaStringHashCode("my-group")) % 50).toBe(36)
  })

  it("mirror coordinator partitions hash the mirror name, or mirrorName:topicId:partition", () => {
    // "m".hashCode() = 109
    expect(Hashing.mirrorCoordinatorPartition("m", 50)).toBe(9)
    const topicId = "AAECAwQFBgcICQoLDA0ODw"
    const key = `m1:${topicId}:7`
    expect(Hashing.mirrorStatePartition("m1", topicId, 7, 50)).toBe(Math.abs(referenceHashCode(key)) % 50)
    fc.assert(
      fc.property(
        fc.string({ maxLength: 20 }),
        fc.nat({ max: 10_000 }),
        fc.integer({ min: 1, max: 200 }),
        (m, p, n) => {
          const expected = referenceHashCode(`${m}:${topicId}:${p}`)
          const part = Hashing.mirrorStatePartition(m, topicId, p, n)
          expect(part).toBe((expected === -2147483648 ? 0 : Math.abs(expected)) % n)
          expect(part >= 0 && part < n).toBe(true)
        }
      )
    )
  })
})
