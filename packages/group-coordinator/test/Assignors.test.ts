import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Assignors from "../src/Assignors.js"

const arbSpec = (homogeneous: boolean) =>
  fc
    .record({
      topics: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 4 }),
      members: fc.integer({ min: 1, max: 7 }),
      seed: fc.array(fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), { minLength: 7, maxLength: 7 })
    })
    .map(({ topics, members, seed }): Assignors.AssignmentSpec => {
      const partitions = new Map(topics.map((n, i) => [`t${i}`, n]))
      return {
        partitions,
        members: Array.from({ length: members }, (_, m) => ({
          memberId: `m${m}`,
          subscribedTopicIds: new Set(
            [...partitions.keys()].filter((_, i) => homogeneous || (seed[m]![i] ?? false) || i === 0)
          ),
          previous: new Map()
        }))
      }
    })

const owners = (spec: Assignors.AssignmentSpec, result: ReadonlyMap<string, Assignors.Assignment>) => {
  const seen = new Map<string, Array<string>>()
  for (const [memberId, a] of result)
    for (const [t, ps] of a)
      for (const p of ps) {
        expect(spec.members.find((m) => m.memberId === memberId)!.subscribedTopicIds.has(t)).toBe(true)
        seen.set(`${t}:${p}`, [...(seen.get(`${t}:${p}`) ?? []), memberId])
      }
  for (const [t, n] of spec.partitions)
    if (spec.members.some((m) => m.subscribedTopicIds.has(t)))
      for (let p = 0; p < n; p++) expect(seen.get(`${t}:${p}`)?.length ?? 0).toBe(1)
}

const counts = (result: ReadonlyMap<string, Assignors.Assignment>) =>
  [...result.values()].map((a) => [...a.values()].reduce((n, ps) => n + ps.length, 0))

describe("Assignors", () => {
  for (const name of Assignors.NAMES) {
    const assignor = Assignors.byName(name)!
    it(`${name}: every subscribed partition goes to exactly one member subscribed to its topic`, () => {
      fc.assert(
        fc.property(arbSpec(false), (spec) => owners(spec, assignor(spec))),
        { numRuns: 300 }
      )
    })
  }

  it("uniform: with the same subscriptions the members' counts differ by at most one", () => {
    fc.assert(
      fc.property(arbSpec(true), (spec) => {
        const c = counts(Assignors.uniform(spec))
        expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1)
      }),
      { numRuns: 300 }
    )
  })

  it("uniform: a member joining moves only what balance needs; the others keep the rest", () => {
    const partitions = new Map([["t", 6]])
    const two = Assignors.uniform({
      partitions,
      members: ["a", "b"].map((memberId) => ({ memberId, subscribedTopicIds: new Set(["t"]), previous: new Map() }))
    })
    const three = Assignors.uniform({
      partitions,
      members: ["a", "b", "c"].map((memberId) => ({
        memberId,
        subscribedTopicIds: new Set(["t"]),
        previous: two.get(memberId) ?? new Map()
      }))
    })
    expect(counts(three)).toEqual([2, 2, 2])
    for (const id of ["a", "b"]) for (const p of three.get(id)!.get("t")!) expect(two.get(id)!.get("t")).toContain(p)
  })

  it("range: contiguous ranges per topic in member id order, the first ones one more", () => {
    const r = Assignors.range({
      partitions: new Map([["t", 7]]),
      members: ["b", "a", "c"].map((memberId) => ({
        memberId,
        subscribedTopicIds: new Set(["t"]),
        previous: new Map()
      }))
    })
    expect(r.get("a")!.get("t")).toEqual([0, 1, 2])
    expect(r.get("b")!.get("t")).toEqual([3, 4])
    expect(r.get("c")!.get("t")).toEqual([5, 6])
  })
})
