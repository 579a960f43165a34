/**
 * SASL authentication on a SASL_PLAINTEXT or SASL_SSL listener: a wrapper around the listener's
 * `FrameHandler`, with one authentication state per connection, as Kafka's SaslServerAuthenticator.
 *
 * Before authentication only ApiVersions (passed to the wrapped handler), SaslHandshake and
 * SaslAuthenticate are served; any other request closes the connection. SaslHandshake v1 is followed by
 * SaslAuthenticate requests carrying the mechanism's tokens; SaslHandshake v0 by raw size-prefixed
 * tokens (what clients older than Kafka 1.0 send). Mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512
 * (RFC 5802/7677). On success the connection's principal becomes `User:<name>`.
 *
 * With `connections.max.reauth.ms` (KIP-368) a client that authenticated with SaslAuthenticate v1+ is
 * told its session lifetime; once it has passed, any request other than a re-authentication (a new
 * SaslHandshake, then SaslAuthenticate, for the same principal) closes the connection.
 *
 * No password, token or key reaches a log line or an error message.
 */
import { Api, Apis, Errors, Header, SaslAuthenticate, SaslHandshake, SaslPlain, Scram } from "@clustermirror/protocol"
import { Either } from "effect"
import * as crypto from "node:crypto"
import type { Connection, FrameHandler, FrameResult } from "./SocketServer.js"

/** The SASL mechanisms a listener can enable. */
export type Mechanism = "PLAIN" | Scram.Mechanism

export const supportedMechanisms: ReadonlyArray<Mechanism> = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

export const isSupportedMechanism = (s: string): s is Mechanism =>
  (supportedMechanisms as ReadonlyArray<string>).includes(s)

export interface Options {
  /** `sasl.enabled.mechanisms` of the listener, in the order the handshake lists them. */
  readonly enabledMechanisms: ReadonlyArray<Mechanism>
  /** PLAIN: the user's password (the listener's `user_<name>` JAAS options), undefined for an unknown user. */
  readonly plainPassword: (username: string) => string | undefined
  /** SCRAM: the user's stored credential (from the metadata image), undefined for an unknown user. */
  readonly scramCredential: (username: string, mechanism: Scram.Mechanism) => Scram.Credential | undefined
  /** `connections.max.reauth.ms`; 0 (Kafka's default) disables session expiry. */
  readonly maxReauthMs?: number
  /** Wall clock in ms (tests pass their own). */
  readonly now?: () => number
  readonly log?: (line: string) => void
}

type Step =
  | { readonly _tag: "Challenge"; readonly token: Buffer; readonly next: Exchange }
  | { readonly _tag: "Done"; readonly token: Buffer; readonly username: string }
  | { readonly _tag: "Failed"; readonly message: string; readonly reason?: string }

/** One mechanism's server side: evaluates the client's next token. */
interface Exchange {
  readonly step: (token: Buffer) => Step
}

const invalidCredentials = (mechanism: Mechanism, reauth: boolean) =>
  `Authentication failed during ${reauth ? "re-authentication" : "authentication"} due to invalid credentials with SASL mechanism ${mechanism}`

const plainExchange = (options: Options): Exchange => ({
  step: (token) => {
    const m = SaslPlain.decode(token)
    if ("_tag" in m) return { _tag: "Failed", message: m.message }
    if (m.authzid !== "" && m.authzid !== m.username)
      return {
        _tag: "Failed",
        message: "Authentication failed: Client requested an authorization id that is different from username"
      }
    const expected = options.plainPassword(m.username)
    if (expected === undefined || !equalSecrets(expected, m.password))
      return { _tag: "Failed", message: "Authentication failed: Invalid username or password" }
    return { _tag: "Done", token: Buffer.alloc(0), username: m.username }
  }
})

const equalSecrets = (a: string, b: string): boolean => {
  const x = crypto.createHash("sha256").update(a, "utf8").digest()
  const y = crypto.createHash("sha256").update(b, "utf8").digest()
  return crypto.timingSafeEqual(x, y)
}

const scramExchange = (mechanism: Scram.Mechanism, options: Options, reauth: boolean): Exchange => ({
  step: (token) => {
    const first = Scram.serverFirst(mechanism, token.toString("utf8"), (u) => {
      const c = options.scramCredential(u, mechanism)
      // A credential below the mechanism's minimum is refused as Kafka does.
      return c === undefined || c.iterations < Scram.MIN_ITERATIONS ? undefined : c
    })
    if (Scram.isFailure(first))
      return { _tag: "Failed", message: invalidCredentials(mechanism, reauth), reason: first.message }
    return {
      _tag: "Challenge",
      token: Buffer.from(first.response, "utf8"),
      next: {
        step: (final) => {
          const done = Scram.serverFinal(first.state, final.toString("utf8"))
          if (Scram.isFailure(done))
            return { _tag: "Failed", message: invalidCredentials(mechanism, reauth), reason: done.message }
          return { _tag: "Done", token: Buffer.from(done.response, "utf8"), username: done.username }
        }
      }
    }
  }
})

