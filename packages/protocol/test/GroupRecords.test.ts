import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as GroupRecords from "../src/GroupRecords.js"
import type { GroupRecord } from "../src/GroupRecords.js"
import { arbitraryFor, text } from "./arbitrary.js"

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString("hex"))

const normalize = (x: unknown): unknown => {
  if (x instanceof Uint8Array) return { bytes: Buffer.from(x).toString("hex") }
  if (Array.isArray(x)) return x.map(normalize)
  if (x !== null && typeof x === "object") {
    const o: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(x)) o[k] = normalize(v)
    return o
  }
  return x
}

const decodeOk = (e: GroupRecords.Encoded) => Either.getOrThrow(GroupRecords.decode(e.key, e.value))

const versioned = <A>(arb: (v: number) => fc.Arbitrary<A>) =>
  fc.integer({ min: 0, max: 4 }).chain((version) => arb(version).map((data) => ({ version, data })))

const consumerTypes = Object.keys(GroupRecords.consumerGroupTypes) as Array<GroupRecords.ConsumerGroupRecordType>

const arbConsumerRecord: fc.Arbitrary<GroupRecord> = fc.constantFrom(...consumerTypes).chain((type) => {
  const t = GroupRecords.consumerGroupTypes[type]
  return fc
    .record({
      key: arbitraryFor(t.key as never, 0),
      value: fc.option(arbitraryFor(t.value as never, 0), { nil: null })
    })
    .map(({ key, value }) => ({ type, key, value: value === null ? null : { version: 0, data: value } }) as GroupRecord)
})

const arbRecord: fc.Arbitrary<GroupRecord> = fc.oneof(
  arbConsumerRecord,
  fc.record({
    type: fc.constant("OffsetCommit" as const),
    key: fc.record({ group: text, topic: text, partition: fc.nat() }),
    value: fc.option(
      versioned((v) => arbitraryFor(GroupRecords.OffsetCommitValue, v)),
      { nil: null }
    )
  }),
  fc.record({
    type: fc.constant("GroupMetadata" as const),
    key: fc.record({ group: text }),
    value: fc.option(
      versioned((v) => arbitraryFor(GroupRecords.GroupMetadataValue, v)),
      { nil: null }
    )
  })
)

