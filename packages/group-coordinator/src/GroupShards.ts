/**
 * The group coordinators of one broker, on the coordinator runtime: each `__consumer_offsets`
 * partition it leads is a shard whose hard state (groups with their members, committed offsets) is
 * replayed from the partition at the leader epoch it leads it in, and reloaded when that epoch changes
 * (a bounce A→B→A seen in one metadata delta arrives as a new epoch, so A serves what B committed).
 * Beside each shard lives its soft state, a `GroupCoordinator` (parked joins and syncs, rebalance and
 * session timers on the shard's runtime timers), dropped with the shard.
 */
import {
  CoordinatorResult,
  CoordinatorRuntime,
  CoordinatorShard,
  type CoordinatorLog
} from "@clustermirror/coordinator-runtime"
import { Errors, Hashing } from "@clustermirror/protocol"
import { Effect, Either, Exit, Runtime, Scope } from "effect"
import type * as ConsumerGroups from "./ConsumerGroups.js"
import * as ConsumerGroupWire from "./ConsumerGroupWire.js"
import * as GroupCoordinator from "./GroupCoordinator.js"
import * as GroupState from "./internal/groupState.js"

export const OFFSETS_TOPIC = "__consumer_offsets"

/** The shard definition of `__consumer_offsets`: the replayed hard state of the group coordinator. */
export const shardDef = CoordinatorShard.make<GroupState.State, GroupState.Entry>({
  name: OFFSETS_TOPIC,
  empty: () => GroupState.empty,
  replay: GroupState.replayEntry
})

/** The requests a group's coordinator answers (what a broker routes to the coordinator of a group). */
export type GroupRequests = Pick<
  GroupCoordinator.GroupCoordinator,
  | "joinGroup"
  | "syncGroup"
  | "heartbeat"
  | "leaveGroup"
  | "commitOffsets"
  | "commitTransactionalOffsets"
  | "fetchOffsets"
  | "consumerGroupHeartbeat"
>

const notCoordinatorCommit = async (
  r: GroupCoordinator.OffsetCommitRequest
): Promise<GroupCoordinator.OffsetCommitResult> => ({
  topics: r.topics.map((t) => ({
    name: t.name,
    partitions: t.partitions.map((p) => ({
      partitionIndex: p.partitionIndex,
      errorCode: Errors.ErrorCode.NOT_COORDINATOR
    }))
  }))
})

/** The answers for a group whose coordinator is not on this broker: NOT_COORDINATOR, so the client looks it up again. */
export const notCoordinatorAnswers: GroupRequests = {
  joinGroup: async (r) => ({
    errorCode: Errors.ErrorCode.NOT_COORDINATOR,
    generationId: -1,
    protocolType: null,
    protocolName: null,
    leader: "",
    skipAssignment: false,
    memberId: r.memberId,
    members: []
  }),
  syncGroup: async () => ({
    errorCode: Errors.ErrorCode.NOT_COORDINATOR,
    protocolType: null,
    protocolName: null,
    assignment: new Uint8Array(0)
  }),
  heartbeat: async () => ({ errorCode: Errors.ErrorCode.NOT_COORDINATOR }),
  leaveGroup: async (r) => ({
    errorCode: Errors.ErrorCode.NOT_COORDINATOR,
    members: r.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      errorCode: Errors.ErrorCode.NOT_COORDINATOR
    }))
  }),
  commitOffsets: notCoordinatorCommit,
  commitTransactionalOffsets: notCoordinatorCommit,
  fetchOffsets: async () => ({ errorCode: Errors.ErrorCode.NOT_COORDINATOR, topics: [] }),
  consumerGroupHeartbeat: async () => ({
    errorCode: Errors.ErrorCode.NOT_COORDINATOR,
    errorMessage: null,
    memberId: null,
    memberEpoch: -1,
    heartbeatIntervalMs: 0,
    assignment: null
  })
}

