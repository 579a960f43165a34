/**
 * The pure state machine of one `__transaction_state` partition (Kafka's TransactionMetadata and the
 * decisions of its TransactionCoordinator): the metadata of each transactional id, changed only by
 * `replay`, and one decide function per request that returns the records to write and the response,
 * without touching state. Time and fresh producer ids are passed in. It owns no I/O: sending markers,
 * allocating ids and timers belong to the runtime.
 *
 * States and who writes them: InitProducerId writes Empty (new id or epoch bump), or PrepareAbort with a
 * bumped epoch to fence the producer of an ongoing transaction; AddPartitionsToTxn / AddOffsetsToTxn
 * write Ongoing; EndTxn writes PrepareCommit / PrepareAbort; the runtime writes CompleteCommit /
 * CompleteAbort once every marker is acked; the timeout sweep writes PrepareAbort (epoch bumped) for
 * expired transactions, the expiry sweep tombstones idle ids.
 */
import { CoordinatorResult, CoordinatorShard } from "@clustermirror/coordinator-runtime"
import { Errors } from "@clustermirror/protocol"
import { Either, HashMap, Option } from "effect"
import { NeedsProducerId, type Refused, refused } from "./TransactionCoordinatorError.js"
import * as TransactionRecords from "./TransactionRecords.js"

type Metadata = TransactionRecords.TransactionLogValue
type StateName = TransactionRecords.TransactionStateName
type Record = TransactionRecords.TransactionLogRecord
type Result<A> = CoordinatorResult.CoordinatorResult<Record, A>

const E = Errors.ErrorCode

export const TRANSACTION_STATE_TOPIC = "__transaction_state"
/** An epoch at this value or above cannot be bumped again: a new producer id is needed. */
export const MAX_PRODUCER_EPOCH = 32767

/** The hard state of one partition: the metadata of every transactional id it coordinates. */
export interface State {
  readonly transactions: HashMap.HashMap<string, Metadata>
}

export const empty: State = { transactions: HashMap.empty() }

export const get = (state: State, transactionalId: string): Metadata | undefined =>
  Option.getOrUndefined(HashMap.get(state.transactions, transactionalId))

/** The states each state may follow (Kafka's valid previous states); a first record may be any. */
const validPrevious: { readonly [S in StateName]: ReadonlyArray<StateName> } = {
  Empty: ["Empty", "CompleteCommit", "CompleteAbort"],
  Ongoing: ["Ongoing", "Empty", "CompleteCommit", "CompleteAbort"],
  PrepareCommit: ["Ongoing"],
  PrepareAbort: ["Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit", "CompleteAbort"],
  CompleteCommit: ["PrepareCommit"],
  CompleteAbort: ["PrepareAbort"],
  Dead: ["Empty", "CompleteCommit", "CompleteAbort"],
  PrepareEpochFence: ["Ongoing"]
}

const isIdle = (s: StateName): boolean => s === "Empty" || s === "CompleteCommit" || s === "CompleteAbort"

/** Applies one record; dies on a transition Kafka's state machine does not allow or an epoch going back. */
export const replay = (state: State, record: Record): State => {
  const id = record.transactionalId
  if (record.value === null) return { transactions: HashMap.remove(state.transactions, id) }
  const next = record.value
  const prev = get(state, id)
  if (prev !== undefined) {
    if (!validPrevious[next.state].includes(prev.state))
      throw new Error(`transactional id ${id}: ${prev.state} cannot become ${next.state}`)
    if (next.producerId === prev.producerId && next.producerEpoch < prev.producerEpoch)
      throw new Error(
        `transactional id ${id}: producer epoch ${prev.producerEpoch} cannot go back to ${next.producerEpoch}`
      )
    if (next.producerId !== prev.producerId && !isIdle(prev.state))
      throw new Error(`transactional id ${id}: producer id changed in state ${prev.state}`)
  }
  return { transactions: HashMap.set(state.transactions, id, next) }
}

/** The shard definition of `__transaction_state`. */
export const shardDef = CoordinatorShard.make<State, Record>({
  name: TRANSACTION_STATE_TOPIC,
  empty: () => empty,
  replay
})

