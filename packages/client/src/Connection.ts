/**
 * One TCP (or TLS, with `security.tls`) connection to a Kafka broker: framing, correlation ids,
 * pipelining and ApiVersions negotiation.
 *
 * The core is Promise/callback based on `node:net` so that the data path (replica and mirror
 * fetchers, forwarding) pays no Effect per request: `request` encodes, writes and resolves with the
 * decoded body when the response with its correlation id arrives. Any number of requests may be in
 * flight; the broker answers them in order. Every request has a timeout; a disconnect fails every
 * in-flight request with a `ConnectionError`. `scoped` wraps a connection as an Effect resource.
 *
 * With `security.sasl` it authenticates after negotiating (SaslHandshake v1, then SaslAuthenticate with
 * the mechanism's tokens: PLAIN, SCRAM-SHA-256/512); when the broker gives the session a lifetime
 * (KIP-368) it re-authenticates before it ends, holding new requests back while it does.
 *
 * It owns no cluster knowledge (which broker leads what): that is `ClusterClient`'s job.
 */
import {
  Api,
  ApiVersions,
  Errors,
  Header,
  SaslAuthenticate,
  SaslHandshake,
  SaslPlain,
  Scram,
  type Spec
} from "@clustermirror/protocol"
import { Effect, Either, type Scope } from "effect"
import { Buffer } from "node:buffer"
import * as net from "node:net"
import * as tls from "node:tls"
import {
  type ClientError,
  ConnectionError,
  KafkaError,
  ProtocolFailure,
  RequestTimeout,
  UnsupportedVersion
} from "./ClientError.js"
import { fromPromise } from "./internal/effect.js"
import type { ClientSecurity, SaslCredentials } from "./Security.js"

export interface Options {
  readonly host: string
  readonly port: number
  /** The header's client id; default "clustermirror". */
  readonly clientId?: string | null
  /** Default 10 s. */
  readonly connectTimeoutMs?: number
  /** Default for `request`; default 30 s. */
  readonly requestTimeoutMs?: number
  /** Largest response frame accepted; default 100 MiB. */
  readonly maxFrameBytes?: number
  /** Send ApiVersions after connecting (default true). Without it, `versionFor` answers our maximum. */
  readonly negotiate?: boolean
  readonly clientSoftwareName?: string
  readonly clientSoftwareVersion?: string
  /** TLS and SASL for this connection; absent: PLAINTEXT. */
  readonly security?: ClientSecurity
}

export interface RequestOptions {
  /** Overrides the connection's request timeout; 0 or Infinity = none. */
  readonly timeoutMs?: number
}

export interface VersionRange {
  readonly min: number
  readonly max: number
}

/**
 * The highest version in both ranges, or null when they do not overlap (or the broker does not
 * serve the API: `theirs` null).
 */
export const intersect = (ours: VersionRange, theirs: VersionRange | null): number | null => {
  if (theirs === null) return null
  const lo = Math.max(ours.min, theirs.min)
  const hi = Math.min(ours.max, theirs.max)
  return lo <= hi ? hi : null
}

/** The ApiVersions version we try first; v4 differs only in what a broker may answer. */
const API_VERSIONS_FIRST = 3

interface Pending {
  readonly onFrame: (frame: Buffer) => void
  readonly onError: (e: ClientError) => void
  timer: ReturnType<typeof setTimeout> | undefined
}

const MAX_CORRELATION_ID = 0x7fffffff

export class Connection {
  readonly host: string
  readonly port: number
  readonly clientId: string | null
  readonly requestTimeoutMs: number
  private readonly socket: net.Socket
  private readonly frames: Header.FrameDecoder
  private readonly pending = new Map<number, Pending>()
  private readonly closeListeners: Array<(e: ConnectionError) => void> = []
  private readonly versionCache = new Map<number, Either.Either<number, UnsupportedVersion>>()
  private nextId = 1
  private failure: ConnectionError | null = null
  private closedPromise: Promise<void>
  /** The broker's version table by API key; null until negotiated (or when negotiation is off). */
  private brokerVersions: ReadonlyMap<number, VersionRange> | null = null
  /** While re-authenticating: settles when done; requests sent meanwhile wait for it. */
  private reauthenticating: Promise<void> | null = null
  private reauthTimer: ReturnType<typeof setTimeout> | undefined = undefined

