/**
 * The state machine of one mirror partition (KIP-1279 §4): its actual state value and a pure function
 * per trigger of §4.3 that returns the next value, or an `InvalidTransition` when the transition table
 * (`MirrorPartitionState.isValidTransition`) or the trigger's own source states forbid it. Also the
 * FAILED bookkeeping and retry policy (§4.4) and the mapping of desired state to the next action of the
 * partition leader (§4.6), as data.
 *
 * Must not do I/O, read clocks or draw random numbers: callers persist the value (a `__mirror_state`
 * record written before the action runs), schedule timers and pass randomness in.
 */
import { MirrorPartitionState } from "@clustermirror/protocol"
import { Either } from "effect"
import { InvalidTransition, NotRecoverable, RetryNotAllowed } from "./CoordinatorError.js"

type State = MirrorPartitionState.MirrorPartitionState

/** `retryAttempt` of a failure that is never retried automatically. */
export const NON_RETRYABLE = -1

/** The actual state of a mirror partition, as persisted and cached. */
export interface MirrorStateValue {
  readonly state: State
  /** The state before FAILED; UNKNOWN when there is none. Kept after leaving FAILED, like the failure info. */
  readonly previousState: State
  /** 0: no failure; n > 0: the n-th consecutive retryable failure; -1: non-retryable. */
  readonly retryAttempt: number
  readonly errorMessage: string | null
  /** The latest leader epoch of the local log when the partition was stopped; -1: none. */
  readonly lastMirrorEpoch: number
  /** How many state records the coordinator holds for the partition; each persisted transition adds one. */
  readonly stateEpoch: number
}

/** A partition with nothing known about it. */
export const initial: MirrorStateValue = {
  state: "UNKNOWN",
  previousState: "UNKNOWN",
  retryAttempt: 0,
  errorMessage: null,
  lastMirrorEpoch: -1,
  stateEpoch: 0
}

/** Why a partition fails. Non-retryable failures (source topic deleted, source cluster changed) wait for an operator. */
export interface Failure {
  readonly message: string
  readonly retryable: boolean
}

/** The broker configs of FAILED retries (KIP-1279 §7.2). */
export interface RetryConfig {
  /** `mirror.failed.retry.initial.backoff.ms`: the delay after the first failure. */
  readonly initialBackoffMs: number
  /** `mirror.failed.retry.max.backoff.ms`: no delay is longer. */
  readonly maxBackoffMs: number
  /** `mirror.failed.retry.max.attempts`: at this attempt retries stop; 0 disables them. */
  readonly maxAttempts: number
}

export const defaultRetryConfig: RetryConfig = { initialBackoffMs: 1000, maxBackoffMs: 300_000, maxAttempts: 100 }

/** The relative spread of a retry delay around its exponential value. */
export const RETRY_JITTER = 0.2

const withoutFailure = (v: MirrorStateValue): MirrorStateValue => ({
  ...v,
  previousState: "UNKNOWN",
  retryAttempt: 0,
  errorMessage: null
})

const refuse = (v: MirrorStateValue, to: State, trigger: string, why?: string): InvalidTransition =>
  new InvalidTransition({
    from: v.state,
    to,
    trigger,
    message: `${trigger}: cannot move a mirror partition from ${v.state} to ${to}${why === undefined ? "" : ` (${why})`}`
  })

/**
 * Moves to `target` if §4.2 allows it, bumping the state epoch (the coordinator counts state records
 * the same way). Failure info is cleared on entering STOPPED or PAUSED, and on entering LOG_TRUNCATION
 * afresh; a retry from FAILED keeps it, so consecutive failures keep counting and the delay grows.
 */
export const transition = (
  v: MirrorStateValue,
  target: State,
  trigger = "transition"
): Either.Either<MirrorStateValue, InvalidTransition> => {
  if (target === "UNKNOWN") return Either.left(refuse(v, target, trigger, "UNKNOWN is never a target"))
  if (target === "FAILED") return Either.left(refuse(v, target, trigger, "failures go through fail, which records why"))
  if (!MirrorPartitionState.isValidTransition(v.state, target)) return Either.left(refuse(v, target, trigger))
  const clears = target === "STOPPED" || target === "PAUSED" || (target === "LOG_TRUNCATION" && v.state !== "FAILED")
  const base = clears ? withoutFailure(v) : v
  return Either.right({ ...base, state: target, stateEpoch: v.stateEpoch + 1 })
}

