import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Api, CreateTopics, Fetch, Header, Produce, RecordBatch, type Spec } from "@clustermirror/protocol"
import { Either } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Node from "../src/Node.js"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"

/** A minimal pipelined connection: responses resolved by correlation id. */
const connect = (port: number) =>
  new Promise<{
    send: (frame: Buffer, correlationId: number) => Promise<Buffer>
    write: (frame: Buffer) => void
    close: () => void
  }>((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1")
    const waiting = new Map<number, (b: Buffer) => void>()
    const frames = new Header.FrameDecoder()
    socket.on("data", (chunk) => {
      const r = frames.push(chunk)
      if (Either.isRight(r)) for (const f of r.right) waiting.get(f.readInt32BE(0))?.(f)
    })
    socket.once("error", reject)
    socket.once("connect", () =>
      resolve({
        send: (frame, correlationId) =>
          new Promise((res) => {
            waiting.set(correlationId, res)
            socket.write(frame)
          }),
        write: (frame) => socket.write(frame),
        close: () => socket.destroy()
      })
    )
  })

const batch = (value: string) =>
  RecordBatch.build({ records: [{ value: Buffer.from(value) }], timestamp: Date.now(), compression: 3 })

describe("a single node (in process)", () => {
  let dir: string
  let broker: Node.Node
  let conn: Awaited<ReturnType<typeof connect>>
  let correlation = 1

  const request = <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ) => {
    const id = correlation++
    return conn.send(Either.getOrThrow(Api.encodeRequest(api, version, id, "test", body)), id)
  }

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-broker-"))
    broker = await Node.start({ ...BrokerConfig.defaults, port: 0, dataDir: dir, groupInitialRebalanceDelayMs: 0 })
    conn = await connect(broker.port)
    const created = await request(CreateTopics.api, 7, {
      topics: [{ name: "t", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5000
    })
    const body = Either.getOrThrow(Api.decodeResponse(CreateTopics.api, 7, created.subarray(0))).body
    expect(body.topics[0]!.errorCode).toBe(0)
  })
  afterAll(async () => {
    conn.close()
    await broker.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const fetchAt = (offset: bigint, maxWaitMs: number) =>
    request(Fetch.api, 12, {
      replicaId: -1,
      maxWaitMs,
      minBytes: 1,
      maxBytes: 1 << 20,
      topics: [{ topic: "t", partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20 }] }]
    }).then((f) => Either.getOrThrow(Api.decodeResponse(Fetch.api, 12, f)).body.responses[0]!.partitions[0]!)

  it("answers an empty long poll when maxWaitMs passes without data", async () => {
    const p = await fetchAt(0n, 200)
    expect(p.errorCode).toBe(0)
    expect(p.records?.length ?? 0).toBe(0)
  })

  it("completes a waiting fetch as soon as data is produced, on another connection", async () => {
    const other = await connect(broker.port)
    const waiting = fetchAt(0n, 30_000)
    await new Promise((r) => setTimeout(r, 100))
    const id = 9999
    const produced = await other.send(
      Either.getOrThrow(
        Api.encodeRequest(Produce.api, 9, id, "test", {
          acks: 1,
          timeoutMs: 5000,
          topicData: [{ name: "t", partitionData: [{ index: 0, records: batch("hello") }] }]
        })
      ),
      id
    )
    expect(
      Either.getOrThrow(Api.decodeResponse(Produce.api, 9, produced)).body.responses[0]!.partitionResponses[0]!
        .errorCode
    ).toBe(0)
    const p = await waiting
    const records = RecordBatch.records(Buffer.from(p.records!))
    expect(Either.getOrThrow(records).map((r) => Buffer.from(r.value!).toString())).toEqual(["hello"])
    other.close()
  })

  it("appends acks=0 produces without answering them", async () => {
    const id = correlation++
    conn.write(
      Either.getOrThrow(
        Api.encodeRequest(Produce.api, 9, id, "test", {
          acks: 0,
          timeoutMs: 5000,
          topicData: [{ name: "t", partitionData: [{ index: 0, records: batch("fire-and-forget") }] }]
        })
      )
    )
    // the connection's next answer is for the next request: nothing was sent for acks=0
    const p = await fetchAt(1n, 5000)
    const values = Either.getOrThrow(RecordBatch.records(Buffer.from(p.records!))).map((r) =>
      Buffer.from(r.value!).toString()
    )
    expect(values).toEqual(["fire-and-forget"])
  })

  it("keeps topics and data across a restart (metadata journal replay)", async () => {
    conn.close()
    await broker.close()
    broker = await Node.start({ ...BrokerConfig.defaults, port: 0, dataDir: dir, groupInitialRebalanceDelayMs: 0 })
    conn = await connect(broker.port)
    const p = await fetchAt(0n, 0)
    const values = Either.getOrThrow(RecordBatch.records(Buffer.from(p.records!))).map((r) =>
      Buffer.from(r.value!).toString()
    )
    expect(values[0]).toBe("hello")
    expect(p.highWatermark).toBe(2n)
  })
})
