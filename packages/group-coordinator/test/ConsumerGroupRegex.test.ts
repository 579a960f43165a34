import { Errors, GroupRecords } from "@clustermirror/protocol"
import { describe, expect, it as effectIt } from "@effect/vitest"
import { Effect, Runtime, TestClock } from "effect"
import * as fc from "fast-check"
import * as ConsumerGroups from "../src/ConsumerGroups.js"
import * as GC from "../src/GroupCoordinator.js"
import { heartbeat } from "./heartbeat.js"

const E = Errors.ErrorCode

const A = "AAAAAAAAAAAAAAAAAAAAAQ"
const B = "AAAAAAAAAAAAAAAAAAAAAg"
const C = "AAAAAAAAAAAAAAAAAAAAAw"
const ordersA = { name: "orders-a", topicId: A, partitions: 2 }
const ordersB = { name: "orders-b", topicId: B, partitions: 2 }
const other = { name: "other", topicId: C, partitions: 2 }

const hb = (memberId: string, memberEpoch: number, extra: Partial<ConsumerGroups.HeartbeatRequest> = {}) =>
  heartbeat({ regex: "orders-.*" }, memberId, memberEpoch, extra)

const ctx = (topics: ReadonlyArray<ConsumerGroups.TopicMeta>, nowMs: number): ConsumerGroups.Context => ({
  topics,
  config: ConsumerGroups.defaultConfig,
  nowMs,
  newMemberId: () => "new",
  classicGroup: undefined
})

const isConsumerRecord = (r: GroupRecords.GroupRecord): r is GroupRecords.ConsumerGroupRecord =>
  r.type !== "OffsetCommit" && r.type !== "GroupMetadata"

/** given(state) → when(heartbeat) → then(records): the records replayed as the coordinator does. */
const when = (state: ConsumerGroups.State, req: ConsumerGroups.HeartbeatRequest, c: ConsumerGroups.Context) => {
  const decision = ConsumerGroups.heartbeat(state, req, c)
  const next = decision.records.filter(isConsumerRecord).reduce(ConsumerGroups.replay, state)
  return { ...decision, state: next }
}

const regexRecords = (records: ReadonlyArray<GroupRecords.GroupRecord>) =>
  records.filter((r) => r.type === "ConsumerGroupRegularExpression")

const assigned = (state: ConsumerGroups.State, memberId: string) =>
  [...(state.get("g")?.members.get(memberId)?.assigned ?? new Map<string, ReadonlyArray<number>>())]
    .map(([t, ps]) => `${t}:${ps.join(",")}`)
    .sort()

