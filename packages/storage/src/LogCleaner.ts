/**
 * The log cleaner a broker runs for its compacted partitions (`cleanup.policy=compact`), with Kafka's
 * `log.cleaner.*` settings. Cleaning runs off the request path in bounded slices on the event loop: each of
 * `log.cleaner.threads` workers picks the dirtiest partition that is due, and runs its pass one slice at a
 * time (one segment read into the key → offset map, or one group of segments rewritten and swapped),
 * yielding to the event loop between slices and sleeping as long as `log.cleaner.io.max.bytes.per.second`
 * demands. With nothing due a worker sleeps `log.cleaner.backoff.ms`. Each worker owns one offset map of
 * `log.cleaner.dedupe.buffer.size / log.cleaner.threads` bytes; a dirty section with more keys than fit is
 * cleaned in several passes, as in Kafka.
 */
import { setTimeout as sleep } from "node:timers/promises"
import { OffsetMap, SLOT_BYTES } from "./internal/OffsetMap.js"
import type { CleanStats, KeyOffsetMap, PartitionLog } from "./PartitionLog.js"

export interface LogCleanerConfig {
  /** log.cleaner.enable */
  readonly enable: boolean
  /** log.cleaner.threads */
  readonly threads: number
  /** log.cleaner.dedupe.buffer.size: bytes of key → offset map over all threads. */
  readonly dedupeBufferSize: number
  /** log.cleaner.io.max.bytes.per.second (read and written bytes together). */
  readonly ioMaxBytesPerSecond: number
  /** log.cleaner.backoff.ms */
  readonly backoffMs: number
}

export const defaultConfig: LogCleanerConfig = {
  enable: true,
  threads: 1,
  dedupeBufferSize: 128 * 1024 * 1024,
  ioMaxBytesPerSecond: Number.MAX_VALUE,
  backoffMs: 15_000
}

/** A key → offset map of `bytes` bytes (24 bytes per key, filled to 90 %). */
export const offsetMap = (bytes: number): KeyOffsetMap => new OffsetMap(bytes)

/** A compacted partition the cleaner may clean now (mirroring partitions are left out by the caller). */
export interface CleanerCandidate {
  readonly log: PartitionLog
}

export interface LogCleanerStats {
  readonly passes: number
  readonly bytesRead: number
  readonly bytesWritten: number
  readonly recordsRead: number
  readonly recordsRetained: number
  readonly segmentsCleaned: number
  readonly failures: number
}

export interface LogCleaner {
  /** Starts the workers (no-op when `log.cleaner.enable=false`). */
  readonly start: () => void
  /** Stops the workers, abandoning passes in progress (their files are discarded at the next load). */
  readonly stop: () => Promise<void>
  /** Cleans every due candidate to the end, in slices, on the caller's turn (tests, benches); returns passes. */
  readonly cleanNow: (now?: number) => Promise<number>
  readonly stats: () => LogCleanerStats
}

export interface LogCleanerOptions {
  readonly now?: () => number
  readonly log?: (message: string) => void
}

