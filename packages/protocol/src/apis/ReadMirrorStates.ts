/**
 * ReadMirrorStates (key 100, KIP-1279): a destination broker reads mirror partition states from the
 * broker that coordinates them (the leader of their `__mirror_state` partition). Codec only.
 *
 * ReadMirrorStatesRequest => MirrorName [Topics: Name [Partitions: PartitionIndex]]
 *   partition tagged: 0 LeaderEpoch, 1 StateEpoch
 * ReadMirrorStatesResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Topics: Name [Partitions: PartitionIndex LastMirrorEpoch State ErrorCode PreviousState RetryAttempt
 *     ErrorMessage]]
 *   partition tagged: 0 StateEpoch
 *
 * The fencing fields (LeaderEpoch, StateEpoch) are our addition from the later prototype revisions.
 * They are tagged so that peers speaking the July 2026 prototype wire format ignore them and we read
 * their messages with the defaults (-1: no check).
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "ReadMirrorStatesRequest",
  apiKey: 100,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        // The requester's leader epoch of the data partition; -1 skips the check.
        S.int32("LeaderEpoch", { default: -1, taggedVersions: "0+", tag: 0, ignorable: true }),
        // The state epoch the requester last saw; -1 skips the check.
        S.int32("StateEpoch", { default: -1, taggedVersions: "0+", tag: 1, ignorable: true })
      ])
    ])
  ]
})

export const Response = S.message({
  name: "ReadMirrorStatesResponse",
  apiKey: 100,
  type: "response",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int32("ThrottleTimeMs"),
    S.int16("ErrorCode"),
    S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        S.int32("LastMirrorEpoch", { default: -1 }),
        // A MirrorPartitionState byte; UNKNOWN (-1) when nothing is stored.
        S.int8("State", { default: -1 }),
        // NOT_COORDINATOR when this broker does not coordinate the partition.
        S.int16("ErrorCode"),
        // The prototype's schema default (16) is not a state; the field is always written, and -1
        // (UNKNOWN) is what "no previous state" means.
        S.int8("PreviousState", { default: -1 }),
        // -1 marks a failure that is not retried.
        S.int16("RetryAttempt", { default: 0 }),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
        S.int32("StateEpoch", { default: -1, taggedVersions: "0+", tag: 0, ignorable: true })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 100,
  name: "ReadMirrorStates",
  request: Request,
  response: Response,
  versions: "0"
})
