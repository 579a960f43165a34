import { MetadataRecords } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type * as MetadataDelta from "../src/MetadataDelta.js"
import * as MetadataImage from "../src/MetadataImage.js"
import * as MetadataProvenance from "../src/MetadataProvenance.js"
import * as MetadataPublisher from "../src/MetadataPublisher.js"
import { recordsWithCuts, splitAt, uuid } from "./arbitrary.js"

type MetadataRecord = MetadataRecords.MetadataRecord

interface Update {
  readonly delta: MetadataDelta.MetadataDelta
  readonly image: MetadataImage.MetadataImage
  readonly manifest: MetadataPublisher.LoaderManifest
}

const recorder = (name: string, log: Array<string>) => {
  const updates: Update[] = []
  const publisher: MetadataPublisher.MetadataPublisher = {
    name,
    onMetadataUpdate: (delta, image, manifest) =>
      Effect.sync(() => {
        updates.push({ delta, image, manifest })
        log.push(`${name}@${manifest.provenance.lastOffset}`)
      })
  }
  return { publisher, updates }
}

/** Batches at consecutive offsets, one provenance each. */
const batchesOf = (
  chunks: ReadonlyArray<ReadonlyArray<MetadataRecord>>,
  start = 0
): MetadataPublisher.MetadataBatch[] => {
  let next = start
  return chunks.map((records) => {
    next += Math.max(records.length, 1)
    return { records, provenance: MetadataProvenance.make(next - 1, 1, 1000 + next) }
  })
}

const T = uuid(1)
const topic = MetadataRecords.make("TopicRecord", { name: "orders", topicId: T })
const part = MetadataRecords.make("PartitionRecord", { topicId: T, partitionId: 0, replicas: [1], isr: [1], leader: 1 })

