/**
 * SaslAuthenticate (key 36): one round of the chosen SASL mechanism's token exchange. It only describes
 * the wire format; the mechanisms themselves live with the broker's connection handling.
 *
 * SaslAuthenticateRequest => AuthBytes
 * SaslAuthenticateResponse => ErrorCode ErrorMessage AuthBytes SessionLifetimeMs(v1+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "SaslAuthenticateRequest",
  apiKey: 36,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [S.bytes("AuthBytes")]
})

export const Response = S.message({
  name: "SaslAuthenticateResponse",
  apiKey: 36,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+" }),
    S.bytes("AuthBytes"),
    S.int64("SessionLifetimeMs", { versions: "1+", default: 0n, ignorable: true })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 36,
  name: "SaslAuthenticate",
  request: Request,
  response: Response,
  versions: "0-2"
})
