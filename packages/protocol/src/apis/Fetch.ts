/**
 * Fetch (key 1): consumers, followers and mirror fetchers read record batches from partition leaders.
 * Records stay opaque bytes (a response may reference log slices as chunks); it must not parse them.
 *
 * FetchRequest => ReplicaId(v0-14) MaxWaitMs MinBytes MaxBytes(v3+) IsolationLevel(v4+) SessionId(v7+)
 *   SessionEpoch(v7+) [Topics: Topic(v0-12) TopicId(v13+) [Partitions: Partition CurrentLeaderEpoch(v9+)
 *   FetchOffset LastFetchedEpoch(v12+) LogStartOffset(v5+) PartitionMaxBytes
 *   tagged: 0 ReplicaDirectoryId(v17+), 1 HighWatermark(v18+), 2 MirrorLeaderEpoch(v19+)]]
 *   [ForgottenTopicsData: Topic(v7-12) TopicId(v13+) [Partitions]](v7+) RackId(v11+)
 *   tagged: 0 ClusterId(v12+), 1 ReplicaState(v15+)
 * FetchResponse => ThrottleTimeMs(v1+) ErrorCode(v7+) SessionId(v7+) [Responses: Topic(v0-12) TopicId(v13+)
 *   [Partitions: PartitionIndex ErrorCode HighWatermark LastStableOffset(v4+) LogStartOffset(v5+)
 *   [AbortedTransactions: ProducerId FirstOffset](v4+) PreferredReadReplica(v11+) Records
 *   tagged(v12+): 0 DivergingEpoch, 1 CurrentLeader, 2 SnapshotId, 3 MirrorLeaderEpoch(v19+)]]
 *   tagged(v16+): 0 NodeEndpoints
 * v19 (KIP-1279) carries the mirror leader epoch a destination follower has validated against.
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "FetchRequest",
  apiKey: 1,
  type: "request",
  validVersions: "0-19",
  flexibleVersions: "12+",
  fields: [
    S.string("ClusterId", { versions: "12+", nullableVersions: "12+", taggedVersions: "12+", tag: 0, ignorable: true }),
    S.int32("ReplicaId", { versions: "0-14", default: -1 }),
    S.struct(
      "ReplicaState",
      [
        S.int32("ReplicaId", { versions: "15+", default: -1 }),
        S.int64("ReplicaEpoch", { versions: "15+", default: -1n })
      ],
      { versions: "15+", taggedVersions: "15+", tag: 1 }
    ),
    S.int32("MaxWaitMs"),
    S.int32("MinBytes"),
    S.int32("MaxBytes", { versions: "3+", default: 2147483647, ignorable: true }),
    S.int8("IsolationLevel", { versions: "4+", ignorable: true }),
    S.int32("SessionId", { versions: "7+", ignorable: true }),
    S.int32("SessionEpoch", { versions: "7+", default: -1, ignorable: true }),
    S.array("Topics", [
      S.string("Topic", { versions: "0-12", ignorable: true }),
      S.uuid("TopicId", { versions: "13+", ignorable: true }),
      S.array("Partitions", [
        S.int32("Partition"),
        S.int32("CurrentLeaderEpoch", { versions: "9+", default: -1, ignorable: true }),
        S.int64("FetchOffset"),
        S.int32("LastFetchedEpoch", { versions: "12+", default: -1 }),
        S.int64("LogStartOffset", { versions: "5+", default: -1n, ignorable: true }),
        S.int32("PartitionMaxBytes"),
        S.uuid("ReplicaDirectoryId", { versions: "17+", taggedVersions: "17+", tag: 0, ignorable: true }),
        S.int64("HighWatermark", {
          versions: "18+",
          taggedVersions: "18+",
          tag: 1,
          default: 9223372036854775807n,
          ignorable: true
        }),
        S.int32("MirrorLeaderEpoch", { versions: "19+", taggedVersions: "19+", tag: 2, default: -1, ignorable: true })
      ])
    ]),
    S.array(
      "ForgottenTopicsData",
      [
        S.string("Topic", { versions: "7-12", ignorable: true }),
        S.uuid("TopicId", { versions: "13+", ignorable: true }),
        S.array("Partitions", "int32", { versions: "7+" })
      ],
      { versions: "7+" }
    ),
    S.string("RackId", { versions: "11+", ignorable: true })
  ]
})

export const Response = S.message({
  name: "FetchResponse",
  apiKey: 1,
  type: "response",
  validVersions: "0-19",
  flexibleVersions: "12+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.int16("ErrorCode", { versions: "7+", ignorable: true }),
    S.int32("SessionId", { versions: "7+" }),
    S.array("Responses", [
      S.string("Topic", { versions: "0-12", ignorable: true }),
      S.uuid("TopicId", { versions: "13+", ignorable: true }),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.int64("HighWatermark"),
        S.int64("LastStableOffset", { versions: "4+", default: -1n, ignorable: true }),
        S.int64("LogStartOffset", { versions: "5+", default: -1n, ignorable: true }),
        S.struct(
          "DivergingEpoch",
          [S.int32("Epoch", { versions: "12+", default: -1 }), S.int64("EndOffset", { versions: "12+", default: -1n })],
          { versions: "12+", taggedVersions: "12+", tag: 0 }
        ),
        S.struct(
          "CurrentLeader",
          [
            S.int32("LeaderId", { versions: "12+", default: -1 }),
            S.int32("LeaderEpoch", { versions: "12+", default: -1 })
          ],
          { versions: "12+", taggedVersions: "12+", tag: 1 }
        ),
        S.struct("SnapshotId", [S.int64("EndOffset", { default: -1n }), S.int32("Epoch", { default: -1 })], {
          versions: "12+",
          taggedVersions: "12+",
          tag: 2
        }),
        S.array(
          "AbortedTransactions",
          [S.int64("ProducerId", { versions: "4+" }), S.int64("FirstOffset", { versions: "4+" })],
          { versions: "4+", nullableVersions: "4+", ignorable: true }
        ),
        S.int32("PreferredReadReplica", { versions: "11+", default: -1 }),
        S.records("Records", { nullableVersions: "0+" }),
        S.int32("MirrorLeaderEpoch", { versions: "19+", taggedVersions: "19+", tag: 3, default: -1, ignorable: true })
      ])
    ]),
    S.array(
      "NodeEndpoints",
      [
        S.int32("NodeId", { versions: "16+", mapKey: true }),
        S.string("Host", { versions: "16+" }),
        S.int32("Port", { versions: "16+" }),
        S.string("Rack", { versions: "16+", nullableVersions: "16+" })
      ],
      { versions: "16+", taggedVersions: "16+", tag: 0 }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 1, name: "Fetch", request: Request, response: Response, versions: "4-19" })
