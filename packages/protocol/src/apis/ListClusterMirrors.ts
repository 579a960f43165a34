/**
 * ListClusterMirrors (key 98, KIP-1279): the mirrors a caller may describe, answered by one broker
 * from its metadata. Codec only.
 *
 * ListClusterMirrorsRequest => IncludeTopicNames
 * ListClusterMirrorsResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Mirrors: MirrorName SourceBootstrap SourceClusterId TopicCount [TopicNames]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ListClusterMirrorsRequest",
  apiKey: 98,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.bool("IncludeTopicNames", { default: false })]
})

export const Response = S.message({
  name: "ListClusterMirrorsResponse",
  apiKey: 98,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Mirrors", [
      S.string("MirrorName"),
      // "" when unknown.
      S.string("SourceBootstrap"),
      S.string("SourceClusterId", { default: "" }),
      // Counts topics desired MIRRORING only.
      S.int32("TopicCount", { default: 0 }),
      // Filled only when asked; lists MIRRORING and PAUSED topics, not STOPPED ones.
      S.array("TopicNames", "string")
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 98,
  name: "ListClusterMirrors",
  request: Request,
  response: Response,
  versions: "0"
})
