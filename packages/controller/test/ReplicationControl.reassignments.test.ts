import { describe, expect, it } from "@effect/vitest"
import {
  type AlterPartition,
  type AlterPartitionReassignments,
  Errors,
  MetadataRecords,
  uuidToString
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as ControllerTest from "../src/ControllerTest.js"
import * as RC from "../src/ReplicationControl.js"

const E = Errors.ErrorCode
type Rec = MetadataRecords.MetadataRecord

const idOf = (n: number): string => {
  const b = new Uint8Array(16)
  new DataView(b.buffer).setUint32(12, n + 1000)
  return uuidToString(b)
}

const T = idOf(0)

const clusterOf = (active: ReadonlyArray<number>, registered: ReadonlyArray<number> = active): RC.ClusterView => ({
  liveBrokers: active,
  isActive: (b) => active.includes(b),
  isRegistered: (b) => registered.includes(b) || active.includes(b)
})
const FOUR = clusterOf([1, 2, 3, 4])

/** Topic "t" with one partition on replicas [1, 2], ISR [1, 2], leader 1, epochs 0. */
const topicT = (replicas: ReadonlyArray<number> = [1, 2]): ReadonlyArray<Rec> => [
  MetadataRecords.make("TopicRecord", { name: "t", topicId: T }),
  MetadataRecords.make("PartitionRecord", {
    partitionId: 0,
    topicId: T,
    replicas,
    isr: replicas,
    leader: replicas[0]!,
    leaderEpoch: 0,
    partitionEpoch: 0
  })
]

const reassign = (
  partitions: ReadonlyArray<{ readonly partitionIndex: number; readonly replicas: ReadonlyArray<number> | null }>,
  allowReplicationFactorChange = true,
  name = "t"
): AlterPartitionReassignments.Request => ({
  timeoutMs: 30000,
  allowReplicationFactorChange,
  topics: [{ name, partitions }]
})

const ok = (partitionIndexes: ReadonlyArray<number> = [0], name = "t") => ({
  throttleTimeMs: 0,
  allowReplicationFactorChange: true,
  errorCode: 0,
  errorMessage: null,
  responses: [
    {
      name,
      partitions: partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode: 0, errorMessage: null }))
    }
  ]
})

type ChangeData = Parameters<typeof MetadataRecords.make<"PartitionChangeRecord">>[1]
const change = (data: Partial<ChangeData>) =>
  MetadataRecords.make("PartitionChangeRecord", { partitionId: 0, topicId: T, leaderEpoch: -1, ...data }, 3)

const part = (g: ControllerTest.Given, p = 0) => RC.topicByName(g.state.replication, "t")!.partitions.get(p)!

const alter = (g: ControllerTest.Given, request: AlterPartitionReassignments.Request, cluster = FOUR) =>
  g.when((s) => RC.alterPartitionReassignments(s.replication, request, cluster))

/** The leader's AlterPartition for partition 0 with this ISR, at the partition's current epochs. */
const isrChange = (g: ControllerTest.Given, isr: ReadonlyArray<number>, cluster = FOUR) => {
  const p = part(g)
  const request: AlterPartition.Request = {
    brokerId: p.leader,
    brokerEpoch: 10n,
    topics: [
      {
        topicName: "",
        topicId: T,
        partitions: [
          {
            partitionIndex: 0,
            leaderEpoch: p.leaderEpoch,
            newIsr: [],
            newIsrWithEpochs: isr.map((brokerId) => ({ brokerId, brokerEpoch: 10n })),
            leaderRecoveryState: 0,
            partitionEpoch: p.partitionEpoch
          }
        ]
      }
    ]
  }
  const epochs = new Map([1, 2, 3, 4].map((b) => [b, 10n] as const))
  return g.when((s) => RC.alterPartition(s.replication, request, epochs, cluster))
}

const list = (g: ControllerTest.Given, topics: Parameters<typeof RC.listPartitionReassignments>[1]["topics"] = null) =>
  RC.listPartitionReassignments(g.state.replication, { timeoutMs: 30000, topics })

