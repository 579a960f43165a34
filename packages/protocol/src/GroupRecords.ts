/**
 * The classic-group records of `__consumer_offsets`, byte-compatible with what Kafka brokers write:
 * committed offsets (key type 1) and group metadata with its members (key type 2). Framed by
 * `CoordinatorRecord`: key = int16 key version + key struct (non-flexible), value = int16 value version
 * + value struct (flexible from v4); a null value is a tombstone. Consumer groups of the KIP-848
 * protocol (key types 3-8: group epoch, partition metadata, member metadata, target assignment epoch,
 * target assignment of a member, current assignment of a member; key type 16: what a subscribed regular
 * expression resolved to) have v0 keys and flexible v0 values. Owns schemas, union and factories; the
 * group coordinator owns replay. Other record types of that topic (share and streams groups) decode to
 * a `DecodeError` naming their type.
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

const groupKey = (name: string) =>
  S.message({
    name,
    type: "coordinator-key",
    validVersions: "0",
    flexibleVersions: "none",
    fields: [S.string("groupId")]
  })
const memberKey = (name: string) =>
  S.message({
    name,
    type: "coordinator-key",
    validVersions: "0",
    flexibleVersions: "none",
    fields: [S.string("groupId"), S.string("memberId")]
  })
const value = <const Fs extends S.Fields>(name: string, fields: Fs) =>
  S.message({ name, type: "coordinator-value", validVersions: "0", flexibleVersions: "0+", fields })
const TopicPartitions = [S.uuid("topicId"), S.array("partitions", "int32")] as const

/** Key type 3: the group epoch of a consumer group. */
export const ConsumerGroupMetadataKey = groupKey("ConsumerGroupMetadataKey")
export const ConsumerGroupMetadataValue = value("ConsumerGroupMetadataValue", [
  S.int32("epoch"),
  S.int64("metadataHash", { taggedVersions: "0+", tag: 0, default: 0n })
])
/** Key type 4: the subscribed topics' metadata (older writers; read, not written). */
export const ConsumerGroupPartitionMetadataKey = groupKey("ConsumerGroupPartitionMetadataKey")
export const ConsumerGroupPartitionMetadataValue = value("ConsumerGroupPartitionMetadataValue", [
  S.array("topics", [
    S.uuid("topicId"),
    S.string("topicName"),
    S.int32("numPartitions"),
    S.array("partitionMetadata", [S.int32("partition"), S.array("racks", "string")])
  ])
])
/** Key type 5: a member's subscription and client. */
export const ConsumerGroupMemberMetadataKey = memberKey("ConsumerGroupMemberMetadataKey")
export const ConsumerGroupMemberMetadataValue = value("ConsumerGroupMemberMetadataValue", [
  S.string("instanceId", { nullableVersions: "0+" }),
  S.string("rackId", { nullableVersions: "0+" }),
  S.string("clientId"),
  S.string("clientHost"),
  S.array("subscribedTopicNames", "string"),
  S.string("subscribedTopicRegex", { nullableVersions: "0+" }),
  S.int32("rebalanceTimeoutMs", { default: -1 }),
  S.string("serverAssignor", { nullableVersions: "0+" }),
  S.struct(
    "classicMemberMetadata",
    [S.int32("sessionTimeoutMs"), S.array("supportedProtocols", [S.string("name"), S.bytes("metadata")])],
    { nullableVersions: "0+", default: null, taggedVersions: "0+", tag: 0 }
  )
])
/** Key type 6: the epoch of the group's target assignment. */
export const ConsumerGroupTargetAssignmentMetadataKey = groupKey("ConsumerGroupTargetAssignmentMetadataKey")
export const ConsumerGroupTargetAssignmentMetadataValue = value("ConsumerGroupTargetAssignmentMetadataValue", [
  S.int32("assignmentEpoch"),
  S.int64("assignmentTimestamp", { taggedVersions: "0+", tag: 0, default: -1n })
])
/** Key type 7: a member's target assignment. */
export const ConsumerGroupTargetAssignmentMemberKey = memberKey("ConsumerGroupTargetAssignmentMemberKey")
export const ConsumerGroupTargetAssignmentMemberValue = value("ConsumerGroupTargetAssignmentMemberValue", [
  S.array("topicPartitions", TopicPartitions)
])
/** Key type 8: a member's current assignment, epoch and reconciliation state. */
export const ConsumerGroupCurrentMemberAssignmentKey = memberKey("ConsumerGroupCurrentMemberAssignmentKey")
export const ConsumerGroupCurrentMemberAssignmentValue = value("ConsumerGroupCurrentMemberAssignmentValue", [
  S.int32("memberEpoch"),
  S.int32("previousMemberEpoch"),
  /** Kafka's MemberState: 0 unknown, 1 stable, 2 unrevoked partitions, 3 unreleased partitions. */
  S.int8("state"),
  S.array("assignedPartitions", TopicPartitions),
  S.array("partitionsPendingRevocation", TopicPartitions)
])

/** Key type 16: the topics a regular expression subscribed to in the group resolved to. */
export const ConsumerGroupRegularExpressionKey = S.message({
  name: "ConsumerGroupRegularExpressionKey",
  type: "coordinator-key",
  validVersions: "0",
  flexibleVersions: "none",
  fields: [S.string("groupId"), S.string("regularExpression")]
})
export const ConsumerGroupRegularExpressionValue = value("ConsumerGroupRegularExpressionValue", [
  S.array("topics", "string"),
  /** The version of the metadata the expression was resolved against. */
  S.int64("version"),
  /** When it was resolved (ms). */
  S.int64("timestamp")
])

