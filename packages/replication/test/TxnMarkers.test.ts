import { describe, expect, it } from "@effect/vitest"
import { ControlRecord, Errors, RecordBatch, type WriteTxnMarkers } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { ReplicaManager } from "../src/ReplicaManager.js"
import * as ProducerStates from "../src/ProducerStates.js"
import * as TxnMarkers from "../src/TxnMarkers.js"

const E = Errors.ErrorCode

/** Broker 1 leads t-0 with followers 2 and 3 and follows t-1 (led by 2). */
const setup = () => {
  const rm = new ReplicaManager({ store: PartitionLogStore.makeMemoryStore(), nodeId: 1 })
  for (const [partition, leader] of [
    [0, 1],
    [1, 2]
  ] as const)
    rm.applyRegistration(
      "t",
      partition,
      "q83vEjRWeJCrze8SNFZ4kA",
      { replicas: [1, 2, 3], isr: [1, 2, 3], leader, leaderEpoch: 5, partitionEpoch: 0 },
      PartitionLog.defaultConfig,
      false
    )
  const followerFetch = (replicaId: number, fetchOffset: number) =>
    rm.fetch({
      replicaId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      partitions: [
        {
          topic: "t",
          partition: 0,
          fetchOffset,
          currentLeaderEpoch: 5,
          lastFetchedEpoch: -1,
          partitionMaxBytes: 1 << 20
        }
      ]
    })
  const log = rm.get("t", 0)!.log
  return { rm, followerFetch, log }
}

const txnBatch = (producerId: bigint, producerEpoch: number, baseSequence: number, values: ReadonlyArray<string>) =>
  RecordBatch.build({
    records: values.map((v) => ({ value: Buffer.from(v) })),
    producerId,
    producerEpoch,
    baseSequence,
    isTransactional: true,
    timestamp: 1
  })

const request = (
  producerId: bigint,
  producerEpoch: number,
  commit: boolean,
  coordinatorEpoch: number,
  topics: ReadonlyArray<{ name: string; partitionIndexes: ReadonlyArray<number> }>
): WriteTxnMarkers.Request => ({
  markers: [{ producerId, producerEpoch, transactionResult: commit, topics, coordinatorEpoch }]
})

const codes = (r: WriteTxnMarkers.Response) =>
  r.markers.flatMap((m) => m.topics.flatMap((t) => t.partitions.map((p) => [t.name, p.partitionIndex, p.errorCode])))

