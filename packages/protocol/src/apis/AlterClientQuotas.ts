/**
 * AlterClientQuotas (key 49): set or remove client quotas of user / client-id / ip entities. It only
 * describes the wire format.
 *
 * AlterClientQuotasRequest => [Entries: [Entity: EntityType EntityName] [Ops: Key Value Remove]] ValidateOnly
 * AlterClientQuotasResponse => ThrottleTimeMs [Entries: ErrorCode ErrorMessage [Entity: EntityType EntityName]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

const Entity = [S.string("EntityType"), S.string("EntityName", { nullableVersions: "0+" })] as const

export const Request = S.message({
  name: "AlterClientQuotasRequest",
  apiKey: 49,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.array("Entries", [
      S.array("Entity", Entity),
      S.array("Ops", [S.string("Key"), S.float64("Value"), S.bool("Remove")])
    ]),
    S.bool("ValidateOnly")
  ]
})

export const Response = S.message({
  name: "AlterClientQuotasResponse",
  apiKey: 49,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Entries", [
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+" }),
      S.array("Entity", Entity)
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 49,
  name: "AlterClientQuotas",
  request: Request,
  response: Response,
  versions: "0-1"
})
