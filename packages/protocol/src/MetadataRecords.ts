/**
 * KRaft metadata records as they appear in the metadata log and in snapshots: their specs, a tagged
 * union of decoded records, and the record frame Kafka writes around each one:
 *
 *   MetadataRecord => FrameVersion(uvarint, always 1) Type(uvarint apiKey) Version(uvarint) Data
 *
 * Data is the record struct in flexible encoding (every metadata record is flexible from v0). This
 * module owns the bytes of one record value; batching, offsets and replay belong to metadata-log and
 * controller. MirrorTopicStateChangeRecord (29) and PartitionChangeRecord v3 are KIP-1279's additions.
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import { withDefaults } from "./internal/Defaults.js"
import { Reader, Writer } from "./internal/Bytes.js"
import * as MirrorPartitionState from "./MirrorPartitionState.js"
import { DecodeError, EncodeError } from "./ProtocolError.js"
import * as S from "./Spec.js"

const record = <const Fs extends S.Fields>(name: string, apiKey: number, validVersions: string, fields: Fs) =>
  S.message({ name, apiKey, type: "metadata", validVersions, flexibleVersions: "0+", fields })

// ---------------------------------------------------------------------------------------------------
// Brokers

export const RegisterBrokerRecord = record("RegisterBrokerRecord", 0, "0-3", [
  S.int32("BrokerId"),
  S.bool("IsMigratingZkBroker", { versions: "2+", default: false }),
  S.uuid("IncarnationId"),
  S.int64("BrokerEpoch"),
  S.array("EndPoints", [
    S.string("Name", { mapKey: true }),
    S.string("Host"),
    S.uint16("Port"),
    S.int16("SecurityProtocol")
  ]),
  S.array("Features", [
    S.string("Name", { mapKey: true }),
    S.int16("MinSupportedVersion"),
    S.int16("MaxSupportedVersion")
  ]),
  S.string("Rack", { nullableVersions: "0+" }),
  S.bool("Fenced", { default: true }),
  S.bool("InControlledShutdown", { versions: "1+", default: false }),
  S.array("LogDirs", "uuid", { versions: "3+", taggedVersions: "3+", tag: 0 })
])

export const UnregisterBrokerRecord = record("UnregisterBrokerRecord", 1, "0", [
  S.int32("BrokerId"),
  S.int64("BrokerEpoch")
])

export const FenceBrokerRecord = record("FenceBrokerRecord", 7, "0", [S.int32("Id"), S.int64("Epoch")])

export const UnfenceBrokerRecord = record("UnfenceBrokerRecord", 8, "0", [S.int32("Id"), S.int64("Epoch")])

export const BrokerRegistrationChangeRecord = record("BrokerRegistrationChangeRecord", 17, "0-2", [
  S.int32("BrokerId"),
  S.int64("BrokerEpoch"),
  // -1 unfenced, 0 no change, 1 fenced.
  S.int8("Fenced", { taggedVersions: "0+", tag: 0 }),
  // 0 no change, 1 in controlled shutdown.
  S.int8("InControlledShutdown", { versions: "1+", taggedVersions: "1+", tag: 1 }),
  S.array("LogDirs", "uuid", { versions: "2+", taggedVersions: "2+", tag: 2 })
])

// ---------------------------------------------------------------------------------------------------
// Topics and partitions

export const TopicRecord = record("TopicRecord", 2, "0", [S.string("Name"), S.uuid("TopicId")])

export const PartitionRecord = record("PartitionRecord", 3, "0-2", [
  S.int32("PartitionId", { default: -1 }),
  S.uuid("TopicId"),
  S.array("Replicas", "int32"),
  S.array("Isr", "int32"),
  S.array("RemovingReplicas", "int32"),
  S.array("AddingReplicas", "int32"),
  S.int32("Leader", { default: -1 }),
  S.int8("LeaderRecoveryState", { default: 0, taggedVersions: "0+", tag: 0 }),
  S.int32("LeaderEpoch", { default: -1 }),
  S.int32("PartitionEpoch", { default: -1 }),
  S.array("Directories", "uuid", { versions: "1+" }),
  S.array("EligibleLeaderReplicas", "int32", {
    versions: "2+",
    nullableVersions: "2+",
    taggedVersions: "2+",
    tag: 1,
    default: null
  }),
  S.array("LastKnownElr", "int32", {
    versions: "2+",
    nullableVersions: "2+",
    taggedVersions: "2+",
    tag: 2,
    default: null
  })
])

/**
 * A change to one partition; absent (default) fields did not change. v3 (KIP-1279) carries the new
 * leader epoch explicitly, so that an epoch can be bumped without a leader change.
 */
