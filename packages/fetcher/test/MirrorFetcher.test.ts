import { Buffer } from "node:buffer"
import {
  Errors,
  Fetch,
  ListOffsets,
  Metadata,
  OffsetForLeaderEpoch,
  Produce,
  RecordBatch
} from "@clustermirror/protocol"
import { PartitionLogStore } from "@clustermirror/storage"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { MemorySourceCluster } from "../src/MemorySourceCluster.js"
import {
  configKeys,
  defaults,
  fromMirrorConfigs,
  MirrorFetcher,
  type MirrorFetcherOwner,
  makeConfig,
  PartitionState,
  truncationOffset
} from "../src/MirrorFetcher.js"
import type { SourceConnector } from "../src/SourceCluster.js"

const { ErrorCode } = Errors
const TOPIC = "orders"
const TOPIC_ID = "q7ZJCFmRTdWpIVpLbKp6cw"

const raw = (baseOffset: number, epoch: number, count = 2): Buffer =>
  RecordBatch.build({
    records: Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`${baseOffset}#${i}`) })),
    baseOffset,
    partitionLeaderEpoch: epoch
  })

const logWith = (...batches: Buffer[]) => {
  const log = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
  for (const b of batches) log.appendAsFollower(b, 0)
  return log
}

describe("MirrorFetcher settings", () => {
  it("has the KIP-1279 defaults under the mirror config names", () => {
    expect(defaults).toEqual({
      mirrorFetchWaitMaxMs: 1000,
      mirrorFetchMinBytes: 1,
      mirrorFetchMaxBytes: 1048576,
      mirrorFetchResponseMaxBytes: 10485760,
      mirrorFetchBackoffMs: 1000
    })
    expect(Object.values(configKeys).sort()).toEqual([
      "mirror.fetch.backoff.ms",
      "mirror.fetch.max.bytes",
      "mirror.fetch.min.bytes",
      "mirror.fetch.response.max.bytes",
      "mirror.fetch.wait.max.ms"
    ])
    expect(makeConfig({ mirrorFetchMinBytes: 10 })).toEqual({ ...defaults, mirrorFetchMinBytes: 10 })
  })

  it("parses a mirror's configs, keeping defaults for missing or malformed values", () => {
    const parsed = fromMirrorConfigs(
      new Map([
        ["bootstrap.servers", "a:9092"],
        ["mirror.fetch.wait.max.ms", "250"],
        ["mirror.fetch.min.bytes", " 64 "],
        ["mirror.fetch.max.bytes", "-5"],
        ["mirror.fetch.response.max.bytes", "lots"],
        ["mirror.fetch.backoff.ms", "99999999999"]
      ])
    )
    expect(parsed).toEqual({
      mirrorFetchWaitMaxMs: 250,
      mirrorFetchMinBytes: 64,
      mirrorFetchMaxBytes: defaults.mirrorFetchMaxBytes,
      mirrorFetchResponseMaxBytes: defaults.mirrorFetchResponseMaxBytes,
      mirrorFetchBackoffMs: defaults.mirrorFetchBackoffMs
    })
    expect(fromMirrorConfigs(new Map())).toEqual(defaults)
  })
})

describe("truncationOffset", () => {
  // Local log: epoch 1 at 0..3, epoch 3 at 4..7, epoch 5 at 8..9.
  const log = logWith(raw(0, 1), raw(2, 1), raw(4, 3), raw(6, 3), raw(8, 5))

  it("cuts at the smaller end of an epoch both sides know", () => {
    expect(truncationOffset(log, 3, 6)).toBe(6)
    expect(truncationOffset(log, 3, 12)).toBe(8)
    expect(truncationOffset(log, 5, 10)).toBe(10)
  })

  it("cuts at the end of the local epoch below an epoch the log never had", () => {
    // The source names epoch 2 (ending at 9): the log's epoch 1 ends at 4, where its epoch 3 begins.
    expect(truncationOffset(log, 2, 9)).toBe(4)
  })

  it("never goes past the log end, and has nothing to say without an end offset", () => {
    expect(truncationOffset(log, -1, 20)).toBe(10)
    expect(truncationOffset(log, -1, 5)).toBe(5)
    expect(truncationOffset(log, 3, -1)).toBeUndefined()
  })
})