export interface Options {
  /** The `__consumer_offsets` partitions as a coordinator log. */
  readonly log: CoordinatorLog.CoordinatorLog<GroupState.Entry>
  /** The number of `__consumer_offsets` partitions (1 while the topic does not exist). */
  readonly partitionCount: () => number
  readonly config?: () => Partial<GroupCoordinator.GroupCoordinatorConfig>
  /** Consumer groups (KIP-848): `group.consumer.*` and the cluster's topics. */
  readonly consumer?: GroupCoordinator.GroupCoordinatorOptions["consumer"]
  /** The Effect runtime whose `Clock` the shards' timers run on (`TestClock` in tests). */
  readonly runtime?: Runtime.Runtime<never>
  readonly randomUuid?: () => string
  /** A partition whose load failed (its log could not be read): it has no coordinator until leadership changes. */
  readonly onLoadFailed?: (partition: number, message: string) => void
}

interface Shard {
  readonly leaderEpoch: number
  /** Whether the load of the partition is done (its coordinator serves). */
  readonly loaded: () => boolean
  /** Set when the shard is dropped: its coordinator may no longer write or arm timers. */
  readonly retire: () => void
  readonly coordinator: Promise<GroupCoordinator.GroupCoordinator>
}

const notCoordinator = (partition: number) =>
  Object.assign(new Error(`${OFFSETS_TOPIC}-${partition}: not the coordinator`), {
    errorCode: Errors.ErrorCode.NOT_COORDINATOR
  })

export class GroupShards {
  private readonly shards = new Map<number, Shard>()
  private readonly scope: Scope.CloseableScope
  private readonly coordinators: CoordinatorRuntime.CoordinatorRuntime<GroupState.State, GroupState.Entry>
  private readonly runSync: <A, E>(effect: Effect.Effect<A, E>) => A
  private readonly runPromise: <A, E>(effect: Effect.Effect<A, E>) => Promise<A>
  private timerSeq = 0

  constructor(private readonly options: Options) {
    const runtime = options.runtime ?? Runtime.defaultRuntime
    this.runSync = Runtime.runSync(runtime)
    this.runPromise = Runtime.runPromise(runtime)
    this.scope = this.runSync(Scope.make())
    this.coordinators = this.runSync(Scope.extend(CoordinatorRuntime.make(shardDef, options.log), this.scope))
  }

  /**
   * Called with every partition of `__consumer_offsets`, whether this broker now leads it and the
   * partition's leader epoch. Leading in a new epoch drops the shard and reloads it from the log.
   */
  onLeadership(partition: number, leader: boolean, leaderEpoch: number): void {
    const current = this.shards.get(partition)
    if (leader && current !== undefined && current.leaderEpoch === leaderEpoch) return
    if (current !== undefined) {
      this.shards.delete(partition)
      current.retire()
      void current.coordinator.then(
        (g) => g.close(),
        () => undefined
      )
    }
    if (!leader) {
      void this.runPromise(Effect.ignore(this.coordinators.onLeadership(partition, null)))
      return
    }
    let retired = false
    let loaded = false
    const host = this.host(partition, () => retired)
    const coordinator = this.runPromise(this.coordinators.onLeadership(partition, leaderEpoch)).then(() =>
      GroupCoordinator.onHost(
        {
          config: this.options.config?.() ?? {},
          ...(this.options.consumer === undefined ? {} : { consumer: this.options.consumer }),
          ...(this.options.randomUuid === undefined ? {} : { randomUuid: this.options.randomUuid })
        },
        host
      )
    )
    void coordinator.then(
      () => {
        loaded = true
      },
      () => undefined
    )
    // A load that fails leaves the partition without a coordinator: requests get NOT_COORDINATOR.
    coordinator.catch((e: unknown) => {
      if (this.shards.get(partition)?.coordinator === coordinator) this.shards.delete(partition)
      this.options.onLoadFailed?.(partition, e instanceof Error ? e.message : String(e))
    })
    this.shards.set(partition, {
      leaderEpoch,
      loaded: () => loaded,
      retire: () => {
        retired = true
      },
      coordinator
    })
  }

