/**
 * DeleteClusterMirror (key 104, KIP-1279): deletes a mirror whose topics are all stopped. Validated
 * and stamped by the receiving broker, decided by the controller. Codec only.
 *
 * DeleteClusterMirrorRequest => MirrorName StateValidationOffset
 * DeleteClusterMirrorResponse => ThrottleTimeMs ErrorCode ErrorMessage
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DeleteClusterMirrorRequest",
  apiKey: 104,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.string("MirrorName"), S.int64("StateValidationOffset", { default: -1n })]
})

export const Response = S.message({
  name: "DeleteClusterMirrorResponse",
  apiKey: 104,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int32("ThrottleTimeMs"), S.int16("ErrorCode"), S.string("ErrorMessage", { nullableVersions: "0+" })]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 104,
  name: "DeleteClusterMirror",
  request: Request,
  response: Response,
  versions: "0"
})
