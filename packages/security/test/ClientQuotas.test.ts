import { describe, expect, it } from "vitest"
import * as fc from "fast-check"
import * as ClientQuotas from "../src/ClientQuotas.js"

type Part = { readonly entityType: string; readonly entityName: string | null }
const key = (entity: ReadonlyArray<Part>) =>
  [...entity]
    .sort((a, b) => a.entityType.localeCompare(b.entityType))
    .map((e) => `${e.entityType}=${e.entityName ?? "<default>"}`)
    .join(",")

/** Quotas by entity, written as `client-id=c,user=u` with `<default>` for a default name. */
const lookup = (quotas: Record<string, number>) => (entity: ReadonlyArray<Part>) => {
  const v = quotas[key(entity)]
  return new Map(v === undefined ? [] : [["producer_byte_rate", v]])
}

// Kafka's order, most specific first, with who is measured together at that level.
const ORDER: ReadonlyArray<readonly [string, string, string]> = [
  ["client-id=c,user=u", "u", "c"],
  ["client-id=<default>,user=u", "u", "c"],
  ["user=u", "u", ""],
  ["client-id=c,user=<default>", "u", "c"],
  ["client-id=<default>,user=<default>", "u", "c"],
  ["user=<default>", "u", ""],
  ["client-id=c", "", "c"],
  ["client-id=<default>", "", "c"]
]

describe("ClientQuotas.resolve", () => {
  it("takes the first entity in Kafka's order that has the key", () => {
    ORDER.forEach(([entity, user, clientId], i) => {
      // This level and every less specific one are set; the more specific ones are not.
      const quotas: Record<string, number> = {}
      for (const [j, [e]] of ORDER.slice(i).entries()) quotas[e] = 1000 * (i + 1) + j
      expect(ClientQuotas.resolve(lookup(quotas), "producer_byte_rate", "u", "c"), entity).toEqual({
        bound: 1000 * (i + 1),
        user,
        clientId
      })
    })
  })

  it("ignores other users' and client-ids' quotas, and other keys", () => {
    const quotas = lookup({ "client-id=d,user=u": 1, "user=v": 2, "client-id=d": 3 })
    expect(ClientQuotas.resolve(quotas, "producer_byte_rate", "u", "c")).toBeUndefined()
    expect(ClientQuotas.resolve(quotas, "consumer_byte_rate", "u", "d")).toBeUndefined()
    expect(ClientQuotas.resolve(quotas, "producer_byte_rate", "u", "d")?.bound).toBe(1)
  })

  it("names a user by its principal's name", () => {
    expect(ClientQuotas.userOf("User:alice")).toBe("alice")
    expect(ClientQuotas.userOf("User:ANONYMOUS")).toBe("ANONYMOUS")
  })
})

