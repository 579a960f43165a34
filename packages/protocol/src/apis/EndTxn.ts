/**
 * EndTxn (key 26): a transactional producer commits or aborts its ongoing transaction. From v5
 * (transactions v2) the response carries the producer id and the epoch bumped for the next
 * transaction. It only describes the wire format; the transaction coordinator decides.
 *
 * EndTxnRequest => TransactionalId ProducerId ProducerEpoch Committed
 * EndTxnResponse => ThrottleTimeMs ErrorCode ProducerId(v5+) ProducerEpoch(v5+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "EndTxnRequest",
  apiKey: 26,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [S.string("TransactionalId"), S.int64("ProducerId"), S.int16("ProducerEpoch"), S.bool("Committed")]
})

export const Response = S.message({
  name: "EndTxnResponse",
  apiKey: 26,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.int64("ProducerId", { versions: "5+", default: -1n, ignorable: true }),
    S.int16("ProducerEpoch", { versions: "5+", default: -1, ignorable: true })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 26, name: "EndTxn", request: Request, response: Response, versions: "0-5" })
