/**
 * The leader side of the replication protocol's epoch checks, pure functions over a `PartitionLog`'s epoch
 * cache: what a leader answers to OffsetForLeaderEpoch, whether a fetch carrying `LastFetchedEpoch` diverges,
 * and the `MirrorLeaderEpoch` a mirror leader reports (KIP-1279 §6.4). The broker's leader and the fetcher's
 * in-memory leader both answer through these, so they answer alike.
 */
import type { EpochEndOffset, PartitionLog } from "./PartitionLog.js"

const UNDEFINED: EpochEndOffset = { epoch: -1, endOffset: -1 }

/**
 * OffsetForLeaderEpoch on a leader. A Kafka leader records its new epoch at its log end when it is elected,
 * before any batch carries it; a log only learns epochs from batches, so an epoch above the log's latest
 * is taken to start at the log end here.
 */
export const leaderEndOffsetForEpoch = (log: PartitionLog, leaderEpoch: number, requested: number): EpochEndOffset => {
  const latest = log.latestEpoch()
  if (requested < 0 || leaderEpoch <= latest) return log.endOffsetForEpoch(requested)
  if (requested > leaderEpoch) return UNDEFINED
  if (requested === leaderEpoch) return { epoch: leaderEpoch, endOffset: log.logEndOffset }
  if (requested < latest) return log.endOffsetForEpoch(requested)
  return { epoch: latest >= 0 ? latest : requested, endOffset: log.logEndOffset }
}

export type LastFetchedEpochCheck =
  | { readonly _tag: "Valid" }
  | { readonly _tag: "Diverging"; readonly epoch: number; readonly endOffset: number }
  | { readonly _tag: "OffsetOutOfRange" }

/**
 * Kafka's check of a fetch carrying `lastFetchedEpoch` (>= 0): the fetcher's log diverges when the leader's
 * end of that epoch is below the fetch offset, or the leader does not know the epoch; then the answer is
 * the leader's (epoch, end offset) and no records.
 */
export const checkLastFetchedEpoch = (
  log: PartitionLog,
  leaderEpoch: number,
  fetchOffset: number,
  lastFetchedEpoch: number
): LastFetchedEpochCheck => {
  if (lastFetchedEpoch < 0) return { _tag: "Valid" }
  const end = leaderEndOffsetForEpoch(log, leaderEpoch, lastFetchedEpoch)
  if (end.endOffset < 0 || end.epoch < 0) return { _tag: "OffsetOutOfRange" }
  // Below the log start the fetch is out of range whether or not the epochs diverge.
  if (fetchOffset < log.logStartOffset) return { _tag: "OffsetOutOfRange" }
  if (end.epoch < lastFetchedEpoch || end.endOffset < fetchOffset)
    return { _tag: "Diverging", epoch: end.epoch, endOffset: end.endOffset }
  return { _tag: "Valid" }
}

/**
 * KIP-1279 §6.4 on a mirror leader: a follower's fetch that carries a `MirrorLeaderEpoch` (>= 0) for a
 * partition of a topic with a mirror name is answered with the latest epoch in the leader's log (its epoch
 * cache); every other fetch with -1.
 */
export const mirrorLeaderEpochAnswer = (
  log: PartitionLog,
  replicaId: number,
  requested: number,
  isMirrorTopic: boolean
): number => (replicaId >= 0 && requested >= 0 && isMirrorTopic ? log.latestEpoch() : -1)
