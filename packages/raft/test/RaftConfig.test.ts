import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import * as RaftConfig from "../src/RaftConfig.js"

describe("RaftConfig", () => {
  it("parses controller.quorum.voters", () => {
    expect(RaftConfig.parseVoters("1@localhost:9093, 2@[::1]:9094,3@c3.example:19093")).toEqual(
      Either.right([
        { id: 1, host: "localhost", port: 9093 },
        { id: 2, host: "[::1]", port: 9094 },
        { id: 3, host: "c3.example", port: 19093 }
      ])
    )
  })

  it("refuses malformed voters with the reason", () => {
    const reason = (value: string) =>
      Either.match(RaftConfig.parseVoters(value), { onLeft: (e) => e.reason, onRight: () => "accepted" })
    expect(reason("")).toBe("no voters")
    expect(reason("1@h:9093,1@g:9094")).toBe("node id 1 appears twice")
    expect(reason("1@h")).toMatch(/not id@host:port/)
    expect(reason("1@h:0")).toMatch(/out of range/)
    expect(reason("x@h:1")).toMatch(/not id@host:port/)
  })

  it.prop(
    "format and parse round-trip",
    [
      fc.uniqueArray(
        fc.record({
          id: fc.integer({ min: 0, max: 100_000 }),
          host: fc.stringMatching(/^[a-z][a-z0-9.-]{0,20}$/),
          port: fc.integer({ min: 1, max: 65535 })
        }),
        { minLength: 1, maxLength: 7, selector: (v) => v.id }
      )
    ],
    ([voters]) => {
      expect(RaftConfig.parseVoters(RaftConfig.formatVoters(voters))).toEqual(Either.right(voters))
    }
  )

  it("a majority of 3 is 2, of 5 is 3", () => {
    expect(RaftConfig.majority(RaftConfig.make(1, [1, 2, 3]))).toBe(2)
    expect(RaftConfig.majority(RaftConfig.make(1, [5, 4, 3, 2, 1]))).toBe(3)
    expect(RaftConfig.make(1, [3, 1, 2]).voters).toEqual([1, 2, 3])
  })
})