const ok = <A>(records: ReadonlyArray<Record>, response: A): Either.Either<Result<A>, never> =>
  Either.right(CoordinatorResult.of(records, response))

const no = (errorCode: number, message?: string): Either.Either<never, Refused> =>
  Either.left(refused(errorCode, message))

// ---------------------------------------------------------------------------------------------------
// InitProducerId

export interface InitProducerIdInput {
  readonly transactionalId: string
  readonly transactionTimeoutMs: number
  /** KIP-360: the producer's current id and epoch (-1 when it has none). */
  readonly producerId: bigint
  readonly producerEpoch: number
  /** `transaction.max.timeout.ms`. */
  readonly maxTimeoutMs: number
  /** A fresh producer id, when the caller allocated one after `NeedsProducerId`. */
  readonly newProducerId: bigint | null
}

export interface InitProducerIdResult {
  readonly errorCode: number
  readonly producerId: bigint
  readonly producerEpoch: number
}

/**
 * InitProducerId with a transactional id. Writes Empty with the id's new epoch (or a fresh producer id
 * for a new id or an exhausted epoch); for an ongoing transaction, writes PrepareAbort with the epoch
 * bumped (the old producer is fenced by the abort markers) and answers CONCURRENT_TRANSACTIONS, so the
 * producer retries once the abort completed. Refuses INVALID_TRANSACTION_TIMEOUT, CONCURRENT_TRANSACTIONS
 * while markers are in flight, PRODUCER_FENCED for a KIP-360 id/epoch that is not the current one.
 */
export const initProducerId =
  (input: InitProducerIdInput) =>
  (state: State, now: number): Either.Either<Result<InitProducerIdResult>, Refused | NeedsProducerId> => {
    const { transactionalId: id, transactionTimeoutMs: timeoutMs } = input
    if (timeoutMs <= 0 || timeoutMs > input.maxTimeoutMs)
      return no(
        E.INVALID_TRANSACTION_TIMEOUT,
        `transaction.timeout.ms ${timeoutMs} is not in (0, transaction.max.timeout.ms = ${input.maxTimeoutMs}]`
      )
    const m = get(state, id)
    const fresh = (previousProducerId: bigint) => {
      if (input.newProducerId === null) return Either.left(new NeedsProducerId({ transactionalId: id }))
      const value: Metadata = {
        producerId: input.newProducerId,
        previousProducerId,
        nextProducerId: -1n,
        producerEpoch: 0,
        timeoutMs,
        state: "Empty",
        partitions: [],
        lastUpdateTimestampMs: now,
        startTimestampMs: -1,
        clientTransactionVersion: m?.clientTransactionVersion ?? 0
      }
      return ok([TransactionRecords.metadata(id, value)], {
        errorCode: 0,
        producerId: input.newProducerId,
        producerEpoch: 0
      })
    }
    if (m === undefined || m.state === "Dead") return fresh(-1n)
    if (input.producerId >= 0n && (input.producerId !== m.producerId || input.producerEpoch !== m.producerEpoch))
      return no(E.PRODUCER_FENCED, `producer ${input.producerId} epoch ${input.producerEpoch} is not the current one`)
    switch (m.state) {
      case "PrepareCommit":
      case "PrepareAbort":
      case "PrepareEpochFence":
        return no(E.CONCURRENT_TRANSACTIONS)
      case "Ongoing": {
        const fenced: Metadata = {
          ...m,
          producerEpoch: Math.min(m.producerEpoch + 1, MAX_PRODUCER_EPOCH),
          state: "PrepareAbort",
          lastUpdateTimestampMs: now
        }
        return ok([TransactionRecords.metadata(id, fenced)], {
          errorCode: E.CONCURRENT_TRANSACTIONS,
          producerId: -1n,
          producerEpoch: -1
        })
      }
      default: {
        if (m.producerEpoch >= MAX_PRODUCER_EPOCH - 1) return fresh(m.producerId)
        const bumped: Metadata = {
          ...m,
          producerEpoch: m.producerEpoch + 1,
          timeoutMs,
          state: "Empty",
          partitions: [],
          lastUpdateTimestampMs: now,
          startTimestampMs: -1
        }
        return ok([TransactionRecords.metadata(id, bumped)], {
          errorCode: 0,
          producerId: m.producerId,
          producerEpoch: bumped.producerEpoch
        })
      }
    }
  }

