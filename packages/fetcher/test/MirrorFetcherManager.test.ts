import { Buffer } from "node:buffer"
import { Errors, RecordBatch } from "@clustermirror/protocol"
import { type PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { describe, expect, it, onTestFinished, vi } from "@effect/vitest"
import type { FetchThrottle, TopicPartition } from "../src/FetcherEvents.js"
import { MemorySourceCluster, type MemorySourceClusterOptions } from "../src/MemorySourceCluster.js"
import type { MirrorFetchConfig, MirrorFetcherEvents, MirrorPartition } from "../src/MirrorFetcher.js"
import { MirrorFetcherManager, SOURCE_TOPIC_DELETED, STALE_SOURCE_EPOCH } from "../src/MirrorFetcherManager.js"
import type { SourceConnection, SourceConnector } from "../src/SourceCluster.js"
import { batch, batches } from "./Fixtures.js"

const ORDERS = "orders"
const ORDERS_ID = "q7ZJCFmRTdWpIVpLbKp6cw"
const PAYMENTS = "payments"
const PAYMENTS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
const OTHER_ID = "BBBBBBBBBBBBBBBBBBBBBg"

type Event =
  | { readonly _tag: "fetched"; readonly tp: TopicPartition; readonly logEndOffset: number; readonly reset: boolean }
  | { readonly _tag: "failed"; readonly tp: TopicPartition; readonly message: string; readonly retryable: boolean }
  | {
      readonly _tag: "dataLoss"
      readonly tp: TopicPartition
      readonly position: number
      readonly sourceLogStartOffset: number
    }
  | {
      readonly _tag: "epochAhead"
      readonly tp: TopicPartition
      readonly batchEpoch: number
      readonly sourceLeaderEpoch: number
    }
  | {
      readonly _tag: "epochNearlyAhead"
      readonly tp: TopicPartition
      readonly batchEpoch: number
      readonly sourceLeaderEpoch: number
    }

interface Destination {
  readonly log: PartitionLog.PartitionLog
  epoch: number
  onAppends: number
  /** Whether `onAppend` advances the local high watermark (a leader without followers). */
  advanceHighWatermark: boolean
  readonly partition: MirrorPartition
}

const destination = (topic: string, topicId: string, partition: number, epoch = 100): Destination => {
  const log = PartitionLogStore.makeMemoryStore().open(topic, partition, {}, topicId)
  const d: Destination = {
    log,
    epoch,
    onAppends: 0,
    advanceHighWatermark: true,
    partition: {
      topic,
      topicId,
      partition,
      log,
      destinationLeaderEpoch: () => d.epoch,
      onAppend: () => {
        d.onAppends++
        if (d.advanceHighWatermark) log.updateHighWatermark(log.logEndOffset)
      }
    }
  }
  return d
}

interface Harness {
  readonly clock: { now: number }
  readonly source: MemorySourceCluster
  readonly manager: MirrorFetcherManager
  readonly events: Event[]
  /** Bytes and records of every append reported by `fetched`. */
  readonly appended: Array<{ readonly bytes: number; readonly records: number }>
  readonly lines: string[]
}

const T0 = 1_000_000

const setup = (
  options: {
    readonly source?: MemorySourceClusterOptions
    readonly config?: Partial<MirrorFetchConfig>
    readonly failAfterMs?: number
    readonly connector?: (source: MemorySourceCluster) => SourceConnector
    readonly onFetched?: (h: Harness, tp: TopicPartition) => void
    readonly throttle?: FetchThrottle
  } = {}
): Harness => {
  const clock = { now: T0 }
  const source = new MemorySourceCluster(options.source)
  const events: Event[] = []
  const appended: Array<{ bytes: number; records: number }> = []
  const lines: string[] = []
  let harness: Harness | undefined
  const callbacks: MirrorFetcherEvents = {
    fetched: (tp, p) => {
      events.push({ _tag: "fetched", tp, logEndOffset: p.logEndOffset, reset: p.resetToSourceLogStart })
      if (p.appendedBytes > 0 || p.appendedRecords > 0)
        appended.push({ bytes: p.appendedBytes, records: p.appendedRecords })
      if (harness !== undefined) options.onFetched?.(harness, tp)
    },
    failed: (tp, f) => events.push({ _tag: "failed", tp, ...f }),
    dataLoss: (tp, l) => events.push({ _tag: "dataLoss", tp, ...l }),
    epochAhead: (tp, e) => events.push({ _tag: "epochAhead", tp, ...e }),
    epochNearlyAhead: (tp, e) => events.push({ _tag: "epochNearlyAhead", tp, ...e })
  }
  const manager = new MirrorFetcherManager({
    mirrorName: "m1",
    bootstrapServers: source.bootstrapServers,
    connector: options.connector?.(source) ?? source,
    // The source answers as soon as it has data; backoffs are short so that retries happen quickly.
    config: { mirrorFetchWaitMaxMs: 10_000, mirrorFetchBackoffMs: 2, ...options.config },
    events: callbacks,
    now: () => clock.now,
    ...(options.failAfterMs === undefined ? {} : { failAfterMs: options.failAfterMs }),
    ...(options.throttle === undefined ? {} : { throttle: options.throttle }),
    log: (line) => lines.push(line)
  })
  onTestFinished(() => manager.close())
  harness = { clock, source, manager, events, appended, lines }
  return harness
}

const eventually = (check: () => void): Promise<void> => vi.waitFor(check, { timeout: 10_000, interval: 2 })

/** Several event-loop turns: enough for any ready work to run, without waiting on time. */
const settle = async (turns = 30): Promise<void> => {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
}

const tp = (topic: string, partition: number): TopicPartition => ({ topic, partition })

const tagged = <T extends Event["_tag"]>(events: ReadonlyArray<Event>, tag: T): Array<Extract<Event, { _tag: T }>> =>
  events.filter((e): e is Extract<Event, { _tag: T }> => e._tag === tag)

/** A batch with its own offsets and epoch, for histories built by hand. */
const raw = (tag: string, baseOffset: number, epoch: number, count = 2): Buffer =>
  RecordBatch.build({
    records: Array.from({ length: count }, (_, i) => ({ value: Buffer.from(`${tag}#${i}`) })),
    baseOffset,
    partitionLeaderEpoch: epoch,
    timestamp: 1_000
  })

const produce = (h: Harness, topic: string, partition: number, n: number, tag: string): void =>
  h.source.produce(
    topic,
    partition,
    Array.from({ length: n }, (_, i) => batch(`${tag}-${i}`))
  )

const sourceBatches = (h: Harness, topic: string, partition: number): Buffer[] => {
  const log = h.source.log(topic, partition)
  return batches(log).filter((b) => RecordBatch.lastOffset(b) < log.highWatermark)
}

const fetchedPartitions = (request: {
  readonly topics: ReadonlyArray<{ readonly partitions: ReadonlyArray<unknown> }>
}) => request.topics.reduce((n, t) => n + t.partitions.length, 0)

describe("MirrorFetcherManager", () => {
  it("leaves out of its Fetches the partitions the mirror throttle holds, and reports the bytes received", async () => {
    let holding = true
    const received = new Map<number, number>()
    const h = setup({
      // The free partition's idle long poll is short, so the held one joins the next Fetch soon.
      config: { mirrorFetchWaitMaxMs: 20 },
      throttle: {
        shouldThrottle: (t) => holding && t.partition === 0,
        record: (t, bytes) => received.set(t.partition, (received.get(t.partition) ?? 0) + bytes)
      }
    })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 2, leaders: [1, 1], leaderEpoch: 1 })
    for (const p of [0, 1]) produce(h, ORDERS, p, 3, `o${p}`)
    const [held, free] = [0, 1].map((p) => destination(ORDERS, ORDERS_ID, p))
    h.manager.addPartitions([held!.partition, free!.partition])

    await eventually(() => expect(batches(free!.log)).toEqual(sourceBatches(h, ORDERS, 1)))
    await settle()
    expect(held!.log.logEndOffset).toBe(0)
    expect(
      h.source.fetches.every((f) => f.request.topics.every((t) => t.partitions.every((x) => x.partition !== 0)))
    ).toBe(true)
    expect(received.get(1)).toBe(sourceBatches(h, ORDERS, 1).reduce((n, b) => n + b.length, 0))

    holding = false
    await eventually(() => expect(batches(held!.log)).toEqual(sourceBatches(h, ORDERS, 0)))
    expect(received.get(0)).toBe(sourceBatches(h, ORDERS, 0).reduce((n, b) => n + b.length, 0))
  })

  it("copies batches byte for byte at the source offsets, one Fetch per source broker for all its partitions", async () => {
    // Given a source with orders-0/2 led by broker 1, orders-1 and payments-0 by broker 2, with gzip and
    // idempotent batches
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 3, leaders: [1, 2, 1], leaderEpoch: 4 })
    h.source.addTopic({ name: PAYMENTS, topicId: PAYMENTS_ID, partitions: 1, leaders: [2], leaderEpoch: 2 })
    for (const p of [0, 1, 2]) produce(h, ORDERS, p, 3 + p, `o${p}`)
    h.source.produce(PAYMENTS, 0, [
      RecordBatch.build({
        records: [{ value: Buffer.from("pay-1") }, { value: Buffer.from("pay-2") }],
        compression: RecordBatch.Compression.gzip,
        producerId: 42n,
        producerEpoch: 0,
        baseSequence: 0
      })
    ])
    const dests = [0, 1, 2].map((p) => destination(ORDERS, ORDERS_ID, p))
    const payments = destination(PAYMENTS, PAYMENTS_ID, 0)

    // When the partitions are added
    h.manager.addPartitions([...dests.map((d) => d.partition), payments.partition])

    // Then every destination log holds the source batches unchanged, CRCs included
    await eventually(() => {
      for (const [p, d] of dests.entries()) expect(batches(d.log)).toEqual(sourceBatches(h, ORDERS, p))
      expect(batches(payments.log)).toEqual(sourceBatches(h, PAYMENTS, 0))
    })
    for (const [p, d] of dests.entries()) {
      const copied = batches(d.log)
      expect(copied).toHaveLength(3 + p)
      for (const b of copied) expect(RecordBatch.verifyCrc(b)).toBe(true)
      expect(copied.map((b) => RecordBatch.crc(b))).toEqual(sourceBatches(h, ORDERS, p).map((b) => RecordBatch.crc(b)))
      expect(copied.map((b) => RecordBatch.partitionLeaderEpoch(b))).toEqual(copied.map(() => 4))
      expect(d.log.logEndOffset).toBe(h.source.log(ORDERS, p).logEndOffset)
      expect(d.onAppends).toBeGreaterThan(0)
    }
    const [gzipped] = batches(payments.log)
    expect(RecordBatch.compression(gzipped!)).toBe(RecordBatch.Compression.gzip)
    expect(RecordBatch.producerId(gzipped!)).toBe(42n)
    // And each source broker answered Fetches carrying both of its partitions
    expect(h.source.fetches.some((f) => f.nodeId === 1 && fetchedPartitions(f.request) === 2)).toBe(true)
    expect(h.source.fetches.some((f) => f.nodeId === 2 && fetchedPartitions(f.request) === 2)).toBe(true)
    expect(h.manager.sourceLeaderEpoch(tp(ORDERS, 0))).toBe(4)
    expect(h.manager.sourceLeaderEpoch(tp(PAYMENTS, 0))).toBe(2)
    expect(tagged(h.events, "failed")).toEqual([])
    for (const [p, d] of dests.entries()) {
      const last = tagged(h.events, "fetched")
        .filter((e) => e.tp.partition === p && e.tp.topic === ORDERS)
        .at(-1)
      expect(last?.logEndOffset).toBe(d.log.logEndOffset)
    }
  })

  it("fetches like a consumer: replica id -1, READ_UNCOMMITTED, topic ids, source epochs and the local last epoch", async () => {
    const h = setup({ config: { mirrorFetchMaxBytes: 4096, mirrorFetchMinBytes: 1 } })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 7 })
    produce(h, ORDERS, 0, 2, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(d.log.logEndOffset).toBe(4))
    await eventually(() => expect(h.source.heldFetches).toBe(1))

    const last = h.source.fetches.at(-1)!
    expect(last.version).toBe(19)
    expect(last.request).toMatchObject({
      replicaState: { replicaId: -1 },
      isolationLevel: 0,
      maxWaitMs: 10_000,
      minBytes: 1,
      maxBytes: 10 * 1024 * 1024,
      sessionId: 0,
      sessionEpoch: -1
    })
    expect(last.request.topics).toHaveLength(1)
    expect(last.request.topics[0]?.topicId).toBe(ORDERS_ID)
    expect(last.request.topics[0]?.partitions).toEqual([
      expect.objectContaining({
        partition: 0,
        currentLeaderEpoch: 7,
        fetchOffset: 4n,
        lastFetchedEpoch: 7,
        logStartOffset: -1n,
        partitionMaxBytes: 4096
      })
    ])
  })

  it("only copies up to the source high watermark", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 4, "a")
    h.source.setHighWatermark(ORDERS, 0, 4)
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(h.manager.lag(tp(ORDERS, 0))?.sourceHighWatermark).toBe(4))
    await eventually(() => expect(h.source.heldFetches).toBe(1))
    expect(d.log.logEndOffset).toBe(4)

    h.source.setHighWatermark(ORDERS, 0, 8)

    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
  })

  it("truncates a divergent suffix found by OffsetForLeaderEpoch before fetching", async () => {
    // Given a source whose epoch 1 ended at offset 4 (an unclean election at epoch 3 lost 4..5), and a
    // destination that had copied 0..5 at epoch 1
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 3 })
    const a = [raw("a", 0, 1), raw("a", 2, 1)]
    h.source.appendRaw(ORDERS, 0, [...a, raw("c", 4, 3), raw("c", 6, 3)])
    h.source.setHighWatermark(ORDERS, 0, 8)
    const d = destination(ORDERS, ORDERS_ID, 0)
    for (const b of [...a, raw("lost", 4, 1)]) d.log.appendAsFollower(Buffer.from(b), 0)
    expect(d.log.logEndOffset).toBe(6)

    // When mirroring starts
    h.manager.addPartitions([d.partition])

    // Then the log is cut at 4, the first fetch starts there, and the log ends equal to the source's
    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    const ofle = h.source.received.filter((r) => r.api === "OffsetForLeaderEpoch")
    expect(ofle.length).toBeGreaterThan(0)
    expect(h.source.fetches[0]?.request.topics[0]?.partitions[0]).toMatchObject({
      fetchOffset: 4n,
      lastFetchedEpoch: 1
    })
  })

  it("truncates on DivergingEpoch when the source has no OffsetForLeaderEpoch", async () => {
    const h = setup({ source: { maxVersions: { OffsetForLeaderEpoch: 1 } } })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 3 })
    const a = [raw("a", 0, 1), raw("a", 2, 1)]
    h.source.appendRaw(ORDERS, 0, [...a, raw("c", 4, 3)])
    h.source.setHighWatermark(ORDERS, 0, 6)
    const d = destination(ORDERS, ORDERS_ID, 0)
    for (const b of [...a, raw("lost", 4, 1), raw("lost", 6, 1)]) d.log.appendAsFollower(Buffer.from(b), 0)

    h.manager.addPartitions([d.partition])

    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(h.source.received.some((r) => r.api === "OffsetForLeaderEpoch")).toBe(false)
    expect(h.source.fetches[0]?.request.topics[0]?.partitions[0]).toMatchObject({
      fetchOffset: 8n,
      lastFetchedEpoch: 1
    })
  })

  it("reports data loss and fails non-retryable when the source deleted what was not copied yet", async () => {
    // Given a destination that copied 0..3, and a source that deleted everything below 8 since
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 2 })
    produce(h, ORDERS, 0, 6, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    for (const b of batches(h.source.log(ORDERS, 0)).slice(0, 2)) d.log.appendAsFollower(Buffer.from(b), 0)
    h.source.log(ORDERS, 0).deleteRecordsBefore(8)

    // When mirroring resumes
    h.manager.addPartitions([d.partition])

    // Then the partition fails with the data-loss reason, reported once, and its log does not jump
    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "dataLoss")).toEqual([
      { _tag: "dataLoss", tp: tp(ORDERS, 0), position: 4, sourceLogStartOffset: 8 }
    ])
    expect(tagged(h.events, "failed")).toEqual([
      {
        _tag: "failed",
        tp: tp(ORDERS, 0),
        message:
          "Data loss: the source log start 8 passed the mirror position 4 (4 records were deleted on the source before they were mirrored)",
        retryable: false
      }
    ])
    expect(h.manager.has(tp(ORDERS, 0))).toBe(false)
    expect([d.log.logStartOffset, d.log.logEndOffset]).toEqual([0, 4])
    expect(tagged(h.events, "fetched").filter((e) => e.reset)).toEqual([])
  })

  it("restarts at the source log start once the operator accepted the data loss, and reports it once", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 2 })
    produce(h, ORDERS, 0, 6, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    for (const b of batches(h.source.log(ORDERS, 0)).slice(0, 2)) d.log.appendAsFollower(Buffer.from(b), 0)
    h.source.log(ORDERS, 0).deleteRecordsBefore(8)
    let asked = 0

    h.manager.addPartitions([
      {
        ...d.partition,
        acceptDataLoss: () => {
          asked++
          return true
        }
      }
    ])

    // Then the log restarts at 8 and holds the source's batches from there
    await eventually(() => expect(d.log.logEndOffset).toBe(12))
    expect(d.log.logStartOffset).toBe(8)
    expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0)))
    expect(tagged(h.events, "fetched").filter((e) => e.reset)).toEqual([
      { _tag: "fetched", tp: tp(ORDERS, 0), logEndOffset: 8, reset: true }
    ])
    expect(asked).toBe(1)
    expect(h.source.received.some((r) => r.api === "ListOffsets")).toBe(true)
    expect(tagged(h.events, "failed")).toEqual([])
    expect(tagged(h.events, "dataLoss")).toEqual([])
  })

  it("starts a never-mirrored partition at the source log start without reporting data loss", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 2 })
    produce(h, ORDERS, 0, 6, "a")
    h.source.log(ORDERS, 0).deleteRecordsBefore(8)
    const d = destination(ORDERS, ORDERS_ID, 0)

    h.manager.addPartitions([{ ...d.partition, acceptDataLoss: () => false }])

    await eventually(() => expect(d.log.logEndOffset).toBe(12))
    expect(d.log.logStartOffset).toBe(8)
    expect(tagged(h.events, "fetched").filter((e) => e.reset)).toHaveLength(1)
    expect(tagged(h.events, "failed")).toEqual([])
    expect(tagged(h.events, "dataLoss")).toEqual([])
  })

  it("reports the bytes and records of each append", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 3, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)

    h.manager.addPartitions([d.partition])

    await eventually(() => expect(d.log.logEndOffset).toBe(6))
    const sourceBytes = batches(h.source.log(ORDERS, 0)).reduce((n, b) => n + b.length, 0)
    expect(h.appended.reduce((n, a) => n + a.bytes, 0)).toBe(sourceBytes)
    expect(h.appended.reduce((n, a) => n + a.records, 0)).toBe(6)
  })

  it("starts at the batch holding the source log start when that start is inside a batch", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 4, "a")
    h.source.log(ORDERS, 0).deleteRecordsBefore(5)
    const d = destination(ORDERS, ORDERS_ID, 0)

    h.manager.addPartitions([d.partition])

    await eventually(() => expect(d.log.logEndOffset).toBe(8))
    expect(d.log.logStartOffset).toBe(4)
    expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0)).slice(-2))
  })

  it("follows a source leader that moves to another broker", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 2, leaders: [1, 1], leaderEpoch: 0 })
    produce(h, ORDERS, 0, 2, "a")
    produce(h, ORDERS, 1, 2, "b")
    const d0 = destination(ORDERS, ORDERS_ID, 0)
    const d1 = destination(ORDERS, ORDERS_ID, 1)
    h.manager.addPartitions([d0.partition, d1.partition])
    await eventually(() => expect(d0.log.logEndOffset).toBe(4))
    await eventually(() => expect(d1.log.logEndOffset).toBe(4))

    // When orders-0 moves to broker 2 at epoch 1 and gets more data there
    h.source.moveLeader(ORDERS, 0, 2)
    produce(h, ORDERS, 0, 2, "c")
    produce(h, ORDERS, 1, 1, "d")

    // Then it is fetched from broker 2 at epoch 1, and orders-1 stays with broker 1
    await eventually(() => expect(batches(d0.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    await eventually(() => expect(batches(d1.log)).toEqual(batches(h.source.log(ORDERS, 1))))
    expect(h.manager.sourceLeaderEpoch(tp(ORDERS, 0))).toBe(1)
    expect(h.manager.sourceLeaderEpoch(tp(ORDERS, 1))).toBe(0)
    expect(batches(d0.log).map((b) => RecordBatch.partitionLeaderEpoch(b))).toEqual([0, 0, 1, 1])
    const fromBroker2 = h.source.fetches.filter((f) => f.nodeId === 2)
    expect(fromBroker2.length).toBeGreaterThan(0)
    expect(fromBroker2.every((f) => f.request.topics.every((t) => t.partitions.every((p) => p.partition === 0)))).toBe(
      true
    )
    expect(h.lines.some((l) => l.includes("source leader moved from 1 to 2"))).toBe(true)
    expect(tagged(h.events, "failed")).toEqual([])
  })

  it("learns a newer source leader epoch from sourceLeaders (the periodic refresh), ignoring older ones", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 0 })
    produce(h, ORDERS, 0, 2, "a")
    const d0 = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d0.partition])
    await eventually(() => expect(d0.log.logEndOffset).toBe(4))

    // The source elected again on the same broker; the refresh saw it before any fetch did.
    h.source.bumpLeaderEpoch(ORDERS, 0)
    const address = h.source.address(1)
    const before = h.source.received.length
    h.manager.sourceLeaders([
      { topic: ORDERS, partition: 0, leaderId: 1, leaderEpoch: 1, address },
      // Partitions this manager does not fetch are ignored.
      { topic: "unknown", partition: 0, leaderId: 1, leaderEpoch: 7, address }
    ])
    expect(h.manager.sourceLeaderEpoch(tp(ORDERS, 0))).toBe(1)
    expect(h.lines.some((l) => l.includes("source leader epoch moved from 0 to 1"))).toBe(true)
    // An older epoch (a stale answer) changes nothing.
    h.manager.sourceLeaders([{ topic: ORDERS, partition: 0, leaderId: 1, leaderEpoch: 0, address }])
    expect(h.manager.sourceLeaderEpoch(tp(ORDERS, 0))).toBe(1)

    produce(h, ORDERS, 0, 2, "b")
    await eventually(() => expect(batches(d0.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(batches(d0.log).map((b) => RecordBatch.partitionLeaderEpoch(b))).toEqual([0, 0, 1, 1])
    // The partition reconciled at the new epoch before fetching on.
    const checks = h.source.received.slice(before).filter((r) => r.api === "OffsetForLeaderEpoch")
    expect(checks.length).toBeGreaterThanOrEqual(1)
    expect(tagged(h.events, "failed")).toEqual([])
  })

  it("reports epochAhead and appends nothing when a batch epoch is above the destination epoch", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 5 })
    produce(h, ORDERS, 0, 2, "a")
    const d = destination(ORDERS, ORDERS_ID, 0, 2)

    h.manager.addPartitions([d.partition])

    await eventually(() => expect(tagged(h.events, "epochAhead")).toHaveLength(1))
    expect(tagged(h.events, "epochAhead")[0]).toEqual({
      _tag: "epochAhead",
      tp: tp(ORDERS, 0),
      batchEpoch: 5,
      sourceLeaderEpoch: 5
    })
    expect(d.log.logEndOffset).toBe(0)
    expect(d.onAppends).toBe(0)
    expect(h.manager.has(tp(ORDERS, 0))).toBe(false)

    // When the owner bumps the destination epoch (5 + 10, like the reactive bump) and adds it again
    d.epoch = 16
    h.manager.addPartitions([d.partition])

    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(tagged(h.events, "epochNearlyAhead")).toEqual([])
  })

  it("appends and reports epochNearlyAhead once per batch epoch within 3 of the destination epoch", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 5 })
    produce(h, ORDERS, 0, 1, "a")
    const d = destination(ORDERS, ORDERS_ID, 0, 7)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(d.log.logEndOffset).toBe(2))
    produce(h, ORDERS, 0, 1, "b")
    await eventually(() => expect(d.log.logEndOffset).toBe(4))

    h.source.bumpLeaderEpoch(ORDERS, 0)
    produce(h, ORDERS, 0, 1, "c")
    await eventually(() => expect(d.log.logEndOffset).toBe(6))
    d.epoch = 20
    produce(h, ORDERS, 0, 1, "d")
    await eventually(() => expect(d.log.logEndOffset).toBe(8))

    expect(tagged(h.events, "epochNearlyAhead")).toEqual([
      { _tag: "epochNearlyAhead", tp: tp(ORDERS, 0), batchEpoch: 5, sourceLeaderEpoch: 5 },
      { _tag: "epochNearlyAhead", tp: tp(ORDERS, 0), batchEpoch: 6, sourceLeaderEpoch: 6 }
    ])
    expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0)))
    expect(tagged(h.events, "epochAhead")).toEqual([])
  })

  it("fails a partition whose batches carry an epoch above the known source epoch, after reading metadata again", async () => {
    // Given an old source broker serving batches of epoch 4 while its metadata still says epoch 2
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 2 })
    h.source.appendRaw(ORDERS, 0, [raw("a", 0, 2), raw("b", 2, 4)])
    h.source.setHighWatermark(ORDERS, 0, 4)
    const d = destination(ORDERS, ORDERS_ID, 0)

    h.manager.addPartitions([d.partition])

    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "failed")[0]).toEqual({
      _tag: "failed",
      tp: tp(ORDERS, 0),
      message: STALE_SOURCE_EPOCH,
      retryable: true
    })
    expect(d.log.logEndOffset).toBe(0)
    const apis = h.source.received.map((r) => r.api)
    expect(apis.lastIndexOf("Metadata")).toBeGreaterThan(apis.indexOf("Fetch"))
    expect(h.manager.has(tp(ORDERS, 0))).toBe(false)
  })

  it("fails partitions after failAfterMs while the source is down, and resumes when added again", async () => {
    const h = setup({ failAfterMs: 10_000 })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 2, leaders: [1, 2] })
    produce(h, ORDERS, 0, 1, "a")
    produce(h, ORDERS, 1, 1, "b")
    const d0 = destination(ORDERS, ORDERS_ID, 0)
    const d1 = destination(ORDERS, ORDERS_ID, 1)
    h.manager.addPartitions([d0.partition, d1.partition])
    await eventually(() => expect(d0.log.logEndOffset + d1.log.logEndOffset).toBe(4))

    // When the whole source goes down, the partitions retry (no failure before failAfterMs)
    h.source.setDown(true)
    const attempts = h.source.connectAttempts
    await eventually(() => expect(h.source.connectAttempts).toBeGreaterThan(attempts + 4))
    expect(tagged(h.events, "failed")).toEqual([])
    expect(h.manager.has(tp(ORDERS, 0))).toBe(true)

    // Then once failAfterMs passed, both fail with the cause
    h.clock.now += 10_000
    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(2))
    for (const f of tagged(h.events, "failed")) {
      expect(f.message).toMatch(/^Failed to get source metadata: connection to source-\d:9092 refused$/)
      expect(f.retryable).toBe(true)
    }
    expect(h.manager.partitionCount).toBe(0)

    // And when the source is back and the partitions are added again, mirroring resumes
    h.source.setDown(false)
    produce(h, ORDERS, 0, 1, "c")
    h.manager.addPartitions([d0.partition, d1.partition])
    await eventually(() => expect(batches(d0.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    await eventually(() => expect(batches(d1.log)).toEqual(batches(h.source.log(ORDERS, 1))))
  })

  it("fails with the fetch IO error when only the leader broker cannot be reached", async () => {
    const h = setup({ failAfterMs: 5_000 })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [2] })
    produce(h, ORDERS, 0, 1, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(d.log.logEndOffset).toBe(2))

    // When the network to broker 2 breaks while the source still names it leader
    const attempts = h.source.connectAttempts
    h.source.setBrokerUnreachable(2, true)
    await eventually(() => expect(h.source.connectAttempts).toBeGreaterThan(attempts + 3))
    expect(tagged(h.events, "failed")).toEqual([])
    h.clock.now += 5_000

    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "failed")[0]).toEqual({
      _tag: "failed",
      tp: tp(ORDERS, 0),
      message: "Fetch IO error: connection to source-2:9092 refused",
      retryable: true
    })
  })

  it("retries transient request failures without failing", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 3, "a")
    h.source.failNextRequests = 4
    const d = destination(ORDERS, ORDERS_ID, 0)

    h.manager.addPartitions([d.partition])

    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(h.source.failNextRequests).toBe(0)
    expect(tagged(h.events, "failed")).toEqual([])
  })

  it("reports a deleted source topic as failed, not retryable", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 1, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(d.log.logEndOffset).toBe(2))

    h.source.deleteTopic(ORDERS)

    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "failed")[0]).toEqual({
      _tag: "failed",
      tp: tp(ORDERS, 0),
      message: SOURCE_TOPIC_DELETED,
      retryable: false
    })
    expect(d.log.logEndOffset).toBe(2)
  })

  it("speaks older sources by topic name and detects a recreated source topic by its id", async () => {
    // Given a source with Metadata v11 (names in requests, ids in answers) and Fetch v12 (names)
    const h = setup({ source: { maxVersions: { Metadata: 11, Fetch: 12, OffsetForLeaderEpoch: 3, ListOffsets: 5 } } })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1], leaderEpoch: 3 })
    produce(h, ORDERS, 0, 3, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(h.source.fetches.every((f) => f.version === 12 && f.request.topics[0]?.topic === ORDERS)).toBe(true)
    expect(h.source.received.filter((r) => r.api === "Metadata").every((r) => r.version === 11)).toBe(true)

    // When the source topic is deleted and created again under the same name
    h.source.deleteTopic(ORDERS)
    h.source.addTopic({ name: ORDERS, topicId: OTHER_ID, partitions: 1, leaders: [1], leaderEpoch: 0 })
    h.source.notify()

    // Then the partition fails as deleted, and nothing is truncated
    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "failed")[0]).toMatchObject({ message: SOURCE_TOPIC_DELETED, retryable: false })
    expect(d.log.logEndOffset).toBe(6)
  })

  it("fails partitions on a source without Fetch v12", async () => {
    const h = setup({ source: { maxVersions: { Fetch: 11 } } })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "failed")[0]?.message).toMatch(/^Fetch IO error: .*Fetch up to v11.*v12\+$/)
  })

  it("keeps lag in offsets (against the local high watermark) and in time (since last caught up)", async () => {
    // Each fetched event moves the clock by 100 ms and records the lag at that moment.
    const seen: Array<{ logEndOffset: number; lag: number; lagMs: number }> = []
    const h = setup({
      config: { mirrorFetchMaxBytes: 1 },
      onFetched: (harness, at) => {
        const lag = harness.manager.lag(at)!
        seen.push({ logEndOffset: lag.logEndOffset, lag: lag.lag, lagMs: lag.lagMs })
        harness.clock.now += 100
      }
    })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 1, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    expect(h.manager.lag(tp(ORDERS, 0))).toBeUndefined()
    h.manager.addPartitions([d.partition])
    // Added, never answered: the offset lag is unknown (not 0: nothing says it caught up), the time lag counts
    // from the add.
    expect(h.manager.lag(tp(ORDERS, 0))).toEqual({ sourceHighWatermark: -1, logEndOffset: 0, lag: -1, lagMs: 0 })
    h.clock.now += 50
    expect(h.manager.lag(tp(ORDERS, 0))?.lagMs).toBe(50)
    await eventually(() => expect(seen).toHaveLength(1))
    expect(seen[0]).toEqual({ logEndOffset: 2, lag: 0, lagMs: 0 })
    await eventually(() => expect(h.source.heldFetches).toBe(1))

    // When three batches arrive at once and each answer carries one of them
    produce(h, ORDERS, 0, 3, "b")

    // Then the time lag counts from the last answer that found the log caught up
    await eventually(() => expect(seen).toHaveLength(4))
    expect(seen.slice(1)).toEqual([
      { logEndOffset: 4, lag: 4, lagMs: 100 },
      { logEndOffset: 6, lag: 2, lagMs: 200 },
      { logEndOffset: 8, lag: 0, lagMs: 0 }
    ])

    // And the offset lag follows the local high watermark, not the log end
    d.advanceHighWatermark = false
    produce(h, ORDERS, 0, 1, "c")
    await eventually(() => expect(seen).toHaveLength(5))
    expect(seen[4]).toEqual({ logEndOffset: 10, lag: 2, lagMs: 0 })
  })

  it("stops appending to removed partitions", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 2, leaders: [1, 1] })
    produce(h, ORDERS, 0, 1, "a")
    produce(h, ORDERS, 1, 1, "b")
    const d0 = destination(ORDERS, ORDERS_ID, 0)
    const d1 = destination(ORDERS, ORDERS_ID, 1)
    h.manager.addPartitions([d0.partition, d1.partition])
    await eventually(() => expect(d0.log.logEndOffset + d1.log.logEndOffset).toBe(4))

    h.manager.removePartitions([tp(ORDERS, 0)])
    const fetchesBefore = h.source.fetches.length
    produce(h, ORDERS, 0, 2, "c")
    produce(h, ORDERS, 1, 2, "d")

    // orders-1, fetched by the same fetcher, got the new data: a fetch round ran after the produce
    await eventually(() => expect(d1.log.logEndOffset).toBe(6))
    expect(d0.log.logEndOffset).toBe(2)
    expect(h.manager.has(tp(ORDERS, 0))).toBe(false)
    expect(h.manager.lag(tp(ORDERS, 0))).toBeUndefined()
    expect(h.manager.partitionCount).toBe(1)
    const after = h.source.fetches.slice(fetchesBefore)
    expect(after.length).toBeGreaterThan(0)
    for (const f of after) expect(f.request.topics.flatMap((t) => t.partitions.map((p) => p.partition))).toEqual([1])
  })

  it("keeps the fetch state when a partition is added again with the same log, and starts over with a new log", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 2, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(d.log.logEndOffset).toBe(4))
    const metadataRequests = h.source.received.filter((r) => r.api === "Metadata").length

    let appends = 0
    h.manager.addPartitions([{ ...d.partition, onAppend: () => appends++ }])
    produce(h, ORDERS, 0, 1, "b")
    await eventually(() => expect(d.log.logEndOffset).toBe(6))
    expect(appends).toBe(1)
    expect(h.source.received.filter((r) => r.api === "Metadata")).toHaveLength(metadataRequests)

    const fresh = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([fresh.partition])
    await eventually(() => expect(batches(fresh.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(h.manager.partitionCount).toBe(1)
  })

  it("long-polls at the source while idle instead of sending fetches", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 1, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(d.log.logEndOffset).toBe(2))
    await eventually(() => expect(h.source.heldFetches).toBe(1))

    const fetches = h.source.fetches.length
    await settle()

    expect(h.source.fetches.length).toBe(fetches)
    expect(h.source.heldFetches).toBe(1)
    expect(h.source.fetches.at(-1)?.request.maxWaitMs).toBe(10_000)
    produce(h, ORDERS, 0, 1, "b")
    await eventually(() => expect(d.log.logEndOffset).toBe(4))
  })

  it("close() stops every fetcher and closes every connection", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 2, leaders: [1, 2] })
    produce(h, ORDERS, 0, 1, "a")
    produce(h, ORDERS, 1, 1, "b")
    const d0 = destination(ORDERS, ORDERS_ID, 0)
    const d1 = destination(ORDERS, ORDERS_ID, 1)
    h.manager.addPartitions([d0.partition, d1.partition])
    await eventually(() => expect(h.source.heldFetches).toBe(2))

    await h.manager.close()

    expect(h.source.connections.size).toBe(0)
    expect(h.source.heldFetches).toBe(0)
    expect(h.manager.partitionCount).toBe(0)
    expect(h.manager.has(tp(ORDERS, 0))).toBe(false)
    const received = h.source.received.length
    produce(h, ORDERS, 0, 1, "c")
    h.manager.addPartitions([d0.partition])
    await settle()
    expect(d0.log.logEndOffset).toBe(2)
    expect(h.source.received.length).toBe(received)
  })

  it("fails a partition whose appends the local log rejects, with the storage error", async () => {
    const h = setup()
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 1, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    const broken: PartitionLog.PartitionLog = new Proxy(d.log, {
      get: (target, prop, receiver) =>
        prop === "appendAsFollower"
          ? () => {
              throw Object.assign(new Error("disk full"), { errorCode: Errors.ErrorCode.KAFKA_STORAGE_ERROR })
            }
          : Reflect.get(target, prop, receiver)
    })
    h.manager.addPartitions([{ ...d.partition, log: broken }])
    await eventually(() => expect(tagged(h.events, "failed")).toHaveLength(1))
    expect(tagged(h.events, "failed")[0]).toEqual({
      _tag: "failed",
      tp: tp(ORDERS, 0),
      message: "Storage error: disk full",
      retryable: true
    })
  })

  it("uses a wrapped connector's negotiated versions", async () => {
    // A connector in front of the source that only negotiates Fetch v13 (topic ids, no ReplicaState).
    const wrap = (source: MemorySourceCluster): SourceConnector => ({
      connect: async (host, port) => {
        const inner = await source.connect(host, port)
        const connection: SourceConnection = {
          request: (api, body, version) => inner.request(api, body, version),
          versionFor: (api) => (api.name === "Fetch" ? 13 : inner.versionFor(api)),
          close: () => inner.close()
        }
        return connection
      }
    })
    const h = setup({ connector: wrap })
    h.source.addTopic({ name: ORDERS, topicId: ORDERS_ID, partitions: 1, leaders: [1] })
    produce(h, ORDERS, 0, 2, "a")
    const d = destination(ORDERS, ORDERS_ID, 0)
    h.manager.addPartitions([d.partition])
    await eventually(() => expect(batches(d.log)).toEqual(batches(h.source.log(ORDERS, 0))))
    expect(h.source.fetches.every((f) => f.version === 13 && f.request.replicaId === -1)).toBe(true)
  })
})
