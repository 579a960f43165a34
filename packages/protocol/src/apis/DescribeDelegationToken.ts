/**
 * DescribeDelegationToken (key 41): the delegation tokens of some owners (null: all). It only describes
 * the wire format; a broker without delegation tokens refuses it.
 *
 * DescribeDelegationTokenRequest => [Owners: PrincipalType PrincipalName] (nullable)
 * DescribeDelegationTokenResponse => ErrorCode [Tokens: PrincipalType PrincipalName
 *   TokenRequesterPrincipalType(v3+) TokenRequesterPrincipalName(v3+) IssueTimestamp ExpiryTimestamp
 *   MaxTimestamp TokenId Hmac [Renewers: PrincipalType PrincipalName]] ThrottleTimeMs
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeDelegationTokenRequest",
  apiKey: 41,
  type: "request",
  validVersions: "1-3",
  flexibleVersions: "2+",
  fields: [S.array("Owners", [S.string("PrincipalType"), S.string("PrincipalName")], { nullableVersions: "0+" })]
})

export const Response = S.message({
  name: "DescribeDelegationTokenResponse",
  apiKey: 41,
  type: "response",
  validVersions: "1-3",
  flexibleVersions: "2+",
  fields: [
    S.int16("ErrorCode"),
    S.array("Tokens", [
      S.string("PrincipalType"),
      S.string("PrincipalName"),
      S.string("TokenRequesterPrincipalType", { versions: "3+", default: "" }),
      S.string("TokenRequesterPrincipalName", { versions: "3+", default: "" }),
      S.int64("IssueTimestamp"),
      S.int64("ExpiryTimestamp"),
      S.int64("MaxTimestamp"),
      S.string("TokenId"),
      S.bytes("Hmac"),
      S.array("Renewers", [S.string("PrincipalType"), S.string("PrincipalName")])
    ]),
    S.int32("ThrottleTimeMs")
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 41,
  name: "DescribeDelegationToken",
  request: Request,
  response: Response,
  versions: "1-3"
})
