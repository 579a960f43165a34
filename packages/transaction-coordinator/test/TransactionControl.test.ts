import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Errors } from "@clustermirror/protocol"
import * as TransactionControl from "../src/TransactionControl.js"
import type * as TransactionRecords from "../src/TransactionRecords.js"

const E = Errors.ErrorCode
type State = TransactionControl.State
type Record = TransactionRecords.TransactionLogRecord

/** given(records) → when(decide) → then: the records and response, replayed as the runtime does. */
const given = (records: ReadonlyArray<Record> = []) => {
  let state = records.reduce(TransactionControl.replay, TransactionControl.empty)
  let now = 1000
  const when = <A, Err>(
    decide: (s: State, now: number) => Either.Either<{ records: ReadonlyArray<Record>; response: A }, Err>
  ) => {
    const r = decide(state, now)
    if (Either.isRight(r)) state = r.right.records.reduce(TransactionControl.replay, state)
    return r
  }
  return {
    when,
    ok: <A, Err>(
      decide: (s: State, now: number) => Either.Either<{ records: ReadonlyArray<Record>; response: A }, Err>
    ) => {
      const r = when(decide)
      if (Either.isLeft(r)) throw new Error(`refused: ${JSON.stringify(r.left)}`)
      return r.right
    },
    state: () => state,
    advance: (ms: number) => {
      now += ms
    }
  }
}

const init = (newProducerId: bigint | null, over: Partial<TransactionControl.InitProducerIdInput> = {}) =>
  TransactionControl.initProducerId({
    transactionalId: "tx",
    transactionTimeoutMs: 60_000,
    producerId: -1n,
    producerEpoch: -1,
    maxTimeoutMs: 900_000,
    newProducerId,
    ...over
  })
const add = (producerEpoch: number, partitions = [{ topic: "t", partitions: [0] }], producerId = 5n) =>
  TransactionControl.addPartitions({ transactionalId: "tx", producerId, producerEpoch, partitions })
const end = (producerEpoch: number, committed: boolean, transactionsV2 = false) =>
  TransactionControl.endTxn({ transactionalId: "tx", producerId: 5n, producerEpoch, committed, transactionsV2 })
const code = (r: Either.Either<unknown, { readonly _tag: string }>) =>
  Either.isLeft(r) ? ((r.left as { errorCode?: number }).errorCode ?? r.left._tag) : 0

