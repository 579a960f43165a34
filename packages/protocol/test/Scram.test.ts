import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as crypto from "node:crypto"
import * as SaslPlain from "../src/SaslPlain.js"
import * as Scram from "../src/Scram.js"

// RFC 7677 §3: user "user", password "pencil".
const vector = {
  clientNonce: "rOprNGfwEbeRWgbNEkqO",
  serverNonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
  salt: Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64"),
  clientFirst: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
  serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
  clientFinal:
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
  serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
}

const ok = <A extends object>(a: A | Scram.Failure): A => {
  if ("_tag" in a && a._tag === "Failure") throw new Error(a.message)
  return a as A
}

/** Runs a full exchange; the server checks against `stored`, the client uses `password`. */
const exchange = (
  m: Scram.Mechanism,
  username: string,
  password: string,
  stored: Scram.Credential | undefined
): { readonly username: string } | Scram.Failure => {
  const client = Scram.clientStart(m, username, password)
  const first = Scram.serverFirst(m, client.message, (u) => (u === username ? stored : undefined))
  if ("_tag" in first) return first
  const final = Scram.clientFinal(client.state, first.response)
  if ("_tag" in final) return final
  const done = Scram.serverFinal(first.state, final.message)
  if ("_tag" in done) return done
  const verified = Scram.clientVerify(final.state, done.response)
  return verified === true ? { username: done.username } : verified
}