const exchangeFor = (mechanism: Mechanism, options: Options, reauth: boolean): Exchange =>
  mechanism === "PLAIN" ? plainExchange(options) : scramExchange(mechanism, options, reauth)

interface Session {
  readonly principal: string
  readonly mechanism: Mechanism
  /** When the session ends (ms); null: never. */
  readonly expiresAt: number | null
}

type State =
  | { readonly _tag: "Handshake"; readonly session: Session | null }
  | {
      readonly _tag: "Authenticate"
      readonly mechanism: Mechanism
      readonly exchange: Exchange
      readonly session: Session | null
      readonly clientSupportsReauth: boolean
    }
  | { readonly _tag: "RawTokens"; readonly mechanism: Mechanism; readonly exchange: Exchange }
  | { readonly _tag: "Authenticated"; readonly session: Session }

const close = (reason: string): FrameResult => ({ _tag: "Close", reason })

const encoded = (chunks: Either.Either<Buffer[], { readonly message: string }>, closeAfter?: string): FrameResult =>
  Either.isLeft(chunks)
    ? close(`cannot encode a SASL response: ${chunks.left.message}`)
    : { _tag: "Respond", chunks: chunks.right, ...(closeAfter === undefined ? {} : { closeAfter }) }

const handshakeResponse = (
  version: number,
  correlationId: number,
  body: SaslHandshake.Response,
  closeAfter?: string
): FrameResult => encoded(Api.encodeResponseChunks(SaslHandshake.api, version, correlationId, body), closeAfter)

const authenticateResponse = (
  version: number,
  correlationId: number,
  body: SaslAuthenticate.Response,
  closeAfter?: string
): FrameResult => encoded(Api.encodeResponseChunks(SaslAuthenticate.api, version, correlationId, body), closeAfter)

const sizePrefixed = (token: Buffer): Buffer => {
  const out = Buffer.allocUnsafe(4 + token.length)
  out.writeInt32BE(token.length, 0)
  token.copy(out, 4)
  return out
}

