import {
  type Api,
  ApiVersions,
  CreateTopics,
  Errors,
  Fetch,
  Metadata,
  Produce,
  RecordBatch
} from "@clustermirror/protocol"
import { Ports, ServerProcess } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { ConnectionError, RequestTimeout, UnsupportedVersion } from "../src/ClientError.js"
import * as Connection from "../src/Connection.js"
import * as Fake from "./FakeBroker.js"

const produceBody = (topic: string, value: string, acks = 1) => ({
  transactionalId: null,
  acks,
  timeoutMs: 5000,
  topicData: [
    {
      name: topic,
      partitionData: [
        { index: 0, records: RecordBatch.build({ records: [{ value: Buffer.from(value) }], timestamp: Date.now() }) }
      ]
    }
  ]
})

const NODE_ID = 0

describe("Connection against our broker", () => {
  let broker: ServerProcess.ServerHandle
  let conn: Connection.Connection

  beforeAll(async () => {
    // The server's own defaults (no config file), as in production, on a free port and a temp data dir.
    broker = await ServerProcess.start({ args: ["--node-id", String(NODE_ID)], tempPrefix: "cm-client-" })
    conn = await Connection.open({ host: "127.0.0.1", port: broker.port, clientId: "client-test" })
    const created = await conn.call(CreateTopics.api, {
      topics: [{ name: "pipe", numPartitions: 1, replicationFactor: 1 }],
      timeoutMs: 5000
    })
    expect(created.topics[0]!.errorCode).toBe(0)
  })
  afterAll(async () => {
    await conn?.close()
    await broker?.stop()
  })

  it("negotiates versions: the highest both speak, UnsupportedVersion for an API the broker lacks", () => {
    const table = conn.apiVersions
    expect(table).not.toBeNull()
    const theirs = table!.get(Metadata.api.key)!
    expect(Either.getOrThrow(conn.versionFor(Metadata.api))).toBe(Math.min(theirs.max, Metadata.api.maxVersion))
    expect(Either.getOrThrow(conn.versionFor(ApiVersions.api))).toBe(
      Math.min(table!.get(ApiVersions.api.key)!.max, ApiVersions.api.maxVersion)
    )
    const unknown: Api.ApiShape = {
      key: 32000,
      name: "Nonexistent",
      minVersion: 0,
      maxVersion: 1,
      request: { isFlexible: () => true },
      response: { isFlexible: () => true }
    }
    const v = conn.versionFor(unknown)
    expect(Either.isLeft(v)).toBe(true)
    if (Either.isLeft(v)) {
      expect(v.left).toBeInstanceOf(UnsupportedVersion)
      expect(v.left.theirs).toBeNull()
    }
  })

  it("pipelines 100 produce requests and resolves them in order", async () => {
    const version = Either.getOrThrow(conn.versionFor(Produce.api))
    const all = Array.from({ length: 100 }, (_, i) => conn.request(Produce.api, version, produceBody("pipe", `m${i}`)))
    // Every request is written before any answer arrives.
    expect(conn.inFlight).toBe(100)
    const responses = await Promise.all(all)
    const offsets = responses.map((r) => {
      const p = r.responses[0]!.partitionResponses[0]!
      expect(p.errorCode).toBe(0)
      return Number(p.baseOffset)
    })
    expect(offsets).toEqual(Array.from({ length: 100 }, (_, i) => i))
    expect(conn.inFlight).toBe(0)
  })

  it("sends acks=0 produce without awaiting an answer, keeping the stream in step", async () => {
    const version = Either.getOrThrow(conn.versionFor(Produce.api))
    const before = await conn.request(Produce.api, version, produceBody("pipe", "a"))
    const base = before.responses[0]!.partitionResponses[0]!.baseOffset
    await conn.requestNoResponse(Produce.api, version, produceBody("pipe", "b", 0))
    const after = await conn.request(Produce.api, version, produceBody("pipe", "c"))
    expect(after.responses[0]!.partitionResponses[0]!.baseOffset).toBe(base + 2n)
  })

  it("times out a request with RequestTimeout and stays usable", async () => {
    const version = Either.getOrThrow(conn.versionFor(Fetch.api))
    // Long-poll at the log end: the broker holds the fetch for maxWaitMs.
    const last = await conn.call(Produce.api, produceBody("pipe", "end"))
    const end = last.responses[0]!.partitionResponses[0]!.baseOffset + 1n
    const md0 = await conn.call(Metadata.api, { topics: [{ name: "pipe" }], allowAutoTopicCreation: false })
    const topicId = md0.topics[0]!.topicId
    const started = Date.now()
    const error = await conn
      .request(
        Fetch.api,
        version,
        {
          replicaId: -1,
          maxWaitMs: 1500,
          minBytes: 1,
          maxBytes: 1 << 20,
          topics: [
            { topic: "pipe", topicId, partitions: [{ partition: 0, fetchOffset: end, partitionMaxBytes: 1 << 20 }] }
          ]
        },
        { timeoutMs: 200 }
      )
      .then(
        () => null,
        (e: unknown) => e
      )
    expect(error).toBeInstanceOf(RequestTimeout)
    expect(Date.now() - started).toBeLessThan(1400)
    expect(conn.isOpen).toBe(true)
    // The late fetch answer arrives first and is dropped; the next answer is ours.
    const md = await conn.call(Metadata.api, { topics: [], allowAutoTopicCreation: false })
    expect(md.brokers.map((b) => b.nodeId)).toEqual([NODE_ID])
  })

  it("fails to connect with a ConnectionError", async () => {
    const port = await Ports.freePort()
    const error = await Connection.open({ host: "127.0.0.1", port }).then(
      () => null,
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(ConnectionError)
    expect((error as ConnectionError).reason).toBe("connect")
  })

  it.effect("is an Effect resource closed with its scope", () =>
    Effect.gen(function* () {
      const c = yield* Effect.scoped(
        Effect.gen(function* () {
          const c = yield* Connection.scoped({ host: "127.0.0.1", port: broker.port })
          const md = yield* Effect.promise(() => c.call(Metadata.api, { topics: [] }))
          expect(md.brokers.length).toBe(1)
          return c
        })
      )
      expect(c.isOpen).toBe(false)
    })
  )
})

describe("Connection against scripted peers", () => {
  it("falls back to ApiVersions v0 when the broker answers UNSUPPORTED_VERSION", async () => {
    const table: Fake.VersionTable = [
      { apiKey: ApiVersions.api.key, minVersion: 0, maxVersion: 0 },
      { apiKey: Metadata.api.key, minVersion: 0, maxVersion: 5 },
      { apiKey: Produce.api.key, minVersion: 0, maxVersion: 2 }
    ]
    const fake = await Fake.start((req) => {
      if (req.apiKey !== ApiVersions.api.key) return
      // A broker that only knows v0 answers any newer ApiVersions in a v0 body.
      if (req.apiVersion > 0)
        Fake.respond(req, ApiVersions.api, 0, { errorCode: Errors.ErrorCode.UNSUPPORTED_VERSION, apiKeys: table })
      else Fake.answerApiVersions(req, table)
    })
    try {
      const conn = await Connection.open({ host: "127.0.0.1", port: fake.port })
      expect(fake.seen.map((s) => s.apiVersion)).toEqual([3, 0])
      expect(Either.getOrThrow(conn.versionFor(Metadata.api))).toBe(5)
      const produce = conn.versionFor(Produce.api)
      expect(Either.isLeft(produce)).toBe(true)
      if (Either.isLeft(produce)) expect(produce.left.theirs).toEqual({ min: 0, max: 2 })
      await conn.close()
    } finally {
      await fake.close()
    }
  })

  it("fails every in-flight request with a ConnectionError when the peer disconnects", async () => {
    let received = 0
    let drop = () => {}
    const fake = await Fake.start((req) => {
      if (req.apiKey === ApiVersions.api.key) return Fake.answerApiVersions(req)
      if (++received === 5) drop()
    })
    drop = fake.dropClients
    try {
      const conn = await Connection.open({ host: "127.0.0.1", port: fake.port })
      const results = await Promise.allSettled(
        Array.from({ length: 5 }, () => conn.call(Metadata.api, { topics: [] }, { timeoutMs: 10_000 }))
      )
      for (const r of results) {
        expect(r.status).toBe("rejected")
        if (r.status === "rejected") {
          expect(r.reason).toBeInstanceOf(ConnectionError)
          expect((r.reason as ConnectionError).reason).toBe("closed")
        }
      }
      expect(conn.isOpen).toBe(false)
      expect(conn.inFlight).toBe(0)
      const later = await conn.call(Metadata.api, { topics: [] }).then(
        () => null,
        (e: unknown) => e
      )
      expect(later).toBeInstanceOf(ConnectionError)
    } finally {
      await fake.close()
    }
  })

  it("fails in-flight requests when the client closes the connection", async () => {
    const fake = await Fake.start((req) => {
      if (req.apiKey === ApiVersions.api.key) Fake.answerApiVersions(req)
    })
    try {
      const conn = await Connection.open({ host: "127.0.0.1", port: fake.port })
      const pending = conn.call(Metadata.api, { topics: [] }).then(
        () => null,
        (e: unknown) => e
      )
      await conn.close()
      expect(await pending).toBeInstanceOf(ConnectionError)
    } finally {
      await fake.close()
    }
  })
})
