/**
 * CreateClusterMirror (key 94, KIP-1279): creates a named mirror from its connection and filter configs.
 * Sent by admin clients to any broker, which forwards it unchanged to the controller. Codec only: the
 * checks (required configs, existing mirror) belong to the controller.
 *
 * CreateClusterMirrorRequest => MirrorName [Config: Name Value]
 * CreateClusterMirrorResponse => ThrottleTimeMs ErrorCode ErrorMessage
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "CreateClusterMirrorRequest",
  apiKey: 94,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Config", [S.string("Name", { mapKey: true }), S.string("Value", { nullableVersions: "0+" })])
  ]
})

export const Response = S.message({
  name: "CreateClusterMirrorResponse",
  apiKey: 94,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int32("ThrottleTimeMs"), S.int16("ErrorCode"), S.string("ErrorMessage", { nullableVersions: "0+" })]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 94,
  name: "CreateClusterMirror",
  request: Request,
  response: Response,
  versions: "0"
})
