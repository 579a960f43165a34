/**
 * ListConfigResources (key 74; v0 was ListClientMetricsResources): the names of the config resources of
 * the requested types (v0: client metrics only; v1 with no types: every type the broker lists). It only
 * describes the wire format.
 *
 * ListConfigResourcesRequest => [ResourceTypes](v1+)
 * ListConfigResourcesResponse => ThrottleTimeMs ErrorCode [ConfigResources: ResourceName ResourceType(v1+)]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ListConfigResourcesRequest",
  apiKey: 74,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [S.array("ResourceTypes", "int8", { versions: "1+" })]
})

export const Response = S.message({
  name: "ListConfigResourcesResponse",
  apiKey: 74,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.array("ConfigResources", [
      S.string("ResourceName"),
      S.int8("ResourceType", { versions: "1+", default: 16, ignorable: true })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 74,
  name: "ListConfigResources",
  request: Request,
  response: Response,
  versions: "0-1"
})
