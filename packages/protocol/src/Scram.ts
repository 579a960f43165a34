/**
 * SCRAM (RFC 5802, RFC 7677) as Kafka uses it for SCRAM-SHA-256 and SCRAM-SHA-512: the credential
 * derivation (salted password → stored key and server key, what the metadata log keeps), and both
 * sides of the exchange as pure state steps over the SASL tokens.
 *
 * It owns the message grammar and the proofs; it knows nothing of sockets, of where credentials are
 * stored, or of Kafka's request frames. No function here puts a password, a proof or a key in an error.
 */
import * as crypto from "node:crypto"

/** The SCRAM mechanisms, with the ids Kafka uses on the wire and in UserScramCredentialRecord. */
export type Mechanism = "SCRAM-SHA-256" | "SCRAM-SHA-512"

export const mechanisms: ReadonlyArray<Mechanism> = ["SCRAM-SHA-256", "SCRAM-SHA-512"]

/** Kafka's ScramMechanism type ids (0 is UNKNOWN). */
export const mechanismId = (m: Mechanism): number => (m === "SCRAM-SHA-256" ? 1 : 2)

export const mechanismById = (id: number): Mechanism | undefined =>
  id === 1 ? "SCRAM-SHA-256" : id === 2 ? "SCRAM-SHA-512" : undefined

export const isMechanism = (s: string): s is Mechanism => s === "SCRAM-SHA-256" || s === "SCRAM-SHA-512"

/** The iteration bounds Kafka enforces when credentials are set. */
export const MIN_ITERATIONS = 4096
export const MAX_ITERATIONS = 16384

const hashOf = (m: Mechanism): "sha256" | "sha512" => (m === "SCRAM-SHA-256" ? "sha256" : "sha512")
const hashLength = (m: Mechanism): number => (m === "SCRAM-SHA-256" ? 32 : 64)

const hmac = (m: Mechanism, key: Uint8Array, data: Uint8Array | string): Buffer =>
  crypto.createHmac(hashOf(m), key).update(data).digest()

const hash = (m: Mechanism, data: Uint8Array): Buffer => crypto.createHash(hashOf(m)).update(data).digest()

const xor = (a: Uint8Array, b: Uint8Array): Buffer => {
  const out = Buffer.alloc(a.length)
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!
  return out
}

/** Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC. */
export const saltedPassword = (m: Mechanism, password: string, salt: Uint8Array, iterations: number): Buffer =>
  crypto.pbkdf2Sync(Buffer.from(password, "utf8"), salt, iterations, hashLength(m), hashOf(m))

export const clientKey = (m: Mechanism, salted: Uint8Array): Buffer => hmac(m, salted, "Client Key")
export const serverKey = (m: Mechanism, salted: Uint8Array): Buffer => hmac(m, salted, "Server Key")
export const storedKey = (m: Mechanism, clientKeyBytes: Uint8Array): Buffer => hash(m, clientKeyBytes)

/** What a server keeps of a user's password for one mechanism. */
export interface Credential {
  readonly salt: Uint8Array
  readonly storedKey: Uint8Array
  readonly serverKey: Uint8Array
  readonly iterations: number
}

/** The stored credential derived from a salted password (what AlterUserScramCredentials sends). */
export const credentialFromSaltedPassword = (
  m: Mechanism,
  salt: Uint8Array,
  salted: Uint8Array,
  iterations: number
): Credential => ({
  salt,
  storedKey: storedKey(m, clientKey(m, salted)),
  serverKey: serverKey(m, salted),
  iterations
})

export const credentialFromPassword = (
  m: Mechanism,
  password: string,
  salt: Uint8Array,
  iterations: number
): Credential => credentialFromSaltedPassword(m, salt, saltedPassword(m, password, salt, iterations), iterations)

/** A random nonce of printable characters without ',' (base64 of 24 random bytes). */
export const nonce = (): string => crypto.randomBytes(24).toString("base64")

export const randomSalt = (): Buffer => crypto.randomBytes(32)

// ---------------------------------------------------------------------------------------------------
// Message grammar

/** RFC 5802 saslname: ',' and '=' are escaped as =2C and =3D. */
export const escapeName = (name: string): string => name.replace(/=/g, "=3D").replace(/,/g, "=2C")

const unescapeName = (s: string): string | undefined => {
  if (/=(?!2C|3D)/.test(s)) return undefined
  return s.replace(/=2C/g, ",").replace(/=3D/g, "=")
}

/** Why an exchange failed. `credentials` is a wrong password or unknown user; the rest are protocol errors. */
export interface Failure {
  readonly _tag: "Failure"
  readonly kind: "credentials" | "protocol"
  /** Safe to log and to send: never contains a secret. */
  readonly message: string
}

export const isFailure = (a: object): a is Failure => "_tag" in a && a._tag === "Failure"

const fail = (kind: Failure["kind"], message: string): Failure => ({ _tag: "Failure", kind, message })

