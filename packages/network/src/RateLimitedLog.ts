/**
 * A log line sink that lets at most `maxLines` lines through per `intervalMs` window and counts the
 * rest, so that a flood (a scanner, a misbehaving client reconnecting in a loop) cannot flood the log.
 * When a window that dropped lines ends, one summary line says how many were suppressed.
 *
 * Time and the timer are passed in (`now`, `setTimer`), so tests drive it without sleeping. It owns only
 * the one pending timer, which never keeps the process alive.
 */

export interface RateLimitOptions {
  /** Lines let through per window (default 10). */
  readonly maxLines?: number
  /** Window length in ms (default 10 000). */
  readonly intervalMs?: number
  /** What the lines are, for the summary: "suppressed 12 more <what> in the last 10 s". */
  readonly what?: string
  readonly now?: () => number
  /** Runs `f` after `ms`; returns a cancel function. Default: an unref'd `setTimeout`. */
  readonly setTimer?: (f: () => void, ms: number) => () => void
}

export interface RateLimitedLog {
  readonly log: (line: string) => void
  /** Writes the pending summary now (e.g. on shutdown) and cancels its timer. */
  readonly flush: () => void
}

const defaultTimer = (f: () => void, ms: number): (() => void) => {
  const t = setTimeout(f, ms)
  t.unref()
  return () => clearTimeout(t)
}

export const make = (sink: (line: string) => void, options: RateLimitOptions = {}): RateLimitedLog => {
  const maxLines = options.maxLines ?? 10
  const intervalMs = options.intervalMs ?? 10_000
  const what = options.what ?? "lines"
  const now = options.now ?? Date.now
  const setTimer = options.setTimer ?? defaultTimer
  let windowStart = Number.NEGATIVE_INFINITY
  let passed = 0
  let suppressed = 0
  let cancel: (() => void) | null = null

  const summarize = (): void => {
    cancel?.()
    cancel = null
    if (suppressed > 0) sink(`suppressed ${suppressed} more ${what} in the last ${Math.round(intervalMs / 1000)} s`)
    suppressed = 0
  }

  const log = (line: string): void => {
    const t = now()
    if (t - windowStart >= intervalMs) {
      summarize()
      windowStart = t
      passed = 0
    }
    if (passed < maxLines) {
      passed++
      sink(line)
      return
    }
    suppressed++
    cancel ??= setTimer(summarize, Math.max(0, windowStart + intervalMs - t))
  }

  return { log, flush: summarize }
}
