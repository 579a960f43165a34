/**
 * ListPartitionReassignments (key 46): the ongoing reassignments of the given partitions (null =
 * all). Layout only.
 *
 * ListPartitionReassignmentsRequest => TimeoutMs [Topics: Name [PartitionIndexes]]
 * ListPartitionReassignmentsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name
 *   [Partitions: PartitionIndex [Replicas] [AddingReplicas] [RemovingReplicas]]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ListPartitionReassignmentsRequest",
  apiKey: 46,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("TimeoutMs", { default: 60000 }),
    S.array("Topics", [S.string("Name"), S.array("PartitionIndexes", "int32")], {
      nullableVersions: "0+",
      default: null
    })
  ]
})

export const Response = S.message({
  name: "ListPartitionReassignmentsResponse",
  apiKey: 46,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.array("Replicas", "int32"),
        S.array("AddingReplicas", "int32"),
        S.array("RemovingReplicas", "int32")
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 46,
  name: "ListPartitionReassignments",
  request: Request,
  response: Response,
  versions: "0"
})