describe("ReplicationControl.alterPartitionReassignments", () => {
  const start = ControllerTest.given(topicT())

  it("starts a reassignment: replicas = target + removing, adding and removing set, leader and ISR kept", () => {
    const g = alter(start, reassign([{ partitionIndex: 0, replicas: [1, 3] }])).then(
      [change({ replicas: [1, 3, 2], addingReplicas: [3], removingReplicas: [2] })],
      ok()
    )
    expect(part(g)).toMatchObject({
      replicas: [1, 3, 2],
      isr: [1, 2],
      leader: 1,
      leaderEpoch: 0,
      partitionEpoch: 1,
      addingReplicas: [3],
      removingReplicas: [2]
    })
    expect(list(g)).toEqual({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      topics: [
        {
          name: "t",
          partitions: [{ partitionIndex: 0, replicas: [1, 3, 2], addingReplicas: [3], removingReplicas: [2] }]
        }
      ]
    })
  })

  it("completes when the last adding replica joins the ISR: replicas = target, ISR ∩ target, lists cleared", () => {
    const started = alter(start, reassign([{ partitionIndex: 0, replicas: [1, 3] }])).outcome().after
    // An ISR change that does not bring 3 in leaves the reassignment going.
    const shrunk = isrChange(started, [1]).outcome()
    expect(shrunk.records).toEqual([change({ isr: [1] })])
    expect(part(shrunk.after).addingReplicas).toEqual([3])
    const done = isrChange(shrunk.after, [1, 3]).outcome()
    expect(done.records).toEqual([change({ isr: [1, 3], replicas: [1, 3], addingReplicas: [], removingReplicas: [] })])
    expect(done.response.topics[0]!.partitions[0]).toMatchObject({ errorCode: 0, leaderId: 1, isr: [1, 3] })
    expect(part(done.after)).toMatchObject({ replicas: [1, 3], isr: [1, 3], leader: 1, leaderEpoch: 0 })
    expect(list(done.after).topics).toEqual([])
  })

  it("moves the leader when the completion removes it (leader epoch + 1) and tells the old leader", () => {
    const started = alter(start, reassign([{ partitionIndex: 0, replicas: [3, 2] }])).then(
      [change({ replicas: [3, 2, 1], addingReplicas: [3], removingReplicas: [1] })],
      ok()
    )
    const done = isrChange(started, [1, 2, 3]).outcome()
    expect(done.records).toEqual([
      change({ leader: 3, leaderEpoch: 1, isr: [2, 3], replicas: [3, 2], addingReplicas: [], removingReplicas: [] })
    ])
    expect(done.response.topics[0]!.partitions[0]!.errorCode).toBe(E.NEW_LEADER_ELECTED)
    expect(part(done.after)).toMatchObject({ replicas: [3, 2], isr: [2, 3], leader: 3, leaderEpoch: 1 })
  })

  it("completes at once when nothing is added, electing a new leader if the old one is removed", () => {
    const g = ControllerTest.given(topicT([1, 2, 3]))
    alter(g, reassign([{ partitionIndex: 0, replicas: [2, 3] }], true)).then(
      [change({ leader: 2, leaderEpoch: 1, isr: [2, 3], replicas: [2, 3], addingReplicas: [], removingReplicas: [] })],
      ok()
    )
  })

  it("reorders replicas without writing adding or removing replicas", () => {
    const g = ControllerTest.given(topicT([1, 2]))
    const after = alter(g, reassign([{ partitionIndex: 0, replicas: [2, 1] }])).then(
      [change({ replicas: [2, 1], addingReplicas: [], removingReplicas: [] })],
      ok()
    )
    // The leader stays: a preferred election is the way to move it.
    expect(part(after)).toMatchObject({ replicas: [2, 1], leader: 1, leaderEpoch: 0 })
    // The same target again writes nothing.
    alter(after, reassign([{ partitionIndex: 0, replicas: [2, 1] }])).then([], ok())
  })

  it("cancels a reassignment: back to the original replicas, ISR cut to them", () => {
    const started = alter(start, reassign([{ partitionIndex: 0, replicas: [3, 4] }])).outcome().after
    expect(part(started)).toMatchObject({ replicas: [3, 4, 1, 2], addingReplicas: [3, 4], removingReplicas: [1, 2] })
    const partly = isrChange(started, [1, 2, 3]).outcome()
    expect(part(partly.after).addingReplicas).toEqual([3, 4])
    const g = alter(partly.after, reassign([{ partitionIndex: 0, replicas: null }])).then(
      [change({ isr: [1, 2], replicas: [1, 2], addingReplicas: [], removingReplicas: [] })],
      ok()
    )
    expect(part(g)).toMatchObject({ replicas: [1, 2], isr: [1, 2], leader: 1 })
    // Nothing left to cancel.
    alter(g, reassign([{ partitionIndex: 0, replicas: null }])).then([], {
      ...ok(),
      responses: [
        {
          name: "t",
          partitions: [
            {
              partitionIndex: 0,
              errorCode: E.NO_REASSIGNMENT_IN_PROGRESS,
              errorMessage: "No ongoing reassignment for partition t:0."
            }
          ]
        }
      ]
    })
  })

  it("replaces a reassignment in progress by a new target", () => {
    const started = alter(start, reassign([{ partitionIndex: 0, replicas: [1, 3] }])).outcome().after
    const g = alter(started, reassign([{ partitionIndex: 0, replicas: [1, 4] }])).then(
      [change({ replicas: [1, 4, 3, 2], addingReplicas: [4], removingReplicas: [3, 2] })],
      ok()
    )
    const done = isrChange(g, [1, 2, 4]).outcome()
    expect(part(done.after)).toMatchObject({ replicas: [1, 4], isr: [1, 4], addingReplicas: [], removingReplicas: [] })
  })

  it("keeps a reassignment going through a broker fencing, until the adding replica is in sync", () => {
    const started = alter(start, reassign([{ partitionIndex: 0, replicas: [1, 3] }])).outcome().after
    // 2 (being removed) is fenced: the ISR shrinks, 3 is not in sync yet, nothing completes.
    const fenced = started
      .when((s) => RC.handleBrokerFenced(s.replication, 2, clusterOf([1, 3, 4], [1, 2, 3, 4]), () => false))
      .outcome()
    expect(fenced.records).toEqual([change({ isr: [1] })])
    expect(part(fenced.after)).toMatchObject({ replicas: [1, 3, 2], addingReplicas: [3], removingReplicas: [2] })
    const done = isrChange(fenced.after, [1, 3], clusterOf([1, 3, 4], [1, 2, 3, 4])).outcome()
    expect(part(done.after)).toMatchObject({ replicas: [1, 3], isr: [1, 3], addingReplicas: [], removingReplicas: [] })
  })

  it.each<[string, ReadonlyArray<number>, boolean, number, string]>([
    [
      "an empty replica list",
      [],
      true,
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes an empty replica list."
    ],
    [
      "a duplicate broker",
      [1, 1],
      true,
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes the broker 1 more than once."
    ],
    [
      "an unregistered broker",
      [1, 7],
      true,
      E.INVALID_REPLICA_ASSIGNMENT,
      "The manual partition assignment includes broker 7, but no such broker is registered."
    ],
    [
      "a replication factor change when not allowed",
      [1, 2, 3],
      false,
      E.INVALID_REPLICATION_FACTOR,
      "The replication factor of partition t:0 would change from 2 to 3, and the request does not allow it."
    ]
  ])("refuses %s", (_, replicas, allow, code, message) => {
    alter(start, reassign([{ partitionIndex: 0, replicas }], allow)).then([], {
      ...ok(),
      allowReplicationFactorChange: allow,
      responses: [{ name: "t", partitions: [{ partitionIndex: 0, errorCode: code, errorMessage: message }] }]
    })
  })

  it("allows a replication factor change by default, and keeps the count when not allowed", () => {
    alter(start, reassign([{ partitionIndex: 0, replicas: [1, 2, 3] }])).then(
      [change({ replicas: [1, 2, 3], addingReplicas: [3], removingReplicas: [] })],
      ok()
    )
    alter(start, reassign([{ partitionIndex: 0, replicas: [3, 4] }], false)).then(
      [change({ replicas: [3, 4, 1, 2], addingReplicas: [3, 4], removingReplicas: [1, 2] })],
      { ...ok(), allowReplicationFactorChange: false }
    )
  })

  it("answers UNKNOWN_TOPIC_OR_PARTITION per partition, and reassigns the others of the request", () => {
    const request: AlterPartitionReassignments.Request = {
      timeoutMs: 30000,
      allowReplicationFactorChange: true,
      topics: [
        { name: "nope", partitions: [{ partitionIndex: 0, replicas: [1] }] },
        {
          name: "t",
          partitions: [
            { partitionIndex: 5, replicas: [1, 2] },
            { partitionIndex: 0, replicas: [1, 3] }
          ]
        }
      ]
    }
    alter(start, request).then([change({ replicas: [1, 3, 2], addingReplicas: [3], removingReplicas: [2] })], {
      ...ok(),
      responses: [
        {
          name: "nope",
          partitions: [
            {
              partitionIndex: 0,
              errorCode: E.UNKNOWN_TOPIC_OR_PARTITION,
              errorMessage: "Unable to find partition nope:0."
            }
          ]
        },
        {
          name: "t",
          partitions: [
            {
              partitionIndex: 5,
              errorCode: E.UNKNOWN_TOPIC_OR_PARTITION,
              errorMessage: "Unable to find partition t:5."
            },
            { partitionIndex: 0, errorCode: 0, errorMessage: null }
          ]
        }
      ]
    })
  })

  it("refuses a cancel that would leave no in-sync replica", () => {
    const started = alter(start, reassign([{ partitionIndex: 0, replicas: [3, 4] }])).outcome().after
    // The original replicas left the ISR (the leader moved to 3 in an unclean election).
    const unclean = started.and([change({ leader: 3, leaderEpoch: 1, isr: [3] })])
    alter(unclean, reassign([{ partitionIndex: 0, replicas: null }])).then([], {
      ...ok(),
      responses: [
        {
          name: "t",
          partitions: [
            {
              partitionIndex: 0,
              errorCode: E.INVALID_REPLICA_ASSIGNMENT,
              errorMessage:
                "Unable to revert partition assignment for t:0 because it would require an unclean leader election."
            }
          ]
        }
      ]
    })
  })
})

