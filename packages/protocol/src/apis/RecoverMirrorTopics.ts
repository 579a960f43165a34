/**
 * RecoverMirrorTopics (key 106, KIP-1279 later revisions): restarts mirror partitions that stay
 * FAILED after their retries ran out. Codec only.
 *
 * RecoverMirrorTopicsRequest => MirrorName [Topics: TopicName] <tag 0: AcceptDataLoss>
 * RecoverMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: TopicName ErrorCode ErrorMessage]
 *
 * The prototype files the response schema under apiKey 107. A response carries no API key on the wire
 * (it is matched to its request by correlation id), so the API is key 106 in both directions and 107
 * stays unused.
 *
 * AcceptDataLoss (our addition, tag 0, ignorable): partitions FAILED because the source deleted records
 * before they were mirrored restart at the source log start; without it they stay FAILED.
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "RecoverMirrorTopicsRequest",
  apiKey: 106,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Topics", [S.string("TopicName", { mapKey: true })]),
    S.bool("AcceptDataLoss", { default: false, taggedVersions: "0+", tag: 0, ignorable: true })
  ]
})

export const Response = S.message({
  name: "RecoverMirrorTopicsResponse",
  apiKey: 106,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Topics", [
      S.string("TopicName"),
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+", default: null })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 106,
  name: "RecoverMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