  private constructor(socket: net.Socket, options: Options) {
    this.host = options.host
    this.port = options.port
    this.clientId = options.clientId === undefined ? "clustermirror" : options.clientId
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000
    this.socket = socket
    this.frames = new Header.FrameDecoder(options.maxFrameBytes)
    socket.setNoDelay(true)
    socket.on("data", (chunk: Buffer) => this.onData(chunk))
    socket.on("error", (err) => this.fail("closed", err.message, err))
    this.closedPromise = new Promise((resolve) =>
      socket.once("close", () => {
        this.fail("closed", "connection closed")
        resolve()
      })
    )
  }

  /** Connects and, unless `negotiate` is false, negotiates API versions. */
  static open(options: Options): Promise<Connection> {
    const connectTimeoutMs = options.connectTimeoutMs ?? 10_000
    const tlsOptions = options.security?.tls
    return new Promise<Connection>((resolve, reject) => {
      const socket =
        tlsOptions === undefined
          ? net.connect({ host: options.host, port: options.port })
          : tls.connect({
              // SNI takes host names only; the certificate check uses `host` either way.
              ...(net.isIP(options.host) === 0 ? { servername: options.host } : {}),
              ...tlsOptions,
              host: options.host,
              port: options.port
            })
      const timer = setTimeout(() => {
        socket.destroy()
        reject(
          new ConnectionError({
            host: options.host,
            port: options.port,
            reason: "timeout",
            message: `connect to ${options.host}:${options.port} timed out after ${connectTimeoutMs} ms`
          })
        )
      }, connectTimeoutMs)
      const onError = (err: Error) => {
        clearTimeout(timer)
        reject(
          new ConnectionError({
            host: options.host,
            port: options.port,
            reason: "connect",
            message: `connect to ${options.host}:${options.port} failed: ${tlsOptions === undefined ? err.message : tlsFailure(err)}`,
            cause: err
          })
        )
      }
      socket.once("error", onError)
      socket.once(tlsOptions === undefined ? "connect" : "secureConnect", () => {
        clearTimeout(timer)
        socket.off("error", onError)
        resolve(new Connection(socket, options))
      })
    }).then(async (conn) => {
      const sasl = options.security?.sasl
      if (options.negotiate === false && sasl === undefined) return conn
      try {
        if (options.negotiate !== false) await conn.negotiate(options)
        if (sasl !== undefined) await conn.authenticate(sasl)
        return conn
      } catch (e) {
        await conn.close()
        throw e
      }
    })
  }

  /** Requests sent and not yet answered (nor timed out). */
  get inFlight(): number {
    return this.pending.size
  }

  get isOpen(): boolean {
    return this.failure === null
  }

  /** The broker's ApiVersions table (null when not negotiated). */
  get apiVersions(): ReadonlyMap<number, VersionRange> | null {
    return this.brokerVersions
  }

  /** The highest version of `api` both sides speak. */
  versionFor(api: Api.ApiShape): Either.Either<number, UnsupportedVersion> {
    let v = this.versionCache.get(api.key)
    if (v === undefined) {
      const ours = { min: api.minVersion, max: api.maxVersion }
      if (this.brokerVersions === null) v = Either.right(api.maxVersion)
      else {
        const theirs = this.brokerVersions.get(api.key) ?? null
        const hi = intersect(ours, theirs)
        v =
          hi === null
            ? Either.left(new UnsupportedVersion({ api: api.name, apiKey: api.key, ours, theirs }))
            : Either.right(hi)
      }
      this.versionCache.set(api.key, v)
    }
    return v
  }

