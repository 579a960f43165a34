import { Buffer } from "node:buffer"
import { Errors, type Fetch, RecordBatch } from "@clustermirror/protocol"
import { type PartitionLog, StorageTest } from "@clustermirror/storage"
import { describe, expect, it } from "@effect/vitest"
import { FetcherEvent } from "../src/FetcherEvents.js"
import type { LeaderEndpoint } from "../src/LeaderEndpoint.js"
import { ReplicaFetcher } from "../src/ReplicaFetcher.js"
import { batch, batches, epochStarts, pair, runToCompletion, TOPIC, TOPIC_ID, TP, write } from "./Fixtures.js"

const { ErrorCode } = Errors

const follow = (p: ReturnType<typeof pair>, currentLeaderEpoch: number, initialOffset?: number): void =>
  p.fetcher.addPartitions([
    {
      topic: TOPIC,
      topicId: TOPIC_ID,
      partition: 0,
      log: p.followerLog,
      currentLeaderEpoch,
      ...(initialOffset === undefined ? {} : { initialOffset })
    }
  ])

const tags = (events: ReadonlyArray<FetcherEvent>): string[] => events.map((e) => e._tag)

describe("ReplicaFetcher", () => {
  for (const fetchVersion of [12, 13, 17, 19])
    it(`catches up from an empty log, byte for byte (Fetch v${fetchVersion})`, async () => {
      const p = pair({ fetchVersion, config: { replicaFetchMaxBytes: 300 } })
      write(p.leaderLog, 0, 6, "a", 3)
      write(p.leaderLog, 2, 5, "b", 1)
      p.leaderLog.updateHighWatermark(p.leaderLog.logEndOffset)
      p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 2 })
      follow(p, 2)

      const rounds = await runToCompletion(p.fetcher)

      expect(rounds).toBeGreaterThan(2) // the 300-byte partition limit forces several fetches
      expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
      expect(p.followerLog.logEndOffset).toBe(23)
      expect(p.followerLog.highWatermark).toBe(23)
      expect(epochStarts(p.followerLog)).toEqual([
        [0, 0],
        [2, 18]
      ])
      expect(p.followerLog.endOffsetForEpoch(0)).toEqual({ epoch: 0, endOffset: 18 })
      expect(p.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 23, lastFetchedEpoch: 2, phase: "Fetching" })
      const fetched = p.events.drain().filter(FetcherEvent.$is("Fetched"))
      expect(fetched.at(-1)?.position).toEqual({ logEndOffset: 23, highWatermark: 23, logStartOffset: 0 })
      expect(p.leader.followerFetchOffsets.get("orders-0/2")).toBe(23)
    })

  it("appends once per partition per response, with the leader's bytes unchanged", async () => {
    const p = pair()
    write(p.leaderLog, 1, 4, "a")
    p.leaderLog.updateHighWatermark(p.leaderLog.logEndOffset)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 1 })
    const appends: Buffer[] = []
    const log = p.followerLog
    const counting: PartitionLog.PartitionLog = new Proxy(log, {
      get: (target, prop, receiver) =>
        prop === "appendAsFollower"
          ? (records: Buffer, now: number) => {
              appends.push(Buffer.from(records))
              return target.appendAsFollower(records, now)
            }
          : Reflect.get(target, prop, receiver)
    })
    p.fetcher.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: counting, currentLeaderEpoch: 1 }])

    await p.fetcher.runOnce()

    expect(appends).toHaveLength(1)
    expect(appends[0]).toEqual(Buffer.concat(batches(p.leaderLog)))
  })

  it("appends only whole batches when a response ends with a partial one", async () => {
    const p = pair()
    write(p.leaderLog, 1, 3, "a")
    p.leaderLog.updateHighWatermark(p.leaderLog.logEndOffset)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 1 })
    const inner = p.leader.endpoint(19)
    const cutting: LeaderEndpoint = {
      ...inner,
      fetch: async (request, version) => {
        const response = await inner.fetch(request, version)
        const cut = (records: Uint8Array | null) =>
          records === null || records.length === 0 ? records : records.subarray(0, records.length - 5)
        return {
          ...response,
          responses: response.responses.map((t) => ({
            ...t,
            partitions: t.partitions.map((q) => ({ ...q, records: cut(q.records) }))
          }))
        }
      }
    }
    const events = [] as Array<number>
    const fetcher = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      endpoint: cutting,
      config: { replicaFetchWaitMaxMs: 0 },
      events: { fetched: (_, pos) => events.push(pos.logEndOffset), truncated: () => {}, failed: () => {} },
      now: () => p.clock.now
    })
    fetcher.addPartitions([
      { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 1 }
    ])

    await fetcher.runOnce()
    expect(p.followerLog.logEndOffset).toBe(4)
    // The only remaining batch always arrives cut: nothing more is appended.
    await fetcher.runOnce()
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog).slice(0, 2))
    expect(events).toEqual([4])
  })

  it("truncates a divergent suffix at the leader-epoch boundary after an unclean election, then matches the leader", async () => {
    // Broker A (the follower here) led epoch 0 and wrote offsets 0..9; broker B copied 0..5, then was elected
    // uncleanly at epoch 1 and wrote 6..11. A returns as B's follower.
    const p = pair()
    write(p.followerLog, 0, 5, "a") // A: offsets 0..9 at epoch 0
    p.followerLog.updateHighWatermark(6)
    for (const b of batches(p.followerLog).slice(0, 3)) p.leaderLog.appendAsFollower(b, 0) // B copied 0..5
    write(p.leaderLog, 1, 3, "b") // B at epoch 1: 6..11
    p.leaderLog.updateHighWatermark(12)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 1 })
    follow(p, 1)
    expect(p.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 10, lastFetchedEpoch: 0 })

    await p.fetcher.runOnce()

    // B's epoch 0 ends at 6 < 10: DivergingEpoch {0, 6}; A's epoch 0 ends at 10; truncate to min(6, 10) = 6.
    expect(p.followerLog.logEndOffset).toBe(6)
    expect(p.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 6, lastFetchedEpoch: 0 })
    expect(p.events.drain().filter(FetcherEvent.$is("Truncated"))).toEqual([
      FetcherEvent.Truncated({ tp: TP, offset: 6 })
    ])

    await runToCompletion(p.fetcher)

    expect(p.followerLog.logEndOffset).toBe(12)
    expect(p.followerLog.highWatermark).toBe(12)
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
    expect(epochStarts(p.followerLog)).toEqual([
      [0, 0],
      [1, 6]
    ])
  })

  it("truncates in two steps when the leader answers with an epoch the follower never had", async () => {
    // B led epoch 2 (offsets 2..3); A, elected uncleanly at epoch 3 without them, wrote offset 2..3; then B
    // was elected at epoch 4 and wrote 4..5. A follows B: B answers DivergingEpoch {2, 4}; A has no epoch 2,
    // so it truncates to the end of its epoch 1 (offset 2) and fetches again with last epoch 1.
    const p = pair()
    write(p.leaderLog, 1, 1, "common")
    for (const b of batches(p.leaderLog)) p.followerLog.appendAsFollower(b, 0)
    write(p.leaderLog, 2, 1, "b2")
    write(p.followerLog, 3, 1, "a3")
    write(p.leaderLog, 4, 1, "b4")
    p.leaderLog.updateHighWatermark(6)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 4 })
    follow(p, 4)

    await p.fetcher.runOnce()
    expect(p.followerLog.logEndOffset).toBe(2)
    expect(p.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 2, lastFetchedEpoch: 1 })

    await runToCompletion(p.fetcher)
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
    expect(
      p.events
        .drain()
        .filter(FetcherEvent.$is("Truncated"))
        .map((e) => e.offset)
    ).toEqual([2])
  })

  it("restarts at the leader's log start when it is above the follower's log end", async () => {
    const p = pair()
    write(p.leaderLog, 0, 5, "a")
    for (const b of batches(p.leaderLog).slice(0, 1)) p.followerLog.appendAsFollower(b, 0) // 0..1
    write(p.leaderLog, 1, 2, "b")
    p.leaderLog.updateHighWatermark(14)
    p.leaderLog.deleteRecordsBefore(8)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 1 })
    follow(p, 1)

    await p.fetcher.runOnce()

    expect(p.followerLog.logStartOffset).toBe(8)
    expect(p.followerLog.logEndOffset).toBe(8)
    expect(tags(p.events.drain())).toEqual(["Truncated"])
    await runToCompletion(p.fetcher)
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
    expect(p.followerLog.logStartOffset).toBe(8)
    expect(p.followerLog.logEndOffset).toBe(14)
  })

  it("truncates to the leader's log end on OFFSET_OUT_OF_RANGE when the leader's log is shorter", async () => {
    // The follower holds batches of an epoch the leader does not know (above its current epoch), so the
    // leader cannot place them and answers OFFSET_OUT_OF_RANGE.
    const p = pair()
    write(p.leaderLog, 0, 2, "a")
    for (const b of batches(p.leaderLog)) p.followerLog.appendAsFollower(b, 0)
    write(p.followerLog, 5, 2, "x")
    p.leaderLog.updateHighWatermark(4)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 3 })
    follow(p, 3)

    await p.fetcher.runOnce()

    expect(p.followerLog.logEndOffset).toBe(4)
    expect(p.events.drain()).toEqual([FetcherEvent.Truncated({ tp: TP, offset: 4 })])
    expect(p.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 4, lastFetchedEpoch: 0 })
    write(p.leaderLog, 3, 1, "b")
    await runToCompletion(p.fetcher)
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
  })

  it("stops a partition fenced at its current epoch until it is added with a newer epoch", async () => {
    const p = pair()
    write(p.leaderLog, 4, 2, "a")
    p.leaderLog.updateHighWatermark(4)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 4 })
    follow(p, 3)

    const first = await p.fetcher.runOnce()

    expect(first._tag).toBe("Fetched")
    expect(p.events.drain()).toEqual([
      FetcherEvent.Failed({ tp: TP, errorCode: ErrorCode.FENCED_LEADER_EPOCH, state: "failed" })
    ])
    expect(p.fetcher.isFailed(TP)).toBe(true)
    const fetches = p.leader.fetchCount
    p.clock.now += 60_000
    expect((await p.fetcher.runOnce())._tag).toBe("Idle")
    expect(p.leader.fetchCount).toBe(fetches)

    follow(p, 4)
    expect(p.fetcher.isFailed(TP)).toBe(false)
    await runToCompletion(p.fetcher)
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
  })

  it("delays a fenced partition whose epoch moved on while the fetch was in flight", async () => {
    const p = pair({ config: { replicaFetchBackoffMs: 1000 } })
    write(p.leaderLog, 5, 2, "a")
    p.leaderLog.updateHighWatermark(4)
    p.followerLog.appendAsFollower(batches(p.leaderLog)[0]!, 0)
    const hosted = p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 5 })
    const inner = p.leader.endpoint(19)
    let racing = true
    const fetcher = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      config: { replicaFetchWaitMaxMs: 0, replicaFetchBackoffMs: 1000 },
      events: p.events.events,
      now: () => p.clock.now,
      endpoint: {
        ...inner,
        fetch: async (request: Fetch.Request, version?: number) => {
          const response = await inner.fetch(request, version)
          if (racing) {
            // Metadata moved the partition to epoch 5 before the answer (at epoch 4) came back.
            racing = false
            fetcher.addPartitions([
              { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 5 }
            ])
          }
          return response
        }
      }
    })
    fetcher.addPartitions([
      { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 4 }
    ])
    expect(hosted.leaderEpoch).toBe(5)

    await fetcher.runOnce()

    expect(fetcher.isFailed(TP)).toBe(false)
    expect(fetcher.partitionState(TP)).toMatchObject({ currentLeaderEpoch: 5, delayedUntil: 11_000 })
    expect(p.events.drain()).toEqual([
      FetcherEvent.Failed({ tp: TP, errorCode: ErrorCode.FENCED_LEADER_EPOCH, state: "delayed" })
    ])
  })

  for (const [name, setup, errorCode] of [
    ["NOT_LEADER_OR_FOLLOWER", (h: { isLeader: boolean }) => (h.isLeader = false), ErrorCode.NOT_LEADER_OR_FOLLOWER],
    ["UNKNOWN_LEADER_EPOCH", () => {}, ErrorCode.UNKNOWN_LEADER_EPOCH]
  ] as const)
    it(`delays a partition on ${name} and retries after replica.fetch.backoff.ms`, async () => {
      const p = pair({ config: { replicaFetchBackoffMs: 1000 } })
      write(p.leaderLog, 2, 2, "a")
      p.leaderLog.updateHighWatermark(4)
      const hosted = p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 2 })
      setup(hosted)
      // UNKNOWN_LEADER_EPOCH: the follower already knows a newer epoch than the leader.
      follow(p, name === "UNKNOWN_LEADER_EPOCH" ? 3 : 2)

      await p.fetcher.runOnce()
      expect(p.events.drain()).toEqual([FetcherEvent.Failed({ tp: TP, errorCode, state: "delayed" })])
      expect(p.fetcher.partitionState(TP)?.delayedUntil).toBe(11_000)
      const fetches = p.leader.fetchCount

      p.clock.now += 999
      expect(await p.fetcher.runOnce()).toEqual({ _tag: "Idle", nextReadyAt: 11_000 })
      expect(p.leader.fetchCount).toBe(fetches)

      hosted.isLeader = true
      hosted.leaderEpoch = p.fetcher.partitionState(TP)!.currentLeaderEpoch
      p.clock.now += 1
      await runToCompletion(p.fetcher)
      expect(p.leader.fetchCount).toBeGreaterThan(fetches)
      expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
    })

  it("delays a partition whose append fails on a full disk and catches up once space returns", async () => {
    const p = pair({ config: { replicaFetchBackoffMs: 500 } })
    write(p.leaderLog, 0, 3, "a")
    p.leaderLog.updateHighWatermark(p.leaderLog.logEndOffset)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const disk = StorageTest.faultyStore()
    const log = disk.store.open(TOPIC, 0, {}, TOPIC_ID)
    p.fetcher.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log, currentLeaderEpoch: 0 }])
    disk.failWrites("ENOSPC")

    await p.fetcher.runOnce()

    expect(p.events.drain()).toEqual([
      FetcherEvent.Failed({ tp: TP, errorCode: ErrorCode.KAFKA_STORAGE_ERROR, state: "delayed" })
    ])
    expect(p.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 0, delayedUntil: 10_500 })
    disk.failWrites(null)
    p.clock.now += 500
    await runToCompletion(p.fetcher)
    expect(batches(log)).toEqual(batches(p.leaderLog))
  })

  it("delays every partition when the request fails, then resumes", async () => {
    const p = pair({ config: { replicaFetchBackoffMs: 500 } })
    write(p.leaderLog, 0, 2, "a")
    p.leaderLog.updateHighWatermark(4)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    follow(p, 0)
    p.leader.failNextRequests = 1

    const failed = await p.fetcher.runOnce()

    expect(failed._tag).toBe("RequestFailed")
    expect(p.events.drain()).toEqual([
      FetcherEvent.Failed({ tp: TP, errorCode: ErrorCode.NETWORK_EXCEPTION, state: "delayed" })
    ])
    expect((await p.fetcher.runOnce())._tag).toBe("Idle")
    p.clock.now += 500
    await runToCompletion(p.fetcher)
    expect(p.followerLog.logEndOffset).toBe(4)
  })

  it("propagates the leader's high watermark, never above its own log end, and the leader's log start", async () => {
    const p = pair({ config: { replicaFetchMaxBytes: 1 } }) // one batch per fetch
    write(p.leaderLog, 0, 5, "a") // 0..9
    p.leaderLog.updateHighWatermark(4)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    follow(p, 0)

    await p.fetcher.runOnce()
    expect([p.followerLog.logEndOffset, p.followerLog.highWatermark]).toEqual([2, 2])
    await p.fetcher.runOnce()
    await p.fetcher.runOnce()
    expect([p.followerLog.logEndOffset, p.followerLog.highWatermark]).toEqual([6, 4])

    p.leaderLog.updateHighWatermark(10)
    p.leaderLog.deleteRecordsBefore(4)
    await runToCompletion(p.fetcher)
    expect([p.followerLog.logEndOffset, p.followerLog.highWatermark, p.followerLog.logStartOffset]).toEqual([10, 10, 4])

    p.events.drain()
    p.leaderLog.deleteRecordsBefore(6)
    await p.fetcher.runOnce()
    expect(p.events.drain()).toEqual([
      FetcherEvent.Fetched({ tp: TP, position: { logEndOffset: 10, highWatermark: 10, logStartOffset: 6 } })
    ])
  })

  it("truncates a log without leader epochs to its high watermark before fetching", async () => {
    const p = pair()
    // Batches without a partition leader epoch (an old message format) leave the epoch cache empty.
    for (let i = 0; i < 3; i++)
      p.followerLog.appendAsFollower(
        RecordBatch.build({ records: [{ value: Buffer.from(`old${i}`) }], baseOffset: i }),
        0
      )
    p.followerLog.updateHighWatermark(1)
    for (const b of batches(p.followerLog).slice(0, 1)) p.leaderLog.appendAsFollower(b, 0)
    write(p.leaderLog, 3, 2, "new")
    p.leaderLog.updateHighWatermark(5)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 3 })
    follow(p, 3)
    expect(p.fetcher.partitionState(TP)?.phase).toBe("Truncating")

    await runToCompletion(p.fetcher)

    expect(p.events.drain().filter(FetcherEvent.$is("Truncated"))).toEqual([
      FetcherEvent.Truncated({ tp: TP, offset: 1 })
    ])
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
  })

  it("keeps the fetch state when re-added at the same epoch, and reports removed states", async () => {
    const p = pair()
    write(p.leaderLog, 1, 2, "a")
    p.leaderLog.updateHighWatermark(4)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 1 })
    follow(p, 1)
    await p.fetcher.runOnce()
    follow(p, 1, 0)
    expect(p.fetcher.partitionState(TP)?.fetchOffset).toBe(4)

    const removed = p.fetcher.removePartitions([TP])
    expect(removed).toHaveLength(1)
    expect(removed[0]).toMatchObject({ fetchOffset: 4, currentLeaderEpoch: 1 })
    expect(p.fetcher.partitionCount).toBe(0)
    expect((await p.fetcher.runOnce())._tag).toBe("Idle")
  })

  it("sends the replica's id, broker epoch, limits and, for a mirror topic, MirrorLeaderEpoch 0 at first", async () => {
    const p = pair()
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const inner = p.leader.endpoint(19)
    const seen: Array<{ request: Fetch.Request; version: number | undefined }> = []
    const fetcher = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 42n,
      endpoint: {
        ...inner,
        fetch: (request, version) => {
          seen.push({ request, version })
          return inner.fetch(request, version)
        }
      },
      isMirrorTopic: (topic) => topic === TOPIC
    })
    write(p.followerLog, 0, 1, "x")
    p.leaderLog.appendAsFollower(batches(p.followerLog)[0]!, 0)
    write(p.leaderLog, 0, 1, "y") // data waiting, so the leader answers at once
    fetcher.addPartitions([
      { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 0 }
    ])

    await fetcher.runOnce()

    const { request, version } = seen[0]!
    expect(version).toBe(19)
    expect(request).toMatchObject({
      replicaId: 2,
      replicaState: { replicaId: 2, replicaEpoch: 42n },
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 10 * 1024 * 1024,
      isolationLevel: 0,
      topics: [
        {
          topicId: TOPIC_ID,
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: 0,
              fetchOffset: 2n,
              lastFetchedEpoch: 0,
              partitionMaxBytes: 1024 * 1024,
              mirrorLeaderEpoch: 0
            }
          ]
        }
      ]
    })
  })

  it("falls back to Fetch v12 (topic names) for a partition without a topic id", async () => {
    const p = pair()
    write(p.leaderLog, 0, 2, "a")
    p.leaderLog.updateHighWatermark(4)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const inner = p.leader.endpoint(17)
    const versions: Array<number | undefined> = []
    const fetcher = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      config: { replicaFetchWaitMaxMs: 0 },
      endpoint: {
        ...inner,
        fetch: (request, version) => {
          versions.push(version)
          return inner.fetch(request, version)
        }
      }
    })
    fetcher.addPartitions([
      { topic: TOPIC, topicId: undefined, partition: 0, log: p.followerLog, currentLeaderEpoch: 0 }
    ])

    await runToCompletion(fetcher)

    expect(versions[0]).toBe(12)
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
  })

  it("refuses a leader that cannot speak Fetch v12", () => {
    const p = pair()
    const endpoint = { ...p.leader.endpoint(19), fetchVersion: 11 }
    expect(() => new ReplicaFetcher({ brokerId: 2, brokerEpoch: 1n, endpoint })).toThrow(/v12/)
  })

  it("runs as a loop between start() and stop()", async () => {
    const p = pair({ config: { replicaFetchBackoffMs: 5 } })
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const real = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      endpoint: p.leader.endpoint(19),
      config: { replicaFetchWaitMaxMs: 5, replicaFetchBackoffMs: 5 }
    })
    real.start()
    real.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 0 }])
    write(p.leaderLog, 0, 3, "a")
    p.leaderLog.updateHighWatermark(6)
    for (let i = 0; i < 200 && p.followerLog.logEndOffset < 6; i++) await new Promise((r) => setTimeout(r, 5))
    await real.stop()
    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
    const fetches = p.leader.fetchCount
    await new Promise((r) => setTimeout(r, 30))
    expect(p.leader.fetchCount).toBe(fetches)
  })

  it("builds batches that a follower can tell apart", () => {
    expect(batch("a")).not.toEqual(batch("b"))
  })
})

