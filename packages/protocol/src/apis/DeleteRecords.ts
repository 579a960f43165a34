/**
 * DeleteRecords (key 21): move the log start offset of partitions forward (records below it are no longer
 * served). Sent to each partition's leader, which answers with the partition's low watermark once every
 * in-sync replica has moved its log start too. Layout only.
 *
 * DeleteRecordsRequest => [Topics: Name [Partitions: PartitionIndex Offset]] TimeoutMs
 * DeleteRecordsResponse => ThrottleTimeMs [Topics: Name [Partitions: PartitionIndex LowWatermark ErrorCode]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DeleteRecordsRequest",
  apiKey: 21,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.array("Topics", [
      S.string("Name"),
      /** Offset -1 means the high watermark. */
      S.array("Partitions", [S.int32("PartitionIndex"), S.int64("Offset")])
    ]),
    S.int32("TimeoutMs")
  ]
})

export const Response = S.message({
  name: "DeleteRecordsResponse",
  apiKey: 21,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Topics", [
      S.string("Name", { mapKey: true }),
      S.array("Partitions", [
        S.int32("PartitionIndex", { mapKey: true }),
        S.int64("LowWatermark"),
        S.int16("ErrorCode")
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 21, name: "DeleteRecords", request: Request, response: Response, versions: "0-2" })
