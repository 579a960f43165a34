/**
 * EndQuorumEpoch (key 54): a resigning KRaft leader tells the voters, naming its preferred
 * successors (v0 `PreferredSuccessors`, v1+ `PreferredCandidates` with directory ids). Layout only.
 *
 * EndQuorumEpochRequest => ClusterId [Topics: TopicName [Partitions: PartitionIndex LeaderId
 *   LeaderEpoch [PreferredSuccessors](v0) [PreferredCandidates: CandidateId CandidateDirectoryId](v1+)]]
 *   [LeaderEndpoints: Name Host Port](v1+)
 * EndQuorumEpochResponse => ErrorCode [Topics: TopicName [Partitions: PartitionIndex ErrorCode
 *   LeaderId LeaderEpoch]] tagged(v1+): 0 NodeEndpoints [NodeId Host Port]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "EndQuorumEpochRequest",
  apiKey: 54,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.string("ClusterId", { nullableVersions: "0+", default: null }),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch"),
        S.array("PreferredSuccessors", "int32", { versions: "0", ignorable: true }),
        S.array(
          "PreferredCandidates",
          [S.int32("CandidateId", { versions: "1+" }), S.uuid("CandidateDirectoryId", { versions: "1+" })],
          { versions: "1+", ignorable: true }
        )
      ])
    ]),
    S.array(
      "LeaderEndpoints",
      [
        S.string("Name", { versions: "1+", mapKey: true }),
        S.string("Host", { versions: "1+" }),
        S.uint16("Port", { versions: "1+" })
      ],
      { versions: "1+", ignorable: true }
    )
  ]
})

export const Response = S.message({
  name: "EndQuorumEpochResponse",
  apiKey: 54,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.int16("ErrorCode"),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch")
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

export const api = Api.define({
  key: 54,
  name: "EndQuorumEpoch",
  request: Request,
  response: Response,
  versions: "0-1"
})
