/**
 * CreateTopics (key 19): create topics with a partition count and replication factor or an explicit
 * assignment. Layout only; placement and validation belong to the controller.
 *
 * CreateTopicsRequest => [Topics: Name NumPartitions ReplicationFactor [Assignments: PartitionIndex
 *   [BrokerIds]] [Configs: Name Value] MirrorInfo(v8+)] timeoutMs validateOnly(v1+)
 *   MirrorInfo => TopicId (nullable, not tagged: an int8 presence marker precedes it)
 * CreateTopicsResponse => ThrottleTimeMs(v2+) [Topics: Name TopicId(v7+) ErrorCode ErrorMessage(v1+)
 *   NumPartitions(v5+) ReplicationFactor(v5+) [Configs: Name Value ReadOnly ConfigSource IsSensitive](v5+)
 *   tagged(v5+): 0 TopicConfigErrorCode]
 * v8 (KIP-1279) lets a mirror create its topic with the source cluster's topic id; the response of v8
 * has the layout of v7.
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "CreateTopicsRequest",
  apiKey: 19,
  type: "request",
  validVersions: "0-8",
  flexibleVersions: "5+",
  fields: [
    S.array("Topics", [
      S.string("Name", { mapKey: true }),
      S.int32("NumPartitions"),
      S.int16("ReplicationFactor"),
      S.array("Assignments", [S.int32("PartitionIndex", { mapKey: true }), S.array("BrokerIds", "int32")]),
      S.array("Configs", [
        S.string("Name", { mapKey: true }),
        S.string("Value", { nullableVersions: "0+", default: "" })
      ]),
      S.struct("MirrorInfo", [S.uuid("TopicId", { versions: "8+" })], {
        versions: "8+",
        nullableVersions: "8+",
        default: null,
        ignorable: true
      })
    ]),
    S.int32("timeoutMs", { default: 60000 }),
    S.bool("validateOnly", { versions: "1+" })
  ]
})

export const Response = S.message({
  name: "CreateTopicsResponse",
  apiKey: 19,
  type: "response",
  validVersions: "0-8",
  flexibleVersions: "5+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "2+", ignorable: true }),
    S.array("Topics", [
      S.string("Name", { mapKey: true }),
      S.uuid("TopicId", { versions: "7+", ignorable: true }),
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { versions: "1+", nullableVersions: "0+", default: "", ignorable: true }),
      S.int16("TopicConfigErrorCode", { versions: "5+", taggedVersions: "5+", tag: 0, ignorable: true }),
      S.int32("NumPartitions", { versions: "5+", default: -1, ignorable: true }),
      S.int16("ReplicationFactor", { versions: "5+", default: -1, ignorable: true }),
      S.array(
        "Configs",
        [
          S.string("Name", { versions: "5+" }),
          S.string("Value", { versions: "5+", nullableVersions: "5+", default: "" }),
          S.bool("ReadOnly", { versions: "5+" }),
          S.int8("ConfigSource", { versions: "5+", default: -1, ignorable: true }),
          S.bool("IsSensitive", { versions: "5+" })
        ],
        { versions: "5+", nullableVersions: "5+", ignorable: true }
      )
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 19, name: "CreateTopics", request: Request, response: Response, versions: "2-8" })
