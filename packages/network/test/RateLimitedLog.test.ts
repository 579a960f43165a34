/**
 * The rate-limited log on a manual clock and manual timers: at most N lines per window, then one
 * summary of what was dropped when the window ends (or on flush), then lines pass again.
 */
import { describe, expect, it } from "vitest"
import * as RateLimitedLog from "../src/RateLimitedLog.js"

const harness = () => {
  let t = 0
  const lines: Array<string> = []
  const timers: Array<{ at: number; f: () => void; cancelled: boolean }> = []
  const log = RateLimitedLog.make((l) => lines.push(l), {
    maxLines: 3,
    intervalMs: 10_000,
    what: "closed connections",
    now: () => t,
    setTimer: (f, ms) => {
      const timer = { at: t + ms, f, cancelled: false }
      timers.push(timer)
      return () => {
        timer.cancelled = true
      }
    }
  })
  const advance = (ms: number) => {
    t += ms
    for (const timer of timers.splice(0))
      if (timer.cancelled) continue
      else if (timer.at <= t) timer.f()
      else timers.push(timer)
  }
  return { log, lines, advance, pendingTimers: () => timers.filter((x) => !x.cancelled).length }
}

describe("RateLimitedLog", () => {
  it("lets N lines through per window and summarizes the rest when the window ends", () => {
    const h = harness()
    for (let i = 0; i < 50; i++) h.log.log(`closing ${i}`)
    expect(h.lines).toEqual(["closing 0", "closing 1", "closing 2"])
    expect(h.pendingTimers()).toBe(1)
    h.advance(10_000)
    expect(h.lines.slice(3)).toEqual(["suppressed 47 more closed connections in the last 10 s"])
    h.log.log("closing 50")
    expect(h.lines.at(-1)).toBe("closing 50")
  })

  it("writes nothing extra when nothing was dropped, and summarizes on flush", () => {
    const h = harness()
    h.log.log("a")
    h.log.log("b")
    h.advance(20_000)
    expect(h.lines).toEqual(["a", "b"])
    for (let i = 0; i < 5; i++) h.log.log(`c${i}`)
    h.log.flush()
    expect(h.lines.slice(2)).toEqual(["c0", "c1", "c2", "suppressed 2 more closed connections in the last 10 s"])
    expect(h.pendingTimers()).toBe(0)
    h.log.flush()
    expect(h.lines).toHaveLength(6)
  })

  it("a line after the window summarizes the previous window first", () => {
    const h = harness()
    for (let i = 0; i < 4; i++) h.log.log(`x${i}`)
    h.advance(9_999)
    h.log.log("x4")
    expect(h.lines).toEqual(["x0", "x1", "x2"])
    h.advance(1)
    h.log.log("y")
    expect(h.lines.slice(3)).toEqual(["suppressed 2 more closed connections in the last 10 s", "y"])
  })
})
