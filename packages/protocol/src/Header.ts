/**
 * Request and response headers (request v0-v2, response v0-v1) and size-prefixed framing.
 *
 * Request header v1+ carries `ClientId` as a classic nullable string even in v2 (flexible), then a
 * tagged-field section in v2. Response header v1 adds a tagged-field section.
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import { Reader, type Writer } from "./internal/Bytes.js"
import { DecodeError } from "./ProtocolError.js"
import { toDecodeError } from "./Spec.js"

export interface RequestHeader {
  readonly apiKey: number
  readonly apiVersion: number
  readonly correlationId: number
  readonly clientId: string | null
}

/** Reads the header fields common to every request version (apiKey, apiVersion, correlationId). */
export const peekRequestHeader = (
  frame: Buffer
): Either.Either<{ apiKey: number; apiVersion: number; correlationId: number }, DecodeError> => {
  if (frame.length < 8)
    return Either.left(new DecodeError({ message: "request shorter than 8 bytes", what: "RequestHeader", position: 0 }))
  return Either.right({
    apiKey: frame.readInt16BE(0),
    apiVersion: frame.readInt16BE(2),
    correlationId: frame.readInt32BE(4)
  })
}

/** Reads a request header of `headerVersion` from the reader. */
export const readRequestHeader = (r: Reader, headerVersion: number): RequestHeader => {
  const apiKey = r.int16()
  const apiVersion = r.int16()
  const correlationId = r.int32()
  const clientId = headerVersion >= 1 ? r.string() : null
  if (headerVersion >= 2) skipTaggedFields(r)
  return { apiKey, apiVersion, correlationId, clientId }
}

export const writeRequestHeader = (w: Writer, h: RequestHeader, headerVersion: number): void => {
  w.int16(h.apiKey)
  w.int16(h.apiVersion)
  w.int32(h.correlationId)
  if (headerVersion >= 1) w.string(h.clientId)
  if (headerVersion >= 2) w.uvarint(0)
}

export const readResponseHeader = (r: Reader, headerVersion: number): { correlationId: number } => {
  const correlationId = r.int32()
  if (headerVersion >= 1) skipTaggedFields(r)
  return { correlationId }
}

export const writeResponseHeader = (w: Writer, correlationId: number, headerVersion: number): void => {
  w.int32(correlationId)
  if (headerVersion >= 1) w.uvarint(0)
}

export const skipTaggedFields = (r: Reader): void => {
  const n = r.uvarint()
  for (let i = 0; i < n; i++) {
    r.uvarint()
    const size = r.uvarint()
    r.bytes(size)
  }
}

export const decodeRequestHeader = (
  frame: Buffer,
  headerVersion: number
): Either.Either<RequestHeader, DecodeError> => {
  try {
    return Either.right(readRequestHeader(new Reader(frame), headerVersion))
  } catch (e) {
    return Either.left(toDecodeError(e, `RequestHeader v${headerVersion}`))
  }
}

/** Default cap on a frame's size (Kafka's socket.request.max.bytes default). */
export const DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024

/**
 * Incremental frame splitter for a byte stream of int32-size-prefixed frames. `push` returns the
 * complete frames; a negative size or one above `maxFrameBytes` is reported as an error.
 */
export class FrameDecoder {
  private pending: Buffer[] = []
  private pendingBytes = 0
  /** Bytes needed before the next frame can complete (4 until its size is known). */
  private need = 4
  constructor(readonly maxFrameBytes: number = DEFAULT_MAX_FRAME_BYTES) {}

  push(chunk: Buffer): Either.Either<Buffer[], DecodeError> {
    this.pending.push(chunk)
    this.pendingBytes += chunk.length
    if (this.pendingBytes < this.need) return Either.right([])
    const buf =
      this.pending.length === 1
        ? this.pending[0]!
        : (globalThis.Buffer.concat(this.pending, this.pendingBytes) as Buffer)
    this.pending = []
    this.pendingBytes = 0
    const frames: Buffer[] = []
    let pos = 0
    this.need = 4
    while (buf.length - pos >= 4) {
      const size = buf.readInt32BE(pos)
      if (size < 0 || size > this.maxFrameBytes)
        return Either.left(
          new DecodeError({
            message: `frame size ${size} outside 0..${this.maxFrameBytes}`,
            what: "Frame",
            position: pos
          })
        )
      if (buf.length - pos - 4 < size) {
        this.need = size + 4
        break
      }
      frames.push(buf.subarray(pos + 4, pos + 4 + size))
      pos += 4 + size
    }
    if (pos < buf.length) {
      const rest = buf.subarray(pos)
      this.pending.push(rest)
      this.pendingBytes = rest.length
    }
    return Either.right(frames)
  }
}
