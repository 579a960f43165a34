import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as ReplicationQuota from "../src/ReplicationQuota.js"

const W: ReplicationQuota.QuotaWindow = ReplicationQuota.DEFAULT_WINDOW

/** Records `bytes` at each of the given times. */
const recorded = (window: ReplicationQuota.QuotaWindow, events: ReadonlyArray<readonly [number, number]>) =>
  events.reduce((r, [at, bytes]) => ReplicationQuota.record(r, window, bytes, at), ReplicationQuota.empty)

/**
 * A sender that offers `chunk` bytes every `tickMs` from time 0 to `endMs` and sends them only while the quota
 * is not exceeded; the total sent.
 */
const throttledSender = (
  window: ReplicationQuota.QuotaWindow,
  bound: number,
  chunk: number,
  tickMs: number,
  endMs: number
): number => {
  let r = ReplicationQuota.empty
  let total = 0
  for (let t = 0; t <= endMs; t += tickMs) {
    if (ReplicationQuota.isExceeded(r, window, bound, t)) continue
    r = ReplicationQuota.record(r, window, chunk, t)
    total += chunk
  }
  return total
}

describe("ReplicationQuota windowed rate", () => {
  it("measures over at least one window, then over the time since the oldest sample", () => {
    const r = recorded(W, [[10_000, 500_000]])
    // Just recorded: over one window (1 s), not over 0 ms.
    expect(ReplicationQuota.rate(r, W, 10_000)).toBe(500_000)
    expect(ReplicationQuota.rate(r, W, 10_500)).toBe(500_000)
    expect(ReplicationQuota.rate(r, W, 14_000)).toBe(125_000)
    const more = ReplicationQuota.record(r, W, 500_000, 14_000)
    expect(ReplicationQuota.rate(more, W, 15_000)).toBe(200_000)
    expect(more.samples.map((s) => s.start)).toEqual([10_000, 14_000])
  })

  it("adds to the current sample within a window and forgets samples older than all the windows", () => {
    const r = recorded(W, [
      [0, 100],
      [999, 100],
      [1_000, 100]
    ])
    expect(r.samples).toEqual([
      { start: 0, bytes: 200 },
      { start: 1_000, bytes: 100 }
    ])
    // 11 windows of 1 s: the sample of 0 counts until 11 s.
    expect(ReplicationQuota.rate(r, W, 10_999)).toBeCloseTo(300 / 10.999, 9)
    expect(ReplicationQuota.rate(r, W, 11_000)).toBe(100 / 10)
    expect(ReplicationQuota.rate(r, W, 12_000)).toBe(0)
    const small: ReplicationQuota.QuotaWindow = { samples: 2, windowMs: 1000 }
    expect(
      recorded(small, [
        [0, 1],
        [1_000, 2],
        [2_000, 3]
      ]).samples.map((s) => s.bytes)
    ).toEqual([2, 3])
  })

  it("is exceeded above the bound only, and never when unlimited", () => {
    const r = recorded(W, [[0, 1_000]])
    expect(ReplicationQuota.isExceeded(r, W, 1_000, 0)).toBe(false)
    expect(ReplicationQuota.isExceeded(r, W, 999, 0)).toBe(true)
    expect(ReplicationQuota.isExceeded(r, W, 999, 1_100)).toBe(false)
    const huge = recorded(W, [[0, Number.MAX_SAFE_INTEGER]])
    expect(ReplicationQuota.isExceeded(huge, W, ReplicationQuota.UNLIMITED, 0)).toBe(false)
  })

  it.prop(
    "a sender that sends only while the quota is not exceeded keeps to the bound within the windows",
    [
      fc.integer({ min: 1_000, max: 10_000_000 }),
      fc.integer({ min: 2, max: 11 }),
      fc.integer({ min: 100, max: 1_000 }),
      fc.integer({ min: 1, max: 50 }),
      fc.integer({ min: 1, max: 5 }),
      fc.double({ min: 0, max: 1, noNaN: true })
    ],
    ([bound, samples, windowMs, tickMs, over, at]) => {
      const window = { samples, windowMs }
      // Able to send faster than the bound, for as long as no sample is forgotten.
      const chunk = Math.ceil(((bound * tickMs) / 1000) * over)
      const endMs = Math.floor(at * (samples * windowMs - 1))
      const total = throttledSender(window, bound, chunk, tickMs, endMs)
      const last = endMs - (endMs % tickMs)
      expect(total).toBeLessThanOrEqual((bound * Math.max(last, windowMs)) / 1000 + chunk + 1e-6)
      expect(total).toBeGreaterThanOrEqual((bound * last) / 1000 - 1e-6)
    }
  )

  it.prop(
    "the rate is the retained bytes over max(elapsed, one window), whatever was recorded",
    [
      fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 1_000_000 })), {
        maxLength: 60
      }),
      fc.integer({ min: 0, max: 20_000 })
    ],
    ([steps, after]) => {
      const window = { samples: 4, windowMs: 1_000 }
      let t = 0
      let r = ReplicationQuota.empty
      for (const [dt, bytes] of steps) {
        t += dt
        r = ReplicationQuota.record(r, window, bytes, t)
        expect(r.samples.length).toBeLessThanOrEqual(window.samples)
      }
      const now = t + after
      const kept = r.samples.filter((s) => now - s.start < window.samples * window.windowMs)
      const total = kept.reduce((n, s) => n + s.bytes, 0)
      const expected = kept.length === 0 ? 0 : total / (Math.max(now - kept[0]!.start, window.windowMs) / 1000)
      expect(ReplicationQuota.rate(r, window, now)).toBeCloseTo(expected, 6)
      expect(ReplicationQuota.rate(r, window, now)).toBeGreaterThanOrEqual(0)
    }
  )

  it("holds a long-running throttled sender near the bound", () => {
    // 60 s at 100,000 B/s, offered 1 MB/s in 10 KB chunks.
    const total = throttledSender(W, 100_000, 10_000, 10, 60_000)
    expect(total).toBeGreaterThan(100_000 * 60 * 0.95)
    expect(total).toBeLessThan(100_000 * 60 * 1.1)
  })
})

