import { MetadataRecords } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as MetadataDelta from "../src/MetadataDelta.js"
import * as MetadataImage from "../src/MetadataImage.js"
import { InvalidMetadataRecord } from "../src/MetadataLogError.js"
import * as MetadataProvenance from "../src/MetadataProvenance.js"
import { records, recordsWithCuts, splitAt, uuid } from "./arbitrary.js"

type MetadataRecord = MetadataRecords.MetadataRecord

const FINAL = MetadataProvenance.make(99, 3, 12345)
const T1 = uuid(1)
const T2 = uuid(2)

const applyAll = (image: MetadataImage.MetadataImage, rs: ReadonlyArray<MetadataRecord>, p = FINAL) =>
  MetadataDelta.make(image, rs).apply(p)

const given = (rs: ReadonlyArray<MetadataRecord>): MetadataImage.MetadataImage =>
  applyAll(MetadataImage.empty, rs, MetadataProvenance.make(rs.length - 1, 1, 1))

const topic = (name: string, id: string) => MetadataRecords.make("TopicRecord", { name, topicId: id })
const partition = (id: string, p: number, replicas: number[], leader: number, epochs = { leader: 0, partition: 0 }) =>
  MetadataRecords.make("PartitionRecord", {
    partitionId: p,
    topicId: id,
    replicas,
    isr: replicas,
    leader,
    leaderEpoch: epochs.leader,
    partitionEpoch: epochs.partition
  })
const change = (
  id: string,
  p: number,
  data: Omit<MetadataRecords.MetadataRecordOf<"PartitionChangeRecord">["data"], "topicId" | "partitionId"> | object,
  version = 3
) => MetadataRecords.make("PartitionChangeRecord", { topicId: id, partitionId: p, ...data }, version)

const throwsInvalid = (f: () => unknown): void => {
  let thrown: unknown
  try {
    f()
  } catch (e) {
    thrown = e
  }
  expect(thrown).toBeInstanceOf(InvalidMetadataRecord)
}

describe("MetadataDelta properties", () => {
  it("replay is deterministic: the same records give equal images", () => {
    fc.assert(
      fc.property(records(), (rs) => {
        expect(applyAll(MetadataImage.empty, rs)).toEqual(applyAll(MetadataImage.empty, rs))
      }),
      { numRuns: 200 }
    )
  })

  it("batch-split invariance: any split of the records into deltas reaches the same image", () => {
    fc.assert(
      fc.property(recordsWithCuts(), ({ records: rs, cuts }) => {
        const whole = applyAll(MetadataImage.empty, rs)
        let image = MetadataImage.empty
        for (const [i, chunk] of splitAt(rs, cuts).entries())
          image = applyAll(image, chunk, MetadataProvenance.make(i, 1, i))
        expect({ ...image, provenance: FINAL }).toEqual(whole)
      }),
      { numRuns: 200 }
    )
  })

  it("byName and byId always describe the same topics", () => {
    fc.assert(
      fc.property(records(), (rs) => {
        const image = applyAll(MetadataImage.empty, rs)
        expect(image.topics.byName.size).toBe(image.topics.byId.size)
        for (const t of image.topics.byId.values()) expect(image.topics.byName.get(t.name)).toBe(t)
      }),
      { numRuns: 100 }
    )
  })
})

