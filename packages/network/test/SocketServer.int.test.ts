import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Api, ApiVersions, Errors, Header, Metadata } from "@clustermirror/protocol"
import { Either } from "effect"
import * as net from "node:net"
import { Handlers } from "../src/RequestChannel.js"
import * as SocketServer from "../src/SocketServer.js"

/** Sends frames on one connection and collects `count` response frames (or until close). */
const exchange = (port: number, frames: ReadonlyArray<Buffer>, count: number, raw?: Buffer) =>
  new Promise<{ frames: Buffer[]; closed: boolean }>((resolve) => {
    const socket = net.connect(port, "127.0.0.1")
    const decoder = new Header.FrameDecoder()
    const out: Buffer[] = []
    const done = (closed: boolean) => {
      socket.destroy()
      resolve({ frames: out, closed })
    }
    socket.on("connect", () => {
      for (const f of frames) socket.write(f)
      if (raw) socket.write(raw)
    })
    socket.on("data", (chunk) => {
      const r = decoder.push(chunk)
      if (Either.isRight(r)) out.push(...r.right)
      if (out.length >= count) done(false)
    })
    socket.on("close", () => done(true))
    socket.on("error", () => done(true))
    setTimeout(() => done(false), 3000)
  })

describe("SocketServer + RequestChannel", () => {
  let server: SocketServer.SocketServer
  beforeAll(async () => {
    const handlers = new Handlers()
    handlers.register(ApiVersions.api, async (ctx) => {
      // later requests finish first: ordering must still follow arrival
      await new Promise((r) => setTimeout(r, (ctx.correlationId % 3) * 5))
      return { errorCode: 0, apiKeys: handlers.versions() }
    })
    server = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1024 * 1024,
      handle: handlers.frameHandler(() => {})
    })
  })
  afterAll(() => server.close())

  const apiVersions = (correlationId: number, version = 3) =>
    Either.getOrThrow(
      Api.encodeRequest(ApiVersions.api, version, correlationId, "test", {
        clientSoftwareName: "t",
        clientSoftwareVersion: "1"
      })
    )

  it("answers pipelined requests in order", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => i + 1)
    const { frames } = await exchange(
      server.port,
      ids.map((i) => apiVersions(i)),
      ids.length
    )
    expect(frames.map((f) => f.readInt32BE(0))).toEqual(ids)
    const body = Either.getOrThrow(Api.decodeResponse(ApiVersions.api, 3, frames[0]!))
    expect(body.body.apiKeys.map((k) => k.apiKey)).toEqual([18])
  })

  it("answers ApiVersions at an unsupported version with v0 UNSUPPORTED_VERSION", async () => {
    const frame = apiVersions(7, 3)
    frame.writeInt16BE(99, 6)
    const { frames } = await exchange(server.port, [frame], 1)
    const decoded = Either.getOrThrow(Api.decodeResponse(ApiVersions.api, 0, frames[0]!))
    expect(decoded.correlationId).toBe(7)
    expect(decoded.body.errorCode).toBe(Errors.ErrorCode.UNSUPPORTED_VERSION)
    expect(decoded.body.apiKeys.length).toBeGreaterThan(0)
  })

  it("closes only the offending connection on bad input", async () => {
    const unknownKey = Either.getOrThrow(Api.encodeRequest(Metadata.api, 1, 1, "x", { topics: [] }))
    const cases: Buffer[] = [
      Buffer.from([0x7f, 0xff, 0xff, 0xff]), // over the max frame size
      Buffer.from([0xff, 0xff, 0xff, 0xfe]), // negative size
      unknownKey, // an API this server does not register
      (() => {
        // a valid v2 request header (15 bytes) followed by a body that is not a valid ApiVersionsRequest
        const body = Buffer.concat([apiVersions(3).subarray(4, 4 + 15), Buffer.from([0xff, 0xff, 0xff])])
        const size = Buffer.alloc(4)
        size.writeInt32BE(body.length)
        return Buffer.concat([size, body])
      })()
    ]
    for (const raw of cases) {
      const r = await exchange(server.port, [], 1, raw)
      expect(r.closed).toBe(true)
      expect(r.frames).toEqual([])
    }
    const ok = await exchange(server.port, [apiVersions(42)], 1)
    expect(ok.frames[0]!.readInt32BE(0)).toBe(42)
  })
})

