/**
 * ListTransactions (key 66): the transactions a broker's transaction coordinators hold, optionally
 * filtered by state, producer id and (v1+) how long they have been running. It only describes the wire
 * format; the transaction coordinator answers.
 *
 * ListTransactionsRequest => [StateFilters] [ProducerIdFilters] DurationFilter(v1+)
 * ListTransactionsResponse => ThrottleTimeMs ErrorCode [UnknownStateFilters]
 *   [TransactionStates: TransactionalId ProducerId TransactionState]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ListTransactionsRequest",
  apiKey: 66,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.array("StateFilters", "string"),
    S.array("ProducerIdFilters", "int64"),
    S.int64("DurationFilter", { versions: "1+", default: -1n })
  ]
})

export const Response = S.message({
  name: "ListTransactionsResponse",
  apiKey: 66,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.array("UnknownStateFilters", "string"),
    S.array("TransactionStates", [S.string("TransactionalId"), S.int64("ProducerId"), S.string("TransactionState")])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 66,
  name: "ListTransactions",
  request: Request,
  response: Response,
  versions: "0-1"
})
