/**
 * InitProducerId (key 22): allocate a producer id and epoch, or bump the epoch of an existing one.
 * Layout only; allocation belongs to the producer-id control.
 *
 * InitProducerIdRequest => TransactionalId TransactionTimeoutMs ProducerId(v3+) ProducerEpoch(v3+)
 *   Enable2Pc(v6+) KeepPreparedTxn(v6+)
 * InitProducerIdResponse => ThrottleTimeMs ErrorCode ProducerId ProducerEpoch OngoingTxnProducerId(v6+)
 *   OngoingTxnProducerEpoch(v6+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "InitProducerIdRequest",
  apiKey: 22,
  type: "request",
  validVersions: "0-6",
  flexibleVersions: "2+",
  fields: [
    S.string("TransactionalId", { nullableVersions: "0+", default: "" }),
    S.int32("TransactionTimeoutMs"),
    S.int64("ProducerId", { versions: "3+", default: -1n }),
    S.int16("ProducerEpoch", { versions: "3+", default: -1 }),
    S.bool("Enable2Pc", { versions: "6+" }),
    S.bool("KeepPreparedTxn", { versions: "6+" })
  ]
})

export const Response = S.message({
  name: "InitProducerIdResponse",
  apiKey: 22,
  type: "response",
  validVersions: "0-6",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs", { ignorable: true }),
    S.int16("ErrorCode"),
    S.int64("ProducerId", { default: -1n }),
    S.int16("ProducerEpoch"),
    S.int64("OngoingTxnProducerId", { versions: "6+", default: -1n }),
    S.int16("OngoingTxnProducerEpoch", { versions: "6+", default: -1 })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 22,
  name: "InitProducerId",
  request: Request,
  response: Response,
  versions: "0-5"
})
