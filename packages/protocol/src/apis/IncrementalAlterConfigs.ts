/**
 * IncrementalAlterConfigs (key 44): set, delete, append to or subtract from individual configuration
 * entries. Layout only.
 *
 * IncrementalAlterConfigsRequest => [Resources: ResourceType ResourceName [Configs: Name ConfigOperation
 *   Value]] ValidateOnly
 * IncrementalAlterConfigsResponse => ThrottleTimeMs [Responses: ErrorCode ErrorMessage ResourceType
 *   ResourceName]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "IncrementalAlterConfigsRequest",
  apiKey: 44,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.array("Resources", [
      S.int8("ResourceType", { mapKey: true }),
      S.string("ResourceName", { mapKey: true }),
      S.array("Configs", [
        S.string("Name", { mapKey: true }),
        S.int8("ConfigOperation", { mapKey: true }),
        S.string("Value", { nullableVersions: "0+", default: "" })
      ])
    ]),
    S.bool("ValidateOnly")
  ]
})

export const Response = S.message({
  name: "IncrementalAlterConfigsResponse",
  apiKey: 44,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "1+",
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

export const api = Api.define({
  key: 44,
  name: "IncrementalAlterConfigs",
  request: Request,
  response: Response,
  versions: "0-1"
})
