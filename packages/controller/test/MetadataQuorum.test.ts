import { describe, expect, it } from "@effect/vitest"
import { DescribeQuorum, Errors, Uuid } from "@clustermirror/protocol"
import { Either } from "effect"
import * as MetadataQuorum from "../src/MetadataQuorum.js"

const DIR = "nQNSszPERgm6WdiSbMrkSA"
const B1 = "AAAAAAAAAAAAAAAAAAAAAg"

const fetched = (steps: ReadonlyArray<readonly [number, bigint, bigint, number]>) =>
  steps.reduce(
    (s, [id, offset, leaderEnd, now]) => MetadataQuorum.recordFetch(s, id, B1, offset, leaderEnd, now),
    MetadataQuorum.empty
  )

const quorum = (fetches: MetadataQuorum.FetchStates, registered: ReadonlyArray<number> = [1, 2]) =>
  MetadataQuorum.describe({
    leaderId: 1000,
    leaderEpoch: 1,
    leaderDirectoryId: DIR,
    highWatermark: 42n,
    registeredBrokers: registered,
    fetches,
    now: 5000
  })

const metadataRequest = { topics: [{ topicName: "__cluster_metadata", partitions: [{ partitionIndex: 0 }] }] }

describe("MetadataQuorum.recordFetch", () => {
  it("is caught up at a fetch from the leader's end", () => {
    const s = fetched([[1, 10n, 10n, 100]])
    expect(s.get(1)).toMatchObject({ fetchOffset: 10n, lastFetchMs: 100, lastCaughtUpMs: 100 })
  })

  it("is caught up as of the previous fetch when it asks from where the log ended then", () => {
    const s = fetched([
      [1, 4n, 10n, 100],
      [1, 10n, 15n, 200]
    ])
    expect(s.get(1)).toMatchObject({ fetchOffset: 10n, lastFetchMs: 200, lastCaughtUpMs: 100 })
  })

  it("was never caught up while it stays behind, and keeps its last caught-up time", () => {
    expect(fetched([[1, 4n, 10n, 100]]).get(1)?.lastCaughtUpMs).toBe(-1)
    const s = fetched([
      [1, 10n, 10n, 100],
      [1, 10n, 20n, 200],
      [1, 12n, 30n, 300]
    ])
    expect(s.get(1)).toMatchObject({ fetchOffset: 12n, lastFetchMs: 300, lastCaughtUpMs: 100 })
  })

  it("ignores fetches without a replica id (consumers)", () => {
    expect(fetched([[-1, 0n, 10n, 100]]).size).toBe(0)
  })
})

describe("MetadataQuorum.describe", () => {
  it("lists the controller as the only voter and every registered broker as an observer", () => {
    const q = quorum(fetched([[2, 40n, 42n, 4000]]))
    expect(q.leaderId).toBe(1000)
    expect(q.voters).toEqual([
      {
        replicaId: 1000,
        replicaDirectoryId: DIR,
        logEndOffset: 42n,
        lastFetchTimestamp: 5000n,
        lastCaughtUpTimestamp: 5000n
      }
    ])
    expect(q.observers).toEqual([
      {
        replicaId: 1,
        replicaDirectoryId: Uuid.ZERO,
        logEndOffset: -1n,
        lastFetchTimestamp: -1n,
        lastCaughtUpTimestamp: -1n
      },
      { replicaId: 2, replicaDirectoryId: B1, logEndOffset: 40n, lastFetchTimestamp: 4000n, lastCaughtUpTimestamp: -1n }
    ])
  })

  it("lists a fetching replica not registered (yet), but never the leader itself", () => {
    const q = quorum(
      fetched([
        [3, 42n, 42n, 4000],
        [1000, 42n, 42n, 4000]
      ]),
      []
    )
    expect(q.observers.map((o) => o.replicaId)).toEqual([3])
  })

  it("forgets an unregistered replica that stopped fetching", () => {
    const s = fetched([[3, 42n, 42n, 0]])
    expect(MetadataQuorum.expire(s, new Set(), MetadataQuorum.OBSERVER_SESSION_TIMEOUT_MS).size).toBe(1)
    expect(MetadataQuorum.expire(s, new Set(), MetadataQuorum.OBSERVER_SESSION_TIMEOUT_MS + 1).size).toBe(0)
    expect(MetadataQuorum.expire(s, new Set([3]), MetadataQuorum.OBSERVER_SESSION_TIMEOUT_MS + 1).size).toBe(1)
  })
})