export const make = (
  config: LogCleanerConfig,
  candidates: () => Iterable<CleanerCandidate>,
  options: LogCleanerOptions = {}
): LogCleaner => {
  const now = options.now ?? Date.now
  const log = options.log ?? (() => {})
  const threads = Math.max(1, config.threads)
  const mapBytes = Math.max(SLOT_BYTES * 2, Math.floor(config.dedupeBufferSize / threads))
  const maps: Array<KeyOffsetMap | undefined> = []
  const busy = new Set<PartitionLog>()
  let running = false
  let workers: Promise<void>[] = []
  const totals = {
    passes: 0,
    bytesRead: 0,
    bytesWritten: 0,
    recordsRead: 0,
    recordsRetained: 0,
    segmentsCleaned: 0,
    failures: 0
  }
  // Sleeps of the workers end early when the cleaner stops, so a shutdown never waits out a backoff.
  let halt = new AbortController()
  const pause = (ms: number): Promise<void> => sleep(ms, undefined, { signal: halt.signal }).catch(() => undefined)

  // Throttle over every worker: the io budget is shared, as Kafka's throttler is.
  const throttle = { start: now(), bytes: 0 }
  const pace = async (bytes: number): Promise<void> => {
    if (!Number.isFinite(config.ioMaxBytesPerSecond) || config.ioMaxBytesPerSecond >= Number.MAX_VALUE / 2) return
    throttle.bytes += bytes
    const elapsed = now() - throttle.start
    const due = (throttle.bytes / config.ioMaxBytesPerSecond) * 1000
    if (due > elapsed) await pause(Math.min(due - elapsed, 10_000))
    if (now() - throttle.start > 5_000) {
      throttle.start = now()
      throttle.bytes = 0
    }
  }

  const pick = (at: number): PartitionLog | undefined => {
    let best: PartitionLog | undefined
    let bestRatio = -1
    for (const { log: l } of candidates()) {
      if (busy.has(l)) continue
      const state = l.cleanableState(at)
      if (state === undefined || !state.due) continue
      if (state.dirtyRatio > bestRatio) {
        best = l
        bestRatio = state.dirtyRatio
      }
    }
    return best
  }

  const add = (s: CleanStats): void => {
    totals.bytesRead += s.bytesRead
    totals.bytesWritten += s.bytesWritten
    totals.recordsRead += s.recordsRead
    totals.recordsRetained += s.recordsRetained
    totals.segmentsCleaned += s.segmentsCleaned
    if (s.passCompleted) totals.passes++
  }

  /** Runs one pass of `target` in slices; false when it failed. */
  const clean = async (slot: number, target: PartitionLog, at: number, keepGoing: () => boolean): Promise<boolean> => {
    let map = maps[slot]
    if (map === undefined) {
      map = new OffsetMap(mapBytes)
      maps[slot] = map
    }
    busy.add(target)
    try {
      const pass = target.beginClean(at, map)
      if (pass === undefined) return true
      while (!pass.done) {
        if (!keepGoing()) {
          pass.abort()
          break
        }
        const before = pass.stats.bytesWritten
        const read = pass.step()
        await pace(read + pass.stats.bytesWritten - before)
        await new Promise<void>((resolve) => setImmediate(resolve))
      }
      add(pass.stats)
      return true
    } catch (e) {
      totals.failures++
      log(
        `log cleaner: cleaning ${target.topic}-${target.partition} failed: ${e instanceof Error ? e.message : String(e)}`
      )
      return false
    } finally {
      busy.delete(target)
    }
  }

  // A partition whose pass failed is left alone until the next start, as Kafka marks it uncleanable.
  const failed = new Set<PartitionLog>()
  const worker = async (slot: number): Promise<void> => {
    while (running) {
      const target = pick(now())
      if (target === undefined || failed.has(target)) {
        await pause(config.backoffMs)
        continue
      }
      if (!(await clean(slot, target, now(), () => running))) failed.add(target)
    }
  }

  return {
    start: () => {
      if (!config.enable || running) return
      running = true
      halt = new AbortController()
      workers = Array.from({ length: threads }, (_, i) => worker(i))
    },
    stop: async () => {
      running = false
      halt.abort()
      await Promise.all(workers)
      workers = []
    },
    cleanNow: async (at) => {
      let passes = 0
      const t = at ?? now()
      for (let i = 0; i < 10_000; i++) {
        const target = pick(t)
        if (target === undefined || failed.has(target)) return passes
        const before = totals.passes
        if (!(await clean(0, target, t, () => true))) {
          failed.add(target)
          return passes
        }
        if (totals.passes === before) return passes
        passes++
      }
      return passes
    },
    stats: () => ({ ...totals })
  }
}

/** A running cleaner that follows its settings: `reconfigure` restarts it when they changed. */
export interface ReconfigurableCleaner {
  /** Reads the settings again; a change restarts the cleaner (a pass in progress is abandoned, runs again). */
  readonly reconfigure: () => void
  readonly stop: () => Promise<void>
}

/** Starts a cleaner on `settings()`; `reconfigure` applies changed dynamic log.cleaner.* settings. */
export const reconfigurable = (
  settings: () => LogCleanerConfig,
  candidates: () => Iterable<CleanerCandidate>,
  options: LogCleanerOptions = {}
): ReconfigurableCleaner => {
  let config = settings()
  let cleaner = make(config, candidates, options)
  let stopped = false
  cleaner.start()
  return {
    reconfigure: () => {
      const next = settings()
      if (stopped || JSON.stringify(next) === JSON.stringify(config)) return
      config = next
      const previous = cleaner
      cleaner = make(next, candidates, options)
      void previous.stop().then(() => {
        if (!stopped) cleaner.start()
      })
    },
    stop: () => {
      stopped = true
      return cleaner.stop()
    }
  }
}
