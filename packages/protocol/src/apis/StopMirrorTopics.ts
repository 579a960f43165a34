/**
 * StopMirrorTopics (key 96, KIP-1279): stops mirroring topics (failover) and narrows the mirror's
 * patterns. Validated and stamped by the receiving broker, decided by the controller. Codec only.
 *
 * StopMirrorTopicsRequest => MirrorName [Topics: TopicName] StateValidationOffset
 *   tagged: 0 Patterns
 * StopMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage]
 *
 * Each of `Patterns` is removed from the include list when it is there, otherwise added to the exclude
 * list.
 */
import * as Api from "../Api.js"
import { topicsResponse } from "../internal/mirrorTopics.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "StopMirrorTopicsRequest",
  apiKey: 96,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Topics", [S.string("TopicName", { mapKey: true })]),
    S.array("Patterns", "string", { taggedVersions: "0+", tag: 0, ignorable: true }),
    S.int64("StateValidationOffset", { default: -1n })
  ]
})

export const Response = topicsResponse("StopMirrorTopicsResponse", 96)

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 96,
  name: "StopMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
