import { describe, expect, it } from "@effect/vitest"
import {
  type AlterPartition,
  type BumpLeaderEpochs,
  type CreatePartitions,
  CreateTopics,
  type DeleteTopics,
  type ElectLeaders,
  Errors,
  MetadataRecords,
  Uuid,
  uuidToString
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as fc from "fast-check"
import * as ConfigurationControl from "../src/ConfigurationControl.js"
import type { ControllerResult } from "../src/ControllerResult.js"
import * as ControllerTest from "../src/ControllerTest.js"
import * as RC from "../src/ReplicationControl.js"
import { copiedEntries, plain } from "./clusterFixtures.js"

const E = Errors.ErrorCode
type Rec = MetadataRecords.MetadataRecord

// ---------------------------------------------------------------------------------------------------
// Harness: given(records) → when(decide) → then(records, response), replaying exactly as the runtime
// does (records at consecutive offsets after the given ones).

const idOf = (n: number): string => {
  const b = new Uint8Array(16)
  new DataView(b.buffer).setUint32(12, n + 1000)
  return uuidToString(b)
}

const makeIds = () => {
  let n = 0
  return () => idOf(n++)
}

const given = (records: ReadonlyArray<Rec>): RC.State =>
  records.reduce((s, r, i) => RC.replay(s, r, BigInt(i)), RC.empty)

const apply = (state: RC.State, records: ReadonlyArray<Rec>, from = 1000n): RC.State =>
  records.reduce((s, r, i) => RC.replay(s, r, from + BigInt(i)), state)

const when = <R>(state: RC.State, decide: (s: RC.State) => ControllerResult<R>) => {
  const result = decide(state)
  return { ...result, after: apply(state, result.records) }
}

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`unexpected Left: ${String(e.left)}`)
  return e.right
}

const clusterOf = (active: ReadonlyArray<number>, registered: ReadonlyArray<number> = active): RC.ClusterView => ({
  liveBrokers: active,
  isActive: (b) => active.includes(b),
  isRegistered: (b) => registered.includes(b) || active.includes(b)
})

const THREE = clusterOf([1, 2, 3])

const ctx = (over: Partial<RC.CreateTopicsContext> = {}): RC.CreateTopicsContext => ({
  newTopicId: makeIds(),
  defaultPartitions: 1,
  defaultReplicationFactor: 3,
  validateConfigs: (_topic, configs) => {
    const bad = configs.find((c) => c.name === "bogus")
    return bad === undefined
      ? null
      : { errorCode: E.INVALID_CONFIG, errorMessage: `Unknown topic config name: ${bad.name}` }
  },
  configRecords: (topic, configs) =>
    configs.map((c) =>
      MetadataRecords.make("ConfigRecord", { resourceType: 2, resourceName: topic, name: c.name, value: c.value })
    ),
  ...over
})

const topic = (name: string, over: Partial<RC.CreatableTopic> = {}): RC.CreatableTopic => ({
  name,
  numPartitions: -1,
  replicationFactor: -1,
  assignments: [],
  configs: [],
  mirrorInfo: null,
  ...over
})

const createReq = (topics: ReadonlyArray<RC.CreatableTopic>, validateOnly = false): CreateTopics.Request => ({
  ...CreateTopics.Request.empty,
  topics,
  validateOnly
})

const create = (
  state: RC.State,
  topics: ReadonlyArray<RC.CreatableTopic>,
  cluster: RC.ClusterView = THREE,
  c: RC.CreateTopicsContext = ctx()
) => when(state, (s) => RC.createTopics(s, createReq(topics), cluster, c))

/** The records of one topic "t" (id idOf(0)) with the given partitions. */
const topicRecords = (
  name: string,
  topicId: string,
  partitions: ReadonlyArray<{ replicas: ReadonlyArray<number>; isr?: ReadonlyArray<number>; leader?: number }>
): ReadonlyArray<Rec> => [
  MetadataRecords.make("TopicRecord", { name, topicId }),
  ...partitions.map((p, partitionId) =>
    MetadataRecords.make("PartitionRecord", {
      partitionId,
      topicId,
      replicas: p.replicas,
      isr: p.isr ?? p.replicas,
      leader: p.leader ?? (p.isr ?? p.replicas)[0]!,
      leaderEpoch: 0,
      partitionEpoch: 0
    })
  )
]

const T = idOf(0)
const rf3 = (n = 1) =>
  topicRecords(
    "t",
    T,
    Array.from({ length: n }, () => ({ replicas: [1, 2, 3] }))
  )
