import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Api from "../src/Api.js"
import * as Apis from "../src/Apis.js"
import { CreateTopics, Fetch, Metadata, Produce } from "../src/index.js"
import type { Fields, Message } from "../src/Spec.js"
import { arbitraryFor } from "./arbitrary.js"

const NUM_RUNS = 50

const versionsOf = (m: Message<Fields>): ReadonlyArray<number> => {
  const out: Array<number> = []
  for (let v = m.validVersions.lo; v <= m.validVersions.hi; v++) out.push(v)
  return out
}

/** Decoded bytes are Buffer slices and inputs plain Uint8Arrays: compare contents only. */
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

const expectDecodeError = (result: Either.Either<unknown, { readonly _tag: string }>) => {
  expect(Either.isLeft(result)).toBe(true)
  if (Either.isLeft(result)) expect(result.left._tag).toBe("DecodeError")
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

describe("Apis registry", () => {
  it("has one entry per key, each serving versions its request and response define", () => {
    expect(new Set(Apis.all.map((a) => a.key)).size).toBe(Apis.all.length)
    for (const api of Apis.all) {
      for (const m of [api.request, api.response]) {
        expect(api.minVersion, `${api.name} min`).toBeGreaterThanOrEqual(m.validVersions.lo)
        expect(api.maxVersion, `${api.name} max`).toBeLessThanOrEqual(m.validVersions.hi)
      }
      expect(Apis.byKey.get(api.key)).toBe(api)
    }
  })
})

for (const api of Apis.all) {
  describe(`${api.name} (key ${api.key})`, () => {
    for (const [side, message] of [
      ["request", api.request],
      ["response", api.response]
    ] as const) {
      for (const v of versionsOf(message)) {
        it(`${side} v${v}: decode(encode(x)) = x, and every strict prefix fails to decode`, () => {
          fc.assert(
            fc.property(arbitraryFor(message, v), fc.nat(), (x, cut) => {
              const bytes = Either.getOrThrow(message.encode(v, x))
              const back = Either.getOrThrow(message.decode(v, bytes))
              expect(normalize(back)).toEqual(normalize(x))
              if (bytes.length > 0) expectDecodeError(message.decode(v, bytes.subarray(0, cut % bytes.length)))
            }),
            { numRuns: NUM_RUNS }
          )
        })

        it(`${side} v${v}: arbitrary bytes decode to a value or a DecodeError, never a throw`, () => {
          fc.assert(
            fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
              const result = message.decode(v, bytes)
              if (Either.isLeft(result)) expect(result.left._tag).toBe("DecodeError")
            }),
            { numRuns: NUM_RUNS }
          )
        })
      }
    }
  })
}

