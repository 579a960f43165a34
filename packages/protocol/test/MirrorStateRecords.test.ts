import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as MirrorStateRecords from "../src/MirrorStateRecords.js"
import { arbitraryFor, uuid } from "./arbitrary.js"

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString("hex"))
const TOPIC_ID = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex").toString("base64url")
const KEY = MirrorStateRecords.key("m", TOPIC_ID, 3)
const KEY_HEX = "0001" + "6d" + "000102030405060708090a0b0c0d0e0f" + "00000003"

const arbKey = fc.record({
  mirrorName: fc.string({ maxLength: 20 }),
  topicId: uuid,
  partition: fc.integer({ min: 0, max: 2147483647 })
})

const arbRecord: fc.Arbitrary<MirrorStateRecords.MirrorStateRecord> = fc.oneof(
  fc.record({
    type: fc.constant("LastMirrorEpochs" as const),
    key: arbKey,
    value: fc.option(arbitraryFor(MirrorStateRecords.LastMirrorEpochsValue, 0), { nil: null })
  }),
  fc.record({
    type: fc.constant("MirrorPartitionState" as const),
    key: arbKey,
    value: fc.option(arbitraryFor(MirrorStateRecords.MirrorPartitionStateValue, 0), { nil: null })
  })
)

const decodeOk = (e: MirrorStateRecords.Encoded) => Either.getOrThrow(MirrorStateRecords.decode(e.key, e.value))

describe("MirrorStateRecords", () => {
  it("LastMirrorEpochs: int16 type 1 + non-flexible key, int16 version 0 + flexible value", () => {
    const e = MirrorStateRecords.encode(MirrorStateRecords.lastMirrorEpochs(KEY, 12))
    expect(hex(e.key)).toBe("0001" + "0001" + KEY_HEX.slice(4))
    expect(hex(e.value)).toBe("0000" + "0000000c" + "00")
    expect(decodeOk(e)).toEqual({ type: "LastMirrorEpochs", key: KEY, value: { lastMirrorEpoch: 12 } })
  })

  it("MirrorPartitionState: type 2; state, previous state, retry attempt, compact nullable message", () => {
    const ok = MirrorStateRecords.encode(MirrorStateRecords.mirrorPartitionState(KEY, "MIRRORING"))
    expect(hex(ok.key)).toBe("0002" + "0001" + KEY_HEX.slice(4))
    expect(hex(ok.value)).toBe("0000" + "02" + "ff" + "0000" + "00" + "00")

    const failed = MirrorStateRecords.mirrorPartitionState(KEY, "FAILED", {
      retryAttempt: -1,
      errorMessage: "gone",
      previousState: "MIRRORING"
    })
    const e = MirrorStateRecords.encode(failed)
    expect(hex(e.value)).toBe("0000" + "07" + "02" + "ffff" + "05676f6e65" + "00")
    expect(decodeOk(e)).toEqual(failed)
  })

  it("tombstones carry a null value and decode back to the same key", () => {
    for (const t of MirrorStateRecords.tombstones(KEY)) {
      const e = MirrorStateRecords.encode(t)
      expect(e.value).toBeNull()
      expect(decodeOk(e)).toEqual(t)
    }
  })

  it("decode(encode(r)) = r for any record", () => {
    fc.assert(
      fc.property(arbRecord, (r) => {
        expect(decodeOk(MirrorStateRecords.encode(r))).toEqual(r)
      }),
      { numRuns: 200 }
    )
  })

  it("unknown types, unknown value versions and truncated bytes are DecodeErrors", () => {
    const e = MirrorStateRecords.encode(MirrorStateRecords.lastMirrorEpochs(KEY, 1))
    const withType = (t: number) => Buffer.concat([Buffer.from([0, t]), e.key.subarray(2)])
    const expectError = (r: Either.Either<unknown, { readonly _tag: string }>) =>
      expect(Either.isLeft(r) && r.left._tag === "DecodeError").toBe(true)
    expectError(MirrorStateRecords.decode(withType(3), e.value))
    expectError(MirrorStateRecords.decode(withType(0), null))
    expectError(MirrorStateRecords.decode(e.key, Buffer.concat([Buffer.from([0, 1]), e.value!.subarray(2)])))
    expectError(MirrorStateRecords.decode(e.key.subarray(0, 5), e.value))
    expectError(MirrorStateRecords.decode(e.key, e.value!.subarray(0, 4)))
    expectError(MirrorStateRecords.decode(new Uint8Array(1), null))
  })

  it("arbitrary bytes decode to a record or a DecodeError, never a throw", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 40 }),
        fc.option(fc.uint8Array({ maxLength: 20 }), { nil: null }),
        (k, v) => {
          const r = MirrorStateRecords.decode(k, v)
          if (Either.isLeft(r)) expect(r.left._tag).toBe("DecodeError")
        }
      )
    )
  })
})