const part = (s: RC.State, name = "t", p = 0) => RC.topicByName(s, name)!.partitions.get(p)!

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.replay", () => {
  it("builds topics and partitions from TopicRecord and PartitionRecord", () => {
    const s = given(rf3(2))
    expect(RC.topicByName(s, "t")!.topicId).toBe(T)
    expect(part(s, "t", 1)).toEqual({
      replicas: [1, 2, 3],
      isr: [1, 2, 3],
      removingReplicas: [],
      addingReplicas: [],
      leader: 1,
      leaderRecoveryState: 0,
      leaderEpoch: 0,
      partitionEpoch: 0
    })
  })

  it("applies PartitionChangeRecord v0-2: a leader change implies leader epoch + 1", () => {
    const s = given([
      ...rf3(),
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leader: 2, isr: [2, 3] }, 0)
    ])
    expect(part(s)).toMatchObject({ leader: 2, isr: [2, 3], leaderEpoch: 1, partitionEpoch: 1 })
    const s2 = apply(s, [MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, isr: [2] }, 2)])
    expect(part(s2)).toMatchObject({ leader: 2, isr: [2], leaderEpoch: 1, partitionEpoch: 2 })
  })

  it("applies PartitionChangeRecord v3: LeaderEpoch sets the epoch, with or without a leader change", () => {
    const s = given([
      ...rf3(),
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leaderEpoch: 7 }, 3)
    ])
    expect(part(s)).toMatchObject({ leader: 1, leaderEpoch: 7, partitionEpoch: 1 })
    const s2 = apply(s, [
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leader: 3, leaderEpoch: 8 }, 3)
    ])
    expect(part(s2)).toMatchObject({ leader: 3, leaderEpoch: 8, partitionEpoch: 2 })
    // v3 without an explicit epoch keeps the implicit rule.
    const s3 = apply(s2, [MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leader: 1 }, 3)])
    expect(part(s3)).toMatchObject({ leader: 1, leaderEpoch: 9, partitionEpoch: 3 })
  })

  it("dies on records that contradict the state", () => {
    const s = given(rf3())
    const bad: ReadonlyArray<Rec> = [
      MetadataRecords.make("TopicRecord", { name: "t", topicId: idOf(9) }),
      MetadataRecords.make("TopicRecord", { name: "u", topicId: T }),
      MetadataRecords.make("PartitionRecord", { partitionId: 0, topicId: idOf(9), replicas: [1], isr: [1], leader: 1 }),
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 5, topicId: T, isr: [1] }),
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: idOf(9), isr: [1] }),
      MetadataRecords.make("RemoveTopicRecord", { topicId: idOf(9) }),
      MetadataRecords.mirrorTopicStateChange(idOf(9), "m", "MIRRORING")
    ]
    for (const r of bad) expect(() => RC.replay(s, r, 5n)).toThrow()
    const bumped = apply(s, [
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leaderEpoch: 5 }, 3)
    ])
    expect(() =>
      RC.replay(
        bumped,
        MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leaderEpoch: 4 }, 3),
        9n
      )
    ).toThrow(/back/)
  })

  it("keeps the mirror name, desired state and the record offset of MirrorTopicStateChangeRecord", () => {
    const s = given(rf3())
    const s2 = RC.replay(s, MetadataRecords.mirrorTopicStateChange(T, "m1", "MIRRORING"), 42n)
    expect(RC.topicByName(s2, "t")).toMatchObject({
      mirrorName: "m1",
      desiredMirrorState: 2,
      lastMirrorStateChangeOffset: 42n
    })
    const s3 = RC.replay(s2, MetadataRecords.mirrorTopicStateChange(T, null, "UNKNOWN"), 50n)
    expect(RC.topicByName(s3, "t")).toMatchObject({
      mirrorName: null,
      desiredMirrorState: -1,
      lastMirrorStateChangeOffset: 50n
    })
  })

  it("removes a topic with RemoveTopicRecord, freeing its name and collision key", () => {
    const s = given([
      ...topicRecords("a.b", T, [{ replicas: [1] }]),
      MetadataRecords.make("RemoveTopicRecord", { topicId: T })
    ])
    expect(s).toEqual(RC.empty)
  })

  it("replays a batch as it replays its records one at a time, without changing the state it starts from", () => {
    const ids = [T, idOf(1), idOf(2)]
    const record: fc.Arbitrary<Rec> = fc.oneof(
      fc
        .record({ t: fc.nat(2), name: fc.constantFrom("a", "b.c", "b_c", "d") })
        .map(({ t, name }) => MetadataRecords.make("TopicRecord", { name, topicId: ids[t]! })),
      fc.record({ t: fc.nat(2), p: fc.nat(3), e: fc.nat(5) }).map(({ t, p, e }) =>
        MetadataRecords.make("PartitionRecord", {
          partitionId: p,
          topicId: ids[t]!,
          replicas: [1, 2],
          isr: [1],
          leader: 1,
          leaderEpoch: e
        })
      ),
      fc
        .record({ t: fc.nat(2), p: fc.nat(3), leader: fc.constantFrom(-2, 1, 2) })
        .map(({ t, p, leader }) =>
          MetadataRecords.make("PartitionChangeRecord", { partitionId: p, topicId: ids[t]!, leader, isr: [1] }, 0)
        ),
      fc.nat(2).map((t) => MetadataRecords.make("RemoveTopicRecord", { topicId: ids[t]! })),
      fc
        .record({ t: fc.nat(2), stop: fc.boolean() })
        .map(({ t, stop }) => MetadataRecords.mirrorTopicStateChange(ids[t]!, "m", stop ? "STOPPED" : "MIRRORING"))
    )
    fc.assert(
      fc.property(fc.array(record, { maxLength: 40 }), fc.nat(40), (records, cut) => {
        // The records that replay without dying, one at a time; the base is a prefix of them.
        const valid: Array<Rec> = []
        let one = RC.empty
        for (const r of records) {
          try {
            one = RC.replay(one, r, BigInt(valid.length))
            valid.push(r)
          } catch {}
        }
        const k = Math.min(cut, valid.length)
        const base = given(valid.slice(0, k))
        const frozen = plain(base)
        const batch = RC.replayAll(base, valid.slice(k), (i) => BigInt(k + i))
        expect(batch).toEqual(one)
        expect(plain(base)).toEqual(frozen)
      })
    )
  })

  it("replays a batch copying each map once, not once per record", () => {
    const topics = 2000
    const records: Array<Rec> = []
    for (let t = 0; t < topics; t++) {
      records.push(MetadataRecords.make("TopicRecord", { name: `t${t}`, topicId: idOf(t) }))
      for (let p = 0; p < 5; p++)
        records.push(
          MetadataRecords.make("PartitionRecord", {
            partitionId: p,
            topicId: idOf(t),
            replicas: [1],
            isr: [1],
            leader: 1
          })
        )
    }
    const created = copiedEntries(() => RC.replayAll(RC.empty, records, (i) => BigInt(i)))
    // A stop of every topic: one MirrorTopicStateChangeRecord each.
    const stops = Array.from({ length: topics }, (_, t) =>
      MetadataRecords.mirrorTopicStateChange(idOf(t), "m", "STOPPED")
    )
    const stopped = copiedEntries(() => RC.replayAll(created.result, stops, (i) => BigInt(records.length + i)))
    expect(RC.topicByName(stopped.result, "t1999")).toMatchObject({ desiredMirrorState: 6 })
    // One record at a time, each record copied the whole topic map: topics² entries.
    expect(created.copied).toBeLessThan(5 * topics)
    expect(stopped.copied).toBeLessThan(5 * topics)
  })

  it("replays one record into a state of 10,000 topics without copying a map, sharing every other topic", () => {
    const topics = 10_000
    const records: Array<Rec> = []
    for (let t = 0; t < topics; t++) {
      records.push(MetadataRecords.make("TopicRecord", { name: `t${t}`, topicId: idOf(t) }))
      records.push(
        MetadataRecords.make("PartitionRecord", {
          partitionId: 0,
          topicId: idOf(t),
          replicas: [1, 2],
          isr: [1, 2],
          leader: 1
        })
      )
    }
    const base = RC.replayAll(RC.empty, records, (i) => BigInt(i))
    // A heartbeat-driven ISR shrink of one partition.
    const change = MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: idOf(42), isr: [1] }, 0)
    const one = copiedEntries(() => RC.replay(base, change, BigInt(records.length)))
    expect(one.copied).toBe(0)
    expect(one.result.topicsById.get(idOf(42))!.partitions.get(0)!.isr).toEqual([1])
    expect(base.topicsById.get(idOf(42))!.partitions.get(0)!.isr).toEqual([1, 2])
    for (let t = 0; t < topics; t++)
      if (t !== 42) expect(one.result.topicsById.get(idOf(t))).toBe(base.topicsById.get(idOf(t)))
    expect(one.result.topicIdsByName).toBe(base.topicIdsByName)
    expect([...one.result.topicsById.keys()]).toEqual([...base.topicsById.keys()])
  })

  it("leaves the state unchanged for records of other modules", () => {
    const s = given(rf3())
    const others: ReadonlyArray<Rec> = [
      MetadataRecords.make("ConfigRecord", { resourceType: 2, resourceName: "t", name: "x", value: "y" }),
      MetadataRecords.make("FenceBrokerRecord", { id: 1, epoch: 1n }),
      MetadataRecords.make("NoOpRecord", {}),
      MetadataRecords.make("ProducerIdsRecord", { brokerId: 1, nextProducerId: 1000n })
    ]
    for (const r of others) expect(RC.replay(s, r, 3n)).toBe(s)
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.createTopics", () => {
  it("places an RF=3 topic on 3 brokers: TopicRecord, ConfigRecords, PartitionRecords", () => {
    const { records, response, after } = create(RC.empty, [
      topic("orders", { numPartitions: 6, replicationFactor: 3, configs: [{ name: "retention.ms", value: "1000" }] })
    ])
    expect(records.map((r) => r.type)).toEqual(["TopicRecord", "ConfigRecord", ...Array(6).fill("PartitionRecord")])
    expect(response).toEqual([
      {
        name: "orders",
        topicId: idOf(0),
        errorCode: 0,
        errorMessage: null,
        topicConfigErrorCode: 0,
        numPartitions: 6,
        replicationFactor: 3,
        configs: [{ name: "retention.ms", value: "1000", readOnly: false, configSource: 1, isSensitive: false }]
      }
    ])
    const t = RC.topicByName(after, "orders")!
    const leaders = new Set<number>()
    for (const p of t.partitions.values()) {
      expect(new Set(p.replicas).size).toBe(3)
      expect(p.isr).toEqual(p.replicas)
      expect(p.leader).toBe(p.replicas[0])
      expect(p).toMatchObject({ leaderEpoch: 0, partitionEpoch: 0, leaderRecoveryState: 0 })
      leaders.add(p.leader)
    }
    // Round robin spreads leadership over every broker.
    expect(leaders).toEqual(new Set([1, 2, 3]))
  })

  it("uses the defaults for -1 and is deterministic", () => {
    const a = create(RC.empty, [topic("x")], THREE, ctx({ defaultPartitions: 4, defaultReplicationFactor: 2 }))
    const b = create(RC.empty, [topic("x")], THREE, ctx({ defaultPartitions: 4, defaultReplicationFactor: 2 }))
    expect(a.response[0]).toMatchObject({ errorCode: 0, numPartitions: 4, replicationFactor: 2 })
    expect(a.records).toEqual(b.records)
  })

  it.each([
    ["", "Topic name is illegal, it can't be empty"],
    [".", 'Topic name cannot be "." or ".."'],
    ["..", 'Topic name cannot be "." or ".."'],
    ["a b", `Topic name "a b" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`],
    ["x".repeat(250), `Topic name is illegal, it can't be longer than 249 characters, topic name: ${"x".repeat(250)}`]
  ])("refuses the illegal name %j with INVALID_TOPIC_EXCEPTION", (name, message) => {
    const { records, response } = create(RC.empty, [topic(name)])
    expect(records).toEqual([])
    expect(response[0]).toMatchObject({
      name,
      errorCode: E.INVALID_TOPIC_EXCEPTION,
      errorMessage: message,
      topicId: Uuid.ZERO
    })
  })

  it("refuses names that collide on '.' and '_' with an existing topic, also within one request", () => {
    const s = given(topicRecords("a_b", T, [{ replicas: [1] }]))
    const { records, response } = create(s, [topic("a.b"), topic("c.d"), topic("c_d")])
    expect(response.map((r) => [r.name, r.errorCode, r.errorMessage])).toEqual([
      ["a.b", E.INVALID_TOPIC_EXCEPTION, "Topic 'a.b' collides with existing topic: a_b"],
      ["c.d", 0, null],
      ["c_d", E.INVALID_TOPIC_EXCEPTION, "Topic 'c_d' collides with existing topic: c.d"]
    ])
    expect(records.filter((r) => r.type === "TopicRecord")).toHaveLength(1)
  })

  it("answers TOPIC_ALREADY_EXISTS for an existing name and INVALID_REQUEST for duplicates in the request", () => {
    const { records, response } = create(given(rf3()), [topic("t"), topic("d"), topic("d")])
    expect(records).toEqual([])
    expect(response).toMatchObject([
      { name: "t", errorCode: E.TOPIC_ALREADY_EXISTS, errorMessage: "Topic 't' already exists." },
      { name: "d", errorCode: E.INVALID_REQUEST, errorMessage: "Duplicate topic name." }
    ])
  })

  it("answers INVALID_PARTITIONS and INVALID_REPLICATION_FACTOR for bad counts", () => {
    const { response } = create(RC.empty, [
      topic("p0", { numPartitions: 0 }),
      topic("p-2", { numPartitions: -2 }),
      topic("r0", { replicationFactor: 0 }),
      topic("r4", { replicationFactor: 4 })
    ])
    expect(response.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."],
      [E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."],
      [E.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0, or -1 to use the default value."],
      [
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."
      ]
    ])
  })

  it("counts only active brokers for placement", () => {
    const { response } = create(RC.empty, [topic("t", { replicationFactor: 3 })], clusterOf([1, 2], [1, 2, 3]))
    expect(response[0]!.errorMessage).toContain("only 2 broker(s) are registered")
    const none = create(RC.empty, [topic("t", { replicationFactor: 1 })], clusterOf([], [1]))
    expect(none.response[0]).toMatchObject({ errorCode: E.INVALID_REPLICATION_FACTOR })
  })

  it("answers INVALID_CONFIG from the config validation and for null values", () => {
    const { records, response } = create(RC.empty, [
      topic("a", { configs: [{ name: "bogus", value: "1" }] }),
      topic("b", { configs: [{ name: "retention.ms", value: null }] })
    ])
    expect(records).toEqual([])
    expect(response).toMatchObject([
      { errorCode: E.INVALID_CONFIG, errorMessage: "Unknown topic config name: bogus" },
      { errorCode: E.INVALID_CONFIG, errorMessage: "Null value not supported for topic configs: retention.ms" }
    ])
  })

  it("takes a manual assignment: ISR and leader from its active brokers", () => {
    const { response, after } = create(
      RC.empty,
      [
        topic("m", {
          assignments: [
            { partitionIndex: 1, brokerIds: [3, 1] },
            { partitionIndex: 0, brokerIds: [2, 3] }
          ]
        })
      ],
      clusterOf([1, 3], [1, 2, 3])
    )
    expect(response[0]).toMatchObject({ errorCode: 0, numPartitions: 2, replicationFactor: 2 })
    expect(part(after, "m", 0)).toMatchObject({ replicas: [2, 3], isr: [3], leader: 3 })
    expect(part(after, "m", 1)).toMatchObject({ replicas: [3, 1], isr: [3, 1], leader: 3 })
  })

  it.each<[string, Partial<RC.CreatableTopic>, number, string]>([
    [
      "numPartitions set",
      { numPartitions: 1, assignments: [{ partitionIndex: 0, brokerIds: [1] }] },
      E.INVALID_REQUEST,
      "A manual partition assignment was specified, but numPartitions was not set to -1."
    ],
    [
      "replicationFactor set",
      { replicationFactor: 1, assignments: [{ partitionIndex: 0, brokerIds: [1] }] },
      E.INVALID_REQUEST,
      "A manual partition assignment was specified, but replication factor was not set to -1."
    ],
    [
      "empty replica list",
      { assignments: [{ partitionIndex: 0, brokerIds: [] }] },
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes an empty replica list."
    ],
    [
      "unregistered broker",
      { assignments: [{ partitionIndex: 0, brokerIds: [1, 9] }] },
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes broker 9, but no such broker is registered."
    ],
    [
      "duplicate broker",
      { assignments: [{ partitionIndex: 0, brokerIds: [2, 2] }] },
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes the broker 2 more than once."
    ],
    [
      "inconsistent replication factor",
      {
        assignments: [
          { partitionIndex: 0, brokerIds: [1, 2] },
          { partitionIndex: 1, brokerIds: [1] }
        ]
      },
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."
    ],
    [
      "repeated partition",
      {
        assignments: [
          { partitionIndex: 0, brokerIds: [1] },
          { partitionIndex: 0, brokerIds: [2] }
        ]
      },
      E.INVALID_REPLICA_ASSIGNMENT,
      "Found multiple manual partition assignments for partition 0"
    ],
    [
      "gap in partitions",
      {
        assignments: [
          { partitionIndex: 0, brokerIds: [1] },
          { partitionIndex: 2, brokerIds: [2] }
        ]
      },
      E.INVALID_REPLICA_ASSIGNMENT,
      "partitions should be a consecutive 0-based integer sequence"
    ],
    [
      "only inactive brokers",
      { assignments: [{ partitionIndex: 0, brokerIds: [4] }] },
      E.INVALID_REPLICA_ASSIGNMENT,
      "All brokers specified in the manual partition assignment for partition 0 are fenced or in controlled shutdown."
    ]
  ])("refuses a manual assignment with %s", (_, over, errorCode, errorMessage) => {
    const { records, response } = create(RC.empty, [topic("m", over)], clusterOf([1, 2, 3], [1, 2, 3, 4]))
    expect(records).toEqual([])
    expect(response[0]).toMatchObject({ errorCode, errorMessage })
  })

  it("validateOnly answers as a real create and writes nothing", () => {
    const real = RC.createTopics(RC.empty, createReq([topic("v", { numPartitions: 2 })]), THREE, ctx())
    const dry = RC.createTopics(RC.empty, createReq([topic("v", { numPartitions: 2 })], true), THREE, ctx())
    expect(dry.records).toEqual([])
    expect(dry.response).toEqual(real.response)
  })

  it("refuses a topic of more than 10,000 partitions with POLICY_VIOLATION, but not many topics that add up to more", () => {
    const { records, response } = create(RC.empty, [
      topic("ok"),
      topic("huge", { numPartitions: 2_000_000_000, replicationFactor: 1 })
    ])
    expect(records).toEqual([])
    expect(response[0]).toMatchObject({ name: "ok", errorCode: E.POLICY_VIOLATION })
    expect(response[1]).toMatchObject({
      errorCode: E.POLICY_VIOLATION,
      errorMessage: "Unable to perform excessively large batch operation."
    })
    // More records than one batch holds: one decision, which the runtime writes as a metadata transaction.
    const many = create(RC.empty, [
      topic("a", { numPartitions: 6000, replicationFactor: 1 }),
      topic("b", { numPartitions: 6000, replicationFactor: 1 })
    ])
    expect(many.response.map((r) => r.errorCode)).toEqual([E.NONE, E.NONE])
    expect(many.records.filter((r) => r.type === "PartitionRecord")).toHaveLength(12_000)
  })

  it("never reuses a topic id the generator repeats", () => {
    const s = given(rf3())
    const ids = [T, T, idOf(5)]
    const { response } = create(s, [topic("n")], THREE, ctx({ newTopicId: () => ids.shift()! }))
    expect(response[0]!.topicId).toBe(idOf(5))
  })
})

describe("ReplicationControl.createTopics v8 MirrorInfo (KIP-1279)", () => {
  const SOURCE_ID = idOf(77)
  const mirror = (name: string, over: Partial<RC.CreatableTopic> = {}) =>
    topic(name, { mirrorInfo: { topicId: SOURCE_ID }, ...over })

  it("creates the topic with the source topic id", () => {
    const { records, response, after } = create(RC.empty, [mirror("src.orders", { numPartitions: 3 })])
    expect(response[0]).toMatchObject({ errorCode: 0, topicId: SOURCE_ID, numPartitions: 3, replicationFactor: 3 })
    expect(records[0]).toEqual(MetadataRecords.make("TopicRecord", { name: "src.orders", topicId: SOURCE_ID }))
    expect(RC.topicById(after, SOURCE_ID)!.partitions.size).toBe(3)
  })

  it("answers TOPIC_ALREADY_EXISTS when another topic has the id", () => {
    const s = given(topicRecords("other", SOURCE_ID, [{ replicas: [1] }]))
    const { records, response } = create(s, [mirror("m")])
    expect(records).toEqual([])
    expect(response[0]).toMatchObject({ errorCode: E.TOPIC_ALREADY_EXISTS })
    expect(response[0]!.errorMessage).toContain("other")
    // Two topics of one request cannot share the id either.
    const both = create(RC.empty, [mirror("m1"), mirror("m2")])
    expect(both.response.map((r) => r.errorCode)).toEqual([0, E.TOPIC_ALREADY_EXISTS])
  })

  it("requires every assigned replica to be active", () => {
    const cluster = clusterOf([1, 2], [1, 2, 3])
    const manual = create(RC.empty, [mirror("m", { assignments: [{ partitionIndex: 0, brokerIds: [1, 3] }] })], cluster)
    expect(manual.records).toEqual([])
    expect(manual.response[0]).toMatchObject({ errorCode: E.INVALID_REPLICA_ASSIGNMENT })
    // Without MirrorInfo the same assignment is accepted with the inactive broker out of the ISR.
    const plain = create(RC.empty, [topic("m", { assignments: [{ partitionIndex: 0, brokerIds: [1, 3] }] })], cluster)
    expect(plain.response[0]).toMatchObject({ errorCode: 0 })
    expect(part(plain.after, "m")).toMatchObject({ isr: [1] })
    const auto = create(RC.empty, [mirror("m", { replicationFactor: 3 })], cluster)
    expect(auto.response[0]).toMatchObject({ errorCode: E.INVALID_REPLICATION_FACTOR })
  })

  it("treats the zero id as no MirrorInfo", () => {
    const { response } = create(RC.empty, [topic("z", { mirrorInfo: { topicId: Uuid.ZERO } })])
    expect(response[0]).toMatchObject({ errorCode: 0, topicId: idOf(0) })
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.createPartitions", () => {
  const req = (topics: CreatePartitions.Request["topics"], validateOnly = false): CreatePartitions.Request => ({
    topics,
    timeoutMs: 1000,
    validateOnly
  })

  it("adds partitions with the topic's replication factor, numbered after the existing ones", () => {
    const { records, response, after } = when(given(rf3(2)), (s) =>
      RC.createPartitions(s, req([{ name: "t", count: 5, assignments: null }]), THREE)
    )
    expect(response).toEqual([{ name: "t", errorCode: 0, errorMessage: null }])
    expect(records.map((r) => (r.type === "PartitionRecord" ? r.data.partitionId : -1))).toEqual([2, 3, 4])
    for (const p of [2, 3, 4]) {
      expect(new Set(part(after, "t", p).replicas).size).toBe(3)
      expect(part(after, "t", p)).toMatchObject({ leaderEpoch: 0, partitionEpoch: 0 })
    }
  })

  it("takes manual assignments", () => {
    const { after } = when(given(rf3()), (s) =>
      RC.createPartitions(s, req([{ name: "t", count: 2, assignments: [{ brokerIds: [3, 2, 1] }] }]), THREE)
    )
    expect(part(after, "t", 1)).toMatchObject({ replicas: [3, 2, 1], leader: 3 })
  })

  it("answers Kafka's errors per topic", () => {
    const s = given([...rf3(2), ...topicRecords("u", idOf(1), [{ replicas: [1] }])])
    const { records, response } = when(s, (st) =>
      RC.createPartitions(
        st,
        req([
          { name: "nope", count: 3, assignments: null },
          { name: "t", count: 2, assignments: null },
          { name: "t", count: 2, assignments: null },
          { name: "u", count: 1, assignments: null }
        ]),
        THREE
      )
    )
    expect(records).toEqual([])
    expect(response.map((r) => [r.name, r.errorCode, r.errorMessage])).toEqual([
      ["nope", E.UNKNOWN_TOPIC_OR_PARTITION, Errors.message(E.UNKNOWN_TOPIC_OR_PARTITION)],
      ["t", E.INVALID_REQUEST, "Duplicate topic name."],
      ["u", E.INVALID_PARTITIONS, "Topic already has 1 partition(s)."]
    ])
    const shrink = RC.createPartitions(s, req([{ name: "t", count: 1, assignments: null }]), THREE)
    expect(shrink.response[0]).toMatchObject({
      errorCode: E.INVALID_PARTITIONS,
      errorMessage: "The topic t currently has 2 partition(s); 1 would not be an increase."
    })
    const count = RC.createPartitions(s, req([{ name: "t", count: 4, assignments: [{ brokerIds: [1, 2, 3] }] }]), THREE)
    expect(count.response[0]).toMatchObject({
      errorCode: E.INVALID_REPLICA_ASSIGNMENT,
      errorMessage: "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
    })
    const rf = RC.createPartitions(s, req([{ name: "t", count: 3, assignments: [{ brokerIds: [1, 2] }] }]), THREE)
    expect(rf.response[0]).toMatchObject({ errorCode: E.INVALID_REPLICA_ASSIGNMENT })
    const few = RC.createPartitions(s, req([{ name: "t", count: 3, assignments: null }]), clusterOf([1, 2], [1, 2, 3]))
    expect(few.response[0]).toMatchObject({
      errorCode: E.INVALID_REPLICATION_FACTOR,
      errorMessage: "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered."
    })
    const huge = RC.createPartitions(s, req([{ name: "t", count: 2_000_000_000, assignments: null }]), THREE)
    expect(huge.records).toEqual([])
    expect(huge.response[0]).toMatchObject({ errorCode: E.POLICY_VIOLATION })
  })

  it("validateOnly writes nothing", () => {
    const r = RC.createPartitions(given(rf3()), req([{ name: "t", count: 3, assignments: null }], true), THREE)
    expect(r.records).toEqual([])
    expect(r.response[0]).toMatchObject({ errorCode: 0 })
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.deleteTopics", () => {
  const s = given([...rf3(), ...topicRecords("u", idOf(1), [{ replicas: [1] }])])
  const req = (over: Partial<DeleteTopics.Request>): DeleteTopics.Request => ({
    topics: [],
    topicNames: [],
    timeoutMs: 1000,
    ...over
  })

  it("removes topics by name (v0-5) and by id (v6)", () => {
    const byName = when(s, (st) => RC.deleteTopics(st, req({ topicNames: ["t"] })))
    expect(byName.records).toEqual([MetadataRecords.make("RemoveTopicRecord", { topicId: T })])
    expect(byName.response).toEqual([{ name: "t", topicId: T, errorCode: 0, errorMessage: null }])
    expect(RC.topicByName(byName.after, "t")).toBeUndefined()
    const byId = when(s, (st) => RC.deleteTopics(st, req({ topics: [{ name: null, topicId: idOf(1) }] })))
    expect(byId.response).toEqual([{ name: "u", topicId: idOf(1), errorCode: 0, errorMessage: null }])
    expect(byId.after.topicsById.has(idOf(1))).toBe(false)
  })

  it("answers unknown names, unknown ids, duplicates and the zero id", () => {
    const { records, response } = when(s, (st) =>
      RC.deleteTopics(
        st,
        req({
          topics: [
            { name: "nope", topicId: Uuid.ZERO },
            { name: null, topicId: idOf(9) },
            { name: null, topicId: Uuid.ZERO },
            { name: "u", topicId: Uuid.ZERO },
            { name: "u", topicId: Uuid.ZERO },
            { name: null, topicId: T },
            { name: "t", topicId: Uuid.ZERO }
          ]
        })
      )
    )
    expect(records).toEqual([MetadataRecords.make("RemoveTopicRecord", { topicId: T })])
    expect(response.map((r) => [r.name, r.errorCode])).toEqual([
      [null, E.UNKNOWN_TOPIC_ID],
      [null, E.INVALID_REQUEST],
      ["nope", E.UNKNOWN_TOPIC_OR_PARTITION],
      ["u", E.INVALID_REQUEST],
      ["t", E.INVALID_REQUEST],
      ["t", E.NONE]
    ])
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.alterPartition", () => {
  const epochs = new Map<number, bigint>([
    [1, 10n],
    [2, 20n],
    [3, 30n]
  ])
  const s = given(rf3())
  const req = (
    pd: Partial<AlterPartition.Request["topics"][number]["partitions"][number]> & { isr?: ReadonlyArray<number> },
    over: Partial<AlterPartition.Request> = {},
    topicId = T
  ): AlterPartition.Request => ({
    brokerId: 1,
    brokerEpoch: 10n,
    topics: [
      {
        topicName: "",
        topicId,
        partitions: [
          {
            partitionIndex: 0,
            leaderEpoch: 0,
            newIsr: [],
            newIsrWithEpochs: (pd.isr ?? [1, 2]).map((brokerId) => ({
              brokerId,
              brokerEpoch: epochs.get(brokerId) ?? -1n
            })),
            leaderRecoveryState: 0,
            partitionEpoch: 0,
            ...pd
          }
        ]
      }
    ],
    ...over
  })
  const alter = (state: RC.State, r: AlterPartition.Request, cluster = THREE, version = 3) =>
    when(state, (st) => right(RC.alterPartition(st, r, epochs, cluster, version)))
  const codeOf = (res: ControllerResult<RC.AlterPartitionResponse>) => res.response.topics[0]!.partitions[0]!.errorCode

  it("shrinks the ISR: PartitionChangeRecord with partition epoch + 1, leader epoch unchanged", () => {
    const { records, response, after } = alter(s, req({ isr: [1, 2] }))
    expect(records).toEqual([
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, isr: [1, 2], leaderEpoch: -1 }, 3)
    ])
    expect(response).toEqual({
      throttleTimeMs: 0,
      errorCode: 0,
      topics: [
        {
          topicName: "",
          topicId: T,
          partitions: [
            {
              partitionIndex: 0,
              errorCode: 0,
              leaderId: 1,
              leaderEpoch: 0,
              isr: [1, 2],
              leaderRecoveryState: 0,
              partitionEpoch: 1
            }
          ]
        }
      ]
    })
    expect(part(after)).toMatchObject({ isr: [1, 2], leaderEpoch: 0, partitionEpoch: 1 })
    // and expands it again at the new partition epoch
    const back = alter(after, req({ isr: [1, 2, 3], partitionEpoch: 1 }))
    expect(part(back.after)).toMatchObject({ isr: [1, 2, 3], partitionEpoch: 2 })
  })

  it("writes nothing for an unchanged ISR and answers the current state", () => {
    const { records, response } = alter(s, req({ isr: [1, 2, 3] }))
    expect(records).toEqual([])
    expect(response.topics[0]!.partitions[0]).toMatchObject({ errorCode: 0, isr: [1, 2, 3], partitionEpoch: 0 })
  })

  it("fails the whole request with STALE_BROKER_EPOCH for a stale or unregistered sender", () => {
    const stale = RC.alterPartition(s, req({}, { brokerEpoch: 9n }), epochs, THREE)
    expect(Either.isLeft(stale) && stale.left.errorCode).toBe(E.STALE_BROKER_EPOCH)
    const unknown = RC.alterPartition(s, req({}, { brokerId: 7 }), epochs, THREE)
    expect(Either.isLeft(unknown) && unknown.left._tag).toBe("StaleBrokerEpoch")
  })

  it.each<[string, Parameters<typeof req>[0], Partial<AlterPartition.Request>, number]>([
    ["a newer leader epoch", { leaderEpoch: 1 }, {}, E.NOT_CONTROLLER],
    ["a newer partition epoch", { partitionEpoch: 1 }, {}, E.NOT_CONTROLLER],
    ["an unknown partition", { partitionIndex: 4 }, {}, E.UNKNOWN_TOPIC_OR_PARTITION],
    ["a non-leader sender", {}, { brokerId: 2, brokerEpoch: 20n }, E.NOT_LEADER_OR_FOLLOWER],
    ["an ISR without the leader", { isr: [2, 3] }, {}, E.INVALID_REQUEST],
    ["an ISR outside the replicas", { isr: [1, 4] }, {}, E.INVALID_REQUEST],
    ["an ISR with a duplicate", { isr: [1, 1] }, {}, E.INVALID_REQUEST],
    ["RECOVERING with more than the leader", { isr: [1, 2], leaderRecoveryState: 1 }, {}, E.INVALID_REQUEST]
  ])("refuses %s", (_, pd, over, code) => {
    const r = alter(s, req(pd, over))
    expect(r.records).toEqual([])
    expect(codeOf(r)).toBe(code)
  })

  it("answers FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION on stale epochs", () => {
    const s2 = apply(s, [
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leaderEpoch: 3 }, 3),
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, isr: [1, 2, 3] }, 3)
    ])
    expect(codeOf(alter(s2, req({ leaderEpoch: 2, partitionEpoch: 2 })))).toBe(E.FENCED_LEADER_EPOCH)
    expect(codeOf(alter(s2, req({ leaderEpoch: 3, partitionEpoch: 1 })))).toBe(E.INVALID_UPDATE_VERSION)
    expect(codeOf(alter(s2, req({ leaderEpoch: 3, partitionEpoch: 2 })))).toBe(E.NONE)
  })

  it("answers INELIGIBLE_REPLICA for fenced or shutting-down members and stale member epochs", () => {
    const fenced = alter(s, req({ isr: [1, 2, 3] }), clusterOf([1, 2], [1, 2, 3]))
    expect(codeOf(fenced)).toBe(E.INELIGIBLE_REPLICA)
    const staleMember = req({
      newIsrWithEpochs: [
        { brokerId: 1, brokerEpoch: 10n },
        { brokerId: 2, brokerEpoch: 19n }
      ]
    })
    expect(codeOf(alter(s, staleMember))).toBe(E.INELIGIBLE_REPLICA)
    const v1 = req({ isr: [1, 2, 3] })
    const byName = { ...v1, topics: [{ ...v1.topics[0]!, topicName: "t", topicId: Uuid.ZERO }] }
    const byNameV1 = {
      ...byName,
      topics: [{ ...byName.topics[0]!, partitions: [{ ...byName.topics[0]!.partitions[0]!, newIsr: [1, 2, 3] }] }]
    }
    expect(codeOf(alter(s, byNameV1, clusterOf([1, 2], [1, 2, 3]), 1))).toBe(E.OPERATION_NOT_ATTEMPTED)
  })

  it("answers UNKNOWN_TOPIC_ID for an unknown topic id, and resolves names before v2", () => {
    expect(codeOf(alter(s, req({}, {}, idOf(9))))).toBe(E.UNKNOWN_TOPIC_ID)
    const v1: AlterPartition.Request = {
      ...req({}),
      topics: [{ ...req({}).topics[0]!, topicName: "t", topicId: Uuid.ZERO }]
    }
    const v1Isr = {
      ...v1,
      topics: [{ ...v1.topics[0]!, partitions: [{ ...v1.topics[0]!.partitions[0]!, newIsr: [1, 3] }] }]
    }
    const r = alter(s, v1Isr, THREE, 1)
    expect(codeOf(r)).toBe(E.NONE)
    expect(part(r.after).isr).toEqual([1, 3])
    expect(codeOf(alter(s, { ...v1, topics: [{ ...v1.topics[0]!, topicName: "nope" }] }, THREE, 1))).toBe(
      E.UNKNOWN_TOPIC_OR_PARTITION
    )
  })

  it("lets a recovering leader report RECOVERED while expanding the ISR", () => {
    const recovering = apply(s, [
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, isr: [1], leaderRecoveryState: 1 }, 3)
    ])
    const r = alter(recovering, req({ isr: [1, 2], partitionEpoch: 1, leaderRecoveryState: 0 }))
    expect(codeOf(r)).toBe(E.NONE)
    expect(part(r.after)).toMatchObject({ isr: [1, 2], leaderRecoveryState: 0, partitionEpoch: 2 })
  })

  it("sees earlier partitions of the same request (a repeated entry is stale)", () => {
    const one = req({ isr: [1, 2] })
    const twice: AlterPartition.Request = {
      ...one,
      topics: [{ ...one.topics[0]!, partitions: [one.topics[0]!.partitions[0]!, one.topics[0]!.partitions[0]!] }]
    }
    const r = alter(s, twice)
    expect(r.records).toHaveLength(1)
    expect(r.response.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([E.NONE, E.INVALID_UPDATE_VERSION])
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl broker fencing, unfencing and shutdown", () => {
  const never: RC.UncleanElectionEnabled = () => false
  const always: RC.UncleanElectionEnabled = () => true

  it("scenario: fence the leader of an RF=3 topic → the next in-sync replica leads with epoch + 1", () => {
    const s = given(rf3())
    const { records, response, after } = when(s, (st) => RC.handleBrokerFenced(st, 1, THREE, never))
    expect(records).toEqual([
      MetadataRecords.make(
        "PartitionChangeRecord",
        { partitionId: 0, topicId: T, leader: 2, isr: [2, 3], leaderEpoch: 1 },
        3
      )
    ])
    expect(response).toEqual([{ topicId: T, topicName: "t", partitionId: 0 }])
    expect(part(after)).toMatchObject({ leader: 2, isr: [2, 3], leaderEpoch: 1, partitionEpoch: 1 })
  })

  it("a fenced follower only leaves the ISR (no leader epoch bump)", () => {
    const { after } = when(given(rf3()), (st) => RC.handleBrokerFenced(st, 3, THREE, never))
    expect(part(after)).toMatchObject({ leader: 1, isr: [1, 2], leaderEpoch: 0, partitionEpoch: 1 })
  })

  it("scenario: losing every in-sync replica with unclean election enabled → the out-of-sync one leads, ISR = [it]", () => {
    // ISR [1, 2]: replica 3 is out of sync.
    let s = given(topicRecords("t", T, [{ replicas: [1, 2, 3], isr: [1, 2] }]))
    s = when(s, (st) => RC.handleBrokerFenced(st, 1, clusterOf([2, 3], [1, 2, 3]), always)).after
    expect(part(s)).toMatchObject({ leader: 2, isr: [2], leaderEpoch: 1 })
    const { after } = when(s, (st) => RC.handleBrokerFenced(st, 2, clusterOf([3], [1, 2, 3]), always))
    expect(part(after)).toMatchObject({
      leader: 3,
      isr: [3],
      leaderEpoch: 2,
      partitionEpoch: 2,
      leaderRecoveryState: 1
    })
  })

  it("without unclean election the partition goes leaderless, keeping its last in-sync replica", () => {
    let s = given(topicRecords("t", T, [{ replicas: [1, 2, 3], isr: [1] }]))
    const fenced = when(s, (st) => RC.handleBrokerFenced(st, 1, clusterOf([2, 3], [1, 2, 3]), never))
    expect(part(fenced.after)).toMatchObject({ leader: -1, isr: [1], leaderEpoch: 1, partitionEpoch: 1 })
    s = fenced.after
    // An out-of-sync replica returning changes nothing...
    const two = when(s, (st) => RC.handleBrokerUnfenced(st, 2, clusterOf([2, 3], [1, 2, 3]), never))
    expect(two.records).toEqual([])
    // ...the last in-sync replica returning leads again, with a new epoch.
    const one = when(s, (st) => RC.handleBrokerUnfenced(st, 1, clusterOf([2, 3], [1, 2, 3]), never))
    expect(part(one.after)).toMatchObject({ leader: 1, isr: [1], leaderEpoch: 2, partitionEpoch: 2 })
    // With unclean election enabled the returning out-of-sync replica may lead.
    const unclean = when(s, (st) => RC.handleBrokerUnfenced(st, 2, clusterOf([], [1, 2, 3]), always))
    expect(part(unclean.after)).toMatchObject({ leader: 2, isr: [2], leaderEpoch: 2, leaderRecoveryState: 1 })
  })

  it("controlled shutdown moves leadership away like fencing", () => {
    const { after } = when(given(rf3(2)), (st) => RC.handleBrokerShutdown(st, 1, THREE, never))
    expect(RC.partitionsLedBy(after, 1)).toEqual([])
    expect(part(after, "t", 1)).toMatchObject({ leader: 2, isr: [2, 3] })
  })

  it("leaves partitions the broker is not in untouched", () => {
    const s = given(topicRecords("t", T, [{ replicas: [2, 3] }]))
    expect(RC.handleBrokerFenced(s, 1, THREE, never).records).toEqual([])
    expect(RC.handleBrokerUnfenced(s, 1, THREE, never).records).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.electLeaders", () => {
  const req = (
    electionType: number,
    topicPartitions: ElectLeaders.Request["topicPartitions"]
  ): ElectLeaders.Request => ({
    electionType,
    topicPartitions,
    timeoutMs: 1000
  })
  const elect = (s: RC.State, r: ElectLeaders.Request, cluster = THREE) =>
    when(s, (st) => right(RC.electLeaders(st, r, cluster)))
  const codes = (r: ControllerResult<RC.ElectLeadersResponse>) =>
    r.response.replicaElectionResults.flatMap((t) =>
      t.partitionResult.map((p) => [t.topic, p.partitionId, p.errorCode])
    )

  // Partition 0 led by its preferred replica; partition 1 led by 2 (preferred 1 in sync);
  // partition 2 led by 2 with preferred 1 out of sync; partition 3 leaderless.
  const s = given(
    topicRecords("t", T, [
      { replicas: [1, 2, 3] },
      { replicas: [1, 2, 3], leader: 2 },
      { replicas: [1, 2, 3], isr: [2, 3] },
      { replicas: [1, 2, 3], isr: [1], leader: -1 }
    ])
  )

  it("preferred: elects the first replica when it is in sync and active", () => {
    const r = elect(s, req(RC.PREFERRED, [{ topic: "t", partitions: [0, 1, 2, 3] }]))
    expect(codes(r)).toEqual([
      ["t", 0, E.ELECTION_NOT_NEEDED],
      ["t", 1, E.NONE],
      ["t", 2, E.PREFERRED_LEADER_NOT_AVAILABLE],
      ["t", 3, E.NONE]
    ])
    expect(part(r.after, "t", 1)).toMatchObject({ leader: 1, leaderEpoch: 1 })
    expect(part(r.after, "t", 3)).toMatchObject({ leader: 1, leaderEpoch: 1 })
  })

  it("unclean: gives a leaderless partition the first active replica, in sync or not", () => {
    const down1 = clusterOf([2, 3], [1, 2, 3])
    const r = elect(s, req(RC.UNCLEAN, [{ topic: "t", partitions: [0, 3] }]), down1)
    expect(codes(r)).toEqual([
      ["t", 0, E.ELECTION_NOT_NEEDED],
      ["t", 3, E.NONE]
    ])
    expect(part(r.after, "t", 3)).toMatchObject({ leader: 2, isr: [2], leaderEpoch: 1, leaderRecoveryState: 1 })
    const nobody = elect(s, req(RC.UNCLEAN, [{ topic: "t", partitions: [3] }]), clusterOf([], [1, 2, 3]))
    expect(codes(nobody)).toEqual([["t", 3, E.ELIGIBLE_LEADERS_NOT_AVAILABLE]])
  })

  it("answers UNKNOWN_TOPIC_OR_PARTITION and leaves out unneeded elections when asked for all", () => {
    const r = elect(
      s,
      req(RC.PREFERRED, [
        { topic: "nope", partitions: [0] },
        { topic: "t", partitions: [9] }
      ])
    )
    expect(codes(r)).toEqual([
      ["nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION],
      ["t", 9, E.UNKNOWN_TOPIC_OR_PARTITION]
    ])
    const all = elect(s, req(RC.PREFERRED, null))
    expect(codes(all)).toEqual([
      ["t", 1, E.NONE],
      ["t", 2, E.PREFERRED_LEADER_NOT_AVAILABLE],
      ["t", 3, E.NONE]
    ])
  })

  it("fails the request for an unknown election type", () => {
    const r = RC.electLeaders(s, req(5, null), THREE)
    expect(Either.isLeft(r) && r.left.errorCode).toBe(E.INVALID_REQUEST)
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.bumpLeaderEpochs (KIP-1279 §2.12)", () => {
  const s = apply(given(rf3(3)), [
    MetadataRecords.make("PartitionChangeRecord", { partitionId: 1, topicId: T, leaderEpoch: 5 }, 3),
    MetadataRecords.make("PartitionChangeRecord", { partitionId: 2, topicId: T, leaderEpoch: 9 }, 3)
  ])
  const req = (topics: BumpLeaderEpochs.Request["topics"]): Pick<BumpLeaderEpochs.Request, "topics"> => ({ topics })
  const ok = { throttleTimeMs: 0, errorCode: 0, errorMessage: null, topics: [] }

  it("raises epochs ≤ MinLeaderEpoch to MinLeaderEpoch + 1 with PartitionChangeRecord v3, leader unchanged", () => {
    const { records, response, after } = when(s, (st) =>
      RC.bumpLeaderEpochs(
        st,
        req([
          {
            topicId: T,
            partitions: [
              { partitionIndex: 0, minLeaderEpoch: 4 },
              { partitionIndex: 1, minLeaderEpoch: 5 },
              { partitionIndex: 2, minLeaderEpoch: 5 }
            ]
          }
        ])
      )
    )
    expect(records).toEqual([
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leaderEpoch: 5 }, 3),
      MetadataRecords.make("PartitionChangeRecord", { partitionId: 1, topicId: T, leaderEpoch: 6 }, 3)
    ])
    expect(records.every((r) => r.version === 3)).toBe(true)
    expect(response).toEqual(ok)
    expect(part(after, "t", 0)).toMatchObject({ leader: 1, leaderEpoch: 5, partitionEpoch: 1, isr: [1, 2, 3] })
    expect(part(after, "t", 1)).toMatchObject({ leader: 1, leaderEpoch: 6, partitionEpoch: 2 })
    expect(part(after, "t", 2)).toMatchObject({ leaderEpoch: 9, partitionEpoch: 1 })
  })

  it("skips partitions already above (default MinLeaderEpoch -1) and bumps a repeated partition once", () => {
    const r = RC.bumpLeaderEpochs(
      s,
      req([
        {
          topicId: T,
          partitions: [
            { partitionIndex: 0, minLeaderEpoch: -1 },
            { partitionIndex: 0, minLeaderEpoch: 3 },
            { partitionIndex: 0, minLeaderEpoch: 3 }
          ]
        }
      ])
    )
    expect(r.records).toHaveLength(1)
    expect(r.response).toEqual(ok)
  })

  it("answers UNKNOWN_TOPIC_ID per partition of an unknown topic, UNKNOWN_TOPIC_OR_PARTITION for a missing partition", () => {
    const { records, response } = when(s, (st) =>
      RC.bumpLeaderEpochs(
        st,
        req([
          { topicId: idOf(9), partitions: [{ partitionIndex: 0, minLeaderEpoch: 3 }] },
          {
            topicId: T,
            partitions: [
              { partitionIndex: 7, minLeaderEpoch: 3 },
              { partitionIndex: 0, minLeaderEpoch: 3 }
            ]
          }
        ])
      )
    )
    expect(records).toHaveLength(1)
    expect(response.errorCode).toBe(0)
    expect(response.topics).toEqual([
      {
        topicName: idOf(9),
        partitions: [
          { partitionIndex: 0, errorCode: E.UNKNOWN_TOPIC_ID, errorMessage: Errors.message(E.UNKNOWN_TOPIC_ID) }
        ]
      },
      {
        topicName: "t",
        partitions: [
          {
            partitionIndex: 7,
            errorCode: E.UNKNOWN_TOPIC_OR_PARTITION,
            errorMessage: Errors.message(E.UNKNOWN_TOPIC_OR_PARTITION)
          }
        ]
      }
    ])
  })

  it("refuses a MinLeaderEpoch with no int32 above it", () => {
    const r = RC.bumpLeaderEpochs(
      s,
      req([{ topicId: T, partitions: [{ partitionIndex: 0, minLeaderEpoch: 2_147_483_647 }] }])
    )
    expect(r.records).toEqual([])
    expect(r.response.topics[0]!.partitions[0]!.errorCode).toBe(E.INVALID_REQUEST)
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl queries", () => {
  const s = given([...rf3(2), ...topicRecords("u", idOf(1), [{ replicas: [2, 1] }])])

  it("partitionsLedBy lists a broker's leaderships by topic and partition", () => {
    expect(RC.partitionsLedBy(s, 1)).toEqual([
      { topicId: T, topicName: "t", partitionId: 0 },
      { topicId: T, topicName: "t", partitionId: 1 }
    ])
    expect(RC.partitionsLedBy(s, 2)).toEqual([{ topicId: idOf(1), topicName: "u", partitionId: 0 }])
  })

  it("describe answers topics with partitions, unknown names with UNKNOWN_TOPIC_OR_PARTITION", () => {
    const d = RC.describe(s, ["u", "nope"])
    expect(d[0]).toMatchObject({ name: "u", topicId: idOf(1), errorCode: 0 })
    expect(d[0]!.partitions).toEqual([
      {
        partitionIndex: 0,
        replicas: [2, 1],
        isr: [2, 1],
        removingReplicas: [],
        addingReplicas: [],
        leader: 2,
        leaderRecoveryState: 0,
        leaderEpoch: 0,
        partitionEpoch: 0
      }
    ])
    expect(d[1]).toMatchObject({ name: "nope", errorCode: E.UNKNOWN_TOPIC_OR_PARTITION })
    expect(RC.describe(s).map((t) => t.name)).toEqual(["t", "u"])
  })
})

// ---------------------------------------------------------------------------------------------------
// Properties: random operations over a random cluster.

type Op =
  | {
      readonly op: "create"
      readonly name: string
      readonly partitions: number
      readonly rf: number
      readonly mirror: boolean
    }
  | { readonly op: "grow"; readonly name: string; readonly count: number }
  | { readonly op: "delete"; readonly name: string }
  | { readonly op: "fence" | "unfence" | "shutdown"; readonly broker: number }
  | {
      readonly op: "alter"
      readonly name: string
      readonly partition: number
      readonly isr: ReadonlyArray<number>
      readonly stale: boolean
    }
  | { readonly op: "elect"; readonly type: number; readonly all: boolean }
  | { readonly op: "bump"; readonly name: string; readonly partition: number; readonly min: number }

const NAMES = ["a", "b", "c.d", "c_d", "__x"]
const opArb = (brokers: number): fc.Arbitrary<Op> => {
  const broker = fc.integer({ min: 0, max: brokers - 1 })
  const name = fc.constantFrom(...NAMES)
  return fc.oneof<Array<fc.WeightedArbitrary<Op>>>(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant("create" as const),
        name,
        partitions: fc.integer({ min: -2, max: 4 }),
        rf: fc.integer({ min: -1, max: brokers + 1 }),
        mirror: fc.boolean()
      })
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant("grow" as const), name, count: fc.integer({ min: 0, max: 6 }) })
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("delete" as const), name }) },
    {
      weight: 4,
      arbitrary: fc.record({ op: fc.constantFrom("fence" as const, "unfence" as const, "shutdown" as const), broker })
    },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant("alter" as const),
        name,
        partition: fc.integer({ min: 0, max: 4 }),
        isr: fc.uniqueArray(broker, { maxLength: brokers }),
        stale: fc.boolean()
      })
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant("elect" as const), type: fc.constantFrom(0, 1), all: fc.boolean() })
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant("bump" as const),
        name,
        partition: fc.integer({ min: 0, max: 4 }),
        min: fc.integer({ min: -1, max: 20 })
      })
    }
  )
}

