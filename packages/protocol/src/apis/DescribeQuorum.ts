/**
 * DescribeQuorum (key 55): the state of the metadata quorum (leader, epoch, high watermark, voters
 * and observers with their log end offsets). Layout only.
 *
 * DescribeQuorumRequest => [Topics: TopicName [Partitions: PartitionIndex]]
 * DescribeQuorumResponse => ErrorCode ErrorMessage(v2+) [Topics: TopicName [Partitions: PartitionIndex
 *   ErrorCode ErrorMessage(v2+) LeaderId LeaderEpoch HighWatermark [CurrentVoters: ReplicaState]
 *   [Observers: ReplicaState]]] [Nodes: NodeId [Listeners: Name Host Port]](v2+)
 *   ReplicaState => ReplicaId ReplicaDirectoryId(v2+) LogEndOffset LastFetchTimestamp(v1+)
 *     LastCaughtUpTimestamp(v1+)
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeQuorumRequest",
  apiKey: 55,
  type: "request",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [S.array("Topics", [S.string("TopicName"), S.array("Partitions", [S.int32("PartitionIndex")])])]
})

/** Kafka's common struct `ReplicaState`, used by both voter and observer lists. */
const ReplicaState = [
  S.int32("ReplicaId"),
  S.uuid("ReplicaDirectoryId", { versions: "2+" }),
  S.int64("LogEndOffset"),
  S.int64("LastFetchTimestamp", { versions: "1+", default: -1n, ignorable: true }),
  S.int64("LastCaughtUpTimestamp", { versions: "1+", default: -1n, ignorable: true })
] as const

export const Response = S.message({
  name: "DescribeQuorumResponse",
  apiKey: 55,
  type: "response",
  validVersions: "0-2",
  flexibleVersions: "0+",
  fields: [
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { versions: "2+", nullableVersions: "2+", default: null, ignorable: true }),
    S.array("Topics", [
      S.string("TopicName"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { versions: "2+", nullableVersions: "2+", default: null, ignorable: true }),
        S.int32("LeaderId"),
        S.int32("LeaderEpoch"),
        S.int64("HighWatermark"),
        S.array("CurrentVoters", ReplicaState),
        S.array("Observers", ReplicaState)
      ])
    ]),
    S.array(
      "Nodes",
      [
        S.int32("NodeId", { versions: "2+", mapKey: true }),
        S.array(
          "Listeners",
          [
            S.string("Name", { versions: "2+", mapKey: true }),
            S.string("Host", { versions: "2+" }),
            S.uint16("Port", { versions: "2+" })
          ],
          { versions: "2+" }
        )
      ],
      { versions: "2+" }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 55,
  name: "DescribeQuorum",
  request: Request,
  response: Response,
  versions: "0-2"
})
