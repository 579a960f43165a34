/**
 * The pacer of the mirror reconciler's log work: turns in arrival order, a bounded number per
 * event-loop turn, and closing releases every waiter (a broker shutting down must not wait for work
 * queued behind thousands of partitions).
 */
import { describe, expect, it } from "vitest"
import { Pacer } from "../src/internal/Pacer.js"

const nextMacrotask = () => new Promise<void>((r) => setImmediate(r))

describe("Pacer", () => {
  it("hands out turns in arrival order, at most maxPerTurn per event-loop turn", async () => {
    const pacer = new Pacer({ maxPerTurn: 4, now: () => 0 })
    const order: Array<number> = []
    const done = Promise.all(Array.from({ length: 20 }, (_, i) => pacer.turn().then((go) => go && order.push(i))))
    const released: Array<number> = []
    while (pacer.pending > 0) {
      await nextMacrotask()
      released.push(20 - pacer.pending)
    }
    await done
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i))
    // Doubling from 1 while turns stay short, capped at 4.
    const perTurn = released.map((n, i) => n - (released[i - 1] ?? 0)).filter((n) => n > 0)
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(4)
    expect(perTurn.slice(0, 3)).toEqual([1, 2, 4])
  })

  it("releases fewer per turn when turns run long", async () => {
    let clock = 0
    const pacer = new Pacer({ maxPerTurn: 64, sliceMs: 20, now: () => clock })
    const released: Array<number> = []
    const all = Array.from({ length: 40 }, () =>
      pacer.turn().then(() => {
        // Every released waiter blocks the loop for 15 ms of (simulated) time.
        clock += 15
      })
    )
    while (pacer.pending > 0) {
      const before = pacer.pending
      await nextMacrotask()
      released.push(before - pacer.pending)
    }
    await Promise.all(all)
    // 1 (15 ms, short) → 2 (30 ms, long) → 1 → 2 → ...: never more than 2 at once.
    expect(Math.max(...released)).toBeLessThanOrEqual(2)
  })

  it("when closed, then every waiter and every later turn resolves false", async () => {
    const pacer = new Pacer({ now: () => 0 })
    const waiting = Array.from({ length: 100 }, () => pacer.turn())
    pacer.close()
    expect(await Promise.all(waiting)).toEqual(Array.from({ length: 100 }, () => false))
    expect(await pacer.turn()).toBe(false)
    expect(pacer.pending).toBe(0)
  })
})
