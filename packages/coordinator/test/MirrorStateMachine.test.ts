import { describe, expect, it } from "@effect/vitest"
import type { MirrorPartitionState } from "@clustermirror/protocol"
import { Either } from "effect"
import * as fc from "fast-check"
import * as M from "../src/MirrorStateMachine.js"

type State = MirrorPartitionState.MirrorPartitionState

const STATES: ReadonlyArray<State> = [
  "UNKNOWN",
  "LOG_TRUNCATION",
  "EPOCH_FENCING",
  "MIRRORING",
  "PAUSING",
  "PAUSED",
  "STOPPING",
  "STOPPED",
  "FAILED"
]

// KIP-1279 §4.2, written out independently of the protocol module's table.
const ALLOWED: Record<Exclude<State, "UNKNOWN" | "FAILED">, ReadonlyArray<State>> = {
  LOG_TRUNCATION: ["UNKNOWN", "STOPPED", "FAILED", "LOG_TRUNCATION"],
  EPOCH_FENCING: ["MIRRORING", "EPOCH_FENCING"],
  MIRRORING: ["LOG_TRUNCATION", "EPOCH_FENCING", "PAUSED", "FAILED", "MIRRORING"],
  PAUSING: ["MIRRORING", "PAUSING"],
  PAUSED: ["PAUSING", "PAUSED"],
  STOPPING: ["LOG_TRUNCATION", "EPOCH_FENCING", "MIRRORING", "PAUSING", "PAUSED", "FAILED", "STOPPING"],
  STOPPED: ["STOPPING", "STOPPED"]
}

