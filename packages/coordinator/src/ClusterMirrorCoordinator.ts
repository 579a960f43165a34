/**
 * ClusterMirrorCoordinator: the runtime of the `__mirror_state` coordinator on one broker (KIP-1279 §1,
 * §3.4). It holds one `MirrorStateShard` per `__mirror_state` partition this broker leads, loaded by
 * replaying that partition from its start when leadership arrives and dropped when it leaves. Writes are
 * serialized per shard: decide on the shard's state, append the records (acks=all) through the
 * `StateLog` port, replay them once committed, then answer. Reads answer from the loaded shards.
 *
 * It owns only the shards. It must not decide partition transitions (the leader's
 * MirrorMetadataManager does) nor know how records reach disk (the broker implements `StateLog`).
 */
import {
  Errors,
  Hashing,
  type MirrorStateRecords,
  type ReadMirrorStates,
  type WriteMirrorStates
} from "@clustermirror/protocol"
import type * as MirrorStateMachine from "./MirrorStateMachine.js"
import * as MirrorStateShard from "./MirrorStateShard.js"

/** What the coordinator needs of a `__mirror_state` partition's log. */
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
  readonly log: StateLog
  readonly context: MirrorStateShard.Context
  /** Called after a partition was loaded on leadership gain, with the replay's duration (metrics). */
  readonly onLoaded?: (partition: number, ms: number) => void
}

interface LoadedShard {
  state: MirrorStateShard.State
  /** The tail of this shard's write queue: writes decide on committed state, one at a time. */
  queue: Promise<void>
}

type WriteResponse = WriteMirrorStates.Response
type WriteAnswer = WriteResponse["topics"][number]["partitions"][number]

const errorCodeOf = (e: unknown): number =>
  typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number"
    ? e.errorCode
    : Errors.ErrorCode.COORDINATOR_NOT_AVAILABLE

export class ClusterMirrorCoordinator {
  private readonly shards = new Map<number, LoadedShard>()
  private numPartitions = 0

  constructor(private readonly options: ClusterMirrorCoordinatorOptions) {}

  /**
   * Leadership of `__mirror_state` partition `partition` gained at `leaderEpoch`: replays it from the
   * start. Returns the shard's entries so the caller can resume the work of their cached states.
   */
  onBecomeLeader(partition: number, leaderEpoch: number, numPartitions: number): ReadonlyArray<MirrorStateShard.Entry> {
    const current = this.shards.get(partition)
    if (current !== undefined && current.state.leaderEpoch === leaderEpoch && this.numPartitions === numPartitions)
      return MirrorStateShard.entries(current.state)
    this.numPartitions = numPartitions
    const started = performance.now()
    const state = MirrorStateShard.loadFrom(partition, numPartitions, leaderEpoch, this.options.log.readAll(partition))
    this.shards.set(partition, { state, queue: Promise.resolve() })
    this.options.onLoaded?.(partition, performance.now() - started)
    return MirrorStateShard.entries(state)
  }

  /** Leadership lost: the shard's cache goes; its pending writes answer NOT_COORDINATOR. */
  onResign(partition: number): void {
    this.shards.delete(partition)
  }

  /** The `__mirror_state` partition of a key, under the partition count the shards were loaded with. */
  partitionFor(key: MirrorStateRecords.Key, numPartitions = this.numPartitions): number {
    return Hashing.mirrorStatePartition(key.mirrorName, key.topicId, key.partition, numPartitions)
  }

  /** Whether this broker holds the state of `key` (it leads the key's `__mirror_state` partition). */
  coordinates(key: MirrorStateRecords.Key, numPartitions: number): boolean {
    if (numPartitions !== this.numPartitions) return false
    return this.shards.has(this.partitionFor(key, numPartitions))
  }

  /** The cached value of a key this broker coordinates; undefined when it does not coordinate it. */
  get(key: MirrorStateRecords.Key, numPartitions: number): MirrorStateMachine.MirrorStateValue | undefined {
    if (!this.coordinates(key, numPartitions)) return undefined
    const shard = this.shards.get(this.partitionFor(key, numPartitions))
    return shard === undefined ? undefined : MirrorStateShard.get(shard.state, key)
  }

