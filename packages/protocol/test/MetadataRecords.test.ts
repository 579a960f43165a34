import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as MetadataRecords from "../src/MetadataRecords.js"
import type { MetadataRecord } from "../src/MetadataRecords.js"
import type { Fields, Message } from "../src/Spec.js"
import { arbitraryFor } from "./arbitrary.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const UUID_HEX = "000102030405060708090a0b0c0d0e0f"
const TOPIC_ID = Buffer.from(UUID_HEX, "hex").toString("base64url")

/** Decoded bytes are Buffer slices: compare contents only. */
const normalize = (x: unknown): unknown => {
  if (x instanceof Uint8Array) return { bytes: hex(x) }
  if (Array.isArray(x)) return x.map(normalize)
  if (x !== null && typeof x === "object") {
    const o: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(x)) o[k] = normalize(v)
    return o
  }
  return x
}

const expectDecodeError = (
  r: Either.Either<unknown, { readonly _tag: string; readonly message: string }>,
  text?: string
) => {
  expect(Either.isLeft(r)).toBe(true)
  if (Either.isLeft(r)) {
    expect(r.left._tag).toBe("DecodeError")
    if (text !== undefined) expect(r.left.message).toContain(text)
  }
}

// Type numbers as Kafka's metadata log assigns them.
const TYPES: ReadonlyArray<readonly [MetadataRecords.MetadataRecordType, number, string]> = [
  ["RegisterBrokerRecord", 0, "0-3"],
  ["UnregisterBrokerRecord", 1, "0"],
  ["TopicRecord", 2, "0"],
  ["PartitionRecord", 3, "0-2"],
  ["ConfigRecord", 4, "0"],
  ["PartitionChangeRecord", 5, "0-3"],
  ["FenceBrokerRecord", 7, "0"],
  ["UnfenceBrokerRecord", 8, "0"],
  ["RemoveTopicRecord", 9, "0"],
  ["FeatureLevelRecord", 12, "0"],
  ["ProducerIdsRecord", 15, "0"],
  ["BrokerRegistrationChangeRecord", 17, "0-2"],
  ["AccessControlEntryRecord", 18, "0"],
  ["RemoveAccessControlEntryRecord", 19, "0"],
  ["UserScramCredentialRecord", 11, "0"],
  ["ClientQuotaRecord", 14, "0"],
  ["NoOpRecord", 20, "0"],
  ["RemoveUserScramCredentialRecord", 22, "0"],
  ["BeginTransactionRecord", 23, "0"],
  ["EndTransactionRecord", 24, "0"],
  ["AbortTransactionRecord", 25, "0"],
  ["MirrorTopicStateChangeRecord", 29, "0"]
]

