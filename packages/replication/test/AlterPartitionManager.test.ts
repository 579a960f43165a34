import { describe, expect, it } from "@effect/vitest"
import type { AlterPartition } from "@clustermirror/protocol"
import * as AlterPartitionManager from "../src/AlterPartitionManager.js"

const proposal = (partition: number) => ({
  topic: "t",
  topicId: "AAAAAAAAAAAAAAAAAAAAAQ",
  partition,
  leaderEpoch: 3,
  partitionEpoch: 7
})

/** A controller that answers every partition with the ISR asked for (partition epoch + 1). */
const answer = (request: AlterPartition.Request): AlterPartition.Response => ({
  throttleTimeMs: 0,
  errorCode: 0,
  topics: request.topics.map((t) => ({
    topicId: t.topicId,
    topicName: t.topicName,
    partitions: t.partitions.map((p) => ({
      partitionIndex: p.partitionIndex,
      errorCode: p.partitionIndex === 2 ? 9 : 0,
      leaderId: 1,
      leaderEpoch: p.leaderEpoch,
      isr: p.newIsr,
      leaderRecoveryState: 0,
      partitionEpoch: p.partitionEpoch + 1
    }))
  }))
})

describe("AlterPartitionManager", () => {
  it("sends the ISR changes proposed together in one AlterPartition, one request at a time", async () => {
    const sent: AlterPartition.Request[] = []
    let inFlight = 0
    let maxInFlight = 0
    const channel = AlterPartitionManager.make({
      brokerId: 1,
      brokerEpoch: () => 42n,
      send: async (request) => {
        sent.push(request)
        maxInFlight = Math.max(maxInFlight, ++inFlight)
        await new Promise((r) => setTimeout(r, 10))
        inFlight--
        return answer(request)
      }
    })
    const first = await Promise.all([0, 1, 2].map((p) => channel.alterPartition(proposal(p), [1, 2, 3])))
    expect(sent).toHaveLength(1)
    expect(sent[0]!.brokerEpoch).toBe(42n)
    expect(sent[0]!.topics[0]!.partitions.map((p) => p.partitionIndex)).toEqual([0, 1, 2])
    expect(first.map((a) => a.errorCode)).toEqual([0, 0, 9])
    expect(first[0]!.registration).toMatchObject({ isr: [1, 2, 3], partitionEpoch: 8, leaderEpoch: 3 })
    expect(first[2]!.registration).toBeNull()
    // Proposed while a request is in flight: they wait and leave together in the next one.
    const a = channel.alterPartition(proposal(3), [1, 2])
    await new Promise((r) => setImmediate(r))
    const b = channel.alterPartition(proposal(4), [1, 2])
    const c = channel.alterPartition(proposal(5), [1, 2])
    await Promise.all([a, b, c])
    expect(sent.map((r) => r.topics[0]!.partitions.map((p) => p.partitionIndex))).toEqual([[0, 1, 2], [3], [4, 5]])
    expect(maxInFlight).toBe(1)
  })

  it("fails every change of a request that failed", async () => {
    const channel = AlterPartitionManager.make({
      brokerId: 1,
      brokerEpoch: () => 1n,
      send: () => Promise.reject(new Error("connection closed"))
    })
    const results = await Promise.allSettled([0, 1].map((p) => channel.alterPartition(proposal(p), [1])))
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"])
  })
})
