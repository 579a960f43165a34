/**
 * PauseMirrorTopics (key 102, KIP-1279): pauses mirroring topics: the partitions keep their data and stay read-only, fetchers stop.
 * Validated and stamped by the receiving broker, decided by the controller. Codec only.
 *
 * PauseMirrorTopicsRequest => MirrorName [Topics: TopicName] StateValidationOffset
 * PauseMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "PauseMirrorTopicsRequest",
  apiKey: 102,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Topics", [S.string("TopicName", { mapKey: true })]),
    // -1 skips the controller's optimistic-lock check.
    S.int64("StateValidationOffset", { default: -1n })
  ]
})

export const Response = S.message({
  name: "PauseMirrorTopicsResponse",
  apiKey: 102,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Topics", [
      S.string("Name"),
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+", default: null })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 102,
  name: "PauseMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
