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

/**
 * A value that does not fit its message's schema (an int32 out of range, a null where the field is not
 * nullable, a malformed UUID): found before encoding, naming the field by its path in the value.
 */
export class InvalidValue extends Data.TaggedError("InvalidValue")<{
  /** The message, e.g. "CreateClusterMirrorRequest". */
  readonly what: string
  /** The field's path in the value, e.g. "config[0].name"; empty for the value itself. */
  readonly field: string
  /** What is wrong with it. */
  readonly reason: string
}> {
  override get message(): string {
    return `${this.what}: ${this.field === "" ? "the value" : this.field}: ${this.reason}`
  }
}

/** An API key or version this implementation does not know. */
export class UnsupportedVersionError extends Data.TaggedError("UnsupportedVersionError")<{
  readonly apiKey: number
  readonly apiVersion: number
}> {
  override get message(): string {
    return `unsupported API key ${this.apiKey} version ${this.apiVersion}`
  }
}