  /** Sends a request at `version` and resolves with the decoded response body. */
  request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>,
    options?: RequestOptions
  ): Promise<Spec.StructType<Res>> {
    // Encoded here, outside any closure, so the body is garbage once it is bytes: a long-polling Fetch
    // does not keep its per-partition request objects alive until the answer.
    const encoded = this.encode(api, version, body)
    return new Promise((resolve, reject) => {
      this.send(
        api,
        version,
        encoded,
        options?.timeoutMs,
        (frame) => {
          const decoded = Api.decodeResponse(api, version, frame)
          if (Either.isRight(decoded)) resolve(decoded.right.body)
          else reject(new ProtocolFailure({ api: api.name, version, message: decoded.left.message }))
        },
        reject
      )
    })
  }

  /** `request` at the negotiated version (`versionFor`). */
  call<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    options?: RequestOptions
  ): Promise<Spec.StructType<Res>> {
    const version = this.versionFor(api)
    if (Either.isLeft(version)) return Promise.reject(version.left)
    return this.request(api, version.right, body, options)
  }

  /**
   * Sends a request and resolves with the raw response frame (header and body, no size prefix), for
   * callers that relay or decode responses themselves.
   */
  requestRaw<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>,
    options?: RequestOptions
  ): Promise<Buffer> {
    const encoded = this.encode(api, version, body)
    return new Promise<Buffer>((resolve, reject) =>
      this.send(api, version, encoded, options?.timeoutMs, resolve, reject)
    )
  }

  /**
   * Sends a request the broker does not answer (Produce with acks=0). Resolves once the bytes are
   * handed to the kernel.
   */
  requestNoResponse<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure)
    if (this.reauthenticating !== null)
      return this.reauthenticating.then(() => this.requestNoResponse(api, version, body))
    const encoded = Api.encodeRequest(api, version, this.correlationId(), this.clientId, body)
    if (Either.isLeft(encoded))
      return Promise.reject(new ProtocolFailure({ api: api.name, version, message: encoded.left.message }))
    return new Promise((resolve, reject) =>
      this.socket.write(encoded.right, (err) => (err ? reject(this.failure ?? this.toError(err)) : resolve()))
    )
  }

  /** Registers a callback run once when the connection closes (for any reason). */
  onClose(listener: (e: ConnectionError) => void): void {
    if (this.failure !== null) listener(this.failure)
    else this.closeListeners.push(listener)
  }

  /** Closes the connection; in-flight requests fail with a `ConnectionError` (reason "closed"). */
  close(): Promise<void> {
    if (this.reauthTimer !== undefined) clearTimeout(this.reauthTimer)
    this.fail("closed", "connection closed by the client")
    this.socket.destroy()
    return this.closedPromise
  }

  // -------------------------------------------------------------------------------------------------

  /** A request's frame with the next correlation id, or why it cannot be encoded. */
  private encode<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ): { readonly correlationId: number; readonly frame: ReturnType<typeof Api.encodeRequest> } {
    const correlationId = this.correlationId()
    return { correlationId, frame: Api.encodeRequest(api, version, correlationId, this.clientId, body) }
  }

  private send<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    request: { readonly correlationId: number; readonly frame: ReturnType<typeof Api.encodeRequest> },
    timeoutMs: number | undefined,
    onFrame: (frame: Buffer) => void,
    onError: (e: ClientError) => void,
    duringReauthentication = false
  ): void {
    if (this.failure !== null) return onError(this.failure)
    if (this.reauthenticating !== null && !duringReauthentication) {
      void this.reauthenticating.then(() => this.send(api, version, request, timeoutMs, onFrame, onError))
      return
    }
    const { correlationId, frame: encoded } = request
    if (Either.isLeft(encoded))
      return onError(new ProtocolFailure({ api: api.name, version, message: encoded.left.message }))
    const entry: Pending = { onFrame, onError, timer: undefined }
    const limit = timeoutMs ?? this.requestTimeoutMs
    if (limit > 0 && Number.isFinite(limit)) {
      entry.timer = setTimeout(() => {
        // The entry goes, so a late answer with this correlation id is dropped on arrival.
        if (this.pending.delete(correlationId))
          onError(new RequestTimeout({ api: api.name, version, correlationId, timeoutMs: limit }))
      }, limit)
    }
    this.pending.set(correlationId, entry)
    this.socket.write(encoded.right)
  }

  private correlationId(): number {
    const id = this.nextId
    this.nextId = id >= MAX_CORRELATION_ID ? 1 : id + 1
    return id
  }

  private onData(chunk: Buffer): void {
    const result = this.frames.push(chunk)
    if (Either.isLeft(result)) {
      this.fail("protocol", `bad response framing: ${result.left.message}`)
      this.socket.destroy()
      return
    }
    for (const frame of result.right) {
      if (frame.length < 4) continue
      const correlationId = frame.readInt32BE(0)
      const entry = this.pending.get(correlationId)
      if (entry === undefined) continue
      this.pending.delete(correlationId)
      if (entry.timer !== undefined) clearTimeout(entry.timer)
      entry.onFrame(frame)
    }
  }

  private toError(err: Error): ConnectionError {
    return new ConnectionError({ host: this.host, port: this.port, reason: "closed", message: err.message, cause: err })
  }

  private fail(reason: ConnectionError["reason"], message: string, cause?: unknown): void {
    if (this.failure !== null) return
    const error = new ConnectionError({
      host: this.host,
      port: this.port,
      reason,
      message: `${this.host}:${this.port}: ${message}`,
      ...(cause === undefined ? {} : { cause })
    })
    this.failure = error
    if (this.reauthTimer !== undefined) clearTimeout(this.reauthTimer)
    const pending = [...this.pending.values()]
    this.pending.clear()
    for (const p of pending) {
      if (p.timer !== undefined) clearTimeout(p.timer)
      p.onError(error)
    }
    for (const l of this.closeListeners.splice(0)) l(error)
  }

  /**
   * ApiVersions first at v3; a broker that does not speak it answers UNSUPPORTED_VERSION in a v0
   * body (with its own table when it has one), and we retry at the highest version it names (else v0).
   */
  private async negotiate(options: Options): Promise<void> {
    let version = Math.min(API_VERSIONS_FIRST, ApiVersions.api.maxVersion)
    for (;;) {
      const frame = await this.requestRaw(ApiVersions.api, version, {
        clientSoftwareName: options.clientSoftwareName ?? "clustermirror",
        clientSoftwareVersion: options.clientSoftwareVersion ?? "0.0.0"
      })
      let decoded = Api.decodeResponse(ApiVersions.api, version, frame)
      if (Either.isLeft(decoded) && version > 0) decoded = Api.decodeResponse(ApiVersions.api, 0, frame)
      if (Either.isLeft(decoded))
        throw new ProtocolFailure({ api: "ApiVersions", version, message: decoded.left.message })
      const body = decoded.right.body
      if (body.errorCode === Errors.ErrorCode.UNSUPPORTED_VERSION && version > 0) {
        const theirs = body.apiKeys.find((k) => k.apiKey === ApiVersions.api.key)
        version = theirs === undefined ? 0 : Math.max(0, Math.min(theirs.maxVersion, version - 1))
        continue
      }
      if (body.errorCode !== 0)
        throw new KafkaError({ errorCode: body.errorCode, errorMessage: null, context: "ApiVersions" })
      this.brokerVersions = new Map(body.apiKeys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }]))
      this.versionCache.clear()
      return
    }
  }

  /** A request sent while re-authentication holds other requests back. */
  private saslRequest<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>
  ): Promise<{ readonly version: number; readonly body: Spec.StructType<Res> }> {
    const v = this.versionFor(api)
    if (Either.isLeft(v)) return Promise.reject(v.left)
    const version = v.right
    const encoded = this.encode(api, version, body)
    return new Promise((resolve, reject) =>
      this.send(
        api,
        version,
        encoded,
        undefined,
        (frame) => {
          const decoded = Api.decodeResponse(api, version, frame)
          if (Either.isRight(decoded)) resolve({ version, body: decoded.right.body })
          else reject(new ProtocolFailure({ api: api.name, version, message: decoded.left.message }))
        },
        reject,
        true
      )
    )
  }

  /**
   * SASL: SaslHandshake v1 with the mechanism, then its tokens in SaslAuthenticate. Errors name the
   * Kafka error (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM) and never the password.
   */
  private async authenticate(sasl: SaslCredentials): Promise<void> {
    const handshake = await this.saslRequest(SaslHandshake.api, { mechanism: sasl.mechanism })
    if (handshake.version < 1)
      throw new KafkaError({
        errorCode: Errors.ErrorCode.UNSUPPORTED_VERSION,
        errorMessage: "the broker does not speak SaslHandshake v1",
        context: "SaslHandshake"
      })
    if (handshake.body.errorCode !== 0)
      throw new KafkaError({
        errorCode: handshake.body.errorCode,
        errorMessage:
          handshake.body.errorCode === Errors.ErrorCode.ILLEGAL_SASL_STATE
            ? "the broker's listener does not take SASL (is its security protocol PLAINTEXT or SSL?)"
            : `SASL mechanism ${sasl.mechanism} is not enabled (the broker enables ${handshake.body.mechanisms.join(", ") || "none"})`,
        context: "SaslHandshake"
      })
    const round = async (token: Buffer) => {
      const r = await this.saslRequest(SaslAuthenticate.api, { authBytes: token })
      if (r.body.errorCode !== 0)
        throw new KafkaError({
          errorCode: r.body.errorCode,
          errorMessage: r.body.errorMessage,
          context: `SaslAuthenticate ${sasl.mechanism} as ${sasl.username}`
        })
      return r.body
    }
    const protocolError = (message: string) =>
      new KafkaError({
        errorCode: Errors.ErrorCode.SASL_AUTHENTICATION_FAILED,
        errorMessage: message,
        context: `SaslAuthenticate ${sasl.mechanism} as ${sasl.username}`
      })
    let lifetimeMs: bigint
    if (sasl.mechanism === "PLAIN") {
      lifetimeMs = (await round(SaslPlain.encode(sasl.username, sasl.password))).sessionLifetimeMs
    } else {
      const start = Scram.clientStart(sasl.mechanism, sasl.username, sasl.password)
      const first = await round(Buffer.from(start.message, "utf8"))
      const final = Scram.clientFinal(start.state, Buffer.from(first.authBytes).toString("utf8"))
      if (Scram.isFailure(final)) throw protocolError(final.message)
      const done = await round(Buffer.from(final.message, "utf8"))
      const verified = Scram.clientVerify(final.state, Buffer.from(done.authBytes).toString("utf8"))
      if (verified !== true) throw protocolError(verified.message)
      lifetimeMs = done.sessionLifetimeMs
    }
    if (lifetimeMs > 0n) this.scheduleReauthentication(sasl, Number(lifetimeMs))
  }

  /** Re-authenticates at 85-95% of the session lifetime, as Kafka's clients do (KIP-368). */
  private scheduleReauthentication(sasl: SaslCredentials, lifetimeMs: number): void {
    if (this.failure !== null) return
    const delay = Math.max(1, Math.floor(lifetimeMs * (0.85 + Math.random() * 0.1)))
    this.reauthTimer = setTimeout(() => {
      this.reauthTimer = undefined
      const run = this.authenticate(sasl)
      this.reauthenticating = run.then(
        () => {
          this.reauthenticating = null
        },
        (e: unknown) => {
          this.reauthenticating = null
          this.fail("closed", `re-authentication failed: ${e instanceof Error ? e.message : String(e)}`, e)
          this.socket.destroy()
        }
      )
    }, delay)
    this.reauthTimer.unref?.()
  }
}

