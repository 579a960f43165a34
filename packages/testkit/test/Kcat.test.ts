import { describe, expect, it } from "@effect/vitest"
import * as Kcat from "../src/Kcat.js"

describe("Kcat", () => {
  it("reads the offsets of kcat -Q by partition, -1 for partitions it did not list", () => {
    const out = "lines [2] offset 17\nlines [0] offset 378\n% some notice\n"
    expect(Kcat.parseQueriedOffsets(out, 4)).toEqual([378, -1, 17, -1])
  })
})
