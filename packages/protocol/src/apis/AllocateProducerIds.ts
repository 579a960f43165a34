/**
 * AllocateProducerIds (key 67): a broker asks the controller for a block of producer ids to hand
 * out to idempotent and transactional producers. Layout only.
 *
 * AllocateProducerIdsRequest => BrokerId BrokerEpoch
 * AllocateProducerIdsResponse => ThrottleTimeMs ErrorCode ProducerIdStart ProducerIdLen
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AllocateProducerIdsRequest",
  apiKey: 67,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int32("BrokerId"), S.int64("BrokerEpoch", { default: -1n })]
})

export const Response = S.message({
  name: "AllocateProducerIdsResponse",
  apiKey: 67,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int32("ThrottleTimeMs"), S.int16("ErrorCode"), S.int64("ProducerIdStart"), S.int32("ProducerIdLen")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 67,
  name: "AllocateProducerIds",
  request: Request,
  response: Response,
  versions: "0"
})
