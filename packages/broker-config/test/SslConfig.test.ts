/**
 * TLS settings from Kafka's `ssl.*` configs: per-listener overrides, protocol versions, client auth, the
 * refusals (JKS, Java-only keys), and the key material loaded from real PEM and PKCS12 files made with
 * openssl. Password-type values never appear in an error.
 */
import { Certificates } from "@clustermirror/testkit"
import { execFileSync } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as tls from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as BrokerConfig from "../src/BrokerConfig.js"
import { ConfigurationControl } from "@clustermirror/controller"
import * as SslConfig from "../src/SslConfig.js"

const settings = (entries: Record<string, string>, listener = "SSL") =>
  SslConfig.settingsFor(new Map(Object.entries(entries)), listener)
const parse = (entries: Record<string, string>) => () => BrokerConfig.fromProperties(new Map(Object.entries(entries)))

describe("SslConfig settings", () => {
  it("has Kafka's defaults: TLSv1.2 and TLSv1.3, no client auth, host name verification, DEFAULT mapping", () => {
    const s = settings({})
    expect([s.minVersion, s.maxVersion, s.clientAuth, s.verifyHostname]).toEqual(["TLSv1.2", "TLSv1.3", "none", true])
    expect(s.principalMappingRules).toEqual([{ _tag: "Default" }])
  })

  it("lets listener.name.<listener>.ssl.* override the broker-wide ssl.* key by key", () => {
    const entries = {
      "ssl.client.auth": "none",
      "ssl.keystore.location": "/broker.pem",
      "listener.name.internal.ssl.client.auth": "required"
    }
    const internal = settings(entries, "INTERNAL")
    const external = settings(entries, "EXTERNAL")
    expect([internal.clientAuth, internal.keystoreLocation]).toEqual(["required", "/broker.pem"])
    expect(external.clientAuth).toBe("none")
  })

  it("maps ssl.enabled.protocols and ssl.protocol to TLS versions, refusing what Node should not speak", () => {
    expect(settings({ "ssl.enabled.protocols": "TLSv1.3" })).toMatchObject({
      minVersion: "TLSv1.3",
      maxVersion: "TLSv1.3"
    })
    expect(settings({ "ssl.protocol": "TLSv1.2" })).toMatchObject({ minVersion: "TLSv1.2", maxVersion: "TLSv1.2" })
    expect(() => settings({ "ssl.enabled.protocols": "TLSv1.1,TLSv1.2" })).toThrow("TLSv1.1 is not supported")
    expect(() => settings({ "ssl.protocol": "SSLv3" })).toThrow("ssl.protocol=SSLv3")
    expect(() => settings({ "ssl.protocol": "TLSv1.2", "ssl.enabled.protocols": "TLSv1.3" })).toThrow("allows none")
  })

  it("checks ssl.client.auth, ssl.endpoint.identification.algorithm and the store types", () => {
    expect(() => settings({ "ssl.client.auth": "always" })).toThrow("expected none, requested or required")
    expect(settings({ "ssl.endpoint.identification.algorithm": "" }).verifyHostname).toBe(false)
    expect(() => settings({ "ssl.endpoint.identification.algorithm": "ldap" })).toThrow("expected https or empty")
    expect(() => settings({ "ssl.keystore.type": "JKS" })).toThrow("JKS keystores are not supported: use PEM or PKCS12")
    expect(() => settings({ "listener.name.ssl.ssl.truststore.type": "jks" })).toThrow(
      "listener.name.ssl.ssl.truststore.type=jks: JKS keystores are not supported"
    )
  })

  it("refuses keys it cannot apply, naming them, and never shows a password in an error", () => {
    expect(parse({ "ssl.keymanager.algorithm": "SunX509" })).toThrow(
      'broker config "ssl.keymanager.algorithm" is not supported: it configures Java\'s TLS implementation'
    )
    expect(parse({ "listener.name.ssl.ssl.no.such": "x" })).toThrow('"listener.name.ssl.ssl.no.such" is not supported')
    const secret = "hunter2-very-secret"
    for (const key of ["ssl.keystore.key", "ssl.keystore.password", "ssl.truststore.certificates"]) {
      let message = ""
      try {
        settings({ [key]: secret, "ssl.keystore.location": "/x.pem", "ssl.truststore.location": "/t.pem" })
        BrokerConfig.fromProperties(
          new Map([
            ["listeners", "SSL://127.0.0.1:1"],
            ["ssl.keystore.location", "/missing.pem"],
            [key, secret]
          ])
        )
      } catch (e) {
        message = (e as Error).message
      }
      expect(message).not.toContain(secret)
    }
    // What DescribeConfigs hides: the broker resource's sensitivity, which listener-prefixed keys share.
    const sensitive = (key: string) => ConfigurationControl.isSensitive(ConfigurationControl.ResourceType.BROKER, key)
    expect(sensitive("listener.name.ssl.ssl.key.password")).toBe(true)
    expect(sensitive("ssl.keystore.location")).toBe(false)
  })
})

