import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@clustermirror/protocol"
import * as Validation from "../src/Validation.js"

const E = Errors.ErrorCode

const steps = (answers: ReadonlyArray<number>, valid = true) => {
  const stamps: Array<number> = []
  let caughtUp = 0
  let stale = 0
  let offset = 10
  return {
    stamps,
    caughtUp: () => caughtUp,
    stale: () => stale,
    steps: {
      validate: async () =>
        valid
          ? { _tag: "Valid" as const, stateValidationOffset: offset++ }
          : { _tag: "Invalid" as const, errorCode: E.INVALID_REQUEST, errorMessage: "no such mirror" },
      refuse: (errorCode: number, errorMessage: string) => ({ errorCode, errorMessage }),
      submit: async (stamp: number) => {
        stamps.push(stamp)
        return { errorCode: answers[Math.min(stamps.length, answers.length) - 1]!, errorMessage: null }
      },
      errorCodeOf: (r: { readonly errorCode: number }) => r.errorCode,
      catchUp: async () => {
        caughtUp++
      },
      onStale: () => {
        stale++
      }
    }
  }
}

describe("Validation", () => {
  it("validates again after catching up while the controller finds the stamp stale", async () => {
    const s = steps([E.INVALID_CLUSTER_MIRROR_STATES, E.INVALID_CLUSTER_MIRROR_STATES, E.NONE])
    expect((await Validation.validated(s.steps)).errorCode).toBe(E.NONE)
    expect(s.stamps).toEqual([10, 11, 12])
    expect(s.caughtUp()).toBe(3)
    expect(s.stale()).toBe(2)
  })

  it("answers the controller's refusal after the last attempt", async () => {
    const s = steps([E.INVALID_CLUSTER_MIRROR_STATES])
    expect((await Validation.validated(s.steps)).errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
    expect(s.stamps).toHaveLength(Validation.STALE_VALIDATION_ATTEMPTS)
  })

  it("answers a refused validation without asking the controller", async () => {
    const s = steps([E.NONE], false)
    expect(await Validation.validated(s.steps)).toEqual({
      errorCode: E.INVALID_REQUEST,
      errorMessage: "no such mirror"
    })
    expect(s.stamps).toEqual([])
  })
})