/** Runs the operations, each decided on the state the previous ones produced; returns the log. */
const run = (brokers: number, uncleanTopics: ReadonlySet<string>, ops: ReadonlyArray<Op>) => {
  const active = new Set(Array.from({ length: brokers }, (_, i) => i))
  const registered = [...active]
  const epochs = new Map(registered.map((b) => [b, BigInt(b + 100)]))
  const cluster = (): RC.ClusterView => clusterOf([...active].sort(), registered)
  const unclean: RC.UncleanElectionEnabled = (t) => uncleanTopics.has(t)
  const ids = makeIds()
  const log: Array<Rec> = []
  const states: Array<RC.State> = [RC.empty]
  let state = RC.empty
  const commit = (records: ReadonlyArray<Rec>) => {
    for (const r of records) {
      state = RC.replay(state, r, BigInt(log.length))
      log.push(r)
    }
    states.push(state)
  }
  for (const o of ops) {
    switch (o.op) {
      case "create":
        commit(
          RC.createTopics(
            state,
            createReq([
              topic(o.name, {
                numPartitions: o.partitions,
                replicationFactor: o.rf,
                mirrorInfo: o.mirror ? { topicId: idOf(500 + NAMES.indexOf(o.name)) } : null
              })
            ]),
            cluster(),
            ctx({ newTopicId: ids, defaultReplicationFactor: Math.min(2, brokers) })
          ).records
        )
        break
      case "grow":
        commit(
          RC.createPartitions(
            state,
            { topics: [{ name: o.name, count: o.count, assignments: null }], timeoutMs: 0, validateOnly: false },
            cluster()
          ).records
        )
        break
      case "delete":
        commit(
          RC.deleteTopics(state, { topics: [{ name: o.name, topicId: Uuid.ZERO }], topicNames: [], timeoutMs: 0 })
            .records
        )
        break
      case "fence":
      case "shutdown":
        commit(
          (o.op === "fence" ? RC.handleBrokerFenced : RC.handleBrokerShutdown)(state, o.broker, cluster(), unclean)
            .records
        )
        active.delete(o.broker)
        break
      case "unfence":
        commit(RC.handleBrokerUnfenced(state, o.broker, cluster(), unclean).records)
        active.add(o.broker)
        break
      case "alter": {
        const t = RC.topicByName(state, o.name)
        const p = t?.partitions.get(o.partition)
        if (t === undefined || p === undefined || p.leader < 0) break
        const r = RC.alterPartition(
          state,
          {
            brokerId: p.leader,
            brokerEpoch: epochs.get(p.leader)!,
            topics: [
              {
                topicName: "",
                topicId: t.topicId,
                partitions: [
                  {
                    partitionIndex: o.partition,
                    leaderEpoch: p.leaderEpoch,
                    newIsr: [],
                    newIsrWithEpochs: [p.leader, ...o.isr.filter((b) => b !== p.leader)].map((brokerId) => ({
                      brokerId,
                      brokerEpoch: -1n
                    })),
                    leaderRecoveryState: 0,
                    partitionEpoch: o.stale ? p.partitionEpoch - 1 : p.partitionEpoch
                  }
                ]
              }
            ]
          },
          epochs,
          cluster()
        )
        commit(right(r).records)
        break
      }
      case "elect":
        commit(
          right(
            RC.electLeaders(
              state,
              {
                electionType: o.type,
                topicPartitions: o.all ? null : NAMES.map((n) => ({ topic: n, partitions: [0, 1, 2] })),
                timeoutMs: 0
              },
              cluster()
            )
          ).records
        )
        break
      case "bump": {
        const t = RC.topicByName(state, o.name)
        commit(
          RC.bumpLeaderEpochs(state, {
            topics: [
              { topicId: t?.topicId ?? idOf(999), partitions: [{ partitionIndex: o.partition, minLeaderEpoch: o.min }] }
            ]
          }).records
        )
        break
      }
    }
  }
  return { log, states, final: state }
}

