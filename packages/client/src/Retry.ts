/**
 * The retry policy of the client: exponential backoff with a cap, jitter and a bounded number of
 * attempts. The same policy drives the Promise core (`delay`) and Effect code (`schedule`), so both
 * layers back off alike. Pure apart from the random jitter.
 */
import { Duration, Schedule } from "effect"

export interface Policy {
  /** Total attempts including the first (1 = no retry). */
  readonly attempts: number
  /** Delay before the first retry. */
  readonly baseMs: number
  /** Cap on any delay. */
  readonly maxMs: number
  /** Each delay is scaled by a random factor in [1 - jitter, 1 + jitter]. */
  readonly jitter: number
}

export const defaultPolicy: Policy = { attempts: 5, baseMs: 100, maxMs: 1000, jitter: 0.2 }

/** The delay before retry number `retry` (1 = first retry), before jitter. */
export const baseDelay = (policy: Policy, retry: number): number =>
  Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry - 1))

/** The delay before retry number `retry`, jittered; `random` is injectable for tests. */
export const delay = (policy: Policy, retry: number, random: () => number = Math.random): number => {
  const factor = 1 + policy.jitter * (2 * random() - 1)
  return Math.max(0, Math.round(baseDelay(policy, retry) * factor))
}

/** The policy as an Effect `Schedule`: exponential, capped, jittered, at most `attempts - 1` recurrences. */
export const schedule = (policy: Policy): Schedule.Schedule<unknown> =>
  Schedule.exponential(Duration.millis(policy.baseMs), 2).pipe(
    Schedule.modifyDelay((d) => Duration.min(d, Duration.millis(policy.maxMs))),
    Schedule.jitteredWith({ min: 1 - policy.jitter, max: 1 + policy.jitter }),
    Schedule.intersect(Schedule.recurs(Math.max(0, policy.attempts - 1)))
  )

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
