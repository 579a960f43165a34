import { Buffer } from "node:buffer"
import { RecordBatch } from "@clustermirror/protocol"
import { PartitionLogStore } from "@clustermirror/storage"
import { describe, expect, it, vi } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { MemorySourceCluster } from "../src/MemorySourceCluster.js"
import { MirrorFetcherManager } from "../src/MirrorFetcherManager.js"
import { batches } from "./Fixtures.js"

const TOPIC = "orders"
const TOPIC_ID = "q7ZJCFmRTdWpIVpLbKp6cw"

/**
 * A source partition history: epochs rising in steps, each with some batches (plain, gzip, or from an
 * idempotent producer); a high watermark at some batch boundary; and a destination that already copied a
 * prefix below it, possibly followed by a suffix the source no longer has (written at the epoch that the
 * source ended there, as after an unclean election on the source).
 */
interface BatchSpec {
  readonly records: number
  readonly gzip: boolean
  readonly idempotent: boolean
}

interface History {
  readonly epochs: ReadonlyArray<{ readonly gap: number; readonly batches: ReadonlyArray<BatchSpec> }>
  readonly hwPick: number
  readonly prefixPick: number
  readonly diverge: boolean
  readonly divergentRecords: number
  readonly partitionMaxBytes: number
  readonly brokers: number
}

const historyArb: fc.Arbitrary<History> = fc.record({
  epochs: fc.array(
    fc.record({
      gap: fc.integer({ min: 1, max: 3 }),
      batches: fc.array(
        fc.record({ records: fc.integer({ min: 1, max: 4 }), gzip: fc.boolean(), idempotent: fc.boolean() }),
        { minLength: 1, maxLength: 4 }
      )
    }),
    { minLength: 1, maxLength: 5 }
  ),
  hwPick: fc.nat(),
  prefixPick: fc.nat(),
  diverge: fc.boolean(),
  divergentRecords: fc.integer({ min: 1, max: 5 }),
  partitionMaxBytes: fc.constantFrom(1, 200, 1 << 20),
  brokers: fc.integer({ min: 1, max: 2 })
})

interface Built {
  readonly source: ReadonlyArray<Buffer>
  readonly epochs: ReadonlyArray<number>
  readonly leaderEpoch: number
}

const build = (h: History): Built => {
  const source: Buffer[] = []
  const epochs: number[] = []
  let offset = 0
  let epoch = 0
  let sequence = 0
  for (const step of h.epochs) {
    epoch += step.gap
    for (const [i, b] of step.batches.entries()) {
      source.push(
        RecordBatch.build({
          records: Array.from({ length: b.records }, (_, r) => ({ value: Buffer.from(`e${epoch}-${i}-${r}`) })),
          baseOffset: offset,
          partitionLeaderEpoch: epoch,
          timestamp: 1_000 + offset,
          compression: b.gzip ? RecordBatch.Compression.gzip : RecordBatch.Compression.none,
          ...(b.idempotent ? { producerId: 7n, producerEpoch: 0, baseSequence: sequence } : {})
        })
      )
      if (b.idempotent) sequence += b.records
      epochs.push(epoch)
      offset += b.records
    }
  }
  return { source, epochs, leaderEpoch: epoch }
}

const endOf = (bs: ReadonlyArray<Buffer>): number =>
  bs.length === 0 ? 0 : RecordBatch.lastOffset(bs[bs.length - 1]!) + 1

describe("MirrorFetcher properties", () => {
  it("leaves the destination log equal to the source log up to the source high watermark, batch for batch", async () => {
    await fc.assert(
      fc.asyncProperty(historyArb, async (h) => {
        const { source: history, epochs, leaderEpoch } = build(h)
        const hwBatches = h.hwPick % (history.length + 1)
        const copied = h.prefixPick % (hwBatches + 1)
        const highWatermark = endOf(history.slice(0, hwBatches))

        const cluster = new MemorySourceCluster({ brokers: h.brokers === 1 ? [1] : [1, 2] })
        cluster.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 1, leaders: [h.brokers], leaderEpoch })
        cluster.appendRaw(TOPIC, 0, history)
        cluster.setHighWatermark(TOPIC, 0, highWatermark)

        const log = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
        for (const b of history.slice(0, copied)) log.appendAsFollower(Buffer.from(b), 0)
        // A suffix the source does not have can only exist where the source's epoch changed.
        if (h.diverge && copied >= 1 && copied < history.length && epochs[copied]! > epochs[copied - 1]!)
          log.appendAsFollower(
            RecordBatch.build({
              records: Array.from({ length: h.divergentRecords }, (_, r) => ({ value: Buffer.from(`lost-${r}`) })),
              baseOffset: endOf(history.slice(0, copied)),
              partitionLeaderEpoch: epochs[copied - 1]!,
              timestamp: 1
            }),
            0
          )

        const failures: string[] = []
        const manager = new MirrorFetcherManager({
          mirrorName: "m1",
          bootstrapServers: cluster.bootstrapServers,
          connector: cluster,
          config: { mirrorFetchWaitMaxMs: 10_000, mirrorFetchBackoffMs: 1, mirrorFetchMaxBytes: h.partitionMaxBytes },
          events: {
            fetched: () => {},
            failed: (_, f) => failures.push(f.message),
            epochAhead: (_, e) => failures.push(`epoch ahead ${e.batchEpoch}`),
            epochNearlyAhead: () => {}
          }
        })
        try {
          manager.addPartitions([
            {
              topic: TOPIC,
              topicId: TOPIC_ID,
              partition: 0,
              log,
              destinationLeaderEpoch: () => leaderEpoch + 10,
              onAppend: () => log.updateHighWatermark(log.logEndOffset)
            }
          ])
          const expected = history.slice(0, hwBatches)
          await vi.waitFor(
            () => {
              expect(failures).toEqual([])
              expect(batches(log)).toEqual(expected)
            },
            { timeout: 10_000, interval: 1 }
          )
          expect(log.logEndOffset).toBe(highWatermark)
          // Caught up once the source answered with records; -1 (unknown) while a long poll with nothing to
          // copy has not answered yet.
          const lag = manager.lag({ topic: TOPIC, partition: 0 })?.lag
          if (hwBatches > copied) expect(lag).toBe(0)
          else expect([-1, 0]).toContain(lag)
        } finally {
          await manager.close()
        }
      }),
      { numRuns: 60 }
    )
  })
})