const scenarioArb = fc.integer({ min: 1, max: 5 }).chain((brokers) =>
  fc.record({
    brokers: fc.constant(brokers),
    unclean: fc.subarray(NAMES),
    ops: fc.array(opArb(brokers), { minLength: 5, maxLength: 60, size: "max" })
  })
)

describe("ReplicationControl properties", () => {
  it("decide-then-replay never dies, and replaying the log again gives the same state", () => {
    fc.assert(
      fc.property(scenarioArb, ({ brokers, unclean, ops }) => {
        const { log, final } = run(brokers, new Set(unclean), ops)
        const replayed = log.reduce((s, r, i) => RC.replay(s, r, BigInt(i)), RC.empty)
        expect(replayed).toEqual(final)
        expect(log.reduce((s, r, i) => RC.replay(s, r, BigInt(i)), RC.empty)).toEqual(replayed)
      }),
      { numRuns: 300 }
    )
  })

  it("leader and partition epochs never decrease; leaders are in sync and ISRs are replicas", () => {
    fc.assert(
      fc.property(scenarioArb, ({ brokers, unclean, ops }) => {
        const { states } = run(brokers, new Set(unclean), ops)
        for (let i = 1; i < states.length; i++) {
          const before = states[i - 1]!
          const after = states[i]!
          for (const t of after.topicsById.values())
            for (const [id, p] of t.partitions) {
              expect(p.isr.length).toBeGreaterThan(0)
              expect(p.isr.every((b) => p.replicas.includes(b))).toBe(true)
              if (p.leader !== -1) expect(p.isr).toContain(p.leader)
              const q = before.topicsById.get(t.topicId)?.partitions.get(id)
              if (q === undefined) continue
              expect(p.leaderEpoch).toBeGreaterThanOrEqual(q.leaderEpoch)
              expect(p.partitionEpoch).toBeGreaterThanOrEqual(q.partitionEpoch)
              if (p.leader !== q.leader) expect(p.leaderEpoch).toBeGreaterThan(q.leaderEpoch)
            }
        }
      }),
      { numRuns: 300 }
    )
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl within the controller state", () => {
  // Topic configs validated and stored by the configuration control, as the runtime wires them.
  const configured: RC.CreateTopicsContext = ctx({
    validateConfigs: (name, configs) =>
      Either.match(ConfigurationControl.createTopicConfigRecords(name, configs), {
        onLeft: (e) => ({ errorCode: e.errorCode, errorMessage: e.message }),
        onRight: () => null
      }),
    configRecords: (name, configs) => Either.getOrThrow(ConfigurationControl.createTopicConfigRecords(name, configs))
  })

  it("creates a topic with configs, then fences its leader and bumps its epoch, replaying as the runtime does", () => {
    const created = ControllerTest.given(ControllerTest.bootstrap)
      .when((s) =>
        RC.createTopics(
          s.replication,
          createReq([
            topic("orders", {
              numPartitions: 1,
              replicationFactor: 3,
              configs: [{ name: "unclean.leader.election.enable", value: "true" }]
            })
          ]),
          THREE,
          configured
        )
      )
      .outcome()
    expect(created.response[0]).toMatchObject({ errorCode: 0 })
    const state = created.after.state
    expect(ConfigurationControl.configsOf(state.configs, 2, "orders").get("unclean.leader.election.enable")).toBe(
      "true"
    )
    const leader = RC.topicByName(state.replication, "orders")!.partitions.get(0)!.leader
    const fenced = created.after.when((s) => RC.handleBrokerFenced(s.replication, leader, THREE, () => true)).outcome()
    const p = RC.topicByName(fenced.after.state.replication, "orders")!.partitions.get(0)!
    expect(p.leader).not.toBe(leader)
    expect(p.leaderEpoch).toBe(1)
    const id = RC.topicByName(fenced.after.state.replication, "orders")!.topicId
    fenced.after
      .when((s) =>
        RC.bumpLeaderEpochs(s.replication, {
          topics: [{ topicId: id, partitions: [{ partitionIndex: 0, minLeaderEpoch: 4 }] }]
        })
      )
      .then([MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: id, leaderEpoch: 5 }, 3)], {
        throttleTimeMs: 0,
        errorCode: 0,
        errorMessage: null,
        topics: []
      })
  })

  it("reports an unknown topic config as INVALID_CONFIG", () => {
    const { response, records } = create(
      RC.empty,
      [topic("x", { configs: [{ name: "nope", value: "1" }] })],
      THREE,
      configured
    )
    expect(records).toEqual([])
    expect(response[0]).toMatchObject({ errorCode: E.INVALID_CONFIG, errorMessage: "Unknown topic config name: nope" })
  })
})