describe("MetadataQuorum.describeQuorumResponse", () => {
  const endpoints = [{ name: "CONTROLLER", host: "127.0.0.1", port: 9093 }]

  it("answers for __cluster_metadata-0 with the voters' listeners, in every version", () => {
    const r = MetadataQuorum.describeQuorumResponse(metadataRequest, quorum(MetadataQuorum.empty), endpoints)
    const p = r.topics[0]!.partitions[0]!
    expect([r.errorCode, p.errorCode, p.leaderId, p.leaderEpoch, p.highWatermark]).toEqual([0, 0, 1000, 1, 42n])
    expect(r.nodes).toEqual([{ nodeId: 1000, listeners: endpoints }])
    for (const v of [0, 1, 2]) {
      const bytes = Either.getOrThrow(DescribeQuorum.Response.encode(v, r))
      const back = Either.getOrThrow(DescribeQuorum.Response.decode(v, bytes))
      expect(back.topics[0]!.partitions[0]!.observers.map((o) => o.replicaId)).toEqual([1, 2])
      expect(back.nodes).toEqual(v >= 2 ? r.nodes : [])
    }
  })

  it("answers UNKNOWN_TOPIC_OR_PARTITION for every partition of another topic or partition", () => {
    const request = {
      topics: [
        { topicName: "__cluster_metadata", partitions: [{ partitionIndex: 1 }] },
        { topicName: "other", partitions: [{ partitionIndex: 0 }, { partitionIndex: 3 }] }
      ]
    }
    const r = MetadataQuorum.describeQuorumResponse(request, quorum(MetadataQuorum.empty), endpoints)
    expect(r.errorCode).toBe(0)
    expect(r.topics.flatMap((t) => t.partitions.map((p) => [t.topicName, p.partitionIndex, p.errorCode]))).toEqual([
      ["__cluster_metadata", 1, Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ["other", 0, Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
      ["other", 3, Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    ])
  })
})

describe("MetadataQuorum.describeClusterResponse", () => {
  const cluster = () => ({
    clusterId: "c",
    controllerId: 1000,
    brokers: [{ brokerId: 1000, host: "127.0.0.1", port: 9093, rack: null, isFenced: false }]
  })
  const request = (endpointType: number) => ({
    includeClusterAuthorizedOperations: false,
    endpointType,
    includeFencedBrokers: false
  })
  const C = MetadataQuorum.EndpointType.CONTROLLER
  const B = MetadataQuorum.EndpointType.BROKER

  it("lists the nodes of the listener's own endpoint type", () => {
    const r = MetadataQuorum.describeClusterResponse(1, request(C), C, cluster)
    expect([r.errorCode, r.endpointType, r.clusterId, r.controllerId, r.brokers.length]).toEqual([0, C, "c", 1000, 1])
  })

  it("refuses the other endpoint type (MISMATCHED_ENDPOINT_TYPE) and unknown ones (UNSUPPORTED_ENDPOINT_TYPE)", () => {
    expect(MetadataQuorum.describeClusterResponse(1, request(C), B, cluster).errorCode).toBe(
      Errors.ErrorCode.MISMATCHED_ENDPOINT_TYPE
    )
    expect(MetadataQuorum.describeClusterResponse(1, request(B), C, cluster).errorCode).toBe(
      Errors.ErrorCode.MISMATCHED_ENDPOINT_TYPE
    )
    expect(MetadataQuorum.describeClusterResponse(1, request(7), B, cluster).errorCode).toBe(
      Errors.ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    )
    // v0 has no endpoint type: its default is the broker's, and a controller refuses it as invalid.
    expect(MetadataQuorum.describeClusterResponse(0, request(B), C, cluster).errorCode).toBe(
      Errors.ErrorCode.INVALID_REQUEST
    )
  })

  it("reports no controller when its id is not among the listed nodes", () => {
    const none = () => ({ ...cluster(), brokers: [] })
    expect(MetadataQuorum.describeClusterResponse(1, request(C), C, none).controllerId).toBe(-1)
  })
})