describe("Scram", () => {
  it("the client side produces RFC 7677's SCRAM-SHA-256 messages", () => {
    const client = Scram.clientStart("SCRAM-SHA-256", "user", "pencil", vector.clientNonce)
    expect(client.message).toBe(vector.clientFirst)
    const final = ok(Scram.clientFinal(client.state, vector.serverFirst))
    expect(final.message).toBe(vector.clientFinal)
    expect(Scram.clientVerify(final.state, vector.serverFinal)).toBe(true)
  })

  it("the server side produces RFC 7677's SCRAM-SHA-256 messages from the stored credential", () => {
    const credential = Scram.credentialFromPassword("SCRAM-SHA-256", "pencil", vector.salt, 4096)
    const first = ok(Scram.serverFirst("SCRAM-SHA-256", vector.clientFirst, () => credential, vector.serverNonce))
    expect(first.response).toBe(vector.serverFirst)
    const done = ok(Scram.serverFinal(first.state, vector.clientFinal))
    expect(done).toEqual({ username: "user", response: vector.serverFinal })
  })

  it("a wrong proof, an unknown user and a changed nonce fail without secrets in the message", () => {
    const credential = Scram.credentialFromPassword("SCRAM-SHA-256", "pencil", vector.salt, 4096)
    const first = ok(Scram.serverFirst("SCRAM-SHA-256", vector.clientFirst, () => credential, vector.serverNonce))
    const badClient = Scram.clientStart("SCRAM-SHA-256", "user", "wrong-pencil-42", vector.clientNonce)
    const badFinal = ok(Scram.clientFinal(badClient.state, vector.serverFirst))
    const failed = Scram.serverFinal(first.state, badFinal.message)
    expect(failed).toMatchObject({ _tag: "Failure", kind: "credentials" })
    expect(JSON.stringify(failed)).not.toContain("wrong-pencil-42")
    expect(Scram.serverFirst("SCRAM-SHA-256", vector.clientFirst, () => undefined)).toMatchObject({
      _tag: "Failure",
      kind: "credentials"
    })
    const otherNonce = vector.clientFinal.replace("k0,p=", "k1,p=")
    expect(Scram.serverFinal(first.state, otherNonce)).toMatchObject({ _tag: "Failure", kind: "protocol" })
  })

  it("accepts a final nonce that ends with the server-first nonce, as Kafka does (librdkafka repeats the client nonce)", () => {
    const credential = Scram.credentialFromPassword("SCRAM-SHA-256", "pencil", vector.salt, 4096)
    const first = ok(Scram.serverFirst("SCRAM-SHA-256", vector.clientFirst, () => credential, vector.serverNonce))
    const nonce = `${vector.clientNonce}${vector.clientNonce}${vector.serverNonce}`
    const withoutProof = `c=biws,r=${nonce}`
    const auth = `n=user,r=${vector.clientNonce},${vector.serverFirst},${withoutProof}`
    const salted = Scram.saltedPassword("SCRAM-SHA-256", "pencil", vector.salt, 4096)
    const ck = Scram.clientKey("SCRAM-SHA-256", salted)
    const signature = crypto.createHmac("sha256", Scram.storedKey("SCRAM-SHA-256", ck)).update(auth).digest()
    const proof = Buffer.from(ck.map((b, i) => b ^ signature[i]!))
    const done = ok(Scram.serverFinal(first.state, `${withoutProof},p=${proof.toString("base64")}`))
    expect(done.username).toBe("user")
    const other = `c=biws,r=${vector.clientNonce}other,p=${proof.toString("base64")}`
    expect(Scram.serverFinal(first.state, other)).toMatchObject({ _tag: "Failure", kind: "protocol" })
  })

  it("parses Kafka's extensions after the nonce and ignores them", () => {
    const first = ok(Scram.parseClientFirst("n,,n=alice,r=abc,tokenauth=true"))
    expect(first.username).toBe("alice")
    expect(first.nonce).toBe("abc")
    expect(first.extensions.get("tokenauth")).toBe("true")
  })

  it("refuses channel binding and malformed first messages", () => {
    expect(Scram.parseClientFirst("p=tls-unique,,n=a,r=b")).toMatchObject({ _tag: "Failure" })
    expect(Scram.parseClientFirst("n,,r=b")).toMatchObject({ _tag: "Failure" })
    expect(Scram.parseClientFirst("garbage")).toMatchObject({ _tag: "Failure" })
    expect(Scram.parseClientFirst("n,,n=a=2Cb=3Dc,r=x")).toMatchObject({ username: "a,b=c" })
    expect(Scram.parseClientFirst("n,,n=a=zz,r=x")).toMatchObject({ _tag: "Failure" })
  })

  it.prop(
    "an exchange succeeds exactly when the password matches, for both mechanisms",
    [
      fc.constantFrom<Scram.Mechanism>("SCRAM-SHA-256", "SCRAM-SHA-512"),
      fc.string({ minLength: 1, maxLength: 12 }),
      fc.string({ minLength: 1, maxLength: 12 }),
      fc.string({ minLength: 1, maxLength: 12 }),
      fc.uint8Array({ minLength: 8, maxLength: 32 })
    ],
    ([m, username, password, tried, salt]) => {
      const stored = Scram.credentialFromPassword(m, password, salt, Scram.MIN_ITERATIONS)
      const result = exchange(m, username, tried, stored)
      if (tried === password) expect(result).toEqual({ username })
      else expect(result).toMatchObject({ _tag: "Failure", kind: "credentials" })
    },
    { fastCheck: { numRuns: 25 } }
  )

  it.prop(
    "the server never throws on arbitrary client messages",
    [fc.string({ maxLength: 80 }), fc.string({ maxLength: 120 })],
    ([a, b]) => {
      const credential = Scram.credentialFromPassword("SCRAM-SHA-512", "x", Buffer.alloc(8), 4096)
      const first = Scram.serverFirst("SCRAM-SHA-512", a, () => credential)
      if (!("_tag" in first)) expect("_tag" in Scram.serverFinal(first.state, b)).toBe(true)
    },
    { fastCheck: { numRuns: 50 } }
  )
})

describe("SaslPlain", () => {
  it("round trips and refuses malformed messages", () => {
    expect(SaslPlain.decode(SaslPlain.encode("alice", "alice-secret"))).toEqual({
      authzid: "",
      username: "alice",
      password: "alice-secret"
    })
    expect(SaslPlain.decode(Buffer.from("alice\u0000secret"))).toMatchObject({ _tag: "Invalid" })
    expect(SaslPlain.decode(Buffer.from("\u0000\u0000secret"))).toMatchObject({ _tag: "Invalid" })
  })
})
