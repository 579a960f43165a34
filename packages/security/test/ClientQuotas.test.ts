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
          // A client that waited every throttle sent no more than its quota over the time, plus a first
          // burst (the windows kept) and a request over the quota at either end.
          const maxRequest = Math.max(...sends.map((s) => s.bytes))
          expect(sent).toBeLessThanOrEqual((bound * (now + 11_000)) / 1000 + 2 * maxRequest)
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
