/**
 * DescribeCluster (key 60): cluster id, controller and the brokers (or controllers) of a cluster, as
 * the admin client asks for them. Layout only.
 *
 * DescribeClusterRequest => IncludeClusterAuthorizedOperations EndpointType(v1+) IncludeFencedBrokers(v2+)
 * DescribeClusterResponse => ThrottleTimeMs ErrorCode ErrorMessage EndpointType(v1+) ClusterId ControllerId
 *   [Brokers: BrokerId Host Port Rack IsFenced(v2+)] ClusterAuthorizedOperations
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeClusterRequest",
  apiKey: 60,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.bool("IncludeClusterAuthorizedOperations"),
    S.int8("EndpointType", { versions: "1+", default: 1 }),
    S.bool("IncludeFencedBrokers", { versions: "2+" })
  ]
})

export const Response = S.message({
  name: "DescribeClusterResponse",
  apiKey: 60,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+" }),
    S.int8("EndpointType", { versions: "1+", default: 1 }),
    S.string("ClusterId"),
    S.int32("ControllerId", { default: -1 }),
    S.array("Brokers", [
      S.int32("BrokerId", { mapKey: true }),
      S.string("Host"),
      S.int32("Port"),
      S.string("Rack", { nullableVersions: "0+" }),
      S.bool("IsFenced", { versions: "2+" })
    ]),
    S.int32("ClusterAuthorizedOperations", { default: -2147483648 })
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 60,
  name: "DescribeCluster",
  request: Request,
  response: Response,
  versions: "0-2"
})
