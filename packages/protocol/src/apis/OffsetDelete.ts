/**
 * OffsetDelete (key 47): delete a group's committed offsets of topic-partitions it is not subscribed to.
 * Sent to the group's coordinator; a whole-request error (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) goes
 * in the top-level ErrorCode, GROUP_SUBSCRIBED_TO_TOPIC per partition. Layout only.
 *
 * OffsetDeleteRequest => GroupId [Topics: Name [Partitions: PartitionIndex]]
 * OffsetDeleteResponse => ErrorCode ThrottleTimeMs [Topics: Name [Partitions: PartitionIndex ErrorCode]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "OffsetDeleteRequest",
  apiKey: 47,
  type: "request",
  validVersions: "0",
  flexibleVersions: "none",
  fields: [
    S.string("GroupId"),
    S.array("Topics", [S.string("Name", { mapKey: true }), S.array("Partitions", [S.int32("PartitionIndex")])])
  ]
})

export const Response = S.message({
  name: "OffsetDeleteResponse",
  apiKey: 47,
  type: "response",
  validVersions: "0",
  flexibleVersions: "none",
  fields: [
    S.int16("ErrorCode"),
    S.int32("ThrottleTimeMs", { ignorable: true }),
    S.array("Topics", [
      S.string("Name", { mapKey: true }),
      S.array("Partitions", [S.int32("PartitionIndex", { mapKey: true }), S.int16("ErrorCode")])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 47, name: "OffsetDelete", request: Request, response: Response, versions: "0" })
