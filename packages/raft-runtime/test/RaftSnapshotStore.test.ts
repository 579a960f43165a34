import { RecordBatch } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as RaftSnapshotStore from "../src/RaftSnapshotStore.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "raft-snapshot-store-"))
let n = 0
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const values = (count: number) => Array.from({ length: count }, (_, i) => Buffer.from(`value-${i}`))

describe("RaftSnapshotStore", () => {
  it("lays a snapshot out as Kafka does: a SnapshotHeader at 0, the values from 1, a SnapshotFooter last", () => {
    const batches = RaftSnapshotStore.encode(values(2500), 7, 1000, 900)
    const bytes = Buffer.concat(batches)
    const refs = RecordBatch.split(bytes).batches
    const first = refs[0]!
    const last = refs[refs.length - 1]!
    expect(RecordBatch.isControl(bytes, first.position)).toBe(true)
    expect(RecordBatch.baseOffset(bytes, first.position)).toBe(0)
    expect(RecordBatch.isControl(bytes, last.position)).toBe(true)
    expect(RecordBatch.baseOffset(bytes, last.position)).toBe(2501)
    expect(refs.every((r) => RecordBatch.partitionLeaderEpoch(bytes, r.position) === 7)).toBe(true)
    // 1000 values at most per batch.
    expect(refs.length).toBe(5)
    expect(Either.getOrThrow(RaftSnapshotStore.decode(bytes)).map(String)).toEqual(values(2500).map(String))
    expect(Either.getOrThrow(RaftSnapshotStore.decode(Buffer.concat(RaftSnapshotStore.encode([], 1, 0))))).toEqual([])
  })

  it("refuses a file cut at a batch boundary, one without its header, and an empty one", () => {
    const batches = RaftSnapshotStore.encode(values(3), 1, 0)
    expect(RaftSnapshotStore.decode(Buffer.concat(batches.slice(0, -1)))).toEqual(
      Either.left("no SnapshotFooter: the file is cut")
    )
    expect(Either.isLeft(RaftSnapshotStore.decode(Buffer.concat(batches.slice(1))))).toBe(true)
    expect(RaftSnapshotStore.decode(Buffer.alloc(0))).toEqual(Either.left("no SnapshotHeader: the file is empty"))
  })

  it("names files as Kafka does and refuses to open over a snapshot cut at a batch boundary", () => {
    expect(RaftSnapshotStore.fileName({ endOffset: 42, epoch: 3 })).toBe("00000000000000000042-0000000003.checkpoint")
    expect(RaftSnapshotStore.parseFileName("00000000000000000042-0000000003.checkpoint")).toEqual({
      endOffset: 42,
      epoch: 3
    })
    expect(RaftSnapshotStore.parseFileName("00000000000000000042-0000000003.checkpoint.part")).toBeUndefined()
    const dir = path.join(root, `d${n++}`)
    const store = RaftSnapshotStore.open(dir)
    const older = store.write({ endOffset: 10, epoch: 1 }, values(1), 0, 0)
    const newer = store.write({ endOffset: 20, epoch: 2 }, values(2), 0, 0)
    expect(RaftSnapshotStore.open(dir).latest()?.id).toEqual({ endOffset: 20, epoch: 2 })
    // Opening deleted the older snapshot.
    expect(fs.existsSync(older.path)).toBe(false)
    const batches = RaftSnapshotStore.encode(values(2), 2, 0)
    fs.writeFileSync(newer.path, Buffer.concat(batches.slice(0, -1)))
    expect(() => RaftSnapshotStore.open(dir)).toThrow(newer.path)
  })
})
