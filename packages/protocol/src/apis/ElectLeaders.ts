/**
 * ElectLeaders (key 43): elect the preferred (0) or, with no in-sync replica left, the first live
 * (1, unclean) replica as leader of the given partitions (null = every partition). Layout only.
 *
 * ElectLeadersRequest => ElectionType(v1+) [TopicPartitions: Topic [Partitions]] TimeoutMs
 * ElectLeadersResponse => ThrottleTimeMs ErrorCode(v1+) [ReplicaElectionResults: Topic
 *   [PartitionResult: PartitionId ErrorCode ErrorMessage]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ElectLeadersRequest",
  apiKey: 43,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.int8("ElectionType", { versions: "1+" }),
    S.array("TopicPartitions", [S.string("Topic", { mapKey: true }), S.array("Partitions", "int32")], {
      nullableVersions: "0+"
    }),
    S.int32("TimeoutMs", { default: 60000 })
  ]
})

export const Response = S.message({
  name: "ElectLeadersResponse",
  apiKey: 43,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode", { versions: "1+" }),
    S.array("ReplicaElectionResults", [
      S.string("Topic"),
      S.array("PartitionResult", [
        S.int32("PartitionId"),
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 43, name: "ElectLeaders", request: Request, response: Response, versions: "0-2" })
