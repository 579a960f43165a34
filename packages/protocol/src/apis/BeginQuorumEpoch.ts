/**
 * BeginQuorumEpoch (key 53): a newly elected KRaft leader announces its epoch to the voters. Layout
 * only.
 *
 * BeginQuorumEpochRequest => ClusterId VoterId(v1+) [Topics: TopicName [Partitions: PartitionIndex
 *   VoterDirectoryId(v1+) LeaderId LeaderEpoch]] [LeaderEndpoints: Name Host Port](v1+)
 * BeginQuorumEpochResponse => ErrorCode [Topics: TopicName [Partitions: PartitionIndex ErrorCode
 *   LeaderId LeaderEpoch]] tagged(v1+): 0 NodeEndpoints [NodeId Host Port]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "BeginQuorumEpochRequest",
  apiKey: 53,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.string("ClusterId", { nullableVersions: "0+", default: null }),
    S.int32("VoterId", { versions: "1+", default: -1, ignorable: true }),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.uuid("VoterDirectoryId", { versions: "1+", ignorable: true }),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch")
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
  name: "BeginQuorumEpochResponse",
  apiKey: 53,
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
  key: 53,
  name: "BeginQuorumEpoch",
  request: Request,
  response: Response,
  versions: "0-1"
})
