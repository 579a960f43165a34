/**
 * DescribeClusterMirrors (key 99, KIP-1279): per-partition mirror state and lag, and the last-mirror-
 * epoch (LME) lookup used on failback. Admin clients send it to every broker and merge the answers
 * (max LME per partition). Codec only.
 *
 * DescribeClusterMirrorsRequest => [MirrorNames] IncludeAuthorizedOperations
 *   tagged: 0 ClusterId, 1 LastMirrorEpochLookups [TopicId [Partitions]]
 * DescribeClusterMirrorsResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Mirrors: ErrorCode MirrorName AuthorizedOperations
 *     [Topics: TopicName [Partitions: PartitionIndex SourceOffset DestinationOffset Lag StateValue
 *       RetryAttempt ErrorMessage  tagged: 0 LagTimeMs]]
 *     tagged: 0 GroupSyncStatuses [GroupId State Detail TimeMs LastSyncedMs
 *       [Offsets: TopicName PartitionIndex SourceOffset Offset LeaderEpoch]]
 *     tagged: 1 AclSyncStatuses [State Detail TimeMs LastSyncedMs Synced Created Deleted]]
 *   tagged: 0 LookupResults [TopicId [Partitions: PartitionIndex LastMirrorEpoch]]
 *
 * LagTimeMs, GroupSyncStatuses and AclSyncStatuses are ours (tagged, ignorable): P-0721 peers skip them.
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "DescribeClusterMirrorsRequest",
  apiKey: 99,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    // Empty means every mirror.
    S.array("MirrorNames", "string"),
    S.bool("IncludeAuthorizedOperations", { default: false }),
    // The requesting cluster's own ID: selects the mirrors whose source it is, for the LME lookup.
    S.string("ClusterId", { nullableVersions: "0+", default: null, taggedVersions: "0+", tag: 0, ignorable: true }),
    S.array("LastMirrorEpochLookups", [S.uuid("TopicId"), S.array("Partitions", "int32")], {
      taggedVersions: "0+",
      tag: 1,
      ignorable: true
    })
  ]
})

export const Response = S.message({
  name: "DescribeClusterMirrorsResponse",
  apiKey: 99,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Mirrors", [
      S.int16("ErrorCode"),
      S.string("MirrorName"),
      // INT_MIN means "not requested".
      S.int32("AuthorizedOperations", { default: -2147483648 }),
      S.array("Topics", [
        S.string("TopicName"),
        S.array("Partitions", [
          S.int32("PartitionIndex"),
          // Offsets and lag are only filled while the partition is MIRRORING.
          S.int64("SourceOffset", { default: -1n }),
          S.int64("DestinationOffset", { default: -1n }),
          S.int64("Lag", { default: -1n }),
          // The state's name, e.g. "MIRRORING".
          S.string("StateValue"),
          // -1 marks a failure that is not retried.
          S.int16("RetryAttempt", { default: 0 }),
          S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
          // Ours, tagged: how long the partition has not been caught up with the source (ms); -1 unless MIRRORING.
          S.int64("LagTimeMs", { default: -1n, taggedVersions: "0+", tag: 0, ignorable: true })
        ])
      ]),
      // Ours, tagged: the consumer-group offset sync per group, from the broker running the mirror's
      // coordinator tasks (empty on the others).
      S.array(
        "GroupSyncStatuses",
        [
          S.string("GroupId"),
          // SYNCED, SKIPPED_ACTIVE, FILTERED, CLAMPED or FAILED.
          S.string("State"),
          // The destination group's state when skipped, the error when failed.
          S.string("Detail", { nullableVersions: "0+", default: null }),
          // When this status was recorded (ms since the epoch).
          S.int64("TimeMs"),
          // When offsets of the group were last committed on the destination; -1 never.
          S.int64("LastSyncedMs", { default: -1n }),
          S.array("Offsets", [
            S.string("TopicName"),
            S.int32("PartitionIndex"),
            // The offset committed on the source.
            S.int64("SourceOffset"),
            // The offset committed on the destination (differs from SourceOffset when clamped).
            S.int64("Offset"),
            S.int32("LeaderEpoch", { default: -1 })
          ])
        ],
        { taggedVersions: "0+", tag: 0, ignorable: true }
      ),
      // Ours, tagged: the ACL sync's last result (at most one entry), from the broker running the mirror's
      // coordinator tasks (empty on the others).
      S.array(
        "AclSyncStatuses",
        [
          // SYNCED, FAILED or DISABLED (an empty mirror.acls.include).
          S.string("State"),
          // The error when failed.
          S.string("Detail", { nullableVersions: "0+", default: null }),
          S.int64("TimeMs"),
          // When a run last completed; -1 never.
          S.int64("LastSyncedMs", { default: -1n }),
          // The filtered source set at the last completed run, and what that run created and deleted.
          S.int32("Synced"),
          S.int32("Created"),
          S.int32("Deleted")
        ],
        { taggedVersions: "0+", tag: 1, ignorable: true }
      )
    ]),
    S.array(
      "LookupResults",
      [
        S.uuid("TopicId"),
        S.array("Partitions", [S.int32("PartitionIndex"), S.int32("LastMirrorEpoch", { default: -1 })])
      ],
      { taggedVersions: "0+", tag: 0, ignorable: true }
    )
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 99,
  name: "DescribeClusterMirrors",
  request: Request,
  response: Response,
  versions: "0"
})
