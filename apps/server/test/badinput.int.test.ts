/**
 * Malformed input on raw TCP connections: random bytes, truncated and oversized frames, unknown API keys,
 * unsupported versions and junk bodies. Each case checks the server's answer on that connection (a
 * close or an error response, as Kafka gives) and then that a fresh connection is still served.
 */
import { Api, ApiVersions, Errors } from "@clustermirror/protocol"
import { Either } from "effect"
import { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PEAK_RSS_LIMIT_MB, type ServerHandle, startServer } from "./harness.js"

const MAX_REQUEST_BYTES = 1_048_576
const WAIT_MS = 5_000

type Outcome =
  | { readonly kind: "frame"; readonly frame: Buffer }
  | { readonly kind: "closed" }
  | { readonly kind: "timeout" }

/** A raw connection that splits the byte stream into size-prefixed frames and notices the peer closing. */
class RawConnection {
  private buffered = Buffer.alloc(0)
  private closed = false
  private waiter: (() => void) | undefined

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk])
      this.waiter?.()
    })
    // A reset from the server is one way of closing the connection.
    socket.on("error", () => {})
    socket.on("close", () => {
      this.closed = true
      this.waiter?.()
    })
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = new Socket()
      socket.once("error", reject)
      socket.connect(port, "127.0.0.1", () => {
        socket.off("error", reject)
        resolve(new RawConnection(socket))
      })
    })
  }

  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve()
      // The server may close before taking everything; what it does then is what we check.
      this.socket.write(bytes, () => resolve())
    })
  }

  /** The next whole response frame (without its size prefix), or the connection closing, or nothing. */
  async next(timeoutMs = WAIT_MS): Promise<Outcome> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (this.buffered.length >= 4) {
        const size = this.buffered.readInt32BE(0)
        if (this.buffered.length >= 4 + size) {
          const frame = this.buffered.subarray(4, 4 + size)
          this.buffered = this.buffered.subarray(4 + size)
          return { kind: "frame", frame }
        }
      }
      if (this.closed) return { kind: "closed" }
      const left = deadline - Date.now()
      if (left <= 0) return { kind: "timeout" }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.waiter = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.waiter = undefined
    }
  }

  /** Half-closes our side and waits for the server to close its side. */
  async endAndWaitClosed(timeoutMs = WAIT_MS): Promise<boolean> {
    this.socket.end()
    const deadline = Date.now() + timeoutMs
    while (!this.closed && Date.now() < deadline) await this.next(deadline - Date.now())
    return this.closed
  }

  destroy(): void {
    this.socket.destroy()
  }
}

/** Deterministic pseudo-random bytes (xorshift32), so a failing case can be replayed. */
const pseudoRandomBytes = (n: number, seed: number): Buffer => {
  const out = Buffer.alloc(n)
  let x = seed >>> 0 || 1
  for (let i = 0; i < n; i++) {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    out[i] = x & 0xff
  }
  return out
}

const frame = (payload: Buffer): Buffer => {
  const size = Buffer.alloc(4)
  size.writeInt32BE(payload.length, 0)
  return Buffer.concat([size, payload])
}

/** A classic (v1) request header: ApiKey ApiVersion CorrelationId ClientId. */
const headerV1 = (apiKey: number, apiVersion: number, correlationId: number, clientId = "badinput"): Buffer => {
  const id = Buffer.from(clientId, "utf8")
  const b = Buffer.alloc(10 + id.length)
  b.writeInt16BE(apiKey, 0)
  b.writeInt16BE(apiVersion, 2)
  b.writeInt32BE(correlationId, 4)
  b.writeInt16BE(id.length, 8)
  id.copy(b, 10)
  return b
}

/** A compact (flexible) string: unsigned varint length+1, then the bytes; all lengths here fit one byte. */
const compactString = (s: string): Buffer => {
  const bytes = Buffer.from(s, "utf8")
  return Buffer.concat([Buffer.from([bytes.length + 1]), bytes])
}

