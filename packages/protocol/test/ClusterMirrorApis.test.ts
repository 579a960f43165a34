import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as Api from "../src/Api.js"
import * as Apis from "../src/Apis.js"
import {
  BumpLeaderEpochs,
  DescribeClusterMirrors,
  ReadMirrorStates,
  RecoverMirrorTopics,
  StartMirrorTopics,
  WriteMirrorStates
} from "../src/index.js"
import * as S from "../src/Spec.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
// Bytes 00..0f as a Kafka UUID string.
const TOPIC_ID = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex").toString("base64url")

describe("KIP-1279 APIs", () => {
  it("registers keys 94-106 except 97, each at version 0 only", () => {
    const keys = Apis.all.map((a) => a.key).filter((k) => k >= 94 && k <= 107)
    expect([...keys].sort((a, b) => a - b)).toEqual([94, 95, 96, 98, 99, 100, 101, 102, 103, 104, 105, 106])
    for (const k of keys) {
      const api = Apis.byKey.get(k)!
      expect([api.minVersion, api.maxVersion]).toEqual([0, 0])
      expect(api.request.isFlexible(0) && api.response.isFlexible(0)).toBe(true)
    }
  })

  it("StartMirrorTopicsRequest: non-tagged fields in order, then IncludePatterns in the tagged section", () => {
    const bytes = Either.getOrThrow(
      StartMirrorTopics.Request.encode(0, {
        mirrorName: "m1",
        topics: [{ topicId: TOPIC_ID, topicName: "t", numPartitions: 3 }],
        includePatterns: ["a.*"],
        stateValidationOffset: 42n
      })
    )
    expect(hex(bytes)).toBe(
      "036d31" + // MirrorName: compact string "m1"
        "02" + // Topics: one element
        "000102030405060708090a0b0c0d0e0f" + // TopicId
        "0274" + // TopicName "t"
        "00000003" + // NumPartitions
        "00" + // topic's tagged section: empty
        "000000000000002a" + // StateValidationOffset
        "01" + // one tagged field
        "00" + // tag 0 (IncludePatterns)
        "05" + // its size
        "02" + // compact array of one
        "04612e2a" // "a.*"
    )
    const back = Either.getOrThrow(StartMirrorTopics.Request.decode(0, bytes))
    expect(back.includePatterns).toEqual(["a.*"])
    expect(back.excludePatterns).toEqual([])
  })

  it("StartMirrorTopicsRequest: both pattern lists go in ascending tag order; defaults are omitted", () => {
    const both = Either.getOrThrow(
      StartMirrorTopics.Request.encode(0, { mirrorName: "m", includePatterns: ["x"], excludePatterns: ["y"] })
    )
    // "m", no topics, offset -1, two tags: 0 => ["x"], 1 => ["y"].
    expect(hex(both)).toBe("026d" + "01" + "ffffffffffffffff" + "02" + "0003020278" + "0103020279")
    const none = Either.getOrThrow(StartMirrorTopics.Request.encode(0, { mirrorName: "m" }))
    expect(hex(none)).toBe("026d" + "01" + "ffffffffffffffff" + "00")
  })

  it("StartMirrorTopicsRequest: DefaultReplicationFactor is tag 2, omitted at -1", () => {
    const stamped = Either.getOrThrow(
      StartMirrorTopics.Request.encode(0, { mirrorName: "m", excludePatterns: ["y"], defaultReplicationFactor: 3 })
    )
    // "m", no topics, offset -1, two tags: 1 => ["y"], 2 => int16 3.
    expect(hex(stamped)).toBe("026d" + "01" + "ffffffffffffffff" + "02" + "0103020279" + "02020003")
    expect(Either.getOrThrow(StartMirrorTopics.Request.decode(0, stamped)).defaultReplicationFactor).toBe(3)
    const unset = Either.getOrThrow(StartMirrorTopics.Request.encode(0, { mirrorName: "m" }))
    expect(Either.getOrThrow(StartMirrorTopics.Request.decode(0, unset)).defaultReplicationFactor).toBe(-1)
  })

  it("StartMirrorTopicsRequest frames with request header v2 (compact body, int16 client id, tags)", () => {
    const frame = Either.getOrThrow(
      Api.encodeRequest(StartMirrorTopics.api, 0, 7, "c", { mirrorName: "m", stateValidationOffset: 5n })
    )
    expect(hex(frame)).toBe(
      "00000018" + "005f" + "0000" + "00000007" + "000163" + "00" + "026d" + "01" + "0000000000000005" + "00"
    )
  })

  it("Read/WriteMirrorStates fencing fields are tagged: absent at -1, so the prototype's layout is unchanged", () => {
    const plain = Either.getOrThrow(
      WriteMirrorStates.Request.encode(0, {
        mirrorName: "m",
        topics: [{ name: "t", partitions: [{ partitionIndex: 1, lastMirrorEpoch: 4, state: 6 }] }]
      })
    )
    // m, [t, [1, 4, STOPPED, no tags], no tags], StoppedTopics [], no tags
    expect(hex(plain)).toBe("026d" + "02" + "0274" + "02" + "00000001" + "00000004" + "06" + "00" + "00" + "01" + "00")

    const fenced = Either.getOrThrow(
      WriteMirrorStates.Request.encode(0, {
        mirrorName: "m",
        topics: [
          {
            name: "t",
            partitions: [{ partitionIndex: 1, lastMirrorEpoch: 4, state: 6, leaderEpoch: 9, stateEpoch: 2 }]
          }
        ]
      })
    )
    expect(hex(fenced)).toBe(
      "026d" +
        "02" +
        "0274" +
        "02" +
        "00000001" +
        "00000004" +
        "06" +
        "02" +
        "000400000009" +
        "010400000002" +
        "00" +
        "01" +
        "00"
    )
    const back = Either.getOrThrow(WriteMirrorStates.Request.decode(0, fenced))
    expect(back.topics[0]!.partitions[0]).toEqual({
      partitionIndex: 1,
      lastMirrorEpoch: 4,
      state: 6,
      leaderEpoch: 9,
      stateEpoch: 2,
      previousState: -1,
      retryAttempt: 0,
      errorMessage: null
    })
    const old = Either.getOrThrow(WriteMirrorStates.Request.decode(0, plain))
    expect(old.topics[0]!.partitions[0]!.leaderEpoch).toBe(-1)
    expect(old.topics[0]!.partitions[0]!.stateEpoch).toBe(-1)
  })

  it("WriteMirrorStates carries a FAILED partition's previous state, attempt and reason as tags 2-4", () => {
    const failed = Either.getOrThrow(
      WriteMirrorStates.Request.encode(0, {
        mirrorName: "m",
        topics: [
          {
            name: "t",
            partitions: [
              { partitionIndex: 0, lastMirrorEpoch: -1, state: 7, previousState: 2, retryAttempt: 3, errorMessage: "e" }
            ]
          }
        ]
      })
    )
    expect(hex(failed)).toBe(
      "026d" +
        "02" +
        "0274" +
        "02" +
        "00000000" +
        "ffffffff" +
        "07" +
        "03" +
        "020102" + // tag 2, 1 byte: PreviousState MIRRORING
        "03020003" + // tag 3, 2 bytes: RetryAttempt 3
        "04020265" + // tag 4, 2 bytes: ErrorMessage "e"
        "00" +
        "01" +
        "00"
    )
    const back = Either.getOrThrow(WriteMirrorStates.Request.decode(0, failed))
    expect(back.topics[0]!.partitions[0]).toMatchObject({ previousState: 2, retryAttempt: 3, errorMessage: "e" })
  })

  it("BumpLeaderEpochsRequest carries MinProducerId as tag 0, absent at -1", () => {
    const topics = [{ topicId: TOPIC_ID, partitions: [{ partitionIndex: 2, minLeaderEpoch: 5 }] }]
    const plain = Either.getOrThrow(BumpLeaderEpochs.Request.encode(0, { topics }))
    // [TopicId, [2, 5, no tags], no tags], no tags
    const body = "02" + "000102030405060708090a0b0c0d0e0f" + "02" + "00000002" + "00000005" + "00" + "00"
    expect(hex(plain)).toBe(body + "00")
    const floored = Either.getOrThrow(BumpLeaderEpochs.Request.encode(0, { topics, minProducerId: 4242n }))
    // one tag: 0, 8 bytes, int64 4242
    expect(hex(floored)).toBe(body + "01" + "00" + "08" + "0000000000001092")
    expect(Either.getOrThrow(BumpLeaderEpochs.Request.decode(0, floored)).minProducerId).toBe(4242n)
    expect(Either.getOrThrow(BumpLeaderEpochs.Request.decode(0, plain)).minProducerId).toBe(-1n)
  })

  it("ReadMirrorStatesResponse carries StateEpoch as tag 0 of a partition result", () => {
    const bytes = Either.getOrThrow(
      ReadMirrorStates.Response.encode(0, {
        topics: [{ name: "t", partitions: [{ partitionIndex: 0, state: 2, stateEpoch: 3 }] }]
      })
    )
    expect(hex(bytes)).toBe(
      "00000000" + // ThrottleTimeMs
        "0000" + // ErrorCode
        "00" + // ErrorMessage null
        "02" +
        "0274" +
        "02" +
        "00000000" + // PartitionIndex
        "ffffffff" + // LastMirrorEpoch -1
        "02" + // State MIRRORING
        "0000" + // ErrorCode
        "ff" + // PreviousState -1
        "0000" + // RetryAttempt
        "00" + // ErrorMessage null
        "01" +
        "000400000003" + // tag 0: StateEpoch 3
        "00" +
        "00"
    )
  })

  it("RecoverMirrorTopicsRequest carries AcceptDataLoss as tag 0: absent when false, so old peers read it", () => {
    const plain = Either.getOrThrow(
      RecoverMirrorTopics.Request.encode(0, { mirrorName: "m", topics: [{ topicName: "t" }] })
    )
    // m, [t, no tags], no tags
    expect(hex(plain)).toBe("026d" + "02" + "0274" + "00" + "00")
    expect(Either.getOrThrow(RecoverMirrorTopics.Request.decode(0, plain)).acceptDataLoss).toBe(false)

    const accepting = Either.getOrThrow(
      RecoverMirrorTopics.Request.encode(0, { mirrorName: "m", topics: [{ topicName: "t" }], acceptDataLoss: true })
    )
    expect(hex(accepting)).toBe(
      "026d" +
        "02" +
        "0274" +
        "00" +
        "01" + // one tagged field
        "000101" // tag 0, 1 byte: AcceptDataLoss true
    )
    expect(Either.getOrThrow(RecoverMirrorTopics.Request.decode(0, accepting))).toEqual({
      mirrorName: "m",
      topics: [{ topicName: "t" }],
      acceptDataLoss: true
    })
  })

  it("RecoverMirrorTopics answers under key 106: responses carry no key of their own", () => {
    expect(RecoverMirrorTopics.api.key).toBe(106)
    expect(RecoverMirrorTopics.Response.apiKey).toBe(106)
    expect(Apis.byKey.has(107)).toBe(false)
    const chunks = Either.getOrThrow(
      Api.encodeResponseChunks(RecoverMirrorTopics.api, 0, 3, { topics: [{ topicName: "t", errorCode: 0 }] })
    )
    const frame = Buffer.concat(chunks).subarray(4)
    const back = Either.getOrThrow(Api.decodeResponse(RecoverMirrorTopics.api, 0, frame))
    expect(back.correlationId).toBe(3)
    expect(back.body.topics).toEqual([{ topicName: "t", errorCode: 0, errorMessage: null }])
  })

  describe("DescribeClusterMirrorsResponse GroupSyncStatuses (tag 0 of a mirror)", () => {
    // The prototype's layout of the response: no tags of ours.
    const P0721Response = S.message({
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
          S.int32("AuthorizedOperations", { default: -2147483648 }),
          S.array("Topics", [
            S.string("TopicName"),
            S.array("Partitions", [
              S.int32("PartitionIndex"),
              S.int64("SourceOffset", { default: -1n }),
              S.int64("DestinationOffset", { default: -1n }),
              S.int64("Lag", { default: -1n }),
              S.string("StateValue"),
              S.int16("RetryAttempt", { default: 0 }),
              S.string("ErrorMessage", { nullableVersions: "0+", default: null })
            ])
          ])
        ])
      ]
    })
    const mirror = { errorCode: 0, mirrorName: "dr", topics: [] }
    const statuses = [
      {
        groupId: "billing",
        state: "CLAMPED",
        detail: null,
        timeMs: 1_700_000_000_123n,
        lastSyncedMs: 1_700_000_000_123n,
        offsets: [{ topicName: "orders", partitionIndex: 2, sourceOffset: 5n, offset: 40n, leaderEpoch: 3 }]
      },
      { groupId: "live", state: "SKIPPED_ACTIVE", detail: "Stable", timeMs: 7n, lastSyncedMs: -1n, offsets: [] }
    ]

    it("is absent when empty: the bytes are the prototype's", () => {
      const ours = Either.getOrThrow(DescribeClusterMirrors.Response.encode(0, { mirrors: [mirror] }))
      const theirs = Either.getOrThrow(P0721Response.encode(0, { mirrors: [mirror] }))
      expect(hex(ours)).toBe(hex(theirs))
    })

    it("round-trips, and a peer without the tag decodes the rest unchanged", () => {
      const bytes = Either.getOrThrow(
        DescribeClusterMirrors.Response.encode(0, { mirrors: [{ ...mirror, groupSyncStatuses: statuses }] })
      )
      const back = Either.getOrThrow(DescribeClusterMirrors.Response.decode(0, bytes))
      expect(back.mirrors[0]!.groupSyncStatuses).toEqual(statuses)
      expect(back.mirrors[0]!.mirrorName).toBe("dr")
      const old = Either.getOrThrow(P0721Response.decode(0, bytes))
      expect(old.mirrors).toEqual([{ ...mirror, authorizedOperations: -2147483648 }])
    })
  })
})
