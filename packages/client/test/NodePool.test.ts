import { describe, expect, it } from "@effect/vitest"
import { leastLoaded, parseAddress } from "../src/NodePool.js"

describe("NodePool", () => {
  it("parses host:port, including bracketed IPv6", () => {
    expect(parseAddress("localhost:9092")).toEqual({ host: "localhost", port: 9092 })
    expect(parseAddress("[::1]:19092")).toEqual({ host: "::1", port: 19092 })
    expect(() => parseAddress("no-port")).toThrow()
  })

  it("prefers the connected broker with the fewest requests in flight", () => {
    expect(
      leastLoaded([
        { inFlight: 4, backingOff: false },
        { inFlight: 1, backingOff: false },
        { inFlight: null, backingOff: false }
      ])
    ).toBe(1)
  })

  it("prefers a fresh connect to a broker backing off, and keeps the first on ties", () => {
    expect(
      leastLoaded([
        { inFlight: null, backingOff: true },
        { inFlight: null, backingOff: false },
        { inFlight: null, backingOff: false }
      ])
    ).toBe(1)
    expect(leastLoaded([{ inFlight: null, backingOff: true }])).toBe(0)
    expect(leastLoaded([])).toBe(-1)
  })
})
