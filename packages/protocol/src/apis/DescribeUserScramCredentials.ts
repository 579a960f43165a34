/**
 * DescribeUserScramCredentials (key 50): which SCRAM mechanisms (and iteration counts) users have. It only
 * describes the wire format; salts and keys never leave the cluster.
 *
 * DescribeUserScramCredentialsRequest => [Users: Name] (nullable: all users)
 * DescribeUserScramCredentialsResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Results: User ErrorCode ErrorMessage [CredentialInfos: Mechanism Iterations]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeUserScramCredentialsRequest",
  apiKey: 50,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.array("Users", [S.string("Name")], { nullableVersions: "0+" })]
})

export const Response = S.message({
  name: "DescribeUserScramCredentialsResponse",
  apiKey: 50,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+" }),
    S.array("Results", [
      S.string("User"),
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+" }),
      S.array("CredentialInfos", [S.int8("Mechanism"), S.int32("Iterations")])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 50,
  name: "DescribeUserScramCredentials",
  request: Request,
  response: Response,
  versions: "0"
})