export const PartitionChangeRecord = record("PartitionChangeRecord", 5, "0-3", [
  S.int32("PartitionId", { default: -1 }),
  S.uuid("TopicId"),
  // -1 when the epoch did not change. Older versions imply "+1 on leader change" instead.
  S.int32("LeaderEpoch", { versions: "3+", default: -1 }),
  S.array("Isr", "int32", { nullableVersions: "0+", taggedVersions: "0+", tag: 0, default: null }),
  // -1 no leader, -2 unchanged.
  S.int32("Leader", { default: -2, taggedVersions: "0+", tag: 1 }),
  S.array("Replicas", "int32", { nullableVersions: "0+", taggedVersions: "0+", tag: 2, default: null }),
  S.array("RemovingReplicas", "int32", { nullableVersions: "0+", taggedVersions: "0+", tag: 3, default: null }),
  S.array("AddingReplicas", "int32", { nullableVersions: "0+", taggedVersions: "0+", tag: 4, default: null }),
  S.int8("LeaderRecoveryState", { default: -1, taggedVersions: "0+", tag: 5 }),
  S.array("Directories", "uuid", {
    versions: "1+",
    nullableVersions: "1+",
    taggedVersions: "1+",
    tag: 8,
    default: null
  }),
  S.array("EligibleLeaderReplicas", "int32", {
    versions: "2+",
    nullableVersions: "2+",
    taggedVersions: "2+",
    tag: 6,
    default: null
  }),
  S.array("LastKnownElr", "int32", {
    versions: "2+",
    nullableVersions: "2+",
    taggedVersions: "2+",
    tag: 7,
    default: null
  })
])

export const RemoveTopicRecord = record("RemoveTopicRecord", 9, "0", [S.uuid("TopicId")])

/** KIP-1279: a topic's desired mirror state; a null mirror name disassociates the topic. */
export const MirrorTopicStateChangeRecord = record("MirrorTopicStateChangeRecord", 29, "0", [
  S.uuid("TopicId"),
  S.string("MirrorName", { nullableVersions: "0+" }),
  // A MirrorPartitionState byte: MIRRORING, PAUSED, STOPPED, or UNKNOWN on mirror deletion.
  S.int8("DesiredState")
])

// ---------------------------------------------------------------------------------------------------
// Configuration, features, ACLs, producer IDs, transactions

/** A null value deletes the key. Mirror configs use resource type 64 (CLUSTER_MIRROR). */
export const ConfigRecord = record("ConfigRecord", 4, "0", [
  S.int8("ResourceType"),
  S.string("ResourceName"),
  S.string("Name"),
  S.string("Value", { nullableVersions: "0+" })
])

export const FeatureLevelRecord = record("FeatureLevelRecord", 12, "0", [S.string("Name"), S.int16("FeatureLevel")])

export const ProducerIdsRecord = record("ProducerIdsRecord", 15, "0", [
  S.int32("BrokerId"),
  S.int64("BrokerEpoch", { default: -1n }),
  // The first producer ID of the next block.
  S.int64("NextProducerId")
])

export const AccessControlEntryRecord = record("AccessControlEntryRecord", 18, "0", [
  S.uuid("Id"),
  S.int8("ResourceType"),
  S.string("ResourceName"),
  S.int8("PatternType"),
  S.string("Principal"),
  S.string("Host"),
  S.int8("Operation"),
  S.int8("PermissionType")
])