describe("ClientQuotas.WindowedRate", () => {
  const config = { samples: 11, windowMs: 1000 }

  it("measures a first burst over the windows but one, then over the time its windows span", () => {
    const r = new ClientQuotas.WindowedRate(config)
    r.record(10_000, 0)
    expect(r.windowSizeMs(0)).toBe(10_000)
    expect(r.rate(0)).toBe(1000)
    r.record(10_000, 10_500)
    // Spanning 10.5 s: no longer padded.
    expect(r.windowSizeMs(10_500)).toBe(10_500)
    expect(r.total(10_500)).toBe(20_000)
    // The first window is older than 11 windows at 11 s and is dropped.
    expect(r.total(11_000)).toBe(10_000)
    expect(r.idle(22_000)).toBe(true)
  })

  it("throttles for the excess as a share of the quota, times the window", () => {
    expect(ClientQuotas.throttleTimeMs(150, 100, 10_000)).toBe(5000)
    expect(ClientQuotas.throttleTimeMs(100, 100, 10_000)).toBe(0)
    expect(ClientQuotas.throttleTimeMs(50, 100, 10_000)).toBe(0)
  })

  it("keeps the rate within its quota over time for a client that waits as told (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1000, max: 100_000 }),
        fc.array(fc.record({ bytes: fc.integer({ min: 1, max: 50_000 }), gap: fc.integer({ min: 0, max: 3000 }) }), {
          minLength: 1,
          maxLength: 60
        }),
        (bound, sends) => {
          const m = new ClientQuotas.ClientQuotaManager("producer_byte_rate", config)
          const q = { bound, user: "u", clientId: "c" }
          let now = 0
          let sent = 0
          for (const s of sends) {
            const ms = m.recordAndGetThrottleTimeMs(q, s.bytes, now)
            sent += s.bytes
            expect(ms).toBeGreaterThanOrEqual(0)
            now += s.gap + ms
          }
          // A client that waited every throttle sent, in each span of the 11 windows kept, no more than its
          // quota over the span and one request over it (the rate forgets what is older than the span, so a
          // request arriving just as the span ends starts a burst anew), plus one request at the end.
          const maxRequest = Math.max(...sends.map((s) => s.bytes))
          const spans = Math.ceil((now + 1) / 11_000)
          expect(sent).toBeLessThanOrEqual(spans * (bound * 11 + maxRequest) + maxRequest)
        }
      ),
      { numRuns: 1000 }
    )
  })

  it("the throttle brings the rate back to the quota if nothing more is sent (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1000, max: 100_000 }),
        fc.array(fc.record({ bytes: fc.integer({ min: 1, max: 200_000 }), gap: fc.integer({ min: 0, max: 1500 }) }), {
          minLength: 1,
          maxLength: 20
        }),
        (bound, sends) => {
          const r = new ClientQuotas.WindowedRate(config)
          let now = 0
          for (const s of sends) {
            now += s.gap
            r.record(s.bytes, now)
          }
          const ms = ClientQuotas.throttleTimeMs(r.rate(now), bound, r.windowSizeMs(now))
          if (ms === 0) expect(r.rate(now)).toBeLessThanOrEqual(bound)
          else {
            expect(r.rate(now)).toBeGreaterThan(bound)
            // Waiting the throttle with the same windows kept: total / (window + throttle) is the quota.
            const total = r.total(now)
            expect(Math.abs((total * 1000) / (r.windowSizeMs(now) + ms) - bound)).toBeLessThanOrEqual(bound * 1e-3)
          }
        }
      ),
      { numRuns: 300 }
    )
  })

  it("is the same whether values recorded at one time come at once or in parts (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ parts: fc.array(fc.nat(10_000), { minLength: 1, maxLength: 4 }), gap: fc.nat(2500) }), {
          maxLength: 30
        }),
        (steps) => {
          const whole = new ClientQuotas.WindowedRate(config)
          const split = new ClientQuotas.WindowedRate(config)
          let now = 0
          for (const s of steps) {
            now += s.gap
            whole.record(
              s.parts.reduce((a, b) => a + b, 0),
              now
            )
            for (const p of s.parts) split.record(p, now)
            expect(split.rate(now)).toBeCloseTo(whole.rate(now), 9)
          }
        }
      ),
      { numRuns: 200 }
    )
  })

  it("caps what one fetch may take at the quota over the windows but one", () => {
    const m = new ClientQuotas.ClientQuotaManager("consumer_byte_rate", config)
    expect(m.maxValueInQuotaWindow({ bound: 20_000, user: "", clientId: "c" })).toBe(200_000)
  })
})

describe("ClientQuotas: request_percentage", () => {
  const q = { bound: 10, user: "u", clientId: "c" }

  it("records handling time as a share of one handler thread and bounds the throttle to one window", () => {
    // 100 ms of handling is 10 percent-seconds: over the first burst's 10 s, a rate of 1 %.
    expect(ClientQuotas.requestTimePercent(100)).toBe(10)
    const m = new ClientQuotas.ClientQuotaManager("request_percentage", ClientQuotas.DEFAULT_WINDOW, 1000)
    // 10 % of one thread over 10 s is 1 s of handling: within it, no throttle.
    expect(m.recordAndGetThrottleTimeMs(q, ClientQuotas.requestTimePercent(1000), 0)).toBe(0)
    // 1.1 s over 10 s is 11 %: 10 % over the quota, times the 10 s window.
    expect(m.recordAndGetThrottleTimeMs(q, ClientQuotas.requestTimePercent(100), 0)).toBe(1000)
    const unbounded = new ClientQuotas.ClientQuotaManager("request_percentage")
    expect(unbounded.recordAndGetThrottleTimeMs(q, ClientQuotas.requestTimePercent(2000), 0)).toBe(10_000)
    const bounded = new ClientQuotas.ClientQuotaManager("request_percentage", ClientQuotas.DEFAULT_WINDOW, 1000)
    expect(bounded.recordAndGetThrottleTimeMs(q, ClientQuotas.requestTimePercent(2000), 0)).toBe(1000)
  })
})

