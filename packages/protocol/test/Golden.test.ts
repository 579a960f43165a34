/**
 * Golden requests: frames real clients (kcat/librdkafka, kafkajs, confluent-kafka) sent, captured by
 * `fixtures/capture-requests.ts` into `fixtures/requests/`. Every one must decode with the API's codec,
 * carry the header recorded beside it, hold what the capture script made the client send, and encode
 * back to the same bytes (up to the bytes a client wrote after a complete body, which brokers ignore).
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { Buffer } from "node:buffer"
import { readdirSync, readFileSync } from "node:fs"
import * as Api from "../src/Api.js"
import * as Apis from "../src/Apis.js"
import * as CreateTopics from "../src/apis/CreateTopics.js"
import * as Fetch from "../src/apis/Fetch.js"
import * as FindCoordinator from "../src/apis/FindCoordinator.js"
import * as JoinGroup from "../src/apis/JoinGroup.js"
import * as LeaveGroup from "../src/apis/LeaveGroup.js"
import * as ListOffsets from "../src/apis/ListOffsets.js"
import * as Metadata from "../src/apis/Metadata.js"
import * as OffsetCommit from "../src/apis/OffsetCommit.js"
import * as OffsetFetch from "../src/apis/OffsetFetch.js"
import * as Produce from "../src/apis/Produce.js"
import * as SyncGroup from "../src/apis/SyncGroup.js"
import * as RecordBatch from "../src/RecordBatch.js"
import type * as Spec from "../src/Spec.js"

// What the capture script sends; keep in step with `fixtures/capture-requests.ts`.
const KCAT_TOPIC = "golden"
const KAFKAJS_TOPIC = "golden-kafkajs"
const GROUP = "golden-group"
const KAFKAJS_CLIENT_ID = "golden-kafkajs"
const kcatValues = Array.from({ length: 5 }, (_, i) => `kcat-golden-${i}-${"lz4 likes repetition ".repeat(6)}`)
const kafkajsValues = Array.from({ length: 3 }, (_, i) => `kafkajs-golden-${i}`)
const CONFLUENT_TOPIC = "golden-confluent"
const CONFLUENT_CLIENT_ID = "golden-confluent"

type Client = "kcat" | "kafkajs" | "confluent-kafka"

interface Fixture {
  readonly file: string
  readonly client: Client
  readonly apiKey: number
  readonly apiVersion: number
  readonly clientId: string | null
  readonly frame: Buffer
}

const dir = new URL("./fixtures/requests/", import.meta.url)

const parseFixture = (file: string): Fixture => {
  const json: unknown = JSON.parse(readFileSync(new URL(file, dir), "utf8"))
  if (typeof json !== "object" || json === null) throw new Error(`${file}: not an object`)
  const o: Record<string, unknown> = { ...json }
  const { client, apiKey, apiVersion, clientId, hex } = o
  if (client !== "kcat" && client !== "kafkajs" && client !== "confluent-kafka")
    throw new Error(`${file}: unknown client ${String(client)}`)
  if (typeof apiKey !== "number" || typeof apiVersion !== "number") throw new Error(`${file}: bad api key/version`)
  if (clientId !== null && typeof clientId !== "string") throw new Error(`${file}: bad clientId`)
  if (typeof hex !== "string" || !/^([0-9a-f]{2})+$/.test(hex)) throw new Error(`${file}: bad hex`)
  return { file, client, apiKey, apiVersion, clientId, frame: Buffer.from(hex, "hex") }
}

const fixtures: ReadonlyArray<Fixture> = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map(parseFixture)

const of = (client: Client, apiKey: number): ReadonlyArray<Fixture> =>
  fixtures.filter((f) => f.client === client && f.apiKey === apiKey)

/** Decodes with a typed API module, failing the test on a decode error. */
const body = <Req extends Spec.Fields, Res extends Spec.Fields>(
  api: Api.ApiDef<Req, Res>,
  f: Fixture
): Spec.StructType<Req> => {
  const r = Api.decodeRequest(api, f.frame)
  if (Either.isLeft(r)) throw new Error(`${f.file}: ${r.left.message}`)
  return r.right.body
}

const text = (b: Uint8Array | null): string | null => (b === null ? null : Buffer.from(b).toString("utf8"))

