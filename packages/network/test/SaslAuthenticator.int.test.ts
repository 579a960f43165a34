/**
 * SASL on a real socket: our server-side authenticator in front of a request handler, our client's
 * Connection (and hand-written frames) on the other end.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import type { ClientError as ClientErrors } from "@clustermirror/client"
import {
  Api,
  ApiVersions,
  DescribeCluster,
  Errors,
  Header,
  SaslAuthenticate,
  SaslHandshake,
  SaslPlain,
  Scram
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as net from "node:net"
import { Handlers } from "../src/RequestChannel.js"
import * as SaslAuthenticator from "../src/SaslAuthenticator.js"
import * as SocketServer from "../src/SocketServer.js"

const salt = Buffer.from("salt-of-alice")
const credentials = new Map<string, Scram.Credential>([
  ["alice:SCRAM-SHA-512", Scram.credentialFromPassword("SCRAM-SHA-512", "alice-secret", salt, 4096)],
  ["alice:SCRAM-SHA-256", Scram.credentialFromPassword("SCRAM-SHA-256", "alice-secret", salt, 4096)],
  ["bob:SCRAM-SHA-512", Scram.credentialFromPassword("SCRAM-SHA-512", "bob-secret", salt, 4096)]
])
const plainUsers = new Map([["admin", "admin-secret"]])

interface Server {
  readonly server: SocketServer.SocketServer
  readonly logs: string[]
  /** The authenticator's clock. */
  readonly clock: { now: number }
  handshakes: number
}

const startServer = async (
  maxReauthMs = 0,
  realClock = false,
  enabledMechanisms: ReadonlyArray<SaslAuthenticator.Mechanism> = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]
): Promise<Server> => {
  const logs: string[] = []
  const clock = { now: 1_000_000 }
  const handlers = new Handlers()
  handlers.register(ApiVersions.api, () => ({ errorCode: 0, apiKeys: handlers.versions() }))
  // Answers with the connection's principal, so tests see who the server thinks they are.
  handlers.register(DescribeCluster.api, (ctx) => ({
    errorCode: 0,
    errorMessage: null,
    clusterId: ctx.connection.principal,
    controllerId: -1,
    brokers: [],
    clusterAuthorizedOperations: 0
  }))
  // What a broker registers: the authenticator answers them on SASL listeners, these never run there.
  handlers.register(SaslHandshake.api, () => ({ errorCode: Errors.ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] }))
  handlers.register(SaslAuthenticate.api, () => ({
    errorCode: Errors.ErrorCode.ILLEGAL_SASL_STATE,
    errorMessage: null,
    authBytes: Buffer.alloc(0),
    sessionLifetimeMs: 0n
  }))
  const state = { handshakes: 0 }
  const authenticated = SaslAuthenticator.wrap(handlers.frameHandler(logs.push.bind(logs)), {
    enabledMechanisms,
    plainPassword: (u) => plainUsers.get(u),
    scramCredential: (u, m) => credentials.get(`${u}:${m}`),
    maxReauthMs,
    ...(realClock ? {} : { now: () => clock.now }),
    log: (l) => logs.push(l)
  })
  const server = await SocketServer.start({
    host: "127.0.0.1",
    port: 0,
    maxFrameBytes: 1 << 20,
    listenerName: "SASL_PLAINTEXT",
    securityProtocol: "SASL_PLAINTEXT",
    log: (l) => logs.push(l),
    handle: (frame, connection) => {
      const peek = Header.peekRequestHeader(frame)
      if (Either.isRight(peek) && peek.right.apiKey === SaslHandshake.api.key) state.handshakes++
      return authenticated(frame, connection)
    }
  })
  return Object.assign(state, { server, logs, clock })
}

const open = (s: Server, sasl?: { mechanism: "PLAIN" | Scram.Mechanism; username: string; password: string }) =>
  Connection.open({
    host: "127.0.0.1",
    port: s.server.port,
    connectTimeoutMs: 5000,
    requestTimeoutMs: 5000,
    ...(sasl === undefined ? {} : { security: { sasl } })
  })

const principalOf = async (c: Connection.Connection) =>
  (await c.call(DescribeCluster.api, { includeClusterAuthorizedOperations: false })).clusterId

const failure = async (p: Promise<unknown>): Promise<ClientErrors.ClientError> => {
  try {
    await p
  } catch (e) {
    return e as ClientErrors.ClientError
  }
  throw new Error("expected a failure")
}

