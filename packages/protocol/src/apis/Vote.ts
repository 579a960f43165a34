/**
 * Vote (key 52): a candidate asks a voter of the KRaft quorum for its vote, or with `PreVote` (v2+,
 * KIP-996) whether it would get it, without the voter changing its state. Layout only.
 *
 * VoteRequest => ClusterId VoterId(v1+) [Topics: TopicName [Partitions: PartitionIndex ReplicaEpoch
 *   ReplicaId ReplicaDirectoryId(v1+) VoterDirectoryId(v1+) LastOffsetEpoch LastOffset PreVote(v2+)]]
 * VoteResponse => ErrorCode [Topics: TopicName [Partitions: PartitionIndex ErrorCode LeaderId
 *   LeaderEpoch VoteGranted]] tagged(v1+): 0 NodeEndpoints [NodeId Host Port]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "VoteRequest",
  apiKey: 52,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.string("ClusterId", { nullableVersions: "0+", default: null }),
    S.int32("VoterId", { versions: "1+", default: -1, ignorable: true }),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int32("ReplicaEpoch"),
        S.int32("ReplicaId"),
        S.uuid("ReplicaDirectoryId", { versions: "1+", ignorable: true }),
        S.uuid("VoterDirectoryId", { versions: "1+", ignorable: true }),
        S.int32("LastOffsetEpoch"),
        S.int64("LastOffset"),
        S.bool("PreVote", { versions: "2+" })
      ])
    ])
  ]
})

export const Response = S.message({
  name: "VoteResponse",
  apiKey: 52,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int16("ErrorCode"),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch"),
        S.bool("VoteGranted")
      ])
    ]),
    S.array(
      "NodeEndpoints",
      [
        S.int32("NodeId", { versions: "1+", mapKey: true }),
        S.string("Host", { versions: "1+" }),
        S.uint16("Port", { versions: "1+" })
      ],
      { versions: "1+", taggedVersions: "1+", tag: 0 }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 52, name: "Vote", request: Request, response: Response, versions: "0-2" })