  /** The coordinator's port to its shard: committed state, writes and timers of the runtime. */
  private host(partition: number, retired: () => boolean): GroupCoordinator.Host {
    const rt = this.coordinators
    let last = GroupState.empty
    const committed = () => {
      if (retired()) return last
      const read = this.runSync(Effect.either(rt.read(partition, (s) => s)))
      if (Either.isRight(read)) last = read.right
      return last
    }
    const write = (records: ReadonlyArray<GroupState.Entry>) =>
      retired()
        ? Promise.reject(notCoordinator(partition))
        : this.runPromise(
            Effect.either(rt.write(partition, "group", () => Either.right(CoordinatorResult.of(records, undefined))))
          ).then((r) => {
            // The runtime's error code goes with the rejection (e.g. INVALID_PRODUCER_EPOCH from the log).
            if (Either.isLeft(r)) throw Object.assign(new Error(r.left.message), { errorCode: r.left.errorCode })
          })
    return {
      committed,
      write,
      decide: <A>(
        f: (state: GroupState.State) => { readonly records: ReadonlyArray<GroupState.Entry>; readonly response: A }
      ) =>
        retired()
          ? Promise.reject(notCoordinator(partition))
          : this.runPromise(
              Effect.either(
                rt.write(partition, "consumer group", (state) => {
                  const d = f(state)
                  return Either.right(CoordinatorResult.of(d.records, d.response))
                })
              )
            ).then((r) => {
              if (Either.isLeft(r)) throw Object.assign(new Error(r.left.message), { errorCode: r.left.errorCode })
              return r.right
            }),
      // A write without records answers once every earlier write of the shard committed; a retired
      // coordinator's writes were failed with its shard, and the next shard's are none of its business.
      flush: () =>
        retired()
          ? Promise.resolve()
          : this.runPromise(
              Effect.ignore(rt.write(partition, "flush", () => Either.right(CoordinatorResult.response(undefined))))
            ),
      clock: {
        now: () => this.runSync(Effect.clockWith((c) => c.currentTimeMillis)),
        schedule: (delayMs, callback) => {
          if (retired()) return { cancel: () => undefined }
          const key = `t${++this.timerSeq}`
          // The timer's op runs the coordinator's callback and writes nothing itself: the callback's own
          // writes go through `write`, in order behind it.
          this.runSync(
            Effect.ignore(
              rt.scheduleTimer(partition, key, delayMs, () => {
                if (!retired()) callback()
                return Either.right(CoordinatorResult.response(undefined))
              })
            )
          )
          return { cancel: () => this.runSync(rt.cancelTimer(partition, key)) }
        }
      }
    }
  }

  /**
   * WriteTxnMarkers for a `__consumer_offsets` partition: the marker is written through its shard. A
   * partition without a loaded coordinator here answers NOT_LEADER_OR_FOLLOWER, which the transaction
   * coordinator retries, as Kafka maps NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and
   * COORDINATOR_NOT_AVAILABLE for markers.
   */
  async completeTransaction(partition: number, marker: GroupCoordinator.TxnCompletion): Promise<number> {
    const shard = this.shards.get(partition)
    const code =
      shard === undefined
        ? Errors.ErrorCode.NOT_COORDINATOR
        : await shard.coordinator.then(
            (c) => c.completeTransaction(marker),
            () => Errors.ErrorCode.COORDINATOR_NOT_AVAILABLE
          )
    return code === Errors.ErrorCode.NOT_COORDINATOR ||
      code === Errors.ErrorCode.COORDINATOR_LOAD_IN_PROGRESS ||
      code === Errors.ErrorCode.COORDINATOR_NOT_AVAILABLE
      ? Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER
      : code
  }

  /** The leader epoch the shard of a partition was loaded for, if this broker leads it. */
  leaderEpochOf(partition: number): number | undefined {
    return this.shards.get(partition)?.leaderEpoch
  }

  partitionFor(groupId: string): number {
    return Hashing.groupCoordinatorPartition(groupId, Math.max(1, this.options.partitionCount()))
  }

  forGroup(groupId: string): Promise<GroupCoordinator.GroupCoordinator> | undefined {
    return this.shards.get(this.partitionFor(groupId))?.coordinator
  }

  /** ListGroups over this broker's coordinators. */
  async listGroups(req: GroupCoordinator.ListGroupsRequest): Promise<ReadonlyArray<GroupCoordinator.ListedGroup>> {
    // not a fan-out: this broker's own shards
    return (await Promise.all((await this.all()).map((c) => c.listGroups(req)))).flat()
  }

