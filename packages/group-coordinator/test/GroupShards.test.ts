import { describe, expect, it } from "@effect/vitest"
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import type { GroupRecords } from "@clustermirror/protocol"
import { Effect, type Runtime, TestClock } from "effect"
import type * as GroupCoordinator from "../src/GroupCoordinator.js"
import * as GroupShards from "../src/GroupShards.js"

// Two brokers' shards over the same in-memory `__consumer_offsets` partitions, as replicas of one log.

const commit = (groupId: string, offset: bigint): GroupCoordinator.OffsetCommitRequest => ({
  groupId,
  generationId: -1,
  memberId: "",
  groupInstanceId: null,
  topics: [
    {
      name: "t",
      partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: 0, committedMetadata: null }]
    }
  ]
})

const joinRequest = (memberId: string): GroupCoordinator.JoinGroupRequest => ({
  groupId: "g",
  memberId,
  groupInstanceId: null,
  protocolType: "consumer",
  protocols: [{ name: "range", metadata: new Uint8Array([1]) }],
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 10_000,
  clientId: "c",
  clientHost: "/h",
  requireKnownMemberId: true
})

const heartbeat = (memberId: string): GroupCoordinator.HeartbeatRequest => ({
  groupId: "g",
  generationId: 1,
  memberId,
  groupInstanceId: null
})

const committed = async (shards: GroupShards.GroupShards, groupId: string): Promise<bigint | undefined> => {
  const c = shards.forGroup(groupId)
  if (c === undefined) return undefined
  const fetched = await (await c).fetchOffsets({ groupId, topics: [{ name: "t", partitionIndexes: [0] }] })
  return fetched.topics[0]?.partitions[0]?.committedOffset
}

const cluster = (runtime: Runtime.Runtime<never>) => {
  // every load reads the records committed so far, whoever appended them
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

/** A member joined and synced on A (Stable, generation 1), then leadership moved to B at epoch 2. */
const stableThenMoved = async (runtime: Runtime.Runtime<never>) => {
  const { a, b, log } = cluster(runtime)
  a.onLeadership(0, true, 1)
  const ga = await a.forGroup("g")!
  let joined = await ga.joinGroup(joinRequest(""))
  if (joined.errorCode === 79) joined = await ga.joinGroup(joinRequest(joined.memberId))
  expect(joined).toMatchObject({ errorCode: 0, generationId: 1 })
  const synced = await ga.syncGroup({
    groupId: "g",
    generationId: 1,
    memberId: joined.memberId,
    groupInstanceId: null,
    protocolType: "consumer",
    protocolName: "range",
    assignments: [{ memberId: joined.memberId, assignment: new Uint8Array([7]) }]
  })
  expect(synced.errorCode).toBe(0)
  a.onLeadership(0, false, 2)
  b.onLeadership(0, true, 2)
  await b.forGroup("g")
  return { a, b, log, memberId: joined.memberId }
}

describe("GroupShards", () => {
  it.effect("a partition whose log cannot be read has no coordinator and the failure is reported", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(async () => {
        const log = CoordinatorLog.memory<CoordinatorLog.TxnEntry<GroupRecords.GroupRecord>>()
        const failed: Array<number> = []
        const shards = new GroupShards.GroupShards({
          log,
          partitionCount: () => 1,
          runtime,
          onLoadFailed: (partition) => failed.push(partition)
        })
        await Effect.runPromise(log.failNextRead(0))
        shards.onLeadership(0, true, 1)
        await expect(shards.forGroup("g")!).rejects.toBeDefined()
        await new Promise((resolve) => setImmediate(resolve))
        expect(failed).toEqual([0])
        expect(shards.forGroup("g")).toBeUndefined()
        await shards.close()
      })
    })
  )

  it.effect(
    "given leadership bouncing A→B→A seen by A in one delta, when B committed meanwhile, then A reloads and serves B's commits",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        yield* Effect.promise(async () => {
          const { a, b } = cluster(runtime)
          a.onLeadership(0, true, 1)
          await (await a.forGroup("g")!).commitOffsets(commit("g", 10n))

          b.onLeadership(0, true, 2)
          await (await b.forGroup("g")!).commitOffsets(commit("g", 20n))
          b.onLeadership(0, false, 3)

          // A only sees the end state: leader again, in epoch 3
          a.onLeadership(0, true, 3)
          expect(await committed(a, "g")).toBe(20n)
          expect(a.leaderEpochOf(0)).toBe(3)
        })
      })
  )

  it.effect("given the same leader epoch again, then the shard is kept with its live state", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(async () => {
        const { a } = cluster(runtime)
        a.onLeadership(0, true, 1)
        const first = await a.forGroup("g")!
        const joined = first.joinGroup({
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
        expect((await joined).errorCode).toBe(79)
        a.onLeadership(0, true, 1)
        expect(await a.forGroup("g")!).toBe(first)
      })
    })
  )

  it.effect("given leadership lost, then the shard is closed and the partition has no coordinator", () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(async () => {
        const { a } = cluster(runtime)
        a.onLeadership(0, true, 1)
        const first = await a.forGroup("g")!
        a.onLeadership(0, false, -1)
        expect(a.forGroup("g")).toBeUndefined()
        await new Promise<void>((resolve) => setImmediate(resolve))
        expect(
          (await first.heartbeat({ groupId: "g", generationId: 1, memberId: "m", groupInstanceId: null })).errorCode
        ).toBe(16)
      })
    })
  )

  it.effect(
    "given a Stable group, when leadership moves to another broker, then the member heartbeats there with its generation and keeps its assignment",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        const { b, memberId } = yield* Effect.promise(() => stableThenMoved(runtime))
        expect(
          yield* Effect.promise(async () => (await (await b.forGroup("g")!).heartbeat(heartbeat(memberId))).errorCode)
        ).toBe(0)
        const described = yield* Effect.promise(async () => (await (await b.forGroup("g")!).describeGroups(["g"]))[0]!)
        expect(described).toMatchObject({ groupState: "Stable", protocolData: "range" })
        expect(described.members.map((m) => m.memberId)).toEqual([memberId])
        expect(Array.from(described.members[0]!.memberAssignment)).toEqual([7])
      })
  )

  it.effect(
    "given a Stable group moved to another broker, when its member stays silent, then its session ends a session timeout after the load, on the new shard's timers",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        const { b, log, memberId } = yield* Effect.promise(() => stableThenMoved(runtime))
        const before = log.records(0).length
        yield* TestClock.adjust(9_999)
        expect(log.records(0).length).toBe(before)
        yield* TestClock.adjust(1)
        yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
        expect(
          yield* Effect.promise(async () => (await (await b.forGroup("g")!).heartbeat(heartbeat(memberId))).errorCode)
        ).toBe(25)
        // the emptied group was persisted by the new coordinator
        expect(log.records(0).length).toBe(before + 1)
        expect(log.records(0).at(-1)).toMatchObject({
          _tag: "Record",
          record: { type: "GroupMetadata", value: { data: { generation: 2, members: [] } } }
        })
      })
  )
})
