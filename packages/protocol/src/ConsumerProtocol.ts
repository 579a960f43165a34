/**
 * The consumer protocol's embedded data: the `Subscription` a member puts in JoinGroup's protocol
 * metadata and the `Assignment` the leader hands out through SyncGroup. Both travel as opaque bytes
 * in the group APIs, framed as an int16 version followed by the struct. This module encodes and
 * decodes those bytes; it must not assign partitions.
 *
 * Subscription => Version [Topics] UserData [OwnedPartitions: Topic [Partitions]](v1+) GenerationId(v2+)
 *   RackId(v3+)
 * Assignment => Version [AssignedPartitions: Topic [Partitions]] UserData
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import { Reader, Writer } from "./internal/Bytes.js"
import { DecodeError, EncodeError } from "./ProtocolError.js"
import * as S from "./Spec.js"

export const SubscriptionMessage = S.message({
  name: "ConsumerProtocolSubscription",
  type: "data",
  validVersions: "0-3",
  flexibleVersions: "none",
  fields: [
    S.array("Topics", "string"),
    S.bytes("UserData", { nullableVersions: "0+", default: null }),
    S.array(
      "OwnedPartitions",
      [S.string("Topic", { versions: "1+", mapKey: true }), S.array("Partitions", "int32", { versions: "1+" })],
      { versions: "1+", ignorable: true }
    ),
    S.int32("GenerationId", { versions: "2+", default: -1, ignorable: true }),
    S.string("RackId", { versions: "3+", nullableVersions: "3+", default: null, ignorable: true })
  ]
})

export const AssignmentMessage = S.message({
  name: "ConsumerProtocolAssignment",
  type: "data",
  validVersions: "0-3",
  flexibleVersions: "none",
  fields: [
    S.array("AssignedPartitions", [S.string("Topic", { mapKey: true }), S.array("Partitions", "int32")]),
    S.bytes("UserData", { nullableVersions: "0+", default: null })
  ]
})

export type Subscription = S.TypeOf<typeof SubscriptionMessage>
export type Assignment = S.TypeOf<typeof AssignmentMessage>

/** The highest version of both structs this module knows. */
export const LATEST_VERSION = 3

const encodeFramed = <Fs extends S.Fields>(
  m: S.Message<Fs>,
  version: number,
  value: S.StructInput<Fs>
): Either.Either<Buffer, EncodeError> => {
  const what = `${m.name} v${version}`
  if (!S.inRange(m.validVersions, version))
    return Either.left(new EncodeError({ message: "unsupported version", what }))
  try {
    const w = new Writer()
    w.int16(version)
    m.codec(version).write(w, value)
    return Either.right(w.finish())
  } catch (e) {
    return Either.left(new EncodeError({ message: e instanceof Error ? e.message : String(e), what }))
  }
}

/**
 * Reads the version, then the struct. A version above the latest is read as the latest and the
 * bytes after it are ignored: newer versions only append fields, and members of a group may run
 * newer clients than the one reading.
 */
const decodeFramed = <Fs extends S.Fields>(
  m: S.Message<Fs>,
  bytes: Uint8Array
): Either.Either<S.StructType<Fs>, DecodeError> => {
  try {
    const r = new Reader(toBuffer(bytes))
    const version = r.int16()
    if (version < 0)
      return Either.left(new DecodeError({ message: `negative version ${version}`, what: m.name, position: 0 }))
    return Either.right(m.codec(Math.min(version, LATEST_VERSION)).read(r))
  } catch (e) {
    return Either.left(S.toDecodeError(e, m.name))
  }
}

const toBuffer = (b: Uint8Array): Buffer =>
  globalThis.Buffer.isBuffer(b) ? b : globalThis.Buffer.from(b.buffer, b.byteOffset, b.byteLength)

/** Encodes a subscription as JoinGroup protocol metadata at `version` (0-3). */
export const encodeSubscription = (
  version: number,
  value: S.InputOf<typeof SubscriptionMessage>
): Either.Either<Buffer, EncodeError> => encodeFramed(SubscriptionMessage, version, value)

/** Decodes JoinGroup protocol metadata of the "consumer" protocol type. */
export const decodeSubscription = (bytes: Uint8Array): Either.Either<Subscription, DecodeError> =>
  decodeFramed(SubscriptionMessage, bytes)

/** Encodes an assignment as a SyncGroup member assignment at `version` (0-3). */
export const encodeAssignment = (
  version: number,
  value: S.InputOf<typeof AssignmentMessage>
): Either.Either<Buffer, EncodeError> => encodeFramed(AssignmentMessage, version, value)

/** Decodes a SyncGroup member assignment of the "consumer" protocol type. */
export const decodeAssignment = (bytes: Uint8Array): Either.Either<Assignment, DecodeError> =>
  decodeFramed(AssignmentMessage, bytes)
