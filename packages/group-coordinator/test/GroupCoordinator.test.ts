import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { GroupRecords } from "@clustermirror/protocol"
import { describe, expect, it as effectIt } from "@effect/vitest"
import { Effect, Either, HashMap, Runtime, TestClock } from "effect"
import fc from "fast-check"
import * as GC from "../src/GroupCoordinator.js"
import * as GroupShards from "../src/GroupShards.js"
import type * as GroupState from "../src/internal/groupState.js"

// ---------------------------------------------------------------------------------------------------
// Harness: a coordinator on Effect's TestClock and an in-memory log; nothing sleeps.

/** The runtime (with its TestClock) of the scenario running now; scenarios run one at a time. */
let runtime: Runtime.Runtime<never> = Runtime.defaultRuntime

/** A scenario as an `it.effect`: its runtime's TestClock is the coordinators' clock. */
const it = (name: string, body: () => void | Promise<void>) =>
  effectIt.effect(name, () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_000_000)
      runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(async () => body())
    })
  )

/** Moves the TestClock forward, firing the coordinators' timers that fall due, then lets callbacks run. */
const advanceClock = async (ms: number): Promise<void> => {
  await Runtime.runPromise(runtime)(TestClock.adjust(ms))
  await settle()
}

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s)
const text = (b: Uint8Array): string => new TextDecoder().decode(b)

/** Lets appends and promise callbacks run; no time passes on the coordinator's clock. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}

/** A promise whose outcome can be inspected without awaiting it. */
const track = <A>(p: Promise<A>): { readonly done: boolean; readonly value: A } => {
  let value: A | undefined
  let done = false
  p.then((v) => {
    value = v
    done = true
  })
  return {
    get done() {
      return done
    },
    get value() {
      if (!done) throw new Error("still pending")
      return value!
    }
  }
}

/** `memory` is the log used when the scenario does not bring its own. */
const given = async (config: Partial<GC.GroupCoordinatorConfig> = {}, log?: GC.GroupLog) => {
  const memory = GC.memoryGroupLog()
  let n = 0
  const gc = await GC.make({
    log: log ?? memory,
    runtime,
    config: { groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1000, ...config },
    randomUuid: () => `uuid-${++n}`
  })
  return { gc, memory, advance: advanceClock }
}

const join = (over: Partial<GC.JoinGroupRequest> = {}): GC.JoinGroupRequest => ({
  groupId: "g",
  memberId: "",
  groupInstanceId: null,
  protocolType: "consumer",
  protocols: [{ name: "range", metadata: bytes("sub") }],
  sessionTimeoutMs: 10_000,
  rebalanceTimeoutMs: 30_000,
  clientId: "c",
  clientHost: "/127.0.0.1",
  requireKnownMemberId: false,
  ...over
})

const sync = (
  memberId: string,
  generationId: number,
  assignments: ReadonlyArray<readonly [string, string]> = [],
  over: Partial<GC.SyncGroupRequest> = {}
): GC.SyncGroupRequest => ({
  groupId: "g",
  generationId,
  memberId,
  groupInstanceId: null,
  protocolType: "consumer",
  protocolName: "range",
  assignments: assignments.map(([m, a]) => ({ memberId: m, assignment: bytes(a) })),
  ...over
})

const hb = (memberId: string, generationId: number, groupInstanceId: string | null = null): GC.HeartbeatRequest => ({
  groupId: "g",
  generationId,
  memberId,
  groupInstanceId
})

const commit = (
  over: Partial<GC.OffsetCommitRequest>,
  partitions: ReadonlyArray<readonly [string, number, bigint]> = [["t", 0, 42n]]
): GC.OffsetCommitRequest => ({
  groupId: "g",
  generationId: -1,
  memberId: "",
  groupInstanceId: null,
  topics: [...new Set(partitions.map(([t]) => t))].map((name) => ({
    name,
    partitions: partitions
      .filter(([t]) => t === name)
      .map(([, p, o]) => ({
        partitionIndex: p,
        committedOffset: o,
        committedLeaderEpoch: 5,
        committedMetadata: `meta-${p}`
      }))
  })),
  ...over
})

const codes = (r: GC.OffsetCommitResult): ReadonlyArray<number> =>
  r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))

const decodedLog = (log: GC.MemoryGroupLog): ReadonlyArray<GroupRecords.GroupRecord> =>
  log.records.map((r) => Either.getOrThrow(GroupRecords.decode(r.key, r.value)))

const stateOf = async (gc: GC.GroupCoordinator, groupId = "g") => (await gc.describeGroups([groupId]))[0]!

/** One member joined and synced: generation 1, Stable. */
const givenStableSingle = async (config: Partial<GC.GroupCoordinatorConfig> = {}) => {
  const ctx = await given(config)
  const joined = await ctx.gc.joinGroup(join())
  await ctx.gc.syncGroup(sync(joined.memberId, joined.generationId, [[joined.memberId, "all"]]))
  return { ...ctx, memberId: joined.memberId }
}

