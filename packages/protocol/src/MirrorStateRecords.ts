/**
 * The records of the `__mirror_state` topic (KIP-1279): per mirror partition, its last mirror epoch
 * (type 1) and its state in the partition state machine (type 2), both keyed by (MirrorName, TopicId,
 * Partition). Framed by `CoordinatorRecord`: key = int16 type + key struct (non-flexible v0), value =
 * int16 version + value struct (flexible v0); a null value is a tombstone. Owns the schemas, the
 * union and the factories; the coordinator owns replay and routing.
 */
import { Either } from "effect"
import type { Buffer } from "node:buffer"
import * as CoordinatorRecord from "./CoordinatorRecord.js"
import * as MirrorPartitionState from "./MirrorPartitionState.js"
import { DecodeError, type EncodeError } from "./ProtocolError.js"
import * as S from "./Spec.js"

const keyFields = [S.string("MirrorName"), S.uuid("TopicId"), S.int32("Partition")] as const

export const LAST_MIRROR_EPOCHS = 1
export const MIRROR_PARTITION_STATE = 2

export const LastMirrorEpochsKey = S.message({
  name: "LastMirrorEpochsKey",
  apiKey: LAST_MIRROR_EPOCHS,
  type: "coordinator-key",
  validVersions: "0",
  flexibleVersions: "none",
  fields: keyFields
})

export const LastMirrorEpochsValue = S.message({
  name: "LastMirrorEpochsValue",
  apiKey: LAST_MIRROR_EPOCHS,
  type: "coordinator-value",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int32("LastMirrorEpoch")]
})

export const MirrorPartitionStateKey = S.message({
  name: "MirrorPartitionStateKey",
  apiKey: MIRROR_PARTITION_STATE,
  type: "coordinator-key",
  validVersions: "0",
  flexibleVersions: "none",
  fields: keyFields
})

export const MirrorPartitionStateValue = S.message({
  name: "MirrorPartitionStateValue",
  apiKey: MIRROR_PARTITION_STATE,
  type: "coordinator-value",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    // MirrorPartitionState bytes.
    S.int8("State"),
    // The state before FAILED. The prototype's schema default (16) is no state; -1 (UNKNOWN) is.
    S.int8("PreviousState", { default: -1 }),
    // -1 marks a failure that is not retried.
    S.int16("RetryAttempt", { default: 0 }),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null })
  ]
})

/** The key of both record types. */
export type Key = S.TypeOf<typeof LastMirrorEpochsKey>
export type LastMirrorEpochsValue = S.TypeOf<typeof LastMirrorEpochsValue>
export type MirrorPartitionStateValue = S.TypeOf<typeof MirrorPartitionStateValue>

/** One `__mirror_state` record; a null value is the tombstone of its key. */
export type MirrorStateRecord =
  | { readonly type: "LastMirrorEpochs"; readonly key: Key; readonly value: LastMirrorEpochsValue | null }
  | { readonly type: "MirrorPartitionState"; readonly key: Key; readonly value: MirrorPartitionStateValue | null }

/** The key of a mirror partition. */
export const key = (mirrorName: string, topicId: string, partition: number): Key => ({
  mirrorName,
  topicId,
  partition
})

export const lastMirrorEpochs = (key: Key, lastMirrorEpoch: number): MirrorStateRecord => ({
  type: "LastMirrorEpochs",
  key,
  value: { lastMirrorEpoch }
})

/**
 * A persisted state. `failure` is the failure info kept with it: retry attempt (-1 = not retried),
 * message, and the state before FAILED.
 */
export const mirrorPartitionState = (
  key: Key,
  state: MirrorPartitionState.MirrorPartitionState,
  failure?: {
    readonly retryAttempt: number
    readonly errorMessage: string | null
    readonly previousState: MirrorPartitionState.MirrorPartitionState
  }
): MirrorStateRecord => ({
  type: "MirrorPartitionState",
  key,
  value: {
    state: MirrorPartitionState.toByte(state),
    previousState: MirrorPartitionState.toByte(failure?.previousState ?? "UNKNOWN"),
    retryAttempt: failure?.retryAttempt ?? 0,
    errorMessage: failure?.errorMessage ?? null
  }
})

/** The tombstones that delete every record of a mirror partition. */
export const tombstones = (key: Key): ReadonlyArray<MirrorStateRecord> => [
  { type: "LastMirrorEpochs", key, value: null },
  { type: "MirrorPartitionState", key, value: null }
]

/** The key and value bytes of a record (value null for a tombstone). */
export interface Encoded {
  readonly key: Buffer
  readonly value: Buffer | null
}

/**
 * Encodes a record. Fails only on values the types cannot rule out (a malformed UUID string, an
 * over-long name): defects of the caller, thrown as `EncodeError`.
 */
export const encode = (record: MirrorStateRecord): Encoded => {
  const orThrow = (e: Either.Either<Buffer, EncodeError>): Buffer =>
    Either.getOrElse(e, (err) => {
      throw err
    })
  switch (record.type) {
    case "LastMirrorEpochs":
      return {
        key: orThrow(CoordinatorRecord.encodeKey(LAST_MIRROR_EPOCHS, LastMirrorEpochsKey, record.key)),
        value:
          record.value === null ? null : orThrow(CoordinatorRecord.encodeValue(0, LastMirrorEpochsValue, record.value))
      }
    case "MirrorPartitionState":
      return {
        key: orThrow(CoordinatorRecord.encodeKey(MIRROR_PARTITION_STATE, MirrorPartitionStateKey, record.key)),
        value:
          record.value === null
            ? null
            : orThrow(CoordinatorRecord.encodeValue(0, MirrorPartitionStateValue, record.value))
      }
  }
}

/** Decodes a (key, value) pair read from `__mirror_state`; unknown types and versions are typed errors. */
export const decode = (
  keyBytes: Uint8Array,
  valueBytes: Uint8Array | null
): Either.Either<MirrorStateRecord, DecodeError> =>
  Either.gen(function* () {
    const kb = toBuffer(keyBytes)
    const type = yield* CoordinatorRecord.readPrefix(kb)
    if (type !== LAST_MIRROR_EPOCHS && type !== MIRROR_PARTITION_STATE)
      return yield* Either.left(
        new DecodeError({ message: `unknown record type ${type}`, what: "MirrorStateRecord", position: 0 })
      )
    const k = yield* CoordinatorRecord.decodeBody(
      type === LAST_MIRROR_EPOCHS ? LastMirrorEpochsKey : MirrorPartitionStateKey,
      0,
      kb
    )
    if (valueBytes === null)
      return type === LAST_MIRROR_EPOCHS
        ? { type: "LastMirrorEpochs", key: k, value: null }
        : { type: "MirrorPartitionState", key: k, value: null }
    const vb = toBuffer(valueBytes)
    const version = yield* CoordinatorRecord.readPrefix(vb)
    if (version !== 0)
      return yield* Either.left(
        new DecodeError({ message: `unsupported value version ${version}`, what: "MirrorStateRecord", position: 0 })
      )
    if (type === LAST_MIRROR_EPOCHS) {
      const value = yield* CoordinatorRecord.decodeBody(LastMirrorEpochsValue, 0, vb)
      return { type: "LastMirrorEpochs", key: k, value }
    }
    const value = yield* CoordinatorRecord.decodeBody(MirrorPartitionStateValue, 0, vb)
    return { type: "MirrorPartitionState", key: k, value }
  })

const toBuffer = (b: Uint8Array): Buffer =>
  (globalThis.Buffer.isBuffer(b) ? b : globalThis.Buffer.from(b.buffer, b.byteOffset, b.byteLength)) as Buffer
