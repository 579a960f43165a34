/**
 * Leader epoch bumps of mirror partitions (KIP-1279 EPOCH_FENCING and the periodic bump of §6.5), batched:
 * the bumps asked in one turn go to the controller as one BumpLeaderEpochs (the highest minimum per
 * partition), and each resolves once this broker's metadata image shows a leader epoch above its minimum.
 * A bump whose partition is already past its minimum resolves at once. A bump may also carry a minimum
 * producer id (a stopping partition's highest mirrored one): the batch asks for the highest, and the bump
 * resolves once the image's producer id floor is above it too, the controller having written both in one
 * record batch. Any failure fails every bump of the batch; the caller retries.
 */
import { type BumpLeaderEpochs, Errors } from "@clustermirror/protocol"
import { Data, Duration, Effect, Schedule } from "effect"

/** One partition's bump: its leader epoch must end above `minLeaderEpoch`. */
export interface Bump {
  readonly topicId: string
  readonly partition: number
  readonly minLeaderEpoch: number
  /** The producer id the controller's floor must end above; absent (or -1n) for none. */
  readonly minProducerId?: bigint
}

/** A bump failed (controller refusal, timeout, the new epoch not seen in time); retriable. */
export class BumpFailed extends Data.TaggedError("BumpFailed")<{ readonly message: string; readonly cause?: unknown }> {
  get retriable(): boolean {
    return true
  }
}

/** Time the controller gets to answer a BumpLeaderEpochs. */
export const REQUEST_TIMEOUT_MS = 30_000
/** Time the bumped epochs get to reach this broker's image. */
export const PROPAGATION_TIMEOUT_MS = 10_000
/** How often the image is looked at while waiting for them. */
export const POLL_MS = 20

/** What the batcher needs of its broker. */
export interface Options {
  /** BumpLeaderEpochs through the controller channel. */
  readonly request: (request: BumpLeaderEpochs.Request) => Promise<BumpLeaderEpochs.Response>
  /** Resolves once this broker loaded what the controller had committed when called. */
  readonly catchUp: () => Promise<void>
  /** The partition's leader epoch in this broker's image; -1 when unknown. */
  readonly epochOf: (topicId: string, partition: number) => number
  /** The producer id floor in this broker's image; -1n when none. */
  readonly floor: () => bigint
  /** Runs `f` once the current turn's bumps are in (the broker's `setImmediate`). */
  readonly defer: (f: () => void) => void
}

/** The BumpLeaderEpochs request of a batch: per partition the highest minimum asked. */
export const requestOf = (bumps: ReadonlyArray<Bump>): BumpLeaderEpochs.Request => {
  const byTopic = new Map<string, Map<number, number>>()
  let minProducerId = -1n
  for (const bump of bumps) {
    if (bump.minProducerId !== undefined && bump.minProducerId > minProducerId) minProducerId = bump.minProducerId
    let m = byTopic.get(bump.topicId)
    if (m === undefined) byTopic.set(bump.topicId, (m = new Map()))
    m.set(bump.partition, Math.max(m.get(bump.partition) ?? -1, bump.minLeaderEpoch))
  }
  return {
    topics: [...byTopic].map(([topicId, m]) => ({
      topicId,
      partitions: [...m].map(([partitionIndex, minLeaderEpoch]) => ({ partitionIndex, minLeaderEpoch }))
    })),
    minProducerId
  }
}

/** The error of a BumpLeaderEpochs answer (the request's, else the first partition's); undefined when none. */
export const errorOf = (res: BumpLeaderEpochs.Response): string | undefined => {
  if (res.errorCode !== 0) return `BumpLeaderEpochs: ${res.errorMessage ?? Errors.message(res.errorCode)}`
  const failed = res.topics.flatMap((t) => t.partitions.filter((p) => p.errorCode !== 0))
  if (failed.length > 0) return `BumpLeaderEpochs: ${failed[0]!.errorMessage ?? Errors.message(failed[0]!.errorCode)}`
  return undefined
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Whether this broker's image shows the bump done: the epoch above its minimum, the floor above its id. */
export const isVisible = (options: Pick<Options, "epochOf" | "floor">, bump: Bump): boolean =>
  options.epochOf(bump.topicId, bump.partition) > bump.minLeaderEpoch &&
  (bump.minProducerId === undefined || options.floor() > bump.minProducerId)

/** One batch: the request, catching up, then waiting (on Effect's clock) until every bump is visible. */
export const run = (options: Omit<Options, "defer">, bumps: ReadonlyArray<Bump>): Effect.Effect<void, BumpFailed> =>
  Effect.gen(function* () {
    const res = yield* Effect.tryPromise({
      try: () => options.request(requestOf(bumps)),
      catch: (e) => new BumpFailed({ message: messageOf(e), cause: e })
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(REQUEST_TIMEOUT_MS),
        onTimeout: () => new BumpFailed({ message: `BumpLeaderEpochs did not answer in ${REQUEST_TIMEOUT_MS} ms` })
      })
    )
    const error = errorOf(res)
    if (error !== undefined) return yield* new BumpFailed({ message: error })
    yield* Effect.tryPromise({
      try: () => options.catchUp(),
      catch: (e) => new BumpFailed({ message: messageOf(e), cause: e })
    })
    const visible = Effect.sync(() => bumps.every((b) => isVisible(options, b)))
    yield* visible.pipe(
      Effect.repeat({ schedule: Schedule.spaced(Duration.millis(POLL_MS)), until: (done) => done }),
      Effect.timeoutFail({
        duration: Duration.millis(PROPAGATION_TIMEOUT_MS),
        onTimeout: () =>
          new BumpFailed({
            message: `the bumped leader epoch or producer id floor did not reach this broker in ${PROPAGATION_TIMEOUT_MS / 1000} s`
          })
      })
    )
  })

/** The `bumpLeaderEpochs` of the manager's `PartitionPort`, batching the bumps of one turn. */
export const make = (options: Options): ((bumps: ReadonlyArray<Bump>) => Promise<void>) => {
  let pending: Array<{ readonly bump: Bump; readonly resolve: () => void; readonly reject: (e: unknown) => void }> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    const batch = pending
    pending = []
    void Effect.runPromise(
      Effect.either(
        run(
          options,
          batch.map((p) => p.bump)
        )
      )
    ).then((r) => {
      for (const p of batch) r._tag === "Right" ? p.resolve() : p.reject(r.left)
    })
  }
  const one = (bump: Bump) =>
    new Promise<void>((resolve, reject) => {
      if (isVisible(options, bump)) return resolve()
      pending.push({ bump, resolve, reject })
      if (!scheduled) {
        scheduled = true
        options.defer(flush)
      }
    })
  // not a fan-out: the callers of one batched bump wait for their own partitions
  return (bumps) => Promise.all(bumps.map(one)).then(() => {})
}
