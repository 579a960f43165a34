/**
 * Lets the partition work that blocks the event loop (log appends and truncations done synchronously by
 * the broker's storage) run a few partitions per turn of the event loop, so that sockets, timers and
 * signals are served between them. Without it, a change reaching thousands of partitions at once (a
 * stop of every mirrored topic) resumes all their continuations in one microtask drain: the broker
 * answers nothing — not the request that caused the change, not SIGTERM — until every partition is done.
 *
 * Turns are handed out in arrival order. How many per event-loop turn adapts to how long the previous
 * turn took: halved when it ran over `sliceMs`, doubled (up to `maxPerTurn`) when it did not. It owns
 * no partition state and decides nothing about them, and reads time only through `now` (the owner's
 * Clock).
 */

export interface PacerOptions {
  /** A turn of the event loop should take about this long at most (default 20 ms). */
  readonly sliceMs?: number
  /** Most waiters released in one event-loop turn (default 64). */
  readonly maxPerTurn?: number
  /** The owner's clock, in ms (the mirror reconciler passes Effect's `Clock`). */
  readonly now: () => number
}

export class Pacer {
  private waiting: Array<(go: boolean) => void> = []
  private head = 0
  private scheduled = false
  private perTurn = 1
  private lastRelease: number | undefined
  private closed = false
  private readonly sliceMs: number
  private readonly maxPerTurn: number
  private readonly now: () => number

  constructor(options: PacerOptions) {
    this.sliceMs = options.sliceMs ?? 20
    this.maxPerTurn = Math.max(1, options.maxPerTurn ?? 64)
    this.now = options.now
  }

  /** Resolves with true once it is the caller's turn, with false when the pacer closed meanwhile. */
  turn(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false)
    return new Promise((resolve) => {
      this.waiting.push(resolve)
      this.schedule()
    })
  }

  /** Waiters not released yet. */
  get pending(): number {
    return this.waiting.length - this.head
  }

  /** Releases every waiter with false; later turns resolve false at once. */
  close(): void {
    this.closed = true
    const waiting = this.waiting.slice(this.head)
    this.waiting = []
    this.head = 0
    for (const w of waiting) w(false)
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return
    this.scheduled = true
    setImmediate(() => this.release())
  }

  private release(): void {
    this.scheduled = false
    if (this.closed) return
    const now = this.now()
    if (this.lastRelease !== undefined)
      this.perTurn =
        now - this.lastRelease > this.sliceMs
          ? Math.max(1, this.perTurn >> 1)
          : Math.min(this.maxPerTurn, this.perTurn * 2)
    const n = Math.min(this.perTurn, this.pending)
    for (let i = 0; i < n; i++) this.waiting[this.head++]!(true)
    if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.head)
      this.head = 0
    }
    if (this.pending > 0) {
      this.lastRelease = now
      this.schedule()
    } else {
      // Idle: the next burst starts small again, its work may be heavier than this one's.
      this.lastRelease = undefined
      this.perTurn = 1
    }
  }
}