  /**
   * The loaded coordinator of each group's partition, or the error its groups get: NOT_COORDINATOR
   * where this broker does not lead the partition, COORDINATOR_LOAD_IN_PROGRESS while it loads (unless
   * `waitForLoad`).
   */
  private async byCoordinator<A>(
    groupIds: ReadonlyArray<string>,
    waitForLoad: boolean,
    f: (coordinator: GroupCoordinator.GroupCoordinator | number, groupIds: ReadonlyArray<string>) => Promise<A>
  ): Promise<Array<A>> {
    const byPartition = new Map<number, Array<string>>()
    for (const groupId of new Set(groupIds)) {
      const partition = this.partitionFor(groupId)
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), groupId])
    }
    // not a fan-out: this broker's own shards, each answering from memory or its own log
    return Promise.all(
      [...byPartition].map(async ([partition, ids]) => {
        const shard = this.shards.get(partition)
        if (shard === undefined) return f(Errors.ErrorCode.NOT_COORDINATOR, ids)
        if (!shard.loaded() && !waitForLoad) return f(Errors.ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ids)
        return f(await shard.coordinator, ids)
      })
    )
  }

  /** DeleteGroups: each group deleted by its coordinator here, or the error of its partition. */
  async deleteGroups(groupIds: ReadonlyArray<string>): Promise<ReadonlyArray<GroupCoordinator.DeletedGroup>> {
    const results = await this.byCoordinator(groupIds, false, async (c, ids) =>
      typeof c === "number" ? ids.map((groupId) => ({ groupId, errorCode: c })) : c.deleteGroups(ids)
    )
    return results.flat()
  }

  /** OffsetDelete on the group's coordinator here; INVALID_GROUP_ID for an empty group id. */
  async deleteOffsets(req: GroupCoordinator.OffsetDeleteRequest): Promise<GroupCoordinator.OffsetDeleteResult> {
    if (req.groupId === "") return { errorCode: Errors.ErrorCode.INVALID_GROUP_ID, topics: [] }
    const [result] = await this.byCoordinator([req.groupId], false, (c) =>
      typeof c === "number" ? Promise.resolve({ errorCode: c, topics: [] }) : c.deleteOffsets(req)
    )
    return result ?? { errorCode: Errors.ErrorCode.INVALID_GROUP_ID, topics: [] }
  }

  /** DescribeGroups: each group described by its coordinator here (once loaded), or NOT_COORDINATOR. */
  async describeGroups(groupIds: ReadonlyArray<string>): Promise<ReadonlyArray<GroupCoordinator.DescribedGroup>> {
    const described = await this.byCoordinator(groupIds, true, async (c, ids) =>
      typeof c === "number"
        ? ids.map((groupId) => ({
            errorCode: c,
            groupId,
            groupState: "Dead" as const,
            protocolType: "",
            protocolData: "",
            members: []
          }))
        : c.describeGroups(ids)
    )
    const byId = new Map(described.flat().map((g) => [g.groupId, g]))
    return groupIds.flatMap((id) => {
      const g = byId.get(id)
      return g === undefined ? [] : [g]
    })
  }

  /** ConsumerGroupDescribe: each group from its coordinator here, else NOT_COORDINATOR. */
  describeConsumerGroups(groupIds: ReadonlyArray<string>): Promise<ReadonlyArray<ConsumerGroups.DescribedGroup>> {
    // not a fan-out: each group's coordinator is one of this broker's own shards
    return Promise.all(
      groupIds.map(async (g) => {
        const c = this.forGroup(g)
        return c === undefined ? ConsumerGroupWire.notCoordinator(g) : (await (await c).consumerGroupDescribe([g]))[0]!
      })
    )
  }

  async all(): Promise<GroupCoordinator.GroupCoordinator[]> {
    // not a fan-out: the coordinators of this broker's own shards, loading in memory
    const loaded = await Promise.allSettled([...this.shards.values()].map((s) => s.coordinator))
    return loaded.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))
  }

  async close(): Promise<void> {
    const all = await this.all()
    const shards = [...this.shards.values()]
    this.shards.clear()
    // Each coordinator answers its parked requests and waits for its writes in flight, then goes.
    // not a fan-out: closing this broker's own shards
    await Promise.all(all.map((g) => g.close()))
    for (const s of shards) s.retire()
    await this.runPromise(Scope.close(this.scope, Exit.void))
  }
}