export const RemoveAccessControlEntryRecord = record("RemoveAccessControlEntryRecord", 19, "0", [S.uuid("Id")])

/** A user's SCRAM credential for one mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), as RFC 5802 stores it. */
export const UserScramCredentialRecord = record("UserScramCredentialRecord", 11, "0", [
  S.string("Name"),
  S.int8("Mechanism"),
  S.bytes("Salt"),
  S.bytes("StoredKey"),
  S.bytes("ServerKey"),
  S.int32("Iterations")
])

export const RemoveUserScramCredentialRecord = record("RemoveUserScramCredentialRecord", 22, "0", [
  S.string("Name"),
  S.int8("Mechanism")
])

/**
 * One client quota of an entity (user, client-id, or ip; a null name is the entity type's default):
 * set to `Value`, or removed when `Remove` is true.
 */
export const ClientQuotaRecord = record("ClientQuotaRecord", 14, "0", [
  S.array("Entity", [S.string("EntityType"), S.string("EntityName", { nullableVersions: "0+" })]),
  S.string("Key"),
  S.float64("Value"),
  S.bool("Remove")
])

export const NoOpRecord = record("NoOpRecord", 20, "0", [])

/** Starts a metadata transaction: the records up to EndTransactionRecord apply atomically. */
export const BeginTransactionRecord = record("BeginTransactionRecord", 23, "0", [
  S.string("Name", { nullableVersions: "0+", taggedVersions: "0+", tag: 0, default: null })
])

export const EndTransactionRecord = record("EndTransactionRecord", 24, "0", [])

/** Ends a metadata transaction without applying it: readers drop the records since its Begin. */
export const AbortTransactionRecord = record("AbortTransactionRecord", 25, "0", [
  S.string("Reason", { nullableVersions: "0+", taggedVersions: "0+", tag: 0, default: null })
])

// ---------------------------------------------------------------------------------------------------
// The union

const catalog = {
  RegisterBrokerRecord,
  UnregisterBrokerRecord,
  TopicRecord,
  PartitionRecord,
  ConfigRecord,
  PartitionChangeRecord,
  FenceBrokerRecord,
  UnfenceBrokerRecord,
  RemoveTopicRecord,
  FeatureLevelRecord,
  ProducerIdsRecord,
  BrokerRegistrationChangeRecord,
  AccessControlEntryRecord,
  RemoveAccessControlEntryRecord,
  UserScramCredentialRecord,
  RemoveUserScramCredentialRecord,
  ClientQuotaRecord,
  NoOpRecord,
  BeginTransactionRecord,
  EndTransactionRecord,
  AbortTransactionRecord,
  MirrorTopicStateChangeRecord
} as const

type Catalog = typeof catalog

export type MetadataRecordType = keyof Catalog

/** One metadata record: its type name, the version it is (or will be) written at, and its data. */
export type MetadataRecord = {
  readonly [K in MetadataRecordType]: {
    readonly type: K
    readonly version: number
    readonly data: S.TypeOf<Catalog[K]>
  }
}[MetadataRecordType]

export type MetadataRecordOf<K extends MetadataRecordType> = Extract<MetadataRecord, { readonly type: K }>

/** The spec of every record type, by name. */
export const messages: { readonly [K in MetadataRecordType]: Catalog[K] } = catalog

/** Every record spec, for tests and tools that walk all of them. */
export const all: ReadonlyArray<Catalog[MetadataRecordType]> = Object.values(catalog)

/** A spec with its value types erased, so that the codec can pick one by type or API key. */
interface Erased {
  readonly type: MetadataRecordType
  readonly name: string
  readonly apiKey: number
  readonly validVersions: S.VersionRange
  readonly fields: S.Fields
  readonly read: (version: number, r: Reader) => unknown
  readonly write: (version: number, w: Writer, data: unknown) => void
}

/** What the codec needs of a spec, whatever its fields. */
interface SpecView {
  readonly name: string
  readonly apiKey: number
  readonly validVersions: S.VersionRange
  readonly fields: S.Fields
  readonly codec: (version: number) => S.Codec<unknown, never>
}

