/**
 * WriteMirrorStates (key 101, KIP-1279): a destination broker asks the coordinator of mirror
 * partitions to persist state transitions and last mirror epochs in `__mirror_state`. Codec only.
 *
 * WriteMirrorStatesRequest => MirrorName [Topics: Name [Partitions: PartitionIndex LastMirrorEpoch State]]
 *   [StoppedTopics]
 *   partition tagged: 0 LeaderEpoch, 1 StateEpoch, 2 PreviousState, 3 RetryAttempt, 4 ErrorMessage
 * WriteMirrorStatesResponse => ThrottleTimeMs ErrorCode ErrorMessage
 *   [Topics: Name [Partitions: PartitionIndex ErrorCode ErrorMessage]]
 *   partition tagged: 0 StateEpoch
 *
 * The fencing fields are our addition from the later prototype revisions, tagged so that peers
 * speaking the July 2026 prototype wire format still interoperate (absent means -1: no check).
 */
import * as Api from "../Api.js"
import * as S from "../Spec.js"

export const Request = S.message({
  name: "WriteMirrorStatesRequest",
  apiKey: 101,
  type: "request",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.string("MirrorName"),
    S.array("Topics", [
      S.string("Name"),
      S.array("Partitions", [
        S.int32("PartitionIndex"),
        // -1 writes no last-mirror-epoch record.
        S.int32("LastMirrorEpoch", { default: -1 }),
        // UNKNOWN (-1) writes no state record; it is also the default so that an omitted state
        // never persists a transition by accident.
        S.int8("State", { default: -1 }),
        // The writer's leader epoch of the data partition; -1 skips the check.
        S.int32("LeaderEpoch", { default: -1, taggedVersions: "0+", tag: 0, ignorable: true }),
        // The state epoch the writer expects to replace; -1 skips the check.
        S.int32("StateEpoch", { default: -1, taggedVersions: "0+", tag: 1, ignorable: true }),
        // The failure info the state record stores (KIP-1279 §3.4): the state before FAILED (-1: none),
        // the retry attempt (-1: not retryable) and the reason. The writer computes them; absent, the
        // coordinator derives them from what it holds.
        S.int8("PreviousState", { default: -1, taggedVersions: "0+", tag: 2, ignorable: true }),
        S.int16("RetryAttempt", { default: 0, taggedVersions: "0+", tag: 3, ignorable: true }),
        S.string("ErrorMessage", {
          nullableVersions: "0+",
          default: null,
          taggedVersions: "0+",
          tag: 4,
          ignorable: true
        })
      ])
    ]),
    // Sent empty and ignored by the prototype; kept for the wire format.
    S.array("StoppedTopics", "string")
  ]
})

export const Response = S.message({
  name: "WriteMirrorStatesResponse",
  apiKey: 101,
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
        S.int16("ErrorCode"),
        S.string("ErrorMessage", { nullableVersions: "0+", default: null }),
        // The partition's state epoch after the write.
        S.int32("StateEpoch", { default: -1, taggedVersions: "0+", tag: 0, ignorable: true })
      ])
    ])
  ]
})

export type Request = S.TypeOf<typeof Request>
export type Response = S.TypeOf<typeof Response>

export const api = Api.define({
  key: 101,
  name: "WriteMirrorStates",
  request: Request,
  response: Response,
  versions: "0"
})
