/**
 * DeleteGroups and OffsetDelete: only Empty groups are deleted, each with a tombstone per offset and one
 * for its metadata; OffsetDelete keeps the offsets of topics the group subscribes to
 * (GROUP_SUBSCRIBED_TO_TOPIC) and tombstones the others; both survive a reload, and a tombstone also
 * drops the partition from open transactions.
 */
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { ConsumerProtocol, Errors, GroupRecords } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, type Runtime } from "effect"
import * as GC from "../src/GroupCoordinator.js"
import * as GroupShards from "../src/GroupShards.js"
import * as GroupState from "../src/internal/groupState.js"

const E = Errors.ErrorCode

const scenario = (name: string, body: (runtime: Runtime.Runtime<never>) => Promise<void>) =>
  it.effect(name, () =>
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      yield* Effect.promise(() => body(runtime))
    })
  )

const subscription = (...topics: Array<string>): Uint8Array =>
  Either.getOrThrow(ConsumerProtocol.encodeSubscription(1, { topics, userData: null, ownedPartitions: [] }))

const config = { groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1000 }

const coordinator = (runtime: Runtime.Runtime<never>, log: GC.GroupLog = GC.memoryGroupLog()) =>
  GC.make({ log, runtime, config, randomUuid: () => "u" })

const commit = (groupId: string, ...partitions: Array<readonly [string, number]>): GC.OffsetCommitRequest => ({
  groupId,
  generationId: -1,
  memberId: "",
  groupInstanceId: null,
  topics: [...new Set(partitions.map(([t]) => t))].map((name) => ({
    name,
    partitions: partitions
      .filter(([t]) => t === name)
      .map(([, p]) => ({ partitionIndex: p, committedOffset: 10n, committedLeaderEpoch: 0, committedMetadata: "" }))
  }))
})

/** A member of `groupId` joined and synced: the group is Stable with that member's protocol. */
const stableMember = async (
  gc: GC.GroupCoordinator,
  groupId: string,
  protocolType: string,
  metadata: Uint8Array
): Promise<GC.JoinGroupResult> => {
  const joined = await gc.joinGroup({
    groupId,
    memberId: "",
    groupInstanceId: null,
    protocolType,
    protocols: [{ name: "range", metadata }],
    sessionTimeoutMs: 10_000,
    rebalanceTimeoutMs: 10_000,
    clientId: "c",
    clientHost: "/127.0.0.1",
    requireKnownMemberId: false
  })
  await gc.syncGroup({
    groupId,
    generationId: joined.generationId,
    memberId: joined.memberId,
    groupInstanceId: null,
    protocolType,
    protocolName: "range",
    assignments: [{ memberId: joined.memberId, assignment: new Uint8Array() }]
  })
  return joined
}

const offsetsOf = async (gc: GC.GroupCoordinator, groupId: string) =>
  (await gc.fetchOffsets({ groupId, topics: null })).topics.flatMap((t) =>
    t.partitions.map((p) => `${t.name}-${p.partitionIndex}`)
  )

const asked = (
  groupId: string,
  ...topics: Array<readonly [string, ReadonlyArray<number>]>
): GC.OffsetDeleteRequest => ({
  groupId,
  topics: topics.map(([name, ps]) => ({ name, partitions: ps.map((partitionIndex) => ({ partitionIndex })) }))
})

const partitionCodes = (r: GC.OffsetDeleteResult) =>
  r.topics.flatMap((t) => t.partitions.map((p) => [`${t.name}-${p.partitionIndex}`, p.errorCode] as const))

const decoded = (log: GC.MemoryGroupLog, from: number) =>
  log.records.slice(from).map((r) => Either.getOrThrow(GroupRecords.decode(r.key, r.value)))

