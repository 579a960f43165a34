import { Buffer } from "node:buffer"
import { connect } from "node:net"
import { Api, CreateTopics, Header, Metadata, Produce, RecordBatch, type Spec } from "@clustermirror/protocol"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as MirrorCheck from "../src/MirrorCheck.js"
import * as ServerProcess from "../src/ServerProcess.js"
import * as Wait from "../src/Wait.js"

/** One request over a fresh connection (the test needs a handful, on a single node). */
const request = <Req extends Spec.Fields, Res extends Spec.Fields>(
  port: number,
  api: Api.ApiDef<Req, Res>,
  version: number,
  body: Spec.StructInput<Req>
): Promise<Spec.StructType<Res>> =>
  new Promise((resolve, reject) => {
    const frame = Api.encodeRequest(api, version, 1, "mirror-check-test", body)
    if (Either.isLeft(frame)) return reject(frame.left)
    const socket = connect({ host: "127.0.0.1", port })
    const frames = new Header.FrameDecoder()
    socket.once("error", reject)
    socket.once("connect", () => socket.write(frame.right))
    socket.on("data", (chunk: Buffer) => {
      const decoded = frames.push(chunk)
      if (Either.isLeft(decoded)) return reject(decoded.left)
      const response = decoded.right[0]
      if (response === undefined) return
      socket.destroy()
      const r = Api.decodeResponse(api, version, response)
      if (Either.isLeft(r)) reject(r.left)
      else resolve(r.right.body)
    })
  })

/** A batch with fixed timestamps and no producer id: the same values give the same bytes on any partition. */
const batch = (...values: ReadonlyArray<string>): Buffer =>
  RecordBatch.build({ records: values.map((v) => ({ value: Buffer.from(v) })), timestamp: 1_700_000_000_000 })

const LOGS: Record<string, ReadonlyArray<ReadonlyArray<Buffer>>> = {
  // Partition 0: a's and b's last batches differ. Partition 1: b has one batch more.
  "mc-a": [
    [batch("x0", "x1", "x2"), batch("x3", "x4"), batch("x5")],
    [batch("p0", "p1"), batch("p2")]
  ],
  "mc-b": [
    [batch("x0", "x1", "x2"), batch("x3", "x4"), batch("y5")],
    [batch("p0", "p1"), batch("p2"), batch("p3", "p4")]
  ]
}

describe("MirrorCheck against our server", () => {
  let server: ServerProcess.ServerHandle

  beforeAll(async () => {
    server = await ServerProcess.start({ config: ServerProcess.TEST_DEFAULTS, tempPrefix: "cm-mirror-check-" })
    const created = await request(server.port, CreateTopics.api, 7, {
      topics: Object.keys(LOGS).map((name) => ({ name, numPartitions: 2, replicationFactor: 1 })),
      timeoutMs: 10_000
    })
    for (const t of created.topics) expect(t.errorCode).toBe(0)
    await Wait.eventually("leaders of the test topics", async () => {
      const md = await request(server.port, Metadata.api, 12, { topics: Object.keys(LOGS).map((name) => ({ name })) })
      return md.topics.every((t) => t.errorCode === 0 && t.partitions.every((p) => p.leaderId >= 0)) ? true : undefined
    })
    for (const [name, partitions] of Object.entries(LOGS))
      for (const [index, batches] of partitions.entries())
        for (const records of batches) {
          const res = await request(server.port, Produce.api, 9, {
            transactionalId: null,
            acks: -1,
            timeoutMs: 10_000,
            topicData: [{ name, partitionData: [{ index, records }] }]
          })
          expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
        }
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("finds a topic identical to itself: every batch, record and byte counted", async () => {
    const r = await MirrorCheck.compareClusters({
      source: server.bootstrap,
      destination: server.bootstrap,
      topics: ["mc-a"]
    })
    expect(r.identical).toBe(true)
    expect(r.partitions.map((p) => [p.partition, p.batches, p.records, p.sourceEnd, p.destinationEnd])).toEqual([
      [0, 3, 6, 6, 6],
      [1, 2, 3, 3, 3]
    ])
    expect(r.partitions[0]!.sourceTopicId).toBe(r.partitions[0]!.destinationTopicId)
    const produced = LOGS["mc-a"]!.flat().reduce((n, b) => n + b.length, 0)
    expect(r.bytes).toBe(produced)
  })

  it("finds where another topic's data differs: the first differing batch and its kind", async () => {
    const r = await MirrorCheck.compareClusters({
      source: server.bootstrap,
      destination: server.bootstrap,
      topics: [{ source: "mc-a", destination: "mc-b" }],
      checkTopicIds: false
    })
    expect(r.identical).toBe(false)
    const [p0, p1] = r.partitions
    expect(p0!.firstMismatch?.what).toBe("crc")
    expect(p0!.firstMismatch?.offset).toBe(5)
    expect([p0!.batches, p0!.records]).toEqual([2, 5])
    // Up to the smaller high watermark the longer partition holds the same batches.
    expect(p1!.firstMismatch).toBeNull()
    expect([p1!.sourceEnd, p1!.destinationEnd, p1!.batches]).toEqual([3, 5, 2])
  })

  it("up to the destination's high watermark, the source lacks the destination's extra batch", async () => {
    const r = await MirrorCheck.compareClusters({
      source: server.bootstrap,
      destination: server.bootstrap,
      topics: [{ source: "mc-a", destination: "mc-b" }],
      checkTopicIds: false,
      upTo: "destinationHighWatermark"
    })
    expect(r.partitions[1]!.firstMismatch).toEqual({
      offset: 3,
      what: "missing",
      source: "none (log ends at 3)",
      destination: "batch 3-4"
    })
  })

  it("reports different topic ids before any data, and a destination topic that does not exist", async () => {
    const ids = await MirrorCheck.compareClusters({
      source: server.bootstrap,
      destination: server.bootstrap,
      topics: [{ source: "mc-a", destination: "mc-b" }]
    })
    for (const p of ids.partitions) {
      expect(p.firstMismatch?.what).toBe("topicId")
      expect(p.firstMismatch?.source).toBe(p.sourceTopicId)
      expect(p.firstMismatch?.destination).toBe(p.destinationTopicId)
      expect(p.sourceTopicId).not.toBe(p.destinationTopicId)
    }
    const missing = await MirrorCheck.compareClusters({
      source: server.bootstrap,
      destination: server.bootstrap,
      topics: [{ source: "mc-a", destination: "mc-nowhere" }]
    })
    expect(missing.partitions.map((p) => [p.firstMismatch?.what, p.firstMismatch?.offset])).toEqual([
      ["missing", 0],
      ["missing", 0]
    ])
  })
})
