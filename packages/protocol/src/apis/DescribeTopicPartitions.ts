/**
 * DescribeTopicPartitions (key 75): paged partition details of topics, which Kafka 4.x admin clients
 * use for describeTopics. Layout only.
 *
 * DescribeTopicPartitionsRequest => [Topics: Name] ResponsePartitionLimit Cursor
 *   Cursor => TopicName PartitionIndex (nullable: null = from the start)
 * DescribeTopicPartitionsResponse => ThrottleTimeMs [Topics: ErrorCode Name TopicId IsInternal
 *   [Partitions: ErrorCode PartitionIndex LeaderId LeaderEpoch [ReplicaNodes] [IsrNodes]
 *   [EligibleLeaderReplicas] [LastKnownElr] [OfflineReplicas]] TopicAuthorizedOperations] NextCursor
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeTopicPartitionsRequest",
  apiKey: 75,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.array("Topics", [S.string("Name")]),
    S.int32("ResponsePartitionLimit", { default: 2000 }),
    S.struct("Cursor", [S.string("TopicName"), S.int32("PartitionIndex")], { nullableVersions: "0+" })
  ]
})

export const Response = S.message({
  name: "DescribeTopicPartitionsResponse",
  apiKey: 75,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs", { ignorable: true }),
    S.array("Topics", [
      S.int16("ErrorCode"),
      S.string("Name", { nullableVersions: "0+", default: "", mapKey: true }),
      S.uuid("TopicId", { ignorable: true }),
      S.bool("IsInternal", { ignorable: true }),
      S.array("Partitions", [
        S.int16("ErrorCode"),
        S.int32("PartitionIndex"),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch", { default: -1, ignorable: true }),
        S.array("ReplicaNodes", "int32"),
        S.array("IsrNodes", "int32"),
        S.array("EligibleLeaderReplicas", "int32", { nullableVersions: "0+", default: null }),
        S.array("LastKnownElr", "int32", { nullableVersions: "0+", default: null }),
        S.array("OfflineReplicas", "int32", { ignorable: true })
      ]),
      S.int32("TopicAuthorizedOperations", { default: -2147483648 })
    ]),
    S.struct("NextCursor", [S.string("TopicName"), S.int32("PartitionIndex")], { nullableVersions: "0+" })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 75,
  name: "DescribeTopicPartitions",
  request: Request,
  response: Response,
  versions: "0"
})