/** ApiVersions at a version no broker speaks, written as a client newer than the broker would send it. */
const apiVersionsV99 = (correlationId: number): Buffer =>
  frame(
    Buffer.concat([
      headerV1(ApiVersions.api.key, 99, correlationId),
      Buffer.from([0]),
      compactString("badinput"),
      compactString("1.0"),
      Buffer.from([0])
    ])
  )

const correlationIdOf = (f: Buffer): number => f.readInt32BE(0)

/** A well-formed ApiVersions request on a fresh connection gets a correct answer. */
const expectHealthyApiVersions = async (server: ServerHandle): Promise<void> => {
  expect(server.isAlive()).toBe(true)
  const conn = await RawConnection.open(server.port)
  try {
    for (const version of [0, 3]) {
      const correlationId = 1000 + version
      const request = Either.getOrThrow(
        Api.encodeRequest(ApiVersions.api, version, correlationId, "health", {
          clientSoftwareName: "clustermirror-int",
          clientSoftwareVersion: "1.0"
        })
      )
      await conn.write(request)
      const out = await conn.next()
      expect(out.kind).toBe("frame")
      if (out.kind !== "frame") return
      const decoded = Either.getOrThrow(Api.decodeResponse(ApiVersions.api, version, out.frame))
      expect(decoded.correlationId).toBe(correlationId)
      expect(decoded.body.errorCode).toBe(0)
      const own = decoded.body.apiKeys.find((k) => k.apiKey === ApiVersions.api.key)
      expect(own).toBeDefined()
      expect(own!.minVersion).toBe(0)
      expect(own!.maxVersion).toBeGreaterThanOrEqual(3)
      // Every client needs Metadata to get anywhere.
      expect(decoded.body.apiKeys.some((k) => k.apiKey === 3)).toBe(true)
    }
  } finally {
    conn.destroy()
  }
}

/** The connection was closed by the server, or it answered with the request's correlation id. */
const expectClosedOrAnswered = (out: Outcome, correlationId: number): void => {
  expect(out.kind).not.toBe("timeout")
  if (out.kind === "frame") expect(correlationIdOf(out.frame)).toBe(correlationId)
}

