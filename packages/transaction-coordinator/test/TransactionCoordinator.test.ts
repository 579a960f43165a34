import { describe, expect, it } from "@effect/vitest"
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { Errors } from "@clustermirror/protocol"
import { Effect, type Runtime, TestClock } from "effect"
import * as TransactionControl from "../src/TransactionControl.js"
import * as TransactionCoordinator from "../src/TransactionCoordinator.js"
import type * as TransactionRecords from "../src/TransactionRecords.js"

const E = Errors.ErrorCode

/**
 * A coordinator over an in-memory `__transaction_state` of one partition. Partition leaders are a table;
 * `answers` decides each marker's error code (default NONE); every request sent is recorded.
 */
const setup = (
  runtime: Runtime.Runtime<never>,
  log = CoordinatorLog.memory<TransactionRecords.TransactionLogRecord>()
) => {
  const leaders = new Map<string, number>([
    ["t/0", 1],
    ["t/1", 2],
    ["t/2", 1]
  ])
  const sent: Array<{ brokerId: number; request: TransactionCoordinator.MarkersRequest }> = []
  let answers = (_brokerId: number, _topic: string, _partition: number): number => 0
  let nextPid = 1000n
  const coordinator = new TransactionCoordinator.TransactionCoordinator({
    log,
    runtime,
    partitionCount: () => 1,
    leaderOf: (topic, partition) => leaders.get(`${topic}/${partition}`),
    allocateProducerId: async () => nextPid++,
    config: () => ({ abortTimedOutTransactionCleanupIntervalMs: 1000, transactionalIdExpirationMs: 60_000 }),
    sendMarkers: async (brokerId, request) => {
      sent.push({ brokerId, request })
      return {
        markers: request.markers.map((m) => ({
          producerId: m.producerId,
          topics: m.topics.map((t) => ({
            name: t.name,
            partitions: t.partitionIndexes.map((p) => ({ partitionIndex: p, errorCode: answers(brokerId, t.name, p) }))
          }))
        }))
      }
    }
  })
  return {
    coordinator,
    log,
    leaders,
    sent,
    setAnswers: (f: typeof answers) => {
      answers = f
    },
    state: (id: string) => coordinator.describe(id).metadata?.state
  }
}

const partitions = [{ topic: "t", partitions: [0, 1, 2] }]
const flush = () => new Promise((resolve) => setImmediate(resolve))