describe("PartitionChangeRecord", () => {
  const base = given([topic("orders", T1), partition(T1, 0, [1, 2, 3], 1, { leader: 5, partition: 7 })])
  const changed = (r: MetadataRecord) => MetadataImage.partition(applyAll(base, [r]), T1, 0)!

  it("absent fields leave the partition as it was, except the partition epoch", () => {
    const p = changed(change(T1, 0, {}))
    expect(p.leader).toBe(1)
    expect(p.leaderEpoch).toBe(5)
    expect(p.isr).toEqual([1, 2, 3])
    expect(p.replicas).toEqual([1, 2, 3])
    expect(p.partitionEpoch).toBe(8)
  })

  it("an ISR change alone keeps leader and leader epoch", () => {
    const p = changed(change(T1, 0, { isr: [1, 2] }))
    expect(p.isr).toEqual([1, 2])
    expect(p.leaderEpoch).toBe(5)
    expect(p.partitionEpoch).toBe(8)
  })

  it("before v3, a leader field adds one to the leader epoch (also for the same leader)", () => {
    expect(changed(change(T1, 0, { leader: 2 }, 2))).toMatchObject({ leader: 2, leaderEpoch: 6 })
    expect(changed(change(T1, 0, { leader: 1 }, 0))).toMatchObject({ leader: 1, leaderEpoch: 6 })
    expect(changed(change(T1, 0, { leader: -1 }, 1))).toMatchObject({ leader: -1, leaderEpoch: 6 })
  })

  it("v3 applies an explicit LeaderEpoch directly, with or without a leader change", () => {
    expect(changed(change(T1, 0, { leaderEpoch: 9 }))).toMatchObject({ leader: 1, leaderEpoch: 9, partitionEpoch: 8 })
    expect(changed(change(T1, 0, { leader: 3, leaderEpoch: 12 }))).toMatchObject({ leader: 3, leaderEpoch: 12 })
    // LeaderEpoch -1 in v3: the implicit rule still holds.
    expect(changed(change(T1, 0, { leader: 3 }))).toMatchObject({ leader: 3, leaderEpoch: 6 })
  })

  it("an explicit leader epoch below the current one, an unknown partition or topic is invalid", () => {
    throwsInvalid(() => changed(change(T1, 0, { leaderEpoch: 4 })))
    throwsInvalid(() => changed(change(T1, 1, {})))
    throwsInvalid(() => changed(change(T2, 0, {})))
  })

  it("leader recovery state -1 means unchanged", () => {
    expect(changed(change(T1, 0, { leaderRecoveryState: 1 })).leaderRecoveryState).toBe(1)
    expect(changed(change(T1, 0, { leaderRecoveryState: -1 })).leaderRecoveryState).toBe(0)
  })
})

describe("localChanges", () => {
  const twoTopics = given([
    topic("orders", T1),
    partition(T1, 0, [1, 2], 1),
    partition(T1, 1, [2, 3], 2),
    topic("payments", T2),
    partition(T2, 0, [1, 3], 3)
  ])

  it("given broker 1 leads orders-0, when the leader moves to 2, then broker 1 follows it and broker 2 leads", () => {
    const delta = MetadataDelta.make(twoTopics, [change(T1, 0, { leader: 2 }, 2)])
    const one = delta.localChanges(1)
    expect(one.leaders).toEqual([])
    expect(one.followers.map((p) => [p.topicName, p.partitionId, p.partition.leader, p.partition.leaderEpoch])).toEqual(
      [["orders", 0, 2, 1]]
    )
    expect(one.deletes).toEqual([])
    expect(delta.localChanges(2).leaders.map((p) => [p.topicName, p.partitionId])).toEqual([["orders", 0]])
    expect(delta.localChanges(3)).toEqual({ leaders: [], followers: [], deletes: [], mirrorTopicStates: [] })
  })

  it("given a topic, when a partition is added, then its replicas learn it as leader or follower", () => {
    const delta = MetadataDelta.make(twoTopics, [partition(T1, 2, [3, 1], 3)])
    expect(delta.localChanges(3).leaders.map((p) => [p.topicId, p.partitionId])).toEqual([[T1, 2]])
    expect(delta.localChanges(1).followers.map((p) => [p.topicId, p.partitionId])).toEqual([[T1, 2]])
    expect(delta.localChanges(2).followers).toEqual([])
    expect([...delta.changedTopics().keys()]).toEqual([T1])
    expect(delta.createdTopicIds().size).toBe(0)
  })

  it("given two topics, when one is deleted, then each of its replicas deletes its partitions", () => {
    const delta = MetadataDelta.make(twoTopics, [MetadataRecords.make("RemoveTopicRecord", { topicId: T1 })])
    expect(delta.deletedTopicIds()).toEqual(new Set([T1]))
    expect(delta.localChanges(2).deletes).toEqual([
      { topicId: T1, topicName: "orders", partitionId: 0 },
      { topicId: T1, topicName: "orders", partitionId: 1 }
    ])
    expect(delta.localChanges(1).deletes).toEqual([{ topicId: T1, topicName: "orders", partitionId: 0 }])
    const image = delta.apply(FINAL)
    expect(MetadataImage.topicByName(image, "orders")).toBeUndefined()
    expect(MetadataImage.topicByName(image, "payments")?.id).toBe(T2)
  })

  it("given a replica, when the reassignment drops it, then it deletes; an unchanged partition is not reported", () => {
    const delta = MetadataDelta.make(twoTopics, [change(T1, 1, { replicas: [3, 4], isr: [3, 4], leader: 3 })])
    expect(delta.localChanges(2).deletes).toEqual([{ topicId: T1, topicName: "orders", partitionId: 1 }])
    expect(delta.localChanges(4).followers.map((p) => p.partitionId)).toEqual([1])
    expect(delta.localChanges(1)).toEqual({ leaders: [], followers: [], deletes: [], mirrorTopicStates: [] })
  })

  it("given a new topic in the same delta, then it is created and its leader sees it", () => {
    const delta = MetadataDelta.make(MetadataImage.empty, [topic("orders", T1), partition(T1, 0, [5], 5)])
    expect(delta.createdTopicIds()).toEqual(new Set([T1]))
    expect(delta.localChanges(5).leaders.map((p) => p.topicName)).toEqual(["orders"])
    expect(delta.changedTopics().get(T1)?.before).toBeUndefined()
  })

  it("given a mirror topic, when its desired state changes, then its replicas see the mirror state", () => {
    const delta = MetadataDelta.make(twoTopics, [MetadataRecords.mirrorTopicStateChange(T2, "east", "MIRRORING")])
    expect(delta.localChanges(3).mirrorTopicStates).toEqual([
      { topicId: T2, topicName: "payments", mirrorName: "east", desiredMirrorState: "MIRRORING" }
    ])
    expect(delta.localChanges(2).mirrorTopicStates).toEqual([])
    const image = delta.apply(FINAL)
    // Deleting the mirror: the controller's semantics, a null name disassociates the topic.
    const gone = MetadataDelta.make(image, [MetadataRecords.mirrorTopicStateChange(T2, null, "UNKNOWN")])
    expect(gone.localChanges(3).mirrorTopicStates.map((s) => s.mirrorName)).toEqual([null])
    expect(MetadataImage.topicById(gone.apply(FINAL), T2)).toMatchObject({
      mirrorName: null,
      desiredMirrorState: "UNKNOWN"
    })
  })
})