describe("bad input on raw connections", () => {
  let server: ServerHandle

  beforeAll(async () => {
    server = await startServer({ config: { "socket.request.max.bytes": MAX_REQUEST_BYTES } })
  })

  afterAll(async () => {
    await server?.stop()
  })

  it("serves a healthy connection to begin with", async () => {
    await expectHealthyApiVersions(server)
  })

  it("survives random bytes", async () => {
    for (const seed of [1, 7, 42, 2024, 65537]) {
      const conn = await RawConnection.open(server.port)
      try {
        await conn.write(pseudoRandomBytes(4096, seed))
        // Whatever the bytes claim, the server must not crash; a close, an answer or waiting are all legal.
        await conn.next(500)
      } finally {
        conn.destroy()
      }
    }
    await expectHealthyApiVersions(server)
  })

  it("survives a truncated frame followed by a close", async () => {
    const conn = await RawConnection.open(server.port)
    const whole = Either.getOrThrow(Api.encodeRequest(ApiVersions.api, 3, 1, "truncated", {}))
    await conn.write(whole.subarray(0, whole.length - 3))
    expect(await conn.endAndWaitClosed()).toBe(true)
    conn.destroy()
    await expectHealthyApiVersions(server)
  })

  it("closes a connection whose size prefix exceeds socket.request.max.bytes", async () => {
    for (const size of [MAX_REQUEST_BYTES + 1, 0x7fffffff, -1]) {
      const conn = await RawConnection.open(server.port)
      try {
        const prefix = Buffer.alloc(4)
        prefix.writeInt32BE(size, 0)
        await conn.write(Buffer.concat([prefix, headerV1(ApiVersions.api.key, 0, 5)]))
        expect((await conn.next()).kind).toBe("closed")
      } finally {
        conn.destroy()
      }
    }
    await expectHealthyApiVersions(server)
  })

  it("closes the connection (or answers with an error) for an unknown API key", async () => {
    for (const apiKey of [9999, -5]) {
      const conn = await RawConnection.open(server.port)
      try {
        await conn.write(frame(headerV1(apiKey, 0, 77)))
        expectClosedOrAnswered(await conn.next(), 77)
      } finally {
        conn.destroy()
      }
    }
    await expectHealthyApiVersions(server)
  })

  it("answers ApiVersions v99 with a v0 response: UNSUPPORTED_VERSION and the API list", async () => {
    const conn = await RawConnection.open(server.port)
    try {
      await conn.write(apiVersionsV99(4242))
      const out = await conn.next()
      expect(out.kind).toBe("frame")
      if (out.kind !== "frame") return
      const decoded = Either.getOrThrow(Api.decodeResponse(ApiVersions.api, 0, out.frame))
      expect(decoded.correlationId).toBe(4242)
      expect(decoded.body.errorCode).toBe(Errors.ErrorCode.UNSUPPORTED_VERSION)
      const own = decoded.body.apiKeys.find((k) => k.apiKey === ApiVersions.api.key)
      expect(own).toBeDefined()
      expect(own!.maxVersion).toBeGreaterThanOrEqual(3)
      expect(own!.maxVersion).toBeLessThan(99)
    } finally {
      conn.destroy()
    }
    await expectHealthyApiVersions(server)
  })

  it("closes the connection (or answers with an error) for Metadata at an unsupported version", async () => {
    const conn = await RawConnection.open(server.port)
    try {
      await conn.write(frame(Buffer.concat([headerV1(3, 99, 88), Buffer.from([0, 0])])))
      expectClosedOrAnswered(await conn.next(), 88)
    } finally {
      conn.destroy()
    }
    await expectHealthyApiVersions(server)
  })

  it("closes the connection (or answers with an error) for a junk body behind a valid header", async () => {
    // Metadata v1 (classic encoding), v9 (flexible) and Produce v3; the 0x7f lead bytes read as huge
    // lengths or counts, so no body parses.
    const cases: ReadonlyArray<readonly [apiKey: number, version: number]> = [
      [3, 1],
      [3, 9],
      [0, 3]
    ]
    let correlationId = 500
    for (const [apiKey, version] of cases) {
      for (const seed of [3, 11]) {
        correlationId++
        const conn = await RawConnection.open(server.port)
        try {
          const junk = Buffer.alloc(64, 0x7f)
          pseudoRandomBytes(60, seed).copy(junk, 4)
          await conn.write(frame(Buffer.concat([headerV1(apiKey, version, correlationId), junk])))
          expectClosedOrAnswered(await conn.next(), correlationId)
        } finally {
          conn.destroy()
        }
      }
    }
    await expectHealthyApiVersions(server)
  })

  it("still serves real clients after all of the above", async () => {
    expect(server.isAlive()).toBe(true)
    const { stdout } = await server.kcat(["-L"])
    expect(stdout).toContain("1 brokers:")
    expect(stdout).toContain(`:${server.port}`)

    const admin = server.kafka().admin()
    await admin.connect()
    try {
      const cluster = await admin.describeCluster()
      expect(cluster.brokers.length).toBe(1)
      expect(cluster.brokers[0]!.port).toBe(server.port)
    } finally {
      await admin.disconnect()
    }
  })

  it(`keeps the server's peak RSS under ${PEAK_RSS_LIMIT_MB} MB`, () => {
    const peak = server.peakRssMb()
    console.log(`server peak RSS (bad-input suite): ${peak.toFixed(1)} MB`)
    expect(peak).toBeGreaterThan(0)
    expect(peak).toBeLessThan(PEAK_RSS_LIMIT_MB)
  })
})