describe("TransactionCoordinator", () => {
  it.effect(
    "a commit writes PrepareCommit, sends one WriteTxnMarkers per leader at the shard's epoch, then CompleteCommit",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        yield* Effect.promise(async () => {
          const { coordinator, sent, state, log } = setup(runtime)
          await coordinator.onLeadership(0, true, 7)
          const init = await coordinator.initProducerId({
            transactionalId: "tx",
            transactionTimeoutMs: 60_000,
            producerId: -1n,
            producerEpoch: -1
          })
          expect(init).toEqual({ errorCode: 0, producerId: 1000n, producerEpoch: 0 })
          expect(
            await coordinator.addPartitions({ transactionalId: "tx", producerId: 1000n, producerEpoch: 0, partitions })
          ).toBe(0)
          expect(
            await coordinator.endTxn({
              transactionalId: "tx",
              producerId: 1000n,
              producerEpoch: 0,
              committed: true,
              transactionsV2: false
            })
          ).toEqual({ errorCode: 0, producerId: 1000n, producerEpoch: 0 })
          await coordinator.markersIdle()
          expect(state("tx")).toBe("CompleteCommit")
          expect(sent.map((s) => s.brokerId).sort()).toEqual([1, 2])
          const toOne = sent.find((s) => s.brokerId === 1)!.request
          expect(toOne.markers).toEqual([
            {
              producerId: 1000n,
              producerEpoch: 0,
              transactionResult: true,
              topics: [{ name: "t", partitionIndexes: [0, 2] }],
              coordinatorEpoch: 7
            }
          ])
          expect(log.records(0).map((r) => r.value?.state)).toEqual([
            "Empty",
            "Ongoing",
            "PrepareCommit",
            "CompleteCommit"
          ])
          await coordinator.close()
        })
      })
  )

  it.effect("a marker answered NOT_LEADER_OR_FOLLOWER is sent again, to the partition's new leader", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      const t = setup(runtime)
      yield* Effect.promise(async () => {
        await t.coordinator.onLeadership(0, true, 1)
        await t.coordinator.initProducerId({
          transactionalId: "tx",
          transactionTimeoutMs: 60_000,
          producerId: -1n,
          producerEpoch: -1
        })
        await t.coordinator.addPartitions({ transactionalId: "tx", producerId: 1000n, producerEpoch: 0, partitions })
        t.setAnswers((b, _t, p) => (b === 2 && p === 1 ? E.NOT_LEADER_OR_FOLLOWER : 0))
        await t.coordinator.endTxn({
          transactionalId: "tx",
          producerId: 1000n,
          producerEpoch: 0,
          committed: false,
          transactionsV2: false
        })
        for (let i = 0; i < 5 && t.sent.length < 2; i++) await flush()
        expect(t.state("tx")).toBe("PrepareAbort")
        t.leaders.set("t/1", 3)
        t.setAnswers(() => 0)
      })
      yield* TestClock.adjust("100 millis")
      yield* Effect.promise(async () => {
        await t.coordinator.markersIdle()
        expect(t.state("tx")).toBe("CompleteAbort")
        expect(t.sent.at(-1)).toMatchObject({
          brokerId: 3,
          request: { markers: [{ topics: [{ name: "t", partitionIndexes: [1] }] }] }
        })
        await t.coordinator.close()
      })
    })
  )

  it.effect("a coordinator that loads a shard with a Prepare state sends its markers and completes it", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(async () => {
        const a = setup(runtime)
        await a.coordinator.onLeadership(0, true, 1)
        await a.coordinator.initProducerId({
          transactionalId: "tx",
          transactionTimeoutMs: 60_000,
          producerId: -1n,
          producerEpoch: -1
        })
        await a.coordinator.addPartitions({ transactionalId: "tx", producerId: 1000n, producerEpoch: 0, partitions })
        // Markers never acked by the old leader: it loses the partition with the transaction prepared.
        a.setAnswers(() => E.NOT_ENOUGH_REPLICAS)
        await a.coordinator.endTxn({
          transactionalId: "tx",
          producerId: 1000n,
          producerEpoch: 0,
          committed: true,
          transactionsV2: false
        })
        await flush()
        await a.coordinator.onLeadership(0, false, 2)
        const b = setup(runtime, a.log)
        await b.coordinator.onLeadership(0, true, 2)
        await b.coordinator.markersIdle()
        expect(b.state("tx")).toBe("CompleteCommit")
        expect(b.sent.every((s) => s.request.markers[0]!.coordinatorEpoch === 2)).toBe(true)
        await a.coordinator.close()
        await b.coordinator.close()
      })
    })
  )

  it.effect(
    "a zombie's InitProducerId during its transaction: the transaction is aborted at a bumped epoch, then the new producer gets epoch 2",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        yield* Effect.promise(async () => {
          const { coordinator, sent, state } = setup(runtime)
          await coordinator.onLeadership(0, true, 1)
          await coordinator.initProducerId({
            transactionalId: "tx",
            transactionTimeoutMs: 60_000,
            producerId: -1n,
            producerEpoch: -1
          })
          await coordinator.addPartitions({ transactionalId: "tx", producerId: 1000n, producerEpoch: 0, partitions })
          const second = await coordinator.initProducerId({
            transactionalId: "tx",
            transactionTimeoutMs: 60_000,
            producerId: -1n,
            producerEpoch: -1
          })
          expect(second.errorCode).toBe(E.CONCURRENT_TRANSACTIONS)
          await coordinator.markersIdle()
          expect(state("tx")).toBe("CompleteAbort")
          expect(
            sent.every((s) => s.request.markers[0]!.producerEpoch === 1 && !s.request.markers[0]!.transactionResult)
          ).toBe(true)
          const retry = await coordinator.initProducerId({
            transactionalId: "tx",
            transactionTimeoutMs: 60_000,
            producerId: -1n,
            producerEpoch: -1
          })
          expect(retry).toEqual({ errorCode: 0, producerId: 1000n, producerEpoch: 2 })
          expect(
            await coordinator.addPartitions({ transactionalId: "tx", producerId: 1000n, producerEpoch: 0, partitions })
          ).toBe(E.PRODUCER_FENCED)
          await coordinator.close()
        })
      })
  )

  it.effect(
    "the sweep timer aborts a transaction past its timeout, and tombstones ids idle past transactional.id.expiration.ms",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        const t = setup(runtime)
        yield* Effect.promise(async () => {
          await t.coordinator.onLeadership(0, true, 1)
          await t.coordinator.initProducerId({
            transactionalId: "tx",
            transactionTimeoutMs: 5000,
            producerId: -1n,
            producerEpoch: -1
          })
          await t.coordinator.addPartitions({ transactionalId: "tx", producerId: 1000n, producerEpoch: 0, partitions })
        })
        yield* TestClock.adjust("4 seconds")
        yield* Effect.promise(async () => {
          await flush()
          expect(t.state("tx")).toBe("Ongoing")
        })
        yield* TestClock.adjust("2 seconds")
        yield* Effect.promise(async () => {
          for (let i = 0; i < 10 && t.state("tx") !== "CompleteAbort"; i++) {
            await flush()
            await t.coordinator.markersIdle()
          }
          expect(t.state("tx")).toBe("CompleteAbort")
          expect(t.coordinator.describe("tx").metadata?.producerEpoch).toBe(1)
          expect(t.coordinator.listTransactions({ states: [], producerIds: [], durationMs: -1 })).toEqual([
            { transactionalId: "tx", producerId: 1000n, state: "CompleteAbort" }
          ])
        })
        yield* TestClock.adjust("61 seconds")
        yield* Effect.promise(async () => {
          for (let i = 0; i < 10 && t.coordinator.describe("tx").errorCode === 0; i++) await flush()
          expect(t.coordinator.describe("tx").errorCode).toBe(E.TRANSACTIONAL_ID_NOT_FOUND)
          expect(t.log.records(0).at(-1)).toEqual({ transactionalId: "tx", value: null })
          await t.coordinator.close()
        })
      })
  )

  it.effect("property: a shard reloaded from its log has the state the live writes built", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(async () => {
        const { FastCheck: fc } = await import("effect")
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(fc.constantFrom("init", "add", "commit", "abort"), fc.constantFrom("a", "b", "c", "d")), {
              maxLength: 30
            }),
            async (ops) => {
              const a = setup(runtime)
              await a.coordinator.onLeadership(0, true, 1)
              for (const [op, id] of ops) {
                const m = a.coordinator.describe(id).metadata
                const producer = {
                  transactionalId: id,
                  producerId: m?.producerId ?? 0n,
                  producerEpoch: m?.producerEpoch ?? 0
                }
                if (op === "init")
                  await a.coordinator.initProducerId({
                    transactionalId: id,
                    transactionTimeoutMs: 60_000,
                    producerId: -1n,
                    producerEpoch: -1
                  })
                else if (op === "add")
                  await a.coordinator.addPartitions({
                    ...producer,
                    partitions: [{ topic: "t", partitions: [id.charCodeAt(0) % 3] }]
                  })
                else await a.coordinator.endTxn({ ...producer, committed: op === "commit", transactionsV2: false })
                await a.coordinator.markersIdle()
              }
              const live = a.coordinator
                .listTransactions({ states: [], producerIds: [], durationMs: -1 })
                .map((t) => a.coordinator.describe(t.transactionalId))
              const b = setup(runtime, a.log)
              await b.coordinator.onLeadership(0, true, 2)
              const reloaded = b.coordinator
                .listTransactions({ states: [], producerIds: [], durationMs: -1 })
                .map((t) => b.coordinator.describe(t.transactionalId))
              expect(reloaded).toEqual(live)
              const replayed = a.log.records(0).reduce(TransactionControl.replay, TransactionControl.empty)
              expect(HashSize(replayed)).toBe(live.length)
              await a.coordinator.close()
              await b.coordinator.close()
            }
          ),
          { numRuns: 30 }
        )
      })
    })
  )
})

const HashSize = (s: TransactionControl.State) => [...s.transactions].length