describe("MetadataLoader", () => {
  it.effect("publishes one delta per commit to every publisher in order, with the batch provenance", () =>
    Effect.gen(function* () {
      const log: string[] = []
      const a = recorder("a", log)
      const b = recorder("b", log)
      const loader = yield* MetadataPublisher.make()
      yield* loader.installPublishers([a.publisher, b.publisher])
      yield* loader.handleCommit(batchesOf([[topic], [part]]))
      expect(log).toEqual(["a@1", "b@1"])
      const u = a.updates[0]!
      expect(u.manifest).toEqual({
        _tag: "LogDelta",
        provenance: MetadataProvenance.make(1, 1, 1002),
        numBatches: 2,
        numRecords: 2
      })
      expect(u.delta.createdTopicIds()).toEqual(new Set([T]))
      expect(u.delta.localChanges(1).leaders.map((p) => p.topicName)).toEqual(["orders"])
      expect(yield* loader.image).toBe(u.image)
      expect(MetadataImage.topicByName(u.image, "orders")?.partitions.size).toBe(1)
    })
  )

  it.effect("skips batches it already loaded", () =>
    Effect.gen(function* () {
      const log: string[] = []
      const a = recorder("a", log)
      const loader = yield* MetadataPublisher.make()
      yield* loader.installPublishers([a.publisher])
      const batches = batchesOf([[topic], [part]])
      yield* loader.handleCommit(batches)
      yield* loader.handleCommit(batches)
      yield* loader.handleCommit([batches[1]!])
      expect(log).toEqual(["a@1"])
    })
  )

  it.effect("publishes a metadata transaction only whole", () =>
    Effect.gen(function* () {
      const log: string[] = []
      const a = recorder("a", log)
      const loader = yield* MetadataPublisher.make()
      yield* loader.installPublishers([a.publisher])
      const begin = MetadataRecords.make("BeginTransactionRecord", { name: "create" })
      const end = MetadataRecords.make("EndTransactionRecord", {})
      const [b1, b2, b3] = batchesOf([[begin, topic], [part], [end]])
      yield* loader.handleCommit([b1!])
      yield* loader.handleCommit([b2!])
      expect(log).toEqual([])
      expect((yield* loader.image).topics.byId.size).toBe(0)
      yield* loader.handleCommit([b3!])
      expect(log).toEqual(["a@3"])
      expect(a.updates[0]!.manifest).toMatchObject({ numBatches: 3, numRecords: 4 })
    })
  )

  it.effect("drops an aborted metadata transaction and publishes the records around it", () =>
    Effect.gen(function* () {
      const log: string[] = []
      const a = recorder("a", log)
      const loader = yield* MetadataPublisher.make()
      yield* loader.installPublishers([a.publisher])
      const other = uuid(2)
      const kept = MetadataRecords.make("TopicRecord", { name: "kept", topicId: other })
      const begin = MetadataRecords.make("BeginTransactionRecord", { name: "create" })
      const abort = MetadataRecords.make("AbortTransactionRecord", { reason: "controller failover" })
      const [b1, b2] = batchesOf([
        [kept, begin, topic],
        [part, abort]
      ])
      yield* loader.handleCommit([b1!])
      // The record before the Begin is whole: published alone, the transaction waits.
      expect(log).toEqual(["a@0"])
      expect([...(yield* loader.image).topics.byName.keys()]).toEqual(["kept"])
      yield* loader.handleCommit([b2!])
      expect(log).toEqual(["a@0", "a@4"])
      const image = yield* loader.image
      expect([...image.topics.byName.keys()]).toEqual(["kept"])
      expect(image.provenance.lastOffset).toBe(4)
    })
  )

  it.effect("never exposes a transaction torn at the tail of what was loaded, whatever the batch split", () =>
    Effect.gen(function* () {
      const begin = MetadataRecords.make("BeginTransactionRecord", { name: "create" })
      const end = MetadataRecords.make("EndTransactionRecord", {})
      const records = [begin, topic, part, end]
      for (let cut = 1; cut < records.length; cut++) {
        const loader = yield* MetadataPublisher.make()
        const [first, second] = batchesOf([records.slice(0, cut), records.slice(cut)])
        yield* loader.handleCommit([first!])
        expect((yield* loader.image).topics.byId.size, String(cut)).toBe(0)
        yield* loader.handleCommit([second!])
        expect((yield* loader.image).topics.byName.get("orders")?.partitions.size, String(cut)).toBe(1)
      }
    })
  )

  it.effect("refuses an End or Abort without a Begin, and a nested Begin", () =>
    Effect.gen(function* () {
      const begin = MetadataRecords.make("BeginTransactionRecord", { name: "x" })
      for (const records of [
        [MetadataRecords.make("EndTransactionRecord", {})],
        [MetadataRecords.make("AbortTransactionRecord", { reason: null })],
        [begin, begin]
      ]) {
        const loader = yield* MetadataPublisher.make()
        const exit = yield* Effect.exit(loader.handleCommit(batchesOf([records])))
        expect(exit._tag, records.map((r) => r.type).join()).toBe("Failure")
      }
    })
  )

  it.effect("a late publisher first receives the whole image as a snapshot", () =>
    Effect.gen(function* () {
      const log: string[] = []
      const loader = yield* MetadataPublisher.make()
      yield* loader.handleCommit(batchesOf([[topic, part]]))
      const late = recorder("late", log)
      yield* loader.installPublishers([late.publisher])
      const u = late.updates[0]!
      expect(u.manifest).toEqual({ _tag: "Snapshot", provenance: MetadataProvenance.make(1, 1, 1002) })
      expect(u.delta.image).toBe(MetadataImage.empty)
      expect(u.delta.localChanges(1).leaders.map((p) => p.partitionId)).toEqual([0])
      expect(u.image).toBe(yield* loader.image)
      yield* loader.removePublisher("late")
      yield* loader.handleCommit(batchesOf([[MetadataRecords.make("NoOpRecord", {})]], 2))
      expect(log).toEqual(["late@1"])
    })
  )

  it.effect("a snapshot replaces the image", () =>
    Effect.gen(function* () {
      const log: string[] = []
      const a = recorder("a", log)
      const loader = yield* MetadataPublisher.make()
      yield* loader.installPublishers([a.publisher])
      yield* loader.loadSnapshot([topic, part], MetadataProvenance.make(10, 2, 5))
      expect(a.updates[0]!.manifest).toEqual({ _tag: "Snapshot", provenance: MetadataProvenance.make(10, 2, 5) })
      expect((yield* loader.image).provenance.lastOffset).toBe(10)
      expect((yield* loader.image).topics.byId.has(T)).toBe(true)
    })
  )

  it("batch-split invariance through the loader: any commit grouping ends in the same image", async () => {
    await fc.assert(
      fc.asyncProperty(
        recordsWithCuts(40),
        fc.array(fc.boolean(), { maxLength: 80 }),
        async ({ records, cuts }, groups) =>
          Effect.runPromise(
            Effect.gen(function* () {
              const chunks = splitAt(records, cuts)
              const batches = batchesOf(chunks)
              const single = yield* MetadataPublisher.make()
              yield* single.handleCommit(batchesOf([records.length === 0 ? [] : records]))
              const split = yield* MetadataPublisher.make()
              for (const group of splitAt(batches, groups)) yield* split.handleCommit(group)
              const a = yield* single.image
              const b = yield* split.image
              expect({ ...b, provenance: a.provenance }).toEqual(a)
            })
          )
      ),
      { numRuns: 100 }
    )
  })
})