describe("MetadataRecords", () => {
  it("knows every record type under Kafka's type number and versions", () => {
    expect(MetadataRecords.all).toHaveLength(TYPES.length)
    for (const [type, apiKey, versions] of TYPES) {
      const m = MetadataRecords.messages[type]
      expect(m.apiKey, type).toBe(apiKey)
      const { lo, hi } = m.validVersions
      expect(lo === hi ? `${lo}` : `${lo}-${hi}`, type).toBe(versions)
      expect(m.isFlexible(0), type).toBe(true)
      // The frame starts with frame version 1, then the type, then the version.
      const bytes = MetadataRecords.encode(MetadataRecords.make(type, {}, hi))
      expect([...bytes.subarray(0, 3)], type).toEqual([1, apiKey, hi])
    }
  })

  for (const spec of MetadataRecords.all) {
    // Walk every spec the same way, whatever its fields.
    const m = spec as unknown as Message<Fields>
    const [type] = TYPES.find(([, k]) => k === m.apiKey)!
    for (let v = m.validVersions.lo; v <= m.validVersions.hi; v++) {
      it(`${m.name} v${v}: decode(encode(r)) = r`, () => {
        fc.assert(
          fc.property(arbitraryFor(m, v), (data) => {
            // The arbitrary follows the spec of `type`, so this is a record of that type.
            const record = { type, version: v, data } as MetadataRecord
            const back = Either.getOrThrow(MetadataRecords.decode(MetadataRecords.encode(record)))
            expect(normalize(back)).toEqual(normalize(record))
          }),
          { numRuns: 50 }
        )
      })
    }
  }

  it("MirrorTopicStateChangeRecord with a null mirror name (disassociation), byte for byte", () => {
    const record = MetadataRecords.mirrorTopicStateChange(TOPIC_ID, null, "UNKNOWN")
    const bytes = MetadataRecords.encode(record)
    expect(hex(bytes)).toBe(
      "01" + // frame version
        "1d" + // type 29
        "00" + // version 0
        UUID_HEX + // TopicId
        "00" + // MirrorName: compact null
        "ff" + // DesiredState -1 (UNKNOWN)
        "00" // no tagged fields
    )
    expect(Either.getOrThrow(MetadataRecords.decode(bytes))).toEqual({
      type: "MirrorTopicStateChangeRecord",
      version: 0,
      data: { topicId: TOPIC_ID, mirrorName: null, desiredState: -1 }
    })
    const named = MetadataRecords.encode(MetadataRecords.mirrorTopicStateChange(TOPIC_ID, "m", "MIRRORING"))
    expect(hex(named)).toBe("011d00" + UUID_HEX + "026d" + "02" + "00")
  })

  it("ClientQuotaRecord with a default entity name, byte for byte", () => {
    const record = MetadataRecords.make("ClientQuotaRecord", {
      entity: [
        { entityType: "user", entityName: "u" },
        { entityType: "client-id", entityName: null }
      ],
      key: "producer_byte_rate",
      value: 1024,
      remove: false
    })
    const bytes = MetadataRecords.encode(record)
    expect(hex(bytes)).toBe(
      "010e00" + // frame version 1, type 14, version 0
        "03" + // Entity: compact array of 2
        "05" +
        Buffer.from("user").toString("hex") +
        "02" +
        Buffer.from("u").toString("hex") +
        "00" + // EntityType "user", EntityName "u", no tagged fields
        "0a" +
        Buffer.from("client-id").toString("hex") +
        "00" +
        "00" + // EntityType "client-id", EntityName null (the default)
        "13" +
        Buffer.from("producer_byte_rate").toString("hex") + // Key
        "4090000000000000" + // Value 1024.0 as a float64
        "00" + // Remove false
        "00" // no tagged fields
    )
    expect(Either.getOrThrow(MetadataRecords.decode(bytes))).toEqual(record)
  })

  it("PartitionChangeRecord v3 carries LeaderEpoch after PartitionId and TopicId, byte for byte", () => {
    const record = MetadataRecords.make(
      "PartitionChangeRecord",
      { partitionId: 2, topicId: TOPIC_ID, leaderEpoch: 7, isr: [1, 2], leader: 1 },
      3
    )
    const bytes = MetadataRecords.encode(record)
    expect(hex(bytes)).toBe(
      "010503" + // frame version 1, type 5, version 3
        "00000002" + // PartitionId
        UUID_HEX + // TopicId
        "00000007" + // LeaderEpoch
        "02" + // two tagged fields
        "0009" +
        "03" +
        "00000001" +
        "00000002" + // tag 0 (Isr): 9 bytes, compact array [1, 2]
        "0104" +
        "00000001" // tag 1 (Leader): 4 bytes
    )
    const back = Either.getOrThrow(MetadataRecords.decode(bytes))
    expect(back).toEqual(record)
    expect(back.type === "PartitionChangeRecord" && back.data.replicas).toBeNull()
  })

  it("PartitionChangeRecord before v3 has no LeaderEpoch on the wire (it reads back as -1)", () => {
    const v2 = MetadataRecords.encode(
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 2, topicId: TOPIC_ID, leaderEpoch: 7 }, 2)
    )
    expect(hex(v2)).toBe("010502" + "00000002" + UUID_HEX + "00")
    const back = Either.getOrThrow(MetadataRecords.decode(v2))
    expect(back.type === "PartitionChangeRecord" && back.data.leaderEpoch).toBe(-1)
  })

  it("make fills absent fields with their defaults, nested ones included", () => {
    const r = MetadataRecords.make("RegisterBrokerRecord", {
      brokerId: 1,
      endPoints: [{ name: "PLAINTEXT", host: "localhost" }]
    })
    expect(r.version).toBe(3)
    expect(r.data.fenced).toBe(true)
    expect(r.data.rack).toBeNull()
    expect(r.data.endPoints).toEqual([{ name: "PLAINTEXT", host: "localhost", port: 0, securityProtocol: 0 }])
    expect(MetadataRecords.make("ProducerIdsRecord", { brokerId: 1 }).data.brokerEpoch).toBe(-1n)
  })

  it("rejects unknown types, frame versions and record versions, and trailing bytes", () => {
    const noop = MetadataRecords.encode(MetadataRecords.make("NoOpRecord", {}))
    expect(hex(noop)).toBe("01140000")
    expectDecodeError(MetadataRecords.decode(Buffer.from("01060000", "hex")), "unknown metadata record type 6")
    expectDecodeError(MetadataRecords.decode(Buffer.from("01630000", "hex")), "unknown metadata record type 99")
    expectDecodeError(MetadataRecords.decode(Buffer.from("00140000", "hex")), "frame version")
    expectDecodeError(MetadataRecords.decode(Buffer.from("01140100", "hex")), "unsupported version")
    expectDecodeError(MetadataRecords.decode(Buffer.from("0114000000", "hex")), "trailing")
    expectDecodeError(MetadataRecords.decode(new Uint8Array(0)))
    expect(() => MetadataRecords.encode({ type: "NoOpRecord", version: 1, data: {} })).toThrow()
  })

  it("arbitrary bytes decode to a record or a DecodeError, never a throw", () => {
    const known = fc.constantFrom(...TYPES.map(([, k]) => k))
    fc.assert(
      fc.property(known, fc.nat({ max: 3 }), fc.uint8Array({ maxLength: 60 }), (type, version, body) => {
        const r = MetadataRecords.decode(Buffer.concat([Buffer.from([1, type, version]), body]))
        if (Either.isLeft(r)) expect(r.left._tag).toBe("DecodeError")
      }),
      { numRuns: 500 }
    )
  })
})