/** Why a TLS connection failed, naming certificate problems the way an operator can act on them. */
const tlsFailure = (err: Error): string => {
  const code = (err as NodeJS.ErrnoException).code ?? ""
  // The TCP connect itself failed (refused, unreachable): no TLS problem to name.
  const syscall = (err as NodeJS.ErrnoException).syscall
  if (syscall === "connect" || syscall === "getaddrinfo") return err.message
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID")
    return `TLS: the broker's certificate does not name this host (${err.message})`
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID")
    return `TLS: the broker's certificate is not valid now (${code})`
  if (
    code === "DEPTH_ZERO_SELF_SIGNED_CERT" ||
    code === "SELF_SIGNED_CERT_IN_CHAIN" ||
    code === "UNABLE_TO_VERIFY_LEAF_SIGNATURE" ||
    code === "UNABLE_TO_GET_ISSUER_CERT_LOCALLY" ||
    code === "UNABLE_TO_GET_ISSUER_CERT"
  )
    return `TLS: the broker's certificate is not trusted by the truststore (${code})`
  if (/certificate required|handshake failure|unknown ca|bad certificate/i.test(err.message))
    return `TLS: the broker refused the handshake, check the client certificate (${err.message})`
  if (/wrong version number|packet length too long/i.test(err.message))
    return `TLS: the peer does not speak TLS on this port (${err.message})`
  return `TLS handshake failed: ${err.message}`
}

/** Opens a connection (see `Connection.open`). */
export const open = (options: Options): Promise<Connection> => Connection.open(options)

/** A connection as an Effect resource: opened on acquire, closed on release. */
export const scoped = (options: Options): Effect.Effect<Connection, ClientError, Scope.Scope> =>
  Effect.acquireRelease(
    fromPromise(() => Connection.open(options)),
    (c) => Effect.promise(() => c.close())
  )
