/**
 * ExpireDelegationToken (key 40): move a delegation token's expiry (now, with a negative period). It only
 * describes the wire format; a broker without delegation tokens refuses it.
 *
 * ExpireDelegationTokenRequest => Hmac ExpiryTimePeriodMs
 * ExpireDelegationTokenResponse => ErrorCode ExpiryTimestampMs ThrottleTimeMs
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ExpireDelegationTokenRequest",
  apiKey: 40,
  type: "request",
  validVersions: "1-2",
  flexibleVersions: "2+",
  fields: [S.bytes("Hmac"), S.int64("ExpiryTimePeriodMs")]
})

export const Response = S.message({
  name: "ExpireDelegationTokenResponse",
  apiKey: 40,
  type: "response",
  validVersions: "1-2",
  flexibleVersions: "2+",
  fields: [S.int16("ErrorCode"), S.int64("ExpiryTimestampMs"), S.int32("ThrottleTimeMs")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 40,
  name: "ExpireDelegationToken",
  request: Request,
  response: Response,
  versions: "1-2"
})