describe("ReplicaFetcher replication throttling", () => {
  it("leaves out of its Fetch the partitions the throttle holds, and reports the bytes it receives", async () => {
    let holding = true
    const recorded: Array<[string, number, number]> = []
    const p = pair({
      config: { replicaFetchMaxBytes: 300 },
      fetcher: {
        throttle: {
          shouldThrottle: () => holding,
          record: (tp, bytes) => recorded.push([tp.topic, tp.partition, bytes])
        }
      }
    })
    write(p.leaderLog, 0, 6, "a", 3)
    p.leaderLog.updateHighWatermark(p.leaderLog.logEndOffset)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    follow(p, 0)

    const held = await p.fetcher.runOnce()
    expect(held._tag).toBe("Idle")
    expect(p.followerLog.logEndOffset).toBe(0)
    expect(recorded).toEqual([])
    expect(p.leader.followerFetchOffsets.get("orders-0/2")).toBeUndefined()

    holding = false
    const fetched = await p.fetcher.runOnce()
    expect(fetched._tag).toBe("Fetched")
    expect(p.followerLog.logEndOffset).toBeGreaterThan(0)
    expect(recorded).toHaveLength(1)
    expect(recorded[0]!.slice(0, 2)).toEqual([TOPIC, 0])
    expect(recorded[0]![2]).toBeGreaterThan(0)
    expect(recorded[0]![2]).toBeLessThanOrEqual(300)
    holding = true
    const offset = p.followerLog.logEndOffset
    expect((await p.fetcher.runOnce())._tag).toBe("Idle")
    expect(p.followerLog.logEndOffset).toBe(offset)
  })
})
