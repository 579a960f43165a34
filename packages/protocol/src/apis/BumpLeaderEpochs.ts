/**
 * BumpLeaderEpochs (key 105, KIP-1279): a destination broker asks the controller to raise partition
 * leader epochs above the source's, so that the invariant "destination epoch >= source epoch" holds.
 * The controller answers with PartitionChangeRecord v3 writes. Codec only.
 *
 * BumpLeaderEpochsRequest => [Topics: TopicId [Partitions: PartitionIndex MinLeaderEpoch]]
 *   tagged: 0 MinProducerId
 * BumpLeaderEpochsResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Topics: TopicName [Partitions: PartitionIndex ErrorCode ErrorMessage]]
 *
 * The prototype declares the partition ErrorCode for version "0" only; that is identical on the wire
 * while v0 is the only version, and we declare it "0+" so that a later version cannot lose it.
 *
 * MinProducerId is our addition (tagged, so the prototype's layout is unchanged): the highest producer id
 * a stopping partition has seen mirrored; the controller moves its next producer id above it in the same
 * record batch as the epoch bump. -1 asks nothing of the producer ids.
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "BumpLeaderEpochsRequest",
  apiKey: 105,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.array("Topics", [
      S.uuid("TopicId"),
      S.array("Partitions", [S.int32("PartitionIndex"), S.int32("MinLeaderEpoch", { default: -1 })])
    ]),
    S.int64("MinProducerId", { default: -1n, taggedVersions: "0+", tag: 0, ignorable: true })
  ]
})

export const Response = S.message({
  name: "BumpLeaderEpochsResponse",
  apiKey: 105,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 105,
  name: "BumpLeaderEpochs",
  request: Request,
  response: Response,
  versions: "0"
})
