/**
 * DescribeAcls (key 29): the ACL bindings matching a filter, grouped by resource. It only describes
 * the wire format; matching belongs to the authorizer.
 *
 * DescribeAclsRequest => ResourceTypeFilter ResourceNameFilter PatternTypeFilter(v1+) PrincipalFilter
 *   HostFilter Operation PermissionType
 * DescribeAclsResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Resources: ResourceType ResourceName PatternType(v1+) [Acls: Principal Host Operation PermissionType]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeAclsRequest",
  apiKey: 29,
  type: "request",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.int8("ResourceTypeFilter"),
    S.string("ResourceNameFilter", { nullableVersions: "0+" }),
    // 3 is LITERAL, the only pattern v0 knows.
    S.int8("PatternTypeFilter", { versions: "1+", default: 3 }),
    S.string("PrincipalFilter", { nullableVersions: "0+" }),
    S.string("HostFilter", { nullableVersions: "0+" }),
    S.int8("Operation"),
    S.int8("PermissionType")
  ]
})

export const Response = S.message({
  name: "DescribeAclsResponse",
  apiKey: 29,
  type: "response",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+" }),
    S.array("Resources", [
      S.int8("ResourceType"),
      S.string("ResourceName"),
      S.int8("PatternType", { versions: "1+", default: 3 }),
      S.array("Acls", [S.string("Principal"), S.string("Host"), S.int8("Operation"), S.int8("PermissionType")])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 29, name: "DescribeAcls", request: Request, response: Response, versions: "1-3" })