const given = (state: State, extra: Partial<M.MirrorStateValue> = {}): M.MirrorStateValue => ({
  ...M.initial,
  state,
  stateEpoch: 5,
  ...extra
})

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected success, got ${JSON.stringify(e.left)}`)
  return e.right
}

const leftTag = <A, E extends { readonly _tag: string }>(e: Either.Either<A, E>): string => {
  if (Either.isRight(e)) throw new Error(`expected a refusal, got ${JSON.stringify(e.right)}`)
  return e.left._tag
}

const config: M.RetryConfig = { initialBackoffMs: 1000, maxBackoffMs: 300_000, maxAttempts: 5 }

/** A seeded generator (mulberry32) so that jitter is reproducible. */
const seeded = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe("MirrorStateMachine.transition (KIP-1279 §4.2)", () => {
  for (const [target, sources] of Object.entries(ALLOWED)) {
    for (const source of STATES) {
      const allowed = sources.includes(source)
      it(`${source} → ${target} is ${allowed ? "allowed" : "refused"}`, () => {
        const result = M.transition(given(source), target as State)
        if (allowed) {
          const next = right(result)
          expect(next.state).toBe(target)
          expect(next.stateEpoch).toBe(6)
        } else {
          expect(leftTag(result)).toBe("InvalidTransition")
        }
      })
    }
  }

  it("every state may fail, and FAILED is reached only through fail", () => {
    for (const source of STATES) {
      expect(M.fail(given(source), { message: "boom", retryable: true }).state).toBe("FAILED")
      expect(leftTag(M.transition(given(source), "FAILED"))).toBe("InvalidTransition")
    }
  })

  it("UNKNOWN is never a target", () => {
    for (const source of STATES) expect(leftTag(M.transition(given(source), "UNKNOWN"))).toBe("InvalidTransition")
  })

  it("a refusal names the trigger and both states", () => {
    const e = M.pause(given("PAUSED"))
    expect(Either.isLeft(e) && e.left.message).toBe(
      "pause: cannot move a mirror partition from PAUSED to PAUSING (only from MIRRORING)"
    )
  })
})

describe("MirrorStateMachine triggers (KIP-1279 §4.3)", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly trigger: (v: M.MirrorStateValue) => Either.Either<M.MirrorStateValue, unknown>
    readonly from: ReadonlyArray<State>
    readonly to: State
  }> = [
    { name: "startTruncation", trigger: M.startTruncation, from: ["UNKNOWN", "STOPPED"], to: "LOG_TRUNCATION" },
    { name: "truncationDone", trigger: M.truncationDone, from: ["LOG_TRUNCATION"], to: "MIRRORING" },
    { name: "epochAhead", trigger: M.epochAhead, from: ["MIRRORING"], to: "EPOCH_FENCING" },
    { name: "epochBumped", trigger: M.epochBumped, from: ["EPOCH_FENCING"], to: "MIRRORING" },
    { name: "pause", trigger: M.pause, from: ["MIRRORING"], to: "PAUSING" },
    { name: "fetcherRemoved", trigger: M.fetcherRemoved, from: ["PAUSING"], to: "PAUSED" },
    { name: "resume", trigger: M.resume, from: ["PAUSED"], to: "MIRRORING" },
    {
      name: "stop",
      trigger: M.stop,
      from: ["LOG_TRUNCATION", "EPOCH_FENCING", "MIRRORING", "PAUSING", "PAUSED", "STOPPING", "FAILED"],
      to: "STOPPING"
    },
    { name: "stopDone", trigger: (v) => M.stopDone(v, 7), from: ["STOPPING"], to: "STOPPED" }
  ]
  for (const c of cases) {
    it(`${c.name}: given ${c.from.join("/")} then ${c.to}; refused from every other state`, () => {
      for (const s of STATES) {
        const result = c.trigger(given(s))
        if (c.from.includes(s)) expect(right(result).state).toBe(c.to)
        else expect(Either.isLeft(result)).toBe(true)
      }
    })
  }

  it("stopDone records the last mirror epoch; -1 keeps an earlier one", () => {
    expect(right(M.stopDone(given("STOPPING"), 7)).lastMirrorEpoch).toBe(7)
    expect(right(M.stopDone(given("STOPPING", { lastMirrorEpoch: 3 }), -1)).lastMirrorEpoch).toBe(3)
  })

  it("withLastMirrorEpoch sets the LME without a transition", () => {
    const v = M.withLastMirrorEpoch(given("STOPPING"), 9)
    expect(v).toEqual(given("STOPPING", { lastMirrorEpoch: 9 }))
  })

  it("failure info is cleared on STOPPED, PAUSED and a fresh LOG_TRUNCATION, kept on a retry from FAILED", () => {
    const failureInfo = { previousState: "MIRRORING" as const, retryAttempt: 2, errorMessage: "x" }
    expect(right(M.stopDone(given("STOPPING", failureInfo), -1))).toMatchObject({ retryAttempt: 0, errorMessage: null })
    expect(right(M.fetcherRemoved(given("PAUSING", failureInfo)))).toMatchObject({ retryAttempt: 0 })
    expect(right(M.startTruncation(given("STOPPED", failureInfo)))).toMatchObject({ retryAttempt: 0 })
    expect(right(M.transition(given("FAILED", failureInfo), "LOG_TRUNCATION"))).toMatchObject({ retryAttempt: 2 })
    expect(right(M.truncationDone(given("LOG_TRUNCATION", failureInfo)))).toMatchObject({ retryAttempt: 2 })
  })

  it("fetchSucceeded clears the failure info of a working partition, not of a FAILED one", () => {
    const info = { previousState: "MIRRORING" as const, retryAttempt: 2, errorMessage: "x" }
    expect(M.fetchSucceeded(given("MIRRORING", info))).toEqual(given("MIRRORING"))
    expect(M.fetchSucceeded(given("FAILED", info))).toEqual(given("FAILED", info))
  })
})

describe("MirrorStateMachine FAILED (KIP-1279 §4.4)", () => {
  it("given MIRRORING, when the fetcher fails twice around a retry, then the attempt grows and the reason is kept", () => {
    const failed1 = M.fail(given("MIRRORING"), { message: "Fetch IO error: connection refused", retryable: true })
    expect(failed1).toEqual(
      given("FAILED", {
        previousState: "MIRRORING",
        retryAttempt: 1,
        errorMessage: "Fetch IO error: connection refused",
        stateEpoch: 6
      })
    )
    const retried = right(M.retry(failed1, config))
    expect(retried).toMatchObject({ state: "MIRRORING", retryAttempt: 1, stateEpoch: 7 })
    const failed2 = M.fail(retried, { message: "Fetch IO error: again", retryable: true })
    expect(failed2).toMatchObject({ state: "FAILED", previousState: "MIRRORING", retryAttempt: 2 })
  })

  it("a non-retryable failure is never retried and sticks through later failures", () => {
    const v = M.fail(given("MIRRORING"), { message: "The source topic is deleted.", retryable: false })
    expect(v.retryAttempt).toBe(M.NON_RETRYABLE)
    expect(M.shouldRetry(v, config)).toBe(false)
    expect(leftTag(M.retry(v, config))).toBe("RetryNotAllowed")
    expect(M.fail(v, { message: "later", retryable: true }).retryAttempt).toBe(M.NON_RETRYABLE)
  })

  it("a failure while FAILED keeps the original previous state and attempt", () => {
    const v = M.fail(given("LOG_TRUNCATION"), { message: "a", retryable: true })
    const again = M.fail(v, { message: "b", retryable: true })
    expect(again).toMatchObject({ previousState: "LOG_TRUNCATION", retryAttempt: 1, errorMessage: "b" })
  })

  it("retries stop at max attempts (exhaustion)", () => {
    let v = given("MIRRORING")
    for (let i = 1; i <= config.maxAttempts; i++) {
      v = M.fail(v, { message: `attempt ${i}`, retryable: true })
      expect(v.retryAttempt).toBe(i)
      if (i < config.maxAttempts) {
        expect(M.shouldRetry(v, config)).toBe(true)
        v = right(M.retry(v, config))
      }
    }
    expect(M.isExhausted(v, config)).toBe(true)
    expect(M.shouldRetry(v, config)).toBe(false)
    const e = M.retry(v, config)
    expect(Either.isLeft(e) && e.left.message).toBe(
      "Retries exhausted after 5 attempts (max 5); requires manual intervention"
    )
  })

  it("max attempts 0 disables automatic retries", () => {
    const v = M.fail(given("MIRRORING"), { message: "x", retryable: true })
    expect(M.shouldRetry(v, { ...config, maxAttempts: 0 })).toBe(false)
  })

  it("retry of a partition that is not FAILED is refused", () => {
    expect(leftTag(M.retry(given("MIRRORING"), config))).toBe("RetryNotAllowed")
  })

  it("retry targets: the previous state, or the nearest state leading back to it", () => {
    const expected: Record<State, State> = {
      LOG_TRUNCATION: "LOG_TRUNCATION",
      MIRRORING: "MIRRORING",
      STOPPING: "STOPPING",
      EPOCH_FENCING: "MIRRORING",
      PAUSING: "MIRRORING",
      PAUSED: "MIRRORING",
      STOPPED: "STOPPING",
      UNKNOWN: "LOG_TRUNCATION",
      FAILED: "LOG_TRUNCATION"
    }
    for (const s of STATES) {
      expect(M.retryTarget(s)).toBe(expected[s])
      const failed = M.fail(given(s), { message: "x", retryable: true })
      if (s !== "FAILED") expect(right(M.retry(failed, config)).state).toBe(expected[s])
    }
  })

  it("retryDelay: with a seeded random the delays grow, stay within ±20% and are capped", () => {
    const random = seeded(42)
    const big: M.RetryConfig = { initialBackoffMs: 1000, maxBackoffMs: 60_000, maxAttempts: 100 }
    const delays = Array.from({ length: 12 }, (_, i) => M.retryDelay(i + 1, big, random))
    delays.forEach((d, i) => {
      const nominal = 1000 * 2 ** i
      expect(d).toBeGreaterThanOrEqual(Math.min(Math.floor(nominal * 0.8), 60_000))
      expect(d).toBeLessThanOrEqual(Math.min(nominal * 1.2, 60_000))
    })
    // With ±20% jitter, doubling always outgrows the spread until the cap.
    for (let i = 1; i < 6; i++) expect(delays[i]!).toBeGreaterThan(delays[i - 1]!)
    expect(delays.slice(7).every((d) => d <= 60_000)).toBe(true)
    expect(new Set(delays.slice(0, 6)).size).toBe(6)
    // The same seed gives the same schedule.
    const again = seeded(42)
    expect(Array.from({ length: 12 }, (_, i) => M.retryDelay(i + 1, big, again))).toEqual(delays)
  })

  it("retryDelay bounds hold for every attempt and random draw", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32767 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, r) => {
          const d = M.retryDelay(attempt, config, () => r)
          const nominal = Math.min(1000 * 2 ** Math.min(attempt - 1, 40), Number.MAX_VALUE)
          return d <= config.maxBackoffMs && d >= Math.min(Math.floor(nominal * 0.8), config.maxBackoffMs)
        }
      )
    )
  })
})

describe("MirrorStateMachine.recover (RecoverMirrorTopics)", () => {
  it("given an exhausted partition, when recovered, then it goes back to its previous state with a fresh budget", () => {
    const v = given("FAILED", { previousState: "MIRRORING", retryAttempt: 5, errorMessage: "Fetch IO error" })
    expect(right(M.recover(v, config))).toEqual(given("MIRRORING", { stateEpoch: 6 }))
  })

  it("given a non-retryable failure during truncation, when recovered, then LOG_TRUNCATION", () => {
    const v = M.fail(given("LOG_TRUNCATION"), { message: "Detected mirror loop for mirror:m", retryable: false })
    expect(right(M.recover(v, config)).state).toBe("LOG_TRUNCATION")
  })

  it("is refused while retries remain, and for partitions that are not FAILED", () => {
    const retrying = M.fail(given("MIRRORING"), { message: "x", retryable: true })
    const e = M.recover(retrying, config)
    expect(Either.isLeft(e) && e.left.message).toBe("The mirror partition is still retrying by itself (attempt 1 of 5)")
    expect(leftTag(M.recover(given("MIRRORING"), config))).toBe("NotRecoverable")
  })
})

describe("MirrorStateMachine.desiredToActions (KIP-1279 §4.6)", () => {
  const table: ReadonlyArray<readonly [State, M.Desired, State | null, M.Action["_tag"]]> = [
    ["FAILED", "MIRRORING", null, "Nothing"],
    // An operator can stop a FAILED partition (a mirror loop, a lost source): §4.2 allows FAILED → STOPPING.
    ["FAILED", "STOPPED", "STOPPING", "RunStopSequence"],
    ["FAILED", "PAUSED", null, "Nothing"],
    ["MIRRORING", "STOPPED", "STOPPING", "RunStopSequence"],
    ["PAUSED", "STOPPED", "STOPPING", "RunStopSequence"],
    ["LOG_TRUNCATION", "STOPPED", "STOPPING", "RunStopSequence"],
    ["STOPPING", "STOPPED", null, "RunStopSequence"],
    ["STOPPED", "STOPPED", null, "Nothing"],
    ["UNKNOWN", "STOPPED", null, "Nothing"],
    ["MIRRORING", "PAUSED", "PAUSING", "RemoveFetcher"],
    ["PAUSING", "PAUSED", null, "RemoveFetcher"],
    ["PAUSED", "PAUSED", null, "Nothing"],
    ["LOG_TRUNCATION", "PAUSED", null, "StartTruncation"],
    ["EPOCH_FENCING", "PAUSED", null, "BumpLeaderEpoch"],
    ["UNKNOWN", "PAUSED", null, "Nothing"],
    ["PAUSED", "MIRRORING", "MIRRORING", "StartFetcher"],
    ["UNKNOWN", "MIRRORING", "LOG_TRUNCATION", "StartTruncation"],
    ["STOPPED", "MIRRORING", "LOG_TRUNCATION", "StartTruncation"],
    ["LOG_TRUNCATION", "MIRRORING", null, "StartTruncation"],
    ["MIRRORING", "MIRRORING", null, "StartFetcher"],
    ["EPOCH_FENCING", "MIRRORING", null, "BumpLeaderEpoch"],
    ["PAUSING", "MIRRORING", null, "RemoveFetcher"],
    ["STOPPING", "MIRRORING", null, "RunStopSequence"]
  ]
  for (const [state, desired, target, action] of table) {
    it(`given ${state}, when desired ${desired}, then ${target ?? "keep"} and ${action}`, () => {
      expect(M.desiredToActions(given(state), desired)).toEqual({ target, action: { _tag: action } })
      const applied = right(M.onDesiredState(given(state), desired))
      expect(applied.value.state).toBe(target ?? state)
      expect(applied.action._tag).toBe(action)
    })
  }

  it("every plan's target is a valid transition from the current state", () => {
    for (const s of STATES)
      for (const d of ["MIRRORING", "PAUSED", "STOPPED"] as const)
        expect(Either.isRight(M.onDesiredState(given(s), d))).toBe(true)
  })
})
