/**
 * DescribeGroups (key 15): state, protocol and members of classic groups. It only describes the wire
 * format.
 *
 * DescribeGroupsRequest => [Groups] IncludeAuthorizedOperations(v3+)
 * DescribeGroupsResponse => ThrottleTimeMs(v1+) [Groups: ErrorCode ErrorMessage(v6+) GroupId GroupState
 *   ProtocolType ProtocolData [Members: MemberId GroupInstanceId(v4+) ClientId ClientHost MemberMetadata
 *   MemberAssignment] AuthorizedOperations(v3+)]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeGroupsRequest",
  apiKey: 15,
  type: "request",
  validVersions: "0-6",
  flexibleVersions: "5+",
  fields: [S.array("Groups", "string"), S.bool("IncludeAuthorizedOperations", { versions: "3+" })]
})

export const Response = S.message({
  name: "DescribeGroupsResponse",
  apiKey: 15,
  type: "response",
  validVersions: "0-6",
  flexibleVersions: "5+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.array("Groups", [
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { versions: "6+", nullableVersions: "6+", default: null }),
      S.string("GroupId"),
      S.string("GroupState"),
      S.string("ProtocolType"),
      S.string("ProtocolData"),
      S.array("Members", [
        S.string("MemberId"),
        S.string("GroupInstanceId", { versions: "4+", nullableVersions: "4+", default: null, ignorable: true }),
        S.string("ClientId"),
        S.string("ClientHost"),
        S.bytes("MemberMetadata"),
        S.bytes("MemberAssignment")
      ]),
      S.int32("AuthorizedOperations", { versions: "3+", default: -2147483648 })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 15,
  name: "DescribeGroups",
  request: Request,
  response: Response,
  versions: "0-6"
})
