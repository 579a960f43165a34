/**
 * UnregisterBroker (key 64): remove a broker's registration from the cluster metadata. Layout only.
 *
 * UnregisterBrokerRequest => BrokerId
 * UnregisterBrokerResponse => ThrottleTimeMs ErrorCode ErrorMessage
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "UnregisterBrokerRequest",
  apiKey: 64,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int32("BrokerId")]
})

export const Response = S.message({
  name: "UnregisterBrokerResponse",
  apiKey: 64,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 64,
  name: "UnregisterBroker",
  request: Request,
  response: Response,
  versions: "0"
})