describe("exact bytes", () => {
  it('Metadata v0 request for topic "a", framed with request header v1', () => {
    const frame = Either.getOrThrow(Api.encodeRequest(Metadata.api, 0, 7, "c", { topics: [{ name: "a" }] }))
    expect(hex(frame)).toBe(
      "00000012" + // size 18
        "0003" + // api key 3
        "0000" + // version 0
        "00000007" + // correlation id
        "000163" + // client id "c"
        "00000001" + // one topic
        "000161" // name "a"
    )
  })

  it("Metadata v1 request with a null topic list asks for all topics", () => {
    expect(hex(Either.getOrThrow(Metadata.Request.encode(1, { topics: null })))).toBe("ffffffff")
    expectDecodeError(Metadata.Request.decode(0, Buffer.from("ffffffff", "hex")))
  })

  it("Produce v3 request: header v1, null transactional id, classic arrays and int32-sized records", () => {
    const body = {
      transactionalId: null,
      acks: -1,
      timeoutMs: 30000,
      topicData: [{ name: "t", partitionData: [{ index: 0, records: new Uint8Array([1, 2, 3]) }] }]
    }
    const frame = Either.getOrThrow(Api.encodeRequest(Produce.api, 3, 1, null, body))
    const expected =
      "0000" + // api key 0
      "0003" + // version 3
      "00000001" + // correlation id
      "ffff" + // null client id
      "ffff" + // null transactional id
      "ffff" + // acks -1
      "00007530" + // timeout 30000
      "00000001" + // one topic
      "000174" + // "t"
      "00000001" + // one partition
      "00000000" + // index 0
      "00000003" + // records size
      "010203"
    expect(hex(frame)).toBe((expected.length / 2).toString(16).padStart(8, "0") + expected)
    // v12 only changes the meaning of transactional batches: same bytes as v11.
    expect(hex(Either.getOrThrow(Produce.Request.encode(12, body)))).toBe(
      hex(Either.getOrThrow(Produce.Request.encode(11, body)))
    )
  })

  it("Produce records given as chunks encode like one buffer", () => {
    const one = { topicData: [{ name: "t", partitionData: [{ index: 0, records: new Uint8Array([1, 2, 3, 4]) }] }] }
    const chunked = {
      topicData: [
        { name: "t", partitionData: [{ index: 0, records: [new Uint8Array([1]), new Uint8Array([2, 3, 4])] }] }
      ]
    }
    for (const v of [3, 9]) {
      expect(hex(Either.getOrThrow(Produce.Request.encode(v, chunked)))).toBe(
        hex(Either.getOrThrow(Produce.Request.encode(v, one)))
      )
    }
  })

  it("Fetch v19 request carries MirrorLeaderEpoch as tag 2 and omits a default HighWatermark", () => {
    const bytes = Either.getOrThrow(
      Fetch.Request.encode(19, {
        maxWaitMs: 500,
        minBytes: 1,
        topics: [
          {
            topicId: "AAAAAAAAAAAAAAAAAAAAAA",
            partitions: [{ partition: 0, fetchOffset: 10n, partitionMaxBytes: 1048576, mirrorLeaderEpoch: 5 }]
          }
        ]
      })
    )
    expect(hex(bytes)).toBe(
      "000001f4" + // max wait 500
        "00000001" + // min bytes
        "7fffffff" + // max bytes default
        "00" + // isolation level
        "00000000" + // session id
        "ffffffff" + // session epoch -1
        "02" + // one topic
        "00".repeat(16) + // topic id
        "02" + // one partition
        "00000000" + // partition 0
        "ffffffff" + // current leader epoch -1
        "000000000000000a" + // fetch offset 10
        "ffffffff" + // last fetched epoch -1
        "ffffffffffffffff" + // log start offset -1
        "00100000" + // partition max bytes
        "01" +
        "02" +
        "04" +
        "00000005" + // tagged: MirrorLeaderEpoch = 5
        "00" + // topic tags
        "01" + // no forgotten topics
        "01" + // rack id ""
        "00" // top-level tags
    )
    const back = Either.getOrThrow(Fetch.Request.decode(19, bytes))
    expect(back.topics[0]!.partitions[0]!.mirrorLeaderEpoch).toBe(5)
    expect(back.topics[0]!.partitions[0]!.highWatermark).toBe(9223372036854775807n)
    // Below v19 the field does not exist: it is dropped on encode and decodes as its default.
    const v18 = Either.getOrThrow(Fetch.Request.decode(18, Either.getOrThrow(Fetch.Request.encode(18, back))))
    expect(v18.topics[0]!.partitions[0]!.mirrorLeaderEpoch).toBe(-1)
  })

  it("Fetch v19 response carries MirrorLeaderEpoch as tag 3 of the partition", () => {
    const bytes = Either.getOrThrow(
      Fetch.Response.encode(19, {
        responses: [
          {
            topicId: "AAAAAAAAAAAAAAAAAAAAAA",
            partitions: [{ partitionIndex: 0, highWatermark: 1n, records: null, mirrorLeaderEpoch: 3 }]
          }
        ]
      })
    )
    expect(hex(bytes).endsWith("00" + "01" + "03" + "04" + "00000003" + "00" + "00")).toBe(true)
    expect(Either.getOrThrow(Fetch.Response.decode(19, bytes)).responses[0]!.partitions[0]!.mirrorLeaderEpoch).toBe(3)
  })

  it("CreateTopics v8 writes MirrorInfo inline behind an int8 presence marker", () => {
    const topicId = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex").toString("base64url")
    const topic = { name: "t", numPartitions: 1, replicationFactor: -1 }
    const withMirror = Either.getOrThrow(
      CreateTopics.Request.encode(8, { topics: [{ ...topic, mirrorInfo: { topicId } }] })
    )
    const common = "02" + "0274" + "00000001" + "ffff" + "01" + "01"
    const tail = "00" + "0000ea60" + "00" + "00" // topic tags, timeout 60000, validateOnly, tags
    expect(hex(withMirror)).toBe(common + "01" + "000102030405060708090a0b0c0d0e0f" + "00" + tail)
    const withoutMirror = Either.getOrThrow(CreateTopics.Request.encode(8, { topics: [topic] }))
    expect(hex(withoutMirror)).toBe(common + "ff" + tail)
    expect(hex(Either.getOrThrow(CreateTopics.Request.encode(7, { topics: [topic] })))).toBe(common + tail)
    expect(Either.getOrThrow(CreateTopics.Request.decode(8, withMirror)).topics[0]!.mirrorInfo).toEqual({ topicId })
  })
})

