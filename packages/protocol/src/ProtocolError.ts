/**
 * Errors of the protocol package. Decoding never throws to callers: it fails with `DecodeError`.
 */
import { Data } from "effect"

/** Bytes that do not form a valid message at the given version. */
export class DecodeError extends Data.TaggedError("DecodeError")<{
  readonly message: string
  readonly what: string
  readonly position: number
}> {}

/** A value that cannot be written at the requested version (e.g. null in a non-nullable field). */
export class EncodeError extends Data.TaggedError("EncodeError")<{
  readonly message: string
  readonly what: string
}> {}

/** An API key or version this implementation does not know. */
export class UnsupportedVersionError extends Data.TaggedError("UnsupportedVersionError")<{
  readonly apiKey: number
  readonly apiVersion: number
}> {
  override get message(): string {
    return `unsupported API key ${this.apiKey} version ${this.apiVersion}`
  }
}
