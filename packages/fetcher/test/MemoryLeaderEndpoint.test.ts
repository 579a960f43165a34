import { Buffer } from "node:buffer"
import { Errors, Fetch, ZERO_UUID } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { MemoryLeader } from "../src/MemoryLeaderEndpoint.js"
import { batches, pair, TOPIC, TOPIC_ID, write } from "./Fixtures.js"

const { ErrorCode } = Errors

const fetchRequest = (
  partition: Partial<Fetch.Request["topics"][number]["partitions"][number]>,
  replicaId = 2
): Fetch.Request => ({
  ...Fetch.Request.empty,
  replicaId,
  replicaState: { replicaId, replicaEpoch: 1n },
  maxWaitMs: 0,
  minBytes: 1,
  maxBytes: 1 << 20,
  topics: [
    {
      topic: TOPIC,
      topicId: TOPIC_ID,
      partitions: [
        {
          partition: 0,
          currentLeaderEpoch: -1,
          fetchOffset: 0n,
          lastFetchedEpoch: -1,
          logStartOffset: -1n,
          partitionMaxBytes: 1 << 20,
          replicaDirectoryId: ZERO_UUID,
          highWatermark: 9223372036854775807n,
          mirrorLeaderEpoch: -1,
          ...partition
        }
      ]
    }
  ]
})

describe("MemoryLeaderEndpoint", () => {
  it("serves replicas up to the log end and consumers up to the high watermark", async () => {
    const p = pair()
    write(p.leaderLog, 0, 3, "a")
    p.leaderLog.updateHighWatermark(2)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const endpoint = p.leader.endpoint(17)

    const replica = (await endpoint.fetch(fetchRequest({}))).responses[0]!.partitions[0]!
    const consumer = (await endpoint.fetch(fetchRequest({}, -1))).responses[0]!.partitions[0]!

    expect(replica).toMatchObject({ errorCode: 0, highWatermark: 2n, logStartOffset: 0n })
    expect(Buffer.from(replica.records!)).toEqual(Buffer.concat(batches(p.leaderLog)))
    expect(Buffer.from(consumer.records!)).toEqual(batches(p.leaderLog)[0])
  })

  it("answers a diverging fetch with the leader's epoch end and no records", async () => {
    const p = pair()
    write(p.leaderLog, 1, 2, "a")
    write(p.leaderLog, 3, 1, "b")
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 3 })

    const answer = (await p.leader.endpoint(12).fetch(fetchRequest({ fetchOffset: 5n, lastFetchedEpoch: 2 }), 12))
      .responses[0]!
    expect(answer.topic).toBe(TOPIC)
    expect(answer.partitions[0]).toMatchObject({ errorCode: 0, divergingEpoch: { epoch: 1, endOffset: 4n } })
    expect(answer.partitions[0]!.records?.length ?? 0).toBe(0)
  })

  it("fences stale and future leader epochs, and unknown topic ids", async () => {
    const p = pair()
    const hosted = p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 5 })
    const endpoint = p.leader.endpoint(19)
    const code = async (request: Fetch.Request) => (await endpoint.fetch(request)).responses[0]!.partitions[0]!
    expect(await code(fetchRequest({ currentLeaderEpoch: 4 }))).toMatchObject({
      errorCode: ErrorCode.FENCED_LEADER_EPOCH,
      currentLeader: { leaderId: 1, leaderEpoch: 5 }
    })
    expect((await code(fetchRequest({ currentLeaderEpoch: 6 }))).errorCode).toBe(ErrorCode.UNKNOWN_LEADER_EPOCH)
    hosted.isLeader = false
    expect((await code(fetchRequest({ currentLeaderEpoch: 5 }))).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    const unknown = fetchRequest({})
    const other: Fetch.Request = { ...unknown, topics: [{ ...unknown.topics[0]!, topicId: "AAAAAAAAAAAAAAAAAAAAAg" }] }
    expect((await code(other)).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID)
  })

  it("holds a fetch without data until the long poll ends", async () => {
    const p = pair()
    let waits = 0
    const leader = new MemoryLeader({
      leaderId: 1,
      now: () => 0,
      idleWait: async () => {
        waits++
        write(p.leaderLog, 0, 1, "late")
      }
    })
    leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const answer = await leader.endpoint(19).fetch({ ...fetchRequest({}), maxWaitMs: 500 })
    expect(waits).toBe(1)
    expect(answer.responses[0]!.partitions[0]!.records?.length).toBeGreaterThan(0)
  })
})
