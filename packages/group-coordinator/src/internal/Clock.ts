/**
 * The one bridge from the coordinator's callback-style state machine to Effect's `Clock`: the current
 * time and one-shot timers, both taken from an Effect runtime, so a runtime with `TestClock` drives
 * every rebalance and session timeout of a coordinator deterministically.
 */
import { Clock, Effect, Fiber, Runtime } from "effect"

export interface Timer {
  /** Stops the timer; a no-op once it fired or was cancelled. */
  readonly cancel: () => void
}

export interface Timers {
  readonly now: () => number
  readonly schedule: (delayMs: number, callback: () => void) => Timer
}

export const fromRuntime = (runtime: Runtime.Runtime<never>): Timers => {
  const runSync = Runtime.runSync(runtime)
  const runFork = Runtime.runFork(runtime)
  return {
    now: () => runSync(Clock.currentTimeMillis),
    schedule: (delayMs, callback) => {
      let done = false
      const fiber = runFork(
        Effect.sleep(Math.max(0, delayMs)).pipe(
          Effect.zipRight(
            Effect.sync(() => {
              if (done) return
              done = true
              callback()
            })
          )
        )
      )
      return {
        cancel: () => {
          if (done) return
          done = true
          runFork(Fiber.interrupt(fiber))
        }
      }
    }
  }
}
