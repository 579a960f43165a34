import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { intersect } from "../src/Connection.js"

describe("Connection.intersect", () => {
  it("is the highest version in both ranges", () => {
    expect(intersect({ min: 0, max: 12 }, { min: 0, max: 13 })).toBe(12)
    expect(intersect({ min: 3, max: 12 }, { min: 0, max: 5 })).toBe(5)
    expect(intersect({ min: 3, max: 12 }, { min: 0, max: 2 })).toBeNull()
    expect(intersect({ min: 0, max: 1 }, null)).toBeNull()
  })

  const range = fc
    .tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: 20 }))
    .map(([a, b]) => ({ min: Math.min(a, b), max: Math.max(a, b) }))

  it("answers a version in both ranges, or null exactly when they are disjoint", () => {
    fc.assert(
      fc.property(range, range, (a, b) => {
        const v = intersect(a, b)
        const overlap = Math.max(a.min, b.min) <= Math.min(a.max, b.max)
        if (v === null) expect(overlap).toBe(false)
        else {
          expect(v).toBeGreaterThanOrEqual(Math.max(a.min, b.min))
          expect(v).toBe(Math.min(a.max, b.max))
        }
      })
    )
  })
})
