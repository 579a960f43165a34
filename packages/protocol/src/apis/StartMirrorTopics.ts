/**
 * StartMirrorTopics (key 95, KIP-1279): starts mirroring topics (first mirroring, failover target or
 * failback) and widens the mirror's include/exclude patterns. The receiving broker validates the
 * partition states, stamps `StateValidationOffset` and forwards to the controller. Codec only.
 *
 * StartMirrorTopicsRequest => MirrorName [Topics: TopicId TopicName NumPartitions (tagged: 0 [Configs: Name Value])]
 *   StateValidationOffset
 *   tagged: 0 IncludePatterns, 1 ExcludePatterns, 2 DefaultReplicationFactor
 * StartMirrorTopicsResponse => ThrottleTimeMs ErrorCode ErrorMessage [Topics: Name ErrorCode ErrorMessage]
 *
 * Tagged fields are not positional: on the wire StateValidationOffset follows Topics, and the patterns
 * travel in the request's trailing tagged section. DefaultReplicationFactor (tag 2) is ours, not
 * KIP-1279's: the forwarding broker's `default.replication.factor`, which the controller uses for the
 * topics the request creates when the mirror sets no `replication.factor`; -1 (omitted on the wire)
 * leaves it to the controller's own. A topic's Configs (tag 0 of the topic, also ours) are stamped by the
 * same broker: the source topic's dynamic configs the mirror copies, which the controller gives a topic it
 * creates, so that a mirror topic has the source's `cleanup.policy` (and the rest) from its first record.
 */
import * as Api from "../Api.js"
import { topicsResponse } from "../internal/mirrorTopics.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "StartMirrorTopicsRequest",
  apiKey: 95,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Topics", [
      // The source topic ID; the zero UUID when the sender could not learn it.
      S.uuid("TopicId"),
      S.string("TopicName", { mapKey: true }),
      // Zero or less when unknown; the controller only uses it to create a missing topic.
      S.int32("NumPartitions"),
      // Stamped by the forwarding broker: the configs of a topic the controller creates (empty: defaults).
      S.array("Configs", [S.string("Name"), S.string("Value", { nullableVersions: "0+", default: "" })], {
        taggedVersions: "0+",
        tag: 0,
        ignorable: true
      })
    ]),
    S.array("IncludePatterns", "string", { taggedVersions: "0+", tag: 0, ignorable: true }),
    S.array("ExcludePatterns", "string", { taggedVersions: "0+", tag: 1, ignorable: true }),
    // Stamped by the broker that forwards the request; -1 = the controller's default.replication.factor.
    S.int16("DefaultReplicationFactor", { taggedVersions: "0+", tag: 2, default: -1, ignorable: true }),
    // -1 skips the controller's optimistic-lock check.
    S.int64("StateValidationOffset", { default: -1n })
  ]
})

export const Response = topicsResponse("StartMirrorTopicsResponse", 95)

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 95,
  name: "StartMirrorTopics",
  request: Request,
  response: Response,
  versions: "0"
})
