/**
 * Envelope (key 58): a broker forwards a client's request to the controller wrapped with the
 * client's principal and address; the controller answers with the wrapped response. The embedded
 * request and response are whole header+body frames (without size prefix), kept as bytes.
 *
 * EnvelopeRequest => RequestData RequestPrincipal ClientHostAddress
 * EnvelopeResponse => ResponseData ErrorCode
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "EnvelopeRequest",
  apiKey: 58,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.bytes("RequestData"),
    S.bytes("RequestPrincipal", { nullableVersions: "0+", default: null }),
    S.bytes("ClientHostAddress")
  ]
})

export const Response = S.message({
  name: "EnvelopeResponse",
  apiKey: 58,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.bytes("ResponseData", { nullableVersions: "0+", default: null }), S.int16("ErrorCode")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 58, name: "Envelope", request: Request, response: Response, versions: "0" })
