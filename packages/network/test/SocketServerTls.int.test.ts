/**
 * TLS listeners with real sockets: the client package's connection completes the handshake against the
 * CA, mutual TLS gives the certificate's subject as the principal (through the mapping), a client
 * without a certificate, or with one from another CA, is refused on a listener that requires one, and
 * a plaintext client on the TLS port closes only its own connection.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import { ApiVersions } from "@clustermirror/protocol"
import { Certificates } from "@clustermirror/testkit"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Handlers } from "../src/RequestChannel.js"
import * as SocketServer from "../src/SocketServer.js"

describe("SocketServer over TLS", () => {
  let certs: Certificates.Certificates
  const seen: Array<{ listener: string; protocol: string; principal: string }> = []
  const logs: string[] = []
  const servers: SocketServer.SocketServer[] = []
  const handlers = new Handlers()
  handlers.register(ApiVersions.api, (ctx) => {
    seen.push({
      listener: ctx.connection.listenerName,
      protocol: ctx.connection.securityProtocol,
      principal: ctx.connection.principal
    })
    return { errorCode: 0, apiKeys: handlers.versions(), throttleTimeMs: 0 }
  })
  const start = async (
    clientAuth: "none" | "required" | "requested",
    principalOf: (s: string) => string | null = (s) => s
  ) => {
    const s = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1 << 20,
      handle: handlers.frameHandler(() => {}),
      listenerName: "SSL",
      securityProtocol: "SSL",
      log: (l) => logs.push(l),
      tls: {
        options: {
          key: fs.readFileSync(certs.server.keyFile),
          cert: fs.readFileSync(certs.server.certFile),
          ca: fs.readFileSync(certs.caFile),
          requestCert: clientAuth !== "none",
          rejectUnauthorized: clientAuth === "required"
        },
        principalOf
      }
    })
    servers.push(s)
    return s
  }
  const trust = () => ({ ca: fs.readFileSync(certs.caFile) })
  const withCert = (id: Certificates.Identity) => ({
    ...trust(),
    key: fs.readFileSync(id.keyFile),
    cert: fs.readFileSync(id.certFile)
  })
  const open = (port: number, tls: object) =>
    Connection.open({ host: "127.0.0.1", port, clientId: "tls-test", security: { tls } })

  beforeAll(() => {
    certs = Certificates.make(fs.mkdtempSync(path.join(os.tmpdir(), "tls-socket-")))
  })
  afterAll(async () => {
    for (const s of servers) await s.close()
    fs.rmSync(certs.dir, { recursive: true, force: true })
  })

  it("serves a TLS client that trusts the CA, as User:ANONYMOUS without a client certificate", async () => {
    const server = await start("none")
    const c = await open(server.port, trust())
    expect(c.apiVersions?.size).toBeGreaterThan(0)
    expect(server.connections()).toBe(1)
    await c.close()
    expect(seen.at(-1)).toEqual({ listener: "SSL", protocol: "SSL", principal: "User:ANONYMOUS" })
  })

  it("names an untrusted broker certificate, and one for another host, in the client's error", async () => {
    const server = await start("none")
    await expect(open(server.port, {})).rejects.toThrow(/not trusted by the truststore/)
    await expect(open(server.port, { ...trust(), servername: "other.example.com" })).rejects.toThrow(
      /certificate does not name this host/
    )
  })

  it("takes the principal from the client certificate's subject (RFC 2253) under mutual TLS", async () => {
    const server = await start("required")
    const c = await open(server.port, withCert(certs.client))
    await c.close()
    expect(seen.at(-1)?.principal).toBe("User:CN=client,OU=test")
    const mapped = await start("required", (s) => /^CN=([^,]+),/.exec(s)?.[1] ?? null)
    const d = await open(mapped.port, withCert(certs.client))
    await d.close()
    expect(seen.at(-1)?.principal).toBe("User:client")
  })

  it("refuses a client without a certificate, or with one from another CA, when client auth is required", async () => {
    const server = await start("required")
    await expect(open(server.port, trust())).rejects.toThrow()
    await expect(open(server.port, withCert(certs.untrustedClient))).rejects.toThrow()
    // The listener still serves a client with a good certificate.
    const c = await open(server.port, withCert(certs.client))
    await c.close()
  })

  it("with client auth requested, serves a client without a certificate and refuses an untrusted one", async () => {
    const server = await start("requested")
    const c = await open(server.port, trust())
    await c.close()
    expect(seen.at(-1)?.principal).toBe("User:ANONYMOUS")
    await expect(open(server.port, withCert(certs.untrustedClient))).rejects.toThrow()
    const d = await open(server.port, withCert(certs.client))
    await d.close()
    expect(seen.at(-1)?.principal).toBe("User:CN=client,OU=test")
  })

  it("closes a plaintext client's connection on the TLS port, logs it, and keeps serving", async () => {
    const server = await start("none")
    const closed = await new Promise<boolean>((resolve) => {
      const socket = net.connect(server.port, "127.0.0.1", () => {
        // An ApiVersions request in plaintext: not a TLS ClientHello.
        socket.write(Buffer.from("000000120012000300000001000474657374000000", "hex"))
      })
      socket.on("close", () => resolve(true))
      socket.on("error", () => {})
    })
    expect(closed).toBe(true)
    const plaintext = await Connection.open({ host: "127.0.0.1", port: server.port, connectTimeoutMs: 5000 }).then(
      () => "open",
      (e: Error) => e.message
    )
    expect(plaintext).not.toBe("open")
    const c = await open(server.port, trust())
    await c.close()
    expect(logs.some((l) => l.includes("TLS handshake failed"))).toBe(true)
  })
})