/** Two members A (leader) and B, Stable at generation 1 after an initial delay that collected both. */
const givenStablePair = async (overB: Partial<GC.JoinGroupRequest> = {}) => {
  const ctx = await given({ groupInitialRebalanceDelayMs: 100 })
  const a = track(ctx.gc.joinGroup(join({ clientId: "a" })))
  const b = track(ctx.gc.joinGroup(join({ clientId: "b", ...overB })))
  // b joined during the initial delay, which therefore runs once more
  await ctx.advance(200)
  const [ja, jb] = [a.value, b.value]
  const sb = track(ctx.gc.syncGroup(sync(jb.memberId, 1)))
  await ctx.gc.syncGroup(
    sync(ja.memberId, 1, [
      [ja.memberId, "pa"],
      [jb.memberId, "pb"]
    ])
  )
  await settle()
  expect(sb.value.errorCode).toBe(0)
  return { ...ctx, a: ja.memberId, b: jb.memberId }
}

// ---------------------------------------------------------------------------------------------------

describe("GroupCoordinator membership", () => {
  it("given an empty coordinator, when one member joins, syncs and heartbeats, then it leads a Stable generation 1", async () => {
    const { gc, memory } = await given()

    const joined = await gc.joinGroup(join())
    expect(joined).toMatchObject({
      errorCode: 0,
      generationId: 1,
      protocolType: "consumer",
      protocolName: "range",
      memberId: "c-uuid-1",
      leader: "c-uuid-1",
      skipAssignment: false
    })
    expect(joined.members.map((m) => [m.memberId, text(m.metadata)])).toEqual([["c-uuid-1", "sub"]])
    expect((await stateOf(gc)).groupState).toBe("CompletingRebalance")

    const synced = await gc.syncGroup(sync(joined.memberId, 1, [[joined.memberId, "p0"]]))
    expect(synced.errorCode).toBe(0)
    expect(text(synced.assignment)).toBe("p0")
    expect(synced.protocolName).toBe("range")
    expect((await gc.heartbeat(hb(joined.memberId, 1))).errorCode).toBe(0)

    const described = await stateOf(gc)
    expect(described).toMatchObject({
      errorCode: 0,
      groupState: "Stable",
      protocolType: "consumer",
      protocolData: "range"
    })
    expect(text(described.members[0]!.memberAssignment)).toBe("p0")
    expect(text(described.members[0]!.memberMetadata)).toBe("sub")

    const persisted = decodedLog(memory)
    expect(persisted).toHaveLength(1)
    expect(persisted[0]).toMatchObject({
      type: "GroupMetadata",
      key: { group: "g" },
      value: { data: { generation: 1, leader: "c-uuid-1", protocol: "range" } }
    })
  })

  it("given two members joining within the initial delay, when the leader syncs after the follower, then both get the leader's assignment", async () => {
    const { gc, advance } = await given({ groupInitialRebalanceDelayMs: 100 })
    const a = track(gc.joinGroup(join({ clientId: "a" })))
    await advance(60)
    const b = track(gc.joinGroup(join({ clientId: "b", protocols: [{ name: "range", metadata: bytes("sub-b") }] })))
    await advance(50)
    // b joined during the delay, so when it ran out it was extended by another full delay
    expect(a.done).toBe(false)
    await advance(89)
    expect(a.done).toBe(false)
    await advance(1)
    expect(a.value).toMatchObject({ errorCode: 0, generationId: 1, leader: "a-uuid-1" })
    expect(b.value).toMatchObject({ errorCode: 0, generationId: 1, leader: "a-uuid-1", members: [] })
    expect(a.value.members.map((m) => [m.memberId, text(m.metadata)])).toEqual([
      ["a-uuid-1", "sub"],
      ["b-uuid-2", "sub-b"]
    ])

    const follower = track(gc.syncGroup(sync("b-uuid-2", 1)))
    await settle()
    expect(follower.done).toBe(false)
    const leader = await gc.syncGroup(
      sync("a-uuid-1", 1, [
        ["a-uuid-1", "pa"],
        ["b-uuid-2", "pb"]
      ])
    )
    await settle()
    expect(text(leader.assignment)).toBe("pa")
    expect(follower.value.errorCode).toBe(0)
    expect(text(follower.value.assignment)).toBe("pb")
    expect((await stateOf(gc)).groupState).toBe("Stable")
  })

  it("given a v4+ join without a member id, when it rejoins with the id it was given, then it is admitted", async () => {
    const { gc } = await given()
    const first = await gc.joinGroup(join({ requireKnownMemberId: true }))
    expect(first).toMatchObject({ errorCode: 79, memberId: "c-uuid-1", generationId: -1 })
    expect((await stateOf(gc)).members).toHaveLength(0)

    const second = await gc.joinGroup(join({ requireKnownMemberId: true, memberId: first.memberId }))
    expect(second).toMatchObject({ errorCode: 0, memberId: "c-uuid-1", generationId: 1, leader: "c-uuid-1" })
  })

  it("generates member ids as the client id and a random uuid", async () => {
    const gc = await GC.make({
      log: GC.memoryGroupLog(),
      runtime,
      config: { groupMinSessionTimeoutMs: 0 }
    })
    const first = await gc.joinGroup(join({ clientId: "rdkafka", requireKnownMemberId: true }))
    expect(first.memberId).toMatch(/^rdkafka-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    await gc.close()
  })

  it("given a member id handed out with MEMBER_ID_REQUIRED, when the member does not come back within its session timeout, then the id is forgotten", async () => {
    const { gc, advance } = await given()
    const first = await gc.joinGroup(join({ requireKnownMemberId: true }))
    await advance(10_000)
    const late = await gc.joinGroup(join({ requireKnownMemberId: true, memberId: first.memberId }))
    expect(late.errorCode).toBe(25)
  })

  it("given a Stable pair, when the leader rejoins and the follower does not within the rebalance timeout, then the follower is removed", async () => {
    const { gc, advance, a, b } = await givenStablePair({ sessionTimeoutMs: 60_000 })
    const rejoin = track(gc.joinGroup(join({ memberId: a, clientId: "a" })))
    await settle()
    expect(rejoin.done).toBe(false)
    expect((await gc.heartbeat(hb(b, 1))).errorCode).toBe(27)
    expect((await stateOf(gc)).groupState).toBe("PreparingRebalance")

    await advance(29_999)
    expect(rejoin.done).toBe(false)
    await advance(1)
    expect(rejoin.value).toMatchObject({ errorCode: 0, generationId: 2, leader: a })
    expect(rejoin.value.members.map((m) => m.memberId)).toEqual([a])
    expect((await gc.heartbeat(hb(b, 1))).errorCode).toBe(25)
  })

  it("given a Stable pair, when the follower stops heartbeating, then its session expires and the leader is told to rebalance", async () => {
    const { gc, advance, a, b } = await givenStablePair()
    for (let t = 0; t < 9_000; t += 3_000) {
      await advance(3_000)
      expect((await gc.heartbeat(hb(a, 1))).errorCode).toBe(0)
    }
    await advance(1_000)
    expect((await gc.heartbeat(hb(a, 1))).errorCode).toBe(27)
    const rejoin = await gc.joinGroup(join({ memberId: a, clientId: "a" }))
    expect(rejoin).toMatchObject({ errorCode: 0, generationId: 2 })
    expect(rejoin.members.map((m) => m.memberId)).toEqual([a])
    expect((await gc.heartbeat(hb(b, 1))).errorCode).toBe(25)
  })

  it("given a Stable pair, when members leave, then the group rebalances and finally persists itself Empty", async () => {
    const { gc, memory, a, b } = await givenStablePair()
    const left = await gc.leaveGroup({ groupId: "g", members: [{ memberId: b, groupInstanceId: null }] })
    expect(left).toEqual({ errorCode: 0, members: [{ memberId: b, groupInstanceId: null, errorCode: 0 }] })
    expect((await gc.heartbeat(hb(a, 1))).errorCode).toBe(27)
    expect((await gc.joinGroup(join({ memberId: a, clientId: "a" }))).generationId).toBe(2)

    const batch = await gc.leaveGroup({
      groupId: "g",
      members: [
        { memberId: a, groupInstanceId: null },
        { memberId: "nobody", groupInstanceId: null }
      ]
    })
    expect(batch.members.map((m) => m.errorCode)).toEqual([0, 25])
    expect(await stateOf(gc)).toMatchObject({ groupState: "Empty", members: [] })
    const last = decodedLog(memory).at(-1)
    expect(last).toMatchObject({
      type: "GroupMetadata",
      value: { data: { generation: 3, members: [], protocol: null } }
    })
    expect((await gc.leaveGroup({ groupId: "unknown", members: [] })).errorCode).toBe(25)
  })

  it("given a Stable static member, when it rejoins without a member id, then it takes over with a new id and no rebalance", async () => {
    const { gc } = await given()
    const first = await gc.joinGroup(join({ groupInstanceId: "i1" }))
    await gc.syncGroup(sync(first.memberId, 1, [[first.memberId, "p0"]], { groupInstanceId: "i1" }))

    const again = await gc.joinGroup(join({ groupInstanceId: "i1" }))
    expect(again).toMatchObject({
      errorCode: 0,
      generationId: 1,
      memberId: "c-uuid-2",
      leader: "c-uuid-2",
      skipAssignment: true
    })
    expect((await stateOf(gc)).groupState).toBe("Stable")
    expect((await gc.heartbeat(hb(first.memberId, 1, "i1"))).errorCode).toBe(82)
    const synced = await gc.syncGroup(sync(again.memberId, 1, [], { groupInstanceId: "i1" }))
    expect(text(synced.assignment)).toBe("p0")
    expect((await gc.heartbeat(hb(again.memberId, 1, "i1"))).errorCode).toBe(0)
  })

  it("given a static member leaving by instance id alone, then it is removed", async () => {
    const { gc } = await given()
    const first = await gc.joinGroup(join({ groupInstanceId: "i1" }))
    const left = await gc.leaveGroup({ groupId: "g", members: [{ memberId: "", groupInstanceId: "i1" }] })
    expect(left.members[0]!.errorCode).toBe(0)
    expect((await gc.heartbeat(hb(first.memberId, 1))).errorCode).toBe(25)
  })

  it("given a member that never sends SyncGroup, when the rebalance timeout passes, then it is removed and the group rebalances", async () => {
    const { gc, advance } = await given({ groupInitialRebalanceDelayMs: 10 })
    const a = track(gc.joinGroup(join({ clientId: "a", rebalanceTimeoutMs: 5_000 })))
    const b = track(gc.joinGroup(join({ clientId: "b", rebalanceTimeoutMs: 5_000 })))
    await advance(20)
    const leaderSync = track(gc.syncGroup(sync(a.value.memberId, 1)))
    // the leader's (empty) assignment makes the group Stable; b never syncs
    await settle()
    expect(leaderSync.value.errorCode).toBe(0)
    await advance(4_000)
    expect((await gc.heartbeat(hb(a.value.memberId, 1))).errorCode).toBe(0)
    await advance(1_000)
    expect((await gc.heartbeat(hb(a.value.memberId, 1))).errorCode).toBe(27)
    expect((await gc.heartbeat(hb(b.value.memberId, 1))).errorCode).toBe(25)
  })

  it("rejects joins that do not fit the group", async () => {
    const { gc } = await givenStableSingle()
    expect((await gc.joinGroup(join({ protocolType: "connect" }))).errorCode).toBe(23)
    expect((await gc.joinGroup(join({ protocols: [{ name: "sticky", metadata: bytes("") }] }))).errorCode).toBe(23)
    expect((await gc.joinGroup(join({ sessionTimeoutMs: 10 }))).errorCode).toBe(26)
    expect((await gc.joinGroup(join({ groupId: "" }))).errorCode).toBe(24)
    expect((await gc.joinGroup(join({ groupId: "other", memberId: "ghost" }))).errorCode).toBe(25)
    expect((await gc.joinGroup(join({ memberId: "ghost" }))).errorCode).toBe(25)
    expect((await gc.listGroups()).map((g) => g.groupId)).toEqual(["g"])
  })

  it("rejects SyncGroup and Heartbeat from the wrong generation or member", async () => {
    const { gc, memberId } = await givenStableSingle()
    expect((await gc.syncGroup(sync(memberId, 7))).errorCode).toBe(22)
    expect((await gc.syncGroup(sync("ghost", 1))).errorCode).toBe(25)
    expect((await gc.syncGroup(sync(memberId, 1, [], { protocolName: "sticky" }))).errorCode).toBe(23)
    expect((await gc.heartbeat(hb(memberId, 0))).errorCode).toBe(22)
    expect((await gc.heartbeat({ ...hb(memberId, 1), groupId: "nope" })).errorCode).toBe(25)
  })

  it("given a group completing a rebalance, when a new member joins, then followers waiting in SyncGroup are told to rejoin", async () => {
    const { gc, advance } = await given({ groupInitialRebalanceDelayMs: 10 })
    const a = track(gc.joinGroup(join({ clientId: "a" })))
    const b = track(gc.joinGroup(join({ clientId: "b" })))
    await advance(20)
    const waiting = track(gc.syncGroup(sync(b.value.memberId, 1)))
    await settle()
    const c = track(gc.joinGroup(join({ clientId: "c" })))
    await settle()
    expect(waiting.value.errorCode).toBe(27)
    expect(c.done).toBe(false)
    expect((await stateOf(gc)).groupState).toBe("PreparingRebalance")
    const ra = track(gc.joinGroup(join({ memberId: a.value.memberId, clientId: "a" })))
    const rb = track(gc.joinGroup(join({ memberId: b.value.memberId, clientId: "b" })))
    await settle()
    expect([ra.value.generationId, rb.value.generationId, c.value.generationId]).toEqual([2, 2, 2])
    expect(ra.value.members).toHaveLength(3)
  })

  it("selects the protocol most members prefer among those all support, ties going to the leader's order", () => {
    const p = (...names: string[]) => names.map((name) => ({ name, metadata: new Uint8Array(0) }))
    expect(
      GC.selectProtocol(
        [
          { memberId: "a", protocols: p("range", "roundrobin") },
          { memberId: "b", protocols: p("roundrobin", "range") },
          { memberId: "c", protocols: p("roundrobin", "range", "sticky") }
        ],
        "a"
      )
    ).toBe("roundrobin")
    expect(
      GC.selectProtocol(
        [
          { memberId: "a", protocols: p("sticky", "range", "roundrobin") },
          { memberId: "b", protocols: p("roundrobin", "range") }
        ],
        "a"
      )
    ).toBe("range")
  })
})

describe("GroupCoordinator offsets", () => {
  it("given no group, when a simple consumer commits, then the offsets are fetched back with epoch and metadata", async () => {
    const { gc, memory } = await given()
    const result = await gc.commitOffsets(
      commit({}, [
        ["t", 0, 42n],
        ["t", 1, 7n],
        ["u", 3, 9n]
      ])
    )
    expect(codes(result)).toEqual([0, 0, 0])

    const some = await gc.fetchOffsets({ groupId: "g", topics: [{ name: "t", partitionIndexes: [1, 2] }] })
    expect(some).toEqual({
      errorCode: 0,
      topics: [
        {
          name: "t",
          partitions: [
            { partitionIndex: 1, committedOffset: 7n, committedLeaderEpoch: 5, metadata: "meta-1", errorCode: 0 },
            { partitionIndex: 2, committedOffset: -1n, committedLeaderEpoch: -1, metadata: "", errorCode: 0 }
          ]
        }
      ]
    })
    const all = await gc.fetchOffsets({ groupId: "g", topics: null })
    expect(all.topics.map((t) => [t.name, t.partitions.map((p) => [p.partitionIndex, p.committedOffset])])).toEqual([
      [
        "t",
        [
          [0, 42n],
          [1, 7n]
        ]
      ],
      ["u", [[3, 9n]]]
    ])
    expect((await gc.fetchOffsets({ groupId: "none", topics: null })).topics).toEqual([])
    expect(await gc.listGroups()).toEqual([
      { groupId: "g", protocolType: "", groupState: "Empty", groupType: "classic" }
    ])
    const first = decodedLog(memory)[0]
    expect(first).toMatchObject({
      type: "OffsetCommit",
      key: { group: "g", topic: "t", partition: 0 },
      value: { data: { offset: 42n, leaderEpoch: 5, metadata: "meta-0", commitTimestamp: 1_000_000n } }
    })
  })

  it("validates commits against the group's membership and generation", async () => {
    const { gc, memberId } = await givenStableSingle()
    expect(codes(await gc.commitOffsets(commit({ memberId, generationId: 1 })))).toEqual([0])
    expect(codes(await gc.commitOffsets(commit({ memberId, generationId: 2 })))).toEqual([22])
    expect(codes(await gc.commitOffsets(commit({ memberId: "ghost", generationId: 1 })))).toEqual([25])
    // outside group management while the group has members
    expect(codes(await gc.commitOffsets(commit({})))).toEqual([25])
    expect(codes(await gc.commitOffsets(commit({ groupId: "unknown", generationId: 3, memberId: "m" })))).toEqual([22])
    const big = commit({ memberId, generationId: 1 })
    const tooLarge = {
      ...big,
      topics: [{ name: "t", partitions: [{ ...big.topics[0]!.partitions[0]!, committedMetadata: "x".repeat(4097) }] }]
    }
    expect(codes(await gc.commitOffsets(tooLarge))).toEqual([12])
    const fetched = await gc.fetchOffsets({ groupId: "g", topics: [{ name: "t", partitionIndexes: [0] }] })
    expect(fetched.topics[0]!.partitions[0]!.committedOffset).toBe(42n)
  })

  it("given a group completing a rebalance, when a member commits, then it is told the rebalance is in progress", async () => {
    const { gc } = await given()
    const joined = await gc.joinGroup(join())
    expect(codes(await gc.commitOffsets(commit({ memberId: joined.memberId, generationId: 1 })))).toEqual([27])
  })

  it("answers a commit only after its append is committed", async () => {
    const inner = GC.memoryGroupLog()
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const gated: GC.GroupLog = {
      append: async (records) => {
        await gate
        await inner.append(records)
      },
      readAll: () => inner.readAll()
    }
    const { gc } = await given({}, gated)
    const pending = track(gc.commitOffsets(commit({})))
    await settle()
    expect(pending.done).toBe(false)
    expect((await gc.fetchOffsets({ groupId: "g", topics: null })).topics).toEqual([])
    release()
    await settle()
    expect(codes(pending.value)).toEqual([0])
    expect((await gc.fetchOffsets({ groupId: "g", topics: null })).topics).toHaveLength(1)
  })

  it("given a failing log, when a member commits, then the commit fails retriably and nothing is visible", async () => {
    const failing: GC.GroupLog = {
      append: () => Promise.reject(new Error("disk full")),
      readAll: () => []
    }
    const { gc } = await given({}, failing)
    expect(codes(await gc.commitOffsets(commit({})))).toEqual([15])
    expect((await gc.fetchOffsets({ groupId: "g", topics: null })).topics).toEqual([])
  })
})

describe("GroupCoordinator restart and lifecycle", () => {
  it("given offsets and a Stable group in the log, when a coordinator starts on it, then it serves the same offsets and the group keeps its member, generation and assignment", async () => {
    const first = await givenStableSingle()
    await first.gc.commitOffsets(commit({ memberId: first.memberId, generationId: 1 }, [["t", 0, 100n]]))
    await first.gc.commitOffsets(commit({ groupId: "simple" }, [["t", 1, 5n]]))
    await first.gc.close()

    const log = GC.memoryGroupLog(first.memory.records)
    const { gc } = await given({}, log)
    expect(gc.persistedGeneration("g")).toBe(1)
    expect(await gc.fetchOffsets({ groupId: "g", topics: [{ name: "t", partitionIndexes: [0] }] })).toEqual({
      errorCode: 0,
      topics: [
        {
          name: "t",
          partitions: [
            { partitionIndex: 0, committedOffset: 100n, committedLeaderEpoch: 5, metadata: "meta-0", errorCode: 0 }
          ]
        }
      ]
    })
    expect((await gc.fetchOffsets({ groupId: "simple", topics: null })).topics[0]!.partitions[0]!.committedOffset).toBe(
      5n
    )
    const described = await stateOf(gc)
    expect(described).toMatchObject({ groupState: "Stable", protocolType: "consumer", protocolData: "range" })
    expect(described.members.map((m) => [m.memberId, m.clientId, m.clientHost])).toEqual([
      [first.memberId, "c", "/127.0.0.1"]
    ])
    expect(text(described.members[0]!.memberAssignment)).toBe("all")
    expect(text(described.members[0]!.memberMetadata)).toBe("sub")
    expect((await gc.listGroups()).map((g) => [g.groupId, g.groupState]).sort()).toEqual([
      ["g", "Stable"],
      ["simple", "Empty"]
    ])
    // no rebalance: the member goes on with its generation and assignment
    expect((await gc.heartbeat(hb(first.memberId, 1))).errorCode).toBe(0)
    expect(await gc.syncGroup(sync(first.memberId, 1))).toMatchObject({ errorCode: 0, protocolName: "range" })
    expect(text((await gc.syncGroup(sync(first.memberId, 1))).assignment)).toBe("all")
    expect(codes(await gc.commitOffsets(commit({ memberId: first.memberId, generationId: 1 })))).toEqual([0])
  })

  it("given a Stable pair in the log, when a coordinator loads it, then each member gets a fresh session timeout from the load", async () => {
    const first = await givenStablePair()
    await first.advance(5_000)
    await first.gc.close()
    const { gc, advance } = await given({}, GC.memoryGroupLog(first.memory.records))
    // the session timeout is 10 s: a member heartbeating just before it would have expired live stays
    await advance(9_000)
    expect((await gc.heartbeat(hb(first.a, 1))).errorCode).toBe(0)
    await advance(1_000)
    // b never heartbeats after the load: it expires 10 s after it, and a is told to rebalance
    expect((await gc.heartbeat(hb(first.b, 1))).errorCode).toBe(25)
    expect((await gc.heartbeat(hb(first.a, 1))).errorCode).toBe(27)
    const rejoined = await gc.joinGroup(join({ memberId: first.a, clientId: "a" }))
    expect(rejoined).toMatchObject({ errorCode: 0, generationId: 2, leader: first.a })
    expect(rejoined.members.map((m) => m.memberId)).toEqual([first.a])
  })

  it("given a group persisted Empty, when a coordinator loads it, then it is Empty with its generation and the next join starts the following one", async () => {
    const { gc, memberId, memory } = await givenStableSingle()
    await gc.leaveGroup({ groupId: "g", members: [{ memberId, groupInstanceId: null }] })
    await gc.close()
    const restarted = await given({}, GC.memoryGroupLog(memory.records))
    expect(await stateOf(restarted.gc)).toMatchObject({ groupState: "Empty", protocolType: "consumer", members: [] })
    expect((await restarted.gc.heartbeat(hb(memberId, 2))).errorCode).toBe(25)
    expect((await restarted.gc.joinGroup(join())).generationId).toBe(3)
  })

  it("given a Stable static member in the log, when it rejoins a loaded coordinator by instance id, then it takes over without a rebalance", async () => {
    const staticFirst = await given()
    const joined = await staticFirst.gc.joinGroup(join({ groupInstanceId: "i-1" }))
    await staticFirst.gc.syncGroup(sync(joined.memberId, 1, [[joined.memberId, "mine"]], { groupInstanceId: "i-1" }))
    await staticFirst.gc.close()
    const loaded = await given({}, GC.memoryGroupLog(staticFirst.memory.records))
    expect((await loaded.gc.heartbeat(hb(joined.memberId, 1, "i-1"))).errorCode).toBe(0)
    const takeover = await loaded.gc.joinGroup(join({ clientId: "c2", groupInstanceId: "i-1" }))
    expect(takeover).toMatchObject({ errorCode: 0, generationId: 1 })
    expect(takeover.memberId).not.toBe(joined.memberId)
    expect((await loaded.gc.heartbeat(hb(joined.memberId, 1, "i-1"))).errorCode).toBe(82)
    const synced = await loaded.gc.syncGroup(sync(takeover.memberId, 1, [], { groupInstanceId: "i-1" }))
    expect(text(synced.assignment)).toBe("mine")
  })

  it("lists groups by state and type, and describes unknown groups as not found", async () => {
    const { gc } = await givenStableSingle()
    await gc.commitOffsets(commit({ groupId: "simple" }))
    expect((await gc.listGroups({ statesFilter: ["stable"] })).map((g) => g.groupId)).toEqual(["g"])
    expect((await gc.listGroups({ statesFilter: ["Empty"] })).map((g) => g.groupId)).toEqual(["simple"])
    expect(await gc.listGroups({ typesFilter: ["consumer"] })).toEqual([])
    expect((await gc.listGroups({ typesFilter: ["Classic"] })).length).toBe(2)
    expect(await stateOf(gc, "missing")).toMatchObject({ errorCode: 69, groupState: "Dead" })
  })

  it("deletes only Empty groups, with tombstones that survive a restart", async () => {
    const { gc, memory } = await givenStableSingle()
    await gc.commitOffsets(commit({ groupId: "simple" }))
    expect(await gc.deleteGroups(["g", "simple", "missing"])).toEqual([
      { groupId: "g", errorCode: 68 },
      { groupId: "simple", errorCode: 0 },
      { groupId: "missing", errorCode: 69 }
    ])
    expect((await gc.fetchOffsets({ groupId: "simple", topics: null })).topics).toEqual([])
    const restarted = await given({}, GC.memoryGroupLog(memory.records))
    expect((await restarted.gc.listGroups()).map((g) => g.groupId)).toEqual(["g"])
  })

  it("close answers parked requests and clears every timer", async () => {
    const { gc } = await given({ groupInitialRebalanceDelayMs: 3_000 })
    const parked = track(gc.joinGroup(join()))
    await gc.joinGroup(join({ requireKnownMemberId: true }))
    expect(gc.pendingTimers()).toBeGreaterThan(0)
    await gc.close()
    await settle()
    expect(parked.value.errorCode).toBe(16)
    expect(gc.pendingTimers()).toBe(0)
    expect((await gc.heartbeat(hb("x", 1))).errorCode).toBe(16)
  })
})

describe("offset replay", () => {
  it("serves the last committed offset of each partition, live and after a restart", async () => {
    const commitArb = fc.tuple(fc.constantFrom("g1", "g2"), fc.constantFrom("t", "u"), fc.nat(3), fc.bigInt(0n, 1000n))
    await fc.assert(
      fc.asyncProperty(fc.array(commitArb, { maxLength: 30 }), async (commits) => {
        const live = await given()
        const expected = new Map<string, bigint>()
        for (const [groupId, topic, partition, offset] of commits) {
          await live.gc.commitOffsets(commit({ groupId }, [[topic, partition, offset]]))
          expected.set(`${groupId}/${topic}/${partition}`, offset)
        }
        const restarted = await given({}, GC.memoryGroupLog(live.memory.records))
        for (const { gc } of [live, restarted]) {
          const served = new Map<string, bigint>()
          for (const groupId of ["g1", "g2"]) {
            const fetched = await gc.fetchOffsets({ groupId, topics: null })
            for (const t of fetched.topics)
              for (const p of t.partitions) served.set(`${groupId}/${t.name}/${p.partitionIndex}`, p.committedOffset)
          }
          expect(served).toEqual(expected)
        }
      }),
      { numRuns: 50 }
    )
  })

  it("refuses to start on a log with records it cannot decode", async () => {
    const log = GC.memoryGroupLog([{ key: Buffer.from([0, 9, 0, 0]), value: null }])
    await expect(GC.make({ log, runtime })).rejects.toMatchObject({ _tag: "DecodeError" })
  })
})

// ---------------------------------------------------------------------------------------------------
// Live writes against a replay from scratch

type Op =
  | { readonly op: "join"; readonly client: number; readonly group: string; readonly rejoin: boolean }
  | { readonly op: "sync" | "heartbeat" | "leave"; readonly client: number; readonly group: string }
  | { readonly op: "commit"; readonly client: number; readonly group: string; readonly asMember: boolean }
  | { readonly op: "delete"; readonly group: string }
  | { readonly op: "deleteOffsets"; readonly group: string }
  | { readonly op: "advance"; readonly ms: number }

const opArb: fc.Arbitrary<Op> = (() => {
  const client = fc.nat(2)
  const group = fc.constantFrom("g", "h")
  return fc.oneof(
    fc.record({ op: fc.constant("join" as const), client, group, rejoin: fc.boolean() }),
    fc.record({ op: fc.constantFrom("sync" as const, "heartbeat" as const, "leave" as const), client, group }),
    fc.record({ op: fc.constant("commit" as const), client, group, asMember: fc.boolean() }),
    fc.record({ op: fc.constant("delete" as const), group }),
    fc.record({ op: fc.constant("deleteOffsets" as const), group }),
    fc.record({ op: fc.constant("advance" as const), ms: fc.constantFrom(0, 100, 3_000, 11_000, 31_000) })
  )
})()

/** Bytes as plain arrays: a decoded record holds Buffers where the live one holds Uint8Arrays. */
const plain = (value: unknown): unknown =>
  value instanceof Uint8Array
    ? Array.from(value)
    : Array.isArray(value)
      ? value.map(plain)
      : value !== null && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
        : value

const plainState = (state: GroupState.State) => {
  const byKey = (a: readonly [string, unknown], b: readonly [string, unknown]) =>
    a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0
  return plain({
    groups: [...HashMap.entries(state.groups)].sort(byKey),
    offsets: [...HashMap.entries(state.offsets)]
      .map(([g, m]) => [g, [...HashMap.entries(m)].sort(byKey)] as const)
      .sort(byKey)
  })
}

/** Runs the operations against a live coordinator, letting each settle. */
const runOps = async (gc: GC.GroupCoordinator, ops: ReadonlyArray<Op>): Promise<void> => {
  const clients = new Map<string, { memberId: string; generationId: number }>()
  const key = (client: number, group: string) => `${group}/${client}`
  const joinedAs = (k: string) => (r: GC.JoinGroupResult) => {
    if (r.errorCode === 0) clients.set(k, { memberId: r.memberId, generationId: r.generationId })
  }
  for (const o of ops) {
    if (o.op === "advance") {
      await advanceClock(o.ms)
      continue
    }
    if (o.op === "delete") {
      await gc.deleteGroups([o.group])
      continue
    }
    if (o.op === "deleteOffsets") {
      await gc.deleteOffsets({ groupId: o.group, topics: [{ name: "t", partitions: [{ partitionIndex: 0 }] }] })
      continue
    }
    const k = key(o.client, o.group)
    const known = clients.get(k)
    switch (o.op) {
      case "join":
        void gc
          .joinGroup(
            join({
              groupId: o.group,
              clientId: `c${o.client}`,
              memberId: o.rejoin ? (known?.memberId ?? "") : "",
              sessionTimeoutMs: 10_000,
              rebalanceTimeoutMs: 10_000
            })
          )
          .then(joinedAs(k))
        break
      case "sync": {
        if (known === undefined) break
        const members = [...clients.entries()].filter(([c]) => c.startsWith(`${o.group}/`))
        void gc.syncGroup(
          sync(
            known.memberId,
            known.generationId,
            members.map(([c, m]) => [m.memberId, c] as const),
            { groupId: o.group }
          )
        )
        break
      }
      case "heartbeat":
        if (known !== undefined) await gc.heartbeat({ ...hb(known.memberId, known.generationId), groupId: o.group })
        break
      case "leave":
        if (known !== undefined)
          await gc.leaveGroup({
            groupId: o.group,
            members: [{ memberId: known.memberId, groupInstanceId: null }]
          })
        break
      case "commit":
        await gc.commitOffsets(
          o.asMember && known !== undefined
            ? commit({ groupId: o.group, memberId: known.memberId, generationId: known.generationId })
            : commit({ groupId: o.group })
        )
        break
    }
    await settle()
  }
  await settle()
}

/** The live coordinator's state and Stable groups equal those of one loaded from scratch. */
const expectSameAsReplayed = async (live: GC.GroupCoordinator, replayed: GC.GroupCoordinator): Promise<void> => {
  expect(plainState(replayed.committedState())).toEqual(plainState(live.committedState()))
  // a group that is Stable live is exactly what a load restores
  for (const g of await live.listGroups({ statesFilter: ["Stable"] }))
    expect(plain(await stateOf(replayed, g.groupId))).toEqual(plain(await stateOf(live, g.groupId)))
}

describe("live state and replay", () => {
  it("given random joins, syncs, heartbeats, commits, leaves, group and offset deletes and time, then the live state equals a replay of the log from scratch", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
        const live = await given({ groupMinSessionTimeoutMs: 1000 })
        await runOps(live.gc, ops)
        const replayed = await given({}, GC.memoryGroupLog(live.memory.records))
        await expectSameAsReplayed(live.gc, replayed.gc)
        await live.gc.close()
        await replayed.gc.close()
      }),
      { numRuns: 60 }
    )
  })

  it("given random operations on a shard of the coordinator runtime, then the live state equals the shard loaded from scratch at the next epoch", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
        const log = CoordinatorLog.memory<CoordinatorLog.TxnEntry<GroupRecords.GroupRecord>>()
        const broker = () =>
          new GroupShards.GroupShards({
            log,
            partitionCount: () => 1,
            runtime,
            config: () => ({ groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1000 })
          })
        const [a, b] = [broker(), broker()]
        a.onLeadership(0, true, 1)
        const live = await a.forGroup("g")!
        await runOps(live, ops)
        b.onLeadership(0, true, 2)
        await expectSameAsReplayed(live, await b.forGroup("g")!)
        await a.close()
        await b.close()
      }),
      { numRuns: 40 }
    )
  })
})