describe("ReplicationControl.listPartitionReassignments", () => {
  const two = ControllerTest.given([
    ...topicT(),
    MetadataRecords.make("PartitionRecord", {
      partitionId: 1,
      topicId: T,
      replicas: [2, 1],
      isr: [2, 1],
      leader: 2,
      leaderEpoch: 0,
      partitionEpoch: 0
    })
  ])
  const g = alter(two, reassign([{ partitionIndex: 1, replicas: [2, 4] }])).outcome().after

  it("lists only partitions being reassigned, of every topic or of the named ones", () => {
    const only = [{ partitionIndex: 1, replicas: [2, 4, 1], addingReplicas: [4], removingReplicas: [1] }]
    expect(list(g).topics).toEqual([{ name: "t", partitions: only }])
    expect(list(g, [{ name: "t", partitionIndexes: [0, 1, 9] }]).topics).toEqual([{ name: "t", partitions: only }])
    expect(list(g, [{ name: "t", partitionIndexes: [0] }]).topics).toEqual([])
    expect(list(g, [{ name: "nope", partitionIndexes: [0] }]).topics).toEqual([])
    expect(list(two).topics).toEqual([])
  })

  it("never dies replaying what it decides, whatever the order of requests", () => {
    const targets: ReadonlyArray<ReadonlyArray<number> | null> = [[3, 4], null, [4], [1, 2, 3, 4], null, [2]]
    let state = g
    for (const replicas of targets) {
      const r = alter(state, reassign([{ partitionIndex: 0, replicas }])).result
      expect(Either.isRight(r)).toBe(true)
      state = alter(state, reassign([{ partitionIndex: 0, replicas }])).outcome().after
      const p = part(state)
      expect(new Set(p.replicas).size).toBe(p.replicas.length)
      expect(p.isr.every((b) => p.replicas.includes(b))).toBe(true)
      expect(p.addingReplicas.every((b) => p.replicas.includes(b))).toBe(true)
      expect(p.removingReplicas.every((b) => p.replicas.includes(b))).toBe(true)
    }
  })
})
