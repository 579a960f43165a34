/**
 * The consumer groups (KIP-848) of one coordinator shard, beside its classic groups: decides
 * ConsumerGroupHeartbeat on the shard's latest state through the host (records replayed, appended and
 * committed before the answer), and keeps the soft state: each member's session timer
 * (`group.consumer.session.timeout.ms`, re-armed by every heartbeat and armed for every member on load)
 * and its revocation timer (the member's rebalance timeout while it holds partitions to revoke). A timer
 * that fires fences the member as a leave does. It must not know the wire or do I/O but through its host.
 */
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { Errors } from "@clustermirror/protocol"
import { HashMap, Option } from "effect"
import * as ConsumerGroups from "./ConsumerGroups.js"
import type * as Clock from "./internal/Clock.js"
import type * as GroupState from "./internal/groupState.js"

const E = Errors.ErrorCode

/** What the consumer groups need of the shard they run on (a subset of the coordinator's `Host`). */
export interface ConsumerHost {
  readonly committed: () => GroupState.State
  /** Decides on the latest state of the shard (committed plus writes in flight); answers once committed. */
  readonly decide: <A>(
    f: (state: GroupState.State) => { readonly records: ReadonlyArray<GroupState.Entry>; readonly response: A }
  ) => Promise<A>
  readonly clock: Clock.Timers
}

export interface Options {
  readonly config: ConsumerGroups.Config
  /** The topics of the cluster (name, id, partition count). */
  readonly topics: () => ReadonlyArray<ConsumerGroups.TopicMeta>
  readonly randomUuid: () => string
  /**
   * The classic group of an id as its coordinator holds it, members of a rebalance in progress included
   * (they are persisted only when their generation syncs).
   */
  readonly classicGroup?: (groupId: string) => { readonly members: number; readonly protocolType: string } | undefined
}

export class ConsumerGroupCoordinator {
  private readonly sessions = new Map<string, Clock.Timer>()
  private readonly revocations = new Map<string, Clock.Timer>()
  private closed = false

  constructor(
    private readonly options: Options,
    private readonly host: ConsumerHost
  ) {
    for (const group of host.committed().consumerGroups.values())
      for (const m of group.members.values()) {
        this.armSession(group.groupId, m.memberId)
        this.armRevocation(group.groupId, m)
      }
  }

  get config(): ConsumerGroups.Config {
    return this.options.config
  }

  async heartbeat(req: ConsumerGroups.HeartbeatRequest): Promise<ConsumerGroups.HeartbeatResponse> {
    const error = (errorCode: number) => ({
      errorCode,
      errorMessage: null,
      memberId: null,
      memberEpoch: -1,
      heartbeatIntervalMs: 0,
      assignment: null
    })
    if (this.closed) return error(E.NOT_COORDINATOR)
    let member: ConsumerGroups.Member | null = null
    try {
      const response = await this.host.decide((state) => {
        const classic = Option.getOrUndefined(HashMap.get(state.groups, req.groupId))
        const hasOffsets = HashMap.has(state.offsets, req.groupId)
        const live = this.options.classicGroup?.(req.groupId)
        const decision = ConsumerGroups.heartbeat(state.consumerGroups, req, {
          topics: this.options.topics(),
          config: this.options.config,
          nowMs: this.host.clock.now(),
          newMemberId: this.options.randomUuid,
          classicGroup:
            live !== undefined && live.members > 0
              ? live
              : classic === undefined
                ? hasOffsets
                  ? { members: 0, protocolType: "" }
                  : undefined
                : { members: classic.members.length, protocolType: classic.protocolType }
        })
        member = decision.member
        return { records: decision.records.map(CoordinatorLog.plain), response: decision.response }
      })
      if (response.errorCode === E.NONE && !this.closed) {
        const key = keyOf(req.groupId, response.memberId ?? req.memberId)
        if (member === null) this.cancel(key)
        else {
          this.armSession(req.groupId, (member as ConsumerGroups.Member).memberId)
          this.armRevocation(req.groupId, member)
        }
      }
      return response
    } catch (e) {
      const code = errorCodeOf(e)
      return error(code === E.NOT_LEADER_OR_FOLLOWER ? E.NOT_COORDINATOR : code)
    }
  }

  describe(groupIds: ReadonlyArray<string>): ReadonlyArray<ConsumerGroups.DescribedGroup> {
    const state = this.host.committed()
    return groupIds.map((id) =>
      this.closed
        ? {
            ...ConsumerGroups.describe(ConsumerGroups.empty, id, [], this.options.config, false),
            errorCode: E.NOT_COORDINATOR
          }
        : ConsumerGroups.describe(
            state.consumerGroups,
            id,
            this.options.topics(),
            this.options.config,
            HashMap.has(state.groups, id)
          )
    )
  }

  close(): void {
    this.closed = true
    for (const t of [...this.sessions.values(), ...this.revocations.values()]) t.cancel()
    this.sessions.clear()
    this.revocations.clear()
  }

  /** Armed timers, for tests. */
  armedTimers(): number {
    return this.sessions.size + this.revocations.size
  }

  private cancel(key: string): void {
    this.sessions.get(key)?.cancel()
    this.sessions.delete(key)
    this.revocations.get(key)?.cancel()
    this.revocations.delete(key)
  }

  private armSession(groupId: string, memberId: string): void {
    const key = keyOf(groupId, memberId)
    this.sessions.get(key)?.cancel()
    const timer = this.host.clock.schedule(this.options.config.sessionTimeoutMs, () => {
      if (this.sessions.get(key) !== timer) return
      this.sessions.delete(key)
      this.fence(groupId, memberId, () => true)
    })
    this.sessions.set(key, timer)
  }

  /** While a member holds partitions to revoke, it has its rebalance timeout to give them up. */
  private armRevocation(groupId: string, member: ConsumerGroups.Member): void {
    const key = keyOf(groupId, member.memberId)
    if (member.state !== ConsumerGroups.MemberState.UNREVOKED_PARTITIONS) {
      this.revocations.get(key)?.cancel()
      this.revocations.delete(key)
      return
    }
    if (this.revocations.has(key)) return
    const epoch = member.memberEpoch
    const timeout = member.rebalanceTimeoutMs > 0 ? member.rebalanceTimeoutMs : this.options.config.sessionTimeoutMs
    const timer = this.host.clock.schedule(timeout, () => {
      if (this.revocations.get(key) !== timer) return
      this.revocations.delete(key)
      this.fence(
        groupId,
        member.memberId,
        (m) => m.state === ConsumerGroups.MemberState.UNREVOKED_PARTITIONS && m.memberEpoch === epoch
      )
    })
    this.revocations.set(key, timer)
  }

  private fence(groupId: string, memberId: string, expect: (m: ConsumerGroups.Member) => boolean): void {
    if (this.closed) return
    this.host
      .decide((state) => {
        const records = ConsumerGroups.fenceMember(state.consumerGroups, groupId, memberId, expect)
        return { records: records.map(CoordinatorLog.plain), response: records.length > 0 }
      })
      .then(
        (fenced) => {
          if (fenced) this.cancel(keyOf(groupId, memberId))
        },
        () => undefined
      )
  }
}

const keyOf = (groupId: string, memberId: string) => `${groupId}\u0000${memberId}`

const errorCodeOf = (e: unknown): number =>
  typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number"
    ? e.errorCode
    : E.COORDINATOR_NOT_AVAILABLE
