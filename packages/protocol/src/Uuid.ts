/**
 * Kafka UUIDs (topic IDs, incarnation IDs, ACL IDs) in their string form: 16 bytes as URL-safe base64
 * without padding (22 characters), which is how values of the `uuid` wire type appear everywhere in
 * this package. Owns generation by Kafka's rules and conversion to and from bytes; the byte codec
 * itself lives with the other wire primitives.
 */
import { Either } from "effect"
import { randomBytes } from "node:crypto"
import { uuidFromString, uuidToString, ZERO_UUID } from "./internal/Bytes.js"
import { DecodeError } from "./ProtocolError.js"

export type Uuid = string

/** The all-zero UUID: "no ID" (e.g. an unknown source topic ID). */
export const ZERO: Uuid = ZERO_UUID

/** UUID 0…01, reserved for the metadata topic. */
export const METADATA_TOPIC_ID: Uuid = "AAAAAAAAAAAAAAAAAAAAAQ"

/** UUIDs `random` never returns. */
export const RESERVED: ReadonlySet<Uuid> = new Set([ZERO, METADATA_TOPIC_ID])

const CANONICAL = /^[A-Za-z0-9_-]{21}[AQgw]$/

/**
 * Whether `s` is a UUID in Kafka's canonical string form: 22 base64url characters whose last one
 * carries no stray bits (so that bytes → string → bytes is the identity).
 */
export const isValid = (s: string): boolean => CANONICAL.test(s)

/**
 * A random (version 4) UUID that is not reserved and whose string form does not start with "-",
 * which command-line tools would take for an option.
 */
export const random = (): Uuid => {
  for (;;) {
    const b = randomBytes(16)
    // Version and variant bits as the JVM's random UUIDs carry them.
    b[6] = (b[6]! & 0x0f) | 0x40
    b[8] = (b[8]! & 0x3f) | 0x80
    const s = uuidToString(b)
    if (!RESERVED.has(s) && !s.startsWith("-")) return s
  }
}

/** The 16 bytes of a UUID string; a typed error for anything but the canonical form. */
export const toBytes = (uuid: Uuid): Either.Either<Uint8Array, DecodeError> =>
  isValid(uuid)
    ? Either.right(uuidFromString(uuid))
    : Either.left(new DecodeError({ message: `invalid uuid "${uuid}"`, what: "Uuid", position: 0 }))

/** The string form of 16 bytes; a typed error for any other length. */
export const fromBytes = (bytes: Uint8Array): Either.Either<Uuid, DecodeError> =>
  bytes.length === 16
    ? Either.right(uuidToString(bytes))
    : Either.left(new DecodeError({ message: `uuid needs 16 bytes, got ${bytes.length}`, what: "Uuid", position: 0 }))
