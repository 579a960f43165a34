import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import { ConsumerProtocol, JoinGroup } from "../src/index.js"

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
const name = fc.string({ maxLength: 12 })
const userData = fc.option(fc.uint8Array({ maxLength: 16 }), { nil: null })
const topicPartitions = fc.array(fc.record({ topic: name, partitions: fc.array(int32, { maxLength: 4 }) }), {
  maxLength: 3
})

const subscription = fc.record({
  topics: fc.array(name, { maxLength: 4 }),
  userData,
  ownedPartitions: topicPartitions,
  generationId: int32,
  rackId: fc.option(name, { nil: null })
})

const assignment = fc.record({ assignedPartitions: topicPartitions, userData })

const bytesOf = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString("hex"))

describe("ConsumerProtocol", () => {
  it("lays out a v0 subscription as version, topics, null user data", () => {
    const bytes = Either.getOrThrow(ConsumerProtocol.encodeSubscription(0, { topics: ["a", "b"] }))
    // version int16 | topic count int32 | "a" (int16 length + utf8) | "b" | user data length -1 (null)
    expect(bytes.toString("hex")).toBe("0000" + "00000002" + "0001" + "61" + "0001" + "62" + "ffffffff")
    const back = Either.getOrThrow(ConsumerProtocol.decodeSubscription(bytes))
    expect(back).toEqual({ topics: ["a", "b"], userData: null, ownedPartitions: [], generationId: -1, rackId: null })
  })

  it.prop("round trips a subscription at every version", [fc.integer({ min: 0, max: 3 }), subscription], ([v, s]) => {
    const back = Either.getOrThrow(
      ConsumerProtocol.decodeSubscription(Either.getOrThrow(ConsumerProtocol.encodeSubscription(v, s)))
    )
    expect(back.topics).toEqual(s.topics)
    expect(bytesOf(back.userData)).toEqual(bytesOf(s.userData))
    // Fields newer than the version are not on the wire and come back as their defaults.
    expect(back.ownedPartitions).toEqual(v >= 1 ? s.ownedPartitions : [])
    expect(back.generationId).toBe(v >= 2 ? s.generationId : -1)
    expect(back.rackId).toBe(v >= 3 ? s.rackId : null)
  })

  it.prop("round trips an assignment at every version", [fc.integer({ min: 0, max: 3 }), assignment], ([v, a]) => {
    const back = Either.getOrThrow(
      ConsumerProtocol.decodeAssignment(Either.getOrThrow(ConsumerProtocol.encodeAssignment(v, a)))
    )
    expect(back.assignedPartitions).toEqual(a.assignedPartitions)
    expect(bytesOf(back.userData)).toEqual(bytesOf(a.userData))
  })

  it("lays out an assignment as version, topic partitions, user data", () => {
    const bytes = Either.getOrThrow(
      ConsumerProtocol.encodeAssignment(1, {
        assignedPartitions: [{ topic: "t", partitions: [0, 2] }],
        userData: new Uint8Array([9])
      })
    )
    expect(bytes.toString("hex")).toBe(
      "0001" + "00000001" + "000174" + "00000002" + "00000000" + "00000002" + "00000001" + "09"
    )
  })

  it("reads a newer version as the latest and ignores the fields it does not know", () => {
    const v3 = Either.getOrThrow(
      ConsumerProtocol.encodeSubscription(3, { topics: ["x"], generationId: 7, rackId: "r1" })
    )
    const v9 = Buffer.concat([Buffer.from([0, 9]), v3.subarray(2), Buffer.from([1, 2, 3, 4])])
    const back = Either.getOrThrow(ConsumerProtocol.decodeSubscription(v9))
    expect(back.topics).toEqual(["x"])
    expect(back.generationId).toBe(7)
    expect(back.rackId).toBe("r1")
  })

  it("fails with a DecodeError on a negative version, truncation or a null topic name", () => {
    const negative = ConsumerProtocol.decodeSubscription(Buffer.from("ffff00000000ffffffff", "hex"))
    expect(Either.isLeft(negative) && negative.left._tag).toBe("DecodeError")
    const full = Either.getOrThrow(ConsumerProtocol.encodeSubscription(0, { topics: ["abc"] }))
    for (let n = 0; n < full.length; n++)
      expect(Either.isLeft(ConsumerProtocol.decodeSubscription(full.subarray(0, n)))).toBe(true)
    expect(Either.isLeft(ConsumerProtocol.decodeSubscription(Buffer.from("000000000001ffff", "hex")))).toBe(true)
  })

  it.prop("never throws on arbitrary bytes", [fc.uint8Array({ maxLength: 64 })], ([bytes]) => {
    const s = ConsumerProtocol.decodeSubscription(bytes)
    if (Either.isLeft(s)) expect(s.left._tag).toBe("DecodeError")
    const a = ConsumerProtocol.decodeAssignment(bytes)
    if (Either.isLeft(a)) expect(a.left._tag).toBe("DecodeError")
  })

  it("rejects encoding at an unknown version", () => {
    expect(Either.isLeft(ConsumerProtocol.encodeSubscription(4, { topics: [] }))).toBe(true)
  })

  it("carries a subscription through JoinGroup protocol metadata", () => {
    const metadata = Either.getOrThrow(ConsumerProtocol.encodeSubscription(1, { topics: ["orders"] }))
    const req = Either.getOrThrow(
      JoinGroup.Request.encode(5, {
        groupId: "g",
        sessionTimeoutMs: 10000,
        memberId: "",
        protocolType: "consumer",
        protocols: [{ name: "range", metadata }]
      })
    )
    const decoded = Either.getOrThrow(JoinGroup.Request.decode(5, req))
    const sub = Either.getOrThrow(ConsumerProtocol.decodeSubscription(decoded.protocols[0]!.metadata))
    expect(sub.topics).toEqual(["orders"])
  })
})
