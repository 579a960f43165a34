import { describe, expect, it } from "vitest"
import { FastCheck as fc } from "effect"
import { TopicPartitionMap } from "../src/TopicPartitionMap.js"

describe("TopicPartitionMap", () => {
  it("behaves like a map keyed by (topic, partition) under any sequence of sets and deletes", () => {
    const op = fc.record({
      del: fc.boolean(),
      topic: fc.constantFrom("a", "b", "a\u0000", ""),
      partition: fc.integer({ min: 0, max: 5 }),
      value: fc.integer()
    })
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const m = new TopicPartitionMap<number>()
        const model = new Map<string, number>()
        for (const o of ops) {
          const k = JSON.stringify([o.topic, o.partition])
          if (o.del) expect(m.delete(o.topic, o.partition)).toBe(model.delete(k))
          else {
            m.set(o.topic, o.partition, o.value)
            model.set(k, o.value)
          }
          expect(m.size).toBe(model.size)
        }
        for (const [k, v] of model) {
          const [t, p] = JSON.parse(k) as [string, number]
          expect(m.get(t, p)).toBe(v)
          expect(m.has(t, p)).toBe(true)
        }
        expect([...m.values()].sort()).toEqual([...model.values()].sort())
        expect([...m.entries()].map(([t, p, v]) => [JSON.stringify([t, p]), v]).sort()).toEqual([...model].sort())
        const copy = m.clone()
        copy.set("a", 0, -1)
        copy.delete("b", 1)
        for (const [k, v] of model) {
          const [t, p] = JSON.parse(k) as [string, number]
          expect(m.get(t, p)).toBe(v)
        }
        m.clear()
        expect(copy.get("a", 0)).toBe(-1)
        expect(m.size).toBe(0)
        expect([...m.values()]).toEqual([])
      })
    )
  })
})