describe("ClientQuotas: controller_mutation_rate (token bucket)", () => {
  const window = { samples: 10, windowMs: 1000 }
  const q = { bound: 10, user: "u", clientId: "c" }

  it("strict: accepts while the bucket is not in debt, even into debt; refuses in debt with the time to repay it", () => {
    const m = new ClientQuotas.ControllerMutationQuotaManager(window)
    const quota = m.newQuotaFor(q, true)
    // The bucket starts full: 10/s x 10 windows x 1 s = 100 tokens.
    expect(quota.record(90, 0)).toBe(true)
    expect(quota.throttleTimeMs(0)).toBe(0)
    // 10 tokens left: accepted, down to -80.
    expect(quota.record(90, 0)).toBe(true)
    expect(quota.throttleTimeMs(0)).toBe(0)
    // In debt: refused, 80 tokens at 10/s = 8 s.
    expect(quota.record(1, 0)).toBe(false)
    expect(quota.throttleTimeMs(0)).toBe(8000)
    // The throttle time counts down; a new request of the pair shares the bucket.
    expect(quota.throttleTimeMs(3000)).toBe(5000)
    const next = m.newQuotaFor(q, true)
    expect(next.record(1, 5000)).toBe(false)
    expect(next.throttleTimeMs(5000)).toBe(3000)
    // Repaid at 8 s: accepted again.
    expect(m.newQuotaFor(q, true).record(1, 8000)).toBe(true)
  })

  it("permissive: always accepts, and throttles once the bucket is in debt", () => {
    const m = new ClientQuotas.ControllerMutationQuotaManager(window)
    const quota = m.newQuotaFor(q, false)
    expect(quota.record(100, 0)).toBe(true)
    expect(quota.throttleTimeMs(0)).toBe(0)
    expect(quota.record(50, 0)).toBe(true)
    expect(quota.throttleTimeMs(0)).toBe(5000)
    expect(m.newQuotaFor(q, false).record(10, 1000)).toBe(true)
  })

  it("gives back what was not mutated, refills no higher than the burst, and has no limit without a quota", () => {
    const m = new ClientQuotas.ControllerMutationQuotaManager(window)
    const quota = m.newQuotaFor(q, true)
    expect(quota.record(150, 0)).toBe(true)
    quota.unrecord(150, 0)
    expect(quota.record(1, 0)).toBe(true)
    const bucket = new ClientQuotas.TokenBucket(window)
    bucket.record(50, 10, 0)
    expect(bucket.tokensAt(10, 2000)).toBe(70)
    expect(bucket.tokensAt(10, 60_000)).toBe(100)
    expect(ClientQuotas.debtThrottleTimeMs(-5, 10)).toBe(500)
    const none = m.newQuotaFor(undefined, true)
    expect(none).toBe(ClientQuotas.UNBOUNDED_MUTATION_QUOTA)
    expect(none.record(1_000_000, 0)).toBe(true)
  })
})

describe("ClientQuotas: connection_creation_rate", () => {
  const ips = (quotas: Record<string, number>) => (entity: ReadonlyArray<Part>) => {
    const v = quotas[entity[0]?.entityName ?? "<default>"]
    return new Map(v === undefined ? [] : [["connection_creation_rate", v]])
  }

  it("applies an IP's own quota, else the default IP's; an IPv4-mapped address is its IPv4 address", () => {
    expect(ClientQuotas.connectionRateOf(ips({ "10.0.0.1": 2, "<default>": 50 }), "10.0.0.1")).toBe(2)
    expect(ClientQuotas.connectionRateOf(ips({ "10.0.0.1": 2, "<default>": 50 }), "::ffff:10.0.0.1")).toBe(2)
    expect(ClientQuotas.connectionRateOf(ips({ "10.0.0.1": 2, "<default>": 50 }), "10.0.0.2")).toBe(50)
    expect(ClientQuotas.connectionRateOf(ips({ "10.0.0.1": 2 }), "10.0.0.2")).toBeUndefined()
  })

  it("throttles the connection that takes the rate over the quota for the excess, at most a window, and does not count it", () => {
    const c = new ClientQuotas.ConnectionQuotas(ClientQuotas.DEFAULT_WINDOW)
    // 2/s over the first burst's 10 s: 20 connections pass.
    for (let i = 0; i < 20; i++) expect(c.recordAndGetThrottleTimeMs("10.0.0.1", 2, 0)).toBe(0)
    // The 21st would make 2.1/s: 5 % over the quota, times the 10 s window: 500 ms.
    expect(c.recordAndGetThrottleTimeMs("10.0.0.1", 2, 0)).toBe(500)
    // It was taken back out, so the next is throttled the same; another IP is not.
    expect(c.recordAndGetThrottleTimeMs("10.0.0.1", 2, 0)).toBe(500)
    expect(c.recordAndGetThrottleTimeMs("10.0.0.2", 2, 0)).toBe(0)
    expect(c.recordAndGetThrottleTimeMs("10.0.0.1", undefined, 0)).toBe(0)
    // Far over: bounded to one window.
    const tight = new ClientQuotas.ConnectionQuotas(ClientQuotas.DEFAULT_WINDOW)
    expect(tight.recordAndGetThrottleTimeMs("10.0.0.3", 0.05, 0)).toBe(1000)
    // Still over 2 s later (20 in the 10 s measured); once the first window has gone, a connection passes.
    expect(c.recordAndGetThrottleTimeMs("10.0.0.1", 2, 2000)).toBe(500)
    expect(c.recordAndGetThrottleTimeMs("10.0.0.1", 2, 11_000)).toBe(0)
  })
})
