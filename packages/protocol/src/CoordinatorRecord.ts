/**
 * The key/value framing of coordinator records (`__consumer_offsets`, `__mirror_state`).
 *
 * Key bytes: int16 record type (the key schema's version number on the wire) then the key struct in
 * non-flexible encoding. Value bytes: int16 value version then the value struct (flexible where the
 * value schema's flexible versions include it). A null value is a tombstone.
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import { Reader, Writer } from "./internal/Bytes.js"
import { DecodeError, EncodeError } from "./ProtocolError.js"
import { type Fields, type Message, type StructInput, type StructType, toDecodeError } from "./Spec.js"

/** Encodes a record key: int16 `type`, then `body` as `schema` at key version 0 (or `version`). */
export const encodeKey = <Fs extends Fields>(
  type: number,
  schema: Message<Fs>,
  body: StructInput<Fs>,
  version = 0
): Either.Either<Buffer, EncodeError> => frame(type, schema, body, version)

/** Encodes a record value: int16 `version`, then `body` as `schema` at that version. */
export const encodeValue = <Fs extends Fields>(
  version: number,
  schema: Message<Fs>,
  body: StructInput<Fs>
): Either.Either<Buffer, EncodeError> => frame(version, schema, body, version)

const frame = <Fs extends Fields>(
  prefix: number,
  schema: Message<Fs>,
  body: StructInput<Fs>,
  version: number
): Either.Either<Buffer, EncodeError> => {
  try {
    const w = new Writer(64)
    w.int16(prefix)
    schema.codec(version).write(w, body)
    return Either.right(w.finish())
  } catch (e) {
    return Either.left(new EncodeError({ message: (e as Error).message, what: schema.name }))
  }
}

/** The int16 prefix of a key (record type) or value (version); a typed error when too short. */
export const readPrefix = (bytes: Buffer): Either.Either<number, DecodeError> =>
  bytes.length < 2
    ? Either.left(new DecodeError({ message: "record shorter than 2 bytes", what: "CoordinatorRecord", position: 0 }))
    : Either.right(bytes.readInt16BE(0))

/** Decodes the struct after the int16 prefix as `schema` at `version`. */
export const decodeBody = <Fs extends Fields>(
  schema: Message<Fs>,
  version: number,
  bytes: Buffer
): Either.Either<StructType<Fs>, DecodeError> => {
  try {
    const r = new Reader(bytes, 2)
    const value = schema.codec(version).read(r)
    if (r.remaining !== 0)
      return Either.left(
        new DecodeError({ message: `${r.remaining} trailing bytes`, what: schema.name, position: r.pos })
      )
    return Either.right(value)
  } catch (e) {
    return Either.left(toDecodeError(e, `${schema.name} v${version}`))
  }
}
