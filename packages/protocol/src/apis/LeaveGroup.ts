/**
 * LeaveGroup (key 13): members leave a classic group; from v3 several at once, by member id or static
 * instance id. It only describes the wire format; removing members belongs to the group coordinator.
 *
 * LeaveGroupRequest => GroupId MemberId(v0-2) [Members: MemberId GroupInstanceId Reason(v5+)](v3+)
 * LeaveGroupResponse => ThrottleTimeMs(v1+) ErrorCode [Members: MemberId GroupInstanceId ErrorCode](v3+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "LeaveGroupRequest",
  apiKey: 13,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "4+",
  fields: [
    S.string("GroupId"),
    S.string("MemberId", { versions: "0-2" }),
    S.array(
      "Members",
      [
        S.string("MemberId", { versions: "3+" }),
        S.string("GroupInstanceId", { versions: "3+", nullableVersions: "3+", default: null }),
        S.string("Reason", { versions: "5+", nullableVersions: "5+", default: null, ignorable: true })
      ],
      { versions: "3+" }
    )
  ]
})

export const Response = S.message({
  name: "LeaveGroupResponse",
  apiKey: 13,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "4+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.int16("ErrorCode"),
    S.array(
      "Members",
      [
        S.string("MemberId", { versions: "3+" }),
        S.string("GroupInstanceId", { versions: "3+", nullableVersions: "3+" }),
        S.int16("ErrorCode", { versions: "3+" })
      ],
      { versions: "3+" }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 13, name: "LeaveGroup", request: Request, response: Response, versions: "0-5" })
