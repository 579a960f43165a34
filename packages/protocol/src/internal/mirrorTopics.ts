/**
 * Message shapes KIP-1279 shares between APIs: the per-topic result of Start/Stop/Pause/Resume/Recover,
 * and the topic-list request of Pause/Resume.
 */
import * as S from "../Spec.js"

/** ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage] */
export const topicsResponse = (name: string, apiKey: number) =>
  S.message({
    name,
    apiKey,
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

/** MirrorName [Topics: TopicName] StateValidationOffset */
export const topicsRequest = (name: string, apiKey: number) =>
  S.message({
    name,
    apiKey,
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
