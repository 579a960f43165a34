/**
 * Heartbeat (key 12): a classic group member proves it is alive and learns of rebalances. It only
 * describes the wire format; session tracking belongs to the group coordinator.
 *
 * HeartbeatRequest => GroupId GenerationId MemberId GroupInstanceId(v3+)
 * HeartbeatResponse => ThrottleTimeMs(v1+) ErrorCode
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "HeartbeatRequest",
  apiKey: 12,
  type: "request",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.string("GroupId"),
    S.int32("GenerationId"),
    S.string("MemberId"),
    S.string("GroupInstanceId", { versions: "3+", nullableVersions: "3+", default: null })
  ]
})

export const Response = S.message({
  name: "HeartbeatResponse",
  apiKey: 12,
  type: "response",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }), S.int16("ErrorCode")]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 12, name: "Heartbeat", request: Request, response: Response, versions: "0-4" })
