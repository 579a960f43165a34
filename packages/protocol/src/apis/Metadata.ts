/**
 * Metadata (key 3): brokers, cluster id, controller and the partitions of the requested topics.
 * Only the message layout lives here; answering from a metadata image belongs to the broker.
 *
 * MetadataRequest => [Topics: TopicId(v10+) Name] AllowAutoTopicCreation(v4+)
 *   IncludeClusterAuthorizedOperations(v8-10) IncludeTopicAuthorizedOperations(v8+)
 *   Topics is nullable from v1 (null = all topics); Name is nullable from v10 (lookup by id)
 * MetadataResponse => ThrottleTimeMs(v3+) [Brokers: NodeId Host Port Rack(v1+)] ClusterId(v2+)
 *   ControllerId(v1+) [Topics: ErrorCode Name TopicId(v10+) IsInternal(v1+) [Partitions: ErrorCode
 *   PartitionIndex LeaderId LeaderEpoch(v7+) [ReplicaNodes] [IsrNodes] [OfflineReplicas](v5+)]
 *   TopicAuthorizedOperations(v8+)] ClusterAuthorizedOperations(v8-10) ErrorCode(v13+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "MetadataRequest",
  apiKey: 3,
  type: "request",
  validVersions: "0-13",
  flexibleVersions: "9+",
  fields: [
    S.array(
      "Topics",
      [
        S.uuid("TopicId", { versions: "10+", ignorable: true }),
        S.string("Name", { nullableVersions: "10+", default: "" })
      ],
      { nullableVersions: "1+" }
    ),
    S.bool("AllowAutoTopicCreation", { versions: "4+", default: true }),
    S.bool("IncludeClusterAuthorizedOperations", { versions: "8-10" }),
    S.bool("IncludeTopicAuthorizedOperations", { versions: "8+" })
  ]
})

export const Response = S.message({
  name: "MetadataResponse",
  apiKey: 3,
  type: "response",
  validVersions: "0-13",
  flexibleVersions: "9+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "3+", ignorable: true }),
    S.array("Brokers", [
      S.int32("NodeId", { mapKey: true }),
      S.string("Host"),
      S.int32("Port"),
      S.string("Rack", { versions: "1+", nullableVersions: "1+", ignorable: true })
    ]),
    S.string("ClusterId", { versions: "2+", nullableVersions: "2+", ignorable: true }),
    S.int32("ControllerId", { versions: "1+", default: -1, ignorable: true }),
    S.array("Topics", [
      S.int16("ErrorCode"),
      S.string("Name", { nullableVersions: "12+", default: "", mapKey: true }),
      S.uuid("TopicId", { versions: "10+", ignorable: true }),
      S.bool("IsInternal", { versions: "1+", ignorable: true }),
      S.array("Partitions", [
        S.int16("ErrorCode"),
        S.int32("PartitionIndex"),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch", { versions: "7+", default: -1, ignorable: true }),
        S.array("ReplicaNodes", "int32"),
        S.array("IsrNodes", "int32"),
        S.array("OfflineReplicas", "int32", { versions: "5+", ignorable: true })
      ]),
      S.int32("TopicAuthorizedOperations", { versions: "8+", default: -2147483648 })
    ]),
    S.int32("ClusterAuthorizedOperations", { versions: "8-10", default: -2147483648 }),
    S.int16("ErrorCode", { versions: "13+", ignorable: true })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 3, name: "Metadata", request: Request, response: Response, versions: "0-12" })
