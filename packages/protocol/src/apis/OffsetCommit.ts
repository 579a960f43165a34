/**
 * OffsetCommit (key 8): a consumer group member stores its consumed positions. It only describes the
 * wire format; validating membership and storing offsets belong to the group coordinator.
 *
 * OffsetCommitRequest => GroupId GenerationIdOrMemberEpoch(v1+) MemberId(v1+) GroupInstanceId(v7+)
 *   RetentionTimeMs(v2-4) [Topics: Name(v0-9) TopicId(v10+)
 *     [Partitions: PartitionIndex CommittedOffset CommittedLeaderEpoch(v6+) CommitTimestamp(v1) CommittedMetadata]]
 * OffsetCommitResponse => ThrottleTimeMs(v3+) [Topics: Name(v0-9) TopicId(v10+) [Partitions: PartitionIndex ErrorCode]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "OffsetCommitRequest",
  apiKey: 8,
  type: "request",
  validVersions: "0-10",
  flexibleVersions: "8+",
  fields: [
    S.string("GroupId"),
    S.int32("GenerationIdOrMemberEpoch", { versions: "1+", default: -1, ignorable: true }),
    S.string("MemberId", { versions: "1+", ignorable: true }),
    S.string("GroupInstanceId", { versions: "7+", nullableVersions: "7+", default: null }),
    S.int64("RetentionTimeMs", { versions: "2-4", default: -1n, ignorable: true }),
    S.array("Topics", [
      S.string("Name", { versions: "0-9", ignorable: true }),
      S.uuid("TopicId", { versions: "10+", ignorable: true }),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int64("CommittedOffset"),
        S.int32("CommittedLeaderEpoch", { versions: "6+", default: -1, ignorable: true }),
        S.int64("CommitTimestamp", { versions: "1", default: -1n }),
        S.string("CommittedMetadata", { nullableVersions: "0+" })
      ])
    ])
  ]
})

export const Response = S.message({
  name: "OffsetCommitResponse",
  apiKey: 8,
  type: "response",
  validVersions: "0-10",
  flexibleVersions: "8+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "3+", ignorable: true }),
    S.array("Topics", [
      S.string("Name", { versions: "0-9", ignorable: true }),
      S.uuid("TopicId", { versions: "10+", ignorable: true }),
      S.array("Partitions", [S.int32("PartitionIndex"), S.int16("ErrorCode")])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 8, name: "OffsetCommit", request: Request, response: Response, versions: "2-9" })
