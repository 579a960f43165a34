/**
 * AlterPartition (key 56): a partition leader asks the controller to change the ISR (and the leader
 * recovery state) of partitions it leads, guarded by the partition epoch. Layout only; the decision
 * belongs to the controller's replication control.
 *
 * AlterPartitionRequest => BrokerId BrokerEpoch [Topics: TopicName(v0-1) TopicId(v2+) [Partitions:
 *   PartitionIndex LeaderEpoch [NewIsr](v0-2) [NewIsrWithEpochs: BrokerId BrokerEpoch](v3+)
 *   LeaderRecoveryState(v1+) PartitionEpoch]]
 * AlterPartitionResponse => ThrottleTimeMs ErrorCode [Topics: TopicName(v0-1) TopicId(v2+) [Partitions:
 *   PartitionIndex ErrorCode LeaderId LeaderEpoch [Isr] LeaderRecoveryState(v1+) PartitionEpoch]]
 * The messages keep v0-1 so that old frames decode; like Kafka 4.x we speak v2-3 only.
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AlterPartitionRequest",
  apiKey: 56,
  type: "request",
  validVersions: "0-3",
  flexibleVersions: "0+",
  fields: [
    S.int32("BrokerId"),
    S.int64("BrokerEpoch", { default: -1n }),
    S.array("Topics", [
      S.string("TopicName", { versions: "0-1", ignorable: true }),
      S.uuid("TopicId", { versions: "2+", ignorable: true }),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int32("LeaderEpoch"),
        S.array("NewIsr", "int32", { versions: "0-2" }),
        S.array(
          "NewIsrWithEpochs",
          [S.int32("BrokerId", { versions: "3+" }), S.int64("BrokerEpoch", { versions: "3+", default: -1n })],
          {
            versions: "3+"
          }
        ),
        S.int8("LeaderRecoveryState", { versions: "1+", default: 0 }),
        S.int32("PartitionEpoch")
      ])
    ])
  ]
})

export const Response = S.message({
  name: "AlterPartitionResponse",
  apiKey: 56,
  type: "response",
  validVersions: "0-3",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.array("Topics", [
      S.string("TopicName", { versions: "0-1", ignorable: true }),
      S.uuid("TopicId", { versions: "2+", ignorable: true }),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch"),
        S.array("Isr", "int32"),
        S.int8("LeaderRecoveryState", { versions: "1+", default: 0, ignorable: true }),
        S.int32("PartitionEpoch")
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 56,
  name: "AlterPartition",
  request: Request,
  response: Response,
  versions: "2-3"
})
