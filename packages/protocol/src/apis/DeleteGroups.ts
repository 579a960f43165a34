/**
 * DeleteGroups (key 42): delete consumer groups with their committed offsets. Sent to each group's
 * coordinator; a group with members answers NON_EMPTY_GROUP. v1 changes no field, v2 is flexible, v3 (what
 * Kafka 4.4's admin client sends) adds a nullable ErrorMessage per result. Layout only.
 *
 * DeleteGroupsRequest => [GroupsNames]
 * DeleteGroupsResponse => ThrottleTimeMs [Results: GroupId ErrorCode ErrorMessage(v3+)]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DeleteGroupsRequest",
  apiKey: 42,
  type: "request",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [S.array("GroupsNames", "string")]
})

export const Response = S.message({
  name: "DeleteGroupsResponse",
  apiKey: 42,
  type: "response",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Results", [
      S.string("GroupId", { mapKey: true }),
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { versions: "3+", nullableVersions: "3+", default: null, ignorable: true })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 42, name: "DeleteGroups", request: Request, response: Response, versions: "0-3" })
