/**
 * OffsetFetch (key 9): a consumer reads the committed positions of a group. Up to v7 one request names
 * one group; from v8 it batches groups. It only describes the wire format; reading offsets belongs to
 * the group coordinator.
 *
 * OffsetFetchRequest => GroupId(v0-7) [Topics: Name PartitionIndexes](v0-7, null = all from v2)
 *   [Groups: GroupId MemberId(v9+) MemberEpoch(v9+) [Topics: Name(v8-9) TopicId(v10+) PartitionIndexes]](v8+)
 *   RequireStable(v7+)
 * OffsetFetchResponse => ThrottleTimeMs(v3+)
 *   [Topics: Name [Partitions: PartitionIndex CommittedOffset CommittedLeaderEpoch(v5+) Metadata ErrorCode]](v0-7)
 *   ErrorCode(v2-7)
 *   [Groups: GroupId [Topics: Name(v8-9) TopicId(v10+)
 *     [Partitions: PartitionIndex CommittedOffset CommittedLeaderEpoch Metadata ErrorCode]] ErrorCode](v8+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "OffsetFetchRequest",
  apiKey: 9,
  type: "request",
  validVersions: "0-10",
  flexibleVersions: "6+",
  fields: [
    S.string("GroupId", { versions: "0-7" }),
    S.array(
      "Topics",
      [S.string("Name", { versions: "0-7" }), S.array("PartitionIndexes", "int32", { versions: "0-7" })],
      {
        versions: "0-7",
        nullableVersions: "2-7"
      }
    ),
    S.array(
      "Groups",
      [
        S.string("GroupId", { versions: "8+" }),
        S.string("MemberId", { versions: "9+", nullableVersions: "9+", default: null, ignorable: true }),
        S.int32("MemberEpoch", { versions: "9+", default: -1, ignorable: true }),
        S.array(
          "Topics",
          [
            S.string("Name", { versions: "8-9" }),
            S.uuid("TopicId", { versions: "10+" }),
            S.array("PartitionIndexes", "int32", { versions: "8+" })
          ],
          { versions: "8+", nullableVersions: "8+" }
        )
      ],
      { versions: "8+" }
    ),
    S.bool("RequireStable", { versions: "7+", default: false })
  ]
})

/** The partition entry, the same in the single-group (v0-7) and batched (v8+) layouts. */
const partitionFields = (versions: string, leaderEpochVersions: string) =>
  [
    S.int32("PartitionIndex", { versions }),
    S.int64("CommittedOffset", { versions }),
    S.int32("CommittedLeaderEpoch", { versions: leaderEpochVersions, default: -1, ignorable: true }),
    S.string("Metadata", { versions, nullableVersions: versions }),
    S.int16("ErrorCode", { versions })
  ] as const

export const Response = S.message({
  name: "OffsetFetchResponse",
  apiKey: 9,
  type: "response",
  validVersions: "0-10",
  flexibleVersions: "6+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "3+", ignorable: true }),
    S.array(
      "Topics",
      [
        S.string("Name", { versions: "0-7" }),
        S.array("Partitions", partitionFields("0-7", "5-7"), { versions: "0-7" })
      ],
      { versions: "0-7" }
    ),
    S.int16("ErrorCode", { versions: "2-7", default: 0, ignorable: true }),
    S.array(
      "Groups",
      [
        S.string("GroupId", { versions: "8+" }),
        S.array(
          "Topics",
          [
            S.string("Name", { versions: "8-9" }),
            S.uuid("TopicId", { versions: "10+" }),
            S.array("Partitions", partitionFields("8+", "8+"), { versions: "8+" })
          ],
          { versions: "8+" }
        ),
        S.int16("ErrorCode", { versions: "8+", default: 0 })
      ],
      { versions: "8+" }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 9, name: "OffsetFetch", request: Request, response: Response, versions: "1-9" })
