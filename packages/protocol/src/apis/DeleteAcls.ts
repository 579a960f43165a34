/**
 * DeleteAcls (key 31): remove the ACL bindings matching each filter, reporting what matched. It only
 * describes the wire format; matching and removal belong to the controller.
 *
 * DeleteAclsRequest => [Filters: ResourceTypeFilter ResourceNameFilter PatternTypeFilter(v1+)
 *   PrincipalFilter HostFilter Operation PermissionType]
 * DeleteAclsResponse => ThrottleTimeMs [FilterResults: ErrorCode ErrorMessage [MatchingAcls: ErrorCode
 *   ErrorMessage ResourceType ResourceName PatternType(v1+) Principal Host Operation PermissionType]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DeleteAclsRequest",
  apiKey: 31,
  type: "request",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.array("Filters", [
      S.int8("ResourceTypeFilter"),
      S.string("ResourceNameFilter", { nullableVersions: "0+" }),
      S.int8("PatternTypeFilter", { versions: "1+", default: 3 }),
      S.string("PrincipalFilter", { nullableVersions: "0+" }),
      S.string("HostFilter", { nullableVersions: "0+" }),
      S.int8("Operation"),
      S.int8("PermissionType")
    ])
  ]
})

export const Response = S.message({
  name: "DeleteAclsResponse",
  apiKey: 31,
  type: "response",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("FilterResults", [
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+" }),
      S.array("MatchingAcls", [
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+" }),
        S.int8("ResourceType"),
        S.string("ResourceName"),
        S.int8("PatternType", { versions: "1+", default: 3 }),
        S.string("Principal"),
        S.string("Host"),
        S.int8("Operation"),
        S.int8("PermissionType")
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 31, name: "DeleteAcls", request: Request, response: Response, versions: "1-3" })
