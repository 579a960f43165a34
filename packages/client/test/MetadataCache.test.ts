import { Errors, Metadata } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import * as MetadataCache from "../src/MetadataCache.js"

const response = (
  topics: ReadonlyArray<{ name: string; leader: number; epoch: number; errorCode?: number }>
): Metadata.Response => ({
  ...Metadata.Response.empty,
  brokers: [
    { nodeId: 1, host: "h1", port: 9092, rack: null },
    { nodeId: 2, host: "h2", port: 9092, rack: "r" }
  ],
  clusterId: "c",
  controllerId: 1,
  topics: topics.map((t) => ({
    ...Metadata.Response.empty.topics[0],
    errorCode: t.errorCode ?? 0,
    name: t.name,
    topicId: "AAAAAAAAAAAAAAAAAAAAAg",
    isInternal: false,
    topicAuthorizedOperations: 0,
    partitions:
      t.errorCode === undefined
        ? [
            {
              errorCode: 0,
              partitionIndex: 0,
              leaderId: t.leader,
              leaderEpoch: t.epoch,
              replicaNodes: [1, 2],
              isrNodes: [1, 2],
              offlineReplicas: []
            }
          ]
        : []
  }))
})

describe("MetadataCache", () => {
  it("given a response naming a leader, when looked up, then answers that broker and epoch", () => {
    const snap = MetadataCache.update(MetadataCache.empty, response([{ name: "a", leader: 2, epoch: 7 }]), null, 1)
    const found = MetadataCache.leaderOf(snap, "a", 0)
    expect(found._tag).toBe("Leader")
    if (found._tag === "Leader") {
      expect(found.broker).toEqual({ nodeId: 2, host: "h2", port: 9092, rack: "r" })
      expect(found.leaderEpoch).toBe(7)
    }
    expect(snap.controllerId).toBe(1)
    expect(snap.clusterId).toBe("c")
  })

  it("a partial refresh replaces only the topics asked for; a full one replaces all", () => {
    const first = MetadataCache.update(
      MetadataCache.empty,
      response([
        { name: "a", leader: 1, epoch: 1 },
        { name: "b", leader: 1, epoch: 1 }
      ]),
      null,
      1
    )
    const partial = MetadataCache.update(first, response([{ name: "a", leader: 2, epoch: 2 }]), ["a"], 2)
    expect([...partial.topics.keys()].sort()).toEqual(["a", "b"])
    expect(partial.topics.get("a")!.partitions.get(0)!.leaderId).toBe(2)
    const full = MetadataCache.update(partial, response([{ name: "a", leader: 2, epoch: 2 }]), null, 3)
    expect([...full.topics.keys()]).toEqual(["a"])
  })

  it("reports why there is no leader: missing partition, no leader elected, topic error", () => {
    const snap = MetadataCache.update(
      MetadataCache.empty,
      response([
        { name: "a", leader: -1, epoch: 3 },
        { name: "gone", leader: 0, epoch: 0, errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
      ]),
      null,
      1
    )
    expect(MetadataCache.leaderOf(snap, "a", 0)).toEqual({
      _tag: "NoLeader",
      errorCode: Errors.ErrorCode.LEADER_NOT_AVAILABLE
    })
    expect(MetadataCache.leaderOf(snap, "a", 9)).toEqual({
      _tag: "NoLeader",
      errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    })
    expect(MetadataCache.leaderOf(snap, "gone", 0)).toEqual({
      _tag: "NoLeader",
      errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    })
    expect(MetadataCache.leaderOf(snap, "never-asked", 0)).toEqual({ _tag: "Unknown" })
  })

  it("treats a topic older than the maximum age, or an invalidated one, as unknown", () => {
    const snap = MetadataCache.update(MetadataCache.empty, response([{ name: "a", leader: 1, epoch: 1 }]), null, 1000)
    expect(MetadataCache.leaderOf(snap, "a", 0, 500, 1400)._tag).toBe("Leader")
    expect(MetadataCache.leaderOf(snap, "a", 0, 500, 1600)._tag).toBe("Unknown")
    expect(MetadataCache.leaderOf(MetadataCache.invalidate(snap, "a"), "a", 0)._tag).toBe("Unknown")
  })
})
