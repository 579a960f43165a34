import { Errors } from "@clustermirror/protocol"
import { describe, expect, it as effectIt } from "@effect/vitest"
import { Effect, Runtime, TestClock } from "effect"
import type * as ConsumerGroups from "../src/ConsumerGroups.js"
import * as GC from "../src/GroupCoordinator.js"
import { heartbeat } from "./heartbeat.js"

const E = Errors.ErrorCode
let runtime: Runtime.Runtime<never> = Runtime.defaultRuntime

const it = (name: string, body: () => Promise<void>) =>
  effectIt.effect(name, () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(1_000_000)
      runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(body)
    })
  )

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r))
}
const advance = async (ms: number) => {
  await Runtime.runPromise(runtime)(TestClock.adjust(ms))
  await settle()
}

const T = "AAAAAAAAAAAAAAAAAAAAAQ"
const topics = [{ name: "orders", topicId: T, partitions: 4 }]

const coordinator = (log = GC.memoryGroupLog()) =>
  GC.make({ log, runtime, consumer: { topics: () => topics, config: { sessionTimeoutMs: 10_000 } } })

const hb = (memberId: string, memberEpoch: number, extra: Partial<ConsumerGroups.HeartbeatRequest> = {}) =>
  heartbeat({ topics: ["orders"] }, memberId, memberEpoch, extra)

const partitionsOf = (r: ConsumerGroups.HeartbeatResponse) => r.assignment?.flatMap((t) => t.partitions) ?? null

describe("ConsumerGroups", () => {
  it("a first member gets every partition at epoch 1; a second one only once the first revoked", async () => {
    const gc = await coordinator()
    const a = await gc.consumerGroupHeartbeat(hb("a", 0))
    expect(a).toMatchObject({ errorCode: E.NONE, memberId: "a", memberEpoch: 1 })
    expect(partitionsOf(a)).toEqual([0, 1, 2, 3])
    const b = await gc.consumerGroupHeartbeat(hb("b", 0))
    // b waits for partitions a still owns
    expect(b.memberEpoch).toBe(2)
    expect(partitionsOf(b)).toEqual([])
    // a is asked to revoke two and keeps its epoch until it does
    const a2 = await gc.consumerGroupHeartbeat(hb("a", 1))
    expect(a2.memberEpoch).toBe(1)
    expect(partitionsOf(a2)).toHaveLength(2)
    const kept = partitionsOf(a2)!
    const a3 = await gc.consumerGroupHeartbeat(hb("a", 1, { topicPartitions: [{ topicId: T, partitions: kept }] }))
    expect(a3.memberEpoch).toBe(2)
    const b2 = await gc.consumerGroupHeartbeat(hb("b", 2))
    expect([...partitionsOf(b2)!, ...kept].sort()).toEqual([0, 1, 2, 3])
    const described = (await gc.consumerGroupDescribe(["g"]))[0]!
    expect(described).toMatchObject({
      groupState: "Stable",
      groupEpoch: 2,
      assignmentEpoch: 2,
      assignorName: "uniform"
    })
    await gc.close()
  })

  it("epochs and members are checked as Kafka does", async () => {
    const gc = await coordinator()
    await gc.consumerGroupHeartbeat(hb("a", 0))
    expect((await gc.consumerGroupHeartbeat(hb("a", 5))).errorCode).toBe(E.FENCED_MEMBER_EPOCH)
    expect((await gc.consumerGroupHeartbeat(hb("x", 1))).errorCode).toBe(E.UNKNOWN_MEMBER_ID)
    expect((await gc.consumerGroupHeartbeat(hb("b", 0, { serverAssignor: "sticky" }))).errorCode).toBe(
      E.UNSUPPORTED_ASSIGNOR
    )
    expect((await gc.consumerGroupHeartbeat(hb("", 0))).errorCode).toBe(E.INVALID_REQUEST)
    expect((await gc.consumerGroupHeartbeat(hb("b", 0, { subscribedTopicRegex: "(?=x)" }))).errorCode).toBe(
      E.INVALID_REGULAR_EXPRESSION
    )
    expect((await gc.consumerGroupHeartbeat(hb("s1", 0, { instanceId: "i" }))).errorCode).toBe(E.NONE)
    expect((await gc.consumerGroupHeartbeat(hb("s2", 0, { instanceId: "i" }))).errorCode).toBe(E.UNRELEASED_INSTANCE_ID)
    // a member's OffsetCommit must carry its epoch
    const commit = (memberEpoch: number) =>
      gc.commitOffsets({
        apiVersion: 9,
        groupId: "g",
        generationId: memberEpoch,
        memberId: "a",
        groupInstanceId: null,
        topics: [
          {
            name: "orders",
            partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }]
          }
        ]
      })
    expect((await commit(0)).topics[0]!.partitions[0]!.errorCode).toBe(E.STALE_MEMBER_EPOCH)
    await gc.close()
  })

  it("a leave and a session timeout take members out; a reload replays the group", async () => {
    const log = GC.memoryGroupLog()
    const gc = await coordinator(log)
    await gc.consumerGroupHeartbeat(hb("a", 0))
    await gc.consumerGroupHeartbeat(hb("b", 0))
    expect((await gc.consumerGroupHeartbeat(hb("b", -1))).memberEpoch).toBe(-1)
    expect((await gc.consumerGroupDescribe(["g"]))[0]!.members.map((m) => m.memberId)).toEqual(["a"])
    await gc.close()
    const again = await coordinator(log)
    const d = (await again.consumerGroupDescribe(["g"]))[0]!
    expect(d.members.map((m) => m.memberId)).toEqual(["a"])
    expect((await again.listGroups({ typesFilter: ["consumer"] })).map((g) => g.groupId)).toEqual(["g"])
    await advance(10_001)
    expect((await again.consumerGroupDescribe(["g"]))[0]!.members).toEqual([])
    expect((await again.listGroups())[0]).toMatchObject({ groupState: "Empty", groupType: "consumer" })
    await again.close()
  })
})