describe("MemorySourceCluster", () => {
  it("answers like a source broker: metadata by id and name, epochs, offsets, fencing", async () => {
    const source = new MemorySourceCluster({ brokers: [1, 2] })
    source.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 2, leaders: [2, 1], leaderEpoch: 4 })
    source.appendRaw(TOPIC, 0, [raw(0, 2), raw(2, 4)])
    source.setHighWatermark(TOPIC, 0, 2)
    const connection = await source.connect("source-2", 9092)

    expect(connection.versionFor(Fetch.api)).toBe(Fetch.api.maxVersion)
    expect(connection.versionFor(Produce.api)).toBeUndefined()
    await expect(connection.request(Produce.api, {})).rejects.toThrow(/does not serve Produce/)

    const byId = await connection.request(Metadata.api, { topics: [{ topicId: TOPIC_ID, name: null }] }, 12)
    expect(byId.brokers.map((b) => [b.nodeId, b.host, b.port])).toEqual([
      [1, "source-1", 9092],
      [2, "source-2", 9092]
    ])
    expect(byId.topics[0]?.partitions.map((p) => [p.partitionIndex, p.leaderId, p.leaderEpoch])).toEqual([
      [0, 2, 4],
      [1, 1, 4]
    ])
    const unknown = await connection.request(
      Metadata.api,
      { topics: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAQ", name: null }] },
      12
    )
    expect(unknown.topics[0]?.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID)
    const byName = await connection.request(Metadata.api, { topics: [{ name: "nope" }] }, 9)
    expect(byName.topics[0]?.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    const ofle = await connection.request(OffsetForLeaderEpoch.api, {
      replicaId: -1,
      topics: [{ topic: TOPIC, partitions: [{ partition: 0, currentLeaderEpoch: 4, leaderEpoch: 3 }] }]
    })
    expect(ofle.topics[0]?.partitions[0]).toMatchObject({ errorCode: 0, leaderEpoch: 2, endOffset: 2n })
    const fenced = await connection.request(OffsetForLeaderEpoch.api, {
      topics: [{ topic: TOPIC, partitions: [{ partition: 0, currentLeaderEpoch: 3, leaderEpoch: 3 }] }]
    })
    expect(fenced.topics[0]?.partitions[0]?.errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH)
    const notLeader = await connection.request(OffsetForLeaderEpoch.api, {
      topics: [{ topic: TOPIC, partitions: [{ partition: 1, currentLeaderEpoch: 4, leaderEpoch: 3 }] }]
    })
    expect(notLeader.topics[0]?.partitions[0]?.errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)

    const offsets = await connection.request(ListOffsets.api, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [
        {
          name: TOPIC,
          partitions: [
            { partitionIndex: 0, currentLeaderEpoch: 4, timestamp: -2n },
            { partitionIndex: 0, currentLeaderEpoch: 4, timestamp: -1n }
          ]
        }
      ]
    })
    // A consumer's LATEST is the high watermark.
    expect(offsets.topics[0]?.partitions.map((p) => p.offset)).toEqual([0n, 2n])

    source.setBrokerDown(2, true)
    await expect(connection.request(Metadata.api, { topics: [] })).rejects.toThrow()
    await expect(source.connect("source-2", 9092)).rejects.toThrow(/refused/)
    await expect(source.connect("elsewhere", 1)).rejects.toThrow(/unknown source broker/)
    source.setBrokerDown(2, false)
    const again = await source.connect("source-2", 9092)
    const metadata = await again.request(Metadata.api, { topics: null })
    expect(metadata.topics.map((t) => t.name)).toEqual([TOPIC])
    await again.close()
    await expect(again.request(Metadata.api, { topics: null })).rejects.toThrow(/closed/)
  })

  it("serves consumer fetches up to the high watermark and holds them while there is nothing new", async () => {
    const source = new MemorySourceCluster({ brokers: [1] })
    source.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 1, leaders: [1], leaderEpoch: 0 })
    source.produce(TOPIC, 0, [raw(0, -1), raw(0, -1)])
    source.setHighWatermark(TOPIC, 0, 2)
    const connection = await source.connect("source-1", 9092)
    const fetch = (fetchOffset: bigint) =>
      connection.request(Fetch.api, {
        replicaId: -1,
        maxWaitMs: 60_000,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [
          {
            topicId: TOPIC_ID,
            partitions: [{ partition: 0, fetchOffset, currentLeaderEpoch: 0, partitionMaxBytes: 1 << 20 }]
          }
        ]
      })

    const first = await fetch(0n)
    const records = first.responses[0]?.partitions[0]?.records
    expect(RecordBatch.split(Buffer.from(records!)).batches).toHaveLength(1)
    expect(first.responses[0]?.partitions[0]?.highWatermark).toBe(2n)

    const held = fetch(2n)
    await new Promise((resolve) => setImmediate(resolve))
    expect(source.heldFetches).toBe(1)
    source.setHighWatermark(TOPIC, 0, 4)
    const second = await held
    expect(source.heldFetches).toBe(0)
    expect(RecordBatch.baseOffset(Buffer.from(second.responses[0]!.partitions[0]!.records!))).toBe(2)

    const out = await fetch(9n)
    expect(out.responses[0]?.partitions[0]?.errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
  })
})

