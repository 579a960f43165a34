/**
 * TxnOffsetCommit on the group shards: offsets committed in a producer's transaction are appended as
 * transactional entries of that producer, stay pending (OffsetFetch answers the committed offset, or
 * UNSTABLE_OFFSET_COMMIT with RequireStable) until the producer's COMMIT marker is written through the
 * shard, are dropped on ABORT, and a load replays pending offsets and markers alike.
 */
import { describe, expect, it } from "@effect/vitest"
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { Errors, type GroupRecords } from "@clustermirror/protocol"
import { Effect, type Runtime } from "effect"
import type * as GroupCoordinator from "../src/GroupCoordinator.js"
import * as GroupShards from "../src/GroupShards.js"

const E = Errors.ErrorCode
const P = { producerId: 7n, producerEpoch: 3 }

const partitions = (offset: bigint) => [
  {
    name: "t",
    partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: 1, committedMetadata: "m" }]
  }
]

const txnCommit = (
  offset: bigint,
  producer = P,
  member: { generationId: number; memberId: string } = { generationId: -1, memberId: "" }
): GroupCoordinator.TxnOffsetCommitRequest => ({
  transactionalId: "tx",
  groupId: "g",
  ...producer,
  ...member,
  groupInstanceId: null,
  topics: partitions(offset)
})

const plainCommit = (offset: bigint): GroupCoordinator.OffsetCommitRequest => ({
  groupId: "g",
  generationId: -1,
  memberId: "",
  groupInstanceId: null,
  topics: partitions(offset)
})

const cluster = (runtime: Runtime.Runtime<never>) => {
  const log = CoordinatorLog.memory<CoordinatorLog.TxnEntry<GroupRecords.GroupRecord>>()
  const broker = () =>
    new GroupShards.GroupShards({
      log,
      partitionCount: () => 1,
      runtime,
      config: () => ({ groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1000 })
    })
  return { a: broker(), b: broker(), log }
}

const fetched = async (gc: GroupCoordinator.GroupCoordinator, requireStable = false) => {
  const r = await gc.fetchOffsets({ groupId: "g", requireStable, topics: [{ name: "t", partitionIndexes: [0] }] })
  const p = r.topics[0]!.partitions[0]!
  return [p.committedOffset, p.errorCode] as const
}

const codes = (r: GroupCoordinator.OffsetCommitResult) => r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))

const marker = (commit: boolean, producer = P, coordinatorEpoch = 0): GroupCoordinator.TxnCompletion => ({
  ...producer,
  commit,
  coordinatorEpoch
})

const scenario = (name: string, body: (runtime: Runtime.Runtime<never>) => Promise<void>) =>
  it.effect(name, () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(() => body(runtime))
    })
  )

