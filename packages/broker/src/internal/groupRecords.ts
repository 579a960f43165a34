/**
 * The `__consumer_offsets` records the classic group coordinator writes and replays: OffsetCommit
 * (key type 1) and GroupMetadata (key type 2), in Kafka's key/value framing so that the log reads like
 * Kafka's own. It owns the record specs, the factories and the byte codec; it must not decide anything.
 *
 * OffsetCommitKey => Group Topic Partition                         (type 0-1)
 * OffsetCommitValue => Offset LeaderEpoch(v3+) Metadata CommitTimestamp ExpireTimestamp(v1)
 * GroupMetadataKey => Group                                        (type 2)
 * GroupMetadataValue => ProtocolType Generation Protocol Leader CurrentStateTimestamp(v2+)
 *   [MemberId GroupInstanceId(v3+) ClientId ClientHost RebalanceTimeout(v1+) SessionTimeout Subscription Assignment]
 */
import { CoordinatorRecord, ProtocolError, Spec as S } from "@clustermirror/protocol"
import { Either } from "effect"
import type { Buffer } from "node:buffer"

export const OffsetCommitKey = S.message({
  name: "OffsetCommitKey",
  type: "coordinator-key",
  validVersions: "0-1",
  flexibleVersions: "none",
  fields: [S.string("Group"), S.string("Topic"), S.int32("Partition")]
})

export const OffsetCommitValue = S.message({
  name: "OffsetCommitValue",
  type: "coordinator-value",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.int64("Offset"),
    S.int32("LeaderEpoch", { versions: "3+", default: -1, ignorable: true }),
    S.string("Metadata"),
    S.int64("CommitTimestamp"),
    S.int64("ExpireTimestamp", { versions: "1", default: -1n, ignorable: true })
  ]
})

export const GroupMetadataKey = S.message({
  name: "GroupMetadataKey",
  type: "coordinator-key",
  validVersions: "2",
  flexibleVersions: "none",
  fields: [S.string("Group", { versions: "2" })]
})

export const GroupMetadataValue = S.message({
  name: "GroupMetadataValue",
  type: "coordinator-value",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.string("ProtocolType"),
    S.int32("Generation"),
    S.string("Protocol", { nullableVersions: "0+" }),
    S.string("Leader", { nullableVersions: "0+" }),
    S.int64("CurrentStateTimestamp", { versions: "2+", default: -1n, ignorable: true }),
    S.array("Members", [
      S.string("MemberId"),
      S.string("GroupInstanceId", { versions: "3+", nullableVersions: "3+", default: null, ignorable: true }),
      S.string("ClientId"),
      S.string("ClientHost"),
      S.int32("RebalanceTimeout", { versions: "1+", default: -1, ignorable: true }),
      S.int32("SessionTimeout"),
      S.bytes("Subscription"),
      S.bytes("Assignment")
    ])
  ]
})

export type OffsetCommitValue = S.TypeOf<typeof OffsetCommitValue>
export type GroupMetadataValue = S.TypeOf<typeof GroupMetadataValue>
export type GroupMemberMetadata = GroupMetadataValue["members"][number]

/** Key types (the int16 prefix of a key). Type 0 is the pre-0.9 offset key, read but never written. */
const OFFSET_COMMIT_KEY_TYPES = [0, 1]
const GROUP_METADATA_KEY_TYPE = 2
/** Value versions written: the newest non-flexible ones, which every Kafka release since 2.3 reads. */
const OFFSET_COMMIT_VALUE_VERSION = 3
const GROUP_METADATA_VALUE_VERSION = 3

export interface OffsetCommitRecord {
  readonly _tag: "OffsetCommit"
  readonly groupId: string
  readonly topic: string
  readonly partition: number
  /** null: a tombstone (the committed offset is deleted). */
  readonly value: OffsetCommitValue | null
}

export interface GroupMetadataRecord {
  readonly _tag: "GroupMetadata"
  readonly groupId: string
  /** null: a tombstone (the group is deleted). */
  readonly value: GroupMetadataValue | null
}

export type GroupRecord = OffsetCommitRecord | GroupMetadataRecord

export const offsetCommit = (
  groupId: string,
  topic: string,
  partition: number,
  value: OffsetCommitValue | null
): OffsetCommitRecord => ({ _tag: "OffsetCommit", groupId, topic, partition, value })

export const groupMetadata = (groupId: string, value: GroupMetadataValue | null): GroupMetadataRecord => ({
  _tag: "GroupMetadata",
  groupId,
  value
})

export interface EncodedRecord {
  readonly key: Buffer
  readonly value: Buffer | null
}

/** Encodes a record; our own records always fit their schema, so a failure is a defect. */
export const encode = (record: GroupRecord): EncodedRecord => {
  switch (record._tag) {
    case "OffsetCommit":
      return {
        key: Either.getOrThrow(
          CoordinatorRecord.encodeKey(
            1,
            OffsetCommitKey,
            { group: record.groupId, topic: record.topic, partition: record.partition },
            1
          )
        ),
        value:
          record.value === null
            ? null
            : Either.getOrThrow(
                CoordinatorRecord.encodeValue(OFFSET_COMMIT_VALUE_VERSION, OffsetCommitValue, record.value)
              )
      }
    case "GroupMetadata":
      return {
        key: Either.getOrThrow(
          CoordinatorRecord.encodeKey(GROUP_METADATA_KEY_TYPE, GroupMetadataKey, { group: record.groupId }, 2)
        ),
        value:
          record.value === null
            ? null
            : Either.getOrThrow(
                CoordinatorRecord.encodeValue(GROUP_METADATA_VALUE_VERSION, GroupMetadataValue, record.value)
              )
      }
  }
}

/** Decodes a key/value pair; other coordinator record types (e.g. KIP-848 groups) are an error here. */
export const decode = (key: Buffer, value: Buffer | null): Either.Either<GroupRecord, ProtocolError.DecodeError> =>
  Either.gen(function* () {
    const type = yield* CoordinatorRecord.readPrefix(key)
    if (OFFSET_COMMIT_KEY_TYPES.includes(type)) {
      const k = yield* CoordinatorRecord.decodeBody(OffsetCommitKey, type, key)
      if (value === null) return offsetCommit(k.group, k.topic, k.partition, null)
      const version = yield* valueVersion(value, OffsetCommitValue)
      const v = yield* CoordinatorRecord.decodeBody(OffsetCommitValue, version, value)
      return offsetCommit(k.group, k.topic, k.partition, v)
    }
    if (type === GROUP_METADATA_KEY_TYPE) {
      const k = yield* CoordinatorRecord.decodeBody(GroupMetadataKey, type, key)
      if (value === null) return groupMetadata(k.group, null)
      const version = yield* valueVersion(value, GroupMetadataValue)
      const v = yield* CoordinatorRecord.decodeBody(GroupMetadataValue, version, value)
      return groupMetadata(k.group, v)
    }
    return yield* Either.left(
      new ProtocolError.DecodeError({ message: `unknown record type ${type}`, what: "GroupRecord", position: 0 })
    )
  })

const valueVersion = <Fs extends S.Fields>(
  value: Buffer,
  schema: S.Message<Fs>
): Either.Either<number, ProtocolError.DecodeError> =>
  Either.flatMap(CoordinatorRecord.readPrefix(value), (version) =>
    S.inRange(schema.validVersions, version)
      ? Either.right(version)
      : Either.left(
          new ProtocolError.DecodeError({ message: `unsupported version ${version}`, what: schema.name, position: 0 })
        )
  )
