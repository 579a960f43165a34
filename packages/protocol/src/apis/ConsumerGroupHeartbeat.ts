/**
 * ConsumerGroupHeartbeat (key 68): a member of a consumer group of the KIP-848 protocol joins, stays
 * and leaves by heartbeating; the coordinator answers with its member epoch and assignment. It only
 * describes the wire format; the group coordinator decides.
 *
 * ConsumerGroupHeartbeatRequest => GroupId MemberId MemberEpoch InstanceId RackId RebalanceTimeoutMs
 *   [SubscribedTopicNames] SubscribedTopicRegex(v1+) ServerAssignor [TopicPartitions: TopicId [Partitions]]
 * ConsumerGroupHeartbeatResponse => ThrottleTimeMs ErrorCode ErrorMessage MemberId MemberEpoch
 *   HeartbeatIntervalMs Assignment: [TopicPartitions: TopicId [Partitions]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

const TopicPartitions = [S.uuid("TopicId"), S.array("Partitions", "int32")] as const

export const Request = S.message({
  name: "ConsumerGroupHeartbeatRequest",
  apiKey: 68,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.string("GroupId"),
    S.string("MemberId"),
    S.int32("MemberEpoch"),
    S.string("InstanceId", { nullableVersions: "0+", default: null }),
    S.string("RackId", { nullableVersions: "0+", default: null }),
    S.int32("RebalanceTimeoutMs", { default: -1 }),
    S.array("SubscribedTopicNames", "string", { nullableVersions: "0+", default: null }),
    S.string("SubscribedTopicRegex", { versions: "1+", nullableVersions: "1+", default: null }),
    S.string("ServerAssignor", { nullableVersions: "0+", default: null }),
    S.array("TopicPartitions", TopicPartitions, { nullableVersions: "0+", default: null })
  ]
})

export const Response = S.message({
  name: "ConsumerGroupHeartbeatResponse",
  apiKey: 68,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.string("MemberId", { nullableVersions: "0+", default: null }),
    S.int32("MemberEpoch"),
    S.int32("HeartbeatIntervalMs"),
    S.struct("Assignment", [S.array("TopicPartitions", TopicPartitions)], { nullableVersions: "0+", default: null })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 68,
  name: "ConsumerGroupHeartbeat",
  request: Request,
  response: Response,
  versions: "0-1"
})