/** A trigger that only applies in some states, on top of the transition table. */
const triggered = (
  v: MirrorStateValue,
  from: ReadonlyArray<State>,
  target: State,
  trigger: string
): Either.Either<MirrorStateValue, InvalidTransition> =>
  from.includes(v.state)
    ? transition(v, target, trigger)
    : Either.left(refuse(v, target, trigger, `only from ${from.join(", ")}`))

/** Desired MIRRORING on a partition never mirrored or stopped (start, failback, missed partition): → LOG_TRUNCATION. */
export const startTruncation = (v: MirrorStateValue) =>
  triggered(v, ["UNKNOWN", "STOPPED"], "LOG_TRUNCATION", "startTruncation")

/** The truncation callback completed: LOG_TRUNCATION → MIRRORING. */
export const truncationDone = (v: MirrorStateValue) => triggered(v, ["LOG_TRUNCATION"], "MIRRORING", "truncationDone")

/** The fetcher saw a source batch whose epoch is above the local leader epoch: MIRRORING → EPOCH_FENCING. */
export const epochAhead = (v: MirrorStateValue) => triggered(v, ["MIRRORING"], "EPOCH_FENCING", "epochAhead")

/** The local leader epoch bump is visible in metadata: EPOCH_FENCING → MIRRORING. */
export const epochBumped = (v: MirrorStateValue) => triggered(v, ["EPOCH_FENCING"], "MIRRORING", "epochBumped")

/** Desired PAUSED: MIRRORING → PAUSING. */
export const pause = (v: MirrorStateValue) => triggered(v, ["MIRRORING"], "PAUSING", "pause")

/** The fetcher of a pausing partition is gone: PAUSING → PAUSED. */
export const fetcherRemoved = (v: MirrorStateValue) => triggered(v, ["PAUSING"], "PAUSED", "fetcherRemoved")

/** Desired MIRRORING again (resume): PAUSED → MIRRORING, without truncation. */
export const resume = (v: MirrorStateValue) => triggered(v, ["PAUSED"], "MIRRORING", "resume")

/** Desired STOPPED (stop, exclude pattern): → STOPPING from every state §4.2 allows. */
export const stop = (v: MirrorStateValue) => transition(v, "STOPPING", "stop")

/**
 * The STOPPING sequence finished (§5.4): → STOPPED, remembering the last mirror epoch it wrote
 * (-1 when the log had no epoch; a previous LME is then kept).
 */
export const stopDone = (v: MirrorStateValue, lastMirrorEpoch: number) =>
  Either.map(triggered(v, ["STOPPING"], "STOPPED", "stopDone"), (next) =>
    lastMirrorEpoch < 0 ? next : { ...next, lastMirrorEpoch }
  )

/** Records a last mirror epoch (STOPPING step 2). Not a transition: the state epoch does not move. */
export const withLastMirrorEpoch = (v: MirrorStateValue, lastMirrorEpoch: number): MirrorStateValue => ({
  ...v,
  lastMirrorEpoch
})

/**
 * Any state → FAILED with the reason. The previous state is the state that failed; a failure while
 * already FAILED keeps the original previous state and attempt (it is not a retry), and only a
 * non-retryable failure can change the attempt then (to -1, which sticks until recovered).
 */
export const fail = (v: MirrorStateValue, failure: Failure): MirrorStateValue => {
  const alreadyFailed = v.state === "FAILED"
  const retryAttempt =
    !failure.retryable || v.retryAttempt === NON_RETRYABLE
      ? NON_RETRYABLE
      : alreadyFailed
        ? v.retryAttempt
        : Math.max(v.retryAttempt, 0) + 1
  return {
    ...v,
    state: "FAILED",
    previousState: alreadyFailed ? v.previousState : v.state,
    retryAttempt,
    errorMessage: failure.message,
    stateEpoch: v.stateEpoch + 1
  }
}

/** The fetcher validated a batch: the partition works again, so the failure count starts over. */
export const fetchSucceeded = (v: MirrorStateValue): MirrorStateValue => (v.state === "FAILED" ? v : withoutFailure(v))

/**
 * How the reason of a data-loss failure begins (the mirror fetcher's wording): the source deleted records
 * before they were mirrored. Only a recovery that accepts the loss restarts such a partition.
 */
export const DATA_LOSS_PREFIX = "Data loss:"

