/**
 * ListOffsets (key 2): offsets by timestamp (earliest, latest, max timestamp, local or tiered bounds).
 * Only the message layout lives here; resolving timestamps belongs to the log.
 *
 * ListOffsetsRequest => ReplicaId IsolationLevel(v2+) [Topics: Name [Partitions: PartitionIndex
 *   CurrentLeaderEpoch(v4+) Timestamp MaxNumOffsets(v0)]] TimeoutMs(v10+)
 * ListOffsetsResponse => ThrottleTimeMs(v2+) [Topics: Name [Partitions: PartitionIndex ErrorCode
 *   [OldStyleOffsets](v0) Timestamp(v1+) Offset(v1+) LeaderEpoch(v4+)]]
 * v11 has the layout of v10 (it adds a special timestamp value).
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ListOffsetsRequest",
  apiKey: 2,
  type: "request",
  validVersions: "0-11",
  flexibleVersions: "6+",
  fields: [
    S.int32("ReplicaId"),
    S.int8("IsolationLevel", { versions: "2+" }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int32("CurrentLeaderEpoch", { versions: "4+", default: -1, ignorable: true }),
        S.int64("Timestamp"),
        S.int32("MaxNumOffsets", { versions: "0", default: 1 })
      ])
    ]),
    S.int32("TimeoutMs", { versions: "10+", ignorable: true })
  ]
})

export const Response = S.message({
  name: "ListOffsetsResponse",
  apiKey: 2,
  type: "response",
  validVersions: "0-11",
  flexibleVersions: "6+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "2+", ignorable: true }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.array("OldStyleOffsets", "int64", { versions: "0" }),
        S.int64("Timestamp", { versions: "1+", default: -1n }),
        S.int64("Offset", { versions: "1+", default: -1n }),
        S.int32("LeaderEpoch", { versions: "4+", default: -1 })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 2, name: "ListOffsets", request: Request, response: Response, versions: "1-10" })
