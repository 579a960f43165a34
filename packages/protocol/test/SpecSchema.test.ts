import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { Apis, CreateClusterMirror, DescribeClusterMirrors, Fetch, Metadata } from "../src/index.js"
import * as S from "../src/Spec.js"

const messages = Apis.all.flatMap((a) => [a.request, a.response] as ReadonlyArray<S.Message<S.Fields>>)

describe("Spec schemas", () => {
  it("accepts every message's empty value, as decoded and as encoder input", () => {
    for (const m of messages) {
      expect(Schema.is(m.schema as Schema.Schema<unknown>)(m.empty), m.name).toBe(true)
      expect(Either.isRight(m.validate(m.empty)), m.name).toBe(true)
      expect(Either.isRight(m.validate({})), m.name).toBe(true)
    }
  })

  it("names the field of an int32 out of range, a null where not nullable and a malformed UUID", () => {
    const tooBig = DescribeClusterMirrors.Request.validate({
      mirrorNames: ["m"],
      lastMirrorEpochLookups: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAQ", partitions: [0, 2 ** 31] }]
    })
    expect(Either.isLeft(tooBig) && tooBig.left).toMatchObject({
      _tag: "InvalidValue",
      what: "DescribeClusterMirrorsRequest",
      field: "lastMirrorEpochLookups[0].partitions[1]"
    })
    const nullName = CreateClusterMirror.Request.validate({
      mirrorName: null as unknown as string,
      config: [{ name: "bootstrap.servers", value: null }]
    })
    expect(Either.isLeft(nullName) && nullName.left).toMatchObject({ field: "mirrorName" })
    expect(Either.isLeft(nullName) && nullName.left.message).toMatch(/^CreateClusterMirrorRequest: mirrorName: /)
    const nullConfigName = CreateClusterMirror.Request.validate({
      mirrorName: "m",
      config: [{ name: null as unknown as string, value: "x" }]
    })
    expect(Either.isLeft(nullConfigName) && nullConfigName.left).toMatchObject({ field: "config[0].name" })
    // A nullable field takes null.
    expect(
      Either.isRight(CreateClusterMirror.Request.validate({ mirrorName: "m", config: [{ name: "a", value: null }] }))
    ).toBe(true)
    const badUuid = DescribeClusterMirrors.Request.validate({
      lastMirrorEpochLookups: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAB", partitions: [] }]
    })
    expect(Either.isLeft(badUuid) && badUuid.left).toMatchObject({ field: "lastMirrorEpochLookups[0].topicId" })
  })

  it("takes int64 input as a bigint or a safe integer, and records as one buffer or chunks", () => {
    expect(Either.isRight(Metadata.Request.validate({ topics: null }))).toBe(true)
    const partition = { partitionIndex: 0, records: [new Uint8Array(2), new Uint8Array(3)] }
    expect(Either.isRight(Fetch.Response.validate({ responses: [{ topic: "t", partitions: [partition] }] }))).toBe(true)
    expect(
      Either.isRight(
        Fetch.Response.validate({ responses: [{ topic: "t", partitions: [{ partitionIndex: 0, highWatermark: 7n }] }] })
      )
    ).toBe(true)
    const unsafe = Fetch.Response.validate({
      responses: [{ topic: "t", partitions: [{ partitionIndex: 0, highWatermark: (2 ** 60) as unknown as bigint }] }]
    })
    expect(Either.isLeft(unsafe) && unsafe.left.field).toBe("responses[0].partitions[0].highWatermark")
  })

  it("writes the JSON form: int64 as a number, bytes as base64, null kept", () => {
    const value = {
      ...DescribeClusterMirrors.Response.empty,
      mirrors: [
        {
          errorCode: 0,
          mirrorName: "m",
          authorizedOperations: -2147483648,
          groupSyncStatuses: [],
          aclSyncStatuses: [],
          topics: [
            {
              topicName: "t",
              partitions: [
                {
                  partitionIndex: 0,
                  sourceOffset: 10n,
                  destinationOffset: 7n,
                  lag: 3n,
                  stateValue: "MIRRORING",
                  retryAttempt: 0,
                  errorMessage: null,
                  lagTimeMs: -1n
                }
              ]
            }
          ]
        }
      ]
    }
    const json = Schema.encodeSync(DescribeClusterMirrors.Response.jsonSchema)(value) as {
      mirrors: ReadonlyArray<{ topics: ReadonlyArray<{ partitions: ReadonlyArray<unknown> }> }>
    }
    expect(json.mirrors[0]!.topics[0]!.partitions[0]).toEqual({
      partitionIndex: 0,
      sourceOffset: 10,
      destinationOffset: 7,
      lag: 3,
      stateValue: "MIRRORING",
      retryAttempt: 0,
      errorMessage: null,
      lagTimeMs: -1
    })
    expect(JSON.parse(JSON.stringify(json))).toEqual(json)
    expect(Schema.decodeUnknownSync(DescribeClusterMirrors.Response.jsonSchema)(json)).toEqual(value)
    expect(Schema.encodeSync(S.jsonScalar("bytes"))(new Uint8Array([1, 2, 3]))).toBe("AQID")
    expect(() => Schema.encodeSync(S.jsonScalar("int64"))(2n ** 60n)).toThrow()
  })
})
