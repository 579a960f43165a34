/**
 * CreateAcls (key 30): add ACL bindings, one result per creation. It only describes the wire format;
 * storing bindings belongs to the controller.
 *
 * CreateAclsRequest => [Creations: ResourceType ResourceName ResourcePatternType(v1+) Principal Host
 *   Operation PermissionType]
 * CreateAclsResponse => ThrottleTimeMs [Results: ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "CreateAclsRequest",
  apiKey: 30,
  type: "request",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.array("Creations", [
      S.int8("ResourceType"),
      S.string("ResourceName"),
      S.int8("ResourcePatternType", { versions: "1+", default: 3 }),
      S.string("Principal"),
      S.string("Host"),
      S.int8("Operation"),
      S.int8("PermissionType")
    ])
  ]
})

export const Response = S.message({
  name: "CreateAclsResponse",
  apiKey: 30,
  type: "response",
  validVersions: "0-3",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Results", [S.int16("ErrorCode"), S.string("ErrorMessage", { nullableVersions: "0+" })])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 30, name: "CreateAcls", request: Request, response: Response, versions: "1-3" })
