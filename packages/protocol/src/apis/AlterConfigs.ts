/**
 * AlterConfigs (key 33): replace the whole set of dynamic configuration entries of resources.
 * Layout only.
 *
 * AlterConfigsRequest => [Resources: ResourceType ResourceName [Configs: Name Value]] ValidateOnly
 * AlterConfigsResponse => ThrottleTimeMs [Responses: ErrorCode ErrorMessage ResourceType ResourceName]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AlterConfigsRequest",
  apiKey: 33,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.array("Resources", [
      S.int8("ResourceType", { mapKey: true }),
      S.string("ResourceName", { mapKey: true }),
      S.array("Configs", [
        S.string("Name", { mapKey: true }),
        S.string("Value", { nullableVersions: "0+", default: "" })
      ])
    ]),
    S.bool("ValidateOnly")
  ]
})

export const Response = S.message({
  name: "AlterConfigsResponse",
  apiKey: 33,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Responses", [
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+", default: "" }),
      S.int8("ResourceType"),
      S.string("ResourceName")
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 33, name: "AlterConfigs", request: Request, response: Response, versions: "0-2" })
