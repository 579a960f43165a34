/**
 * FindCoordinator (key 10): which broker coordinates a group, a transactional id or a share group.
 * From v4 one request asks for many keys at once; before that it carries a single `Key`. It only
 * describes the wire format; choosing the coordinator is the broker's job.
 *
 * FindCoordinatorRequest => Key(v0-3) KeyType(v1+) [CoordinatorKeys](v4+)
 * FindCoordinatorResponse => ThrottleTimeMs(v1+) ErrorCode(v0-3) ErrorMessage(v1-3) NodeId(v0-3) Host(v0-3)
 *   Port(v0-3) [Coordinators: Key NodeId Host Port ErrorCode ErrorMessage](v4+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "FindCoordinatorRequest",
  apiKey: 10,
  type: "request",
  validVersions: "0-6",
  flexibleVersions: "3+",
  fields: [
    S.string("Key", { versions: "0-3" }),
    S.int8("KeyType", { versions: "1+", default: 0 }),
    S.array("CoordinatorKeys", "string", { versions: "4+" })
  ]
})

export const Response = S.message({
  name: "FindCoordinatorResponse",
  apiKey: 10,
  type: "response",
  validVersions: "0-6",
  flexibleVersions: "3+",
  fields: [
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.int16("ErrorCode", { versions: "0-3" }),
    S.string("ErrorMessage", { versions: "1-3", nullableVersions: "1-3", ignorable: true }),
    S.int32("NodeId", { versions: "0-3" }),
    S.string("Host", { versions: "0-3" }),
    S.int32("Port", { versions: "0-3" }),
    S.array(
      "Coordinators",
      [
        S.string("Key", { versions: "4+" }),
        S.int32("NodeId", { versions: "4+" }),
        S.string("Host", { versions: "4+" }),
        S.int32("Port", { versions: "4+" }),
        S.int16("ErrorCode", { versions: "4+" }),
        S.string("ErrorMessage", { versions: "4+", nullableVersions: "4+", ignorable: true })
      ],
      { versions: "4+" }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

/** Coordinator key types (`KeyType`). */
export const KeyType = { GROUP: 0, TRANSACTION: 1, SHARE: 2 } as const

export const api = Api.define({
  key: 10,
  name: "FindCoordinator",
  request: Request,
  response: Response,
  versions: "0-6"
})
