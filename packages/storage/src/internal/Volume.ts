/**
 * The byte-level storage a partition log runs on: a directory of files that support append, positional
 * read, truncate and fsync. One implementation uses `node:fs` file descriptors, the other keeps files in
 * memory; the log itself is written once against this interface so both layers share every semantic.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { KafkaStorageError } from "../StorageError.js"

/** A file appended at its end and read at any position. */
export interface LogFile {
  readonly size: number
  append(bytes: Uint8Array): void
  /** Reads up to `length` bytes at `position` into `target[targetOffset..]`; returns the bytes read. */
  read(target: Uint8Array, targetOffset: number, length: number, position: number): number
  truncate(size: number): void
  sync(): void
  close(): void
}

/** One partition directory. */
export interface Volume {
  open(name: string): LogFile
  readFile(name: string): Uint8Array | undefined
  /** Replaces a whole file atomically (write to a temporary name, fsync, rename). */
  writeFileAtomic(name: string, bytes: Uint8Array): void
  /** Appends without keeping the file open (index files); fsyncs when `sync`. */
  appendFile(name: string, bytes: Uint8Array, sync: boolean): void
  exists(name: string): boolean
  remove(name: string): void
  /** Renames a file atomically, replacing `to`, and makes the rename durable (fsync of the directory). */
  rename(from: string, to: string): void
  list(): ReadonlyArray<string>
}

/** The data directory: one volume per partition directory. */
export interface Root {
  volume(dir: string): Volume
  /** Whether the directory exists (without creating it). */
  exists(dir: string): boolean
  listDirs(): ReadonlyArray<string>
  removeDir(dir: string): void
}

const io = <A>(what: string, f: () => A): A => {
  try {
    return f()
  } catch (cause) {
    throw new KafkaStorageError({
      message: `${what}: ${cause instanceof Error ? cause.message : String(cause)}`,
      cause
    })
  }
}

class FsLogFile implements LogFile {
  size: number
  constructor(
    private readonly file: string,
    private fd: number
  ) {
    this.size = fs.fstatSync(fd).size
  }
  append(bytes: Uint8Array): void {
    io(`append ${this.file}`, () => {
      let done = 0
      while (done < bytes.length) done += fs.writeSync(this.fd, bytes, done, bytes.length - done, this.size + done)
    })
    this.size += bytes.length
  }
  read(target: Uint8Array, targetOffset: number, length: number, position: number): number {
    return io(`read ${this.file}`, () => {
      let done = 0
      while (done < length) {
        const n = fs.readSync(this.fd, target, targetOffset + done, length - done, position + done)
        if (n === 0) break
        done += n
      }
      return done
    })
  }
  truncate(size: number): void {
    io(`truncate ${this.file}`, () => fs.ftruncateSync(this.fd, size))
    this.size = size
  }
  sync(): void {
    io(`fsync ${this.file}`, () => fs.fsyncSync(this.fd))
  }
  close(): void {
    if (this.fd >= 0) io(`close ${this.file}`, () => fs.closeSync(this.fd))
    this.fd = -1
  }
}

