/**
 * RenewDelegationToken (key 39): extend a delegation token's expiry. It only describes the wire format; a
 * broker without delegation tokens refuses it.
 *
 * RenewDelegationTokenRequest => Hmac RenewPeriodMs
 * RenewDelegationTokenResponse => ErrorCode ExpiryTimestampMs ThrottleTimeMs
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "RenewDelegationTokenRequest",
  apiKey: 39,
  type: "request",
  validVersions: "1-2",
  flexibleVersions: "2+",
  fields: [S.bytes("Hmac"), S.int64("RenewPeriodMs")]
})

export const Response = S.message({
  name: "RenewDelegationTokenResponse",
  apiKey: 39,
  type: "response",
  validVersions: "1-2",
  flexibleVersions: "2+",
  fields: [S.int16("ErrorCode"), S.int64("ExpiryTimestampMs"), S.int32("ThrottleTimeMs")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 39,
  name: "RenewDelegationToken",
  request: Request,
  response: Response,
  versions: "1-2"
})
