/**
 * ResumeMirrorTopics (key 103, KIP-1279): resumes paused mirror topics: the partitions go straight back to mirroring, without truncation.
 * Validated and stamped by the receiving broker, decided by the controller. Codec only.
 *
 * ResumeMirrorTopicsRequest => MirrorName [Topics: TopicName] StateValidationOffset
 * ResumeMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage]
 */
import * as Api from "../Api.js"
import { topicsRequest, topicsResponse } from "../internal/mirrorTopics.js"
import type * as S from "../Spec.js"

export const Request = topicsRequest("ResumeMirrorTopicsRequest", 103)

export const Response = topicsResponse("ResumeMirrorTopicsResponse", 103)

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 103,
  name: "ResumeMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