// ---------------------------------------------------------------------------------------------------
// AddPartitionsToTxn, AddOffsetsToTxn

export interface AddPartitionsInput {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly partitions: ReadonlyArray<TransactionRecords.TopicPartitions>
}

/** Kafka's checks of a request naming a producer id and epoch, against the id's metadata. */
const checkProducer = (
  m: Metadata | undefined,
  producerId: bigint,
  producerEpoch: number
): Either.Either<Metadata, Refused> => {
  if (m === undefined || m.state === "Dead" || m.producerId !== producerId) return no(E.INVALID_PRODUCER_ID_MAPPING)
  if (m.producerEpoch !== producerEpoch)
    return no(E.PRODUCER_FENCED, `producer epoch ${producerEpoch} is not the current epoch ${m.producerEpoch}`)
  return Either.right(m)
}

/** `a` with `b`'s partitions added, sorted by topic and partition. */
export const mergePartitions = (
  a: ReadonlyArray<TransactionRecords.TopicPartitions>,
  b: ReadonlyArray<TransactionRecords.TopicPartitions>
): ReadonlyArray<TransactionRecords.TopicPartitions> => {
  const byTopic = new Map<string, Set<number>>()
  for (const t of [...a, ...b]) {
    let s = byTopic.get(t.topic)
    if (s === undefined) byTopic.set(t.topic, (s = new Set()))
    for (const p of t.partitions) s.add(p)
  }
  return [...byTopic.entries()]
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .map(([topic, ps]) => ({ topic, partitions: [...ps].sort((x, y) => x - y) }))
}

const contains = (txn: ReadonlyArray<TransactionRecords.TopicPartitions>, topic: string, partition: number) =>
  txn.some((t) => t.topic === topic && t.partitions.includes(partition))

/**
 * AddPartitionsToTxn (and AddOffsetsToTxn, with the group's `__consumer_offsets` partition): writes
 * Ongoing with the partitions added, nothing when they are all in the ongoing transaction already.
 * Refuses INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS while the previous
 * transaction completes.
 */
export const addPartitions =
  (input: AddPartitionsInput) =>
  (state: State, now: number): Either.Either<Result<void>, Refused> =>
    Either.flatMap(checkProducer(get(state, input.transactionalId), input.producerId, input.producerEpoch), (m) => {
      if (m.state === "PrepareCommit" || m.state === "PrepareAbort" || m.state === "PrepareEpochFence")
        return no(E.CONCURRENT_TRANSACTIONS)
      if (
        m.state === "Ongoing" &&
        input.partitions.every((t) => t.partitions.every((p) => contains(m.partitions, t.topic, p)))
      )
        return ok([], undefined)
      const next: Metadata = {
        ...m,
        state: "Ongoing",
        partitions: mergePartitions(m.state === "Ongoing" ? m.partitions : [], input.partitions),
        lastUpdateTimestampMs: now,
        startTimestampMs: m.state === "Ongoing" ? m.startTimestampMs : now
      }
      return ok([TransactionRecords.metadata(input.transactionalId, next)], undefined)
    })

/**
 * KIP-890 verification by a partition leader (AddPartitionsToTxn v4+ with VerifyOnly): per partition,
 * NONE when it is in the ongoing transaction of that producer id and epoch, INVALID_TXN_STATE when not;
 * the producer's own errors for every partition otherwise. Reads only.
 */
export const verifyPartitions = (
  state: State,
  input: AddPartitionsInput
): ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly errorCode: number }> => {
  const checked = checkProducer(get(state, input.transactionalId), input.producerId, input.producerEpoch)
  return input.partitions.flatMap((t) =>
    t.partitions.map((partition) => ({
      topic: t.topic,
      partition,
      errorCode: Either.isLeft(checked)
        ? checked.left.errorCode
        : checked.right.state === "Ongoing" && contains(checked.right.partitions, t.topic, partition)
          ? 0
          : E.INVALID_TXN_STATE
    }))
  )
}

