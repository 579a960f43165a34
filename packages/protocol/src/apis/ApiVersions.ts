/**
 * ApiVersions (key 18): the versions of every API a broker serves.
 *
 * ApiVersionsRequest => ClientSoftwareName ClientSoftwareVersion (v3+)
 * ApiVersionsResponse => ErrorCode [ApiKey MinVersion MaxVersion] ThrottleTimeMs(v1+)
 *   tagged(v3+): 0 SupportedFeatures, 1 FinalizedFeaturesEpoch, 2 FinalizedFeatures, 3 ZkMigrationReady
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ApiVersionsRequest",
  apiKey: 18,
  type: "request",
  validVersions: "0-4",
  flexibleVersions: "3+",
  fields: [
    S.string("ClientSoftwareName", { versions: "3+", ignorable: true }),
    S.string("ClientSoftwareVersion", { versions: "3+", ignorable: true })
  ]
})

export const Response = S.message({
  name: "ApiVersionsResponse",
  apiKey: 18,
  type: "response",
  validVersions: "0-4",
  flexibleVersions: "3+",
  fields: [
    S.int16("ErrorCode"),
    S.array("ApiKeys", [S.int16("ApiKey", { mapKey: true }), S.int16("MinVersion"), S.int16("MaxVersion")]),
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.array(
      "SupportedFeatures",
      [
        S.string("Name", { versions: "3+", mapKey: true }),
        S.int16("MinVersion", { versions: "3+" }),
        S.int16("MaxVersion", { versions: "3+" })
      ],
      { versions: "3+", taggedVersions: "3+", tag: 0, ignorable: true }
    ),
    S.int64("FinalizedFeaturesEpoch", { versions: "3+", taggedVersions: "3+", tag: 1, default: -1n, ignorable: true }),
    S.array(
      "FinalizedFeatures",
      [
        S.string("Name", { versions: "3+", mapKey: true }),
        S.int16("MaxVersionLevel", { versions: "3+" }),
        S.int16("MinVersionLevel", { versions: "3+" })
      ],
      { versions: "3+", taggedVersions: "3+", tag: 2, ignorable: true }
    ),
    S.bool("ZkMigrationReady", { versions: "3+", taggedVersions: "3+", tag: 3, default: false, ignorable: true })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 18, name: "ApiVersions", request: Request, response: Response, versions: "0-4" })
