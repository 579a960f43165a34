/**
 * WriteTxnMarkers (key 27): the transaction coordinator asks each partition leader to append a COMMIT or
 * ABORT control batch for a producer's transaction. It only describes the wire format; the coordinator
 * sends it and the partition leader's log appends the marker.
 *
 * WriteTxnMarkersRequest => [Markers: ProducerId ProducerEpoch TransactionResult
 *   [Topics: Name [PartitionIndexes]] CoordinatorEpoch]
 * WriteTxnMarkersResponse => [Markers: ProducerId [Topics: Name [Partitions: PartitionIndex ErrorCode]]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "WriteTxnMarkersRequest",
  apiKey: 27,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.array("Markers", [
      S.int64("ProducerId"),
      S.int16("ProducerEpoch"),
      /** false = ABORT, true = COMMIT. */
      S.bool("TransactionResult"),
      S.array("Topics", [S.string("Name"), S.array("PartitionIndexes", "int32")]),
      S.int32("CoordinatorEpoch")
    ])
  ]
})

export const Response = S.message({
  name: "WriteTxnMarkersResponse",
  apiKey: 27,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "1+",
  fields: [
    S.array("Markers", [
      S.int64("ProducerId"),
      S.array("Topics", [S.string("Name"), S.array("Partitions", [S.int32("PartitionIndex"), S.int16("ErrorCode")])])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 27,
  name: "WriteTxnMarkers",
  request: Request,
  response: Response,
  versions: "0-1"
})