describe("SaslAuthenticator", () => {
  let s: Server
  beforeAll(async () => {
    s = await startServer()
  })
  afterAll(() => s.server.close())

  for (const mechanism of ["SCRAM-SHA-512", "SCRAM-SHA-256"] as const)
    it(`authenticates ${mechanism} and the connection acts as User:alice`, async () => {
      const c = await open(s, { mechanism, username: "alice", password: "alice-secret" })
      try {
        expect(await principalOf(c)).toBe("User:alice")
      } finally {
        await c.close()
      }
    })

  it("authenticates PLAIN from the listener's users", async () => {
    const c = await open(s, { mechanism: "PLAIN", username: "admin", password: "admin-secret" })
    try {
      expect(await principalOf(c)).toBe("User:admin")
    } finally {
      await c.close()
    }
  })

  it("a wrong password or an unknown user gets SASL_AUTHENTICATION_FAILED, and no log line or error holds the password", async () => {
    for (const [mechanism, username] of [
      ["SCRAM-SHA-512", "alice"],
      ["SCRAM-SHA-512", "mallory"],
      ["PLAIN", "admin"]
    ] as const) {
      const e = await failure(open(s, { mechanism, username, password: "Wr0ng-Passw0rd" }))
      expect(e._tag).toBe("KafkaError")
      expect(e.message).toContain("SASL_AUTHENTICATION_FAILED")
      expect(e.message).not.toContain("Wr0ng-Passw0rd")
      if (mechanism !== "PLAIN")
        expect(e.message).toContain(
          "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        )
    }
    expect(s.logs.some((l) => l.includes("Failed authentication with"))).toBe(true)
    expect(s.logs.join("\n")).not.toContain("Wr0ng-Passw0rd")
  })

  it("a mechanism the listener does not enable gets UNSUPPORTED_SASL_MECHANISM with the enabled ones", async () => {
    const only = await startServer(0, false, ["SCRAM-SHA-512"])
    try {
      const e = await failure(open(only, { mechanism: "PLAIN", username: "admin", password: "admin-secret" }))
      expect(e.message).toBe(
        "SaslHandshake: UNSUPPORTED_SASL_MECHANISM (SASL mechanism PLAIN is not enabled (the broker enables SCRAM-SHA-512))"
      )
      const frame = Either.getOrThrow(Api.encodeRequest(SaslHandshake.api, 1, 7, "t", { mechanism: "GSSAPI" }))
      const [response] = await rawExchange(only.server.port, [frame], 1)
      const body = Either.getOrThrow(Api.decodeResponse(SaslHandshake.api, 1, response!)).body
      expect(body).toEqual({ errorCode: Errors.ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: ["SCRAM-SHA-512"] })
    } finally {
      await only.server.close()
    }
  })

  it("a request other than ApiVersions and SASL before authentication closes the connection", async () => {
    const c = await open(s)
    try {
      const e = await failure(principalOf(c))
      expect(e._tag).toBe("ConnectionError")
      expect(
        s.logs.some((l) => l.includes("Unexpected Kafka request of type DescribeCluster during SASL handshake"))
      ).toBe(true)
    } finally {
      await c.close()
    }
  })

  it("SaslHandshake v0 then raw PLAIN and SCRAM tokens authenticate an old client", async () => {
    const handshake = (mechanism: string) =>
      Either.getOrThrow(Api.encodeRequest(SaslHandshake.api, 0, 1, "old", { mechanism }))
    const sized = (token: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, token.length]), token])
    const plain = await rawExchange(
      s.server.port,
      [handshake("PLAIN"), sized(SaslPlain.encode("admin", "admin-secret"))],
      2
    )
    expect(plain).toHaveLength(2)
    expect(plain[1]!.length).toBe(0)

    const start = Scram.clientStart("SCRAM-SHA-256", "alice", "alice-secret")
    const socket = net.connect(s.server.port, "127.0.0.1")
    const frames = frameReader(socket)
    socket.write(handshake("SCRAM-SHA-256"))
    await frames.next()
    socket.write(sized(Buffer.from(start.message)))
    const serverFirst = (await frames.next()).toString()
    const final = Scram.clientFinal(start.state, serverFirst)
    if (Scram.isFailure(final)) throw new Error(final.message)
    socket.write(sized(Buffer.from(final.message)))
    expect(Scram.clientVerify(final.state, (await frames.next()).toString())).toBe(true)
    // Now a Kafka request is served, as User:alice.
    socket.write(
      Either.getOrThrow(
        Api.encodeRequest(DescribeCluster.api, 0, 9, "old", { includeClusterAuthorizedOperations: false })
      )
    )
    const described = Either.getOrThrow(Api.decodeResponse(DescribeCluster.api, 0, await frames.next())).body
    expect(described.clusterId).toBe("User:alice")
    socket.destroy()
  })
})

