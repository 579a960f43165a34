import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Api from "../src/Api.js"
import { DeleteGroups, Errors, OffsetDelete } from "../src/index.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

describe("DeleteGroups (key 42)", () => {
  it("v0 request: a classic array of int16-sized group names", () => {
    const bytes = Either.getOrThrow(DeleteGroups.Request.encode(0, { groupsNames: ["g1", "g2"] }))
    expect(hex(bytes)).toBe("00000002" + "00026731" + "00026732")
    expect(Either.getOrThrow(DeleteGroups.Request.decode(1, bytes)).groupsNames).toEqual(["g1", "g2"])
  })

  it("v2 request is flexible: compact array and strings, empty tagged sections, header v2", () => {
    const frame = Either.getOrThrow(Api.encodeRequest(DeleteGroups.api, 2, 5, "c", { groupsNames: ["g1"] }))
    expect(hex(frame)).toBe(
      "00000011" + // size 17
        "002a" + // api key 42
        "0002" + // version 2
        "00000005" + // correlation id
        "000163" + // client id "c" (int16-sized in every header version)
        "00" + // header's tagged section
        "02" + // compact array of one
        "036731" + // compact string "g1"
        "00" // body's tagged section
    )
  })

  it("v1 and v2 responses carry the throttle time and one result per group", () => {
    const body = {
      throttleTimeMs: 0,
      results: [
        { groupId: "g1", errorCode: Errors.ErrorCode.NON_EMPTY_GROUP },
        { groupId: "g2", errorCode: Errors.ErrorCode.NONE }
      ]
    }
    expect(hex(Either.getOrThrow(DeleteGroups.Response.encode(1, body)))).toBe(
      "00000000" + "00000002" + "00026731" + "0044" + "00026732" + "0000"
    )
    expect(hex(Either.getOrThrow(DeleteGroups.Response.encode(2, body)))).toBe(
      "00000000" + "03" + "036731" + "0044" + "00" + "036732" + "0000" + "00" + "00"
    )
  })
})

describe("OffsetDelete (key 47)", () => {
  it("v0 only, not flexible", () => {
    expect([OffsetDelete.api.minVersion, OffsetDelete.api.maxVersion]).toEqual([0, 0])
    expect(OffsetDelete.Request.isFlexible(0) || OffsetDelete.Response.isFlexible(0)).toBe(false)
  })

  it("v0 request: group id, then topics with their partition indexes", () => {
    const bytes = Either.getOrThrow(
      OffsetDelete.Request.encode(0, {
        groupId: "g",
        topics: [{ name: "t", partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }]
      })
    )
    expect(hex(bytes)).toBe("000167" + "00000001" + "000174" + "00000002" + "00000000" + "00000001")
  })

  it("v0 response: the top-level error code comes before the throttle time", () => {
    const bytes = Either.getOrThrow(
      OffsetDelete.Response.encode(0, {
        errorCode: 0,
        throttleTimeMs: 7,
        topics: [
          { name: "t", partitions: [{ partitionIndex: 0, errorCode: Errors.ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC }] }
        ]
      })
    )
    expect(hex(bytes)).toBe("0000" + "00000007" + "00000001" + "000174" + "00000001" + "00000000" + "0056")
    const whole = Either.getOrThrow(
      OffsetDelete.Response.decode(0, Buffer.from("0045" + "00000000" + "00000000", "hex"))
    )
    expect([whole.errorCode, whole.topics]).toEqual([Errors.ErrorCode.GROUP_ID_NOT_FOUND, []])
  })
})
