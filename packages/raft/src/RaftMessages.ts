/**
 * The KRaft RPCs as the core sends and receives them, for the one partition `__cluster_metadata-0`.
 * Field names are those of Kafka's message specs (Vote 52 v2, BeginQuorumEpoch 53 v1,
 * EndQuorumEpoch 54 v1, Fetch 1 v17, FetchSnapshot 59 v1); the `Topics`/`Partitions` nesting of
 * the wire form is flattened to the one partition, and directory ids, endpoints and throttling are
 * left to the network layer. A runtime maps these onto the wire messages one field to one field.
 * The core never reads record contents: records carry an opaque value `V`.
 */

/** A snapshot id or an (epoch, end offset) pair, as Kafka's `OffsetAndEpoch`. */
export interface SnapshotId {
  readonly EndOffset: number
  readonly Epoch: number
}

/** The LeaderChange control record the leader writes first in its epoch. */
export interface LeaderChangeMessage {
  readonly LeaderId: number
  readonly Voters: ReadonlyArray<number>
  readonly GrantingVoters: ReadonlyArray<number>
}

/** One record of the metadata log, with the offset and leader epoch of its batch. */
export type LogRecord<V> =
  | { readonly _tag: "Data"; readonly Offset: number; readonly Epoch: number; readonly Value: V }
  | {
      readonly _tag: "LeaderChange"
      readonly Offset: number
      readonly Epoch: number
      readonly Value: LeaderChangeMessage
    }

/** Vote (52), also the pre-vote of KIP-996 with `PreVote`. */
export interface VoteRequest {
  readonly _tag: "VoteRequest"
  readonly ClusterId: string
  /** The id of the receiving voter. */
  readonly VoterId: number
  /** The epoch the sender campaigns in: its bumped epoch, or for a pre-vote the epoch it would bump to. */
  readonly ReplicaEpoch: number
  readonly ReplicaId: number
  readonly LastOffsetEpoch: number
  readonly LastOffset: number
  readonly PreVote: boolean
}

export interface VoteResponse {
  readonly _tag: "VoteResponse"
  readonly ErrorCode: number
  readonly LeaderId: number
  readonly LeaderEpoch: number
  readonly VoteGranted: boolean
}

/** BeginQuorumEpoch (53): a new leader announces itself. */
export interface BeginQuorumEpochRequest {
  readonly _tag: "BeginQuorumEpochRequest"
  readonly ClusterId: string
  readonly VoterId: number
  readonly LeaderId: number
  readonly LeaderEpoch: number
}

export interface BeginQuorumEpochResponse {
  readonly _tag: "BeginQuorumEpochResponse"
  readonly ErrorCode: number
  readonly LeaderId: number
  readonly LeaderEpoch: number
}

/** EndQuorumEpoch (54): a leader resigns and names its preferred successors, best first. */
export interface EndQuorumEpochRequest {
  readonly _tag: "EndQuorumEpochRequest"
  readonly ClusterId: string
  readonly LeaderId: number
  readonly LeaderEpoch: number
  readonly PreferredCandidates: ReadonlyArray<{ readonly CandidateId: number }>
}

export interface EndQuorumEpochResponse {
  readonly _tag: "EndQuorumEpochResponse"
  readonly ErrorCode: number
  readonly LeaderId: number
  readonly LeaderEpoch: number
}

/** Fetch (1) from a follower of the quorum (`ReplicaState.ReplicaId`, `ReplicaState.ReplicaEpoch`). */
export interface FetchRequest {
  readonly _tag: "FetchRequest"
  readonly ClusterId: string
  readonly ReplicaId: number
  readonly ReplicaEpoch: number
  readonly MaxWaitMs: number
  readonly CurrentLeaderEpoch: number
  readonly FetchOffset: number
  readonly LastFetchedEpoch: number
  readonly LogStartOffset: number
}

export interface FetchResponse<V> {
  readonly _tag: "FetchResponse"
  readonly ErrorCode: number
  readonly HighWatermark: number
  readonly LogStartOffset: number
  /** Set when the follower's log diverges: it truncates to this epoch's end offset. */
  readonly DivergingEpoch: SnapshotId | null
  readonly CurrentLeader: { readonly LeaderId: number; readonly LeaderEpoch: number }
  /** Set when the fetch offset is below the leader's log start: fetch this snapshot first. */
  readonly SnapshotId: SnapshotId | null
  readonly Records: ReadonlyArray<LogRecord<V>>
}

/** FetchSnapshot (59). */
export interface FetchSnapshotRequest {
  readonly _tag: "FetchSnapshotRequest"
  readonly ClusterId: string
  readonly ReplicaId: number
  readonly CurrentLeaderEpoch: number
  readonly SnapshotId: SnapshotId
  readonly Position: number
}

export interface FetchSnapshotResponse<V> {
  readonly _tag: "FetchSnapshotResponse"
  readonly ErrorCode: number
  readonly SnapshotId: SnapshotId
  readonly CurrentLeader: { readonly LeaderId: number; readonly LeaderEpoch: number }
  /** The snapshot's size and the position of `Bytes` in it, in records. */
  readonly Size: number
  readonly Position: number
  /** The snapshot's contents: the committed records below `SnapshotId.EndOffset`. */
  readonly Bytes: ReadonlyArray<LogRecord<V>>
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