describe("DeleteGroups", () => {
  scenario(
    "given an Empty group with offsets, a Stable group and no third, when all are deleted, then only the Empty one goes, with a tombstone per offset and one for its metadata",
    async (runtime) => {
      const log = GC.memoryGroupLog()
      const gc = await coordinator(runtime, log)
      await gc.commitOffsets(commit("simple", ["t", 0], ["t", 1], ["u", 0]))
      await stableMember(gc, "active", "consumer", subscription("t"))
      const before = log.records.length
      expect(await gc.deleteGroups(["simple", "active", "missing", "simple"])).toEqual([
        { groupId: "simple", errorCode: E.NONE },
        { groupId: "active", errorCode: E.NON_EMPTY_GROUP },
        { groupId: "missing", errorCode: E.GROUP_ID_NOT_FOUND }
      ])
      const written = decoded(log, before)
      expect(written.map((r) => [r.type, r.value])).toEqual([
        ["OffsetCommit", null],
        ["OffsetCommit", null],
        ["OffsetCommit", null],
        ["GroupMetadata", null]
      ])
      expect(written.filter((r) => r.type === "OffsetCommit").map((r) => r.key)).toEqual(
        expect.arrayContaining([
          { group: "simple", topic: "t", partition: 0 },
          { group: "simple", topic: "t", partition: 1 },
          { group: "simple", topic: "u", partition: 0 }
        ])
      )
      expect(await offsetsOf(gc, "simple")).toEqual([])
      expect((await gc.describeGroups(["simple"]))[0]!.errorCode).toBe(E.GROUP_ID_NOT_FOUND)
      // deleted once: a second delete does not find it
      expect(await gc.deleteGroups(["simple"])).toEqual([{ groupId: "simple", errorCode: E.GROUP_ID_NOT_FOUND }])
      const reloaded = await coordinator(runtime, GC.memoryGroupLog(log.records))
      expect((await reloaded.listGroups()).map((g) => g.groupId)).toEqual(["active"])
      expect(await offsetsOf(reloaded, "simple")).toEqual([])
      await gc.close()
      await reloaded.close()
    }
  )

  scenario(
    "given a group whose members all left, when it is deleted, then it is gone and a new member starts it again at generation 1",
    async (runtime) => {
      const log = GC.memoryGroupLog()
      const gc = await coordinator(runtime, log)
      const joined = await stableMember(gc, "g", "consumer", subscription("t"))
      await gc.commitOffsets({ ...commit("g", ["t", 0]), generationId: joined.generationId, memberId: joined.memberId })
      await gc.leaveGroup({ groupId: "g", members: [{ memberId: joined.memberId, groupInstanceId: null }] })
      expect((await gc.describeGroups(["g"]))[0]!.groupState).toBe("Empty")
      expect(await gc.deleteGroups(["g"])).toEqual([{ groupId: "g", errorCode: E.NONE }])
      expect((await stableMember(gc, "g", "consumer", subscription("t"))).generationId).toBe(1)
      expect(await offsetsOf(gc, "g")).toEqual([])
      await gc.close()
    }
  )

  scenario(
    "given a log that refuses the tombstones, when an Empty group is deleted, then it answers the append's error and the group stays",
    async (runtime) => {
      const memory = GC.memoryGroupLog()
      const seeded = await coordinator(runtime, memory)
      await seeded.commitOffsets(commit("simple", ["t", 0]))
      await seeded.close()
      const failing: GC.GroupLog = {
        readAll: () => memory.records,
        append: async () => {
          throw Object.assign(new Error("not enough replicas"), { errorCode: E.NOT_ENOUGH_REPLICAS })
        }
      }
      const gc = await coordinator(runtime, failing)
      expect(await gc.deleteGroups(["simple"])).toEqual([{ groupId: "simple", errorCode: E.COORDINATOR_NOT_AVAILABLE }])
      expect((await gc.describeGroups(["simple"]))[0]!.groupState).toBe("Empty")
      expect(await offsetsOf(gc, "simple")).toEqual(["t-0"])
      expect((await gc.deleteOffsets(asked("simple", ["t", [0]]))).errorCode).toBe(E.COORDINATOR_NOT_AVAILABLE)
      await gc.close()
    }
  )
})

