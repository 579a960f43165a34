/**
 * Where snapshot files live: a directory on disk (written atomically: temporary file, fsync, rename,
 * fsync of the directory) or a map in memory with the same contract.
 */
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as path from "node:path"

export interface SnapshotFiles {
  readonly list: () => ReadonlyArray<string>
  readonly read: (name: string) => Buffer | undefined
  /** Replaces or creates `name` so that a crash leaves either the old file or the whole new one. */
  readonly writeAtomic: (name: string, bytes: Uint8Array) => void
  readonly remove: (name: string) => void
}

const fsyncDir = (dir: string): void => {
  // Directories cannot be opened for fsync on every platform; the rename is then as durable as it gets.
  let fd = -1
  try {
    fd = fs.openSync(dir, "r")
    fs.fsyncSync(fd)
  } catch {
    return
  } finally {
    if (fd >= 0) fs.closeSync(fd)
  }
}

export const files = (dir: string): SnapshotFiles => {
  const ensure = (): void => {
    fs.mkdirSync(dir, { recursive: true })
  }
  return {
    list: () => (fs.existsSync(dir) ? fs.readdirSync(dir) : []),
    read: (name) => {
      const file = path.join(dir, name)
      return fs.existsSync(file) ? fs.readFileSync(file) : undefined
    },
    writeAtomic: (name, bytes) => {
      ensure()
      const file = path.join(dir, name)
      const tmp = `${file}.tmp`
      const fd = fs.openSync(tmp, "w")
      try {
        let done = 0
        while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done)
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(tmp, file)
      fsyncDir(dir)
    },
    remove: (name) => fs.rmSync(path.join(dir, name), { force: true })
  }
}

export const memory = (): SnapshotFiles => {
  const store = new Map<string, Buffer>()
  return {
    list: () => [...store.keys()],
    read: (name) => store.get(name),
    writeAtomic: (name, bytes) => {
      store.set(name, Buffer.from(bytes))
    },
    remove: (name) => {
      store.delete(name)
    }
  }
}
