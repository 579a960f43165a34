/**
 * AlterUserScramCredentials (key 51): removes and sets users' SCRAM credentials. The client sends the
 * salted password (never the password); the controller derives the stored and server keys. It only
 * describes the wire format.
 *
 * AlterUserScramCredentialsRequest => [Deletions: Name Mechanism]
 *   [Upsertions: Name Mechanism Iterations Salt SaltedPassword]
 * AlterUserScramCredentialsResponse => ThrottleTimeMs [Results: User ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AlterUserScramCredentialsRequest",
  apiKey: 51,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.array("Deletions", [S.string("Name"), S.int8("Mechanism")]),
    S.array("Upsertions", [
      S.string("Name"),
      S.int8("Mechanism"),
      S.int32("Iterations"),
      S.bytes("Salt"),
      S.bytes("SaltedPassword")
    ])
  ]
})

export const Response = S.message({
  name: "AlterUserScramCredentialsResponse",
  apiKey: 51,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Results", [S.string("User"), S.int16("ErrorCode"), S.string("ErrorMessage", { nullableVersions: "0+" })])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 51,
  name: "AlterUserScramCredentials",
  request: Request,
  response: Response,
  versions: "0"
})
