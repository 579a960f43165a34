/**
 * FanOut: the one way control-plane code asks many brokers the same thing. `forEachBroker` runs a
 * request against every target with bounded concurrency and a per-target timeout, keeps each target's
 * outcome (success, its typed failure, or a timeout) and hands them all to one merge function. One
 * target's failure is its outcome, never the fan-out's. It owns no connections: the request does the I/O.
 */
import { Duration, Effect, type Either } from "effect"
import { RequestTimeout } from "./ClientError.js"

/** How a fan-out runs. */
export interface Options<T> {
  /** Targets asked at once; default 8. */
  readonly concurrency?: number
  /** Time each target gets before its outcome is a `RequestTimeout`. */
  readonly timeoutMs: number
  /** Names a target in its timeout (e.g. "broker 2"); default `String(target)`. */
  readonly describe?: (target: T) => string
}

/** One target's outcome. */
export interface Outcome<T, A, E> {
  readonly target: T
  readonly result: Either.Either<A, E | RequestTimeout>
}

/** Default number of targets asked at once. */
export const DEFAULT_CONCURRENCY = 8

/**
 * Asks every target, in order of `targets`, and merges the outcomes (in the same order). Never fails:
 * failures and timeouts are outcomes; interruption interrupts every request still running.
 */
export const forEachBroker = <T, A, E, R, B>(
  targets: Iterable<T>,
  request: (target: T) => Effect.Effect<A, E, R>,
  merge: (outcomes: ReadonlyArray<Outcome<T, A, E>>) => B,
  options: Options<T>
): Effect.Effect<B, never, R> =>
  Effect.forEach(
    [...targets],
    (target) =>
      request(target).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(options.timeoutMs),
          onTimeout: () =>
            new RequestTimeout({
              api: `fan-out to ${options.describe?.(target) ?? String(target)}`,
              version: -1,
              correlationId: -1,
              timeoutMs: options.timeoutMs
            })
        }),
        Effect.either,
        Effect.map((result): Outcome<T, A, E> => ({ target, result }))
      ),
    { concurrency: options.concurrency ?? DEFAULT_CONCURRENCY }
  ).pipe(Effect.map(merge))
