/**
 * ClusterMirrorCoordinator: the `__mirror_state` coordinator on one broker (KIP-1279 §1, §3.4), a thin
 * layer over the coordinator runtime. `MirrorStateShard` is the shard definition; the runtime holds one
 * shard per `__mirror_state` partition this broker leads, loaded by replaying that partition at its
 * leader epoch (reloaded when the epoch changes, so a leader that moved away and back sees what the
 * other wrote), dropped when leadership leaves. Writes are serialized per shard, decided on the
 * candidate state, replayed before the append, batched across requests and answered once committed.
 * Reads answer from committed state.
 *
 * It owns only the translation between Read/WriteMirrorStates and the shards. It must not decide
 * partition transitions (the leader's MirrorMetadataManager does) nor know how records reach disk (the
 * broker implements the log port). Its methods are Promise and plain functions: the broker and the
 * manager call them; the log's `read` must complete synchronously (it reads local replicas), so that a
 * load answers at once.
 */
import {
  CoordinatorLog,
  CoordinatorRuntime,
  CoordinatorRuntimeError,
  CoordinatorShard
} from "@clustermirror/coordinator-runtime"
import {
  Errors,
  Hashing,
  type MirrorStateRecords,
  type ReadMirrorStates,
  type WriteMirrorStates
} from "@clustermirror/protocol"
import { Effect, Either, Exit, Scope } from "effect"
import type * as MirrorStateMachine from "./MirrorStateMachine.js"
import * as MirrorStateShard from "./MirrorStateShard.js"

/** The coordinator log port of `__mirror_state`. */
export type MirrorStateLog = CoordinatorLog.CoordinatorLog<MirrorStateRecords.MirrorStateRecord>

/** The Promise form of the log port, for callers outside Effect: `append` rejects with an `errorCode`. */
export interface StateLog {
  /** Every record of a partition this broker leads, from its log start, in offset order. */
  readonly readAll: (partition: number) => Iterable<MirrorStateRecords.MirrorStateRecord>
  /** Appends as leader at `leaderEpoch` and resolves once committed (acks=all); rejects otherwise. */
  readonly append: (
    partition: number,
    leaderEpoch: number,
    records: ReadonlyArray<MirrorStateRecords.MirrorStateRecord>
  ) => Promise<void>
}

export interface ClusterMirrorCoordinatorOptions {
  readonly log: StateLog | MirrorStateLog
  readonly context: MirrorStateShard.Context
  /** Called after a partition was loaded on leadership gain, with the replay's duration (metrics). */
  readonly onLoaded?: (partition: number, ms: number) => void
  /** A partition whose load failed (its log could not be read): it answers NOT_COORDINATOR until leadership changes. */
  readonly onLoadFailed?: (partition: number, message: string) => void
  /** Most records in one append (default: the runtime's). */
  readonly maxBatchRecords?: number
}

type WriteResponse = WriteMirrorStates.Response
type WriteAnswer = WriteResponse["topics"][number]["partitions"][number]

const errorCodeOf = (e: unknown): number =>
  typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number"
    ? e.errorCode
    : Errors.ErrorCode.COORDINATOR_NOT_AVAILABLE

/** The runtime's log port over a Promise `StateLog`. */
export const fromStateLog = (log: StateLog): MirrorStateLog =>
  CoordinatorLog.make({
    read: (partition) =>
      Effect.try({
        try: () => [...log.readAll(partition)],
        catch: (e) =>
          new CoordinatorRuntimeError.CoordinatorLogError({
            partition,
            message: e instanceof Error ? e.message : String(e)
          })
      }),
    append: (partition, leaderEpoch, records) =>
      Effect.tryPromise({
        try: () => log.append(partition, leaderEpoch, records),
        catch: (e) => {
          const errorCode = errorCodeOf(e)
          const message = e instanceof Error ? e.message : String(e)
          return errorCode === Errors.ErrorCode.NOT_COORDINATOR
            ? new CoordinatorRuntimeError.NotCoordinator({ partition, message })
            : new CoordinatorRuntimeError.AppendFailed({ partition, errorCode, message })
        }
      })
  })

const isStateLog = (log: StateLog | MirrorStateLog): log is StateLog => "readAll" in log

export class ClusterMirrorCoordinator {
  private numPartitions = 0
  private readonly scope: Scope.CloseableScope
  private readonly runtime: CoordinatorRuntime.CoordinatorRuntime<
    MirrorStateShard.State,
    MirrorStateRecords.MirrorStateRecord
  >

