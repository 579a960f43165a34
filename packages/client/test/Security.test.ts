/**
 * Kafka's client security configs as `ClientSecurity`, without files: protocols, SASL mechanisms, JAAS
 * (a property: any username and password survive quoting), and the refusals, each naming its key and
 * never a secret. Key and trust store files are in Security.int.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Security from "../src/Security.js"

const PLAIN = Security.PLAIN_LOGIN_MODULE
const SCRAM = Security.SCRAM_LOGIN_MODULE
const SECRET = "pa55-w0rd-never-shown"

const parsed = (props: Record<string, string>, readFiles = true) =>
  Either.getOrThrow(Security.fromConfig(props, { readFiles }))

const refused = (props: Record<string, string>, readFiles = false): [string, string] => {
  const r = Security.fromConfig(props, { readFiles })
  if (Either.isRight(r)) throw new Error("expected a refusal")
  expect(r.left).toBeInstanceOf(Security.SecurityConfigError)
  expect(r.left.message).toBe(`${r.left.key}: ${r.left.reason}`)
  return [r.left.key, r.left.reason]
}

describe("Security.fromConfig: protocols and SASL", () => {
  it("PLAINTEXT (or nothing) is a plain connection; the protocol is read in any case", () => {
    expect(parsed({})).toEqual({})
    expect(parsed({ "security.protocol": "plaintext" })).toEqual({})
    expect(Security.fromConfig(new Map([["security.protocol", " PLAINTEXT "]]))).toEqual(Either.right({}))
    expect(refused({ "security.protocol": "TLS" })).toEqual([
      "security.protocol",
      '"TLS" is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL'
    ])
    expect(Security.protocolOf({ "security.protocol": "sasl_ssl" })).toEqual(Either.right("SASL_SSL"))
  })

  it("SASL_PLAINTEXT with PLAIN and SCRAM: the credentials of the JAAS config", () => {
    expect(
      parsed({
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": `${PLAIN} required username="alice" password="${SECRET}";`
      })
    ).toEqual({ sasl: { mechanism: "PLAIN", username: "alice", password: SECRET } })
    for (const mechanism of ["SCRAM-SHA-256", "scram-sha-512"] as const)
      expect(
        parsed({
          "security.protocol": "sasl_plaintext",
          "sasl.mechanism": mechanism,
          "sasl.jaas.config": `${SCRAM} required\n  username="mirror"\n  password="${SECRET}";`
        })
      ).toEqual({ sasl: { mechanism: mechanism.toUpperCase(), username: "mirror", password: SECRET } })
  })

  it("SASL_SSL gives TLS and SASL; without sasl.mechanism it is PLAIN (KIP-1279's mirror default)", () => {
    const s = parsed({
      "security.protocol": "SASL_SSL",
      "sasl.jaas.config": `${PLAIN} required username=alice password=${SECRET};`
    })
    expect(s.sasl).toEqual({ mechanism: "PLAIN", username: "alice", password: SECRET })
    expect(s.tls).toMatchObject({ minVersion: "TLSv1.2", maxVersion: "TLSv1.3", rejectUnauthorized: true })
  })

  it("refuses GSSAPI, OAUTHBEARER and other mechanisms, naming the key", () => {
    const base = { "security.protocol": "SASL_SSL", "sasl.jaas.config": `${PLAIN} required username="a" password="b";` }
    expect(refused({ ...base, "sasl.mechanism": "GSSAPI" })).toEqual([
      "sasl.mechanism",
      "GSSAPI (Kerberos) is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
    ])
    expect(refused({ ...base, "sasl.mechanism": "OAUTHBEARER" })).toEqual([
      "sasl.mechanism",
      "OAUTHBEARER is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
    ])
    expect(refused({ ...base, "sasl.mechanism": "SCRAM-SHA-1" })[1]).toBe(
      '"SCRAM-SHA-1" is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512'
    )
  })

  it("refuses a JAAS config that does not serve the mechanism, never quoting it", () => {
    const sasl = (mechanism: string, jaas: string) => ({
      "security.protocol": "SASL_PLAINTEXT",
      "sasl.mechanism": mechanism,
      "sasl.jaas.config": jaas
    })
    const cases: ReadonlyArray<[Record<string, string>, string]> = [
      [
        sasl("SCRAM-SHA-256", `${PLAIN} required username="a" password="${SECRET}";`),
        `the login module ${PLAIN} does not serve sasl.mechanism SCRAM-SHA-256: use ${SCRAM}`
      ],
      [
        sasl("PLAIN", `ScramLoginModule required password="${SECRET}";`),
        `the login module ScramLoginModule does not serve sasl.mechanism PLAIN: use ${PLAIN}`
      ],
      [
        sasl("PLAIN", `com.sun.security.auth.module.Krb5LoginModule required password="${SECRET}";`),
        `the login module com.sun.security.auth.module.Krb5LoginModule does not serve sasl.mechanism PLAIN: use ${PLAIN}`
      ],
      [
        sasl("PLAIN", `${PLAIN} optional username="a" password="${SECRET}";`),
        "the control flag must be required, not optional"
      ],
      [
        sasl(
          "PLAIN",
          `${PLAIN} required username="a" password="${SECRET}"; ${PLAIN} required username="b" password="c";`
        ),
        "must hold exactly one login module, found 2"
      ],
      [
        sasl("SCRAM-SHA-512", `${SCRAM} required username="a" password="${SECRET}" tokenauth="true";`),
        `the option tokenauth of ${SCRAM} is not supported: username and password only`
      ],
      [sasl("PLAIN", `${PLAIN} required username="a";`), `${PLAIN} needs a password option`],
      [sasl("PLAIN", `${PLAIN} required password="${SECRET}";`), `${PLAIN} needs a username option`],
      [
        sasl("PLAIN", `${PLAIN} required username="a" password="${SECRET}"`),
        `the entry of login module ${PLAIN} does not end with ';'`
      ],
      [sasl("PLAIN", `${PLAIN} required username="a" password="${SECRET};`), "unterminated quoted value"],
      [
        sasl("PLAIN", `${PLAIN} required username="a" password ${SECRET};`),
        `expected '=' after the option password of login module ${PLAIN}`
      ],
      [
        sasl("PLAIN", `${PLAIN} required username="a" password="${SECRET}" password="x";`),
        `the option password is given twice in the entry of login module ${PLAIN}`
      ],
      [sasl("PLAIN", ""), "must hold exactly one login module, found 0"]
    ]
    for (const [props, reason] of cases) {
      expect(refused(props)).toEqual(["sasl.jaas.config", reason])
      expect(refused(props)[1]).not.toContain(SECRET)
    }
    expect(refused({ "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512" })).toEqual([
      "sasl.jaas.config",
      "must be set for SASL SCRAM-SHA-512"
    ])
  })

  it("refuses TLS keys without TLS, SASL keys without SASL, unknown and Java-only keys", () => {
    expect(refused({ "ssl.truststore.location": "/ca.pem" })).toEqual([
      "ssl.truststore.location",
      "is a TLS setting, and security.protocol PLAINTEXT does not use TLS (SSL or SASL_SSL do)"
    ])
    expect(refused({ "security.protocol": "SASL_PLAINTEXT", "ssl.endpoint.identification.algorithm": "" })[0]).toBe(
      "ssl.endpoint.identification.algorithm"
    )
    expect(refused({ "security.protocol": "SSL", "sasl.mechanism": "PLAIN" })).toEqual([
      "sasl.mechanism",
      "is a SASL setting, and security.protocol SSL does not use SASL (SASL_PLAINTEXT or SASL_SSL do)"
    ])
    expect(refused({ "security.protocol": "SSL", "ssl.trustore.location": "/ca.pem" })).toEqual([
      "ssl.trustore.location",
      "is not a known security config"
    ])
    expect(refused({ "security.protocol": "SASL_SSL", "sasl.login.refresh.window.factor": "0.8" })[1]).toBe(
      "is not a known security config"
    )
    expect(refused({ "security.protocol": "SSL", "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256" })).toEqual([
      "ssl.cipher.suites",
      "is not supported: cipher suites are not configurable: Node's TLS defaults apply"
    ])
    expect(refused({ "security.protocol": "SSL", "ssl.engine.factory.class": "x.Y" })[0]).toBe(
      "ssl.engine.factory.class"
    )
    expect(refused({ "security.providers": "x.Y" })[0]).toBe("security.providers")
    // Other keys are the caller's.
    expect(parsed({ "bootstrap.servers": "a:1", "client.id": "x" })).toEqual({})
  })
})

describe("Security.fromConfig: TLS settings that need no file", () => {
  const ssl = (extra: Record<string, string>) => ({ "security.protocol": "SSL", ...extra })

  it("host name verification: https (Kafka's default) checks it, empty does not", () => {
    expect(parsed(ssl({})).tls?.checkServerIdentity).toBeUndefined()
    expect(parsed(ssl({ "ssl.endpoint.identification.algorithm": "HTTPS" })).tls?.checkServerIdentity).toBeUndefined()
    const off = parsed(ssl({ "ssl.endpoint.identification.algorithm": "" })).tls
    expect(off?.checkServerIdentity?.("other.example", {} as never)).toBeUndefined()
    expect(off?.rejectUnauthorized).toBe(true)
    expect(refused(ssl({ "ssl.endpoint.identification.algorithm": "ldaps" }))).toEqual([
      "ssl.endpoint.identification.algorithm",
      '"ldaps" is not supported: https, or empty to skip the host name check'
    ])
  })

  it("ssl.enabled.protocols and ssl.protocol bound the TLS versions", () => {
    const versions = (extra: Record<string, string>) => {
      const t = parsed(ssl(extra)).tls!
      return [t.minVersion, t.maxVersion]
    }
    expect(versions({})).toEqual(["TLSv1.2", "TLSv1.3"])
    expect(versions({ "ssl.enabled.protocols": "TLSv1.3" })).toEqual(["TLSv1.3", "TLSv1.3"])
    expect(versions({ "ssl.enabled.protocols": "TLSv1.2" })).toEqual(["TLSv1.2", "TLSv1.2"])
    expect(versions({ "ssl.protocol": "TLSv1.2" })).toEqual(["TLSv1.2", "TLSv1.2"])
    expect(versions({ "ssl.protocol": "TLSv1.3", "ssl.enabled.protocols": "TLSv1.2, TLSv1.3" })).toEqual([
      "TLSv1.2",
      "TLSv1.3"
    ])
    expect(refused(ssl({ "ssl.enabled.protocols": "TLSv1.1,TLSv1.2" }))).toEqual([
      "ssl.enabled.protocols",
      '"TLSv1.1" is not supported: TLSv1.2 and TLSv1.3 only'
    ])
    expect(refused(ssl({ "ssl.protocol": "SSLv3" }))[0]).toBe("ssl.protocol")
  })

  it("refuses JKS (Kafka's default store type) and stores that are half configured", () => {
    expect(refused(ssl({ "ssl.truststore.location": "/ca.jks" }))).toEqual([
      "ssl.truststore.type",
      "is not set, so Kafka's default JKS applies, which is not supported: set ssl.truststore.type=PEM or PKCS12"
    ])
    expect(refused(ssl({ "ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks" }))).toEqual([
      "ssl.keystore.type",
      "JKS key stores are not supported: use PEM or PKCS12"
    ])
    expect(refused(ssl({ "ssl.keystore.location": "/k.jks", "ssl.keystore.password": SECRET }))[0]).toBe(
      "ssl.keystore.type"
    )
    expect(refused(ssl({ "ssl.truststore.type": "BCFKS", "ssl.truststore.location": "/x" }))[1]).toBe(
      '"BCFKS" is not supported: PEM or PKCS12'
    )
    expect(refused(ssl({ "ssl.truststore.password": SECRET }))).toEqual([
      "ssl.truststore.password",
      "is set without ssl.truststore.location"
    ])
    expect(refused(ssl({ "ssl.key.password": SECRET }))).toEqual([
      "ssl.key.password",
      "is set without a key store (ssl.keystore.location or ssl.keystore.key)"
    ])
    expect(refused(ssl({ "ssl.keystore.type": "PEM", "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----" }))).toEqual([
      "ssl.keystore.certificate.chain",
      "must be set with ssl.keystore.key"
    ])
    expect(
      refused(ssl({ "ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem", "ssl.keystore.password": SECRET }))
    ).toEqual(["ssl.keystore.password", "is not used with a PEM key store: use ssl.key.password"])
    expect(refused(ssl({ "ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12" }))).toEqual([
      "ssl.keystore.password",
      "must be set for a PKCS12 key store"
    ])
    expect(refused(ssl({ "ssl.truststore.type": "PEM", "ssl.truststore.certificates": "not a certificate" }))).toEqual([
      "ssl.truststore.certificates",
      "no PEM certificate (-----BEGIN CERTIFICATE-----) in the value"
    ])
  })

  it("without readFiles, files are named but not opened", () => {
    const props = ssl({
      "ssl.truststore.type": "PKCS12",
      "ssl.truststore.location": "/nowhere/ca.p12",
      "ssl.truststore.password": SECRET,
      "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "/nowhere/client.pem"
    })
    expect(Either.isRight(Security.validate(props))).toBe(true)
    const read = refused(props, true)
    expect(read).toEqual(["ssl.truststore.location", "cannot read /nowhere/ca.p12 (ENOENT)"])
  })
})

describe("Security: JAAS", () => {
  it("reads Kafka's syntax: quoted (either quote) or bare values, escapes, comments, any flag case", () => {
    const text = `/* the mirror */ ${SCRAM} REQUIRED // its user\n  username='mi"rror' password="a\\"b\\\\c\\n\\101" extra=bare-word_1.2$;`
    expect(Either.getOrThrow(Security.parseJaas(text))).toEqual([
      {
        loginModule: SCRAM,
        flag: "required",
        options: [
          ["username", 'mi"rror'],
          ["password", 'a"b\\c\nA'],
          ["extra", "bare-word_1.2$"]
        ]
      }
    ])
    expect(Either.getOrThrow(Security.parseJaas(`${PLAIN} required; ${SCRAM} sufficient a="1";`)).length).toBe(2)
    expect(Either.isLeft(Security.parseJaas(`${PLAIN} required /* open`))).toBe(true)
    expect(Either.isLeft(Security.parseJaas(`${PLAIN} mandatory;`))).toBe(true)
  })

  it("any username and password survive formatting and parsing, and parse as SASL credentials", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }), (username, password) => {
        const entry: Security.JaasEntry = {
          loginModule: SCRAM,
          flag: "required",
          options: [
            ["username", username],
            ["password", password]
          ]
        }
        const text = Security.formatJaas(entry)
        expect(Either.getOrThrow(Security.parseJaas(text))).toEqual([entry])
        const s = Either.getOrThrow(
          Security.fromConfig({
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": text
          })
        )
        expect(s.sasl).toEqual({ mechanism: "SCRAM-SHA-512", username, password })
      })
    )
  })

  it("a JAAS refusal never holds the text it refused", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 12 }), (secret) => {
        const jaas = `${PLAIN} required username="u" password=${Security.quoteJaas(secret)} extra`
        const r = Security.fromConfig(
          { "security.protocol": "SASL_SSL", "sasl.jaas.config": jaas },
          { readFiles: false }
        )
        expect(Either.isLeft(r) && r.left.message.includes(secret)).toBe(false)
      })
    )
  })
})

describe("Security.isSensitive", () => {
  it("marks Kafka's password configs, also behind listener and mechanism prefixes", () => {
    for (const key of [
      "sasl.jaas.config",
      "ssl.keystore.password",
      "ssl.key.password",
      "ssl.truststore.password",
      "ssl.keystore.key",
      "ssl.keystore.certificate.chain",
      "ssl.truststore.certificates",
      "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
      "listener.name.external.plain.sasl.jaas.config",
      "listener.name.internal.ssl.keystore.password",
      "listener.name.internal.ssl.key.password",
      "password.encoder.secret"
    ])
      expect([key, Security.isSensitive(key)]).toEqual([key, true])
    for (const key of ["security.protocol", "sasl.mechanism", "ssl.truststore.location", "bootstrap.servers"])
      expect([key, Security.isSensitive(key)]).toEqual([key, false])
  })
})