/** Whether a FAILED partition failed because the source deleted records it had not mirrored yet. */
export const isDataLoss = (v: MirrorStateValue): boolean =>
  v.state === "FAILED" && v.errorMessage !== null && v.errorMessage.startsWith(DATA_LOSS_PREFIX)

/** Whether the failure of a FAILED partition will never be retried automatically. */
export const isExhausted = (v: MirrorStateValue, config: RetryConfig): boolean =>
  v.state === "FAILED" && (v.retryAttempt === NON_RETRYABLE || v.retryAttempt >= config.maxAttempts)

/** Whether a FAILED partition gets an automatic retry. */
export const shouldRetry = (v: MirrorStateValue, config: RetryConfig): boolean =>
  v.state === "FAILED" && !isExhausted(v, config)

/**
 * Where a retry or a recovery goes. The previous state where §4.2 allows it from FAILED; otherwise
 * the nearest state that leads back to it: EPOCH_FENCING → MIRRORING (the fetcher finds the epoch gap
 * again), PAUSING/PAUSED → MIRRORING (the desired PAUSED pauses it again), STOPPED → STOPPING (the
 * idempotent stop sequence ends STOPPED, so a stopped partition never starts mirroring by retry),
 * UNKNOWN → LOG_TRUNCATION.
 */
export const retryTarget = (previousState: State): State => {
  switch (previousState) {
    case "LOG_TRUNCATION":
    case "MIRRORING":
    case "STOPPING":
      return previousState
    case "EPOCH_FENCING":
    case "PAUSING":
    case "PAUSED":
      return "MIRRORING"
    case "STOPPED":
      return "STOPPING"
    case "UNKNOWN":
    case "FAILED":
      return "LOG_TRUNCATION"
  }
}

/**
 * The delay before retry number `attempt` (1 = after the first failure): `initial · 2^(attempt-1)`
 * times a factor uniform in [0.8, 1.2), capped at the maximum. `random` returns a number in [0, 1).
 */
export const retryDelay = (attempt: number, config: RetryConfig, random: () => number): number => {
  const exponent = Math.max(attempt, 1) - 1
  // Past the cap the exponent no longer matters; bounding it keeps the arithmetic finite.
  const maxExponent = Math.ceil(Math.log2(Math.max(config.maxBackoffMs / config.initialBackoffMs, 1))) + 1
  const term = config.initialBackoffMs * 2 ** Math.min(exponent, maxExponent)
  const factor = 1 - RETRY_JITTER + 2 * RETRY_JITTER * random()
  return Math.min(Math.floor(term * factor), config.maxBackoffMs)
}

/**
 * The retry timer fired: FAILED → `retryTarget(previousState)`, keeping the failure info so the next
 * failure counts as the next attempt. Refused when the partition is not FAILED or is exhausted.
 */
export const retry = (
  v: MirrorStateValue,
  config: RetryConfig
): Either.Either<MirrorStateValue, RetryNotAllowed | InvalidTransition> => {
  if (v.state !== "FAILED")
    return Either.left(new RetryNotAllowed({ message: `The mirror partition is ${v.state}, not FAILED` }))
  if (v.retryAttempt === NON_RETRYABLE)
    return Either.left(
      new RetryNotAllowed({ message: `The failure is not retryable: ${v.errorMessage ?? "no reason"}` })
    )
  if (v.retryAttempt >= config.maxAttempts)
    return Either.left(
      new RetryNotAllowed({
        message: `Retries exhausted after ${v.retryAttempt} attempts (max ${config.maxAttempts}); requires manual intervention`
      })
    )
  return transition(v, retryTarget(v.previousState), "retry")
}

/**
 * RecoverMirrorTopics: a partition that stays FAILED (non-retryable or out of attempts) goes back to
 * `retryTarget(previousState)` with its failure info cleared, so it gets a full retry budget again.
 * Refused for partitions that are not FAILED or still retry by themselves.
 */
export const recover = (
  v: MirrorStateValue,
  config: RetryConfig
): Either.Either<MirrorStateValue, NotRecoverable | InvalidTransition> => {
  if (v.state !== "FAILED")
    return Either.left(new NotRecoverable({ message: `The mirror partition is ${v.state}, not FAILED` }))
  if (!isExhausted(v, config))
    return Either.left(
      new NotRecoverable({
        message: `The mirror partition is still retrying by itself (attempt ${v.retryAttempt} of ${config.maxAttempts})`
      })
    )
  return Either.map(transition(v, retryTarget(v.previousState), "recover"), withoutFailure)
}

