/**
 * The leader election and ISR rules behind every PartitionChangeRecord the replication control
 * writes (Kafka's PartitionChangeBuilder, without eligible leader replicas and reassignment): given
 * a partition, a target ISR and who may lead, decide the new leader, ISR and leader recovery state,
 * or nothing when nothing changes. Pure; it builds no records and knows no topics.
 */

/** No leader (Kafka's NO_LEADER). */
export const NO_LEADER = -1
/** In a PartitionChangeRecord: the leader does not change. */
export const NO_LEADER_CHANGE = -2
/** Leader recovery states (Kafka's LeaderRecoveryState); -1 in a change record means "unchanged". */
export const RECOVERED = 0
export const RECOVERING = 1
export const NO_RECOVERY_STATE_CHANGE = -1

/** What an election needs to know of a partition. */
export interface PartitionView {
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
  readonly leader: number
  readonly leaderRecoveryState: number
}

/**
 * `online`: keep a valid leader, else the first in-sync replica that may lead. `preferred`: the first
 * replica if it is in sync and may lead, else as online. `unclean`: as online, and failing that the
 * first replica that may lead even though it is out of sync.
 */
export type Election = "online" | "preferred" | "unclean"

export interface ChangeRequest {
  readonly election: Election
  /** Who may lead at all (live, not being removed); the ISR condition is applied on top. */
  readonly isAcceptableLeader: (brokerId: number) => boolean
  /** The ISR wanted; the current one when absent. An empty target keeps the current ISR. */
  readonly targetIsr?: ReadonlyArray<number>
  /** The leader recovery state wanted; the current one when absent. */
  readonly targetLeaderRecoveryState?: number
}

/** The fields of a PartitionChangeRecord that the change sets; null when nothing changes. */
export interface Change {
  /** NO_LEADER_CHANGE, NO_LEADER or the new leader. */
  readonly leader: number
  /** The new ISR, or null when unchanged. */
  readonly isr: ReadonlyArray<number> | null
  /** The new leader recovery state, or NO_RECOVERY_STATE_CHANGE. */
  readonly leaderRecoveryState: number
}

const sameList = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i])

/** The new leader and whether the election was unclean. */
const elect = (
  p: PartitionView,
  targetIsr: ReadonlyArray<number>,
  req: ChangeRequest
): { readonly leader: number; readonly unclean: boolean } => {
  const valid = (r: number) => targetIsr.includes(r) && req.isAcceptableLeader(r)
  if (req.election === "preferred") {
    const preferred = p.replicas[0]
    if (preferred !== undefined && valid(preferred)) return { leader: preferred, unclean: false }
  }
  if (p.leader !== NO_LEADER && valid(p.leader)) return { leader: p.leader, unclean: false }
  const clean = p.replicas.find(valid)
  if (clean !== undefined) return { leader: clean, unclean: false }
  if (req.election === "unclean") {
    const any = p.replicas.find((r) => req.isAcceptableLeader(r))
    if (any !== undefined) return { leader: any, unclean: true }
  }
  return { leader: NO_LEADER, unclean: false }
}

/**
 * The change to write, or null for none. Every leader change is reported (and so bumps the leader
 * epoch); an unclean election forces the ISR to the new leader alone and marks the partition as
 * recovering. A target ISR that would be empty is not written: the partition keeps its last ISR,
 * so that the last in-sync replica is known when it returns.
 */
export const plan = (p: PartitionView, req: ChangeRequest): Change | null => {
  const targetIsr = req.targetIsr ?? p.isr
  const { leader, unclean } = elect(p, targetIsr, req)
  let recordLeader = NO_LEADER_CHANGE
  let isr: ReadonlyArray<number> | null = null
  let leaderRecoveryState = NO_RECOVERY_STATE_CHANGE
  if (leader !== p.leader) {
    recordLeader = leader
    if (unclean) {
      isr = [leader]
      if (p.leaderRecoveryState !== RECOVERING) leaderRecoveryState = RECOVERING
    }
  }
  if (isr === null && targetIsr.length > 0 && !sameList(targetIsr, p.isr)) isr = targetIsr
  if (req.targetLeaderRecoveryState !== undefined && req.targetLeaderRecoveryState !== p.leaderRecoveryState)
    leaderRecoveryState = req.targetLeaderRecoveryState
  if (recordLeader === NO_LEADER_CHANGE && isr === null && leaderRecoveryState === NO_RECOVERY_STATE_CHANGE) return null
  return { leader: recordLeader, isr, leaderRecoveryState }
}
