/**
 * The persisted quorum state of a voter (Kafka's `quorum-state` file): the epoch, the voter it voted
 * for in that epoch and the leader it knows for it. It is written durably before a vote is answered
 * and before a leadership is acknowledged, and read back at start.
 */

export interface QuorumStateData {
  readonly LeaderEpoch: number
  /** -1 when this voter has not voted in `LeaderEpoch`. */
  readonly VotedId: number
  /** -1 when no leader is known for `LeaderEpoch`. */
  readonly LeaderId: number
}

export const initial: QuorumStateData = { LeaderEpoch: 0, VotedId: -1, LeaderId: -1 }

export const equals = (a: QuorumStateData, b: QuorumStateData): boolean =>
  a.LeaderEpoch === b.LeaderEpoch && a.VotedId === b.VotedId && a.LeaderId === b.LeaderId
