/**
 * A coordinator shard definition (Kafka's `CoordinatorShard`): the pure part of one coordinator log
 * partition's state machine. The runtime owns loading, serializing, appending and committing; the shard
 * owns only its state value, `empty`, `replay`, and which timers to restart after a load. It knows
 * nothing of logs or fibers.
 */
import type { Either } from "effect"
import type { CoordinatorResult } from "./CoordinatorResult.js"

/** The coordinator log partition a shard instance belongs to and the leader epoch it was loaded at. */
export interface ShardContext {
  readonly partition: number
  readonly leaderEpoch: number
}

/** A decision run by the runtime on the candidate state: records + response, or a refusal. */
export type Decide<S, R, A, E> = (state: S, now: number) => Either.Either<CoordinatorResult<R, A>, E>

/** A timer to (re)start after a load: `op` is a decide run when due (its response is dropped). */
export interface TimerSpec<S, R> {
  readonly key: string
  readonly delayMs: number
  readonly op: Decide<S, R, unknown, unknown>
}

export interface ShardDef<S, R> {
  /** The coordinator's name, for spans and error messages (e.g. `__mirror_state`). */
  readonly name: string
  /** The state of a partition with an empty log. */
  readonly empty: (ctx: ShardContext) => S
  /** Applies one committed or candidate record; pure, dies on an invariant violation. */
  readonly replay: (state: S, record: R) => S
  /** After a load: the timers to start for the loaded state (e.g. session timeouts). */
  readonly onLoaded?: (state: S, ctx: ShardContext) => ReadonlyArray<TimerSpec<S, R>>
}

/** A shard definition from its parts. */
export const make = <S, R>(def: ShardDef<S, R>): ShardDef<S, R> => def

/** Replays `records` onto `state` in order. */
export const replayAll = <S, R>(def: ShardDef<S, R>, state: S, records: Iterable<R>): S => {
  let s = state
  for (const r of records) s = def.replay(s, r)
  return s
}
