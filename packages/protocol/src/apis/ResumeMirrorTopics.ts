/**
 * ResumeMirrorTopics (key 103, KIP-1279): resumes paused mirror topics: the partitions go straight back to mirroring, without truncation.
 * Validated and stamped by the receiving broker, decided by the controller. Codec only.
 *
 * ResumeMirrorTopicsRequest => MirrorName [Topics: TopicName] StateValidationOffset
 * ResumeMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ResumeMirrorTopicsRequest",
  apiKey: 103,
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
  name: "ResumeMirrorTopicsResponse",
  apiKey: 103,
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
  key: 103,
  name: "ResumeMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
