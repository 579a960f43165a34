/**
 * DescribeTransactions (key 65): the state of named transactional ids at their coordinator. It only
 * describes the wire format; the transaction coordinator answers.
 *
 * DescribeTransactionsRequest => [TransactionalIds]
 * DescribeTransactionsResponse => ThrottleTimeMs [TransactionStates: ErrorCode TransactionalId
 *   TransactionState TransactionTimeoutMs TransactionStartTimeMs ProducerId ProducerEpoch
 *   [Topics: Topic [Partitions]]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeTransactionsRequest",
  apiKey: 65,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.array("TransactionalIds", "string")]
})

export const Response = S.message({
  name: "DescribeTransactionsResponse",
  apiKey: 65,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("TransactionStates", [
      S.int16("ErrorCode"),
      S.string("TransactionalId"),
      S.string("TransactionState"),
      S.int32("TransactionTimeoutMs"),
      S.int64("TransactionStartTimeMs"),
      S.int64("ProducerId"),
      S.int16("ProducerEpoch"),
      S.array("Topics", [S.string("Topic", { mapKey: true }), S.array("Partitions", "int32")])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 65,
  name: "DescribeTransactions",
  request: Request,
  response: Response,
  versions: "0"
})
