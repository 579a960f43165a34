/**
 * The leader election, ISR and reassignment rules behind every PartitionChangeRecord the replication
 * control writes (Kafka's PartitionChangeBuilder, without eligible leader replicas): given a
 * partition, a target ISR, who may lead and maybe a new replica assignment, decide the new leader,
 * ISR, leader recovery state and assignment, or nothing when nothing changes. A reassignment in
 * progress completes in the change whose ISR holds every adding replica. Pure; it builds no records
 * and knows no topics.
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
  /** Replicas a reassignment in progress adds (absent: none). */
  readonly addingReplicas?: ReadonlyArray<number>
  /** Replicas a reassignment in progress removes (absent: none). */
  readonly removingReplicas?: ReadonlyArray<number>
}

/** A partition's replica assignment: during a reassignment the replicas are target + removing. */
export interface Assignment {
  readonly replicas: ReadonlyArray<number>
  readonly addingReplicas: ReadonlyArray<number>
  readonly removingReplicas: ReadonlyArray<number>
}

/**
 * The assignment of a reassignment from `current` replicas to `target` (Kafka's
 * PartitionReassignmentReplicas): replicas = target followed by the current ones not in it, adding =
 * target − current, removing = current − target.
 */
export const reassignment = (current: ReadonlyArray<number>, target: ReadonlyArray<number>): Assignment => {
  const removingReplicas = current.filter((r) => !target.includes(r))
  return {
    replicas: [...target, ...removingReplicas],
    addingReplicas: target.filter((r) => !current.includes(r)),
    removingReplicas
  }
}

/** The replicas a partition had before its reassignment started (replicas − adding). */
export const originalReplicas = (p: PartitionView): ReadonlyArray<number> =>
  p.replicas.filter((r) => !(p.addingReplicas ?? []).includes(r))

/** Whether a reassignment is in progress. */
export const isReassigning = (p: PartitionView): boolean =>
  (p.addingReplicas ?? []).length > 0 || (p.removingReplicas ?? []).length > 0

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
  /**
   * A new assignment (a reassignment starting, replaced or reverted); the ISR wanted is then cut to
   * its replicas. The current assignment when absent.
   */
  readonly targetAssignment?: Assignment
}

/** The fields of a PartitionChangeRecord that the change sets; null when nothing changes. */
export interface Change {
  /** NO_LEADER_CHANGE, NO_LEADER or the new leader. */
  readonly leader: number
  /** The new ISR, or null when unchanged. */
  readonly isr: ReadonlyArray<number> | null
  /** The new leader recovery state, or NO_RECOVERY_STATE_CHANGE. */
  readonly leaderRecoveryState: number
  /** The new replica assignment, or null when unchanged. */
  readonly assignment: Assignment | null
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
 * so that the last in-sync replica is known when it returns. A reassignment completes when every
 * adding replica is in the target ISR and some target replica is: replicas = target (in its order),
 * ISR = target ISR ∩ target, adding and removing cleared, and a leader no longer among the replicas
 * gives way to the first in-sync target replica that may lead.
 */
export const plan = (p: PartitionView, req: ChangeRequest): Change | null => {
  const current: Assignment = {
    replicas: p.replicas,
    addingReplicas: p.addingReplicas ?? [],
    removingReplicas: p.removingReplicas ?? []
  }
  let assignment = req.targetAssignment ?? current
  let targetIsr = req.targetIsr ?? p.isr
  if (req.targetAssignment !== undefined) targetIsr = targetIsr.filter((r) => assignment.replicas.includes(r))
  if (
    (assignment.addingReplicas.length > 0 || assignment.removingReplicas.length > 0) &&
    assignment.addingReplicas.every((r) => targetIsr.includes(r))
  ) {
    const removing = assignment.removingReplicas
    const target = assignment.replicas.filter((r) => !removing.includes(r))
    const isr = targetIsr.filter((r) => target.includes(r))
    if (isr.length > 0) {
      assignment = { replicas: target, addingReplicas: [], removingReplicas: [] }
      targetIsr = isr
    }
  }
  const { leader, unclean } = elect({ ...p, replicas: assignment.replicas }, targetIsr, req)
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
  const assignmentChanged =
    !sameList(assignment.replicas, current.replicas) ||
    !sameList(assignment.addingReplicas, current.addingReplicas) ||
    !sameList(assignment.removingReplicas, current.removingReplicas)
  if (
    recordLeader === NO_LEADER_CHANGE &&
    isr === null &&
    leaderRecoveryState === NO_RECOVERY_STATE_CHANGE &&
    !assignmentChanged
  )
    return null
  return { leader: recordLeader, isr, leaderRecoveryState, assignment: assignmentChanged ? assignment : null }
}
