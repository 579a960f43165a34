/**
 * CreateDelegationToken (key 38): a delegation token for the request's principal (or the named owner).
 * It only describes the wire format; a broker without delegation tokens refuses it.
 *
 * CreateDelegationTokenRequest => OwnerPrincipalType(v3+) OwnerPrincipalName(v3+)
 *   [Renewers: PrincipalType PrincipalName] MaxLifetimeMs
 * CreateDelegationTokenResponse => ErrorCode PrincipalType PrincipalName TokenRequesterPrincipalType(v3+)
 *   TokenRequesterPrincipalName(v3+) IssueTimestampMs ExpiryTimestampMs MaxTimestampMs TokenId Hmac ThrottleTimeMs
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "CreateDelegationTokenRequest",
  apiKey: 38,
  type: "request",
  validVersions: "1-3",
  flexibleVersions: "2+",
  fields: [
    S.string("OwnerPrincipalType", { versions: "3+", nullableVersions: "3+", default: null }),
    S.string("OwnerPrincipalName", { versions: "3+", nullableVersions: "3+", default: null }),
    S.array("Renewers", [S.string("PrincipalType"), S.string("PrincipalName")]),
    S.int64("MaxLifetimeMs")
  ]
})

export const Response = S.message({
  name: "CreateDelegationTokenResponse",
  apiKey: 38,
  type: "response",
  validVersions: "1-3",
  flexibleVersions: "2+",
  fields: [
    S.int16("ErrorCode"),
    S.string("PrincipalType"),
    S.string("PrincipalName"),
    S.string("TokenRequesterPrincipalType", { versions: "3+", default: "" }),
    S.string("TokenRequesterPrincipalName", { versions: "3+", default: "" }),
    S.int64("IssueTimestampMs"),
    S.int64("ExpiryTimestampMs"),
    S.int64("MaxTimestampMs"),
    S.string("TokenId"),
    S.bytes("Hmac"),
    S.int32("ThrottleTimeMs")
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 38,
  name: "CreateDelegationToken",
  request: Request,
  response: Response,
  versions: "1-3"
})
