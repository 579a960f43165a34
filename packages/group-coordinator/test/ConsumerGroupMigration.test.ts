/**
 * Between classic and consumer groups (KIP-848 online migration) under
 * `group.consumer.migration.policy`: an empty classic group is converted by the first heartbeat under any
 * policy; one with members is refused with Kafka's GROUP_ID_NOT_FOUND messages, and, where Kafka would
 * upgrade it keeping its classic members, with a message saying that is not supported; a classic
 * JoinGroup on a consumer group answers INCONSISTENT_GROUP_PROTOCOL.
 */
import { Errors, GroupRecords } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ConsumerGroups from "../src/ConsumerGroups.js"
import * as GC from "../src/GroupCoordinator.js"
import { heartbeat } from "./heartbeat.js"

const E = Errors.ErrorCode
const T = "AAAAAAAAAAAAAAAAAAAAAQ"
const topics = [{ name: "orders", topicId: T, partitions: 2 }]

const hb = (memberId: string, memberEpoch: number) => heartbeat({ topics: ["orders"] }, memberId, memberEpoch)

const decide = (classicGroup: ConsumerGroups.Context["classicGroup"], config: Partial<ConsumerGroups.Config> = {}) =>
  ConsumerGroups.heartbeat(ConsumerGroups.empty, hb("m", 0), {
    topics,
    config: { ...ConsumerGroups.defaultConfig, ...config },
    nowMs: 0,
    newMemberId: () => "m",
    classicGroup
  })

const policies: ReadonlyArray<ConsumerGroups.MigrationPolicy> = ["disabled", "upgrade", "downgrade", "bidirectional"]

describe("online migration", () => {
  it.effect("an empty classic group is converted under every policy: its GroupMetadata tombstone first", () =>
    Effect.sync(() => {
      for (const migrationPolicy of policies) {
        const d = decide({ members: 0, protocolType: "consumer" }, { migrationPolicy })
        expect(d.response.errorCode).toBe(E.NONE)
        expect(d.records[0]).toEqual(GroupRecords.groupMetadataTombstone("g"))
        expect(d.response.memberEpoch).toBe(1)
      }
    })
  )

  it.effect("a classic group with members: Kafka's refusals where the policy forbids the upgrade", () =>
    Effect.sync(() => {
      for (const migrationPolicy of ["disabled", "downgrade"] as const) {
        const d = decide({ members: 2, protocolType: "consumer" }, { migrationPolicy })
        expect(d.records).toEqual([])
        expect(d.response).toMatchObject({
          errorCode: E.GROUP_ID_NOT_FOUND,
          errorMessage: "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
        })
      }
    })
  )

  it.effect("a classic group with members of another protocol type, or too many, is refused as on Kafka", () =>
    Effect.sync(() => {
      expect(decide({ members: 1, protocolType: "connect" }).response).toMatchObject({
        errorCode: E.GROUP_ID_NOT_FOUND,
        errorMessage:
          "Cannot upgrade classic group g to consumer group because the group does not use the consumer embedded protocol."
      })
      expect(decide({ members: 3, protocolType: "consumer" }, { maxSize: 2 }).response).toMatchObject({
        errorCode: E.GROUP_ID_NOT_FOUND,
        errorMessage:
          "Cannot upgrade classic group g to consumer group because the group size exceeds the consumer group maximum size."
      })
    })
  )

  it.effect("where Kafka would upgrade a classic group with members, the heartbeat is refused, nothing written", () =>
    Effect.sync(() => {
      for (const migrationPolicy of ["upgrade", "bidirectional"] as const) {
        const d = decide({ members: 2, protocolType: "consumer" }, { migrationPolicy })
        expect(d.records).toEqual([])
        expect(d.response.errorCode).toBe(E.GROUP_ID_NOT_FOUND)
        expect(d.response.errorMessage).toContain("is not supported")
      }
    })
  )

  it.effect(
    "on a coordinator: a live classic group refuses the heartbeat and a consumer group the classic JoinGroup",
    () =>
      Effect.gen(function* () {
        const runtime = yield* Effect.runtime<never>()
        yield* Effect.promise(async () => {
          let n = 0
          const gc = await GC.make({
            log: GC.memoryGroupLog(),
            runtime,
            config: { groupInitialRebalanceDelayMs: 0, groupMinSessionTimeoutMs: 1000 },
            randomUuid: () => `uuid-${++n}`,
            consumer: { topics: () => topics }
          })
          const join = (groupId: string) =>
            gc.joinGroup({
              groupId,
              memberId: "",
              groupInstanceId: null,
              protocolType: "consumer",
              protocols: [{ name: "range", metadata: new Uint8Array([0]) }],
              sessionTimeoutMs: 10_000,
              rebalanceTimeoutMs: 30_000,
              clientId: "c",
              clientHost: "/127.0.0.1",
              requireKnownMemberId: false
            })
          const joined = await join("g")
          expect(joined.errorCode).toBe(E.NONE)
          const refused = await gc.consumerGroupHeartbeat(hb("m", 0))
          expect(refused.errorCode).toBe(E.GROUP_ID_NOT_FOUND)
          expect(refused.errorMessage).toContain("Cannot upgrade classic group g to consumer group")
          expect((await gc.consumerGroupHeartbeat({ ...hb("n", 0), groupId: "cg" })).errorCode).toBe(E.NONE)
          expect((await join("cg")).errorCode).toBe(E.INCONSISTENT_GROUP_PROTOCOL)
          await gc.close()
        })
      })
  )
})
