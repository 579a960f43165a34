import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { MetadataRecords, RecordBatch } from "@clustermirror/protocol"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Option } from "effect"
import * as MetadataImage from "../src/MetadataImage.js"
import * as MetadataLog from "../src/MetadataLog.js"
import * as MetadataProvenance from "../src/MetadataProvenance.js"
import * as MetadataPublisher from "../src/MetadataPublisher.js"
import * as Snapshot from "../src/Snapshot.js"
import { uuid } from "./arbitrary.js"

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "metadata-log-test-"))
let dirs = 0
const tempDir = (): string => path.join(tmpRoot, `d${dirs++}`)
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }))

const logDir = (dataDir: string): string => path.join(dataDir, "__cluster_metadata-0")

const topicRecords = (n: number): MetadataRecords.MetadataRecord[] => [
  MetadataRecords.make("TopicRecord", { name: `t${n}`, topicId: uuid(n) }),
  MetadataRecords.make("PartitionRecord", {
    topicId: uuid(n),
    partitionId: 0,
    replicas: [1, 2],
    isr: [1, 2],
    leader: 1,
    leaderEpoch: 0,
    partitionEpoch: 0
  })
]
const bump = (n: number) =>
  MetadataRecords.make("PartitionChangeRecord", { topicId: uuid(n), partitionId: 0, leader: 2, isr: [2] })

/** Loads a log into a fresh loader and returns the image. */
const load = (log: MetadataLog.MetadataLogService) =>
  Effect.gen(function* () {
    const loader = yield* MetadataPublisher.make()
    return yield* log.loadInto(loader)
  })

const topicNames = (image: MetadataImage.MetadataImage): string[] => [...image.topics.byName.keys()].sort()