describe("other records", () => {
  const B = MetadataRecords.make("RegisterBrokerRecord", {
    brokerId: 1,
    brokerEpoch: 10n,
    incarnationId: uuid(9),
    endPoints: [{ name: "PLAINTEXT", host: "localhost", port: 9092, securityProtocol: 0 }],
    rack: null
  })

  it("brokers register fenced, unfence, fence, shut down and unregister by epoch", () => {
    const image = given([B])
    expect(image.cluster.brokers.get(1)).toMatchObject({ fenced: true, epoch: 10n })
    const unfence = MetadataDelta.make(image, [MetadataRecords.make("UnfenceBrokerRecord", { id: 1, epoch: 10n })])
    expect(unfence.changedBrokers().get(1)?.fenced).toBe(false)
    const up = unfence.apply(FINAL)
    expect(MetadataImage.activeBrokers(up).map((b) => b.id)).toEqual([1])
    const change = MetadataRecords.make("BrokerRegistrationChangeRecord", {
      brokerId: 1,
      brokerEpoch: 10n,
      fenced: 0,
      inControlledShutdown: 1
    })
    expect(applyAll(up, [change]).cluster.brokers.get(1)).toMatchObject({ fenced: false, inControlledShutdown: true })
    throwsInvalid(() => applyAll(up, [MetadataRecords.make("FenceBrokerRecord", { id: 1, epoch: 9n })]))
    throwsInvalid(() => applyAll(up, [MetadataRecords.make("FenceBrokerRecord", { id: 2, epoch: 10n })]))
    const gone = MetadataDelta.make(up, [
      MetadataRecords.make("UnregisterBrokerRecord", { brokerId: 1, brokerEpoch: 10n })
    ])
    expect(gone.changedBrokers()).toEqual(new Map([[1, undefined]]))
    expect(gone.apply(FINAL).cluster.brokers.size).toBe(0)
  })

  it("configs set and delete keys; a resource without keys disappears; a deleted topic takes its configs", () => {
    const cfg = (type: number, name: string, key: string, value: string | null) =>
      MetadataRecords.make("ConfigRecord", { resourceType: type, resourceName: name, name: key, value })
    const image = given([
      topic("orders", T1),
      cfg(2, "orders", "retention.ms", "1000"),
      cfg(64, "east", "topics.include", "orders"),
      cfg(4, "", "log.retention.ms", "5")
    ])
    expect(MetadataImage.configsOf(image, 2, "orders")).toEqual(new Map([["retention.ms", "1000"]]))
    expect(
      MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.CLUSTER_MIRROR, "east").get("topics.include")
    ).toBe("orders")
    const removed = MetadataDelta.make(image, [cfg(4, "", "log.retention.ms", null)])
    expect(removed.changedConfigs()).toEqual([{ type: 4, name: "" }])
    expect(removed.apply(FINAL).configs.has(MetadataImage.resourceKey(4, ""))).toBe(false)
    const deleted = applyAll(image, [MetadataRecords.make("RemoveTopicRecord", { topicId: T1 })])
    expect(MetadataImage.configsOf(deleted, 2, "orders").size).toBe(0)
    expect(MetadataImage.configsOf(deleted, 64, "east").size).toBe(1)
  })

  it("features finalize and withdraw at level 0", () => {
    const f = (name: string, featureLevel: number) => MetadataRecords.make("FeatureLevelRecord", { name, featureLevel })
    const image = given([f("metadata.version", 25), f("mirror.version", 1)])
    expect(MetadataImage.featureLevel(image, MetadataImage.MIRROR_VERSION)).toBe(1)
    const delta = MetadataDelta.make(image, [f("mirror.version", 0)])
    expect(delta.featuresChanged()).toBe(true)
    expect(delta.apply(FINAL).features).toEqual(new Map([["metadata.version", 25]]))
    expect(MetadataDelta.make(image, []).featuresChanged()).toBe(false)
  })

  it("a producer ID floor (broker id -1) may stay at the next block but must rise; blocks move past it", () => {
    const block = (n: bigint) =>
      MetadataRecords.make("ProducerIdsRecord", { brokerId: 1, brokerEpoch: 1n, nextProducerId: n })
    const floor = (n: bigint) =>
      MetadataRecords.make("ProducerIdsRecord", { brokerId: -1, brokerEpoch: -1n, nextProducerId: n })
    const image = given([block(1000n), floor(1000n)])
    expect(image.producerIds).toEqual({ nextProducerId: 1000n, floor: 1000n })
    expect(given([block(1000n), floor(1500n)]).producerIds).toEqual({ nextProducerId: 1500n, floor: 1500n })
    expect(applyAll(image, [block(2000n)]).producerIds).toEqual({ nextProducerId: 2000n, floor: 1000n })
    // A floor below the next block or not above the last floor breaks the order.
    throwsInvalid(() => applyAll(image, [floor(1000n)]))
    throwsInvalid(() => given([block(1000n), floor(999n)]))
    expect(MetadataDelta.make(image, [floor(1001n)]).producerIdsChanged()).toBe(true)
  })

  it("producer ID blocks only move forward; ACLs come and go by ID", () => {
    const pid = (n: bigint) =>
      MetadataRecords.make("ProducerIdsRecord", { brokerId: 1, brokerEpoch: 1n, nextProducerId: n })
    const image = given([pid(1000n)])
    expect(image.producerIds.nextProducerId).toBe(1000n)
    throwsInvalid(() => applyAll(image, [pid(1000n)]))
    const acl = MetadataRecords.make("AccessControlEntryRecord", {
      id: uuid(3),
      resourceName: "orders",
      principal: "User:a"
    })
    const withAcl = applyAll(image, [acl])
    expect(withAcl.acls.get(uuid(3))?.principal).toBe("User:a")
    expect(applyAll(withAcl, [MetadataRecords.make("RemoveAccessControlEntryRecord", { id: uuid(3) })]).acls.size).toBe(
      0
    )
    throwsInvalid(() => applyAll(image, [MetadataRecords.make("RemoveAccessControlEntryRecord", { id: uuid(3) })]))
  })

  it("topic names and IDs stay unique; a name is free again once its topic is deleted", () => {
    const image = given([topic("orders", T1)])
    throwsInvalid(() => applyAll(image, [topic("orders", T2)]))
    throwsInvalid(() => applyAll(image, [topic("other", T1)]))
    const again = applyAll(image, [MetadataRecords.make("RemoveTopicRecord", { topicId: T1 }), topic("orders", T2)])
    expect(MetadataImage.topicByName(again, "orders")?.id).toBe(T2)
    expect(again.topics.byId.has(T1)).toBe(false)
  })
})
