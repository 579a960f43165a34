/**
 * SyncGroup (key 14): after a join, the leader hands out assignments and every member receives its own.
 * It only describes the wire format; the group coordinator stores and distributes assignments.
 *
 * SyncGroupRequest => GroupId GenerationId MemberId GroupInstanceId(v3+) ProtocolType(v5+) ProtocolName(v5+)
 *   [Assignments: MemberId Assignment]
 * SyncGroupResponse => ThrottleTimeMs(v1+) ErrorCode ProtocolType(v5+) ProtocolName(v5+) Assignment
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "SyncGroupRequest",
  apiKey: 14,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "4+",
  fields: [
    S.string("GroupId"),
    S.int32("GenerationId"),
    S.string("MemberId"),
    S.string("GroupInstanceId", { versions: "3+", nullableVersions: "3+", default: null }),
    S.string("ProtocolType", { versions: "5+", nullableVersions: "5+", default: null, ignorable: true }),
    S.string("ProtocolName", { versions: "5+", nullableVersions: "5+", default: null, ignorable: true }),
    S.array("Assignments", [S.string("MemberId"), S.bytes("Assignment")])
  ]
})

export const Response = S.message({
  name: "SyncGroupResponse",
  apiKey: 14,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "4+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.int16("ErrorCode"),
    S.string("ProtocolType", { versions: "5+", nullableVersions: "5+", default: null, ignorable: true }),
    S.string("ProtocolName", { versions: "5+", nullableVersions: "5+", default: null, ignorable: true }),
    S.bytes("Assignment")
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 14, name: "SyncGroup", request: Request, response: Response, versions: "0-5" })