describe("MirrorFetcher", () => {
  /** An owner that records what the fetcher reports. */
  const recordingOwner = () => {
    const calls: string[] = []
    const owner: MirrorFetcherOwner = {
      config: makeConfig({ mirrorFetchWaitMaxMs: 0 }),
      events: {
        fetched: (tp, p) => calls.push(`fetched ${tp.partition} ${p.logEndOffset}`),
        failed: () => {},
        epochAhead: () => {},
        epochNearlyAhead: () => {}
      },
      now: () => 0,
      retry: (s, error, refresh) => {
        calls.push(`retry ${s.partition.partition} ${refresh} ${error}`)
        s.fetcher?.remove(s)
      },
      fail: (s, message) => calls.push(`fail ${s.partition.partition} ${message}`),
      epochAhead: (s, e) => calls.push(`epochAhead ${s.partition.partition} ${e}`),
      staleSourceEpoch: (s) => calls.push(`stale ${s.partition.partition}`)
    }
    return { owner, calls }
  }

  const stateFor = (partition: number, sourceLeaderEpoch: number) => {
    const log = PartitionLogStore.makeMemoryStore().open(TOPIC, partition, {}, TOPIC_ID)
    const state = new PartitionState(
      { topic: TOPIC, topicId: TOPIC_ID, partition, log, destinationLeaderEpoch: () => 50, onAppend: () => {} },
      0
    )
    state.sourceLeaderEpoch = sourceLeaderEpoch
    state.phase = "Truncating"
    return state
  }

  it("fetches all its partitions in one round and appends them", async () => {
    const source = new MemorySourceCluster({ brokers: [1] })
    source.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 2, leaders: [1, 1], leaderEpoch: 1 })
    source.produce(TOPIC, 0, [raw(0, -1)])
    source.produce(TOPIC, 1, [raw(0, -1), raw(0, -1)])
    const { owner, calls } = recordingOwner()
    const fetcher = new MirrorFetcher({ sourceBrokerId: 1, host: "source-1", port: 9092, connector: source, owner })
    const s0 = stateFor(0, 1)
    const s1 = stateFor(1, 1)
    fetcher.add(s0)
    fetcher.add(s1)

    const round = await fetcher.runOnce()

    expect(round).toMatchObject({ _tag: "Fetched", partitions: 2 })
    expect(calls.sort()).toEqual(["fetched 0 2", "fetched 1 4"])
    expect(source.fetches).toHaveLength(1)
    expect(s0.log.logEndOffset).toBe(2)
    expect(s1.log.logEndOffset).toBe(4)
    await fetcher.stop()
    expect(source.connections.size).toBe(0)
  })

  it("hands every partition back for a metadata lookup when its source broker cannot be reached", async () => {
    const source = new MemorySourceCluster({ brokers: [1] })
    source.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 2, leaders: [1, 1] })
    source.setDown(true)
    const { owner, calls } = recordingOwner()
    const fetcher = new MirrorFetcher({ sourceBrokerId: 1, host: "source-1", port: 9092, connector: source, owner })
    fetcher.add(stateFor(0, 0))
    fetcher.add(stateFor(1, 0))

    const round = await fetcher.runOnce()

    expect(round).toEqual({ _tag: "ConnectionFailed", error: "Fetch IO error: connection to source-1:9092 refused" })
    expect(calls).toEqual([
      "retry 0 true Fetch IO error: connection to source-1:9092 refused",
      "retry 1 true Fetch IO error: connection to source-1:9092 refused"
    ])
    expect(fetcher.partitionCount).toBe(0)
  })

  it("backs off instead of spinning on a divergence with no truncation point in the log", async () => {
    const source = new MemorySourceCluster({ brokers: [1] })
    source.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 1, leaders: [1] })
    source.produce(TOPIC, 0, [raw(0, -1)])
    // A source that claims the log diverges at an offset the empty local log cannot be cut to.
    const diverging: SourceConnector = {
      connect: async (host, port) => {
        const inner = await source.connect(host, port)
        return {
          versionFor: inner.versionFor,
          close: inner.close,
          request: async (api, body, version) => {
            if (api.key !== Fetch.api.key) return inner.request(api, body, version)
            const v = version ?? Fetch.api.maxVersion
            const partition = {
              partitionIndex: 0,
              errorCode: 0,
              highWatermark: 2n,
              divergingEpoch: { epoch: 0, endOffset: 1000n },
              records: Buffer.alloc(0)
            }
            const response = {
              ...Fetch.Response.empty,
              responses: [{ topic: TOPIC, topicId: TOPIC_ID, partitions: [partition] }]
            }
            const decoded = Either.flatMap(Fetch.Response.encode(v, response), (bytes) => api.response.decode(v, bytes))
            if (Either.isLeft(decoded)) throw decoded.left
            return decoded.right
          }
        }
      }
    }
    const { owner, calls } = recordingOwner()
    const fetcher = new MirrorFetcher({ sourceBrokerId: 1, host: "source-1", port: 9092, connector: diverging, owner })
    const state = stateFor(0, 0)
    fetcher.add(state)

    await fetcher.runOnce()

    expect(calls).toEqual([
      "retry 0 true Fetch error: no truncation point below 0 for the divergence from the source (epoch 0 ends at 1000)"
    ])
    expect(state.log.logEndOffset).toBe(0)
    await fetcher.stop()
  })
})