  constructor(private readonly options: ClusterMirrorCoordinatorOptions) {
    const def = CoordinatorShard.make<MirrorStateShard.State, MirrorStateRecords.MirrorStateRecord>({
      name: "__mirror_state",
      empty: ({ partition, leaderEpoch }) => MirrorStateShard.empty(partition, this.numPartitions, leaderEpoch),
      replay: MirrorStateShard.replay
    })
    const log = isStateLog(options.log) ? fromStateLog(options.log) : options.log
    this.scope = Effect.runSync(Scope.make())
    this.runtime = Effect.runSync(
      Scope.extend(
        CoordinatorRuntime.make(def, log, {
          ...(options.onLoaded === undefined ? {} : { onLoaded: options.onLoaded }),
          ...(options.maxBatchRecords === undefined ? {} : { maxBatchRecords: options.maxBatchRecords })
        }),
        this.scope
      )
    )
  }

  /**
   * Leadership of `__mirror_state` partition `partition` gained at `leaderEpoch`: replays it from the
   * start unless it is loaded at that epoch (another epoch reloads: the partition may have been led
   * elsewhere in between). Returns the shard's entries so the caller can resume the work of their
   * cached states. A log that cannot be read leaves the partition unloaded (NOT_COORDINATOR).
   */
  onBecomeLeader(partition: number, leaderEpoch: number, numPartitions: number): ReadonlyArray<MirrorStateShard.Entry> {
    if (this.numPartitions !== numPartitions) {
      Effect.runSync(this.runtime.onLeadership(partition, null))
      this.numPartitions = numPartitions
    }
    const loaded = Effect.runSync(Effect.either(this.runtime.onLeadership(partition, leaderEpoch)))
    if (Either.isLeft(loaded)) {
      this.options.onLoadFailed?.(partition, loaded.left.message)
      return []
    }
    const state = this.stateOf(partition)
    return state === undefined ? [] : MirrorStateShard.entries(state)
  }

  /** Leadership lost: the shard's cache goes; its pending writes answer NOT_COORDINATOR. */
  onResign(partition: number): void {
    Effect.runSync(this.runtime.onLeadership(partition, null))
  }

  /** Drops every shard (pending writes answer NOT_COORDINATOR). */
  close(): Promise<void> {
    return Effect.runPromise(Scope.close(this.scope, Exit.void))
  }

  /** The `__mirror_state` partition of a key, under the partition count the shards were loaded with. */
  partitionFor(key: MirrorStateRecords.Key, numPartitions = this.numPartitions): number {
    return Hashing.mirrorStatePartition(key.mirrorName, key.topicId, key.partition, numPartitions)
  }

  /** Whether this broker holds the state of `key` (it leads the key's `__mirror_state` partition). */
  coordinates(key: MirrorStateRecords.Key, numPartitions: number): boolean {
    if (numPartitions !== this.numPartitions) return false
    return this.stateOf(this.partitionFor(key, numPartitions)) !== undefined
  }

  /** The cached value of a key this broker coordinates; undefined when it does not coordinate it. */
  get(key: MirrorStateRecords.Key, numPartitions: number): MirrorStateMachine.MirrorStateValue | undefined {
    if (numPartitions !== this.numPartitions) return undefined
    const state = this.stateOf(this.partitionFor(key, numPartitions))
    return state === undefined ? undefined : MirrorStateShard.get(state, key)
  }

  /** Every entry of every loaded shard. */
  *entries(): Iterable<MirrorStateShard.Entry> {
    for (const shard of Effect.runSync(this.runtime.shards())) yield* MirrorStateShard.entries(shard.state)
  }

  /** The partitions this broker leads, for metrics and tests. */
  loadedPartitions(): ReadonlyArray<number> {
    return Effect.runSync(this.runtime.loadedPartitions())
  }

  /** ReadMirrorStates (100): answered from the loaded shards; other keys answer NOT_COORDINATOR. */
  read(request: ReadMirrorStates.Request): ReadMirrorStates.Response {
    const ctx = this.options.context
    const topics = request.topics.map((topic) => {
      const topicId = ctx.topicId(topic.name)
      return {
        name: topic.name,
        partitions: topic.partitions.map((p) => {
          const shard = this.shardOf(request.mirrorName, topicId, p.partitionIndex)
          const one = MirrorStateShard.readMirrorStates(
            shard,
            { mirrorName: request.mirrorName, topics: [{ name: topic.name, partitions: [p] }] },
            ctx
          )
          return one.topics[0]!.partitions[0]!
        })
      }
    })
    return { throttleTimeMs: 0, errorCode: Errors.ErrorCode.NONE, errorMessage: null, topics }
  }

