/**
 * ListGroups (key 16): the groups a broker coordinates, optionally filtered by state (v4+) and type
 * (v5+). It only describes the wire format.
 *
 * ListGroupsRequest => [StatesFilter](v4+) [TypesFilter](v5+)
 * ListGroupsResponse => ThrottleTimeMs(v1+) ErrorCode [Groups: GroupId ProtocolType GroupState(v4+) GroupType(v5+)]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ListGroupsRequest",
  apiKey: 16,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [S.array("StatesFilter", "string", { versions: "4+" }), S.array("TypesFilter", "string", { versions: "5+" })]
})

export const Response = S.message({
  name: "ListGroupsResponse",
  apiKey: 16,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.int16("ErrorCode"),
    S.array("Groups", [
      S.string("GroupId"),
      S.string("ProtocolType"),
      S.string("GroupState", { versions: "4+", ignorable: true }),
      S.string("GroupType", { versions: "5+", ignorable: true })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 16, name: "ListGroups", request: Request, response: Response, versions: "0-5" })