const erase = (type: MetadataRecordType, m: SpecView): Erased => ({
  type,
  name: m.name,
  apiKey: m.apiKey,
  validVersions: m.validVersions,
  fields: m.fields,
  read: (version, r) => m.codec(version).read(r),
  // The MetadataRecord union pairs every type name with data of its own spec.
  write: (version, w, data) => m.codec(version).write(w, data as never)
})

const byType = new Map<MetadataRecordType, Erased>()
const byApiKey = new Map<number, Erased>()
for (const type of Object.keys(catalog) as Array<MetadataRecordType>) {
  const e = erase(type, catalog[type])
  byType.set(type, e)
  byApiKey.set(e.apiKey, e)
}

/** The only frame version Kafka writes and reads. */
export const FRAME_VERSION = 1

/**
 * Builds a record from partial data (absent fields take their defaults), at the highest version we
 * know unless told otherwise.
 */
export const make = <K extends MetadataRecordType>(
  type: K,
  data: S.InputOf<Catalog[K]>,
  version: number = catalog[type].validVersions.hi
): MetadataRecordOf<K> => {
  const m = byType.get(type)!
  return { type, version, data: withDefaults(m.fields, data) } as MetadataRecordOf<K>
}

/** A topic's desired mirror state; `mirrorName` null disassociates it (desired state UNKNOWN then). */
export const mirrorTopicStateChange = (
  topicId: string,
  mirrorName: string | null,
  desiredState: MirrorPartitionState.MirrorPartitionState
): MetadataRecordOf<"MirrorTopicStateChangeRecord"> =>
  make("MirrorTopicStateChangeRecord", { topicId, mirrorName, desiredState: MirrorPartitionState.toByte(desiredState) })

/**
 * The framed bytes of a record. Fails only on values the types cannot rule out (a malformed UUID
 * string, a version the record does not have): those are defects of the caller, so this throws the
 * `EncodeError` rather than returning it.
 */
export const encode = (record: MetadataRecord): Buffer => {
  const m = byType.get(record.type)!
  try {
    if (!S.inRange(m.validVersions, record.version)) throw new Error("unsupported version")
    const w = new Writer(64)
    w.uvarint(FRAME_VERSION)
    w.uvarint(m.apiKey)
    w.uvarint(record.version)
    m.write(record.version, w, record.data)
    return w.finish()
  } catch (e) {
    throw new EncodeError({ message: e instanceof Error ? e.message : String(e), what: `${m.name} v${record.version}` })
  }
}

/** Decodes one framed record; unknown frame versions, types and versions are typed errors. */
export const decode = (bytes: Uint8Array): Either.Either<MetadataRecord, DecodeError> => {
  const buf = toBuffer(bytes)
  const r = new Reader(buf)
  let what = "MetadataRecord"
  try {
    const frameVersion = r.uvarint()
    if (frameVersion !== FRAME_VERSION)
      return Either.left(new DecodeError({ message: `unknown frame version ${frameVersion}`, what, position: 0 }))
    const apiKey = r.uvarint()
    const m = byApiKey.get(apiKey)
    if (m === undefined)
      return Either.left(new DecodeError({ message: `unknown metadata record type ${apiKey}`, what, position: 1 }))
    const version = r.uvarint()
    what = `${m.name} v${version}`
    if (!S.inRange(m.validVersions, version))
      return Either.left(new DecodeError({ message: "unsupported version", what, position: r.pos }))
    const data = m.read(version, r)
    if (r.remaining !== 0)
      return Either.left(new DecodeError({ message: `${r.remaining} trailing bytes`, what, position: r.pos }))
    // The catalog pairs each type name with its spec, so the decoded value has that type's shape.
    return Either.right({ type: m.type, version, data } as MetadataRecord)
  } catch (e) {
    return Either.left(S.toDecodeError(e, what))
  }
}

const toBuffer = (b: Uint8Array): Buffer =>
  (globalThis.Buffer.isBuffer(b) ? b : globalThis.Buffer.from(b.buffer, b.byteOffset, b.byteLength)) as Buffer
