/**
 * The classic-group records of `__consumer_offsets`, byte-compatible with what Kafka brokers write:
 * committed offsets (key type 1) and group metadata with its members (key type 2). Framed by
 * `CoordinatorRecord`: key = int16 key version + key struct (non-flexible), value = int16 value version
 * + value struct (flexible from v4); a null value is a tombstone. Owns schemas, union and factories;
 * the group coordinator owns replay. Other record types of that topic (consumer and share groups of
 * the newer protocols) decode to a `DecodeError` naming their type, so that readers can skip them.
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import * as CoordinatorRecord from "./CoordinatorRecord.js"
import { withDefaults } from "./internal/Defaults.js"
import { DecodeError, type EncodeError } from "./ProtocolError.js"
import * as S from "./Spec.js"

/** The key version Kafka writes for offset commits (v0 has the same layout and is still read). */
export const OFFSET_COMMIT_KEY_VERSION = 1
export const GROUP_METADATA_KEY_VERSION = 2
/** Value versions Kafka writes: v3 offsets (v1 only with an explicit expire timestamp), v3 groups. */
export const OFFSET_COMMIT_VALUE_VERSION = 3
export const GROUP_METADATA_VALUE_VERSION = 3

export const OffsetCommitKey = S.message({
  name: "OffsetCommitKey",
  type: "coordinator-key",
  validVersions: "0-1",
  flexibleVersions: "none",
  fields: [S.string("group"), S.string("topic"), S.int32("partition")]
})

export const OffsetCommitValue = S.message({
  name: "OffsetCommitValue",
  type: "coordinator-value",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.int64("offset"),
    S.int32("leaderEpoch", { versions: "3+", default: -1, ignorable: true }),
    S.string("metadata"),
    S.int64("commitTimestamp"),
    S.int64("expireTimestamp", { versions: "1", default: -1n, ignorable: true })
  ]
})

export const GroupMetadataKey = S.message({
  name: "GroupMetadataKey",
  type: "coordinator-key",
  validVersions: "2",
  flexibleVersions: "none",
  fields: [S.string("group", { versions: "2" })]
})

export const GroupMetadataValue = S.message({
  name: "GroupMetadataValue",
  type: "coordinator-value",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.string("protocolType"),
    S.int32("generation"),
    S.string("protocol", { nullableVersions: "0+" }),
    S.string("leader", { nullableVersions: "0+" }),
    S.int64("currentStateTimestamp", { versions: "2+", default: -1n, ignorable: true }),
    S.array("members", [
      S.string("memberId"),
      S.string("groupInstanceId", { versions: "3+", nullableVersions: "3+", default: null, ignorable: true }),
      S.string("clientId"),
      S.string("clientHost"),
      S.int32("rebalanceTimeout", { versions: "1+", default: -1, ignorable: true }),
      S.int32("sessionTimeout"),
      S.bytes("subscription"),
      S.bytes("assignment")
    ])
  ]
})

export type OffsetCommitKey = S.TypeOf<typeof OffsetCommitKey>
export type OffsetCommitValue = S.TypeOf<typeof OffsetCommitValue>
export type GroupMetadataKey = S.TypeOf<typeof GroupMetadataKey>
export type GroupMetadataValue = S.TypeOf<typeof GroupMetadataValue>

/** A value with the version it is (or will be) written at. */
export interface Versioned<A> {
  readonly version: number
  readonly data: A
}

/** One `__consumer_offsets` record; a null value is the tombstone of its key. */
export type GroupRecord =
  | {
      readonly type: "OffsetCommit"
      readonly key: OffsetCommitKey
      readonly value: Versioned<OffsetCommitValue> | null
    }
  | {
      readonly type: "GroupMetadata"
      readonly key: GroupMetadataKey
      readonly value: Versioned<GroupMetadataValue> | null
    }

export const offsetCommit = (
  key: OffsetCommitKey,
  value: S.InputOf<typeof OffsetCommitValue>,
  version: number = OFFSET_COMMIT_VALUE_VERSION
): GroupRecord => ({
  type: "OffsetCommit",
  key,
  value: { version, data: withDefaults(OffsetCommitValue.fields, value) }
})