/** Every record of every batch in a Produce request's partition data, after checking each batch's CRC. */
const producedRecords = (f: Fixture, topic: string) => {
  const req = body(Produce.api, f)
  const out: Array<{ key: string | null; value: string | null; compression: number }> = []
  for (const t of req.topicData) {
    expect(t.name).toBe(topic)
    for (const p of t.partitionData) {
      expect(p.records).not.toBeNull()
      const buf = Buffer.from(p.records!)
      const { batches, rest } = RecordBatch.split(buf)
      expect(rest).toBe(buf.length)
      expect(batches.length).toBeGreaterThan(0)
      for (const b of batches) {
        expect(RecordBatch.verifyCrc(buf, b.position)).toBe(true)
        const records = RecordBatch.records(buf, b.position)
        if (Either.isLeft(records)) throw new Error(`${f.file}: ${records.left.message}`)
        for (const r of records.right)
          out.push({ key: text(r.key), value: text(r.value), compression: RecordBatch.compression(buf, b.position) })
      }
    }
  }
  return out
}

describe("Golden requests", () => {
  it("covers both clients and the APIs the capture drives", () => {
    const kinds = new Set(fixtures.map((f) => `${f.client}/${f.apiKey}`))
    for (const k of [
      "kcat/18",
      "kcat/3",
      "kcat/0",
      "kcat/1",
      "kafkajs/18",
      "kafkajs/3",
      "kafkajs/19",
      "kafkajs/0",
      "kafkajs/10",
      "kafkajs/11",
      "kafkajs/14",
      "kafkajs/1",
      "kafkajs/8",
      "confluent-kafka/18",
      "confluent-kafka/3",
      "confluent-kafka/0"
    ])
      expect(kinds, k).toContain(k)
  })

  describe.each(fixtures.map((f) => [f.file, f] as const))("%s", (_, f) => {
    const api = Apis.byKey.get(f.apiKey)

    it("decodes with the header recorded beside it", () => {
      expect(api).toBeDefined()
      const r = Api.decodeRequest(api!, f.frame)
      if (Either.isLeft(r)) throw new Error(r.left.message)
      expect(r.right.header.apiKey).toBe(f.apiKey)
      expect(r.right.header.apiVersion).toBe(f.apiVersion)
      expect(r.right.header.clientId).toBe(f.clientId)
      if (f.client === "kafkajs") expect(f.clientId).toBe(KAFKAJS_CLIENT_ID)
      if (f.client === "confluent-kafka") expect(f.clientId).toBe(CONFLUENT_CLIENT_ID)
    })

    it("encodes back to the same bytes", () => {
      const r = Api.decodeRequest(api!, f.frame)
      if (Either.isLeft(r)) throw new Error(r.left.message)
      const { header, body: decoded, trailingBytes } = r.right
      const again = Api.encodeRequest(api!, header.apiVersion, header.correlationId, header.clientId, decoded)
      if (Either.isLeft(again)) throw new Error(again.left.message)
      const complete = f.frame.subarray(0, f.frame.length - trailingBytes)
      expect(again.right.subarray(4).toString("hex")).toBe(complete.toString("hex"))
      expect(again.right.readInt32BE(0)).toBe(complete.length)
    })
  })

  it("kcat Metadata asks for all topics or for golden", () => {
    const fs = of("kcat", Metadata.api.key)
    expect(fs.length).toBeGreaterThan(0)
    for (const f of fs) {
      const topics = body(Metadata.api, f).topics
      if (topics !== null) for (const t of topics) expect(t.name).toBe(KCAT_TOPIC)
    }
    expect(fs.some((f) => body(Metadata.api, f).topics === null)).toBe(true)
  })

  it("confluent-kafka's all-topics Metadata v12 carries librdkafka's four-byte null array and decodes as Kafka reads it", () => {
    const fs = of("confluent-kafka", Metadata.api.key)
    const all = fs.filter((f) => body(Metadata.api, f).topics === null)
    expect(all.length).toBeGreaterThan(0)
    for (const f of all) {
      expect(f.apiVersion).toBe(12)
      const r = Either.getOrThrow(Api.decodeRequest(Metadata.api, f.frame))
      // librdkafka leaves the int32 placeholder of the topic array as 00000000: the first byte is the
      // compact null, the next three are read as AllowAutoTopicCreation, IncludeTopicAuthorizedOperations
      // and an empty tag section, and its real 01 00 00 trail the body (Kafka ignores them too).
      expect(r.trailingBytes).toBe(3)
      expect(f.frame.subarray(f.frame.length - 7).toString("hex")).toBe("00000000" + "010000")
      expect(r.body.allowAutoTopicCreation).toBe(false)
      expect(r.body.includeTopicAuthorizedOperations).toBe(false)
    }
    for (const f of fs.filter((f) => body(Metadata.api, f).topics !== null)) {
      expect(Either.getOrThrow(Api.decodeRequest(Metadata.api, f.frame)).trailingBytes).toBe(0)
      for (const t of body(Metadata.api, f).topics ?? []) expect(t.name).toBe(CONFLUENT_TOPIC)
    }
  })

  it("only confluent-kafka's all-topics Metadata has bytes after its body", () => {
    for (const f of fixtures) {
      const r = Either.getOrThrow(Api.decodeRequest(Apis.byKey.get(f.apiKey)!, f.frame))
      if (r.trailingBytes > 0) expect([f.client, f.apiKey], f.file).toEqual(["confluent-kafka", Metadata.api.key])
    }
  })

  it("confluent-kafka Produce carries the record the script sent", () => {
    const fs = of("confluent-kafka", Produce.api.key)
    expect(fs.length).toBeGreaterThan(0)
    const records = fs.flatMap((f) => producedRecords(f, CONFLUENT_TOPIC))
    expect(records.map((r) => [r.key, r.value])).toEqual([["confluent-0", "confluent-golden-0"]])
  })

  it("kafkajs Metadata names only its topic", () => {
    for (const f of of("kafkajs", Metadata.api.key))
      for (const t of body(Metadata.api, f).topics ?? []) expect(t.name).toBe(KAFKAJS_TOPIC)
  })

  it("kcat Produce carries one lz4 batch with the values the script sent", () => {
    const fs = of("kcat", Produce.api.key)
    expect(fs.length).toBeGreaterThan(0)
    const records = fs.flatMap((f) => producedRecords(f, KCAT_TOPIC))
    expect(records.map((r) => r.value)).toEqual(kcatValues)
    expect(records.map((r) => r.key)).toEqual(kcatValues.map((_, i) => `kcat-${i}`))
    for (const r of records) expect(r.compression).toBe(RecordBatch.Compression.lz4)
    for (const f of fs) expect(body(Produce.api, f).acks).not.toBe(0)
  })

  it("kafkajs Produce carries the values the script sent", () => {
    const fs = of("kafkajs", Produce.api.key)
    expect(fs.length).toBeGreaterThan(0)
    const records = fs.flatMap((f) => producedRecords(f, KAFKAJS_TOPIC))
    expect(records.map((r) => r.value).sort()).toEqual([...kafkajsValues].sort())
    for (const r of records) expect(r.key).toBe(`kafkajs-${r.value!.slice("kafkajs-golden-".length)}`)
  })

  it("Fetch and ListOffsets read the topics the clients consume", () => {
    for (const [client, topic] of [
      ["kcat", KCAT_TOPIC],
      ["kafkajs", KAFKAJS_TOPIC]
    ] as const) {
      for (const f of of(client, Fetch.api.key)) {
        const req = body(Fetch.api, f)
        expect(req.replicaId).toBe(-1)
        expect(req.topics.map((t) => t.topic)).toEqual([topic])
      }
      for (const f of of(client, ListOffsets.api.key))
        for (const t of body(ListOffsets.api, f).topics) expect(t.name).toBe(topic)
    }
  })

  it("kafkajs CreateTopics creates its topic with two partitions", () => {
    const fs = of("kafkajs", CreateTopics.api.key)
    expect(fs.length).toBeGreaterThan(0)
    for (const f of fs) {
      const req = body(CreateTopics.api, f)
      expect(req.topics.map((t) => [t.name, t.numPartitions])).toEqual([[KAFKAJS_TOPIC, 2]])
    }
  })

  it("kafkajs group requests carry the group the script used", () => {
    for (const f of of("kafkajs", FindCoordinator.api.key)) expect(body(FindCoordinator.api, f).key).toBe(GROUP)
    const joins = of("kafkajs", JoinGroup.api.key)
    expect(joins.length).toBeGreaterThan(0)
    for (const f of joins) {
      const req = body(JoinGroup.api, f)
      expect(req.groupId).toBe(GROUP)
      expect(req.protocolType).toBe("consumer")
    }
    for (const f of of("kafkajs", SyncGroup.api.key)) expect(body(SyncGroup.api, f).groupId).toBe(GROUP)
    for (const f of of("kafkajs", OffsetFetch.api.key)) expect(body(OffsetFetch.api, f).groupId).toBe(GROUP)
    for (const f of of("kafkajs", LeaveGroup.api.key)) expect(body(LeaveGroup.api, f).groupId).toBe(GROUP)
    const commits = of("kafkajs", OffsetCommit.api.key)
    expect(commits.length).toBeGreaterThan(0)
    for (const f of commits) {
      const req = body(OffsetCommit.api, f)
      expect(req.groupId).toBe(GROUP)
      expect(req.topics.map((t) => t.name)).toEqual([KAFKAJS_TOPIC])
    }
  })
})
