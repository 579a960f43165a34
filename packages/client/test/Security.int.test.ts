/**
 * Key and trust stores as Kafka's clients name them, made by `openssl` in a temporary directory (a CA,
 * a server certificate for 127.0.0.1 and localhost, a client certificate): PEM files, inline PEM, an
 * encrypted PEM key, PKCS12 key and trust stores (OpenSSL's and Java's keytool's). The options
 * `fromConfig` gives connect real TLS sockets to a real TLS server that requires client certificates.
 * Every refusal names the key and the path, and never a password.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as tls from "node:tls"
import * as Security from "../src/Security.js"

const PASSWORD = "st0re-pa55-never-shown"
const KEY_PASSWORD = "k3y-pa55-never-shown"

const openssl = (...args: ReadonlyArray<string>) => execFileSync("openssl", args, { stdio: ["ignore", "pipe", "pipe"] })

describe("Security.fromConfig with key and trust store files", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-security-"))
  const file = (name: string) => path.join(dir, name)
  let server: tls.Server
  let port = 0
  /** The subject CN of the client certificate the server saw on each connection. */
  const clients: Array<string> = []

  beforeAll(async () => {
    const days = ["-days", "2"]
    openssl(
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-subj",
      "/CN=test-ca",
      "-keyout",
      file("ca.key"),
      "-out",
      file("ca.pem"),
      ...days
    )
    const signed = (name: string, subject: string, ext: string) => {
      openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        subject,
        "-keyout",
        file(`${name}.key`),
        "-out",
        file(`${name}.csr`)
      )
      fs.writeFileSync(file(`${name}.ext`), ext)
      openssl(
        "x509",
        "-req",
        "-in",
        file(`${name}.csr`),
        "-CA",
        file("ca.pem"),
        "-CAkey",
        file("ca.key"),
        "-CAcreateserial",
        "-out",
        file(`${name}.pem`),
        "-extfile",
        file(`${name}.ext`),
        ...days
      )
    }
    signed("server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    signed("client", "/CN=mirror-client", "extendedKeyUsage=clientAuth\n")
    // Kafka's PEM key store file: the private key and the certificate chain in one file.
    fs.writeFileSync(
      file("client-keystore.pem"),
      fs.readFileSync(file("client.key"), "utf8") + fs.readFileSync(file("client.pem"), "utf8")
    )
    openssl(
      "pkcs8",
      "-topk8",
      "-in",
      file("client.key"),
      "-out",
      file("client-encrypted.key"),
      "-passout",
      `pass:${KEY_PASSWORD}`
    )
    openssl(
      "pkcs12",
      "-export",
      "-in",
      file("client.pem"),
      "-inkey",
      file("client.key"),
      "-out",
      file("client.p12"),
      "-passout",
      `pass:${PASSWORD}`
    )
    openssl(
      "pkcs12",
      "-export",
      "-nokeys",
      "-in",
      file("ca.pem"),
      "-out",
      file("truststore.p12"),
      "-passout",
      `pass:${PASSWORD}`
    )
    execFileSync(
      "keytool",
      [
        "-importcert",
        "-noprompt",
        "-alias",
        "ca",
        "-file",
        file("ca.pem"),
        "-keystore",
        file("truststore-keytool.p12"),
        "-storetype",
        "PKCS12",
        "-storepass",
        PASSWORD
      ],
      { stdio: "ignore" }
    )

    server = tls.createServer(
      {
        key: fs.readFileSync(file("server.key")),
        cert: fs.readFileSync(file("server.pem")),
        ca: fs.readFileSync(file("ca.pem")),
        requestCert: true,
        rejectUnauthorized: true
      },
      (socket) => {
        const cn = socket.getPeerCertificate().subject?.CN
        clients.push(typeof cn === "string" ? cn : "")
        socket.end("hello")
      }
    )
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    port = (server.address() as AddressInfo).port
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const ssl = (extra: Record<string, string>) => ({ "security.protocol": "SSL", ...extra })
  const parsed = (props: Record<string, string>) => Either.getOrThrow(Security.fromConfig(props))
  const refused = (props: Record<string, string>): [string, string] => {
    const r = Security.fromConfig(props)
    if (Either.isRight(r)) throw new Error("expected a refusal")
    expect(r.left.message).not.toContain(PASSWORD)
    expect(r.left.message).not.toContain(KEY_PASSWORD)
    return [r.left.key, r.left.reason]
  }
  /** Connects with the options as the client's connection will, reading the server's greeting. */
  const connect = (options: tls.ConnectionOptions, host = "127.0.0.1", servername?: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ ...options, host, port, ...(servername === undefined ? {} : { servername }) })
      let got = ""
      socket.on("data", (d: Buffer) => {
        got += d.toString()
      })
      socket.on("end", () => resolve(got))
      socket.on("error", reject)
    })

  const pemTrust = { "ssl.truststore.type": "PEM", "ssl.truststore.location": "" }
  const pemKeystore = { "ssl.keystore.type": "PEM", "ssl.keystore.location": "" }

  it("a PEM trust store and a PEM key store file: mTLS to a real TLS server", async () => {
    const s = parsed(
      ssl({
        ...pemTrust,
        "ssl.truststore.location": file("ca.pem"),
        ...pemKeystore,
        "ssl.keystore.location": file("client-keystore.pem")
      })
    )
    expect(s.tls?.ca).toEqual([fs.readFileSync(file("ca.pem"), "utf8").trim()])
    expect(await connect(s.tls!)).toBe("hello")
    expect(clients.at(-1)).toBe("mirror-client")
  })

  it("inline PEM (ssl.truststore.certificates, ssl.keystore.certificate.chain + ssl.keystore.key) with an encrypted key", async () => {
    const s = parsed(
      ssl({
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": fs.readFileSync(file("ca.pem"), "utf8"),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": fs.readFileSync(file("client.pem"), "utf8"),
        "ssl.keystore.key": fs.readFileSync(file("client-encrypted.key"), "utf8"),
        "ssl.key.password": KEY_PASSWORD
      })
    )
    expect(await connect(s.tls!)).toBe("hello")
    expect(clients.at(-1)).toBe("mirror-client")
    const wrongKeyPassword = ssl({
      "ssl.keystore.type": "PEM",
      "ssl.keystore.certificate.chain": fs.readFileSync(file("client.pem"), "utf8"),
      "ssl.keystore.key": fs.readFileSync(file("client-encrypted.key"), "utf8"),
      "ssl.key.password": "not-the-key-password"
    })
    expect(refused(wrongKeyPassword)[0]).toBe("ssl.keystore.key")
    // Inline material is all there is, so it is checked without reading files too (as a controller does).
    const validated = Security.validate(wrongKeyPassword)
    expect(Either.isLeft(validated) && validated.left.key).toBe("ssl.keystore.key")
  })

  it("PKCS12 key and trust stores (OpenSSL's and keytool's), and a wrong password refused without showing it", async () => {
    for (const truststore of ["truststore.p12", "truststore-keytool.p12"]) {
      const s = parsed(
        ssl({
          "ssl.truststore.type": "PKCS12",
          "ssl.truststore.location": file(truststore),
          "ssl.truststore.password": PASSWORD,
          "ssl.keystore.type": "pkcs12",
          "ssl.keystore.location": file("client.p12"),
          "ssl.keystore.password": PASSWORD
        })
      )
      expect(await connect(s.tls!)).toBe("hello")
      expect(clients.at(-1)).toBe("mirror-client")
    }
    expect(
      refused(
        ssl({
          "ssl.truststore.type": "PKCS12",
          "ssl.truststore.location": file("truststore.p12"),
          "ssl.truststore.password": "wrong"
        })
      )
    ).toEqual([
      "ssl.truststore.location",
      `the PKCS12 trust store ${file("truststore.p12")} cannot be read: the integrity check failed (wrong password?)`
    ])
    const [key, reason] = refused(
      ssl({
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": file("client.p12"),
        "ssl.keystore.password": "wrong"
      })
    )
    expect(key).toBe("ssl.keystore.location")
    expect(reason).toMatch(
      new RegExp(`^the TLS material ${file("client.p12")} cannot be used: .*\\(wrong password\\?\\)$`)
    )
  })

  it("checks the server's host name unless ssl.endpoint.identification.algorithm is empty", async () => {
    const trust = { "ssl.truststore.type": "PEM", "ssl.truststore.location": file("ca.pem") }
    const keys = { ...pemKeystore, "ssl.keystore.location": file("client-keystore.pem") }
    const checked = parsed(ssl({ ...trust, ...keys }))
    expect(await connect(checked.tls!, "localhost")).toBe("hello")
    await expect(connect(checked.tls!, "127.0.0.1", "mirror.other.example")).rejects.toMatchObject({
      code: "ERR_TLS_CERT_ALTNAME_INVALID"
    })
    const unchecked = parsed(ssl({ ...trust, ...keys, "ssl.endpoint.identification.algorithm": "" }))
    expect(await connect(unchecked.tls!, "127.0.0.1", "mirror.other.example")).toBe("hello")
    // Without the CA the server is not trusted (it sends the CA, which nothing here trusts), host name check or not.
    const untrusted = parsed(ssl({ ...keys, "ssl.endpoint.identification.algorithm": "" }))
    await expect(connect(untrusted.tls!)).rejects.toMatchObject({ code: "SELF_SIGNED_CERT_IN_CHAIN" })
  })

  it("names the key and the path of a file that is missing or holds the wrong thing", () => {
    expect(refused(ssl({ ...pemTrust, "ssl.truststore.location": file("missing.pem") }))).toEqual([
      "ssl.truststore.location",
      `cannot read ${file("missing.pem")} (ENOENT)`
    ])
    expect(refused(ssl({ ...pemTrust, "ssl.truststore.location": file("client.key") }))).toEqual([
      "ssl.truststore.location",
      `no PEM certificate (-----BEGIN CERTIFICATE-----) in ${file("client.key")}`
    ])
    expect(refused(ssl({ ...pemKeystore, "ssl.keystore.location": file("client.pem") }))).toEqual([
      "ssl.keystore.location",
      `expected exactly one PEM private key (-----BEGIN PRIVATE KEY-----) in ${file("client.pem")}, found 0`
    ])
    expect(
      refused(
        ssl({
          "ssl.truststore.type": "PKCS12",
          "ssl.truststore.location": file("ca.pem"),
          "ssl.truststore.password": PASSWORD
        })
      )[0]
    ).toBe("ssl.truststore.location")
  })
})
