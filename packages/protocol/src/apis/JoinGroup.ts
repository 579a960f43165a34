/**
 * JoinGroup (key 11): a member joins a classic group and names the protocols it supports. It only
 * describes the wire format; membership and rebalancing belong to the group coordinator.
 *
 * JoinGroupRequest => GroupId SessionTimeoutMs RebalanceTimeoutMs(v1+) MemberId GroupInstanceId(v5+)
 *   ProtocolType [Protocols: Name Metadata] Reason(v8+)
 * JoinGroupResponse => ThrottleTimeMs(v2+) ErrorCode GenerationId ProtocolType(v7+) ProtocolName Leader
 *   SkipAssignment(v9+) MemberId [Members: MemberId GroupInstanceId(v5+) Metadata]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "JoinGroupRequest",
  apiKey: 11,
  type: "request",
  validVersions: "0-9",
  flexibleVersions: "6+",
  fields: [
    S.string("GroupId"),
    S.int32("SessionTimeoutMs"),
    S.int32("RebalanceTimeoutMs", { versions: "1+", default: -1, ignorable: true }),
    S.string("MemberId"),
    S.string("GroupInstanceId", { versions: "5+", nullableVersions: "5+", default: null }),
    S.string("ProtocolType"),
    S.array("Protocols", [S.string("Name", { mapKey: true }), S.bytes("Metadata")]),
    S.string("Reason", { versions: "8+", nullableVersions: "8+", default: null, ignorable: true })
  ]
})

export const Response = S.message({
  name: "JoinGroupResponse",
  apiKey: 11,
  type: "response",
  validVersions: "0-9",
  flexibleVersions: "6+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "2+", ignorable: true }),
    S.int16("ErrorCode"),
    S.int32("GenerationId", { default: -1 }),
    S.string("ProtocolType", { versions: "7+", nullableVersions: "7+", default: null, ignorable: true }),
    // Non-null before v7, so the default is the empty string rather than null.
    S.string("ProtocolName", { nullableVersions: "7+", default: "" }),
    S.string("Leader"),
    S.bool("SkipAssignment", { versions: "9+", default: false }),
    S.string("MemberId"),
    S.array("Members", [
      S.string("MemberId"),
      S.string("GroupInstanceId", { versions: "5+", nullableVersions: "5+", default: null, ignorable: true }),
      S.bytes("Metadata")
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 11, name: "JoinGroup", request: Request, response: Response, versions: "2-9" })
