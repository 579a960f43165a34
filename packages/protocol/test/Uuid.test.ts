import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Uuid from "../src/Uuid.js"

describe("Uuid", () => {
  it("ZERO and the metadata topic ID are the reserved 0 and 1", () => {
    expect(Either.getOrThrow(Uuid.toBytes(Uuid.ZERO))).toEqual(Buffer.alloc(16))
    const one = Buffer.alloc(16)
    one[15] = 1
    expect(Either.getOrThrow(Uuid.fromBytes(one))).toBe(Uuid.METADATA_TOPIC_ID)
    expect(Uuid.RESERVED.has(Uuid.ZERO) && Uuid.RESERVED.has(Uuid.METADATA_TOPIC_ID)).toBe(true)
  })

  it("random() draws valid version-4 UUIDs, never reserved, never starting with '-'", () => {
    const seen = new Set<string>()
    // Without the redraw rule about one draw in 64 would start with "-".
    for (let i = 0; i < 3000; i++) {
      const u = Uuid.random()
      expect(Uuid.isValid(u)).toBe(true)
      expect(u.startsWith("-")).toBe(false)
      expect(Uuid.RESERVED.has(u)).toBe(false)
      const b = Either.getOrThrow(Uuid.toBytes(u))
      expect(b[6]! >> 4).toBe(4)
      expect(b[8]! >> 6).toBe(2)
      seen.add(u)
    }
    expect(seen.size).toBe(3000)
  })

  it("bytes -> string -> bytes is the identity for any 16 bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), (b) => {
        const s = Either.getOrThrow(Uuid.fromBytes(b))
        expect(s).toHaveLength(22)
        expect(Uuid.isValid(s)).toBe(true)
        expect(Buffer.from(Either.getOrThrow(Uuid.toBytes(s)))).toEqual(Buffer.from(b))
      })
    )
  })

  it("rejects malformed strings and wrong byte lengths with a typed error", () => {
    for (const bad of [
      "",
      "AAAAAAAAAAAAAAAAAAAAA",
      "AAAAAAAAAAAAAAAAAAAAAAA",
      "AAAAAAAAAAAAAAAAAAAAA+",
      "AAAAAAAAAAAAAAAAAAAAAB"
    ]) {
      expect(Uuid.isValid(bad), bad).toBe(false)
      const r = Uuid.toBytes(bad)
      expect(Either.isLeft(r) && r.left._tag === "DecodeError").toBe(true)
    }
    for (const n of [0, 15, 17]) expect(Either.isLeft(Uuid.fromBytes(new Uint8Array(n)))).toBe(true)
  })
})
