/**
 * TxnOffsetCommit (key 28): a transactional producer commits consumer offsets as part of its
 * transaction; they become visible when the transaction commits. v5 has v4's layout (it marks
 * transactions v2, where this request also adds the offsets partition). It only describes the wire
 * format.
 *
 * TxnOffsetCommitRequest => TransactionalId GroupId ProducerId ProducerEpoch GenerationId(v3+) MemberId(v3+)
 *   GroupInstanceId(v3+) [Topics: Name [Partitions: PartitionIndex CommittedOffset CommittedLeaderEpoch(v2+)
 *   CommittedMetadata]]
 * TxnOffsetCommitResponse => ThrottleTimeMs [Topics: Name [Partitions: PartitionIndex ErrorCode]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "TxnOffsetCommitRequest",
  apiKey: 28,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [
    S.string("TransactionalId"),
    S.string("GroupId"),
    S.int64("ProducerId"),
    S.int16("ProducerEpoch"),
    S.int32("GenerationId", { versions: "3+", default: -1 }),
    S.string("MemberId", { versions: "3+", default: "" }),
    S.string("GroupInstanceId", { versions: "3+", nullableVersions: "3+", default: null }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int64("CommittedOffset"),
        S.int32("CommittedLeaderEpoch", { versions: "2+", default: -1, ignorable: true }),
        S.string("CommittedMetadata", { nullableVersions: "0+" })
      ])
    ])
  ]
})

export const Response = S.message({
  name: "TxnOffsetCommitResponse",
  apiKey: 28,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "3+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Topics", [S.string("Name"), S.array("Partitions", [S.int32("PartitionIndex"), S.int16("ErrorCode")])])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 28,
  name: "TxnOffsetCommit",
  request: Request,
  response: Response,
  versions: "0-5"
})
