/**
 * AlterReplicaLogDirs (key 34): move partition replicas of one broker to another of its log
 * directories. Layout only.
 *
 * AlterReplicaLogDirsRequest => [Dirs: Path [Topics: Name [Partitions]]]
 * AlterReplicaLogDirsResponse => ThrottleTimeMs [Results: TopicName [Partitions: PartitionIndex ErrorCode]]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "AlterReplicaLogDirsRequest",
  apiKey: 34,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.array("Dirs", [
      S.string("Path", { mapKey: true }),
      S.array("Topics", [S.string("Name", { mapKey: true }), S.array("Partitions", "int32")])
    ])
  ]
})

export const Response = S.message({
  name: "AlterReplicaLogDirsResponse",
  apiKey: 34,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "2+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.array("Results", [
      S.string("TopicName"),
      S.array("Partitions", [S.int32("PartitionIndex"), S.int16("ErrorCode")])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

/** Version 0 left Apache Kafka in 4.0; 1-2 are what Kafka 4.4 serves. */
export const api = Api.define({
  key: 34,
  name: "AlterReplicaLogDirs",
  request: Request,
  response: Response,
  versions: "1-2"
})
