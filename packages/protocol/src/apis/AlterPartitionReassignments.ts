/**
 * AlterPartitionReassignments (key 45): start or cancel (Replicas = null) moving partitions to new
 * replica sets. Layout only; we parse it so that Kafka's tools get a proper answer.
 *
 * AlterPartitionReassignmentsRequest => TimeoutMs AllowReplicationFactorChange(v1+) [Topics: Name
 *   [Partitions: PartitionIndex [Replicas]]]
 * AlterPartitionReassignmentsResponse => ThrottleTimeMs AllowReplicationFactorChange(v1+) ErrorCode
 *   ErrorMessage [Responses: Name [Partitions: PartitionIndex ErrorCode ErrorMessage]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AlterPartitionReassignmentsRequest",
  apiKey: 45,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("TimeoutMs", { default: 60000 }),
    S.bool("AllowReplicationFactorChange", { versions: "1+", default: true }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.array("Replicas", "int32", { nullableVersions: "0+", default: null })
      ])
    ])
  ]
})

export const Response = S.message({
  name: "AlterPartitionReassignmentsResponse",
  apiKey: 45,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.bool("AllowReplicationFactorChange", { versions: "1+", default: true, ignorable: true }),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Responses", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 45,
  name: "AlterPartitionReassignments",
  request: Request,
  response: Response,
  versions: "0-1"
})
