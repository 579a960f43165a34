/**
 * LOG_TRUNCATION's local step on a partition with followers (KIP-1279 §5.5 step 7, Kafka's
 * `Partition.maybeCompleteTruncation`): first wait until every ISR member has the leader's whole log and the
 * ISR is not under `min.insync.replicas`, then cut the leader's log, then wait until no ISR member holds
 * offsets beyond the leader's end (followers cut their own logs through the usual `DivergingEpoch` answer).
 * Only then may the partition go on to MIRRORING, so that mirrored batches never land next to a follower's
 * stale suffix. With `mirror.support.unclean.leader.election=true` every assigned replica counts, not only
 * the ISR (any of them may be elected later). A partition without followers, or whose log already ends at
 * or below the target, completes at once.
 *
 * It reads the followers' positions the leader learns from their fetches (the broker's replica manager, behind `Replicas`) and must not
 * change ISR or leadership: when leadership or the leader epoch moves, or the followers do not get there in
 * time, it gives up with an error and the caller retries (the mirror partition goes FAILED with backoff).
 * It waits on its own partition only.
 */
import { Cause, Clock, Data, Duration, Effect, Exit } from "effect"

export interface TwoPhaseTruncationOptions {
  /** How long each phase may wait for the followers before giving up. */
  readonly timeoutMs: number
  /** How often the followers' positions are looked at while waiting (default 20 ms). */
  readonly pollMs?: number
  /** Wait for every assigned replica instead of the ISR (`mirror.support.unclean.leader.election`). */
  readonly allReplicas?: boolean
  readonly log?: (line: string) => void
}

/** Why a truncation gave up; the caller retries it later. */
export class TruncationAbortedError extends Data.TaggedError("TruncationAbortedError")<{ readonly message: string }> {}

/** What the truncation reads and cuts of a partition this broker leads (the broker's replica state). */
export interface Partition {
  readonly leader: number
  readonly leaderEpoch: number
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
  readonly minInsyncReplicas: number
  /** The followers' last known log end offsets, learnt from their fetches. */
  readonly followers: ReadonlyMap<number, { readonly logEndOffset: number }>
  readonly log: {
    readonly logStartOffset: number
    readonly logEndOffset: number
    truncateTo(offset: number): void
    truncateFullyAndStartAt(offset: number): void
  }
}

/** The port the broker implements over its replica manager. */
export interface Replicas {
  readonly nodeId: number
  /** The partition's current state object; a different object once it was re-registered. */
  get(topic: string, partition: number): Partition | undefined
  /** The leader's log changed outside a produce (followers and waiters learn of it). */
  mirrorAppended(topic: string, partition: number): void
}

/** The followers that count (ISR, or all replicas) and their last known log end offsets (-1 when unknown). */
const followersOf = (p: Partition, self: number, allReplicas: boolean): ReadonlyArray<readonly [number, number]> =>
  (allReplicas ? p.replicas : p.isr)
    .filter((r) => r !== self)
    .map((r) => [r, p.followers.get(r)?.logEndOffset ?? -1] as const)

/** Phase 1: the followers that count hold the leader's whole log, and the ISR is large enough. */
export const caughtUp = (p: Partition, self: number, allReplicas = false): boolean =>
  p.isr.length >= p.minInsyncReplicas &&
  followersOf(p, self, allReplicas).every(([, leo]) => leo === p.log.logEndOffset)

/** Phase 2: no follower that counts holds offsets beyond the leader's log end. */
export const truncated = (p: Partition, self: number, allReplicas = false): boolean =>
  followersOf(p, self, allReplicas).every(([, leo]) => leo <= p.log.logEndOffset)

/**
 * Cuts the log of `topic-partition` (led here) to `target` in two phases; succeeds once followers are cut
 * too. Fails with `TruncationAbortedError` when leadership moves or a phase times out. Time is Effect's
 * clock: the followers' positions are looked at every `pollMs`.
 */
export const truncateEffect = (
  replicas: Replicas,
  topic: string,
  partition: number,
  target: number,
  options: TwoPhaseTruncationOptions
): Effect.Effect<void, TruncationAbortedError> =>
  Effect.gen(function* () {
    const self = replicas.nodeId
    const p = replicas.get(topic, partition)
    if (p === undefined || p.leader !== self)
      return yield* new TruncationAbortedError({ message: `${topic}-${partition} is not led here` })
    if (p.log.logEndOffset <= target) return
    const epoch = p.leaderEpoch
    const all = options.allReplicas ?? false
    const alone = p.replicas.length <= 1
    const poll = Duration.millis(options.pollMs ?? 20)
    const waitFor = (phase: string, done: (p: Partition) => boolean) =>
      Effect.gen(function* () {
        const deadline = (yield* Clock.currentTimeMillis) + options.timeoutMs
        for (;;) {
          if (replicas.get(topic, partition) !== p || p.leader !== self || p.leaderEpoch !== epoch)
            return yield* new TruncationAbortedError({
              message: `leadership of ${topic}-${partition} moved while waiting for ${phase}`
            })
          if (done(p)) return
          if ((yield* Clock.currentTimeMillis) >= deadline) {
            const positions = followersOf(p, self, all)
              .map(([r, leo]) => `${r}@${leo}`)
              .join(", ")
            return yield* new TruncationAbortedError({
              message: `${topic}-${partition}: ${phase} did not happen within ${options.timeoutMs} ms (leader end ${p.log.logEndOffset}, followers ${positions || "none"}, ISR ${p.isr.join(",")}, min ISR ${p.minInsyncReplicas})`
            })
          }
          yield* Effect.sleep(poll)
        }
      })
    if (!alone) yield* waitFor("the ISR to catch up", (q) => caughtUp(q, self, all))
    options.log?.(`truncating ${topic}-${partition} from ${p.log.logEndOffset} to ${target}`)
    if (target <= p.log.logStartOffset) p.log.truncateFullyAndStartAt(target)
    else p.log.truncateTo(target)
    replicas.mirrorAppended(topic, partition)
    if (!alone) yield* waitFor("the followers to truncate", (q) => truncated(q, self, all))
  })

/** `truncateEffect` for Promise callers (the broker): rejects with `TruncationAbortedError`. */
export const truncate = (
  replicas: Replicas,
  topic: string,
  partition: number,
  target: number,
  options: TwoPhaseTruncationOptions
): Promise<void> =>
  Effect.runPromiseExit(truncateEffect(replicas, topic, partition, target, options)).then((exit) => {
    if (Exit.isSuccess(exit)) return
    throw Cause.squash(exit.cause)
  })
