/**
 * Typed request dispatch: decodes a frame with the API registry, runs the handler registered for its
 * key, and encodes the answer at the request's version.
 *
 * Kafka's rules for what cannot be served: an unknown API key, a known API at a version we do not
 * speak, or a body that does not decode closes the connection; ApiVersions at an unsupported version is
 * answered at v0 with UNSUPPORTED_VERSION and our version table, so a newer client can downgrade.
 *
 * The request quota's measure (Kafka's request handler time, KIP-124) is taken here: each request's time
 * from being taken for handling to its response being ready, less what the handler reports as waiting
 * (`RequestContext.waited`), goes to the `RequestTimeHook`, which says how
 * long to throttle; the response then carries that `throttle_time_ms` (the longest of the throttles)
 * and the connection is muted as long, the same mute as the byte-rate quotas'.
 */
import { Api, ApiVersions, Errors, Header, type Spec } from "@clustermirror/protocol"
import { Either } from "effect"
import type { Connection, FrameHandler, FrameResult } from "./SocketServer.js"

export interface RequestContext {
  readonly apiKey: number
  readonly apiVersion: number
  readonly correlationId: number
  readonly clientId: string | null
  readonly connection: Connection
  /** The request's size on the wire (its frame, header included, without the size prefix). */
  readonly requestBytes: number
  /**
   * Mutes the connection for `ms` once this request is answered (Kafka's throttling since KIP-219):
   * no further request of the connection is read until then. The longest of several calls counts.
   */
  readonly throttle: (ms: number) => void
  /** Exempts this request from the request quota (Kafka's inter-broker requests: replica fetches, cluster actions). */
  readonly exemptFromRequestQuota: () => void
  /**
   * Reports time the request spent waiting rather than being handled (a fetch's long poll, Kafka's
   * purgatory): the request quota does not count it.
   */
  readonly waited: (ms: number) => void
}

/**
 * Sees each handled request that is not exempt, with the milliseconds it took from being taken for
 * handling to its response being ready, and returns how long to throttle the client (0: not).
 */
export type RequestTimeHook = (ctx: RequestContext, handlingMs: number) => number

/** Returned by a handler when the request gets no response (Produce with acks=0). */
export const NoResponse: unique symbol = Symbol.for("@clustermirror/network/NoResponse")
export type NoResponse = typeof NoResponse

export type Handle<Req extends Spec.Fields, Res extends Spec.Fields> = (
  ctx: RequestContext,
  request: Spec.StructType<Req>
) => Spec.StructInput<Res> | NoResponse | Promise<Spec.StructInput<Res> | NoResponse>

interface Registered {
  readonly api: Api.ApiShape
  readonly run: (ctx: RequestContext, frame: Buffer) => FrameResult | Promise<FrameResult>
  /** The handler as registered (typed by its API), for `wrap`. */
  readonly handle: unknown
  readonly versions: { readonly min: number; readonly max: number } | undefined
}

/** The response with `throttle_time_ms` raised to `ms`, for the APIs whose responses have it. */
const withThrottleTime = <Req extends Spec.Fields, Res extends Spec.Fields>(
  api: Api.ApiDef<Req, Res>,
  body: Spec.StructInput<Res> | NoResponse,
  ms: number
): Spec.StructInput<Res> | NoResponse => {
  if (body === NoResponse || !api.response.fields.some((f) => f.key === "throttleTimeMs")) return body
  const current: unknown = "throttleTimeMs" in body ? body.throttleTimeMs : undefined
  return typeof current === "number" && current >= ms ? body : { ...body, throttleTimeMs: ms }
}

export class Handlers {
  private readonly byKey = new Map<number, Registered>()
  private requestTime: { readonly hook: RequestTimeHook; readonly clock: () => number } | undefined

  /**
   * Measures every request's handling time for `hook` (the request quota), on `clock` in milliseconds
   * (default `performance.now`). One hook: a second call replaces the first.
   */
  measureRequestTime(hook: RequestTimeHook, clock: () => number = () => performance.now()): this {
    this.requestTime = { hook, clock }
    return this
  }

