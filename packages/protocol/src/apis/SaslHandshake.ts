/**
 * SaslHandshake (key 17): the client picks a SASL mechanism; the broker answers with the ones it
 * enables. From v1 the SASL tokens then travel in SaslAuthenticate frames. It only describes the wire
 * format; authentication belongs to the broker's connection handling.
 *
 * SaslHandshakeRequest => Mechanism
 * SaslHandshakeResponse => ErrorCode [Mechanisms]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "SaslHandshakeRequest",
  apiKey: 17,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "none",
  fields: [S.string("Mechanism")]
})

export const Response = S.message({
  name: "SaslHandshakeResponse",
  apiKey: 17,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "none",
  fields: [S.int16("ErrorCode"), S.array("Mechanisms", "string")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 17, name: "SaslHandshake", request: Request, response: Response, versions: "0-1" })
