/**
 * A TLS listener as a broker builds it from its properties: `ssl.*` settings give the server side (mutual
 * TLS, the principal through `ssl.principal.mapping.rules`) and, for the broker's own connections to
 * such a listener, the client side (its keystore as client certificate, its truststore, the host name
 * check). Real TLS sockets, certificates made with openssl.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import { ApiVersions } from "@clustermirror/protocol"
import { Certificates } from "@clustermirror/testkit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import { Handlers } from "@clustermirror/network/RequestChannel"
import * as SocketServer from "@clustermirror/network/SocketServer"
import * as Listeners from "@clustermirror/security/Listeners"

describe("a TLS listener from ssl.* settings", () => {
  let certs: Certificates.Certificates
  const servers: SocketServer.SocketServer[] = []
  const principals: string[] = []
  const handlers = new Handlers()
  handlers.register(ApiVersions.api, (ctx) => {
    principals.push(ctx.connection.principal)
    return { errorCode: 0, apiKeys: handlers.versions(), throttleTimeMs: 0 }
  })
  beforeAll(() => {
    certs = Certificates.make(fs.mkdtempSync(path.join(os.tmpdir(), "cm-listener-tls-")))
  })
  afterAll(async () => {
    for (const s of servers) await s.close()
    fs.rmSync(certs.dir, { recursive: true, force: true })
  })

  const serve = async (rules: string) => {
    const config = BrokerConfig.fromProperties(
      new Map([
        ["listeners", "SSL://127.0.0.1:0"],
        ["ssl.keystore.location", certs.server.pemKeystore],
        ["ssl.truststore.location", certs.caFile],
        ["listener.name.ssl.ssl.client.auth", "required"],
        ["ssl.principal.mapping.rules", rules]
      ])
    )
    const listener = config.listeners[0]!
    const server = await SocketServer.start({
      host: "127.0.0.1",
      port: 0,
      maxFrameBytes: 1 << 20,
      handle: handlers.frameHandler(() => {}),
      ...Listeners.socketOptions(config, listener)
    })
    servers.push(server)
    return { config, server }
  }

  it("maps a client certificate's subject with the rules, and refuses one no rule maps", async () => {
    const { config, server } = await serve("RULE:^CN=([^,]+),OU=test$/$1/U")
    const client = await Connection.open({
      host: "127.0.0.1",
      port: server.port,
      security: {
        tls: {
          ca: fs.readFileSync(certs.caFile),
          cert: fs.readFileSync(certs.client.certFile),
          key: fs.readFileSync(certs.client.keyFile)
        }
      }
    })
    await client.close()
    expect(principals.at(-1)).toBe("User:CLIENT")
    // The broker's own connection presents its keystore's certificate, CN=localhost, which this rule does not map.
    const own = Listeners.clientSecurity(config, "SSL", "SSL", "sasl.mechanism.inter.broker.protocol")
    await expect(Connection.open({ host: "127.0.0.1", port: server.port, security: own! })).rejects.toThrow()
  })

  it("connects as the broker does: its keystore for mutual TLS, its truststore, the host name checked", async () => {
    const { config, server } = await serve("RULE:^CN=([^,]+),OU=test$/$1/U,DEFAULT")
    const own = Listeners.clientSecurity(config, "SSL", "SSL", "sasl.mechanism.inter.broker.protocol")!
    const c = await Connection.open({ host: "127.0.0.1", port: server.port, security: own })
    await c.close()
    expect(principals.at(-1)).toBe("User:CN=localhost")
    // A host name the certificate does not carry: refused while ssl.endpoint.identification.algorithm=https.
    const elsewhere = { tls: { ...own.tls, servername: "other.example.com" } }
    await expect(Connection.open({ host: "127.0.0.1", port: server.port, security: elsewhere })).rejects.toThrow(
      /does not name this host/
    )
    expect(
      Listeners.clientSecurity(config, "PLAINTEXT", "PLAINTEXT", "sasl.mechanism.inter.broker.protocol")
    ).toBeUndefined()
  })
})