  /**
   * WriteMirrorStates (101): the request is split per `__mirror_state` partition; each part is decided
   * on its shard's candidate state, appended, and answered once committed, in request order. A part
   * whose append fails answers its partitions with the append's error and changes nothing.
   */
  async write(request: MirrorStateShard.WriteRequest): Promise<WriteResponse> {
    const ctx = this.options.context
    const groups = new Map<number, Array<{ topic: number; index: number }>>()
    const answers: Array<Array<WriteAnswer | undefined>> = request.topics.map((t) => t.partitions.map(() => undefined))
    request.topics.forEach((topic, ti) => {
      const topicId = ctx.topicId(topic.name)
      topic.partitions.forEach((p, pi) => {
        const partition =
          topicId === undefined || this.numPartitions === 0
            ? -1
            : Hashing.mirrorStatePartition(request.mirrorName, topicId, p.partitionIndex, this.numPartitions)
        let g = groups.get(partition)
        if (g === undefined) groups.set(partition, (g = []))
        g.push({ topic: ti, index: pi })
      })
    })
    await Effect.runPromise(
      Effect.forEach(
        [...groups],
        ([partition, members]) => {
          const sub: MirrorStateShard.WriteRequest = {
            mirrorName: request.mirrorName,
            stoppedTopics: [],
            topics: members.map((m) => ({
              name: request.topics[m.topic]!.name,
              partitions: [request.topics[m.topic]!.partitions[m.index]!]
            }))
          }
          return Effect.map(this.writeToShard(partition, sub), (res) =>
            members.forEach((m, i) => {
              answers[m.topic]![m.index] = res.topics[i]!.partitions[0]!
            })
          )
        },
        { concurrency: "unbounded", discard: true }
      )
    )
    return {
      throttleTimeMs: 0,
      errorCode: Errors.ErrorCode.NONE,
      errorMessage: null,
      topics: request.topics.map((t, ti) => ({
        name: t.name,
        partitions: t.partitions.map(
          (p, pi) => answers[ti]![pi] ?? refused(p.partitionIndex, Errors.ErrorCode.UNKNOWN_SERVER_ERROR, null)
        )
      }))
    }
  }

  /**
   * A mirror's config is gone (§3.4, §5.7): tombstones for every key of the mirror in every loaded
   * shard. Rejects when an append fails, so the caller retries on its next metadata update.
   */
  deleteMirror(mirrorName: string): Promise<number> {
    const runtime = this.runtime
    return Effect.runPromise(
      Effect.gen(function* () {
        const shards = yield* runtime.shards()
        const counts = yield* Effect.forEach(
          shards,
          (shard) =>
            runtime
              .write(shard.partition, "deleteMirror", (state) =>
                Either.right(MirrorStateShard.deleteMirror(state, mirrorName))
              )
              .pipe(
                Effect.map((keys) => keys.length),
                // A shard that moved away meanwhile is its new leader's to clean.
                Effect.catchTags({
                  NotCoordinator: () => Effect.succeed(0),
                  CoordinatorLoadInProgress: () => Effect.succeed(0)
                })
              ),
          { concurrency: "unbounded" }
        )
        return counts.reduce((a, b) => a + b, 0)
      })
    )
  }

  private stateOf(partition: number): MirrorStateShard.State | undefined {
    return Effect.runSync(
      Effect.orElseSucceed(
        this.runtime.read(partition, (state) => state),
        () => undefined
      )
    )
  }

  private shardOf(mirrorName: string, topicId: string | undefined, partition: number): MirrorStateShard.State {
    if (topicId === undefined || this.numPartitions === 0) return MirrorStateShard.empty(0, 1)
    const p = Hashing.mirrorStatePartition(mirrorName, topicId, partition, this.numPartitions)
    return this.stateOf(p) ?? MirrorStateShard.empty(p, this.numPartitions)
  }

  private writeToShard(partition: number, request: MirrorStateShard.WriteRequest): Effect.Effect<WriteResponse> {
    const ctx = this.options.context
    // Not loaded here: the pure shard answers NOT_COORDINATOR (or unknown topic) for every partition.
    const notLoaded = () =>
      MirrorStateShard.writeMirrorStates(this.shardOf(request.mirrorName, undefined, 0), request, ctx).response
    if (partition < 0) return Effect.sync(notLoaded)
    return this.runtime
      .write(partition, "WriteMirrorStates", (state) =>
        Either.right(MirrorStateShard.writeMirrorStates(state, request, ctx))
      )
      .pipe(
        Effect.catchAll((e) => {
          if (e._tag === "NotCoordinator" && this.stateOf(partition) === undefined) return Effect.sync(notLoaded)
          const message = `Writing __mirror_state-${partition} failed: ${e.message}`
          return Effect.succeed(refuseAll(request, e.errorCode, message))
        })
      )
  }
}

const refused = (partitionIndex: number, errorCode: number, errorMessage: string | null): WriteAnswer => ({
  partitionIndex,
  errorCode,
  errorMessage,
  stateEpoch: -1
})

const refuseAll = (request: MirrorStateShard.WriteRequest, errorCode: number, errorMessage: string): WriteResponse => ({
  throttleTimeMs: 0,
  errorCode: Errors.ErrorCode.NONE,
  errorMessage: null,
  topics: request.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p) => refused(p.partitionIndex, errorCode, errorMessage))
  }))
})
