/**
 * UpdateFeatures (key 57): change finalized feature levels (e.g. `metadata.version`,
 * `mirror.version`). Layout only; validation and FeatureLevelRecords belong to the controller.
 *
 * UpdateFeaturesRequest => timeoutMs [FeatureUpdates: Feature MaxVersionLevel AllowDowngrade(v0)
 *   UpgradeType(v1+)] ValidateOnly(v1+)
 * UpdateFeaturesResponse => ThrottleTimeMs ErrorCode ErrorMessage [Results: Feature ErrorCode
 *   ErrorMessage](v0-1)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "UpdateFeaturesRequest",
  apiKey: 57,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int32("timeoutMs", { default: 60000 }),
    S.array("FeatureUpdates", [
      S.string("Feature", { mapKey: true }),
      S.int16("MaxVersionLevel"),
      S.bool("AllowDowngrade", { versions: "0" }),
      S.int8("UpgradeType", { versions: "1+", default: 1 })
    ]),
    S.bool("ValidateOnly", { versions: "1+", default: false })
  ]
})

export const Response = S.message({
  name: "UpdateFeaturesResponse",
  apiKey: 57,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array(
      "Results",
      [
        S.string("Feature", { mapKey: true }),
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null })
      ],
      { versions: "0-1", ignorable: true }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 57,
  name: "UpdateFeatures",
  request: Request,
  response: Response,
  versions: "0-2"
})
