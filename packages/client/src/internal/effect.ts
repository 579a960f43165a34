/**
 * Bridges the Promise core to Effect: a rejection with a client error becomes a typed failure,
 * anything else (a bug) becomes a defect.
 */
import { Effect } from "effect"
import { type ClientError, isClientError } from "../ClientError.js"

export const fromPromise = <A>(thunk: () => Promise<A>): Effect.Effect<A, ClientError> =>
  Effect.async<A, ClientError>((resume) => {
    thunk().then(
      (a) => resume(Effect.succeed(a)),
      (e: unknown) => resume(isClientError(e) ? Effect.fail(e) : Effect.die(e))
    )
  })
