/**
 * The records of `__transaction_state`, byte-compatible with what Kafka brokers write: key = int16 key
 * version 0 + TransactionLogKey (the transactional id), value = int16 value version + TransactionLogValue
 * (flexible from v1, with the transactions-v2 fields tagged); a null value is the tombstone of an expired
 * transactional id, so the topic compacts to one record per id. Owns the schemas, the record union and
 * its factories; the transaction control owns replay.
 */
import { CoordinatorRecord, ProtocolError, Spec as S } from "@clustermirror/protocol"
import { Either } from "effect"
import { Buffer } from "node:buffer"

export const KEY_VERSION = 0
/** The value version written: v1, flexible, carries the transactions-v2 fields. */
export const VALUE_VERSION = 1

export const TransactionLogKey = S.message({
  name: "TransactionLogKey",
  type: "coordinator-key",
  validVersions: "0",
  flexibleVersions: "none",
  fields: [S.string("TransactionalId", { versions: "0" })]
})

export const TransactionLogValue = S.message({
  name: "TransactionLogValue",
  type: "coordinator-value",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.int64("ProducerId"),
    S.int64("PreviousProducerId", { versions: "1+", taggedVersions: "1+", tag: 0, default: -1n }),
    S.int64("NextProducerId", { versions: "1+", taggedVersions: "1+", tag: 1, default: -1n }),
    S.int16("ProducerEpoch"),
    S.int32("TransactionTimeoutMs"),
    S.int8("TransactionStatus"),
    S.array("TransactionPartitions", [S.string("Topic"), S.array("PartitionIds", "int32")], {
      nullableVersions: "0+"
    }),
    S.int64("TransactionLastUpdateTimestampMs"),
    S.int64("TransactionStartTimestampMs"),
    S.int16("ClientTransactionVersion", { versions: "1+", taggedVersions: "1+", tag: 2, default: 0 })
  ]
})

/** Kafka's transaction states, with the ids `TransactionStatus` stores. */
export const TransactionStates = [
  "Empty",
  "Ongoing",
  "PrepareCommit",
  "PrepareAbort",
  "CompleteCommit",
  "CompleteAbort",
  "Dead",
  "PrepareEpochFence"
] as const
export type TransactionStateName = (typeof TransactionStates)[number]

export const stateId = (state: TransactionStateName): number => TransactionStates.indexOf(state)

/** A topic's partitions in a transaction, partitions sorted. */
export interface TopicPartitions {
  readonly topic: string
  readonly partitions: ReadonlyArray<number>
}

/** What `__transaction_state` stores of one transactional id. */
export interface TransactionLogValue {
  readonly producerId: bigint
  /** The producer id of the last committed transaction (transactions v2), -1 when none. */
  readonly previousProducerId: bigint
  /** The producer id handed out next when the epoch is exhausted (transactions v2), -1 when none. */
  readonly nextProducerId: bigint
  readonly producerEpoch: number
  readonly timeoutMs: number
  readonly state: TransactionStateName
  /** Sorted by topic; empty in Empty and Complete* states. */
  readonly partitions: ReadonlyArray<TopicPartitions>
  readonly lastUpdateTimestampMs: number
  /** -1 while no transaction runs. */
  readonly startTimestampMs: number
  /** 0 or 1: transactions v1 (AddPartitionsToTxn from the client); 2: transactions v2. */
  readonly clientTransactionVersion: number
}

/** One record of `__transaction_state`: an id's metadata, or its tombstone (`value: null`). */
export interface TransactionLogRecord {
  readonly transactionalId: string
  readonly value: TransactionLogValue | null
}

/** The record of an id's metadata. */
export const metadata = (transactionalId: string, value: TransactionLogValue): TransactionLogRecord => ({
  transactionalId,
  value
})

/** The tombstone of an expired id. */
export const tombstone = (transactionalId: string): TransactionLogRecord => ({ transactionalId, value: null })

const orThrow = (e: Either.Either<Buffer, ProtocolError.EncodeError>): Buffer =>
  Either.getOrElse(e, (err) => {
    throw err
  })

/** The key and value bytes of a record (value null for a tombstone). */
export const encode = (record: TransactionLogRecord): { readonly key: Buffer; readonly value: Buffer | null } => {
  const key = orThrow(
    CoordinatorRecord.encodeKey(KEY_VERSION, TransactionLogKey, { transactionalId: record.transactionalId })
  )
  const v = record.value
  if (v === null) return { key, value: null }
  const value = orThrow(
    CoordinatorRecord.encodeValue(VALUE_VERSION, TransactionLogValue, {
      producerId: v.producerId,
      previousProducerId: v.previousProducerId,
      nextProducerId: v.nextProducerId,
      producerEpoch: v.producerEpoch,
      transactionTimeoutMs: v.timeoutMs,
      transactionStatus: stateId(v.state),
      // Kafka writes no partition list for an Empty transaction.
      transactionPartitions:
        v.state === "Empty" ? null : v.partitions.map((p) => ({ topic: p.topic, partitionIds: [...p.partitions] })),
      transactionLastUpdateTimestampMs: BigInt(v.lastUpdateTimestampMs),
      transactionStartTimestampMs: BigInt(v.startTimestampMs),
      clientTransactionVersion: v.clientTransactionVersion
    })
  )
  return { key, value }
}

const fail = (message: string): Either.Either<never, ProtocolError.DecodeError> =>
  Either.left(new ProtocolError.DecodeError({ message, what: "TransactionLogRecord", position: 0 }))

const toBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length))

/** Decodes a (key, value) pair read from `__transaction_state`; any malformed input is a typed error. */
export const decode = (
  keyBytes: Uint8Array,
  valueBytes: Uint8Array | null
): Either.Either<TransactionLogRecord, ProtocolError.DecodeError> =>
  Either.gen(function* () {
    const kb = toBuffer(keyBytes)
    const keyVersion = yield* CoordinatorRecord.readPrefix(kb)
    if (keyVersion !== KEY_VERSION) return yield* fail(`unknown TransactionLogKey version ${keyVersion}`)
    const key = yield* CoordinatorRecord.decodeBody(TransactionLogKey, keyVersion, kb)
    if (valueBytes === null) return tombstone(key.transactionalId)
    const vb = toBuffer(valueBytes)
    const version = yield* CoordinatorRecord.readPrefix(vb)
    if (version !== 0 && version !== 1) return yield* fail(`unsupported TransactionLogValue version ${version}`)
    const v = yield* CoordinatorRecord.decodeBody(TransactionLogValue, version, vb)
    const state = TransactionStates[v.transactionStatus]
    if (state === undefined) return yield* fail(`unknown TransactionStatus ${v.transactionStatus}`)
    return metadata(key.transactionalId, {
      producerId: v.producerId,
      previousProducerId: v.previousProducerId,
      nextProducerId: v.nextProducerId,
      producerEpoch: v.producerEpoch,
      timeoutMs: v.transactionTimeoutMs,
      state,
      partitions: (v.transactionPartitions ?? []).map((p) => ({ topic: p.topic, partitions: p.partitionIds })),
      lastUpdateTimestampMs: Number(v.transactionLastUpdateTimestampMs),
      startTimestampMs: Number(v.transactionStartTimestampMs),
      clientTransactionVersion: v.clientTransactionVersion
    })
  })
