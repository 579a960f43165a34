/**
 * CreatePartitions (key 37): grow the partition count of existing topics. Layout only.
 *
 * CreatePartitionsRequest => [Topics: Name Count [Assignments: [BrokerIds]]] TimeoutMs ValidateOnly
 *   Assignments is nullable (null = let the controller place the new partitions)
 * CreatePartitionsResponse => ThrottleTimeMs [Results: Name ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "CreatePartitionsRequest",
  apiKey: 37,
  type: "request",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.array("Topics", [
      S.string("Name", { mapKey: true }),
      S.int32("Count"),
      S.array("Assignments", [S.array("BrokerIds", "int32")], { nullableVersions: "0+" })
    ]),
    S.int32("TimeoutMs"),
    S.bool("ValidateOnly")
  ]
})

export const Response = S.message({
  name: "CreatePartitionsResponse",
  apiKey: 37,
  type: "response",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Results", [S.string("Name"), S.int16("ErrorCode"), S.string("ErrorMessage", { nullableVersions: "0+" })])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 37,
  name: "CreatePartitions",
  request: Request,
  response: Response,
  versions: "0-3"
})