describe("ReplicationQuota throttled replicas", () => {
  it("reads '*' and the partition:broker entries naming this broker", () => {
    expect(ReplicationQuota.throttledReplicas("*", 3)).toBe("all")
    expect(ReplicationQuota.throttledReplicas(" * ", 3)).toBe("all")
    expect([...(ReplicationQuota.throttledReplicas("0:1, 0:3,1:3,2:2", 3) as Set<number>)]).toEqual([0, 1])
    expect([...(ReplicationQuota.throttledReplicas("", 3) as Set<number>)]).toEqual([])
    expect([...(ReplicationQuota.throttledReplicas(undefined, 3) as Set<number>)]).toEqual([])
    expect(ReplicationQuota.isThrottledPartition(ReplicationQuota.throttledReplicas("0:1,1:1", 1), 1)).toBe(true)
    expect(ReplicationQuota.isThrottledPartition(ReplicationQuota.throttledReplicas("0:1,1:2", 1), 1)).toBe(false)
    expect(ReplicationQuota.isThrottledPartition("all", 7)).toBe(true)
  })

  it("follows the topic configs and the bound in force, on the clock it is given", () => {
    let now = 5_000
    let configs = new Map([["follower.replication.throttled.replicas", "0:2,1:3"]])
    let config: ReplicationQuota.QuotaConfig = {
      ...ReplicationQuota.unlimitedConfig,
      followerReplicationThrottledRate: 1_000
    }
    const quota = new ReplicationQuota.ReplicationQuota({
      type: "follower",
      brokerId: 2,
      config: () => config,
      topicConfigs: (t) => (t === "orders" ? configs : new Map()),
      now: () => now
    })
    expect(quota.isThrottled("orders", 0)).toBe(true)
    expect(quota.isThrottled("orders", 1)).toBe(false)
    expect(quota.isThrottled("other", 0)).toBe(false)
    configs = new Map([["follower.replication.throttled.replicas", "*"]])
    expect(quota.isThrottled("orders", 1)).toBe(true)
    // The leader list is another quota's.
    configs = new Map([["leader.replication.throttled.replicas", "*"]])
    expect(quota.isThrottled("orders", 1)).toBe(false)

    quota.record(1_500)
    expect(quota.isQuotaExceeded()).toBe(true)
    now += 1_500
    expect(quota.isQuotaExceeded()).toBe(false)
    config = { ...config, followerReplicationThrottledRate: 500 }
    expect(quota.isQuotaExceeded()).toBe(true)
    config = { ...config, followerReplicationThrottledRate: ReplicationQuota.UNLIMITED }
    expect(quota.isQuotaExceeded()).toBe(false)
  })
})
