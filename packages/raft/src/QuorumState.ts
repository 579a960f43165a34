/**
 * The persisted quorum state of a voter (Kafka's `quorum-state` file): the epoch, the voter it voted
 * for in that epoch and the leader it knows for it. It is written durably before a vote is answered
 * and before a leadership is acknowledged, and read back at start.
 */

export interface QuorumStateData {
  readonly leaderEpoch: number
  /** -1 when this voter has not voted in `leaderEpoch`. */
  readonly votedId: number
  /** -1 when no leader is known for `leaderEpoch`. */
  readonly leaderId: number
}

export const initial: QuorumStateData = { leaderEpoch: 0, votedId: -1, leaderId: -1 }

export const equals = (a: QuorumStateData, b: QuorumStateData): boolean =>
  a.leaderEpoch === b.leaderEpoch && a.votedId === b.votedId && a.leaderId === b.leaderId
