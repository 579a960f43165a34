/**
 * DeleteTopics (key 20): delete topics by name, or from v6 by name or topic id. Layout only.
 *
 * DeleteTopicsRequest => [Topics: Name TopicId](v6+) [TopicNames](v0-5) TimeoutMs
 * DeleteTopicsResponse => ThrottleTimeMs(v1+) [Responses: Name TopicId(v6+) ErrorCode ErrorMessage(v5+)]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DeleteTopicsRequest",
  apiKey: 20,
  type: "request",
  validVersions: "0-6",
  flexibleVersions: "4+",
  fields: [
    S.array(
      "Topics",
      [S.string("Name", { versions: "6+", nullableVersions: "6+" }), S.uuid("TopicId", { versions: "6+" })],
      { versions: "6+" }
    ),
    S.array("TopicNames", "string", { versions: "0-5", ignorable: true }),
    S.int32("TimeoutMs")
  ]
})

export const Response = S.message({
  name: "DeleteTopicsResponse",
  apiKey: 20,
  type: "response",
  validVersions: "0-6",
  flexibleVersions: "4+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.array("Responses", [
      S.string("Name", { nullableVersions: "6+", default: "", mapKey: true }),
      S.uuid("TopicId", { versions: "6+", ignorable: true }),
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { versions: "5+", nullableVersions: "5+", ignorable: true })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 20, name: "DeleteTopics", request: Request, response: Response, versions: "1-6" })