describe("TxnOffsetCommit", () => {
  scenario("keeps transactional offsets pending until the COMMIT marker, then serves them", async (runtime) => {
    const { a, log } = cluster(runtime)
    a.onLeadership(0, true, 1)
    const gc = await a.forGroup("g")!
    expect(codes(await gc.commitOffsets(plainCommit(5n)))).toEqual([0])
    expect(codes(await gc.commitTransactionalOffsets(txnCommit(10n)))).toEqual([0])
    expect(log.records(0).at(-1)).toMatchObject({ _tag: "TxnRecord", producerId: 7n, producerEpoch: 3 })
    expect(await fetched(gc)).toEqual([5n, 0])
    expect(await fetched(gc, true)).toEqual([-1n, E.UNSTABLE_OFFSET_COMMIT])
    expect(await gc.completeTransaction(marker(true))).toBe(0)
    expect(log.records(0).at(-1)).toEqual({
      _tag: "TxnMarker",
      producerId: 7n,
      producerEpoch: 3,
      commit: true,
      coordinatorEpoch: 0
    })
    expect(await fetched(gc)).toEqual([10n, 0])
    expect(await fetched(gc, true)).toEqual([10n, 0])
    await a.close()
  })

  scenario("drops transactional offsets on ABORT", async (runtime) => {
    const { a } = cluster(runtime)
    a.onLeadership(0, true, 1)
    const gc = await a.forGroup("g")!
    await gc.commitOffsets(plainCommit(5n))
    await gc.commitTransactionalOffsets(txnCommit(10n))
    expect(await gc.completeTransaction(marker(false))).toBe(0)
    expect(await fetched(gc, true)).toEqual([5n, 0])
    // A marker of another producer changes nothing of this one's.
    await gc.commitTransactionalOffsets(txnCommit(11n))
    expect(await gc.completeTransaction(marker(true, { producerId: 8n, producerEpoch: 0 }))).toBe(0)
    expect(await fetched(gc, true)).toEqual([-1n, E.UNSTABLE_OFFSET_COMMIT])
    await a.close()
  })

  scenario(
    "keeps a plain commit written after the transaction's offset when the transaction commits",
    async (runtime) => {
      const { a } = cluster(runtime)
      a.onLeadership(0, true, 1)
      const gc = await a.forGroup("g")!
      await gc.commitTransactionalOffsets(txnCommit(10n))
      await gc.commitOffsets(plainCommit(20n))
      await gc.completeTransaction(marker(true))
      expect(await fetched(gc)).toEqual([20n, 0])
      await a.close()
    }
  )

  scenario("replays pending offsets and markers on a load at the next leader epoch", async (runtime) => {
    const { a, b } = cluster(runtime)
    a.onLeadership(0, true, 1)
    const ga = await a.forGroup("g")!
    await ga.commitTransactionalOffsets(txnCommit(10n))
    await ga.commitTransactionalOffsets(txnCommit(30n, { producerId: 9n, producerEpoch: 0 }))
    await ga.completeTransaction(marker(true, { producerId: 9n, producerEpoch: 0 }))
    a.onLeadership(0, false, 2)
    b.onLeadership(0, true, 2)
    const gb = await b.forGroup("g")!
    // Producer 9 committed; producer 7 is still open after the load.
    expect(await fetched(gb)).toEqual([30n, 0])
    expect(await fetched(gb, true)).toEqual([-1n, E.UNSTABLE_OFFSET_COMMIT])
    expect(await gb.completeTransaction(marker(true))).toBe(0)
    // Producer 7's offset was written before producer 9's: the later record stays.
    expect(await fetched(gb, true)).toEqual([30n, 0])
    await a.close()
    await b.close()
  })

  scenario(
    "checks member and generation like OffsetCommit, and accepts v0-2 commits (no member) on a live group",
    async (runtime) => {
      const { a } = cluster(runtime)
      a.onLeadership(0, true, 1)
      const gc = await a.forGroup("g")!
      // Unknown group with a generation: refused; without one: a simple group is created.
      expect(codes(await gc.commitTransactionalOffsets(txnCommit(1n, P, { generationId: 4, memberId: "m" })))).toEqual([
        E.ILLEGAL_GENERATION
      ])
      let joined = await gc.joinGroup({
        groupId: "g",
        memberId: "",
        groupInstanceId: null,
        protocolType: "consumer",
        protocols: [{ name: "range", metadata: new Uint8Array([1]) }],
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        clientId: "c",
        clientHost: "/h",
        requireKnownMemberId: true
      })
      if (joined.errorCode === E.MEMBER_ID_REQUIRED)
        joined = await gc.joinGroup({
          groupId: "g",
          memberId: joined.memberId,
          groupInstanceId: null,
          protocolType: "consumer",
          protocols: [{ name: "range", metadata: new Uint8Array([1]) }],
          sessionTimeoutMs: 10_000,
          rebalanceTimeoutMs: 10_000,
          clientId: "c",
          clientHost: "/h",
          requireKnownMemberId: true
        })
      expect(joined.errorCode).toBe(0)
      const synced = await gc.syncGroup({
        groupId: "g",
        generationId: joined.generationId,
        memberId: joined.memberId,
        groupInstanceId: null,
        protocolType: "consumer",
        protocolName: "range",
        assignments: [{ memberId: joined.memberId, assignment: new Uint8Array([1]) }]
      })
      expect(synced.errorCode).toBe(0)
      const member = { generationId: joined.generationId, memberId: joined.memberId }
      expect(codes(await gc.commitTransactionalOffsets(txnCommit(2n, P, member)))).toEqual([0])
      expect(
        codes(
          await gc.commitTransactionalOffsets(txnCommit(2n, P, { ...member, generationId: member.generationId + 1 }))
        )
      ).toEqual([E.ILLEGAL_GENERATION])
      expect(codes(await gc.commitTransactionalOffsets(txnCommit(2n, P, { ...member, memberId: "other" })))).toEqual([
        E.UNKNOWN_MEMBER_ID
      ])
      // TxnOffsetCommit v0-2 has no member fields: accepted on a Stable group (a plain commit is not).
      expect(codes(await gc.commitTransactionalOffsets(txnCommit(3n)))).toEqual([0])
      expect(codes(await gc.commitOffsets(plainCommit(3n)))).toEqual([E.UNKNOWN_MEMBER_ID])
      await a.close()
    }
  )

  scenario("answers the log's refusal of a fenced producer epoch", async (runtime) => {
    const { a, log } = cluster(runtime)
    a.onLeadership(0, true, 1)
    const gc = await a.forGroup("g")!
    await Effect.runPromise(log.failNextAppend(E.INVALID_PRODUCER_EPOCH))
    expect(codes(await gc.commitTransactionalOffsets(txnCommit(10n)))).toEqual([E.INVALID_PRODUCER_EPOCH])
    await Effect.runPromise(log.failNextAppend(E.TRANSACTION_COORDINATOR_FENCED))
    expect(await gc.completeTransaction(marker(true))).toBe(E.TRANSACTION_COORDINATOR_FENCED)
    expect(await fetched(gc, true)).toEqual([-1n, 0])
    await a.close()
  })
})
