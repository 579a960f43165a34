/**
 * DescribeLogDirs (key 35): the log directories of one broker, with the size and lag of every
 * partition replica it holds in each (null topics = every partition). Layout only.
 *
 * DescribeLogDirsRequest => [Topics: Topic [Partitions]] (nullable)
 * DescribeLogDirsResponse => ThrottleTimeMs ErrorCode(v3+) [Results: ErrorCode LogDir
 *   [Topics: Name [Partitions: PartitionIndex PartitionSize OffsetLag IsFutureKey]]
 *   TotalBytes(v4+) UsableBytes(v4+) IsCordoned(v5+)]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeLogDirsRequest",
  apiKey: 35,
  type: "request",
  validVersions: "0-5",
  flexibleVersions: "2+",
  fields: [
    S.array("Topics", [S.string("Topic", { mapKey: true }), S.array("Partitions", "int32")], {
      nullableVersions: "0+"
    })
  ]
})

export const Response = S.message({
  name: "DescribeLogDirsResponse",
  apiKey: 35,
  type: "response",
  validVersions: "0-5",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode", { versions: "3+", ignorable: true }),
    S.array("Results", [
      S.int16("ErrorCode"),
      S.string("LogDir"),
      S.array("Topics", [
        S.string("Name"),
        S.array("Partitions", [
          S.int32("PartitionIndex"),
          S.int64("PartitionSize"),
          S.int64("OffsetLag"),
          S.bool("IsFutureKey")
        ])
      ]),
      S.int64("TotalBytes", { versions: "4+", ignorable: true, default: -1n }),
      S.int64("UsableBytes", { versions: "4+", ignorable: true, default: -1n }),
      S.bool("IsCordoned", { versions: "5+", ignorable: true, default: false })
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

/** Version 0 left Apache Kafka in 4.0; 1-5 are what Kafka 4.4 serves. */
export const api = Api.define({
  key: 35,
  name: "DescribeLogDirs",
  request: Request,
  response: Response,
  versions: "1-5"
})