  /** Every entry of every loaded shard. */
  *entries(): Iterable<MirrorStateShard.Entry> {
    for (const shard of this.shards.values()) yield* MirrorStateShard.entries(shard.state)
  }

  /** The partitions this broker leads, for metrics and tests. */
  loadedPartitions(): ReadonlyArray<number> {
    return [...this.shards.keys()].sort((a, b) => a - b)
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
   * on its shard's committed state, appended, replayed and answered in request order. A part whose
   * append fails answers its partitions with the append's error and changes nothing.
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
    await Promise.all(
      [...groups].map(async ([partition, members]) => {
        const sub: MirrorStateShard.WriteRequest = {
          mirrorName: request.mirrorName,
          stoppedTopics: [],
          topics: members.map((m) => ({
            name: request.topics[m.topic]!.name,
            partitions: [request.topics[m.topic]!.partitions[m.index]!]
          }))
        }
        const res = await this.writeToShard(partition, sub)
        members.forEach((m, i) => {
          answers[m.topic]![m.index] = res.topics[i]!.partitions[0]!
        })
      })
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
  async deleteMirror(mirrorName: string): Promise<number> {
    let deleted = 0
    await Promise.all(
      [...this.shards].map(([partition, shard]) =>
        this.serialized(shard, async () => {
          const current = this.shards.get(partition)
          if (current !== shard) return
          const result = MirrorStateShard.deleteMirror(shard.state, mirrorName)
          if (result.records.length === 0) return
          await this.options.log.append(partition, shard.state.leaderEpoch, result.records)
          if (this.shards.get(partition) === shard)
            shard.state = MirrorStateShard.replayAll(shard.state, result.records)
          deleted += result.response.length
        })
      )
    )
    return deleted
  }

  private shardOf(mirrorName: string, topicId: string | undefined, partition: number): MirrorStateShard.State {
    if (topicId === undefined || this.numPartitions === 0) return MirrorStateShard.empty(0, 1)
    const p = Hashing.mirrorStatePartition(mirrorName, topicId, partition, this.numPartitions)
    return this.shards.get(p)?.state ?? MirrorStateShard.empty(p, this.numPartitions)
  }

  private serialized(shard: LoadedShard, run: () => Promise<void>): Promise<void> {
    const next = shard.queue.then(run)
    shard.queue = next.catch(() => {})
    return next
  }

  private async writeToShard(partition: number, request: MirrorStateShard.WriteRequest): Promise<WriteResponse> {
    const ctx = this.options.context
    const shard = partition < 0 ? undefined : this.shards.get(partition)
    if (shard === undefined)
      // Not loaded here: the pure shard answers NOT_COORDINATOR (or unknown topic) for every partition.
      return MirrorStateShard.writeMirrorStates(this.shardOf(request.mirrorName, undefined, 0), request, ctx).response
    let response: WriteResponse | undefined
    await this.serialized(shard, async () => {
      if (this.shards.get(partition) !== shard) {
        response = MirrorStateShard.writeMirrorStates(
          MirrorStateShard.empty(partition, this.numPartitions),
          request,
          ctx
        ).response
        return
      }
      const result = MirrorStateShard.writeMirrorStates(shard.state, request, ctx)
      if (result.records.length > 0) {
        try {
          await this.options.log.append(partition, shard.state.leaderEpoch, result.records)
        } catch (e) {
          const code = errorCodeOf(e)
          const message = `Writing __mirror_state-${partition} failed: ${e instanceof Error ? e.message : String(e)}`
          response = {
            ...result.response,
            topics: result.response.topics.map((t) => ({
              name: t.name,
              partitions: t.partitions.map((p) => refused(p.partitionIndex, code, message))
            }))
          }
          return
        }
        if (this.shards.get(partition) === shard) shard.state = MirrorStateShard.replayAll(shard.state, result.records)
      }
      response = result.response
    })
    return response!
  }
}

const refused = (partitionIndex: number, errorCode: number, errorMessage: string | null): WriteAnswer => ({
  partitionIndex,
  errorCode,
  errorMessage,
  stateEpoch: -1
})
