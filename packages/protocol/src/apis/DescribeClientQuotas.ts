/**
 * DescribeClientQuotas (key 48): the client quotas matching entity filters. It only describes the wire
 * format; brokers without client quotas answer with no entries.
 *
 * DescribeClientQuotasRequest => [Components: EntityType MatchType Match] Strict
 * DescribeClientQuotasResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Entries: [Entity: EntityType EntityName] [Values: Key Value]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeClientQuotasRequest",
  apiKey: 48,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.array("Components", [S.string("EntityType"), S.int8("MatchType"), S.string("Match", { nullableVersions: "0+" })]),
    S.bool("Strict")
  ]
})

export const Response = S.message({
  name: "DescribeClientQuotasResponse",
  apiKey: 48,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+" }),
    S.array(
      "Entries",
      [
        S.array("Entity", [S.string("EntityType"), S.string("EntityName", { nullableVersions: "0+" })]),
        S.array("Values", [S.string("Key"), S.float64("Value")])
      ],
      { nullableVersions: "0+" }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 48,
  name: "DescribeClientQuotas",
  request: Request,
  response: Response,
  versions: "0-1"
})