// ---------------------------------------------------------------------------------------------------
// EndTxn and the completion after the markers

export interface EndTxnInput {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly committed: boolean
  /** EndTxn v5+ (transactions v2): the epoch is bumped with the end of each transaction. */
  readonly transactionsV2: boolean
}

export interface EndTxnResult {
  readonly producerId: bigint
  readonly producerEpoch: number
  /** Whether this call wrote a Prepare state whose markers must now be sent. */
  readonly prepared: boolean
}

/**
 * EndTxn: an Ongoing transaction becomes PrepareCommit / PrepareAbort (with transactions v2 at the next
 * epoch, which the response carries). A retried end of a completed transaction answers NONE; the other
 * end of a completed or preparing one INVALID_TXN_STATE; a retry while markers are in flight
 * CONCURRENT_TRANSACTIONS; no transaction INVALID_TXN_STATE (transactions v2 may abort an Empty one).
 */
export const endTxn =
  (input: EndTxnInput) =>
  (state: State, now: number): Either.Either<Result<EndTxnResult>, Refused> => {
    const m0 = get(state, input.transactionalId)
    // Transactions v2: a retry of an end that already bumped the epoch comes with the previous epoch.
    const retryV2 =
      input.transactionsV2 &&
      m0 !== undefined &&
      m0.producerId === input.producerId &&
      m0.producerEpoch === input.producerEpoch + 1 &&
      m0.state !== "Ongoing" &&
      m0.state !== "Empty"
    const checked =
      retryV2 && m0 !== undefined ? Either.right(m0) : checkProducer(m0, input.producerId, input.producerEpoch)
    return Either.flatMap(checked, (m) => {
      const done = { producerId: m.producerId, producerEpoch: m.producerEpoch, prepared: false }
      const target: StateName = input.committed ? "PrepareCommit" : "PrepareAbort"
      const prepare = (): Either.Either<Result<EndTxnResult>, Refused> => {
        const epoch = input.transactionsV2 ? Math.min(m.producerEpoch + 1, MAX_PRODUCER_EPOCH) : m.producerEpoch
        const next: Metadata = {
          ...m,
          producerEpoch: epoch,
          state: target,
          lastUpdateTimestampMs: now,
          clientTransactionVersion: input.transactionsV2 ? 2 : m.clientTransactionVersion
        }
        return ok([TransactionRecords.metadata(input.transactionalId, next)], {
          producerId: m.producerId,
          producerEpoch: epoch,
          prepared: true
        })
      }
      switch (m.state) {
        case "Ongoing":
          return prepare()
        // Transactions v2 (not a retry): an abort without a transaction aborts an empty one.
        case "CompleteCommit":
          return input.committed ? ok([], done) : input.transactionsV2 && !retryV2 ? prepare() : no(E.INVALID_TXN_STATE)
        case "CompleteAbort":
          return input.committed ? no(E.INVALID_TXN_STATE) : input.transactionsV2 && !retryV2 ? prepare() : ok([], done)
        case "PrepareCommit":
          return input.committed ? no(E.CONCURRENT_TRANSACTIONS) : no(E.INVALID_TXN_STATE)
        case "PrepareAbort":
          return input.committed ? no(E.INVALID_TXN_STATE) : no(E.CONCURRENT_TRANSACTIONS)
        case "PrepareEpochFence":
          return no(E.CONCURRENT_TRANSACTIONS)
        case "Empty":
          return input.transactionsV2 && !input.committed ? prepare() : no(E.INVALID_TXN_STATE)
        case "Dead":
          return no(E.INVALID_PRODUCER_ID_MAPPING)
      }
    })
  }

/** What the markers of a Prepare state must say and where: read by the runtime to send them. */
export interface PendingMarkers {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly committed: boolean
  readonly partitions: ReadonlyArray<TransactionRecords.TopicPartitions>
}

