/**
 * Test layers of the storage package: a store whose disk fails on demand, to exercise what callers do with
 * `KafkaStorageError` (a full disk, an I/O error) without a real failing device. The faults are injected
 * below the log, at the file operations, so the log's own error handling is what runs.
 */
import type { LogEvents } from "./PartitionLog.js"
import { make, type PartitionLogStoreService } from "./PartitionLogStore.js"
import { KafkaStorageError } from "./StorageError.js"
import { fileRoot, type LogFile, memoryRoot, type Root, type Volume } from "./internal/Volume.js"

/** The system error code of an injected fault, e.g. `ENOSPC` or `EIO`. */
export type FaultCode = "ENOSPC" | "EIO"

export interface FaultyStore {
  readonly store: PartitionLogStoreService
  /** From now on every write (create, append, fsync, file replacement) fails with `code`; `null` heals the disk. */
  readonly failWrites: (code: FaultCode | null) => void
  /**
   * From now on every fsync and every write of a whole file (checkpoints, indexes) fails with `code`, while
   * appends to log files still succeed: a disk that fills, or fails, between the data and its checkpoint.
   */
  readonly failSyncs: (code: FaultCode | null) => void
  /** From now on every read of a log file fails with `code`; `null` heals the disk. */
  readonly failReads: (code: FaultCode | null) => void
}

// What the file layer raises for a failed system call: the error with its code, as the cause.
const systemError = (code: FaultCode, what: string): KafkaStorageError => {
  const cause = Object.assign(
    new Error(`${code}: ${code === "ENOSPC" ? "no space left on device" : "i/o error"}, ${what}`),
    { code }
  )
  return new KafkaStorageError({ message: `${what}: ${cause.message}`, cause })
}

/** A store over memory (or over `dataDir` on files) whose writes and reads fail while told to. */
export const faultyStore = (options: { readonly dataDir?: string; readonly events?: LogEvents } = {}): FaultyStore => {
  let writeFault: FaultCode | null = null
  let syncFault: FaultCode | null = null
  let readFault: FaultCode | null = null
  const writing = (what: string): void => {
    if (writeFault !== null) throw systemError(writeFault, what)
  }
  const syncing = (what: string): void => {
    writing(what)
    if (syncFault !== null) throw systemError(syncFault, what)
  }
  const file = (f: LogFile, name: string): LogFile => ({
    get size() {
      return f.size
    },
    append: (bytes) => {
      writing(`write ${name}`)
      f.append(bytes)
    },
    read: (target, targetOffset, length, position) => {
      if (readFault !== null) throw systemError(readFault, `read ${name}`)
      return f.read(target, targetOffset, length, position)
    },
    truncate: (size) => f.truncate(size),
    sync: () => {
      syncing(`fsync ${name}`)
      f.sync()
    },
    close: () => f.close()
  })
  const volume = (v: Volume): Volume => ({
    open: (name) => {
      if (!v.exists(name)) writing(`create ${name}`)
      return file(v.open(name), name)
    },
    readFile: (name) => v.readFile(name),
    writeFileAtomic: (name, bytes) => {
      syncing(`write ${name}`)
      v.writeFileAtomic(name, bytes)
    },
    appendFile: (name, bytes, sync) => {
      syncing(`write ${name}`)
      v.appendFile(name, bytes, sync)
    },
    exists: (name) => v.exists(name),
    remove: (name) => v.remove(name),
    rename: (from, to) => {
      syncing(`rename ${from}`)
      v.rename(from, to)
    },
    list: () => v.list()
  })
  const inner = options.dataDir === undefined ? memoryRoot() : fileRoot(options.dataDir)
  const root: Root = {
    volume: (dir) => volume(inner.volume(dir)),
    exists: (dir) => inner.exists(dir),
    listDirs: () => inner.listDirs(),
    removeDir: (dir) => inner.removeDir(dir)
  }
  return {
    store: make(root, options.events),
    failWrites: (code) => {
      writeFault = code
    },
    failSyncs: (code) => {
      syncFault = code
    },
    failReads: (code) => {
      readFault = code
    }
  }
}
