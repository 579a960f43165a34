import { describe, expect, it } from "@effect/vitest"
import * as IsolatedConsumer from "../src/IsolatedConsumer.js"
import * as TransactionalProducer from "../src/TransactionalProducer.js"

describe("TransactionalProducer", () => {
  const plan: ReadonlyArray<TransactionalProducer.Step> = [
    { kind: "commit", records: 5 },
    { kind: "abort", records: 2 },
    { kind: "open", records: 1 }
  ]

  it("renders a plan as the Java program's argument", () => {
    expect(TransactionalProducer.planArgument(plan, true)).toBe("commit:5,abort:2,open:1")
    expect(TransactionalProducer.planArgument([{ kind: "send", records: 3 }], false)).toBe("send:3")
  })

  it("refuses plans the producer cannot run", () => {
    expect(() => TransactionalProducer.planArgument([...plan].reverse(), true)).toThrow(/only the last step/)
    expect(() => TransactionalProducer.planArgument([{ kind: "commit", records: 0 }], true)).toThrow(/at least one/)
    expect(() => TransactionalProducer.planArgument([{ kind: "send", records: 1 }], true)).toThrow(RangeError)
    expect(() => TransactionalProducer.planArgument([{ kind: "commit", records: 1 }], false)).toThrow(RangeError)
  })

  it("names the values a step wrote, round robin over the partitions", () => {
    expect(TransactionalProducer.values("p", 2, plan, 0)).toEqual([
      ["p-0-commit-0", "p-0-commit-2", "p-0-commit-4"],
      ["p-0-commit-1", "p-0-commit-3"]
    ])
    expect(TransactionalProducer.values("p", 3, plan, 1)).toEqual([["p-1-abort-0"], ["p-1-abort-1"], []])
    expect(TransactionalProducer.values("p", 2, plan, 7)).toEqual([[], []])
  })

  it("names the lines each step took when the records take given lines in order", () => {
    const lines = ["a b", "c", "d", "e", "f", "g h", "i", "j"]
    expect(TransactionalProducer.linesOf(plan, lines, TransactionalProducer.isCommitted)).toEqual([
      "a b",
      "c",
      "d",
      "e",
      "f"
    ])
    expect(TransactionalProducer.linesOf(plan, lines, (s) => s.kind !== "commit")).toEqual(["g h", "i", "j"])
    expect(() => TransactionalProducer.checkLines(plan, lines)).not.toThrow()
    expect(() => TransactionalProducer.checkLines(plan, lines.slice(1))).toThrow(/7 lines for a plan of 8/)
    expect(() => TransactionalProducer.checkLines(plan, ["a", "b\nc", ...lines])).toThrow(/line 1/)
  })
})

describe("IsolatedConsumer", () => {
  it("parses records (values may hold spaces) and end offsets", () => {
    const out = "record 0 4 a b\nrecord 1 0 c\nend 0 7\nend 1 1\nsome log line\n"
    expect(IsolatedConsumer.parse(out, 3)).toEqual({
      records: [
        { partition: 0, offset: 4, value: "a b" },
        { partition: 1, offset: 0, value: "c" }
      ],
      endOffsets: [7, 1, -1]
    })
  })
})