// ---------------------------------------------------------------------------------------------------

describe("ReplicationControl.rebalanceLeaders (auto.leader.rebalance.enable)", () => {
  const TEN = { imbalancePerBrokerPercentage: 10 }
  // Broker 1 prefers partitions 0-3, broker 2 prefers 4-7; each leads what it prefers unless told otherwise.
  const topic = (leaders: ReadonlyArray<number>, isrs?: ReadonlyArray<ReadonlyArray<number>>) =>
    topicRecords(
      "t",
      T,
      leaders.map((leader, i) => {
        const replicas = i < 4 ? [1, 2, 3] : [2, 3, 1]
        return { replicas, isr: isrs?.[i] ?? replicas, leader }
      })
    )

  it("given a broker whose imbalance is above the percentage, when checked, then its preferred partitions return to it", () => {
    // Broker 1 leads none of its 4 partitions (100% > 10%): a restart moved them all to broker 2.
    const s = given(topic([2, 2, 2, 2, 2, 2, 2, 2]))
    const { records, response, after } = when(s, (st) => RC.rebalanceLeaders(st, THREE, TEN))
    expect(records).toEqual(
      [0, 1, 2, 3].map((partitionId) =>
        MetadataRecords.make("PartitionChangeRecord", { partitionId, topicId: T, leader: 1, leaderEpoch: 1 }, 3)
      )
    )
    expect(response.map((p) => p.partitionId)).toEqual([0, 1, 2, 3])
    for (const p of [0, 1, 2, 3])
      expect(part(after, "t", p)).toMatchObject({ leader: 1, leaderEpoch: 1, isr: [1, 2, 3] })
    // Then nothing is left to do.
    expect(when(after, (st) => RC.rebalanceLeaders(st, THREE, TEN)).records).toEqual([])
  })

  it("leaves a broker at or below the percentage alone", () => {
    // Broker 1 leads 3 of its 4 partitions: a 25% imbalance, not above 30% or 25%, above 20%.
    const s = given(topic([1, 1, 1, 2, 2, 2, 2, 2]))
    expect(when(s, (st) => RC.rebalanceLeaders(st, THREE, { imbalancePerBrokerPercentage: 30 })).records).toEqual([])
    expect(when(s, (st) => RC.rebalanceLeaders(st, THREE, { imbalancePerBrokerPercentage: 25 })).records).toEqual([])
    expect(
      when(s, (st) => RC.rebalanceLeaders(st, THREE, { imbalancePerBrokerPercentage: 20 })).response.map(
        (p) => p.partitionId
      )
    ).toEqual([3])
  })

  it("elects a preferred replica only where it is in the ISR and active", () => {
    // Partition 0: broker 1 out of the ISR; the others: broker 1 fenced.
    const s = given(
      topic(
        [2, 2, 2, 2, 2, 2, 2, 2],
        [
          [2, 3],
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3]
        ]
      )
    )
    expect(when(s, (st) => RC.rebalanceLeaders(st, THREE, TEN)).response.map((p) => p.partitionId)).toEqual([1, 2, 3])
    expect(when(s, (st) => RC.rebalanceLeaders(st, clusterOf([2, 3], [1, 2, 3]), TEN)).records).toEqual([])
  })

  it("caps one round at maxElections", () => {
    const s = given(topic([2, 2, 2, 2, 2, 2, 2, 2]))
    const first = when(s, (st) => RC.rebalanceLeaders(st, THREE, { ...TEN, maxElections: 3 }))
    expect(first.response.map((p) => p.partitionId)).toEqual([0, 1, 2])
    expect(when(first.after, (st) => RC.rebalanceLeaders(st, THREE, TEN)).response.map((p) => p.partitionId)).toEqual([
      3
    ])
  })
})