/** Deletes a committed offset (expiry, group deletion, topic deletion). */
export const offsetCommitTombstone = (key: OffsetCommitKey): GroupRecord => ({ type: "OffsetCommit", key, value: null })

export const groupMetadata = (
  group: string,
  value: S.InputOf<typeof GroupMetadataValue>,
  version: number = GROUP_METADATA_VALUE_VERSION
): GroupRecord => ({
  type: "GroupMetadata",
  key: { group },
  value: { version, data: withDefaults(GroupMetadataValue.fields, value) }
})

/** Deletes a group. */
export const groupMetadataTombstone = (group: string): GroupRecord => ({
  type: "GroupMetadata",
  key: { group },
  value: null
})

/** The key and value bytes of a record (value null for a tombstone). */
export interface Encoded {
  readonly key: Buffer
  readonly value: Buffer | null
}

const orThrow = (e: Either.Either<Buffer, EncodeError>): Buffer =>
  Either.getOrElse(e, (err) => {
    throw err
  })

/**
 * Encodes a record. Fails only on values the types cannot rule out (a version the value does not
 * have, an over-long string): defects of the caller, thrown as `EncodeError`.
 */
export const encode = (record: GroupRecord): Encoded => {
  switch (record.type) {
    case "OffsetCommit":
      return {
        key: orThrow(
          CoordinatorRecord.encodeKey(OFFSET_COMMIT_KEY_VERSION, OffsetCommitKey, record.key, OFFSET_COMMIT_KEY_VERSION)
        ),
        value:
          record.value === null
            ? null
            : orThrow(CoordinatorRecord.encodeValue(record.value.version, OffsetCommitValue, record.value.data))
      }
    case "GroupMetadata":
      return {
        key: orThrow(
          CoordinatorRecord.encodeKey(
            GROUP_METADATA_KEY_VERSION,
            GroupMetadataKey,
            record.key,
            GROUP_METADATA_KEY_VERSION
          )
        ),
        value:
          record.value === null
            ? null
            : orThrow(CoordinatorRecord.encodeValue(record.value.version, GroupMetadataValue, record.value.data))
      }
  }
}

const fail = (message: string): Either.Either<never, DecodeError> =>
  Either.left(new DecodeError({ message, what: "GroupRecord", position: 0 }))

/** The value version prefix, checked against the versions `schema` has. */
const valueVersion = <Fs extends S.Fields>(schema: S.Message<Fs>, bytes: Buffer): Either.Either<number, DecodeError> =>
  Either.flatMap(CoordinatorRecord.readPrefix(bytes), (v) =>
    S.inRange(schema.validVersions, v) ? Either.right(v) : fail(`unsupported ${schema.name} version ${v}`)
  )

/** Decodes a (key, value) pair read from `__consumer_offsets`. */
export const decode = (keyBytes: Uint8Array, valueBytes: Uint8Array | null): Either.Either<GroupRecord, DecodeError> =>
  Either.gen(function* () {
    const kb = toBuffer(keyBytes)
    const keyVersion = yield* CoordinatorRecord.readPrefix(kb)
    const vb = valueBytes === null ? null : toBuffer(valueBytes)
    if (keyVersion === 0 || keyVersion === 1) {
      const key = yield* CoordinatorRecord.decodeBody(OffsetCommitKey, keyVersion, kb)
      if (vb === null) return { type: "OffsetCommit", key, value: null }
      const version = yield* valueVersion(OffsetCommitValue, vb)
      const data = yield* CoordinatorRecord.decodeBody(OffsetCommitValue, version, vb)
      return { type: "OffsetCommit", key, value: { version, data } }
    }
    if (keyVersion === 2) {
      const key = yield* CoordinatorRecord.decodeBody(GroupMetadataKey, keyVersion, kb)
      if (vb === null) return { type: "GroupMetadata", key, value: null }
      const version = yield* valueVersion(GroupMetadataValue, vb)
      const data = yield* CoordinatorRecord.decodeBody(GroupMetadataValue, version, vb)
      return { type: "GroupMetadata", key, value: { version, data } }
    }
    return yield* fail(`unknown record type ${keyVersion}`)
  })

const toBuffer = (b: Uint8Array): Buffer =>
  (globalThis.Buffer.isBuffer(b) ? b : globalThis.Buffer.from(b.buffer, b.byteOffset, b.byteLength)) as Buffer
