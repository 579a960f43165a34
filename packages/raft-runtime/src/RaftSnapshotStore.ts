/**
 * The snapshots of the metadata log (KIP-630) as files in its directory, named as Kafka names them:
 * `<20-digit end offset>-<10-digit epoch>.checkpoint`. A snapshot holds the state machine's own
 * records (an image of its state at the end offset, not the log's records) as record batches like
 * the log's, in the snapshot's epoch: a SnapshotHeader control batch at offset 0, the values as data
 * records from offset 1, a SnapshotFooter control batch last, as Kafka lays them out (the footer
 * tells a complete file from one cut at a batch boundary). A snapshot is written to a
 * `.checkpoint.part` file, fsynced, renamed and the directory fsynced, so a `.checkpoint` is always
 * complete; a `.part` left by a crash is deleted on open. Opening validates the newest snapshot
 * (every batch whole, its CRC matching): a damaged one is an error naming the file, never skipped, as
 * the records below its end offset exist nowhere else on this voter. It must not decide anything.
 */
import { RecordBatch } from "@clustermirror/protocol"
import type { RaftMessages } from "@clustermirror/raft"
import { Either } from "effect"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as path from "node:path"
import * as SnapshotControl from "./internal/SnapshotControl.js"
import { fsyncDir } from "./internal/fsyncDir.js"

export type SnapshotId = RaftMessages.SnapshotId

/** A complete snapshot file. */
export interface Snapshot {
  readonly id: SnapshotId
  readonly path: string
  /** Its size in bytes (FetchSnapshot's `Size`). */
  readonly size: number
}

/** Thrown on a snapshot file that cannot be trusted or read; names the file. */
export class CorruptSnapshot extends Error {}

const SUFFIX = ".checkpoint"
const PART = ".part"
/** Values per batch of a snapshot file, and the bytes after which a batch is closed early. */
const BATCH_RECORDS = 1000
const BATCH_BYTES = 1024 * 1024

/** `<20-digit end offset>-<10-digit epoch>.checkpoint`, as Kafka names snapshot files. */
export const fileName = (id: SnapshotId): string =>
  `${String(id.endOffset).padStart(20, "0")}-${String(id.epoch).padStart(10, "0")}${SUFFIX}`

/** The snapshot id a file name stands for, or undefined for any other file. */
export const parseFileName = (name: string): SnapshotId | undefined => {
  const m = /^(\d{20})-(\d{10})\.checkpoint$/.exec(name)
  if (m === null) return undefined
  return { endOffset: Number(m[1]), epoch: Number(m[2]) }
}

const newer = (a: SnapshotId, b: SnapshotId): boolean =>
  a.endOffset > b.endOffset || (a.endOffset === b.endOffset && a.epoch > b.epoch)

