import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { readFileSync } from "node:fs"
import * as Api from "../src/Api.js"
import { DeleteGroups, Errors, OffsetDelete } from "../src/index.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

describe("DeleteGroups (key 42)", () => {
  it("v3, what Kafka 4.4's admin client sends: the request of v2, a nullable ErrorMessage per result", () => {
    const body = { groupsNames: ["g1"] }
    expect(hex(Either.getOrThrow(DeleteGroups.Request.encode(3, body)))).toBe(
      hex(Either.getOrThrow(DeleteGroups.Request.encode(2, body)))
    )
    const result = { groupId: "g1", errorCode: Errors.ErrorCode.NON_EMPTY_GROUP, errorMessage: "busy" }
    expect(hex(Either.getOrThrow(DeleteGroups.Response.encode(3, { throttleTimeMs: 0, results: [result] })))).toBe(
      "00000000" + "02" + "036731" + "0044" + "05" + Buffer.from("busy").toString("hex") + "00" + "00"
    )
  })

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

/**
 * Frames Kafka 4.4's `kafka-consumer-groups` sent and Apache Kafka 4.4 answered, captured by
 * `fixtures/capture-group-admin.ts` into `fixtures/group-admin/`: each decodes and encodes back to the
 * same bytes.
 */
describe("golden frames of kafka-consumer-groups and Apache Kafka 4.4", () => {
  const captured = (name: string) => {
    const json = JSON.parse(readFileSync(new URL(`./fixtures/group-admin/${name}.json`, import.meta.url), "utf8"))
    return { apiVersion: Number(json.apiVersion), frame: Buffer.from(String(json.hex), "hex") }
  }

  it("--delete of a group and an unknown one: DeleteGroups v3, answered NONE and GROUP_ID_NOT_FOUND", () => {
    const request = captured("delete-groups-v3-request")
    const decoded = Either.getOrThrow(Api.decodeRequest(DeleteGroups.api, request.frame))
    expect([decoded.header.apiVersion, decoded.header.clientId, decoded.trailingBytes]).toEqual([3, "adminclient-1", 0])
    expect([...decoded.body.groupsNames].sort()).toEqual(["golden-admin-group", "golden-missing"])
    const again = Either.getOrThrow(
      Api.encodeRequest(DeleteGroups.api, 3, decoded.header.correlationId, decoded.header.clientId, decoded.body)
    )
    expect(hex(again.subarray(4))).toBe(hex(request.frame))

    const response = captured("delete-groups-v3-response")
    const answer = Either.getOrThrow(Api.decodeResponse(DeleteGroups.api, response.apiVersion, response.frame))
    expect(answer.correlationId).toBe(decoded.header.correlationId)
    expect(answer.body.results.map((r) => [r.groupId, r.errorCode])).toEqual(
      expect.arrayContaining([
        ["golden-admin-group", Errors.ErrorCode.NONE],
        ["golden-missing", Errors.ErrorCode.GROUP_ID_NOT_FOUND]
      ])
    )
    const chunks = Either.getOrThrow(Api.encodeResponseChunks(DeleteGroups.api, 3, answer.correlationId, answer.body))
    expect(hex(Buffer.concat(chunks).subarray(4))).toBe(hex(response.frame))
  })

  it("--delete-offsets of a topic: OffsetDelete v0 naming both partitions, answered NONE for each", () => {
    const request = captured("offset-delete-v0-request")
    const decoded = Either.getOrThrow(Api.decodeRequest(OffsetDelete.api, request.frame))
    expect(decoded.body).toEqual({
      groupId: "golden-admin-group",
      topics: [{ name: "golden-admin", partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }]
    })
    const again = Either.getOrThrow(
      Api.encodeRequest(OffsetDelete.api, 0, decoded.header.correlationId, decoded.header.clientId, decoded.body)
    )
    expect(hex(again.subarray(4))).toBe(hex(request.frame))

    const response = captured("offset-delete-v0-response")
    const answer = Either.getOrThrow(Api.decodeResponse(OffsetDelete.api, 0, response.frame))
    expect(answer.body).toEqual({
      errorCode: 0,
      throttleTimeMs: 0,
      topics: [
        {
          name: "golden-admin",
          partitions: [
            { partitionIndex: 0, errorCode: 0 },
            { partitionIndex: 1, errorCode: 0 }
          ]
        }
      ]
    })
    const chunks = Either.getOrThrow(Api.encodeResponseChunks(OffsetDelete.api, 0, answer.correlationId, answer.body))
    expect(hex(Buffer.concat(chunks).subarray(4))).toBe(hex(response.frame))
  })
})