describe("GroupRecords", () => {
  it("offset commit: key version 1 (group, topic, partition), value v3 as Kafka writes it", () => {
    const r = GroupRecords.offsetCommit(
      { group: "g", topic: "t", partition: 2 },
      { offset: 100n, leaderEpoch: 5, metadata: "", commitTimestamp: 1700000000000n }
    )
    const e = GroupRecords.encode(r)
    expect(hex(e.key)).toBe("0001" + "000167" + "000174" + "00000002")
    expect(hex(e.value)).toBe(
      "0003" + // value version 3
        "0000000000000064" + // offset
        "00000005" + // leaderEpoch
        "0000" + // metadata ""
        "0000018bcfe56800" // commitTimestamp
    )
    expect(decodeOk(e)).toEqual(r)
  })

  it("offset commit v1 carries the expire timestamp and no leader epoch", () => {
    const r = GroupRecords.offsetCommit(
      { group: "g", topic: "t", partition: 0 },
      { offset: 1n, leaderEpoch: 9, metadata: "m", commitTimestamp: 2n, expireTimestamp: 3n },
      1
    )
    const e = GroupRecords.encode(r)
    expect(hex(e.value)).toBe("0001" + "0000000000000001" + "00016d" + "0000000000000002" + "0000000000000003")
    const back = decodeOk(e)
    expect(back.type === "OffsetCommit" && back.value?.data.leaderEpoch).toBe(-1)
  })

  it("offset commit keys written at version 0 still decode", () => {
    const e = GroupRecords.encode(GroupRecords.offsetCommitTombstone({ group: "g", topic: "t", partition: 1 }))
    const v0 = Buffer.concat([Buffer.from([0, 0]), e.key.subarray(2)])
    expect(Either.getOrThrow(GroupRecords.decode(v0, null))).toEqual({
      type: "OffsetCommit",
      key: { group: "g", topic: "t", partition: 1 },
      value: null
    })
  })

  it("group metadata: key version 2, value v3 with members", () => {
    const r = GroupRecords.groupMetadata("g", {
      protocolType: "consumer",
      generation: 1,
      protocol: "range",
      leader: "m-1",
      currentStateTimestamp: 5n,
      members: [
        {
          memberId: "m-1",
          groupInstanceId: null,
          clientId: "c",
          clientHost: "/h",
          rebalanceTimeout: 300000,
          sessionTimeout: 45000,
          subscription: new Uint8Array([1, 2]),
          assignment: new Uint8Array([])
        }
      ]
    })
    const e = GroupRecords.encode(r)
    expect(hex(e.key)).toBe("0002" + "000167")
    expect(hex(e.value)).toBe(
      "0003" +
        "0008" +
        Buffer.from("consumer").toString("hex") +
        "00000001" + // generation
        "0005" +
        Buffer.from("range").toString("hex") +
        "0003" +
        Buffer.from("m-1").toString("hex") + // leader
        "0000000000000005" + // currentStateTimestamp
        "00000001" + // one member
        "0003" +
        Buffer.from("m-1").toString("hex") +
        "ffff" + // groupInstanceId null
        "000163" + // clientId
        "00022f68" + // clientHost
        "000493e0" + // rebalanceTimeout 300000
        "0000afc8" + // sessionTimeout 45000
        "000000020102" + // subscription
        "00000000" // assignment
    )
    expect(normalize(decodeOk(e))).toEqual(normalize(r))
  })

  it("consumer group epoch: key type 3, value v0 with the metadata hash as tagged field 0", () => {
    const r = GroupRecords.consumerGroupRecord(
      "ConsumerGroupMetadata",
      { groupId: "g" },
      { epoch: 7, metadataHash: 1n }
    )
    const e = GroupRecords.encode(r)
    expect(hex(e.key)).toBe("0003" + "000167")
    expect(hex(e.value)).toBe(
      "0000" + // value version 0
        "00000007" + // epoch
        "01" + // one tagged field
        "00" + // tag 0
        "08" + // 8 bytes
        "0000000000000001" + // metadataHash
        ""
    )
    expect(decodeOk(e)).toEqual(r)
    const noHash = GroupRecords.encode(
      GroupRecords.consumerGroupRecord("ConsumerGroupMetadata", { groupId: "g" }, { epoch: 7 })
    )
    expect(hex(noHash.value)).toBe("0000" + "00000007" + "00")
  })

  it("current member assignment: key type 8 (group, member), flexible v0 value", () => {
    const r = GroupRecords.consumerGroupRecord(
      "ConsumerGroupCurrentMemberAssignment",
      { groupId: "g", memberId: "m" },
      {
        memberEpoch: 3,
        previousMemberEpoch: 2,
        state: 2,
        assignedPartitions: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAQ", partitions: [0, 2] }],
        partitionsPendingRevocation: []
      }
    )
    const e = GroupRecords.encode(r)
    expect(hex(e.key)).toBe("0008" + "000167" + "00016d")
    expect(hex(e.value)).toBe(
      "0000" +
        "00000003" +
        "00000002" +
        "02" + // state
        "02" + // one topic (compact array length + 1)
        "00000000000000000000000000000001" +
        "03" + // two partitions
        "00000000" +
        "00000002" +
        "00" + // topic's tagged fields
        "01" + // no pending revocation
        "00" // value's tagged fields
    )
    expect(decodeOk(e)).toEqual(r)
  })

  it("regular expression: key type 16 (group, expression), flexible v0 value, as Kafka 4.4 writes it", () => {
    // Kafka's own serialization of these values, as test/fixtures/CaptureGroupRecords.java prints it.
    const r = GroupRecords.consumerGroupRecord(
      "ConsumerGroupRegularExpression",
      { groupId: "g", regularExpression: "t.*" },
      { topics: ["t1", "t2"], version: 42n, timestamp: 1_700_000_000_000n }
    )
    const e = GroupRecords.encode(r)
    expect(hex(e.key)).toBe("00100001670003742e2a")
    expect(hex(e.value)).toBe("000003037431037432000000000000002a0000018bcfe5680000")
    expect(decodeOk(e)).toEqual(r)
    const tombstone = GroupRecords.encode(
      GroupRecords.consumerGroupRecord(
        "ConsumerGroupRegularExpression",
        { groupId: "g", regularExpression: "t.*" },
        null
      )
    )
    expect(tombstone.value).toBeNull()
    expect(decodeOk(tombstone).value).toBeNull()
  })

  it("tombstones carry a null value", () => {
    for (const t of [
      GroupRecords.groupMetadataTombstone("g"),
      GroupRecords.offsetCommitTombstone({ group: "g", topic: "t", partition: 0 })
    ]) {
      const e = GroupRecords.encode(t)
      expect(e.value).toBeNull()
      expect(decodeOk(e)).toEqual(t)
    }
  })

  it("decode(encode(r)) = r for any record at any value version", () => {
    fc.assert(
      fc.property(arbRecord, (r) => {
        expect(normalize(decodeOk(GroupRecords.encode(r)))).toEqual(normalize(r))
      }),
      { numRuns: 300 }
    )
  })

  it("other record types and unknown value versions are DecodeErrors", () => {
    const e = GroupRecords.encode(GroupRecords.groupMetadataTombstone("g"))
    for (const type of [9, 17, -1]) {
      const key = Buffer.concat([Buffer.alloc(2), e.key.subarray(2)])
      key.writeInt16BE(type, 0)
      const r = GroupRecords.decode(key, null)
      expect(Either.isLeft(r) && r.left.message).toContain(`unknown record type ${type}`)
    }
    const offset = GroupRecords.encode(
      GroupRecords.offsetCommit({ group: "g", topic: "t", partition: 0 }, { offset: 1n })
    )
    const v5 = Buffer.from(offset.value!)
    v5.writeInt16BE(5, 0)
    expect(Either.isLeft(GroupRecords.decode(offset.key, v5))).toBe(true)
  })

  it("arbitrary bytes decode to a record or a DecodeError, never a throw", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0, 1, 2),
        fc.uint8Array({ maxLength: 30 }),
        fc.option(fc.tuple(fc.nat({ max: 5 }), fc.uint8Array({ maxLength: 60 })), { nil: null }),
        (type, key, value) => {
          const r = GroupRecords.decode(
            Buffer.concat([Buffer.from([0, type]), key]),
            value === null ? null : Buffer.concat([Buffer.from([0, value[0]]), value[1]])
          )
          if (Either.isLeft(r)) expect(r.left._tag).toBe("DecodeError")
        }
      ),
      { numRuns: 500 }
    )
  })
})
