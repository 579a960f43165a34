/**
 * ConsumerGroupDescribe (key 69): epochs, assignor and members (with their current and target
 * assignments) of consumer groups of the KIP-848 protocol. It only describes the wire format.
 *
 * ConsumerGroupDescribeRequest => [GroupIds] IncludeAuthorizedOperations
 * ConsumerGroupDescribeResponse => ThrottleTimeMs [Groups: ErrorCode ErrorMessage GroupId GroupState
 *   GroupEpoch AssignmentEpoch AssignorName [Members: MemberId InstanceId RackId MemberEpoch ClientId
 *   ClientHost [SubscribedTopicNames] SubscribedTopicRegex Assignment TargetAssignment MemberType(v1+)]
 *   AuthorizedOperations]
 * Assignment => [TopicPartitions: TopicId TopicName [Partitions]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

const Assignment = [
  S.array("TopicPartitions", [S.uuid("TopicId"), S.string("TopicName"), S.array("Partitions", "int32")])
] as const

export const Request = S.message({
  name: "ConsumerGroupDescribeRequest",
  apiKey: 69,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [S.array("GroupIds", "string"), S.bool("IncludeAuthorizedOperations")]
})

export const Response = S.message({
  name: "ConsumerGroupDescribeResponse",
  apiKey: 69,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Groups", [
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
      S.string("GroupId"),
      S.string("GroupState"),
      S.int32("GroupEpoch"),
      S.int32("AssignmentEpoch"),
      S.string("AssignorName"),
      S.array("Members", [
        S.string("MemberId"),
        S.string("InstanceId", { nullableVersions: "0+", default: null }),
        S.string("RackId", { nullableVersions: "0+", default: null }),
        S.int32("MemberEpoch"),
        S.string("ClientId"),
        S.string("ClientHost"),
        S.array("SubscribedTopicNames", "string"),
        S.string("SubscribedTopicRegex", { nullableVersions: "0+", default: null }),
        S.struct("Assignment", Assignment),
        S.struct("TargetAssignment", Assignment),
        /** -1 unknown, 0 classic, 1 consumer (KIP-1099). */
        S.int8("MemberType", { versions: "1+", default: -1 })
      ]),
      S.int32("AuthorizedOperations", { default: -2147483648 })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 69,
  name: "ConsumerGroupDescribe",
  request: Request,
  response: Response,
  versions: "0-1"
})
