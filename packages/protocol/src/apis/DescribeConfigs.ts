/**
 * DescribeConfigs (key 32): configuration entries of topics, brokers, broker loggers and (KIP-1279)
 * cluster mirrors. Layout only; resolving sources and synonyms belongs to the config owner.
 *
 * DescribeConfigsRequest => [Resources: ResourceType ResourceName [ConfigurationKeys]]
 *   IncludeSynonyms(v1+) IncludeDocumentation(v3+)
 * DescribeConfigsResponse => ThrottleTimeMs [Results: ErrorCode ErrorMessage ResourceType ResourceName
 *   [Configs: Name Value ReadOnly ConfigSource(v1+) IsDefault(v0) IsSensitive
 *   [Synonyms: Name Value Source](v1+) ConfigType(v3+) Documentation(v3+)]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeConfigsRequest",
  apiKey: 32,
  type: "request",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.array("Resources", [
      S.int8("ResourceType"),
      S.string("ResourceName"),
      S.array("ConfigurationKeys", "string", { nullableVersions: "0+" })
    ]),
    S.bool("IncludeSynonyms", { versions: "1+" }),
    S.bool("IncludeDocumentation", { versions: "3+" })
  ]
})

export const Response = S.message({
  name: "DescribeConfigsResponse",
  apiKey: 32,
  type: "response",
  validVersions: "0-4",
  flexibleVersions: "4+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Results", [
      S.int16("ErrorCode"),
      S.string("ErrorMessage", { nullableVersions: "0+", default: "" }),
      S.int8("ResourceType"),
      S.string("ResourceName"),
      S.array("Configs", [
        S.string("Name"),
        S.string("Value", { nullableVersions: "0+", default: "" }),
        S.bool("ReadOnly"),
        S.int8("ConfigSource", { versions: "1+", default: -1, ignorable: true }),
        S.bool("IsDefault", { versions: "0" }),
        S.bool("IsSensitive"),
        S.array(
          "Synonyms",
          [
            S.string("Name", { versions: "1+" }),
            S.string("Value", { versions: "1+", nullableVersions: "0+", default: "" }),
            S.int8("Source", { versions: "1+" })
          ],
          { versions: "1+", ignorable: true }
        ),
        S.int8("ConfigType", { versions: "3+", ignorable: true }),
        S.string("Documentation", { versions: "3+", nullableVersions: "0+", default: "", ignorable: true })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 32,
  name: "DescribeConfigs",
  request: Request,
  response: Response,
  versions: "1-4"
})