describe("ConsumerGroupRegularExpression", () => {
  effectIt.effect("a new regex is resolved at once and persisted; the group epoch moves with it", () =>
    Effect.sync(() => {
      const r = when(ConsumerGroups.empty, hb("a", 0), ctx([ordersA, ordersB, other], 1_000))
      expect(r.response.errorCode).toBe(E.NONE)
      expect(regexRecords(r.records)).toEqual([
        GroupRecords.consumerGroupRecord(
          "ConsumerGroupRegularExpression",
          { groupId: "g", regularExpression: "orders-.*" },
          { topics: ["orders-a", "orders-b"], version: 1n, timestamp: 1_000n }
        )
      ])
      const group = r.state.get("g")!
      expect(group.groupEpoch).toBe(1)
      expect(group.resolvedRegexes.get("orders-.*")?.topics).toEqual(["orders-a", "orders-b"])
      expect(assigned(r.state, "a")).toEqual([`${A}:0,1`, `${B}:0,1`])
    })
  )

  effectIt.effect(
    "a second member of the same regex adds no record; a new topic is seen once the resolution is 10 s old",
    () =>
      Effect.sync(() => {
        const topics = [ordersA, other]
        const s1 = when(ConsumerGroups.empty, hb("a", 0), ctx(topics, 1_000)).state
        const s2 = when(s1, hb("b", 0), ctx(topics, 2_000))
        expect(regexRecords(s2.records)).toEqual([])
        const withB = [ordersA, ordersB, other]
        // Within the refresh interval the group keeps what it resolved: no record, no epoch bump.
        const early = when(s2.state, hb("a", 1), ctx(withB, 1_000 + ConsumerGroups.REGEX_REFRESH_INTERVAL_MS))
        expect(
          early.records.filter((r) => r.type === "ConsumerGroupRegularExpression" || r.type === "ConsumerGroupMetadata")
        ).toEqual([])
        const late = when(early.state, hb("a", 1), ctx(withB, 1_001 + ConsumerGroups.REGEX_REFRESH_INTERVAL_MS))
        expect(regexRecords(late.records)).toEqual([
          GroupRecords.consumerGroupRecord(
            "ConsumerGroupRegularExpression",
            { groupId: "g", regularExpression: "orders-.*" },
            {
              topics: ["orders-a", "orders-b"],
              version: 2n,
              timestamp: BigInt(1_001 + ConsumerGroups.REGEX_REFRESH_INTERVAL_MS)
            }
          )
        ])
        const g = late.state.get("g")!
        expect(g.groupEpoch).toBe(s2.state.get("g")!.groupEpoch + 1)
        expect(new Set([...g.target.values()].flatMap((a) => [...a.keys()]))).toEqual(new Set([A, B]))
        // The same result once more writes nothing.
        const again = when(late.state, hb("b", g.members.get("b")!.memberEpoch), ctx(withB, 100_000))
        expect(regexRecords(again.records)).toEqual([])
      })
  )

  effectIt.effect("the regex is tombstoned when its last member leaves or changes its subscription", () =>
    Effect.sync(() => {
      const topics = [ordersA, ordersB, other]
      const s1 = when(ConsumerGroups.empty, hb("a", 0), ctx(topics, 1_000)).state
      const s2 = when(s1, hb("b", 0), ctx(topics, 1_000)).state
      const leaveA = when(s2, hb("a", ConsumerGroups.LEAVE_GROUP_MEMBER_EPOCH), ctx(topics, 1_000))
      expect(regexRecords(leaveA.records)).toEqual([])
      // b moves to topic names: no member subscribes to the regex any more.
      const moved = when(
        leaveA.state,
        hb("b", leaveA.state.get("g")!.members.get("b")!.memberEpoch, { subscribedTopicNames: ["other"] }),
        ctx(topics, 1_000)
      )
      expect(regexRecords(moved.records)).toEqual([
        GroupRecords.consumerGroupRecord(
          "ConsumerGroupRegularExpression",
          { groupId: "g", regularExpression: "orders-.*" },
          null
        )
      ])
      expect(moved.state.get("g")!.resolvedRegexes.size).toBe(0)
      // A member leaving as the last of its regex writes the tombstone before the epoch bump.
      const s3 = when(moved.state, hb("c", 0, { subscribedTopicRegex: "oth.*" }), ctx(topics, 1_000)).state
      const leaveC = when(s3, hb("c", ConsumerGroups.LEAVE_GROUP_MEMBER_EPOCH), ctx(topics, 1_000))
      expect(leaveC.records.map((r) => r.type)).toEqual([
        "ConsumerGroupCurrentMemberAssignment",
        "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupMemberMetadata",
        "ConsumerGroupRegularExpression",
        "ConsumerGroupMetadata"
      ])
      expect(leaveC.state.get("g")!.resolvedRegexes.size).toBe(0)
    })
  )

  effectIt.effect("a fenced member that was the last of its regex takes the resolution with it", () =>
    Effect.sync(() => {
      const topics = [ordersA]
      const s1 = when(ConsumerGroups.empty, hb("a", 0), ctx(topics, 1_000)).state
      const records = ConsumerGroups.fenceMember(s1, "g", "a", () => true)
      expect(regexRecords(records).map((r) => r.value)).toEqual([null])
      const after = records.filter(isConsumerRecord).reduce(ConsumerGroups.replay, s1)
      expect(after.get("g")!.resolvedRegexes.size).toBe(0)
      expect(() =>
        ConsumerGroups.deleteGroupRecords(after.get("g")!).filter(isConsumerRecord).reduce(ConsumerGroups.replay, after)
      ).not.toThrow()
    })
  )

  effectIt.effect("replay: a group deleted while it holds a resolution is a defect", () =>
    Effect.sync(() => {
      const s = [
        GroupRecords.consumerGroupRecord(
          "ConsumerGroupRegularExpression",
          { groupId: "g", regularExpression: "x" },
          { topics: ["x"], version: 1n, timestamp: 0n }
        ),
        GroupRecords.consumerGroupRecord("ConsumerGroupMetadata", { groupId: "g" }, { epoch: 1 })
      ].reduce(ConsumerGroups.replay, ConsumerGroups.empty)
      expect(() =>
        ConsumerGroups.replay(s, GroupRecords.consumerGroupRecord("ConsumerGroupMetadata", { groupId: "g" }, null))
      ).toThrow(/resolved regular expressions/)
    })
  )

  effectIt.effect(
    "property: after any heartbeats, the resolutions are exactly the regexes members use, and a replay from scratch gives the same group",
    () =>
      Effect.sync(() => {
        const regexes = ["orders-.*", "oth.*", ".*-b", null] as const
        const step = fc.record({
          member: fc.constantFrom("a", "b", "c"),
          action: fc.constantFrom("join", "beat", "leave", "resubscribe"),
          regex: fc.constantFrom(...regexes),
          elapsed: fc.integer({ min: 0, max: 15_000 }),
          topics: fc.subarray([ordersA, ordersB, other])
        })
        fc.assert(
          fc.property(fc.array(step, { maxLength: 25 }), (steps) => {
            let state = ConsumerGroups.empty
            const log: Array<GroupRecords.ConsumerGroupRecord> = []
            let now = 1_000
            for (const s of steps) {
              now += s.elapsed
              const member = state.get("g")?.members.get(s.member)
              const subscription =
                s.regex === null
                  ? { subscribedTopicNames: ["other"], subscribedTopicRegex: null }
                  : { subscribedTopicNames: null, subscribedTopicRegex: s.regex }
              const req =
                s.action === "join" || member === undefined
                  ? hb(s.member, 0, subscription)
                  : s.action === "leave"
                    ? hb(s.member, ConsumerGroups.LEAVE_GROUP_MEMBER_EPOCH)
                    : s.action === "resubscribe"
                      ? hb(s.member, member.memberEpoch, subscription)
                      : hb(s.member, member.memberEpoch)
              const decision = ConsumerGroups.heartbeat(state, req, ctx(s.topics, now))
              const records = decision.records.filter(isConsumerRecord)
              state = records.reduce(ConsumerGroups.replay, state)
              log.push(...records)
              const group = state.get("g")
              if (group !== undefined) {
                const inUse = new Set([...group.members.values()].flatMap((m) => m.subscribedTopicRegex ?? []))
                expect(new Set(group.resolvedRegexes.keys())).toEqual(inUse)
              }
            }
            expect(log.reduce(ConsumerGroups.replay, ConsumerGroups.empty)).toEqual(state)
          }),
          { numRuns: 300 }
        )
      })
  )
})