  /**
   * Replaces the handler of a registered API with `around(handler)`, at the same versions (a check in
   * front of the handler, such as authorization). Returns false when the API has no handler.
   */
  wrap<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    around: (handle: Handle<Req, Res>) => Handle<Req, Res>
  ): boolean {
    const existing = this.byKey.get(api.key)
    if (existing === undefined) return false
    // Registered under this key by `register`, which stores the handler of this very API.
    this.register(api, around(existing.handle as Handle<Req, Res>), existing.versions)
    return true
  }

  /** Whether an API has a handler. */
  has(apiKey: number): boolean {
    return this.byKey.has(apiKey)
  }

  /**
   * Registers the handler of an API. `versions` overrides the range served (default: the API's own),
   * e.g. to serve the old versions that librdkafka's feature detection looks for.
   */
  register<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    handle: Handle<Req, Res>,
    versions?: { readonly min: number; readonly max: number }
  ): this {
    const served: Api.ApiShape =
      versions === undefined ? api : { ...api, minVersion: versions.min, maxVersion: versions.max }
    const respond = (ctx: RequestContext, body: Spec.StructInput<Res> | NoResponse, muteMs: number): FrameResult => {
      const mute = muteMs > 0 ? { muteMs } : {}
      if (body === NoResponse) return { _tag: "NoResponse", ...mute }
      const chunks = Api.encodeResponseChunks(api, ctx.apiVersion, ctx.correlationId, body)
      return Either.isLeft(chunks)
        ? { _tag: "Close", reason: `cannot encode ${api.name} response: ${chunks.left.message}` }
        : { _tag: "Respond", chunks: chunks.right, ...mute }
    }
    this.byKey.set(api.key, {
      api: served,
      handle,
      versions,
      run: (ctx, frame) => {
        const measured = this.requestTime
        const started = measured?.clock() ?? 0
        const decoded = Api.decodeRequest(api, frame)
        if (Either.isLeft(decoded)) return { _tag: "Close", reason: `malformed request: ${decoded.left.message}` }
        let muteMs = 0
        let exempt = false
        let waitedMs = 0
        const full: RequestContext = {
          ...ctx,
          clientId: decoded.right.header.clientId,
          throttle: (ms) => {
            if (ms > muteMs) muteMs = ms
          },
          exemptFromRequestQuota: () => {
            exempt = true
          },
          waited: (ms) => {
            if (ms > 0) waitedMs += ms
          }
        }
        const done = (body: Spec.StructInput<Res> | NoResponse): FrameResult => {
          if (measured === undefined || exempt) return respond(full, body, muteMs)
          const ms = measured.hook(full, Math.max(0, measured.clock() - started - waitedMs))
          if (ms <= 0) return respond(full, body, muteMs)
          full.throttle(ms)
          return respond(full, withThrottleTime(api, body, muteMs), muteMs)
        }
        const out = handle(full, decoded.right.body)
        return out instanceof Promise ? out.then(done) : done(out)
      }
    })
    return this
  }

  /** The ApiVersions table: every registered API with the versions we serve. */
  versions(): Array<{ apiKey: number; minVersion: number; maxVersion: number }> {
    return [...this.byKey.values()]
      .map(({ api }) => ({ apiKey: api.key, minVersion: api.minVersion, maxVersion: api.maxVersion }))
      .sort((a, b) => a.apiKey - b.apiKey)
  }

  /** The frame handler for the socket server. */
  frameHandler(log: (line: string) => void): FrameHandler {
    return (frame, connection) => {
      const peek = Header.peekRequestHeader(frame)
      if (Either.isLeft(peek)) return { _tag: "Close", reason: peek.left.message }
      const { apiKey, apiVersion, correlationId } = peek.right
      const entry = this.byKey.get(apiKey)
      if (entry === undefined) return { _tag: "Close", reason: `unknown API key ${apiKey}` }
      if (!Api.supports(entry.api, apiVersion)) {
        if (apiKey === Api.API_VERSIONS_KEY) return this.unsupportedApiVersions(correlationId)
        return { _tag: "Close", reason: `unsupported version ${apiVersion} of ${entry.api.name}` }
      }
      const ctx: RequestContext = {
        apiKey,
        apiVersion,
        correlationId,
        clientId: null,
        connection,
        requestBytes: frame.length,
        throttle: () => {},
        exemptFromRequestQuota: () => {},
        waited: () => {}
      }
      try {
        return entry.run(ctx, frame)
      } catch (e) {
        log(`${entry.api.name} v${apiVersion} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)
        return { _tag: "Close", reason: "internal error" }
      }
    }
  }

  private unsupportedApiVersions(correlationId: number): FrameResult {
    const chunks = Api.encodeResponseChunks(ApiVersions.api, 0, correlationId, {
      errorCode: Errors.ErrorCode.UNSUPPORTED_VERSION,
      apiKeys: this.versions()
    })
    return Either.isLeft(chunks)
      ? { _tag: "Close", reason: chunks.left.message }
      : { _tag: "Respond", chunks: chunks.right }
  }
}