describe("OffsetDelete", () => {
  scenario(
    "given a Stable consumer group subscribed to t with offsets of t and u, then u's offsets are deleted and t's answer GROUP_SUBSCRIBED_TO_TOPIC, also after a reload",
    async (runtime) => {
      const log = GC.memoryGroupLog()
      const gc = await coordinator(runtime, log)
      await gc.commitOffsets(commit("g", ["t", 0], ["u", 0], ["u", 1]))
      await stableMember(gc, "g", "consumer", subscription("t"))
      const before = log.records.length
      const r = await gc.deleteOffsets(asked("g", ["t", [0]], ["u", [0, 1, 2]]))
      expect(r.errorCode).toBe(E.NONE)
      // every asked partition answers, u-2 too, though it had no offset to delete
      expect(partitionCodes(r)).toEqual([
        ["t-0", E.GROUP_SUBSCRIBED_TO_TOPIC],
        ["u-0", E.NONE],
        ["u-1", E.NONE],
        ["u-2", E.NONE]
      ])
      expect(decoded(log, before).map((rec) => [rec.key, rec.value])).toEqual([
        [{ group: "g", topic: "u", partition: 0 }, null],
        [{ group: "g", topic: "u", partition: 1 }, null]
      ])
      expect(await offsetsOf(gc, "g")).toEqual(["t-0"])
      const reloaded = await coordinator(runtime, GC.memoryGroupLog(log.records))
      expect(await offsetsOf(reloaded, "g")).toEqual(["t-0"])
      // the reloaded group knows its subscriptions from the persisted member metadata
      expect(partitionCodes(await reloaded.deleteOffsets(asked("g", ["t", [0]])))).toEqual([
        ["t-0", E.GROUP_SUBSCRIBED_TO_TOPIC]
      ])
      await gc.close()
      await reloaded.close()
    }
  )

  scenario(
    "answers whole-request errors as Kafka: unknown group, non-empty group of another protocol type",
    async (runtime) => {
      const gc = await coordinator(runtime)
      expect(await gc.deleteOffsets(asked("missing", ["t", [0]]))).toEqual({
        errorCode: E.GROUP_ID_NOT_FOUND,
        topics: []
      })
      await stableMember(gc, "connect", "connect", new Uint8Array([1, 2]))
      await gc.commitOffsets(commit("connect-offsets", ["t", 0]))
      expect(await gc.deleteOffsets(asked("connect", ["t", [0]]))).toEqual({ errorCode: E.NON_EMPTY_GROUP, topics: [] })
      await gc.close()
    }
  )

  scenario(
    "given a consumer group whose member metadata is no subscription, then every topic counts as subscribed",
    async (runtime) => {
      const gc = await coordinator(runtime)
      await gc.commitOffsets(commit("g", ["x", 0]))
      await stableMember(gc, "g", "consumer", new Uint8Array([0xff]))
      expect(partitionCodes(await gc.deleteOffsets(asked("g", ["x", [0]])))).toEqual([
        ["x-0", E.GROUP_SUBSCRIBED_TO_TOPIC]
      ])
      expect(await offsetsOf(gc, "g")).toEqual(["x-0"])
      await gc.close()
    }
  )

  scenario("given an Empty group, then offsets of any topic are deleted", async (runtime) => {
    const gc = await coordinator(runtime)
    await gc.commitOffsets(commit("g", ["t", 0], ["t", 1]))
    expect(partitionCodes(await gc.deleteOffsets(asked("g", ["t", [1]])))).toEqual([["t-1", E.NONE]])
    expect(await offsetsOf(gc, "g")).toEqual(["t-0"])
    await gc.close()
  })

  it("subscribedTopics: known only for the consumer protocol type, empty without members", () => {
    expect(GC.subscribedTopics("consumer", "range", [subscription("a", "b"), subscription("c")])).toEqual(
      new Set(["a", "b", "c"])
    )
    expect(GC.subscribedTopics("consumer", null, [])).toEqual(new Set())
    expect(GC.subscribedTopics("consumer", null, [subscription("a")])).toBeNull()
    expect(GC.subscribedTopics("connect", "range", [subscription("a")])).toBeNull()
    expect(GC.subscribedTopics(null, null, [])).toBeNull()
  })
})

