/**
 * PauseMirrorTopics (key 102, KIP-1279): pauses mirroring topics: the partitions keep their data and stay read-only, fetchers stop.
 * Validated and stamped by the receiving broker, decided by the controller. Codec only.
 *
 * PauseMirrorTopicsRequest => MirrorName [Topics: TopicName] StateValidationOffset
 * PauseMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import { topicsRequest, topicsResponse } from "../internal/mirrorTopics.js"
import type * as S from "../Spec.js"

export const Request = topicsRequest("PauseMirrorTopicsRequest", 102)

export const Response = topicsResponse("PauseMirrorTopicsResponse", 102)

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 102,
  name: "PauseMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
