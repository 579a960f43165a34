/**
 * OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, used to find log divergence after
 * a leader change (followers) and by mirror fetchers against the source cluster. Layout only.
 *
 * OffsetForLeaderEpochRequest => ReplicaId(v3+) [Topics: Topic [Partitions: Partition
 *   CurrentLeaderEpoch(v2+) LeaderEpoch]]
 * OffsetForLeaderEpochResponse => ThrottleTimeMs(v2+) [Topics: Topic [Partitions: ErrorCode Partition
 *   LeaderEpoch(v1+) EndOffset]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "OffsetForLeaderEpochRequest",
  apiKey: 23,
  type: "request",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.int32("ReplicaId", { versions: "3+", default: -2, ignorable: true }),
    S.array("Topics", [
      S.string("Topic", { mapKey: true }),
      S.array("Partitions", [
        S.int32("Partition"),
        S.int32("CurrentLeaderEpoch", { versions: "2+", default: -1, ignorable: true }),
        S.int32("LeaderEpoch")
      ])
    ])
  ]
})

export const Response = S.message({
  name: "OffsetForLeaderEpochResponse",
  apiKey: 23,
  type: "response",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "2+", ignorable: true }),
    S.array("Topics", [
      S.string("Topic", { mapKey: true }),
      S.array("Partitions", [
        S.int16("ErrorCode"),
        S.int32("Partition"),
        S.int32("LeaderEpoch", { versions: "1+", default: -1, ignorable: true }),
        S.int64("EndOffset", { default: -1n })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 23,
  name: "OffsetForLeaderEpoch",
  request: Request,
  response: Response,
  versions: "2-4"
})
