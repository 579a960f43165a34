/**
 * Batches built here, with every codec, are readable by librdkafka: a minimal listener answers kcat's
 * ApiVersions, Metadata v1 and Fetch v10 with one built batch, and `kcat -C` (CRC checks on) must print
 * its ten records. The other direction (reading kcat's batches) is covered by the golden bytes.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { Buffer } from "node:buffer"
import { createServer, type AddressInfo } from "node:net"
import * as Compression from "../src/Compression.js"
import { Reader, Writer } from "../src/internal/Bytes.js"
import * as RecordBatch from "../src/RecordBatch.js"

const TOPIC = "interop"

// librdkafka enables a codec or message format only if the advertised ranges contain its probe versions.
const API_RANGES = [
  [0, 0, 7], // Produce
  [1, 0, 10], // Fetch
  [2, 0, 1], // ListOffsets
  [3, 0, 1], // Metadata
  [10, 0, 0], // FindCoordinator
  [18, 0, 3] // ApiVersions
] as const

const apiVersions = (w: Writer, version: number): void => {
  w.int16(0)
  w.arrayLength(API_RANGES.length, version >= 3)
  for (const [key, min, max] of API_RANGES) {
    w.int16(key)
    w.int16(min)
    w.int16(max)
    if (version >= 3) w.uvarint(0)
  }
  if (version >= 1) w.int32(0)
  if (version >= 3) w.uvarint(0)
}

const metadataV1 = (w: Writer, port: number): void => {
  w.int32(1)
  w.int32(1)
  w.string("127.0.0.1")
  w.int32(port)
  w.string(null)
  w.int32(1)
  w.int32(1)
  w.int16(0)
  w.string(TOPIC)
  w.bool(false)
  w.int32(1)
  w.int16(0)
  w.int32(0) // partition
  w.int32(1) // leader
  for (let i = 0; i < 4; i++) w.int32(1) // replicas [1], isr [1]
}

const fetchV10 = (w: Writer, records: Buffer): void => {
  w.int32(0) // throttle
  w.int16(0)
  w.int32(0) // session
  w.int32(1)
  w.string(TOPIC)
  w.int32(1)
  w.int32(0) // partition
  w.int16(0)
  w.int64(10n) // high watermark
  w.int64(10n) // last stable offset
  w.int64(0n) // log start offset
  w.int32(-1) // aborted transactions
  w.bytesField(records)
}

/** Serves `batch` as partition 0 of TOPIC and returns what `kcat -C` prints for ten records. */
const consumeWithKcat = (batch: Buffer): Promise<{ code: number | null; lines: string[] }> =>
  new Promise((resolve) => {
    let served = false
    const server = createServer((socket) => {
      let pending = Buffer.alloc(0)
      socket.on("error", () => {})
      socket.on("data", (chunk) => {
        pending = Buffer.concat([pending, chunk])
        while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
          const r = new Reader(pending, 4, 4 + pending.readInt32BE(0))
          pending = pending.subarray(r.end)
          const apiKey = r.int16()
          const version = r.int16()
          const correlationId = r.int32()
          const w = new Writer()
          w.int32(0)
          w.int32(correlationId)
          if (apiKey === 18) apiVersions(w, version)
          else if (apiKey === 3) metadataV1(w, (server.address() as AddressInfo).port)
          else if (apiKey === 1) {
            fetchV10(w, served ? Buffer.alloc(0) : batch)
            served = true
          } else continue
          const frame = w.finish()
          frame.writeInt32BE(frame.length - 4, 0)
          socket.write(frame)
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      const args = ["-C", "-b", `127.0.0.1:${port}`, "-t", TOPIC, "-p", "0", "-o", "0", "-c", "10"]
      args.push("-f", "%o %k %s %h\\n", "-X", "check.crcs=true")
      const kcat = spawn("kcat", args, { stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      kcat.stdout.on("data", (d: Buffer) => {
        out += d.toString()
      })
      const timer = setTimeout(() => kcat.kill(), 20_000)
      kcat.on("exit", (code) => {
        clearTimeout(timer)
        server.close()
        resolve({ code, lines: out.split("\n").filter((l) => l.length > 0) })
      })
    })
  })

describe("Compression interop with kcat (librdkafka)", () => {
  for (const type of Compression.all) {
    it(`kcat reads a ${Compression.names[type]} batch built here`, async () => {
      const batch = RecordBatch.build({
        records: Array.from({ length: 10 }, (_, i) => ({
          key: Buffer.from(`k${i}`),
          value: Buffer.from(`m${i}-${"x".repeat(40)}`),
          headers: [{ key: "h", value: Buffer.from("v") }],
          timestamp: 1_700_000_000_000 + i
        })),
        compression: type,
        partitionLeaderEpoch: 0
      })
      const { code, lines } = await consumeWithKcat(batch)
      expect(code).toBe(0)
      expect(lines).toEqual(Array.from({ length: 10 }, (_, i) => `${i} k${i} m${i}-${"x".repeat(40)} h=v`))
    })
  }
})