describe("TxnMarkers.writeTxnMarkers", () => {
  it("appends the marker as leader and answers once the followers have it; the LSO follows", async () => {
    const { rm, followerFetch, log } = setup()
    expect((await rm.appendAsLeader("t", 0, txnBatch(4n, 0, 0, ["a", "b"]), true, 1)).errorCode).toBe(0)
    await followerFetch(2, 2)
    await followerFetch(3, 2)
    expect([log.highWatermark, log.lastStableOffset]).toEqual([2, 0])
    let answered: WriteTxnMarkers.Response | undefined
    const pending = TxnMarkers.writeTxnMarkers(
      { replicas: rm },
      request(4n, 0, true, 3, [{ name: "t", partitionIndexes: [0] }])
    ).then((r) => {
      answered = r
      return r
    })
    await new Promise((r) => setTimeout(r, 0))
    // The COMMIT is in the leader's log (offset 2) but not yet replicated: no answer, and the LSO waits.
    expect(log.logEndOffset).toBe(3)
    expect(answered).toBeUndefined()
    expect(log.lastStableOffset).toBe(0)
    await followerFetch(2, 3)
    await followerFetch(3, 3)
    expect(codes(await pending)).toEqual([["t", 0, 0]])
    expect([log.highWatermark, log.lastStableOffset]).toEqual([3, 3])
    const marker = log.read(2, 1 << 20).records
    expect(ControlRecord.parseControl(marker)).toMatchObject({
      _tag: "Right",
      right: { type: "COMMIT", coordinatorEpoch: 3, producerId: 4n, producerEpoch: 0 }
    })
  })

  it("records an ABORT in the aborted-transaction index", async () => {
    const { rm, followerFetch, log } = setup()
    await rm.appendAsLeader("t", 0, txnBatch(4n, 0, 0, ["a"]), true, 1)
    const pending = TxnMarkers.writeTxnMarkers(
      { replicas: rm },
      request(4n, 0, false, 0, [{ name: "t", partitionIndexes: [0] }])
    )
    await followerFetch(2, 2)
    await followerFetch(3, 2)
    expect(codes(await pending)).toEqual([["t", 0, 0]])
    expect(log.abortedTransactions(0, 2)).toEqual([{ producerId: 4n, firstOffset: 0 }])
    expect(log.lastStableOffset).toBe(2)
  })

  it("answers per partition: unknown partition, not the leader, older producer or coordinator epoch", async () => {
    const { rm, followerFetch } = setup()
    await rm.appendAsLeader("t", 0, txnBatch(4n, 1, 0, ["a"]), true, 1)
    const first = TxnMarkers.writeTxnMarkers(
      { replicas: rm },
      request(4n, 1, true, 5, [{ name: "t", partitionIndexes: [0] }])
    )
    await followerFetch(2, 2)
    await followerFetch(3, 2)
    expect(codes(await first)).toEqual([["t", 0, 0]])
    const answer = await TxnMarkers.writeTxnMarkers(
      { replicas: rm },
      {
        markers: [
          {
            producerId: 4n,
            producerEpoch: 1,
            transactionResult: false,
            coordinatorEpoch: 4,
            topics: [
              { name: "t", partitionIndexes: [0, 1, 7] },
              { name: "nope", partitionIndexes: [0] }
            ]
          },
          {
            producerId: 4n,
            producerEpoch: 0,
            transactionResult: false,
            coordinatorEpoch: 5,
            topics: [{ name: "t", partitionIndexes: [0] }]
          }
        ]
      }
    )
    expect(codes(answer)).toEqual([
      ["t", 0, E.TRANSACTION_COORDINATOR_FENCED],
      ["t", 1, E.NOT_LEADER_OR_FOLLOWER],
      ["t", 7, E.UNKNOWN_TOPIC_OR_PARTITION],
      ["nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION],
      ["t", 0, E.INVALID_PRODUCER_EPOCH]
    ])
    expect(answer.markers.map((m) => m.producerId)).toEqual([4n, 4n])
  })

  it("refuses markers on partitions that take no writes (a mirror topic): READ_ONLY_TOPIC, or retriable while stopping", async () => {
    const { rm, log } = setup()
    const answer = await TxnMarkers.writeTxnMarkers(
      { replicas: rm, writeState: (_t, p) => (p === 0 ? "readOnly" : "stopping") },
      request(4n, 0, false, 0, [{ name: "t", partitionIndexes: [0, 1] }])
    )
    expect(codes(answer)).toEqual([
      ["t", 0, E.READ_ONLY_TOPIC],
      ["t", 1, E.NOT_LEADER_OR_FOLLOWER]
    ])
    expect(log.logEndOffset).toBe(0)
  })

  it("hands the partitions of a coordinator's topic to that coordinator", async () => {
    const { rm } = setup()
    const seen: Array<[number, TxnMarkers.TxnMarker]> = []
    const answer = await TxnMarkers.writeTxnMarkers(
      {
        replicas: rm,
        coordinatorFor: (topic) =>
          topic === "__consumer_offsets"
            ? async (partition, marker) => {
                seen.push([partition, marker])
                return 0
              }
            : undefined
      },
      request(9n, 2, true, 1, [{ name: "__consumer_offsets", partitionIndexes: [3] }])
    )
    expect(codes(answer)).toEqual([["__consumer_offsets", 3, 0]])
    expect(seen).toEqual([[3, { producerId: 9n, producerEpoch: 2, commit: true, coordinatorEpoch: 1 }]])
  })

  it("DescribeProducers: the leader's producer state per partition, errors where it does not lead", async () => {
    const { rm } = setup()
    await rm.appendAsLeader("t", 0, txnBatch(4n, 2, 0, ["a", "b"]), true, 1)
    const r = ProducerStates.describeProducers(rm, { topics: [{ name: "t", partitionIndexes: [0, 1, 9] }] })
    expect(r.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.activeProducers])).toEqual([
      [
        0,
        0,
        [
          {
            producerId: 4n,
            producerEpoch: 2,
            lastSequence: 1,
            lastTimestamp: 1n,
            coordinatorEpoch: -1,
            currentTxnStartOffset: 0n
          }
        ]
      ],
      [1, E.NOT_LEADER_OR_FOLLOWER, []],
      [9, E.UNKNOWN_TOPIC_OR_PARTITION, []]
    ])
  })
})
