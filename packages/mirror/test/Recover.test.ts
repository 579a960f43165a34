import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@clustermirror/protocol"
import * as Recover from "../src/Recover.js"

const E = Errors.ErrorCode
const ok = (topicName: string) => ({ topicName, errorCode: 0, errorMessage: null })

describe("Recover", () => {
  it("keeps a leader's refusal of a topic over a local success, and fails every topic on an unreachable leader", async () => {
    const refused = { topicName: "a", errorCode: E.INVALID_CLUSTER_MIRROR_STATES, errorMessage: "not failed" }
    const res = await Recover.acrossLeaders(["a", "b"], [ok("a"), ok("b")], [2, 3, 4], (leader) =>
      leader === 4
        ? undefined
        : async () => ({
            throttleTimeMs: 0,
            errorCode: 0,
            errorMessage: null,
            topics: leader === 2 ? [refused, ok("b")] : []
          })
    )
    expect(res.topics).toEqual([refused, ok("b")])
    expect(res.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)

    const down = await Recover.acrossLeaders(["a"], [ok("a")], [2], () => async () => {
      throw new Error("connection refused")
    })
    expect(down.topics).toEqual([
      { topicName: "a", errorCode: E.COORDINATOR_NOT_AVAILABLE, errorMessage: "broker 2: connection refused" }
    ])
  })

  it("answers the local results when no other broker leads a partition", async () => {
    const res = await Recover.acrossLeaders(["a"], [ok("a")], [], () => undefined)
    expect(res).toEqual({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, topics: [ok("a")] })
  })
})
