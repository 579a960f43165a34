/**
 * The one bridge from Effect's clock to this package's Promise code: the current time and a sleep, both
 * on Effect's `Clock`, so nothing else in the package reads the wall clock or arms a timer.
 */
import { Clock, Duration, Effect } from "effect"

/** The current time in milliseconds, from Effect's clock. */
export const now = (): number => Effect.runSync(Clock.currentTimeMillis)

/** Resolves after `ms` on Effect's clock. */
export const sleep = (ms: number): Promise<void> => Effect.runPromise(Effect.sleep(Duration.millis(ms)))