/** The frame handler of a SASL listener: authenticates each connection, then hands its frames to `inner`. */
export const wrap = (inner: FrameHandler, options: Options): FrameHandler => {
  const states = new WeakMap<Connection, State>()
  const now = options.now ?? Date.now
  const log = options.log ?? (() => {})
  const maxReauthMs = options.maxReauthMs ?? 0

  // The reason is for the operator only (the client gets Kafka's message, which says less).
  const failed = (connection: Connection, message: string, reason?: string) =>
    log(
      `Failed authentication with ${connection.remoteHost}:${connection.remotePort} (${message}${reason === undefined ? "" : `: ${reason}`})`
    )

  const handshake = (
    frame: Buffer,
    connection: Connection,
    version: number,
    correlationId: number,
    session: Session | null
  ): FrameResult => {
    const decoded = Api.decodeRequest(SaslHandshake.api, frame)
    if (Either.isLeft(decoded)) return close(`malformed SaslHandshake request: ${decoded.left.message}`)
    const requested = decoded.right.body.mechanism
    const enabled = options.enabledMechanisms as ReadonlyArray<string>
    const allowed = session === null ? enabled.includes(requested) : requested === session.mechanism
    if (!allowed || !isSupportedMechanism(requested)) {
      failed(connection, `Unsupported SASL mechanism ${requested}`)
      states.delete(connection)
      // Kafka closes the connection after refusing the mechanism; the client reads the answer first.
      return handshakeResponse(
        version,
        correlationId,
        { errorCode: Errors.ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms: [...options.enabledMechanisms] },
        `unsupported SASL mechanism ${requested}`
      )
    }
    if (version === 0) {
      if (session !== null) return close("re-authentication needs SaslHandshake v1 or later")
      states.set(connection, {
        _tag: "RawTokens",
        mechanism: requested,
        exchange: exchangeFor(requested, options, false)
      })
    } else
      states.set(connection, {
        _tag: "Authenticate",
        mechanism: requested,
        exchange: exchangeFor(requested, options, session !== null),
        session,
        clientSupportsReauth: false
      })
    return handshakeResponse(version, correlationId, {
      errorCode: Errors.ErrorCode.NONE,
      mechanisms: [...options.enabledMechanisms]
    })
  }

  const authenticate = (
    frame: Buffer,
    connection: Connection,
    state: Extract<State, { _tag: "Authenticate" }>,
    version: number,
    correlationId: number
  ): FrameResult => {
    const decoded = Api.decodeRequest(SaslAuthenticate.api, frame)
    if (Either.isLeft(decoded)) return close(`malformed SaslAuthenticate request: ${decoded.left.message}`)
    const clientSupportsReauth = state.clientSupportsReauth || version > 0
    const step = state.exchange.step(Buffer.from(decoded.right.body.authBytes))
    const reauth = state.session !== null
    const failure = (message: string, reason?: string): FrameResult => {
      failed(connection, message, reason)
      states.delete(connection)
      return authenticateResponse(
        version,
        correlationId,
        {
          errorCode: Errors.ErrorCode.SASL_AUTHENTICATION_FAILED,
          errorMessage: message,
          authBytes: Buffer.alloc(0),
          sessionLifetimeMs: 0n
        },
        "SASL authentication failed"
      )
    }
    switch (step._tag) {
      case "Failed":
        return failure(step.message, step.reason)
      case "Challenge":
        states.set(connection, { ...state, exchange: step.next, clientSupportsReauth })
        return authenticateResponse(version, correlationId, {
          errorCode: Errors.ErrorCode.NONE,
          errorMessage: null,
          authBytes: step.token,
          sessionLifetimeMs: 0n
        })
      case "Done": {
        const principal = `User:${step.username}`
        if (reauth && state.session!.principal !== principal)
          return failure(
            `Cannot change principals during re-authentication from ${state.session!.principal}: ${principal}`
          )
        const lifetime = maxReauthMs > 0 && clientSupportsReauth ? maxReauthMs : 0
        const session: Session = {
          principal,
          mechanism: state.mechanism,
          expiresAt: lifetime > 0 ? now() + lifetime : null
        }
        states.set(connection, { _tag: "Authenticated", session })
        connection.principal = principal
        if (reauth) log(`Re-authenticated ${principal} on ${connection.remoteHost}:${connection.remotePort}`)
        return authenticateResponse(version, correlationId, {
          errorCode: Errors.ErrorCode.NONE,
          errorMessage: null,
          authBytes: step.token,
          sessionLifetimeMs: BigInt(lifetime)
        })
      }
    }
  }

  return (frame, connection) => {
    const state: State = states.get(connection) ?? { _tag: "Handshake", session: null }
    if (state._tag === "RawTokens") {
      const step = state.exchange.step(frame)
      switch (step._tag) {
        case "Failed":
          failed(connection, step.message, step.reason)
          return close(`SASL authentication failed: ${step.message}`)
        case "Challenge":
          states.set(connection, { ...state, exchange: step.next })
          return { _tag: "Respond", chunks: [sizePrefixed(step.token)] }
        case "Done":
          states.set(connection, {
            _tag: "Authenticated",
            session: { principal: `User:${step.username}`, mechanism: state.mechanism, expiresAt: null }
          })
          connection.principal = `User:${step.username}`
          // Kafka answers the last token even when it is empty (PLAIN): old clients wait for it.
          return { _tag: "Respond", chunks: [sizePrefixed(step.token)] }
      }
    }
    const peek = Header.peekRequestHeader(frame)
    if (Either.isLeft(peek)) return close(peek.left.message)
    const { apiKey, apiVersion, correlationId } = peek.right
    const apiName = Apis.byKey.get(apiKey)?.name ?? `${apiKey}`
    switch (state._tag) {
      case "Handshake": {
        if (apiKey === Api.API_VERSIONS_KEY) return inner(frame, connection)
        if (apiKey === SaslHandshake.api.key) {
          if (!Api.supports(SaslHandshake.api, apiVersion))
            return close(`unsupported version ${apiVersion} of SaslHandshake`)
          return handshake(frame, connection, apiVersion, correlationId, null)
        }
        return close(`Unexpected Kafka request of type ${apiName} during SASL handshake`)
      }
      case "Authenticate": {
        if (apiKey === SaslAuthenticate.api.key) {
          if (!Api.supports(SaslAuthenticate.api, apiVersion))
            return close(`unsupported version ${apiVersion} of SaslAuthenticate`)
          return authenticate(frame, connection, state, apiVersion, correlationId)
        }
        // During re-authentication the old session still holds until it expires.
        if (state.session !== null && (state.session.expiresAt === null || now() < state.session.expiresAt))
          return inner(frame, connection)
        return close(`Unexpected Kafka request of type ${apiName} during SASL authentication`)
      }
      case "Authenticated": {
        if (apiKey === SaslHandshake.api.key && apiVersion >= 1)
          return handshake(frame, connection, apiVersion, correlationId, state.session)
        const expiresAt = state.session.expiresAt
        if (expiresAt !== null && now() >= expiresAt) {
          log(
            `Closing connection ${connection.remoteHost}:${connection.remotePort} of ${state.session.principal}: its SASL session expired and it did not re-authenticate`
          )
          return close("SASL session expired without re-authentication")
        }
        return inner(frame, connection)
      }
    }
  }
}
