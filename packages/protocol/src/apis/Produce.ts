/**
 * Produce (key 0): record batches appended to partition leaders.
 * Records stay opaque bytes here (validation and offsets belong to the log); it must not parse them.
 *
 * ProduceRequest => TransactionalId(v3+) Acks TimeoutMs
 *   [TopicData: Name(v0-12) TopicId(v13+) [PartitionData: Index Records]]
 * ProduceResponse => [Responses: Name(v0-12) TopicId(v13+) [PartitionResponses: Index ErrorCode BaseOffset
 *   LogAppendTimeMs(v2+) LogStartOffset(v5+) [RecordErrors: BatchIndex BatchIndexErrorMessage](v8+)
 *   ErrorMessage(v8+) tagged(v10+): 0 CurrentLeader]] ThrottleTimeMs(v1+)
 *   tagged(v10+): 0 NodeEndpoints
 * v12 has the layout of v11 (it only signals the transaction protocol v2).
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ProduceRequest",
  apiKey: 0,
  type: "request",
  validVersions: "0-13",
  flexibleVersions: "9+",
  fields: [
    S.string("TransactionalId", { versions: "3+", nullableVersions: "3+" }),
    S.int16("Acks"),
    S.int32("TimeoutMs"),
    S.array("TopicData", [
      S.string("Name", { versions: "0-12", ignorable: true, mapKey: true }),
      S.uuid("TopicId", { versions: "13+", ignorable: true, mapKey: true }),
      S.array("PartitionData", [S.int32("Index"), S.records("Records", { nullableVersions: "0+" })])
    ])
  ]
})

export const Response = S.message({
  name: "ProduceResponse",
  apiKey: 0,
  type: "response",
  validVersions: "0-13",
  flexibleVersions: "9+",
  fields: [
    S.array("Responses", [
      S.string("Name", { versions: "0-12", ignorable: true, mapKey: true }),
      S.uuid("TopicId", { versions: "13+", ignorable: true, mapKey: true }),
      S.array("PartitionResponses", [
        S.int32("Index"),
        S.int16("ErrorCode"),
        S.int64("BaseOffset"),
        S.int64("LogAppendTimeMs", { versions: "2+", default: -1n, ignorable: true }),
        S.int64("LogStartOffset", { versions: "5+", default: -1n, ignorable: true }),
        S.array(
          "RecordErrors",
          [
            S.int32("BatchIndex", { versions: "8+" }),
            S.string("BatchIndexErrorMessage", { versions: "8+", nullableVersions: "8+" })
          ],
          { versions: "8+", ignorable: true }
        ),
        S.string("ErrorMessage", { versions: "8+", nullableVersions: "8+", ignorable: true }),
        S.struct(
          "CurrentLeader",
          [
            S.int32("LeaderId", { versions: "10+", default: -1 }),
            S.int32("LeaderEpoch", { versions: "10+", default: -1 })
          ],
          { versions: "10+", taggedVersions: "10+", tag: 0 }
        )
      ])
    ]),
    S.int32("ThrottleTimeMs", { versions: "1+", ignorable: true }),
    S.array(
      "NodeEndpoints",
      [
        S.int32("NodeId", { versions: "10+", mapKey: true }),
        S.string("Host", { versions: "10+" }),
        S.int32("Port", { versions: "10+" }),
        S.string("Rack", { versions: "10+", nullableVersions: "10+" })
      ],
      { versions: "10+", taggedVersions: "10+", tag: 0 }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 0, name: "Produce", request: Request, response: Response, versions: "3-12" })