class FsVolume implements Volume {
  constructor(private readonly dir: string) {
    io(`mkdir ${dir}`, () => fs.mkdirSync(dir, { recursive: true }))
  }
  private p(name: string): string {
    return path.join(this.dir, name)
  }
  open(name: string): LogFile {
    const file = this.p(name)
    // "r+" after creating keeps positional writes at our tracked size, which stays right after truncation.
    return io(`open ${file}`, () => {
      if (!fs.existsSync(file)) fs.closeSync(fs.openSync(file, "w"))
      return new FsLogFile(file, fs.openSync(file, "r+"))
    })
  }
  readFile(name: string): Uint8Array | undefined {
    const file = this.p(name)
    return io(`read ${file}`, () => (fs.existsSync(file) ? fs.readFileSync(file) : undefined))
  }
  writeFileAtomic(name: string, bytes: Uint8Array): void {
    const file = this.p(name)
    const tmp = `${file}.tmp`
    io(`write ${file}`, () => {
      const fd = fs.openSync(tmp, "w")
      try {
        fs.writeSync(fd, bytes)
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(tmp, file)
    })
  }
  appendFile(name: string, bytes: Uint8Array, sync: boolean): void {
    io(`append ${this.p(name)}`, () => {
      const fd = fs.openSync(this.p(name), "a")
      try {
        if (bytes.length > 0) fs.writeSync(fd, bytes)
        if (sync) fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
    })
  }
  exists(name: string): boolean {
    return fs.existsSync(this.p(name))
  }
  remove(name: string): void {
    io(`remove ${this.p(name)}`, () => fs.rmSync(this.p(name), { force: true }))
  }
  rename(from: string, to: string): void {
    io(`rename ${this.p(from)} to ${to}`, () => {
      fs.renameSync(this.p(from), this.p(to))
      const fd = fs.openSync(this.dir, "r")
      try {
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
    })
  }
  list(): ReadonlyArray<string> {
    return io(`list ${this.dir}`, () => fs.readdirSync(this.dir))
  }
}

/** Files under `dataDir`, one subdirectory per partition. */
export const fileRoot = (dataDir: string): Root => {
  io(`mkdir ${dataDir}`, () => fs.mkdirSync(dataDir, { recursive: true }))
  return {
    volume: (dir) => new FsVolume(path.join(dataDir, dir)),
    exists: (dir) => io(`stat ${dir}`, () => fs.existsSync(path.join(dataDir, dir))),
    listDirs: () =>
      io(`list ${dataDir}`, () =>
        fs
          .readdirSync(dataDir, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => d.name)
      ),
    removeDir: (dir) => io(`remove ${dir}`, () => fs.rmSync(path.join(dataDir, dir), { recursive: true, force: true }))
  }
}

class MemoryLogFile implements LogFile {
  constructor(private readonly entry: { bytes: Uint8Array; size: number }) {}
  get size(): number {
    return this.entry.size
  }
  append(bytes: Uint8Array): void {
    const e = this.entry
    if (e.size + bytes.length > e.bytes.length) {
      // Grow geometrically from a small start so idle partitions stay cheap.
      const grown = new Uint8Array(Math.max(e.size + bytes.length, e.bytes.length * 2, 256))
      grown.set(e.bytes.subarray(0, e.size))
      e.bytes = grown
    }
    e.bytes.set(bytes, e.size)
    e.size += bytes.length
  }
  read(target: Uint8Array, targetOffset: number, length: number, position: number): number {
    const n = Math.max(0, Math.min(length, this.entry.size - position))
    target.set(this.entry.bytes.subarray(position, position + n), targetOffset)
    return n
  }
  truncate(size: number): void {
    if (size < this.entry.size) this.entry.bytes.fill(0, size, this.entry.size)
    this.entry.size = size
  }
  sync(): void {}
  close(): void {}
}

class MemoryVolume implements Volume {
  constructor(private readonly files: Map<string, { bytes: Uint8Array; size: number }>) {}
  private entry(name: string): { bytes: Uint8Array; size: number } {
    let e = this.files.get(name)
    if (e === undefined) {
      e = { bytes: new Uint8Array(0), size: 0 }
      this.files.set(name, e)
    }
    return e
  }
  open(name: string): LogFile {
    return new MemoryLogFile(this.entry(name))
  }
  readFile(name: string): Uint8Array | undefined {
    const e = this.files.get(name)
    return e === undefined ? undefined : e.bytes.slice(0, e.size)
  }
  writeFileAtomic(name: string, bytes: Uint8Array): void {
    this.files.set(name, { bytes: Uint8Array.from(bytes), size: bytes.length })
  }
  appendFile(name: string, bytes: Uint8Array, _sync: boolean): void {
    new MemoryLogFile(this.entry(name)).append(bytes)
  }
  exists(name: string): boolean {
    return this.files.has(name)
  }
  remove(name: string): void {
    this.files.delete(name)
  }
  rename(from: string, to: string): void {
    const e = this.files.get(from)
    if (e === undefined) throw new KafkaStorageError({ message: `rename ${from}: no such file`, cause: undefined })
    this.files.delete(from)
    this.files.set(to, e)
  }
  list(): ReadonlyArray<string> {
    return [...this.files.keys()]
  }
}

/** Directories kept in memory; they survive closing a log, like files do, until removed. */
export const memoryRoot = (): Root => {
  const dirs = new Map<string, Map<string, { bytes: Uint8Array; size: number }>>()
  return {
    volume: (dir) => {
      let files = dirs.get(dir)
      if (files === undefined) {
        files = new Map()
        dirs.set(dir, files)
      }
      return new MemoryVolume(files)
    },
    exists: (dir) => dirs.has(dir),
    listDirs: () => [...dirs.keys()],
    removeDir: (dir) => {
      dirs.delete(dir)
    }
  }
}