const writeDurably = (file: string, chunks: ReadonlyArray<Buffer>): void => {
  const fd = fs.openSync(file, "w")
  try {
    for (const c of chunks) fs.writeSync(fd, c)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

const controlBatch = (type: number, value: Buffer, offset: number, epoch: number, now: number): Buffer =>
  RecordBatch.build({
    records: [{ key: SnapshotControl.key(type), value }],
    baseOffset: offset,
    partitionLeaderEpoch: epoch,
    timestamp: now,
    isControl: true
  })

/**
 * The batches of a snapshot holding `values` in `epoch`: the header (with the append time of the
 * last record the snapshot contains), the values from offset 1, the footer.
 */
export const encode = (
  values: ReadonlyArray<Buffer>,
  epoch: number,
  now: number,
  lastContainedLogTimestamp = now
): Array<Buffer> => {
  const out: Array<Buffer> = [
    controlBatch(
      SnapshotControl.SNAPSHOT_HEADER,
      SnapshotControl.encodeHeader(lastContainedLogTimestamp),
      0,
      epoch,
      now
    )
  ]
  let run: Array<Buffer> = []
  let bytes = 0
  let base = 1
  const close = () => {
    if (run.length === 0) return
    out.push(
      RecordBatch.build({
        records: run.map((value) => ({ value })),
        baseOffset: base,
        partitionLeaderEpoch: epoch,
        timestamp: now
      })
    )
    base += run.length
    run = []
    bytes = 0
  }
  for (const v of values) {
    if (run.length >= BATCH_RECORDS || (run.length > 0 && bytes + v.length > BATCH_BYTES)) close()
    run.push(v)
    bytes += v.length
  }
  close()
  out.push(controlBatch(SnapshotControl.SNAPSHOT_FOOTER, SnapshotControl.encodeFooter(), base, epoch, now))
  return out
}

/** The values of a snapshot file's bytes, or why they cannot be trusted. */
export const decode = (bytes: Buffer): Either.Either<Array<Buffer>, string> => {
  const values: Array<Buffer> = []
  let p = 0
  let next = 0
  let footer = false
  while (p < bytes.length) {
    const ref = RecordBatch.validate(bytes, p)
    if (Either.isLeft(ref)) return Either.left(`batch at byte ${p}: ${ref.left.message}`)
    if (footer) return Either.left(`a batch after the SnapshotFooter at byte ${p}`)
    const records = RecordBatch.records(bytes, p)
    if (Either.isLeft(records)) return Either.left(`batch at byte ${p}: ${records.left.message}`)
    const control = RecordBatch.isControl(bytes, p)
    for (const r of records.right) {
      if (r.offset !== next) return Either.left(`record at offset ${r.offset} where ${next} was due`)
      next++
      if (!control) {
        if (r.offset === 0) return Either.left("no SnapshotHeader at offset 0")
        if (r.value === null) return Either.left(`record at offset ${r.offset} has no value`)
        values.push(Buffer.from(r.value))
        continue
      }
      const type = r.key !== null && r.key.length >= 4 ? Buffer.from(r.key).readInt16BE(2) : -1
      const value = r.value ?? new Uint8Array(0)
      if (type === SnapshotControl.SNAPSHOT_HEADER && r.offset === 0) {
        const header = SnapshotControl.decodeHeader(value)
        if (Either.isLeft(header)) return Either.left(`SnapshotHeader: ${header.left}`)
      } else if (type === SnapshotControl.SNAPSHOT_FOOTER && r.offset > 0) {
        const decoded = SnapshotControl.decodeFooter(value)
        if (Either.isLeft(decoded)) return Either.left(`SnapshotFooter: ${decoded.left}`)
        footer = true
      } else return Either.left(`control record of type ${type} at offset ${r.offset}`)
    }
    p += ref.right.size
  }
  if (!footer)
    return Either.left(next === 0 ? "no SnapshotHeader: the file is empty" : "no SnapshotFooter: the file is cut")
  return Either.right(values)
}

export interface RaftSnapshotStore {
  readonly dir: string
  /** The newest complete snapshot, or null. */
  readonly latest: () => Snapshot | null
  /** Writes `values` as the snapshot `id` (part file, fsync, rename, directory fsync); it becomes the latest. */
  readonly write: (
    id: SnapshotId,
    values: ReadonlyArray<Buffer>,
    now: number,
    lastContainedLogTimestamp: number
  ) => Snapshot
  /** The values of the latest snapshot. */
  readonly values: () => ReadonlyArray<Buffer>
  /** Up to `maxBytes` of the latest snapshot from byte `position`. */
  readonly read: (position: number, maxBytes: number) => Buffer
  /** A `.part` file receiving snapshot `id` from the leader, chunk by chunk. */
  readonly receive: (id: SnapshotId) => Receiving
  /** Deletes every snapshot older than the latest. */
  readonly deleteOlder: () => void
}

export interface Receiving {
  readonly path: string
  /** Appends a chunk at `position`, which must be the bytes written so far. */
  readonly write: (position: number, chunk: Buffer) => void
  /** fsyncs the part file and checks it; the snapshot's values, or why it cannot be installed. */
  readonly finish: () => Either.Either<ReadonlyArray<Buffer>, string>
  /** Renames it to its `.checkpoint` and fsyncs the directory: it becomes the latest snapshot. */
  readonly install: () => Snapshot
  /** Deletes the part file. */
  readonly discard: () => void
}

const readWhole = (file: string): Buffer => fs.readFileSync(file)

/**
 * The snapshots of log directory `dir`: part files deleted, the newest checkpoint validated (throws
 * `CorruptSnapshot` naming it), older ones deleted.
 */
export const open = (dir: string): RaftSnapshotStore => {
  fs.mkdirSync(dir, { recursive: true })
  let latest: Snapshot | null = null
  const older: Array<string> = []
  for (const name of fs.readdirSync(dir)) {
    if (name.endsWith(`${SUFFIX}${PART}`)) {
      fs.rmSync(path.join(dir, name), { force: true })
      continue
    }
    const id = parseFileName(name)
    if (id === undefined) continue
    const file = path.join(dir, name)
    if (latest === null || newer(id, latest.id)) {
      if (latest !== null) older.push(latest.path)
      latest = { id, path: file, size: fs.statSync(file).size }
    } else older.push(file)
  }
  if (latest !== null) {
    const checked = decode(readWhole(latest.path))
    if (Either.isLeft(checked))
      throw new CorruptSnapshot(`snapshot ${latest.path} is damaged (${checked.left}); it holds committed records`)
  }
  for (const file of older) fs.rmSync(file, { force: true })
  if (older.length > 0) fsyncDir(dir)

  const values = (): ReadonlyArray<Buffer> => {
    if (latest === null) return []
    const decoded = decode(readWhole(latest.path))
    if (Either.isLeft(decoded)) throw new CorruptSnapshot(`snapshot ${latest.path} is damaged (${decoded.left})`)
    return decoded.right
  }

  const deleteOlder = () => {
    if (latest === null) return
    let removed = false
    for (const name of fs.readdirSync(dir)) {
      const id = parseFileName(name)
      if (id !== undefined && newer(latest.id, id)) {
        fs.rmSync(path.join(dir, name), { force: true })
        removed = true
      }
    }
    if (removed) fsyncDir(dir)
  }

  return {
    dir,
    latest: () => latest,
    write: (id, vs, now, lastContainedLogTimestamp) => {
      const file = path.join(dir, fileName(id))
      const part = `${file}${PART}`
      const batches = encode(vs, id.epoch, now, lastContainedLogTimestamp)
      writeDurably(part, batches)
      fs.renameSync(part, file)
      fsyncDir(dir)
      latest = { id, path: file, size: batches.reduce((n, b) => n + b.length, 0) }
      return latest
    },
    values,
    read: (position, maxBytes) => {
      if (latest === null) return Buffer.alloc(0)
      const length = Math.max(0, Math.min(maxBytes, latest.size - position))
      const out = Buffer.alloc(length)
      if (length === 0) return out
      const fd = fs.openSync(latest.path, "r")
      try {
        let done = 0
        while (done < length) {
          const n = fs.readSync(fd, out, done, length - done, position + done)
          if (n === 0) throw new CorruptSnapshot(`snapshot ${latest.path} is shorter than ${latest.size} bytes`)
          done += n
        }
      } finally {
        fs.closeSync(fd)
      }
      return out
    },
    receive: (id) => {
      const file = path.join(dir, fileName(id))
      const part = `${file}${PART}`
      const fd = fs.openSync(part, "w")
      let open = true
      let written = 0
      const close = () => {
        if (open) fs.closeSync(fd)
        open = false
      }
      return {
        path: part,
        write: (position, chunk) => {
          if (position !== written) throw new Error(`chunk at byte ${position} of ${part}, ${written} written`)
          let done = 0
          while (done < chunk.length) done += fs.writeSync(fd, chunk, done, chunk.length - done, written + done)
          written += chunk.length
        },
        finish: () => {
          fs.fsyncSync(fd)
          close()
          return decode(readWhole(part))
        },
        install: () => {
          close()
          fs.renameSync(part, file)
          fsyncDir(dir)
          latest = { id, path: file, size: written }
          return latest
        },
        discard: () => {
          close()
          fs.rmSync(part, { force: true })
        }
      }
    },
    deleteOlder
  }
}
