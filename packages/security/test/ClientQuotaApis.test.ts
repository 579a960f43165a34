import { describe, expect, it } from "vitest"
import { MetadataDelta, MetadataImage, MetadataProvenance } from "@clustermirror/metadata-log"
import { Handlers, NoResponse } from "@clustermirror/network/RequestChannel"
import {
  Api,
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  DescribeClientQuotas,
  Errors,
  Fetch,
  MetadataRecords,
  Produce,
  type Spec,
  WriteTxnMarkers
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as ClientQuotaApis from "../src/ClientQuotaApis.js"

const E = Errors.ErrorCode
type Part = { entityType: string; entityName: string | null }
const user = (name: string | null): Part => ({ entityType: "user", entityName: name })
const client = (name: string | null): Part => ({ entityType: "client-id", entityName: name })
const ip = (name: string | null): Part => ({ entityType: "ip", entityName: name })

const imageOf = (quotas: ReadonlyArray<readonly [Part[], string, number]>) =>
  MetadataDelta.make(
    MetadataImage.empty,
    quotas.map(([entity, key, value]) => MetadataRecords.make("ClientQuotaRecord", { entity, key, value }))
  ).apply(MetadataProvenance.empty)

const IMAGE = imageOf([
  [[user("alice")], "producer_byte_rate", 100],
  [[user("alice"), client("app")], "producer_byte_rate", 200],
  [[user(null)], "consumer_byte_rate", 300],
  [[user(null), client(null)], "producer_byte_rate", 400],
  [[client("app")], "consumer_byte_rate", 500],
  [[client(null)], "producer_byte_rate", 600]
])

const describeQuotas = (
  components: Array<{ entityType: string; matchType: number; match: string | null }>,
  strict = false
) => ClientQuotaApis.describeClientQuotas(IMAGE, { components, strict })
const values = (r: DescribeClientQuotas.Response) =>
  (r.entries ?? []).flatMap((e) => e.values.map((v) => v.value)).sort((a, b) => a - b)

describe("ClientQuotaApis.describeClientQuotas", () => {
  it("matches EXACT names, DEFAULT entities and SPECIFIED types (the default included), strictly or not", () => {
    expect(values(describeQuotas([]))).toEqual([100, 200, 300, 400, 500, 600])
    expect(values(describeQuotas([], true))).toEqual([])
    expect(values(describeQuotas([{ entityType: "user", matchType: 0, match: "alice" }]))).toEqual([100, 200])
    expect(values(describeQuotas([{ entityType: "user", matchType: 0, match: "alice" }], true))).toEqual([100])
    expect(values(describeQuotas([{ entityType: "user", matchType: 1, match: null }]))).toEqual([300, 400])
    expect(values(describeQuotas([{ entityType: "client-id", matchType: 2, match: null }], true))).toEqual([500, 600])
    expect(values(describeQuotas([{ entityType: "client-id", matchType: 2, match: null }]))).toEqual([
      200, 400, 500, 600
    ])
    expect(
      values(
        describeQuotas([
          { entityType: "user", matchType: 2, match: null },
          { entityType: "client-id", matchType: 0, match: "app" }
        ])
      )
    ).toEqual([200])
    const r = describeQuotas([{ entityType: "user", matchType: 0, match: "alice" }], true)
    expect(r.entries).toEqual([{ entity: [user("alice")], values: [{ key: "producer_byte_rate", value: 100 }] }])
  })

  it("refuses a malformed filter with Kafka's errors and no entries", () => {
    const refusal = (components: Array<{ entityType: string; matchType: number; match: string | null }>) => {
      const r = describeQuotas(components)
      expect(r.entries).toBeNull()
      return [r.errorCode, r.errorMessage]
    }
    const INVALID = Errors.ErrorCode.INVALID_REQUEST
    expect(refusal([{ entityType: "", matchType: 0, match: "x" }])).toEqual([INVALID, "Invalid empty entity type."])
    expect(
      refusal([
        { entityType: "user", matchType: 0, match: "x" },
        { entityType: "user", matchType: 2, match: null }
      ])
    ).toEqual([INVALID, "Entity type user cannot appear more than once in the filter."])
    expect(refusal([{ entityType: "group", matchType: 2, match: null }])).toEqual([
      Errors.ErrorCode.UNSUPPORTED_VERSION,
      "Unsupported entity type group"
    ])
    expect(refusal([{ entityType: "user", matchType: 0, match: null }])).toEqual([
      INVALID,
      "Request specified MATCH_TYPE_EXACT, but set match string to null."
    ])
    expect(refusal([{ entityType: "user", matchType: 1, match: "x" }])[1]).toBe(
      "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
    )
    expect(refusal([{ entityType: "user", matchType: 2, match: "x" }])[1]).toBe(
      "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
    )
    expect(refusal([{ entityType: "user", matchType: 7, match: null }])[1]).toBe("Unknown match type 7")
    expect(
      refusal([
        { entityType: "ip", matchType: 1, match: null },
        { entityType: "user", matchType: 1, match: null }
      ])[1]
    ).toMatch(/^Invalid entity filter component combination/)
    expect(describeQuotas([{ entityType: "ip", matchType: 2, match: null }]).entries).toEqual([])
    expect(
      values(
        ClientQuotaApis.describeClientQuotas(imageOf([[[ip(null)], "connection_creation_rate", 5]]), {
          components: [{ entityType: "ip", matchType: 1, match: null }],
          strict: true
        })
      )
    ).toEqual([5])
  })
})

const connection = {
  id: 1,
  remoteHost: "127.0.0.1",
  remotePort: 5000,
  listenerName: "PLAINTEXT",
  securityProtocol: "PLAINTEXT" as const,
  principal: "User:ANONYMOUS"
}

/** Runs a request through the handlers; the decoded response (or none) and how long the connection is muted. */
const run = async <Req extends Spec.Fields, Res extends Spec.Fields>(
  handlers: Handlers,
  api: Api.ApiDef<Req, Res>,
  version: number,
  clientId: string,
  body: unknown
) => {
  const frame = Either.getOrThrow(Api.encodeRequest(api, version, 1, clientId, body as never)).subarray(4)
  const result = await handlers.frameHandler(() => {})(frame, connection)
  if (result._tag === "Close") throw new Error(result.reason)
  const muteMs = result.muteMs ?? 0
  if (result._tag === "NoResponse") return { body: undefined, muteMs, bytes: frame.length }
  const body_ = Either.getOrThrow(Api.decodeResponse(api, version, Buffer.concat(result.chunks).subarray(4))).body
  return { body: body_, muteMs, bytes: frame.length }
}

const fetchRequest = (replicaId: number) => ({
  replicaId,
  maxWaitMs: 0,
  minBytes: 1,
  maxBytes: 10_000_000,
  isolationLevel: 0,
  sessionId: 0,
  sessionEpoch: -1,
  topics: [
    { topic: "t", partitions: [{ partition: 0, fetchOffset: 0n, logStartOffset: -1n, partitionMaxBytes: 1_000_000 }] }
  ],
  forgottenTopicsData: []
})

describe("ClientQuotaApis.register: throttling Produce and Fetch", () => {
  const setup = (quotas: ReadonlyArray<readonly [Part[], string, number]>) => {
    let now = 0
    let fetchMaxBytes = -1
    const records = Buffer.alloc(150_000)
    const handlers = new Handlers()
      .register(Produce.api, (_ctx, request) =>
        request.acks === 0 ? NoResponse : { responses: [], throttleTimeMs: 0 }
      )
      .register(Fetch.api, (_ctx, request) => {
        fetchMaxBytes = request.maxBytes
        return {
          throttleTimeMs: 0,
          errorCode: 0,
          sessionId: 0,
          responses: [
            {
              topic: "t",
              topicId: "AAAAAAAAAAAAAAAAAAAAAA",
              partitions: [{ partitionIndex: 0, errorCode: 0, highWatermark: 1n, records }]
            }
          ]
        }
      })
    ClientQuotaApis.register(handlers, { image: () => imageOf(quotas), now: () => now })
    return {
      handlers,
      at: (ms: number) => (now = ms),
      fetchMaxBytes: () => fetchMaxBytes
    }
  }
  const produce = (acks: number) => ({
    transactionalId: null,
    acks,
    timeoutMs: 1000,
    topicData: [{ name: "t", partitionData: [{ index: 0, records: Buffer.alloc(49_000) }] }]
  })
  const fetch = fetchRequest

  it("appends a produce over the quota and answers it with throttle_time_ms, muting the connection as long", async () => {
    const s = setup([[[client("q1")], "producer_byte_rate", 10_000]])
    // 10 windows x 10,000 B/s: the first 100,000 bytes pass.
    const first = await run(s.handlers, Produce.api, 9, "q1", produce(1))
    expect(first.muteMs).toBe(0)
    const second = await run(s.handlers, Produce.api, 9, "q1", produce(1))
    expect(second.muteMs).toBe(0)
    const third = await run(s.handlers, Produce.api, 9, "q1", produce(1))
    // Rate (3 x the request) / 10 s over 10,000 B/s: the excess over the quota, times the window.
    const expected = Math.round((((third.bytes * 3) / 10 - 10_000) / 10_000) * 10_000)
    expect(third.muteMs).toBe(expected)
    expect((third.body as Produce.Response).throttleTimeMs).toBe(expected)
    // Another client-id has no quota; acks=0 is muted without a response.
    expect((await run(s.handlers, Produce.api, 9, "other", produce(1))).muteMs).toBe(0)
    const silent = await run(s.handlers, Produce.api, 9, "q1", produce(0))
    expect(silent.body).toBeUndefined()
    expect(silent.muteMs).toBeGreaterThan(expected)
  })

  it("answers a fetch over the quota without records, caps its size, and leaves followers alone", async () => {
    const s = setup([[[user(null), client(null)], "consumer_byte_rate", 20_000]])
    const first = await run(s.handlers, Fetch.api, 12, "c", fetch(-1))
    expect(s.fetchMaxBytes()).toBe(200_000)
    expect(first.muteMs).toBe(0)
    expect((first.body as Fetch.Response).responses).toHaveLength(1)
    const second = await run(s.handlers, Fetch.api, 12, "c", fetch(-1))
    const expected = Math.round(((300_000 / 10 - 20_000) / 20_000) * 10_000)
    expect(second.muteMs).toBe(expected)
    expect(second.body).toMatchObject({ throttleTimeMs: expected, errorCode: 0, responses: [] })
    // The throttled fetch's bytes were not counted: once the first fetch's window is gone, a fetch passes.
    s.at(11_000)
    expect((await run(s.handlers, Fetch.api, 12, "c", fetch(-1))).muteMs).toBe(0)
    const follower = await run(s.handlers, Fetch.api, 12, "c", fetch(1))
    expect(follower.muteMs).toBe(0)
    expect(s.fetchMaxBytes()).toBe(10_000_000)
  })

  it("answers versions older than KIP-219 at once as well, with throttle_time_ms, and mutes as long (Kafka since 2.0)", async () => {
    // Produce before v6 and Fetch before v8: clients that do not wait out throttle_time_ms themselves.
    for (const version of [3, 5, 6]) {
      const s = setup([[[client("q1")], "producer_byte_rate", 10_000]])
      await run(s.handlers, Produce.api, version, "q1", produce(1))
      await run(s.handlers, Produce.api, version, "q1", produce(1))
      const frame = Either.getOrThrow(Api.encodeRequest(Produce.api, version, 1, "q1", produce(1) as never)).subarray(4)
      const result = await s.handlers.frameHandler(() => {})(frame, connection)
      const expected = Math.round((((frame.length * 3) / 10 - 10_000) / 10_000) * 10_000)
      expect(result).toEqual({ _tag: "Respond", chunks: expect.any(Array), muteMs: expected })
    }
    for (const version of [4, 7, 8]) {
      const s = setup([[[client("c")], "consumer_byte_rate", 20_000]])
      await run(s.handlers, Fetch.api, version, "c", fetch(-1))
      const second = await run(s.handlers, Fetch.api, version, "c", fetch(-1))
      const expected = Math.round(((300_000 / 10 - 20_000) / 20_000) * 10_000)
      expect([version, second.muteMs]).toEqual([version, expected])
      expect(second.body).toMatchObject({ throttleTimeMs: expected, responses: [] })
    }
  })
})

describe("ClientQuotaApis.register: request_percentage", () => {
  it("throttles a pair over its share of handler time on any API, and exempts replica fetches and inter-broker requests", async () => {
    let clock = 0
    const handlers = new Handlers()
      .register(DescribeClientQuotas.api, () => ({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, entries: [] }))
      .register(Fetch.api, () => {
        clock += 3000
        return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses: [] }
      })
      .register(WriteTxnMarkers.api, () => {
        clock += 3000
        return { markers: [] }
      })
    ClientQuotaApis.register(handlers, {
      image: () => imageOf([[[client("busy")], "request_percentage", 10]]),
      now: () => 0,
      handlingClock: () => clock
    })
    // DescribeClientQuotas is re-registered by the quotas; time it through a wrap that takes 600 ms.
    handlers.wrap(DescribeClientQuotas.api, (next) => (ctx, request) => {
      clock += 600
      return next(ctx, request)
    })
    const describe = { components: [], strict: false }
    // 10 % of one handler over the first 10 s is 1 s: 600 ms passes, 1200 ms is 2 % over = 20 % of 10 s, bounded to 1 s.
    expect((await run(handlers, DescribeClientQuotas.api, 1, "busy", describe)).muteMs).toBe(0)
    const over = await run(handlers, DescribeClientQuotas.api, 1, "busy", describe)
    expect(over.muteMs).toBe(1000)
    expect((over.body as DescribeClientQuotas.Response).throttleTimeMs).toBe(1000)
    // Another client-id has no request quota.
    expect((await run(handlers, DescribeClientQuotas.api, 1, "idle", describe)).muteMs).toBe(0)
    // The pair is over its quota, yet a replica's fetch and WriteTxnMarkers (3 s each) are neither counted nor throttled.
    const follower = { ...fetchRequest(1), topics: [] }
    expect((await run(handlers, Fetch.api, 12, "busy", follower)).muteMs).toBe(0)
    expect((await run(handlers, WriteTxnMarkers.api, 1, "busy", { markers: [] })).muteMs).toBe(0)
    // A consumer's fetch is.
    const consumer = await run(handlers, Fetch.api, 12, "busy", { ...fetchRequest(-1), topics: [] })
    expect(consumer.muteMs).toBe(1000)
  })
})

