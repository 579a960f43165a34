/**
 * BrokerRegistration (key 62): a broker announces itself to the active controller (listeners,
 * supported features, rack, log directories) and receives a broker epoch. Layout only; deciding a
 * registration belongs to the controller.
 *
 * BrokerRegistrationRequest => BrokerId ClusterId IncarnationId [Listeners: Name Host Port SecurityProtocol]
 *   [Features: Name MinSupportedVersion MaxSupportedVersion] Rack IsMigratingZkBroker(v1+) [LogDirs](v2+)
 *   PreviousBrokerEpoch(v3+)
 * BrokerRegistrationResponse => ThrottleTimeMs ErrorCode BrokerEpoch
 * v4 changes only the meaning of Features (features whose minimum is 0 are no longer omitted).
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "BrokerRegistrationRequest",
  apiKey: 62,
  type: "request",
  validVersions: "0-4",
  flexibleVersions: "0+",
  fields: [
    S.int32("BrokerId"),
    S.string("ClusterId"),
    S.uuid("IncarnationId"),
    S.array("Listeners", [
      S.string("Name", { mapKey: true }),
      S.string("Host"),
      S.uint16("Port"),
      S.int16("SecurityProtocol")
    ]),
    S.array("Features", [
      S.string("Name", { mapKey: true }),
      S.int16("MinSupportedVersion"),
      S.int16("MaxSupportedVersion")
    ]),
    S.string("Rack", { nullableVersions: "0+", default: null }),
    S.bool("IsMigratingZkBroker", { versions: "1+", default: false }),
    S.array("LogDirs", "uuid", { versions: "2+", ignorable: true }),
    S.int64("PreviousBrokerEpoch", { versions: "3+", default: -1n, ignorable: true })
  ]
})

export const Response = S.message({
  name: "BrokerRegistrationResponse",
  apiKey: 62,
  type: "response",
  validVersions: "0-4",
  flexibleVersions: "0+",
  fields: [S.int32("ThrottleTimeMs"), S.int16("ErrorCode"), S.int64("BrokerEpoch", { default: -1n })]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 62,
  name: "BrokerRegistration",
  request: Request,
  response: Response,
  versions: "0-4"
})