describe("ConsumerGroupRegularExpression across a reload", () => {
  let runtime: Runtime.Runtime<never> = Runtime.defaultRuntime
  effectIt.effect(
    "a reloaded coordinator keeps the resolved topics: a topic created meanwhile is not assigned before the group resolves again",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(1_000_000)
        runtime = yield* Effect.runtime<never>()
        yield* Effect.promise(async () => {
          let topics: ReadonlyArray<ConsumerGroups.TopicMeta> = [ordersA, other]
          const log = GC.memoryGroupLog()
          const make = () => GC.make({ log, runtime, consumer: { topics: () => topics } })
          const gc = await make()
          const joined = await gc.consumerGroupHeartbeat(hb("a", 0))
          expect(joined.assignment).toEqual([{ topicId: A, partitions: [0, 1] }])
          await gc.close()
          const written = log.records.map((r) => GroupRecords.decode(r.key, r.value))
          expect(written.some((r) => r._tag === "Right" && r.right.type === "ConsumerGroupRegularExpression")).toBe(
            true
          )
          // The coordinator moves while orders-b is created.
          topics = [ordersA, ordersB, other]
          const again = await make()
          const group = again.committedState().consumerGroups.get("g")!
          expect(group.resolvedRegexes.get("orders-.*")).toEqual({
            topics: ["orders-a"],
            version: 1n,
            timestamp: 1_000_000n
          })
          const d = (await again.consumerGroupDescribe(["g"]))[0]!
          expect(d.groupEpoch).toBe(1)
          expect(d.members[0]!.targetAssignment.map((t) => t.topicName)).toEqual(["orders-a"])
          // A heartbeat inside the refresh interval keeps the assignment; one after it takes orders-b.
          const beat = await again.consumerGroupHeartbeat(hb("a", 1))
          expect(beat).toMatchObject({ errorCode: E.NONE, memberEpoch: 1 })
          await Runtime.runPromise(runtime)(TestClock.adjust(ConsumerGroups.REGEX_REFRESH_INTERVAL_MS + 1))
          const later = await again.consumerGroupHeartbeat(hb("a", 1))
          expect(later.memberEpoch).toBe(2)
          expect(later.assignment).toEqual([
            { topicId: A, partitions: [0, 1] },
            { topicId: B, partitions: [0, 1] }
          ])
          await again.close()
        })
      })
  )
})