describe("TransactionControl", () => {
  it("a new transactional id needs a producer id, then gets it at epoch 0 in Empty", () => {
    const t = given()
    expect(code(t.when(init(null)))).toBe("NeedsProducerId")
    const r = t.ok(init(5n))
    expect(r.response).toEqual({ errorCode: 0, producerId: 5n, producerEpoch: 0 })
    expect(r.records).toHaveLength(1)
    expect(TransactionControl.get(t.state(), "tx")).toMatchObject({
      state: "Empty",
      producerEpoch: 0,
      timeoutMs: 60_000
    })
  })

  it("a transaction timeout above transaction.max.timeout.ms is refused with INVALID_TRANSACTION_TIMEOUT", () => {
    expect(code(given().when(init(5n, { transactionTimeoutMs: 900_001 })))).toBe(E.INVALID_TRANSACTION_TIMEOUT)
    expect(code(given().when(init(5n, { transactionTimeoutMs: 0 })))).toBe(E.INVALID_TRANSACTION_TIMEOUT)
  })

  it("add, commit, complete; re-init bumps the epoch and fences the old epoch", () => {
    const t = given()
    t.ok(init(5n))
    t.ok(add(0))
    t.ok(
      add(0, [
        { topic: "t", partitions: [1] },
        { topic: "a", partitions: [3] }
      ])
    )
    expect(TransactionControl.get(t.state(), "tx")).toMatchObject({
      state: "Ongoing",
      startTimestampMs: 1000,
      partitions: [
        { topic: "a", partitions: [3] },
        { topic: "t", partitions: [0, 1] }
      ]
    })
    // Already in the transaction: nothing to write.
    expect(t.ok(add(0)).records).toEqual([])
    expect(t.ok(end(0, true)).response).toEqual({ producerId: 5n, producerEpoch: 0, prepared: true })
    expect(code(t.when(add(0)))).toBe(E.CONCURRENT_TRANSACTIONS)
    expect(code(t.when(end(0, true)))).toBe(E.CONCURRENT_TRANSACTIONS)
    expect(code(t.when(end(0, false)))).toBe(E.INVALID_TXN_STATE)
    const pending = TransactionControl.pendingMarkersOf(t.state(), "tx")!
    expect(pending).toMatchObject({ committed: true, producerEpoch: 0 })
    expect(t.ok(TransactionControl.completeTransaction(pending)).response).toBe(true)
    expect(TransactionControl.get(t.state(), "tx")).toMatchObject({ state: "CompleteCommit", partitions: [] })
    // A retried commit is answered NONE, an abort of it INVALID_TXN_STATE.
    expect(t.ok(end(0, true)).records).toEqual([])
    expect(code(t.when(end(0, false)))).toBe(E.INVALID_TXN_STATE)
    expect(t.ok(init(null)).response).toEqual({ errorCode: 0, producerId: 5n, producerEpoch: 1 })
    expect(code(t.when(add(0)))).toBe(E.PRODUCER_FENCED)
    expect(code(t.when(end(0, true)))).toBe(E.PRODUCER_FENCED)
    expect(code(t.when(add(1, [{ topic: "t", partitions: [0] }], 6n)))).toBe(E.INVALID_PRODUCER_ID_MAPPING)
  })

  it("EndTxn without a transaction is INVALID_TXN_STATE; an unknown id INVALID_PRODUCER_ID_MAPPING", () => {
    const t = given()
    expect(code(t.when(end(0, true)))).toBe(E.INVALID_PRODUCER_ID_MAPPING)
    t.ok(init(5n))
    expect(code(t.when(end(0, true)))).toBe(E.INVALID_TXN_STATE)
    expect(code(t.when(end(0, false)))).toBe(E.INVALID_TXN_STATE)
  })

  it("InitProducerId during an ongoing transaction writes PrepareAbort at the next epoch and answers CONCURRENT_TRANSACTIONS", () => {
    const t = given()
    t.ok(init(5n))
    t.ok(add(0))
    const r = t.ok(init(null))
    expect(r.response.errorCode).toBe(E.CONCURRENT_TRANSACTIONS)
    expect(TransactionControl.get(t.state(), "tx")).toMatchObject({ state: "PrepareAbort", producerEpoch: 1 })
    expect(code(t.when(init(null)))).toBe(E.CONCURRENT_TRANSACTIONS)
    t.ok(TransactionControl.completeTransaction(TransactionControl.pendingMarkersOf(t.state(), "tx")!))
    expect(t.ok(init(null)).response).toEqual({ errorCode: 0, producerId: 5n, producerEpoch: 2 })
  })

  it("KIP-360: an InitProducerId with a producer id and epoch that are not the current ones is fenced", () => {
    const t = given()
    t.ok(init(5n))
    t.ok(init(null))
    expect(code(t.when(init(null, { producerId: 5n, producerEpoch: 0 })))).toBe(E.PRODUCER_FENCED)
    expect(t.ok(init(null, { producerId: 5n, producerEpoch: 1 })).response.producerEpoch).toBe(2)
  })

  it("an exhausted epoch gets a fresh producer id, remembering the previous one", () => {
    const t = given()
    t.ok(init(5n))
    for (let i = 0; i < 32765; i++) t.ok(init(null))
    expect(TransactionControl.get(t.state(), "tx")!.producerEpoch).toBe(32765)
    t.ok(init(null))
    expect(code(t.when(init(null)))).toBe("NeedsProducerId")
    expect(t.ok(init(9n)).response).toEqual({ errorCode: 0, producerId: 9n, producerEpoch: 0 })
    expect(TransactionControl.get(t.state(), "tx")!.previousProducerId).toBe(5n)
  })

  it("transactions v2: EndTxn bumps the epoch with the Prepare state and answers it; a retry with the old epoch is accepted", () => {
    const t = given()
    t.ok(init(5n))
    t.ok(add(0))
    expect(t.ok(end(0, true, true)).response).toEqual({ producerId: 5n, producerEpoch: 1, prepared: true })
    expect(code(t.when(end(0, true, true)))).toBe(E.CONCURRENT_TRANSACTIONS)
    t.ok(TransactionControl.completeTransaction(TransactionControl.pendingMarkersOf(t.state(), "tx")!))
    expect(t.ok(end(0, true, true)).response).toEqual({ producerId: 5n, producerEpoch: 1, prepared: false })
    // v2 may abort an empty transaction
    expect(t.ok(end(1, false, true)).response.producerEpoch).toBe(2)
  })

  it("verification answers NONE for partitions of the ongoing transaction, INVALID_TXN_STATE for others", () => {
    const t = given()
    t.ok(init(5n))
    t.ok(add(0))
    const v = TransactionControl.verifyPartitions(t.state(), {
      transactionalId: "tx",
      producerId: 5n,
      producerEpoch: 0,
      partitions: [{ topic: "t", partitions: [0, 1] }]
    })
    expect(v.map((x) => x.errorCode)).toEqual([0, E.INVALID_TXN_STATE])
    const fenced = TransactionControl.verifyPartitions(t.state(), {
      transactionalId: "tx",
      producerId: 5n,
      producerEpoch: 9,
      partitions: [{ topic: "t", partitions: [0] }]
    })
    expect(fenced.map((x) => x.errorCode)).toEqual([E.PRODUCER_FENCED])
  })

  it("timed-out transactions are aborted at the next epoch; idle ids expire into tombstones", () => {
    const t = given()
    t.ok(init(5n))
    t.ok(add(0))
    expect(t.ok(TransactionControl.abortTimedOut).response).toEqual([])
    t.advance(60_000)
    expect(t.ok(TransactionControl.abortTimedOut).response).toEqual(["tx"])
    expect(TransactionControl.get(t.state(), "tx")).toMatchObject({ state: "PrepareAbort", producerEpoch: 1 })
    expect(code(t.when(add(0)))).toBe(E.PRODUCER_FENCED)
    // not idle: nothing expires
    expect(t.ok(TransactionControl.expireTransactionalIds(0)).response).toEqual([])
    t.ok(TransactionControl.completeTransaction(TransactionControl.pendingMarkersOf(t.state(), "tx")!))
    expect(t.ok(TransactionControl.expireTransactionalIds(1000)).response).toEqual([])
    t.advance(1000)
    const r = t.ok(TransactionControl.expireTransactionalIds(1000))
    expect(r.records).toEqual([{ transactionalId: "tx", value: null }])
    expect(TransactionControl.get(t.state(), "tx")).toBeUndefined()
  })

  it("replay dies on a transition Kafka's state machine forbids", () => {
    const t = given()
    t.ok(init(5n))
    const m = TransactionControl.get(t.state(), "tx")!
    expect(() =>
      TransactionControl.replay(t.state(), { transactionalId: "tx", value: { ...m, state: "CompleteCommit" } })
    ).toThrow(/Empty cannot become CompleteCommit/)
    expect(() =>
      TransactionControl.replay(t.state(), { transactionalId: "tx", value: { ...m, producerEpoch: -1 } })
    ).toThrow(/cannot go back/)
  })

  const op = fc.oneof(
    fc.record({
      op: fc.constant("init" as const),
      id: fc.constantFrom("a", "b", "c"),
      timeout: fc.constantFrom(0, 10, 1000, 900_001)
    }),
    fc.record({
      op: fc.constant("add" as const),
      id: fc.constantFrom("a", "b", "c"),
      epoch: fc.integer({ min: 0, max: 3 }),
      p: fc.integer({ min: 0, max: 3 })
    }),
    fc.record({
      op: fc.constant("end" as const),
      id: fc.constantFrom("a", "b", "c"),
      epoch: fc.integer({ min: 0, max: 3 }),
      commit: fc.boolean(),
      v2: fc.boolean()
    }),
    fc.record({ op: fc.constant("complete" as const), id: fc.constantFrom("a", "b", "c") }),
    fc.record({ op: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 2000 }) }),
    fc.record({ op: fc.constant("sweep" as const) })
  )

  it.prop(
    "decide then replay never dies, and replaying every record written gives the live state",
    [fc.array(op, { maxLength: 60 })],
    ([ops]) => {
      let state = TransactionControl.empty
      let now = 0
      let nextPid = 100n
      const written: Array<Record> = []
      const apply = <A, Err>(
        d: (s: State, n: number) => Either.Either<{ records: ReadonlyArray<Record>; response: A }, Err>
      ) => {
        const r = d(state, now)
        if (Either.isRight(r)) {
          for (const rec of r.right.records) state = TransactionControl.replay(state, rec)
          written.push(...r.right.records)
        }
        return r
      }
      for (const o of ops) {
        switch (o.op) {
          case "init": {
            const input = {
              transactionalId: o.id,
              transactionTimeoutMs: o.timeout,
              producerId: -1n,
              producerEpoch: -1,
              maxTimeoutMs: 900_000
            }
            const r = apply(TransactionControl.initProducerId({ ...input, newProducerId: null }))
            if (Either.isLeft(r) && r.left._tag === "NeedsProducerId")
              apply(TransactionControl.initProducerId({ ...input, newProducerId: nextPid++ }))
            break
          }
          case "add": {
            const m = TransactionControl.get(state, o.id)
            apply(
              TransactionControl.addPartitions({
                transactionalId: o.id,
                producerId: m?.producerId ?? 1n,
                producerEpoch: o.epoch,
                partitions: [{ topic: "t", partitions: [o.p] }]
              })
            )
            break
          }
          case "end": {
            const m = TransactionControl.get(state, o.id)
            apply(
              TransactionControl.endTxn({
                transactionalId: o.id,
                producerId: m?.producerId ?? 1n,
                producerEpoch: o.epoch,
                committed: o.commit,
                transactionsV2: o.v2
              })
            )
            break
          }
          case "complete": {
            const p = TransactionControl.pendingMarkersOf(state, o.id)
            if (p !== undefined) apply(TransactionControl.completeTransaction(p))
            break
          }
          case "tick":
            now += o.ms
            break
          case "sweep":
            apply(TransactionControl.abortTimedOut)
            apply(TransactionControl.expireTransactionalIds(3000))
            break
        }
      }
      const replayed = written.reduce(TransactionControl.replay, TransactionControl.empty)
      expect([...replayed.transactions].sort()).toEqual([...state.transactions].sort())
      // Compaction keeps each id's last record: replaying only those gives the same state too.
      const last = new Map<string, Record>()
      for (const r of written) last.set(r.transactionalId, r)
      const compacted = [...last.values()].reduce(TransactionControl.replay, TransactionControl.empty)
      expect([...compacted.transactions].sort()).toEqual([...state.transactions].sort())
    }
  )
})