describe("MetadataLog on files", () => {
  it.effect("appends one flushed batch per call and reads it back", () =>
    Effect.gen(function* () {
      const log = yield* MetadataLog.makeFile(tempDir())
      const first = yield* log.append(topicRecords(1), 3)
      expect(first).toMatchObject({ baseOffset: 0, lastOffset: 1 })
      expect(first.provenance).toMatchObject({ lastOffset: 1, lastEpoch: 3 })
      const second = yield* log.append([bump(1)], 3)
      expect(second).toMatchObject({ baseOffset: 2, lastOffset: 2 })
      expect(yield* log.logEndOffset).toBe(3)
      expect(yield* log.latestEpoch).toBe(3)
      const read = yield* log.readFrom(0)
      expect(read.batches).toHaveLength(2)
      expect(read.highWatermark).toBe(3)
      const batches = Either.getOrThrow(MetadataLog.decodeBatches(read.records))
      expect(batches.map((b) => b.records.map((r) => r.type))).toEqual([
        ["TopicRecord", "PartitionRecord"],
        ["PartitionChangeRecord"]
      ])
      expect(batches[1]!.provenance).toEqual(second.provenance)
      expect(yield* log.append([], 3)).toMatchObject({ baseOffset: 3, lastOffset: 2 })
      yield* log.close
    })
  )

  it.effect("reopens with every appended record, without a clean close", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const log = yield* MetadataLog.makeFile(dir)
      for (let i = 1; i <= 5; i++) yield* log.append(topicRecords(i), 1)
      yield* log.append([bump(2)], 2)
      // No close: the appends were fsynced.
      const image = yield* load(yield* MetadataLog.makeFile(dir))
      expect(topicNames(image)).toEqual(["t1", "t2", "t3", "t4", "t5"])
      expect(MetadataImage.partition(image, uuid(2), 0)).toMatchObject({ leader: 2, leaderEpoch: 1 })
      expect(image.provenance).toMatchObject({ lastOffset: 10, lastEpoch: 2 })
    })
  )

  it.effect("restarts from the latest snapshot plus the log tail", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const log = yield* MetadataLog.makeFile(dir)
      const loader = yield* MetadataPublisher.make()
      for (let i = 1; i <= 3; i++) {
        const { provenance } = yield* log.append(topicRecords(i), 1)
        yield* loader.handleCommit([{ records: topicRecords(i), provenance }])
      }
      const atSnapshot = yield* loader.image
      yield* log.writeSnapshot(atSnapshot, 6)
      expect(fs.readdirSync(logDir(dir))).toContain("00000000000000000006-0000000001.checkpoint")
      yield* log.append([bump(1)], 2)
      yield* log.append(topicRecords(4), 2)
      yield* log.close

      const reopened = yield* MetadataLog.makeFile(dir)
      const snapshot = Option.getOrThrow(yield* reopened.latestSnapshot)
      expect(snapshot.endOffset).toBe(6)
      expect(Snapshot.recordsToImage(snapshot.records, snapshot.provenance)).toEqual(atSnapshot)
      const published: string[] = []
      const restarted = yield* MetadataPublisher.make()
      yield* restarted.installPublishers([
        {
          name: "probe",
          onMetadataUpdate: (_delta, image, manifest) =>
            Effect.sync(() => published.push(`${manifest._tag}@${image.provenance.lastOffset}`))
        }
      ])
      const image = yield* reopened.loadInto(restarted)
      expect(published).toEqual(["Snapshot@5", "LogDelta@8"])
      expect(topicNames(image)).toEqual(["t1", "t2", "t3", "t4"])
      expect(MetadataImage.partition(image, uuid(1), 0)).toMatchObject({ leader: 2, leaderEpoch: 1 })
      // The same image as replaying the whole log from the start.
      fs.rmSync(path.join(logDir(dir), "00000000000000000006-0000000001.checkpoint"))
      expect(yield* load(yield* MetadataLog.makeFile(dir))).toEqual(image)
    })
  )

  it.effect("a torn tail is cut by storage recovery; the log goes on from the last whole batch", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const log = yield* MetadataLog.makeFile(dir)
      yield* log.append(topicRecords(1), 1)
      yield* log.append(topicRecords(2), 1)
      const segment = path.join(logDir(dir), "00000000000000000000.log")
      const size = fs.statSync(segment).size
      fs.truncateSync(segment, size - 7)
      const reopened = yield* MetadataLog.makeFile(dir)
      expect(yield* reopened.logEndOffset).toBe(2)
      expect(topicNames(yield* load(reopened))).toEqual(["t1"])
      expect(yield* reopened.append(topicRecords(3), 2)).toMatchObject({ baseOffset: 2, lastOffset: 3 })
      expect(topicNames(yield* load(yield* MetadataLog.makeFile(dir)))).toEqual(["t1", "t3"])
    })
  )

  it.effect("a metadata transaction torn at the log tail is not loaded; its Abort lets the log go on", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const log = yield* MetadataLog.makeFile(dir)
      yield* log.append(topicRecords(1), 1)
      yield* log.append([MetadataRecords.make("BeginTransactionRecord", { name: "start" }), ...topicRecords(2)], 1)
      yield* log.close
      const reopened = yield* MetadataLog.makeFile(dir)
      const torn = yield* load(reopened)
      expect(topicNames(torn)).toEqual(["t1"])
      expect(torn.provenance.lastOffset).toBe(1)
      yield* reopened.append([MetadataRecords.make("AbortTransactionRecord", { reason: "failover" })], 2)
      yield* reopened.append(topicRecords(3), 2)
      const after = yield* load(reopened)
      expect(topicNames(after)).toEqual(["t1", "t3"])
      expect(after.provenance.lastOffset).toBe(yield* Effect.map(reopened.logEndOffset, (end) => end - 1))
    })
  )

  it.effect("a follower appends fetched bytes unchanged, skips repeats and rejects gaps", () =>
    Effect.gen(function* () {
      const leader = yield* MetadataLog.makeFile(tempDir())
      const follower = yield* MetadataLog.makeFile(tempDir())
      yield* leader.append(topicRecords(1), 4)
      yield* leader.append(topicRecords(2), 4)
      const firstFetch = (yield* leader.readFrom(0)).records
      const original = Buffer.from(firstFetch)
      const batches = yield* follower.appendFetched(firstFetch)
      expect(batches.map((b) => b.provenance.lastOffset)).toEqual([1, 3])
      expect(Buffer.compare(firstFetch, original)).toBe(0)
      expect(yield* follower.logEndOffset).toBe(4)
      expect(yield* follower.latestEpoch).toBe(4)
      expect(yield* follower.appendFetched(firstFetch)).toEqual([])
      yield* leader.append([bump(1)], 5)
      const next = (yield* leader.readFrom(4)).records
      expect((yield* follower.appendFetched(next)).map((b) => b.records.length)).toEqual([1])
      expect(Buffer.compare((yield* follower.readFrom(0)).records, (yield* leader.readFrom(0)).records)).toBe(0)
      const loader = yield* MetadataPublisher.make()
      yield* loader.handleCommit(batches)
      expect(topicNames(yield* loader.image)).toEqual(["t1", "t2"])

      const gap = MetadataLog.encodeBatch([bump(2)], { baseOffset: 9, leaderEpoch: 5, timestamp: 1 })
      const err = yield* Effect.flip(follower.appendFetched(gap))
      expect(err._tag).toBe("DivergentFetch")
      const corrupt = MetadataLog.encodeBatch([bump(2)], { baseOffset: 5, leaderEpoch: 5, timestamp: 1 })
      corrupt[corrupt.length - 1]! ^= 0xff
      expect((yield* Effect.flip(follower.appendFetched(corrupt)))._tag).toBe("CorruptMetadataBatch")
      expect(yield* follower.logEndOffset).toBe(5)
    })
  )

  it.effect("snapshots: the end offset must follow the image, and an unreadable newer file is passed over", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const log = yield* MetadataLog.makeFile(dir)
      const { provenance } = yield* log.append(topicRecords(1), 1)
      const loader = yield* MetadataPublisher.make()
      yield* loader.handleCommit([{ records: topicRecords(1), provenance }])
      const image = yield* loader.image
      const mismatch = yield* Effect.flip(log.writeSnapshot(image, 5))
      expect(mismatch._tag).toBe("SnapshotError")
      yield* log.writeSnapshot(image, 2)
      fs.writeFileSync(path.join(logDir(dir), MetadataLog.snapshotFileName(9, 1)), Buffer.from("torn"))
      const latest = Option.getOrThrow(yield* log.latestSnapshot)
      expect(latest.endOffset).toBe(2)
      expect(latest.provenance).toEqual(image.provenance)
    })
  )

  it.effect("a snapshot beyond the log end restarts the log at the snapshot", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const log = yield* MetadataLog.makeFile(dir)
      const image = Snapshot.recordsToImage(topicRecords(7), MetadataProvenance.make(41, 3, 99))
      yield* log.writeSnapshot(image, 42)
      const loaded = yield* load(log)
      expect(topicNames(loaded)).toEqual(["t7"])
      expect(yield* log.logEndOffset).toBe(42)
      expect(yield* log.append([bump(7)], 3)).toMatchObject({ baseOffset: 42 })
    })
  )

  it.effect("control batches advance the provenance without records", () =>
    Effect.sync(() => {
      const control = RecordBatch.build({
        records: [{ key: new Uint8Array([0, 0, 0, 2]), value: new Uint8Array([0, 0]) }],
        isControl: true,
        baseOffset: 7,
        partitionLeaderEpoch: 2,
        timestamp: 50
      })
      expect(Either.getOrThrow(MetadataLog.decodeBatch(control))).toEqual({
        records: [],
        provenance: MetadataProvenance.make(7, 2, 50)
      })
    })
  )

  it.effect("the memory layer serves the same contract", () =>
    Effect.gen(function* () {
      const log = yield* MetadataLog.MetadataLog
      yield* log.append(topicRecords(1), 1)
      const image = yield* load(log)
      yield* log.writeSnapshot(image, 2)
      expect(Option.map(yield* log.latestSnapshot, (s) => s.endOffset)).toEqual(Option.some(2))
      expect(topicNames(yield* load(log))).toEqual(["t1"])
    }).pipe(Effect.provide(MetadataLog.layerMemory))
  )

  it.effect("the file layer closes the log when released", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const exit = yield* Effect.exit(
        Effect.scoped(
          Effect.gen(function* () {
            const log = yield* MetadataLog.MetadataLog
            yield* log.append(topicRecords(1), 1)
          }).pipe(Effect.provide(MetadataLog.layer(dir)))
        )
      )
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(fs.existsSync(path.join(logDir(dir), "clean-shutdown"))).toBe(true)
    })
  )
})