/** The transactions of a state whose markers are to be sent (PrepareCommit, PrepareAbort). */
export const pendingMarkers = (state: State): ReadonlyArray<PendingMarkers> => {
  const out: Array<PendingMarkers> = []
  for (const [transactionalId, m] of state.transactions)
    if (m.state === "PrepareCommit" || m.state === "PrepareAbort")
      out.push({
        transactionalId,
        producerId: m.producerId,
        producerEpoch: m.producerEpoch,
        committed: m.state === "PrepareCommit",
        partitions: m.partitions
      })
  return out.sort((a, b) => (a.transactionalId < b.transactionalId ? -1 : 1))
}

export const pendingMarkersOf = (state: State, transactionalId: string): PendingMarkers | undefined =>
  pendingMarkers({ transactions: HashMap.filter(state.transactions, (_, k) => k === transactionalId) })[0]

/**
 * Every marker of `pending` was acked: writes CompleteCommit / CompleteAbort with no partitions, unless
 * the id moved on meanwhile (then nothing).
 */
export const completeTransaction =
  (pending: PendingMarkers) =>
  (state: State, now: number): Either.Either<Result<boolean>, never> => {
    const m = get(state, pending.transactionalId)
    const prepared: StateName = pending.committed ? "PrepareCommit" : "PrepareAbort"
    if (
      m === undefined ||
      m.state !== prepared ||
      m.producerId !== pending.producerId ||
      m.producerEpoch !== pending.producerEpoch
    )
      return ok([], false)
    const next: Metadata = {
      ...m,
      state: pending.committed ? "CompleteCommit" : "CompleteAbort",
      partitions: [],
      lastUpdateTimestampMs: now
    }
    return ok([TransactionRecords.metadata(pending.transactionalId, next)], true)
  }

// ---------------------------------------------------------------------------------------------------
// Timeouts and expiry

/**
 * The timed-out transactions (Ongoing longer than their timeout): each becomes PrepareAbort at the next
 * epoch, which fences its producer. Answers the ids aborted.
 */
export const abortTimedOut = (state: State, now: number): Either.Either<Result<ReadonlyArray<string>>, never> => {
  const records: Array<Record> = []
  for (const [id, m] of state.transactions)
    if (m.state === "Ongoing" && m.startTimestampMs + m.timeoutMs <= now)
      records.push(
        TransactionRecords.metadata(id, {
          ...m,
          producerEpoch: Math.min(m.producerEpoch + 1, MAX_PRODUCER_EPOCH),
          state: "PrepareAbort",
          lastUpdateTimestampMs: now
        })
      )
  return ok(
    records,
    records.map((r) => r.transactionalId)
  )
}

/**
 * `transactional.id.expiration.ms`: ids without a transaction (Empty, Complete*) and not updated for
 * that long are tombstoned. Answers the ids removed.
 */
export const expireTransactionalIds =
  (expirationMs: number) =>
  (state: State, now: number): Either.Either<Result<ReadonlyArray<string>>, never> => {
    const records: Array<Record> = []
    for (const [id, m] of state.transactions)
      if (isIdle(m.state) && m.lastUpdateTimestampMs + expirationMs <= now)
        records.push(TransactionRecords.tombstone(id))
    return ok(
      records,
      records.map((r) => r.transactionalId)
    )
  }

// ---------------------------------------------------------------------------------------------------
// Listing

export interface ListedTransaction {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly state: StateName
}

/** ListTransactions of one partition: by state names, producer ids, and running longer than `durationMs`. */
export const listTransactions = (
  state: State,
  filters: {
    readonly states: ReadonlyArray<string>
    readonly producerIds: ReadonlyArray<bigint>
    readonly durationMs: number
  },
  now: number
): ReadonlyArray<ListedTransaction> => {
  const out: Array<ListedTransaction> = []
  for (const [transactionalId, m] of state.transactions) {
    if (filters.states.length > 0 && !filters.states.includes(m.state)) continue
    if (filters.producerIds.length > 0 && !filters.producerIds.includes(m.producerId)) continue
    if (filters.durationMs >= 0 && (m.startTimestampMs < 0 || now - m.startTimestampMs <= filters.durationMs)) continue
    out.push({ transactionalId, producerId: m.producerId, state: m.state })
  }
  return out.sort((a, b) => (a.transactionalId < b.transactionalId ? -1 : 1))
}
