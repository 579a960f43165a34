/**
 * AddPartitionsToTxn (key 24): a transactional producer registers the partitions it is about to write.
 * Versions 0-3 carry one transaction (clients); from v4 a request batches transactions and may only
 * verify membership (brokers). It only describes the wire format; the transaction coordinator decides.
 *
 * AddPartitionsToTxnRequest => [Transactions: TransactionalId ProducerId ProducerEpoch VerifyOnly
 *   [Topics: Name [Partitions]]](v4+) V3AndBelowTransactionalId(v0-3) V3AndBelowProducerId(v0-3)
 *   V3AndBelowProducerEpoch(v0-3) [V3AndBelowTopics: Name [Partitions]](v0-3)
 * AddPartitionsToTxnResponse => ThrottleTimeMs ErrorCode(v4+) [ResultsByTransaction: TransactionalId
 *   [TopicResults: Name [ResultsByPartition: PartitionIndex PartitionErrorCode]]](v4+)
 *   [ResultsByTopicV3AndBelow: Name [ResultsByPartition: PartitionIndex PartitionErrorCode]](v0-3)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

const topic = [S.string("Name", { mapKey: true }), S.array("Partitions", "int32")] as const

export const Request = S.message({
  name: "AddPartitionsToTxnRequest",
  apiKey: 24,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [
    S.array(
      "Transactions",
      [
        S.string("TransactionalId", { versions: "4+", mapKey: true }),
        S.int64("ProducerId", { versions: "4+" }),
        S.int16("ProducerEpoch", { versions: "4+" }),
        S.bool("VerifyOnly", { versions: "4+", default: false }),
        S.array("Topics", topic, { versions: "4+" })
      ],
      { versions: "4+" }
    ),
    S.string("V3AndBelowTransactionalId", { versions: "0-3" }),
    S.int64("V3AndBelowProducerId", { versions: "0-3" }),
    S.int16("V3AndBelowProducerEpoch", { versions: "0-3" }),
    S.array("V3AndBelowTopics", topic, { versions: "0-3" })
  ]
})

const topicResult = [
  S.string("Name", { mapKey: true }),
  S.array("ResultsByPartition", [S.int32("PartitionIndex", { mapKey: true }), S.int16("PartitionErrorCode")])
] as const

export const Response = S.message({
  name: "AddPartitionsToTxnResponse",
  apiKey: 24,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode", { versions: "4+", ignorable: true }),
    S.array(
      "ResultsByTransaction",
      [
        S.string("TransactionalId", { versions: "4+", mapKey: true }),
        S.array("TopicResults", topicResult, { versions: "4+" })
      ],
      { versions: "4+" }
    ),
    S.array("ResultsByTopicV3AndBelow", topicResult, { versions: "0-3" })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 24,
  name: "AddPartitionsToTxn",
  request: Request,
  response: Response,
  versions: "0-5"
})