const attributes = (s: string): Array<[string, string]> | undefined => {
  const out: Array<[string, string]> = []
  for (const part of s.split(",")) {
    if (part.length < 2 || part[1] !== "=") return undefined
    out.push([part[0]!, part.slice(2)])
  }
  return out
}

const printableNonce = (s: string): boolean => s.length > 0 && /^[\x21-\x2b\x2d-\x7e]+$/.test(s)

export interface ClientFirst {
  readonly gs2Header: string
  readonly authzid: string | null
  readonly username: string
  readonly nonce: string
  /** Kafka's SCRAM extensions (e.g. `tokenauth`), attributes after the nonce. */
  readonly extensions: ReadonlyMap<string, string>
  readonly bare: string
}

export const parseClientFirst = (message: string): ClientFirst | Failure => {
  // gs2-header = gs2-cbind-flag "," [ authzid ] ","
  const m = /^(n|y|p=[^,]*),(a=[^,]*)?,(.*)$/s.exec(message)
  if (m === null) return fail("protocol", "Invalid SCRAM client first message format")
  if (m[1]!.startsWith("p=")) return fail("protocol", "SCRAM channel binding is not supported")
  const bare = m[3]!
  const parts = bare.split(",")
  // Kafka's extensions (`tokenauth=true`) follow the nonce as `name=value` attributes.
  const attrs = attributes(parts.slice(0, 2).join(","))
  if (attrs === undefined || attrs.length < 2 || attrs[0]![0] !== "n" || attrs[1]![0] !== "r")
    return fail("protocol", "Invalid SCRAM client first message format")
  const extensions = new Map<string, string>()
  for (const ext of parts.slice(2)) {
    const e = /^([A-Za-z]+)=(.*)$/s.exec(ext)
    if (e === null) return fail("protocol", "Invalid SCRAM client first message format")
    extensions.set(e[1]!, e[2]!)
  }
  const username = unescapeName(attrs[0]![1])
  if (username === undefined || username.length === 0)
    return fail("protocol", "Invalid user name in SCRAM client first message")
  const clientNonce = attrs[1]![1]
  if (!printableNonce(clientNonce)) return fail("protocol", "Invalid nonce in SCRAM client first message")
  const authzid = m[2] === undefined ? null : (unescapeName(m[2].slice(2)) ?? null)
  return {
    gs2Header: `${m[1]},${m[2] ?? ""},`,
    authzid,
    username,
    nonce: clientNonce,
    extensions,
    bare
  }
}

export const clientFirstMessage = (username: string, clientNonce: string): string =>
  `n,,n=${escapeName(username)},r=${clientNonce}`

export interface ServerFirst {
  readonly nonce: string
  readonly salt: Buffer
  readonly iterations: number
  readonly message: string
}

export const parseServerFirst = (message: string): ServerFirst | Failure => {
  const attrs = attributes(message)
  if (attrs === undefined) return fail("protocol", "Invalid SCRAM server first message format")
  if (attrs[0]?.[0] === "e") return fail("credentials", `SCRAM server error: ${attrs[0][1]}`)
  const get = (k: string) => attrs.find(([a]) => a === k)?.[1]
  const r = get("r")
  const s = get("s")
  const i = Number(get("i"))
  if (r === undefined || s === undefined || !Number.isInteger(i) || i <= 0)
    return fail("protocol", "Invalid SCRAM server first message format")
  return { nonce: r, salt: Buffer.from(s, "base64"), iterations: i, message }
}

export interface ClientFinal {
  readonly channelBinding: string
  readonly nonce: string
  readonly proof: Buffer
  readonly withoutProof: string
}

export const parseClientFinal = (message: string): ClientFinal | Failure => {
  const at = message.lastIndexOf(",p=")
  if (at < 0) return fail("protocol", "Invalid SCRAM client final message format")
  const withoutProof = message.slice(0, at)
  const attrs = attributes(withoutProof)
  if (attrs === undefined || attrs.length < 2 || attrs[0]![0] !== "c" || attrs[1]![0] !== "r")
    return fail("protocol", "Invalid SCRAM client final message format")
  return {
    channelBinding: attrs[0]![1],
    nonce: attrs[1]![1],
    proof: Buffer.from(message.slice(at + 3), "base64"),
    withoutProof
  }
}

const authMessage = (clientFirstBare: string, serverFirst: string, clientFinalWithoutProof: string): string =>
  `${clientFirstBare},${serverFirst},${clientFinalWithoutProof}`

// ---------------------------------------------------------------------------------------------------
// Server side

/** A server exchange after the client's first message: what it sent, what it waits for. */
export interface ServerAwaitingFinal {
  readonly _tag: "ServerAwaitingFinal"
  readonly mechanism: Mechanism
  readonly username: string
  readonly first: ClientFirst
  readonly credential: Credential
  readonly serverFirst: string
}

/**
 * Answers the client's first message. `lookup` gives the user's credential, undefined for an unknown
 * user (a credentials failure, like a wrong password).
 */