describe("SocketServer logging of closed connections", () => {
  it("logs at most the limit per interval under a flood of bad connections, then says how many it suppressed", async () => {
    const lines: Array<string> = []
    const server = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1024,
      handle: new Handlers().frameHandler(() => {}),
      log: (l) => lines.push(l),
      closeLogLimit: { maxLines: 5, intervalMs: 600_000 }
    })
    try {
      const bad = Buffer.from([0x7f, 0xff, 0xff, 0xff]) // over the max frame size
      for (let i = 0; i < 40; i++) expect((await exchange(server.port, [], 1, bad)).closed).toBe(true)
      expect(lines).toHaveLength(5)
      for (const l of lines) expect(l).toMatch(/^closing connection 127\.0\.0\.1:\d+: frame size/)
    } finally {
      await server.close()
    }
    expect(lines).toHaveLength(6)
    expect(lines[5]).toBe("suppressed 35 more closed connections in the last 600 s")
  })
})

describe("SocketServer: a throttled connection is muted", () => {
  it("answers the throttled request at once, then reads nothing more of that connection until the time is up", async () => {
    const handlers = new Handlers()
    const answered: Array<{ id: number; at: number }> = []
    handlers.register(ApiVersions.api, (ctx) => {
      answered.push({ id: ctx.correlationId, at: performance.now() })
      if (ctx.correlationId === 1) ctx.throttle(400)
      return { errorCode: 0, apiKeys: [] }
    })
    const server = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1024 * 1024,
      handle: handlers.frameHandler(() => {})
    })
    try {
      const frame = (id: number) =>
        Either.getOrThrow(
          Api.encodeRequest(ApiVersions.api, 3, id, "t", { clientSoftwareName: "t", clientSoftwareVersion: "1" })
        )
      const start = performance.now()
      const muted = exchange(server.port, [frame(1), frame(2)], 2)
      // Another connection is not muted by the first one's throttle.
      const other = await exchange(server.port, [frame(3)], 1)
      expect(other.frames).toHaveLength(1)
      const otherAt = performance.now() - start
      const { frames } = await muted
      expect(frames.map((f) => f.readInt32BE(0))).toEqual([1, 2])
      const first = answered.find((a) => a.id === 1)!
      const second = answered.find((a) => a.id === 2)!
      expect(second.at - first.at).toBeGreaterThanOrEqual(390)
      expect(otherAt).toBeLessThan(second.at - start)
    } finally {
      await server.close()
    }
  })

  it("holds a connection the admit hook throttles unread and then closes it; others are served", async () => {
    const handlers = new Handlers()
    let served = 0
    handlers.register(ApiVersions.api, () => {
      served++
      return { errorCode: 0, apiKeys: [] }
    })
    const asked: string[] = []
    const server = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1024 * 1024,
      handle: handlers.frameHandler(() => {}),
      admit: (host) => {
        asked.push(host)
        return host === "127.0.0.2" ? 200 : 0
      }
    })
    const from = (localAddress: string) =>
      new Promise<{ frames: number; closed: boolean }>((resolve) => {
        const socket = net.connect({ port: server.port, host: "127.0.0.1", localAddress })
        let frames = 0
        socket.on("connect", () =>
          socket.write(
            Either.getOrThrow(
              Api.encodeRequest(ApiVersions.api, 3, 1, "t", { clientSoftwareName: "t", clientSoftwareVersion: "1" })
            )
          )
        )
        socket.on("data", () => {
          frames++
          socket.destroy()
          resolve({ frames, closed: false })
        })
        socket.on("close", () => resolve({ frames, closed: true }))
        socket.on("error", () => {})
      })
    try {
      expect(await from("127.0.0.2")).toEqual({ frames: 0, closed: true })
      expect(served).toBe(0)
      expect(await from("127.0.0.1")).toEqual({ frames: 1, closed: false })
      expect(served).toBe(1)
      expect(asked).toEqual(["127.0.0.2", "127.0.0.1"])
    } finally {
      await server.close()
    }
  })
})