export type GroupKey = S.TypeOf<typeof ConsumerGroupMetadataKey>
export type MemberKey = S.TypeOf<typeof ConsumerGroupMemberMetadataKey>
export type ConsumerGroupMetadataValue = S.TypeOf<typeof ConsumerGroupMetadataValue>
export type ConsumerGroupPartitionMetadataValue = S.TypeOf<typeof ConsumerGroupPartitionMetadataValue>
export type ConsumerGroupMemberMetadataValue = S.TypeOf<typeof ConsumerGroupMemberMetadataValue>
export type ConsumerGroupTargetAssignmentMetadataValue = S.TypeOf<typeof ConsumerGroupTargetAssignmentMetadataValue>
export type ConsumerGroupTargetAssignmentMemberValue = S.TypeOf<typeof ConsumerGroupTargetAssignmentMemberValue>
export type ConsumerGroupCurrentMemberAssignmentValue = S.TypeOf<typeof ConsumerGroupCurrentMemberAssignmentValue>
export type ConsumerGroupRegularExpressionKey = S.TypeOf<typeof ConsumerGroupRegularExpressionKey>
export type ConsumerGroupRegularExpressionValue = S.TypeOf<typeof ConsumerGroupRegularExpressionValue>

/** The record types of consumer groups, by key type, with their schemas. */
export const consumerGroupTypes = {
  ConsumerGroupMetadata: { keyType: 3, key: ConsumerGroupMetadataKey, value: ConsumerGroupMetadataValue },
  ConsumerGroupPartitionMetadata: {
    keyType: 4,
    key: ConsumerGroupPartitionMetadataKey,
    value: ConsumerGroupPartitionMetadataValue
  },
  ConsumerGroupMemberMetadata: {
    keyType: 5,
    key: ConsumerGroupMemberMetadataKey,
    value: ConsumerGroupMemberMetadataValue
  },
  ConsumerGroupTargetAssignmentMetadata: {
    keyType: 6,
    key: ConsumerGroupTargetAssignmentMetadataKey,
    value: ConsumerGroupTargetAssignmentMetadataValue
  },
  ConsumerGroupTargetAssignmentMember: {
    keyType: 7,
    key: ConsumerGroupTargetAssignmentMemberKey,
    value: ConsumerGroupTargetAssignmentMemberValue
  },
  ConsumerGroupCurrentMemberAssignment: {
    keyType: 8,
    key: ConsumerGroupCurrentMemberAssignmentKey,
    value: ConsumerGroupCurrentMemberAssignmentValue
  },
  ConsumerGroupRegularExpression: {
    keyType: 16,
    key: ConsumerGroupRegularExpressionKey,
    value: ConsumerGroupRegularExpressionValue
  }
} as const

export type ConsumerGroupRecordType = keyof typeof consumerGroupTypes

/** A consumer-group record: its key and its v0 value (null = tombstone). */
export type ConsumerGroupRecord = {
  [T in ConsumerGroupRecordType]: {
    readonly type: T
    readonly key: S.TypeOf<(typeof consumerGroupTypes)[T]["key"]>
    readonly value: Versioned<S.TypeOf<(typeof consumerGroupTypes)[T]["value"]>> | null
  }
}[ConsumerGroupRecordType]

/** A consumer-group record of `type`; `value` null writes its tombstone. */
export const consumerGroupRecord = <T extends ConsumerGroupRecordType>(
  type: T,
  key: S.TypeOf<(typeof consumerGroupTypes)[T]["key"]>,
  value: S.InputOf<(typeof consumerGroupTypes)[T]["value"]> | null
): Extract<ConsumerGroupRecord, { type: T }> => {
  const schema = consumerGroupTypes[type].value as unknown as S.Message<S.Fields>
  return {
    type,
    key,
    value: value === null ? null : { version: 0, data: withDefaults(schema.fields, value as never) }
  } as unknown as Extract<ConsumerGroupRecord, { type: T }>
}

const consumerGroupByKeyType: ReadonlyMap<number, ConsumerGroupRecordType> = new Map(
  (Object.keys(consumerGroupTypes) as Array<ConsumerGroupRecordType>).map((t) => [consumerGroupTypes[t].keyType, t])
)

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
  | ConsumerGroupRecord

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
    default: {
      const t = consumerGroupTypes[record.type]
      const key = t.key as unknown as S.Message<S.Fields>
      const value = t.value as unknown as S.Message<S.Fields>
      return {
        key: orThrow(CoordinatorRecord.encodeKey(t.keyType, key, record.key as never)),
        value:
          record.value === null
            ? null
            : orThrow(CoordinatorRecord.encodeValue(record.value.version, value, record.value.data as never))
      }
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
    const type = consumerGroupByKeyType.get(keyVersion)
    if (type === undefined) return yield* fail(`unknown record type ${keyVersion}`)
    const schemas = consumerGroupTypes[type]
    const key = yield* CoordinatorRecord.decodeBody(schemas.key as unknown as S.Message<S.Fields>, 0, kb)
    if (vb === null) return { type, key, value: null } as unknown as GroupRecord
    const version = yield* valueVersion(schemas.value as unknown as S.Message<S.Fields>, vb)
    const data = yield* CoordinatorRecord.decodeBody(schemas.value as unknown as S.Message<S.Fields>, version, vb)
    return { type, key, value: { version, data } } as unknown as GroupRecord
  })

const toBuffer = (b: Uint8Array): Buffer =>
  (globalThis.Buffer.isBuffer(b) ? b : globalThis.Buffer.from(b.buffer, b.byteOffset, b.byteLength)) as Buffer