describe("DeleteGroups and OffsetDelete on the group shards", () => {
  const shards = (runtime: Runtime.Runtime<never>) => {
    const log = CoordinatorLog.memory<CoordinatorLog.TxnEntry<GroupRecords.GroupRecord>>()
    const broker = () => new GroupShards.GroupShards({ log, partitionCount: () => 1, runtime, config: () => config })
    return { a: broker(), b: broker(), log }
  }

  scenario(
    "answers NOT_COORDINATOR where the partition is led elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads, INVALID_GROUP_ID for an empty group id",
    async (runtime) => {
      const { a } = shards(runtime)
      expect(await a.deleteGroups(["g"])).toEqual([{ groupId: "g", errorCode: E.NOT_COORDINATOR }])
      expect(await a.deleteOffsets(asked("g", ["t", [0]]))).toEqual({ errorCode: E.NOT_COORDINATOR, topics: [] })
      a.onLeadership(0, true, 1)
      const [groups, offsets] = await Promise.all([a.deleteGroups(["g"]), a.deleteOffsets(asked("g", ["t", [0]]))])
      expect(groups).toEqual([{ groupId: "g", errorCode: E.COORDINATOR_LOAD_IN_PROGRESS }])
      expect(offsets.errorCode).toBe(E.COORDINATOR_LOAD_IN_PROGRESS)
      await a.forGroup("g")
      expect(await a.deleteGroups(["g"])).toEqual([{ groupId: "g", errorCode: E.GROUP_ID_NOT_FOUND }])
      expect(await a.deleteOffsets(asked("", ["t", [0]]))).toEqual({ errorCode: E.INVALID_GROUP_ID, topics: [] })
      await a.close()
    }
  )

  scenario(
    "given offsets in an open transaction, when the group or the offset is deleted, then the transaction's COMMIT does not bring them back, live or after a reload",
    async (runtime) => {
      const { a, b } = shards(runtime)
      a.onLeadership(0, true, 1)
      const gc = await a.forGroup("g")!
      const txn = (groupId: string, partition: number): GC.TxnOffsetCommitRequest => ({
        ...commit(groupId, ["t", partition]),
        transactionalId: "tx",
        producerId: 7n,
        producerEpoch: 0
      })
      await gc.commitTransactionalOffsets(txn("g", 0))
      await gc.commitTransactionalOffsets(txn("h", 0))
      await gc.commitOffsets(commit("h", ["t", 1]))
      expect(await a.deleteGroups(["g"])).toEqual([{ groupId: "g", errorCode: E.NONE }])
      expect(partitionCodes(await a.deleteOffsets(asked("h", ["t", [0]])))).toEqual([["t-0", E.NONE]])
      expect(
        await gc.completeTransaction({ producerId: 7n, producerEpoch: 0, commit: true, coordinatorEpoch: 0 })
      ).toBe(0)
      expect(await offsetsOf(gc, "g")).toEqual([])
      expect(await offsetsOf(gc, "h")).toEqual(["t-1"])
      b.onLeadership(0, true, 2)
      const loaded = await b.forGroup("g")!
      expect(await offsetsOf(loaded, "g")).toEqual([])
      expect(await offsetsOf(loaded, "h")).toEqual(["t-1"])
      expect(GroupState.groupIds(loaded.committedState())).toEqual(["h"])
      await a.close()
      await b.close()
    }
  )
})