describe("SslConfig key material", () => {
  let certs: Certificates.Certificates
  // RSA key generation with openssl takes seconds on a loaded machine.
  beforeAll(() => {
    certs = Certificates.make(fs.mkdtempSync(path.join(os.tmpdir(), "ssl-config-")))
  }, 120_000)
  afterAll(() => fs.rmSync(certs.dir, { recursive: true, force: true }))

  it("loads a PEM keystore file (key and chain) and a PEM truststore", () => {
    const o = SslConfig.serverOptions(
      settings({
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": certs.server.pemKeystore,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": certs.caFile,
        "ssl.client.auth": "required"
      })
    )
    expect([o.requestCert, o.rejectUnauthorized]).toEqual([true, true])
    expect(() => tls.createSecureContext(o)).not.toThrow()
  })

  it("applies ssl.cipher.suites as Node's cipher list, and fails on one Node cannot apply", () => {
    const base = { "ssl.keystore.location": certs.server.pemKeystore }
    expect(
      SslConfig.serverOptions(settings({ ...base, "ssl.cipher.suites": "ECDHE-RSA-AES128-GCM-SHA256" })).ciphers
    ).toBe("ECDHE-RSA-AES128-GCM-SHA256")
    expect(() => SslConfig.serverOptions(settings({ ...base, "ssl.cipher.suites": "NO-SUCH-CIPHER" }))).toThrow(
      "listener SSL: TLS settings do not load"
    )
  })

  it("loads inline PEM (ssl.keystore.certificate.chain, ssl.keystore.key, ssl.truststore.certificates)", () => {
    const o = SslConfig.serverOptions(
      settings({
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": fs.readFileSync(certs.server.certFile, "utf8"),
        "ssl.keystore.key": fs.readFileSync(certs.server.keyFile, "utf8"),
        "ssl.truststore.certificates": fs.readFileSync(certs.caFile, "utf8")
      })
    )
    expect(o.cert).toContain("BEGIN CERTIFICATE")
  })

  it("loads a PKCS12 keystore with its password; a wrong password or a missing file fails, without the secret", () => {
    const o = SslConfig.clientOptions(
      settings({
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": certs.client.pkcs12Keystore,
        "ssl.keystore.password": certs.client.password,
        "ssl.truststore.location": certs.caFile
      })
    )
    expect(o.pfx).toBeDefined()
    const wrong = "not-the-password-42"
    const fail = () =>
      SslConfig.serverOptions(
        settings({ "ssl.keystore.location": certs.client.pkcs12Keystore, "ssl.keystore.password": wrong })
      )
    expect(fail).toThrow("listener SSL: TLS settings do not load: wrong password or corrupt file")
    try {
      fail()
    } catch (e) {
      expect((e as Error).message).not.toContain(wrong)
    }
    const missing = path.join(certs.dir, "nope.p12")
    expect(() => SslConfig.serverOptions(settings({ "ssl.keystore.location": missing }))).toThrow(
      `listener SSL: cannot read keystore ${missing} (ENOENT)`
    )
    expect(() => SslConfig.serverOptions(settings({}))).toThrow("listener SSL is SSL but has no keystore")
  })

  it("reads PKCS12 truststores as OpenSSL (AES and legacy 3DES) and Java's keytool write them", () => {
    const store = (name: string, args: ReadonlyArray<string>) => {
      const file = path.join(certs.dir, name)
      execFileSync("openssl", [
        "pkcs12",
        "-export",
        "-nokeys",
        "-in",
        certs.caFile,
        "-out",
        file,
        "-passout",
        "pass:trust-pw",
        ...args
      ])
      return file
    }
    const files = [
      store("trust-aes.p12", []),
      store("trust-3des.p12", ["-certpbe", "PBE-SHA1-3DES", "-macalg", "sha1"])
    ]
    const keytool = path.join(certs.dir, "trust-keytool.p12")
    execFileSync(
      "keytool",
      [
        "-importcert",
        "-noprompt",
        "-alias",
        "ca",
        "-file",
        certs.caFile,
        "-storetype",
        "PKCS12",
        "-keystore",
        keytool,
        "-storepass",
        "trust-pw"
      ],
      { stdio: "ignore" }
    )
    files.push(keytool)
    const ca = new crypto.X509Certificate(fs.readFileSync(certs.caFile)).toString()
    for (const file of files) {
      const o = SslConfig.clientOptions(
        settings({
          "ssl.truststore.type": "PKCS12",
          "ssl.truststore.location": file,
          "ssl.truststore.password": "trust-pw"
        })
      )
      expect(o.ca).toEqual([ca])
    }
    const wrong = () =>
      SslConfig.clientOptions(
        settings({ "ssl.truststore.location": files[0]!, "ssl.truststore.password": "guessed-pw-123" })
      )
    expect(wrong).toThrow(`PKCS12 truststore ${files[0]} does not load: the integrity check failed (wrong password?)`)
    try {
      wrong()
    } catch (e) {
      expect((e as Error).message).not.toContain("guessed-pw-123")
    }
  }, 120_000)
})
