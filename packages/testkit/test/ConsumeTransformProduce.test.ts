import { describe, expect, it } from "@effect/vitest"
import * as ConsumeTransformProduce from "../src/ConsumeTransformProduce.js"

describe("ConsumeTransformProduce", () => {
  const base = {
    bootstrap: "127.0.0.1:9",
    input: "in",
    output: "out",
    partitions: 2,
    groupId: "g",
    transactionalId: "t"
  }

  it("parses the transactions in the order they ended, and the final tally", () => {
    const stdout = "ready\ncommitted 1 16\naborted 0 16\ncommitted 0 16\ndone 2 1\n"
    expect(ConsumeTransformProduce.parse(stdout)).toEqual({
      transactions: [
        { outcome: "committed", partition: 1, records: 16 },
        { outcome: "aborted", partition: 0, records: 16 },
        { outcome: "committed", partition: 0, records: 16 }
      ],
      commits: 2,
      aborts: 1
    })
  })

  it("has no result without the done line (the loop did not finish)", () => {
    expect(ConsumeTransformProduce.parse("ready\ncommitted 0 4\n")).toBeUndefined()
  })

  it("refuses a chunk or an abort cadence the loop cannot finish with", async () => {
    await expect(ConsumeTransformProduce.run({ ...base, chunk: 0, abortEvery: 0 })).rejects.toThrow(RangeError)
    await expect(ConsumeTransformProduce.run({ ...base, chunk: 4, abortEvery: 1 })).rejects.toThrow(/at least 2/)
    await expect(ConsumeTransformProduce.run({ ...base, chunk: 4, abortEvery: -1 })).rejects.toThrow(RangeError)
  })
})