/** A topic's desired state, from its MirrorTopicStateChangeRecord. */
export type Desired = "MIRRORING" | "PAUSED" | "STOPPED"

/** What the partition leader does after persisting the plan's target state; the broker runs it through ports. */
export type Action =
  | { readonly _tag: "StartTruncation" }
  | { readonly _tag: "StartFetcher" }
  | { readonly _tag: "RemoveFetcher" }
  | { readonly _tag: "BumpLeaderEpoch" }
  | { readonly _tag: "RunStopSequence" }
  | { readonly _tag: "Nothing" }

export const StartTruncation: Action = { _tag: "StartTruncation" }
export const StartFetcher: Action = { _tag: "StartFetcher" }
export const RemoveFetcher: Action = { _tag: "RemoveFetcher" }
export const BumpLeaderEpoch: Action = { _tag: "BumpLeaderEpoch" }
export const RunStopSequence: Action = { _tag: "RunStopSequence" }
export const Nothing: Action = { _tag: "Nothing" }

/** The next step: the state to persist first (null: keep the current one) and the action to run after. */
export interface Plan {
  readonly target: State | null
  readonly action: Action
}

/** The action that (re)does the work of a state: how a new leader resumes what the previous one was doing. */
const resumeAction = (state: State): Action => {
  switch (state) {
    case "LOG_TRUNCATION":
      return StartTruncation
    case "EPOCH_FENCING":
      return BumpLeaderEpoch
    case "MIRRORING":
      return StartFetcher
    case "PAUSING":
      return RemoveFetcher
    case "STOPPING":
      return RunStopSequence
    case "PAUSED":
    case "STOPPED":
    case "FAILED":
    case "UNKNOWN":
      return Nothing
  }
}

const keep = (state: State): Plan => ({ target: null, action: resumeAction(state) })

/**
 * KIP-1279 §4.6 (`applyStateTransition`), evaluated on leadership gain, desired-state change or a
 * new source connection. In order: FAILED stays (the retry timer owns it) unless the operator stopped the
 * topic — a FAILED partition (a mirror loop, a lost source, retries exhausted) must be stoppable, and
 * §4.2 allows FAILED → STOPPING; desired STOPPED → STOPPING
 * (STOPPED stays); desired PAUSED → PAUSING from MIRRORING (PAUSED stays); PAUSED → MIRRORING; UNKNOWN
 * or STOPPED → LOG_TRUNCATION; otherwise resume the current state's work. Where the KIP's target is not
 * reachable from the current state (pause during truncation, stop of a never-mirrored partition) the
 * current work continues, and the next evaluation after it completes moves on.
 */
export const desiredToActions = (actual: MirrorStateValue, desired: Desired): Plan => {
  const s = actual.state
  if (s === "FAILED" && desired !== "STOPPED") return { target: null, action: Nothing }
  if (desired === "STOPPED") {
    if (s === "STOPPED" || s === "STOPPING") return keep(s)
    return MirrorPartitionState.isValidTransition(s, "STOPPING")
      ? { target: "STOPPING", action: RunStopSequence }
      : keep(s)
  }
  if (desired === "PAUSED") {
    if (s === "MIRRORING") return { target: "PAUSING", action: RemoveFetcher }
    if (s === "UNKNOWN" || s === "STOPPED") return { target: null, action: Nothing }
    return keep(s)
  }
  if (s === "PAUSED") return { target: "MIRRORING", action: StartFetcher }
  if (s === "UNKNOWN" || s === "STOPPED") return { target: "LOG_TRUNCATION", action: StartTruncation }
  return keep(s)
}

/**
 * Applies `desiredToActions`: the next value (unchanged when the plan keeps the state) and the action
 * to run once that value is persisted.
 */
export const onDesiredState = (
  actual: MirrorStateValue,
  desired: Desired
): Either.Either<{ readonly value: MirrorStateValue; readonly action: Action }, InvalidTransition> => {
  const plan = desiredToActions(actual, desired)
  if (plan.target === null) return Either.right({ value: actual, action: plan.action })
  return Either.map(transition(actual, plan.target, `desired ${desired}`), (value) => ({
    value,
    action: plan.action
  }))
}