describe("ClientQuotaApis.register: controller_mutation_rate", () => {
  const topicImage = (quotas: ReadonlyArray<readonly [Part[], string, number]>, topics: Record<string, number>) =>
    MetadataDelta.make(MetadataImage.empty, [
      ...quotas.map(([entity, key, value]) => MetadataRecords.make("ClientQuotaRecord", { entity, key, value })),
      ...Object.entries(topics).flatMap(([name, partitions], i) => {
        const topicId = `AAAAAAAAAAAAAAAAAAAAA${"BCDEFGHI"[i]}`
        return [
          MetadataRecords.make("TopicRecord", { name, topicId }),
          ...Array.from({ length: partitions }, (_, p) =>
            MetadataRecords.make("PartitionRecord", {
              partitionId: p,
              topicId,
              replicas: [1],
              isr: [1],
              leader: 1,
              leaderEpoch: 0,
              partitionEpoch: 0
            })
          )
        ]
      })
    ]).apply(MetadataProvenance.empty)
  const setup = (topics: Record<string, number> = {}) => {
    const forwarded: string[][] = []
    let now = 0
    const handlers = new Handlers()
      .register(CreateTopics.api, (_ctx, request) => {
        forwarded.push(request.topics.map((t) => t.name))
        return {
          throttleTimeMs: 0,
          topics: request.topics.map((t) => ({
            name: t.name,
            errorCode: t.name.startsWith("bad") ? E.INVALID_TOPIC_EXCEPTION : 0,
            errorMessage: null,
            numPartitions: t.numPartitions
          }))
        }
      })
      .register(DeleteTopics.api, (_ctx, request) => {
        forwarded.push([...request.topicNames, ...request.topics.map((t) => t.name ?? "")])
        return {
          throttleTimeMs: 0,
          responses: [...request.topicNames, ...request.topics.map((t) => t.name)].map((name) => ({
            name,
            errorCode: 0
          }))
        }
      })
      .register(CreatePartitions.api, (_ctx, request) => {
        forwarded.push(request.topics.map((t) => t.name))
        return { throttleTimeMs: 0, results: request.topics.map((t) => ({ name: t.name, errorCode: 0 })) }
      })
    ClientQuotaApis.register(handlers, {
      image: () => topicImage([[[client("admin")], "controller_mutation_rate", 1]], topics),
      now: () => now
    })
    return { handlers, forwarded, at: (ms: number) => (now = ms) }
  }
  const create = (...topics: Array<readonly [string, number]>) => ({
    topics: topics.map(([name, numPartitions]) => ({
      name,
      numPartitions,
      replicationFactor: 1,
      assignments: [],
      configs: []
    })),
    timeoutMs: 1000,
    validateOnly: false
  })
  type Created = CreateTopics.Response["topics"][number]
  const codes = (r: { body: unknown }) =>
    (r.body as CreateTopics.Response).topics.map((t: Created) => [t.name, t.errorCode, t.errorMessage])

  it("v6+: a topic asked while the bucket is in debt gets THROTTLING_QUOTA_EXCEEDED and is not forwarded", async () => {
    const s = setup()
    // 1/s over 11 windows: 11 tokens. 10 partitions pass (1 left), the next 10 pass into debt (-9).
    const first = await run(s.handlers, CreateTopics.api, 7, "admin", create(["a", 10], ["b", 10], ["c", 1]))
    expect(codes(first)).toEqual([
      ["a", 0, null],
      ["b", 0, null],
      ["c", E.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded."]
    ])
    expect(s.forwarded).toEqual([["a", "b"]])
    // 9 tokens of debt at 1/s: 9 s, on the response and the connection.
    expect((first.body as CreateTopics.Response).throttleTimeMs).toBe(9000)
    expect(first.muteMs).toBe(9000)
    s.at(4000)
    const second = await run(s.handlers, CreateTopics.api, 7, "admin", create(["d", 1]))
    expect(codes(second)).toEqual([["d", E.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded."]])
    expect(second.muteMs).toBe(5000)
    expect(s.forwarded).toHaveLength(1)
    // Another client-id has no quota; once the debt is repaid the admin may create again.
    expect(codes(await run(s.handlers, CreateTopics.api, 7, "other", create(["e", 100])))).toEqual([["e", 0, null]])
    s.at(9000)
    expect(codes(await run(s.handlers, CreateTopics.api, 7, "admin", create(["f", 1])))).toEqual([["f", 0, null]])
  })

  it("before v6 everything is forwarded and the response throttled; refused topics give their partitions back", async () => {
    const s = setup()
    const old = await run(s.handlers, CreateTopics.api, 5, "admin", create(["a", 10], ["b", 10], ["c", 1]))
    expect(codes(old).map(([, code]) => code)).toEqual([0, 0, 0])
    expect((old.body as CreateTopics.Response).throttleTimeMs).toBe(10_000)
    expect(old.muteMs).toBe(10_000)
    // validateOnly counts as in Kafka's controller: 10 of the 11 tokens.
    const v = setup()
    const validated = await run(v.handlers, CreateTopics.api, 7, "admin", { ...create(["a", 10]), validateOnly: true })
    expect(codes(validated)).toEqual([["a", 0, null]])
    expect(codes(await run(v.handlers, CreateTopics.api, 7, "admin", create(["b", 10])))).toEqual([["b", 0, null]])
    expect(codes(await run(v.handlers, CreateTopics.api, 7, "admin", create(["c", 1])))[0]![1]).toBe(
      E.THROTTLING_QUOTA_EXCEEDED
    )
    // The controller refuses "bad": its 10 partitions are given back, so the bucket stays at 1 token.
    const t = setup()
    const refused = await run(t.handlers, CreateTopics.api, 7, "admin", create(["bad", 10], ["a", 1], ["b", 1]))
    expect(codes(refused).map(([, code]) => code)).toEqual([E.INVALID_TOPIC_EXCEPTION, 0, 0])
    expect(refused.muteMs).toBe(0)
  })

  it("counts the partitions DeleteTopics deletes and CreatePartitions adds, from the image", async () => {
    const s = setup({ big: 12, small: 2 })
    // DeleteTopics v5 (strict): "big" takes the bucket to -1, "small" is refused.
    const del = await run(s.handlers, DeleteTopics.api, 5, "admin", {
      topicNames: ["big", "small"],
      timeoutMs: 1000
    })
    expect((del.body as DeleteTopics.Response).responses.map((r) => [r.name, r.errorCode])).toEqual([
      ["big", 0],
      ["small", E.THROTTLING_QUOTA_EXCEEDED]
    ])
    expect(del.muteMs).toBe(1000)
    expect(s.forwarded).toEqual([["big"]])
    // CreatePartitions v3 (strict) in debt: refused; v2 (permissive): forwarded and throttled.
    const grow = { topics: [{ name: "small", count: 4, assignments: null }], timeoutMs: 1000, validateOnly: false }
    const strict = await run(s.handlers, CreatePartitions.api, 3, "admin", grow)
    expect((strict.body as CreatePartitions.Response).results[0]!.errorCode).toBe(E.THROTTLING_QUOTA_EXCEEDED)
    const permissive = await run(s.handlers, CreatePartitions.api, 2, "admin", grow)
    expect((permissive.body as CreatePartitions.Response).results[0]!.errorCode).toBe(0)
    expect(permissive.muteMs).toBe(3000)
  })
})

describe("ClientQuotaApis.admitConnection", () => {
  it("throttles new connections over their IP's rate, the default IP's for IPs without their own", () => {
    const admit = ClientQuotaApis.admitConnection({
      image: () =>
        imageOf([
          [[ip("10.0.0.1")], "connection_creation_rate", 1],
          [[ip(null)], "connection_creation_rate", 2]
        ]),
      now: () => 0
    })
    // 1/s over the first 10 s: 10 pass, the 11th is held 1 s (10 % over x 10 s) and closed.
    const own = Array.from({ length: 11 }, () => admit("10.0.0.1"))
    expect(own).toEqual([...Array(10).fill(0), 1000])
    const byDefault = Array.from({ length: 21 }, () => admit("::ffff:10.0.0.2"))
    expect(byDefault).toEqual([...Array(20).fill(0), 500])
    expect(ClientQuotaApis.admitConnection({ image: () => MetadataImage.empty })("10.0.0.1")).toBe(0)
  })
})
