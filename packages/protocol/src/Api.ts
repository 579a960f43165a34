/**
 * An API: its key, name, request and response messages, and the version range this implementation
 * speaks. Derives header versions and frames whole requests and responses.
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import { Reader, Writer } from "./internal/Bytes.js"
import { readRequestHeader, readResponseHeader, writeRequestHeader, writeResponseHeader } from "./Header.js"
import { DecodeError, EncodeError } from "./ProtocolError.js"
import { type Fields, type Message, parseRange, type StructInput, type StructType, toDecodeError } from "./Spec.js"

export interface ApiDef<Req extends Fields = Fields, Res extends Fields = Fields> {
  readonly key: number
  readonly name: string
  readonly request: Message<Req>
  readonly response: Message<Res>
  /** Lowest version we accept and send. */
  readonly minVersion: number
  /** Highest version we accept and send. */
  readonly maxVersion: number
}

export const define = <Req extends Fields, Res extends Fields>(opts: {
  readonly key: number
  readonly name: string
  readonly request: Message<Req>
  readonly response: Message<Res>
  /** Versions spoken, e.g. "0-17"; defaults to the request's valid versions. */
  readonly versions?: string
}): ApiDef<Req, Res> => {
  const r = opts.versions ? parseRange(opts.versions) : opts.request.validVersions
  return {
    key: opts.key,
    name: opts.name,
    request: opts.request,
    response: opts.response,
    minVersion: r.lo,
    maxVersion: Number.isFinite(r.hi) ? r.hi : opts.request.validVersions.hi
  }
}

export const API_VERSIONS_KEY = 18

/** What header selection needs of an API, whatever its message types. */
export interface ApiShape {
  readonly key: number
  readonly name: string
  readonly minVersion: number
  readonly maxVersion: number
  readonly request: { readonly isFlexible: (version: number) => boolean }
  readonly response: { readonly isFlexible: (version: number) => boolean }
}

export const requestHeaderVersion = (api: ApiShape, version: number): number =>
  api.request.isFlexible(version) ? 2 : 1

/** ApiVersions responses always use header v0, so that clients can read them at any version. */
export const responseHeaderVersion = (api: ApiShape, version: number): number =>
  api.key === API_VERSIONS_KEY ? 0 : api.response.isFlexible(version) ? 1 : 0

export const supports = (api: ApiShape, version: number): boolean =>
  version >= api.minVersion && version <= api.maxVersion

/** Encodes a whole request frame: size prefix, header, body. */
export const encodeRequest = <Req extends Fields, Res extends Fields>(
  api: ApiDef<Req, Res>,
  version: number,
  correlationId: number,
  clientId: string | null,
  body: StructInput<Req>
): Either.Either<Buffer, EncodeError> => {
  try {
    const w = new Writer()
    w.int32(0)
    writeRequestHeader(
      w,
      { apiKey: api.key, apiVersion: version, correlationId, clientId },
      requestHeaderVersion(api, version)
    )
    api.request.codec(version).write(w, body)
    const frame = w.finish()
    frame.writeInt32BE(frame.length - 4, 0)
    return Either.right(frame)
  } catch (e) {
    return Either.left(new EncodeError({ message: (e as Error).message, what: `${api.name}Request v${version}` }))
  }
}

/**
 * Encodes a whole response frame as chunks (record data is referenced, not copied). The first chunk
 * starts with the size prefix.
 */
export const encodeResponseChunks = <Req extends Fields, Res extends Fields>(
  api: ApiDef<Req, Res>,
  version: number,
  correlationId: number,
  body: StructInput<Res>
): Either.Either<Buffer[], EncodeError> => {
  try {
    const w = new Writer()
    w.int32(0)
    writeResponseHeader(w, correlationId, responseHeaderVersion(api, version))
    api.response.codec(version).write(w, body)
    const size = w.length - 4
    const chunks = w.finishChunks()
    chunks[0]!.writeInt32BE(size, 0)
    return Either.right(chunks)
  } catch (e) {
    return Either.left(new EncodeError({ message: (e as Error).message, what: `${api.name}Response v${version}` }))
  }
}

/**
 * Decodes a request frame (without its size prefix) whose API is `api`.
 *
 * Bytes after a complete body (after its last field, or after its tagged-field section in flexible
 * versions) are not an error: Kafka's brokers read the body and ignore what follows, and clients depend
 * on that (librdkafka 2.x sends an all-topics Metadata v9+ request whose null topic array is written as
 * four bytes, so the real flags and tag section trail the body). They are reported as `trailingBytes`.
 * A body that ends early, a bad length or an invalid tagged-field section is still an error.
 */
export const decodeRequest = <Req extends Fields, Res extends Fields>(
  api: ApiDef<Req, Res>,
  frame: Buffer
): Either.Either<
  { header: ReturnType<typeof readRequestHeader>; body: StructType<Req>; trailingBytes: number },
  DecodeError
> => {
  const version = frame.length >= 4 ? frame.readInt16BE(2) : -1
  const what = `${api.name}Request v${version}`
  try {
    const r = new Reader(frame)
    const header = readRequestHeader(r, requestHeaderVersion(api, version))
    const body = api.request.codec(header.apiVersion).read(r)
    return Either.right({ header, body, trailingBytes: r.remaining })
  } catch (e) {
    return Either.left(toDecodeError(e, what))
  }
}

/** Decodes a response frame (without its size prefix) for a request of `api` at `version`. */
export const decodeResponse = <Req extends Fields, Res extends Fields>(
  api: ApiDef<Req, Res>,
  version: number,
  frame: Buffer
): Either.Either<{ correlationId: number; body: StructType<Res> }, DecodeError> => {
  const what = `${api.name}Response v${version}`
  try {
    const r = new Reader(frame)
    const { correlationId } = readResponseHeader(r, responseHeaderVersion(api, version))
    const body = api.response.codec(version).read(r)
    if (r.remaining !== 0)
      return Either.left(new DecodeError({ message: `${r.remaining} trailing bytes`, what, position: r.pos }))
    return Either.right({ correlationId, body })
  } catch (e) {
    return Either.left(toDecodeError(e, what))
  }
}
