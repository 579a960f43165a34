/**
 * Control batches: transaction markers (ABORT, COMMIT) and KIP-1279's MIRROR_PID_RESET.
 *
 * Owns the control record key and value encodings, the builders of control batches and their parsing.
 * It does not decide when markers are written nor what they do to producer state (the storage and
 * coordinator packages do).
 *
 * ControlRecordKey => Version:int16 (0) Type:int16
 * EndTransactionMarker (ABORT 0, COMMIT 1) => Version:int16 (0) CoordinatorEpoch:int32
 * MirrorPidResetRecord (MIRROR_PID_RESET 7), v0 flexible => Version:int16 (0) SourceClusterId:compact-string
 *   tagged fields. The message is the whole value: its own Version field is the only version prefix.
 */
import { Either } from "effect"
import { Buffer } from "node:buffer"
import { DecodeError } from "./ProtocolError.js"
import * as RecordBatch from "./RecordBatch.js"
import * as S from "./Spec.js"

export const ABORT = 0
export const COMMIT = 1
export const MIRROR_PID_RESET = 7

export const CURRENT_KEY_VERSION = 0
export const END_TXN_MARKER_VERSION = 0
export const MIRROR_PID_RESET_VERSION = 0

export const MirrorPidResetRecord = S.message({
  name: "MirrorPidResetRecord",
  type: "data",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int16("Version"), S.string("SourceClusterId")]
})
export type MirrorPidResetRecord = S.TypeOf<typeof MirrorPidResetRecord>

export type ControlRecord =
  | {
      readonly type: "ABORT" | "COMMIT"
      readonly version: number
      readonly coordinatorEpoch: number
      readonly producerId: bigint
      readonly producerEpoch: number
    }
  | { readonly type: "MIRROR_PID_RESET"; readonly version: number; readonly sourceClusterId: string }
  | { readonly type: "UNKNOWN"; readonly code: number }

/** The key of a control record of `type`. */
export const encodeKey = (type: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeInt16BE(CURRENT_KEY_VERSION, 0)
  b.writeInt16BE(type, 2)
  return b
}

export const encodeEndTxnMarker = (coordinatorEpoch: number): Buffer => {
  const b = Buffer.alloc(6)
  b.writeInt16BE(END_TXN_MARKER_VERSION, 0)
  b.writeInt32BE(coordinatorEpoch, 2)
  return b
}

/** Where a control batch goes; defaults: offset 0, leader epoch -1, timestamp 0. */
export interface BatchPosition {
  readonly baseOffset?: number
  readonly leaderEpoch?: number
  readonly timestamp?: number
}

/** A transaction marker batch: control and transactional, one record, under the producer's id/epoch. */
export const endTxnMarker = (
  options: BatchPosition & {
    readonly producerId: bigint
    readonly producerEpoch: number
    readonly commit: boolean
    readonly coordinatorEpoch: number
  }
): Buffer =>
  controlBatch(options, {
    producerId: options.producerId,
    producerEpoch: options.producerEpoch,
    isTransactional: true,
    key: encodeKey(options.commit ? COMMIT : ABORT),
    value: encodeEndTxnMarker(options.coordinatorEpoch)
  })

/** The value of a MIRROR_PID_RESET record; any string encodes, so a failure here is a defect. */
export const encodeMirrorPidReset = (sourceClusterId: string): Buffer =>
  Either.getOrThrowWith(
    MirrorPidResetRecord.encode(MIRROR_PID_RESET_VERSION, { version: MIRROR_PID_RESET_VERSION, sourceClusterId }),
    (e) => e
  )

/** The MIRROR_PID_RESET batch (KIP-1279 §3.5): control, not transactional, producer id -1. */
export const mirrorPidReset = (options: BatchPosition & { readonly sourceClusterId: string }): Buffer =>
  controlBatch(options, {
    producerId: -1n,
    producerEpoch: -1,
    isTransactional: false,
    key: encodeKey(MIRROR_PID_RESET),
    value: encodeMirrorPidReset(options.sourceClusterId)
  })

const controlBatch = (
  position: BatchPosition,
  b: {
    readonly producerId: bigint
    readonly producerEpoch: number
    readonly isTransactional: boolean
    readonly key: Buffer
    readonly value: Buffer
  }
): Buffer =>
  RecordBatch.build({
    records: [{ key: b.key, value: b.value }],
    baseOffset: position.baseOffset ?? 0,
    partitionLeaderEpoch: position.leaderEpoch ?? -1,
    timestamp: position.timestamp ?? 0,
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    isTransactional: b.isTransactional,
    isControl: true
  })

const decodeError = (message: string, position = 0): DecodeError =>
  new DecodeError({ message, what: "ControlRecord", position })

/** Parses a control record's key and value (as read from a control batch of `producerId`/`producerEpoch`). */
export const parseRecord = (
  key: Uint8Array | null,
  value: Uint8Array | null,
  producerId: bigint,
  producerEpoch: number
): Either.Either<ControlRecord, DecodeError> => {
  if (key === null || key.length < 4) return Either.left(decodeError("control record key shorter than 4 bytes"))
  const k = Buffer.from(key.buffer, key.byteOffset, key.byteLength)
  const code = k.readInt16BE(2)
  if (code === ABORT || code === COMMIT) {
    if (value === null || value.length < 6)
      return Either.left(decodeError("end transaction marker value shorter than 6 bytes"))
    const v = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
    return Either.right({
      type: code === COMMIT ? "COMMIT" : "ABORT",
      version: v.readInt16BE(0),
      coordinatorEpoch: v.readInt32BE(2),
      producerId,
      producerEpoch
    })
  }
  if (code === MIRROR_PID_RESET) {
    if (value === null) return Either.left(decodeError("MIRROR_PID_RESET record without a value"))
    return Either.map(MirrorPidResetRecord.decode(MIRROR_PID_RESET_VERSION, value), (r) => ({
      type: "MIRROR_PID_RESET" as const,
      version: r.version,
      sourceClusterId: r.sourceClusterId
    }))
  }
  return Either.right({ type: "UNKNOWN", code })
}

/** The control record of the control batch at `p` (its first record; Kafka writes exactly one). */
export const parseControl = (
  batch: Buffer,
  p = 0
): Either.Either<ControlRecord, DecodeError | RecordBatch.CorruptBatch> =>
  Either.flatMap(RecordBatch.records(batch, p), (records) => {
    if (!RecordBatch.isControl(batch, p)) return Either.left(decodeError("not a control batch", p))
    const first = records[0]
    if (first === undefined) return Either.left(decodeError("control batch without records", p))
    return parseRecord(first.key, first.value, RecordBatch.producerId(batch, p), RecordBatch.producerEpoch(batch, p))
  })
