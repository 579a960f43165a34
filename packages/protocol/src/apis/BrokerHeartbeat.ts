/**
 * BrokerHeartbeat (key 63): a registered broker reports its metadata offset and wishes (fence,
 * shut down) to the active controller, which answers whether it is caught up, fenced, or may shut
 * down. Layout only.
 *
 * BrokerHeartbeatRequest => BrokerId BrokerEpoch CurrentMetadataOffset WantFence WantShutDown
 *   tagged(v1+): 0 OfflineLogDirs; tagged(v2+): 1 CordonedLogDirs (nullable: null until the broker
 *   has reached RECOVERY)
 * BrokerHeartbeatResponse => ThrottleTimeMs ErrorCode IsCaughtUp IsFenced ShouldShutDown
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "BrokerHeartbeatRequest",
  apiKey: 63,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int32("BrokerId"),
    S.int64("BrokerEpoch", { default: -1n }),
    S.int64("CurrentMetadataOffset"),
    S.bool("WantFence"),
    S.bool("WantShutDown"),
    S.array("OfflineLogDirs", "uuid", { versions: "1+", taggedVersions: "1+", tag: 0 }),
    S.array("CordonedLogDirs", "uuid", {
      versions: "2+",
      nullableVersions: "2+",
      taggedVersions: "2+",
      tag: 1,
      default: null
    })
  ]
})

export const Response = S.message({
  name: "BrokerHeartbeatResponse",
  apiKey: 63,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.bool("IsCaughtUp", { default: false }),
    S.bool("IsFenced", { default: true }),
    S.bool("ShouldShutDown")
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 63,
  name: "BrokerHeartbeat",
  request: Request,
  response: Response,
  versions: "0-2"
})