describe("request frames", () => {
  const frame = (v: number, body: Record<string, unknown>): Buffer =>
    Either.getOrThrow(Api.encodeRequest(Metadata.api, v, 3, "rdkafka", body as never)).subarray(4)

  it("accept bytes after a complete body and report them", () => {
    const complete = frame(12, { topics: null, allowAutoTopicCreation: true })
    const r = Api.decodeRequest(Metadata.api, Buffer.concat([complete, Buffer.from("010000", "hex")]))
    if (Either.isLeft(r)) throw new Error(r.left.message)
    expect(r.right.trailingBytes).toBe(3)
    expect(r.right.body.topics).toBeNull()
    expect(r.right.header.clientId).toBe("rdkafka")
    const exact = Either.getOrThrow(Api.decodeRequest(Metadata.api, complete))
    expect(exact.trailingBytes).toBe(0)
    const classic = frame(1, { topics: [{ name: "a" }] })
    expect(
      Either.getOrThrow(Api.decodeRequest(Metadata.api, Buffer.concat([classic, Buffer.alloc(2)]))).trailingBytes
    ).toBe(2)
  })

  it("reject a body that ends early, at every cut, flexible or not", () => {
    for (const [v, body] of [
      [12, { topics: [{ name: "topic-a" }], allowAutoTopicCreation: true }],
      [4, { topics: [{ name: "topic-a" }] }]
    ] as const) {
      const f = frame(v, body)
      const headerEnd = 4 + 4 + 2 + "rdkafka".length + (v >= 9 ? 1 : 0)
      for (let cut = headerEnd; cut < f.length; cut++)
        expectDecodeError(Api.decodeRequest(Metadata.api, f.subarray(0, cut)))
    }
  })

  it("reject bad lengths and invalid tagged-field sections even with bytes to spare", () => {
    const header = frame(12, { topics: [] }).subarray(0, 4 + 4 + 2 + "rdkafka".length + 1)
    const spare = "00".repeat(8)
    const bad = [
      "05" + "00".repeat(16) + "0261" + "00", // four topics announced, one given
      "02" + "00".repeat(16) + "7f" + "61", // a name longer than the frame
      "01" + "01" + "00" + "01" + "00" + "7f" + "00", // a tagged field longer than the frame
      "01" + "01" + "00" + "02" + "05" + "00" + "01" + "00" + spare // tags out of order
    ]
    for (const b of bad)
      expectDecodeError(Api.decodeRequest(Metadata.api, Buffer.concat([header, Buffer.from(b, "hex")])))
  })
})