export const serverFirst = (
  mechanism: Mechanism,
  clientFirst: string,
  lookup: (username: string) => Credential | undefined,
  serverNonce: string = nonce()
): { readonly state: ServerAwaitingFinal; readonly response: string } | Failure => {
  const first = parseClientFirst(clientFirst)
  if (isFailure(first)) return first
  if (first.authzid !== null && first.authzid !== "" && first.authzid !== first.username)
    return fail("protocol", "Authorization id does not match the user name")
  const credential = lookup(first.username)
  if (credential === undefined) return fail("credentials", "Authentication failed: Invalid user credentials")
  const response = `r=${first.nonce}${serverNonce},s=${Buffer.from(credential.salt).toString("base64")},i=${credential.iterations}`
  return {
    state: {
      _tag: "ServerAwaitingFinal",
      mechanism,
      username: first.username,
      first,
      credential,
      serverFirst: response
    },
    response
  }
}

/** Checks the client's proof and answers with the server signature. */
export const serverFinal = (
  state: ServerAwaitingFinal,
  clientFinal: string
): { readonly username: string; readonly response: string } | Failure => {
  const final = parseClientFinal(clientFinal)
  if (isFailure(final)) return final
  const expectedNonce = /^r=([^,]*)/.exec(state.serverFirst)![1]!
  // Kafka accepts a final nonce that ends with the server-first nonce, and librdkafka relies on it: it
  // sends the client nonce again in front of the whole nonce.
  if (!final.nonce.endsWith(expectedNonce)) return fail("protocol", "Invalid nonce in SCRAM client final message")
  if (final.channelBinding !== Buffer.from(state.first.gs2Header, "utf8").toString("base64"))
    return fail("protocol", "Invalid channel binding in SCRAM client final message")
  const m = state.mechanism
  const auth = authMessage(state.first.bare, state.serverFirst, final.withoutProof)
  const signature = hmac(m, state.credential.storedKey, auth)
  if (final.proof.length !== signature.length)
    return fail("credentials", "Authentication failed: Invalid client final message")
  const computedStored = hash(m, xor(final.proof, signature))
  if (!crypto.timingSafeEqual(computedStored, Buffer.from(state.credential.storedKey)))
    return fail("credentials", "Authentication failed: Invalid client final message")
  const serverSignature = hmac(m, state.credential.serverKey, auth)
  return { username: state.username, response: `v=${serverSignature.toString("base64")}` }
}

// ---------------------------------------------------------------------------------------------------
// Client side

export interface ClientAwaitingServerFirst {
  readonly mechanism: Mechanism
  readonly password: string
  readonly nonce: string
  readonly bare: string
}

export const clientStart = (
  mechanism: Mechanism,
  username: string,
  password: string,
  clientNonce: string = nonce()
): { readonly state: ClientAwaitingServerFirst; readonly message: string } => {
  const message = clientFirstMessage(username, clientNonce)
  return { state: { mechanism, password, nonce: clientNonce, bare: message.slice(3) }, message }
}

export interface ClientAwaitingServerFinal {
  readonly mechanism: Mechanism
  readonly expectedServerSignature: Buffer
}

/** Answers the server's first message with the proof. */
export const clientFinal = (
  state: ClientAwaitingServerFirst,
  serverFirstMessage: string
): { readonly state: ClientAwaitingServerFinal; readonly message: string } | Failure => {
  const first = parseServerFirst(serverFirstMessage)
  if (isFailure(first)) return first
  if (!first.nonce.startsWith(state.nonce) || first.nonce.length === state.nonce.length)
    return fail("protocol", "Invalid server nonce: it does not start with the client nonce")
  if (first.iterations < MIN_ITERATIONS)
    return fail("protocol", `Requested iterations ${first.iterations} is less than the minimum ${MIN_ITERATIONS}`)
  const m = state.mechanism
  const salted = saltedPassword(m, state.password, first.salt, first.iterations)
  const ck = clientKey(m, salted)
  const withoutProof = `c=biws,r=${first.nonce}`
  const auth = authMessage(state.bare, serverFirstMessage, withoutProof)
  const proof = xor(ck, hmac(m, storedKey(m, ck), auth))
  return {
    state: { mechanism: m, expectedServerSignature: hmac(m, serverKey(m, salted), auth) },
    message: `${withoutProof},p=${proof.toString("base64")}`
  }
}

/** Checks the server's signature (the server proves it knows the credential too). */
export const clientVerify = (state: ClientAwaitingServerFinal, serverFinalMessage: string): true | Failure => {
  const attrs = attributes(serverFinalMessage)
  if (attrs === undefined || attrs.length === 0) return fail("protocol", "Invalid SCRAM server final message format")
  if (attrs[0]![0] === "e") return fail("credentials", `SCRAM server error: ${attrs[0]![1]}`)
  if (attrs[0]![0] !== "v") return fail("protocol", "Invalid SCRAM server final message format")
  const signature = Buffer.from(attrs[0]![1], "base64")
  if (
    signature.length !== state.expectedServerSignature.length ||
    !crypto.timingSafeEqual(signature, state.expectedServerSignature)
  )
    return fail("protocol", "Invalid server signature in SCRAM server final message")
  return true
}
