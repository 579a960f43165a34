/**
 * FetchSnapshot (key 59, KIP-630): a KRaft follower whose fetch offset is below the leader's log
 * start fetches the leader's snapshot, a byte range at a time. Layout only.
 *
 * FetchSnapshotRequest => ReplicaId MaxBytes [Topics: Name [Partitions: Partition CurrentLeaderEpoch
 *   SnapshotId{EndOffset Epoch} Position tagged(v1+): 0 ReplicaDirectoryId]] tagged: 0 ClusterId
 * FetchSnapshotResponse => ThrottleTimeMs ErrorCode [Topics: Name [Partitions: Index ErrorCode
 *   SnapshotId{EndOffset Epoch} Size Position UnalignedRecords tagged: 0 CurrentLeader{LeaderId
 *   LeaderEpoch}]] tagged(v1+): 0 NodeEndpoints [NodeId Host Port]
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "FetchSnapshotRequest",
  apiKey: 59,
  type: "request",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.string("ClusterId", { nullableVersions: "0+", default: null, taggedVersions: "0+", tag: 0 }),
    S.int32("ReplicaId", { default: -1 }),
    S.int32("MaxBytes", { default: 0x7fffffff }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("Partition"),
        S.int32("CurrentLeaderEpoch"),
        S.struct("SnapshotId", [S.int64("EndOffset"), S.int32("Epoch")]),
        S.int64("Position"),
        S.uuid("ReplicaDirectoryId", { versions: "1+", taggedVersions: "1+", tag: 0, ignorable: true })
      ])
    ])
  ]
})

export const Response = S.message({
  name: "FetchSnapshotResponse",
  apiKey: 59,
  type: "response",
  validVersions: "0-1",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs", { ignorable: true }),
    S.int16("ErrorCode"),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("Index"),
        S.int16("ErrorCode"),
        S.struct("SnapshotId", [S.int64("EndOffset"), S.int32("Epoch")]),
        S.struct("CurrentLeader", [S.int32("LeaderId"), S.int32("LeaderEpoch")], { taggedVersions: "0+", tag: 0 }),
        S.int64("Size"),
        S.int64("Position"),
        S.records("UnalignedRecords")
      ])
    ]),
    S.array(
      "NodeEndpoints",
      [
        S.int32("NodeId", { versions: "1+", mapKey: true }),
        S.string("Host", { versions: "1+" }),
        S.uint16("Port", { versions: "1+" })
      ],
      { versions: "1+", taggedVersions: "1+", tag: 0 }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({ key: 59, name: "FetchSnapshot", request: Request, response: Response, versions: "0-1" })