describe("SaslAuthenticator session lifetime (connections.max.reauth.ms)", () => {
  it("after the session expires, a request that is not a re-authentication closes the connection", async () => {
    const s = await startServer(60_000)
    try {
      const c = await open(s, { mechanism: "SCRAM-SHA-512", username: "alice", password: "alice-secret" })
      expect(await principalOf(c)).toBe("User:alice")
      s.clock.now += 60_000
      const e = await failure(principalOf(c))
      expect(e._tag).toBe("ConnectionError")
      expect(s.logs.some((l) => l.includes("its SASL session expired and it did not re-authenticate"))).toBe(true)
      await c.close()
    } finally {
      await s.server.close()
    }
  })

  it("our client re-authenticates before its session ends and keeps working", async () => {
    // A lifetime long enough that the re-authentication (at 85-95% of it) finishes in time on a busy machine.
    const s = await startServer(3000, true)
    try {
      const c = await open(s, { mechanism: "SCRAM-SHA-256", username: "alice", password: "alice-secret" })
      try {
        // Keep using the connection until the server has seen two re-authentications.
        while (s.handshakes < 3) {
          expect(await principalOf(c)).toBe("User:alice")
          await new Promise((r) => setTimeout(r, 50))
        }
        expect(await principalOf(c)).toBe("User:alice")
        expect(c.isOpen).toBe(true)
      } finally {
        await c.close()
      }
    } finally {
      await s.server.close()
    }
  })
})

describe("SaslAuthenticator re-authentication (KIP-368)", () => {
  it("re-authenticates the same principal on a live connection, and refuses a change of principal", async () => {
    const s = await startServer(60_000)
    const socket = net.connect(s.server.port, "127.0.0.1")
    const frames = frameReader(socket)
    let correlation = 1
    const scram = async (user: string, password: string) => {
      socket.write(
        Either.getOrThrow(Api.encodeRequest(SaslHandshake.api, 1, correlation++, "t", { mechanism: "SCRAM-SHA-512" }))
      )
      await frames.next()
      const round = async (token: string) => {
        socket.write(
          Either.getOrThrow(
            Api.encodeRequest(SaslAuthenticate.api, 2, correlation++, "t", { authBytes: Buffer.from(token) })
          )
        )
        return Either.getOrThrow(Api.decodeResponse(SaslAuthenticate.api, 2, await frames.next())).body
      }
      const start = Scram.clientStart("SCRAM-SHA-512", user, password)
      const first = await round(start.message)
      const final = Scram.clientFinal(start.state, Buffer.from(first.authBytes).toString())
      if (Scram.isFailure(final)) throw new Error(final.message)
      return round(final.message)
    }
    const describe = async () => {
      socket.write(
        Either.getOrThrow(
          Api.encodeRequest(DescribeCluster.api, 0, correlation++, "t", { includeClusterAuthorizedOperations: false })
        )
      )
      return Either.getOrThrow(Api.decodeResponse(DescribeCluster.api, 0, await frames.next())).body.clusterId
    }
    try {
      expect(await scram("alice", "alice-secret")).toMatchObject({ errorCode: 0, sessionLifetimeMs: 60_000n })
      expect(await describe()).toBe("User:alice")
      s.clock.now += 50_000
      expect(await scram("alice", "alice-secret")).toMatchObject({ errorCode: 0, sessionLifetimeMs: 60_000n })
      // The new session runs from the re-authentication: past the first session's end, still served.
      s.clock.now += 50_000
      expect(await describe()).toBe("User:alice")
      expect(await scram("bob", "bob-secret")).toMatchObject({
        errorCode: Errors.ErrorCode.SASL_AUTHENTICATION_FAILED,
        errorMessage: "Cannot change principals during re-authentication from User:alice: User:bob"
      })
    } finally {
      socket.destroy()
      await s.server.close()
    }
  })
})

/** Reads size-prefixed frames off a socket, one per `next()`. */
const frameReader = (socket: net.Socket) => {
  const decoder = new Header.FrameDecoder()
  const ready: Buffer[] = []
  const waiting: Array<(b: Buffer) => void> = []
  socket.on("data", (chunk) => {
    const r = decoder.push(chunk)
    if (Either.isLeft(r)) return
    for (const f of r.right) {
      const w = waiting.shift()
      if (w) w(f)
      else ready.push(f)
    }
  })
  return {
    next: () =>
      new Promise<Buffer>((resolve) => {
        const f = ready.shift()
        if (f) resolve(f)
        else waiting.push(resolve)
      })
  }
}

const rawExchange = (port: number, frames: ReadonlyArray<Buffer>, count: number): Promise<Buffer[]> =>
  new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1")
    const decoder = new Header.FrameDecoder()
    const out: Buffer[] = []
    const done = () => {
      socket.destroy()
      resolve(out)
    }
    socket.on("connect", () => {
      for (const f of frames) socket.write(f)
    })
    socket.on("data", (chunk) => {
      const r = decoder.push(chunk)
      if (Either.isRight(r)) out.push(...r.right)
      if (out.length >= count) done()
    })
    socket.on("close", done)
    socket.on("error", done)
  })
