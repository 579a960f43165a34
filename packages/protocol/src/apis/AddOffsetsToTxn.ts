/**
 * AddOffsetsToTxn (key 25): a transactional producer adds a group's offsets partition to its
 * transaction before committing offsets with TxnOffsetCommit. It only describes the wire format.
 *
 * AddOffsetsToTxnRequest => TransactionalId ProducerId ProducerEpoch GroupId
 * AddOffsetsToTxnResponse => ThrottleTimeMs ErrorCode
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AddOffsetsToTxnRequest",
  apiKey: 25,
  type: "request",
  validVersions: "0-4",
  flexibleVersions: "3+",
  fields: [S.string("TransactionalId"), S.int64("ProducerId"), S.int16("ProducerEpoch"), S.string("GroupId")]
})

export const Response = S.message({
  name: "AddOffsetsToTxnResponse",
  apiKey: 25,
  type: "response",
  validVersions: "0-4",
  flexibleVersions: "3+",
  fields: [S.int32("ThrottleTimeMs"), S.int16("ErrorCode")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 25,
  name: "AddOffsetsToTxn",
  request: Request,
  response: Response,
  versions: "0-4"
})
