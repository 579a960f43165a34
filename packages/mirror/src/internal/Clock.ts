/**
 * The one bridge from Effect's clock to this package's Promise code: the current time and a sleep, both
 * on Effect's `Clock`, so nothing else in the package reads the wall clock or arms a timer.
 */
import { Clock, Duration, Effect, Fiber } from "effect"

/** The current time in milliseconds, from Effect's clock. */
export const now = (): number => Effect.runSync(Clock.currentTimeMillis)

/** Resolves after `ms` on Effect's clock. */
export const sleep = (ms: number): Promise<void> => Effect.runPromise(Effect.sleep(Duration.millis(ms)))

/** Runs `f` after `ms` on Effect's clock; the returned function cancels it (a no-op once it ran). */
export const schedule = (ms: number, f: () => void): (() => void) => {
  const fiber = Effect.runFork(Effect.sleep(Duration.millis(ms)).pipe(Effect.zipRight(Effect.sync(f))))
  return () => {
    Effect.runFork(Fiber.interrupt(fiber))
  }
}
