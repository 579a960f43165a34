/**
 * The KRaft RPCs as the core sends and receives them, for the one partition `__cluster_metadata-0`.
 * Fields are those of Kafka's message specs (Vote 52 v2, BeginQuorumEpoch 53 v1, EndQuorumEpoch 54
 * v1, Fetch 1 v17, FetchSnapshot 59 v1), named as `@clustermirror/protocol` decodes them (camelCase:
 * `ReplicaEpoch` is `replicaEpoch`); the `topics`/`partitions` nesting of the wire form is flattened
 * to the one partition, and directory ids, endpoints and throttling are left to the network layer. A
 * runtime maps these onto the wire messages one field to one field. The core never reads record
 * contents: records carry an opaque value `V`.
 */

/** A snapshot id or an (epoch, end offset) pair, as Kafka's `OffsetAndEpoch`. */
export interface SnapshotId {
  readonly endOffset: number
  readonly epoch: number
}

/** The LeaderChange control record the leader writes first in its epoch. */
export interface LeaderChangeMessage {
  readonly leaderId: number
  readonly voters: ReadonlyArray<number>
  readonly grantingVoters: ReadonlyArray<number>
}

/** One record of the metadata log, with the offset and leader epoch of its batch. */
export type LogRecord<V> =
  | { readonly _tag: "Data"; readonly offset: number; readonly epoch: number; readonly value: V }
  | {
      readonly _tag: "LeaderChange"
      readonly offset: number
      readonly epoch: number
      readonly value: LeaderChangeMessage
    }

/** Vote (52), also the pre-vote of KIP-996 with `PreVote`. */
export interface VoteRequest {
  readonly _tag: "VoteRequest"
  readonly clusterId: string
  /** The id of the receiving voter. */
  readonly voterId: number
  /** The epoch the sender campaigns in: its bumped epoch, or for a pre-vote the epoch it would bump to. */
  readonly replicaEpoch: number
  readonly replicaId: number
  readonly lastOffsetEpoch: number
  readonly lastOffset: number
  readonly preVote: boolean
}

export interface VoteResponse {
  readonly _tag: "VoteResponse"
  readonly errorCode: number
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly voteGranted: boolean
}

/** BeginQuorumEpoch (53): a new leader announces itself. */
export interface BeginQuorumEpochRequest {
  readonly _tag: "BeginQuorumEpochRequest"
  readonly clusterId: string
  readonly voterId: number
  readonly leaderId: number
  readonly leaderEpoch: number
}

export interface BeginQuorumEpochResponse {
  readonly _tag: "BeginQuorumEpochResponse"
  readonly errorCode: number
  readonly leaderId: number
  readonly leaderEpoch: number
}

/** EndQuorumEpoch (54): a leader resigns and names its preferred successors, best first. */
export interface EndQuorumEpochRequest {
  readonly _tag: "EndQuorumEpochRequest"
  readonly clusterId: string
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly preferredCandidates: ReadonlyArray<{ readonly candidateId: number }>
}

export interface EndQuorumEpochResponse {
  readonly _tag: "EndQuorumEpochResponse"
  readonly errorCode: number
  readonly leaderId: number
  readonly leaderEpoch: number
}

/** Fetch (1) from a follower of the quorum (`ReplicaState.replicaId`, `ReplicaState.replicaEpoch`). */
export interface FetchRequest {
  readonly _tag: "FetchRequest"
  readonly clusterId: string
  readonly replicaId: number
  readonly replicaEpoch: number
  readonly maxWaitMs: number
  readonly currentLeaderEpoch: number
  readonly fetchOffset: number
  readonly lastFetchedEpoch: number
  readonly logStartOffset: number
}

export interface FetchResponse<V> {
  readonly _tag: "FetchResponse"
  readonly errorCode: number
  readonly highWatermark: number
  readonly logStartOffset: number
  /** Set when the follower's log diverges: it truncates to this epoch's end offset. */
  readonly divergingEpoch: SnapshotId | null
  readonly currentLeader: { readonly leaderId: number; readonly leaderEpoch: number }
  /** Set when the fetch offset is below the leader's log start: fetch this snapshot first. */
  readonly snapshotId: SnapshotId | null
  readonly records: ReadonlyArray<LogRecord<V>>
}

/** FetchSnapshot (59). */
export interface FetchSnapshotRequest {
  readonly _tag: "FetchSnapshotRequest"
  readonly clusterId: string
  readonly replicaId: number
  readonly currentLeaderEpoch: number
  readonly snapshotId: SnapshotId
  readonly position: number
}

export interface FetchSnapshotResponse<V> {
  readonly _tag: "FetchSnapshotResponse"
  readonly errorCode: number
  readonly snapshotId: SnapshotId
  readonly currentLeader: { readonly leaderId: number; readonly leaderEpoch: number }
  /** The snapshot's size and the position of `UnalignedRecords` in it, in records. */
  readonly size: number
  readonly position: number
  /** The snapshot's contents: the committed records below `SnapshotId.endOffset`. */
  readonly unalignedRecords: ReadonlyArray<LogRecord<V>>
}

export type RaftRequest =
  | VoteRequest
  | BeginQuorumEpochRequest
  | EndQuorumEpochRequest
  | FetchRequest
  | FetchSnapshotRequest

export type RaftResponse<V> =
  | VoteResponse
  | BeginQuorumEpochResponse
  | EndQuorumEpochResponse
  | FetchResponse<V>
  | FetchSnapshotResponse<V>

/** The response a request gets. */
export type ResponseOf<Q extends RaftRequest, V> = Q extends VoteRequest
  ? VoteResponse
  : Q extends BeginQuorumEpochRequest
    ? BeginQuorumEpochResponse
    : Q extends EndQuorumEpochRequest
      ? EndQuorumEpochResponse
      : Q extends FetchRequest
        ? FetchResponse<V>
        : FetchSnapshotResponse<V>
