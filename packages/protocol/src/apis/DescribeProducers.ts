/**
 * DescribeProducers (key 61): the active producers of partitions, from the leader's producer state
 * (`kafka-transactions.sh describe-producers`). It only describes the wire format.
 *
 * DescribeProducersRequest => [Topics: Name [PartitionIndexes]]
 * DescribeProducersResponse => ThrottleTimeMs [Topics: Name [Partitions: PartitionIndex ErrorCode ErrorMessage
 *   [ActiveProducers: ProducerId ProducerEpoch LastSequence LastTimestamp CoordinatorEpoch CurrentTxnStartOffset]]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeProducersRequest",
  apiKey: 61,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.array("Topics", [S.string("Name"), S.array("PartitionIndexes", "int32")])]
})

export const Response = S.message({
  name: "DescribeProducersResponse",
  apiKey: 61,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
        S.array("ActiveProducers", [
          S.int64("ProducerId"),
          S.int32("ProducerEpoch"),
          S.int32("LastSequence", { default: -1 }),
          S.int64("LastTimestamp", { default: -1n }),
          S.int32("CoordinatorEpoch"),
          S.int64("CurrentTxnStartOffset", { default: -1n })
        ])
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 61,
  name: "DescribeProducers",
  request: Request,
  response: Response,
  versions: "0"
})
