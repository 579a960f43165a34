import { describe, expect, it } from "@effect/vitest"
import { ClientError } from "@clustermirror/client"
import type { DescribeClusterMirrors } from "@clustermirror/protocol"
import { Either } from "effect"
import * as LastMirrorEpochs from "../src/LastMirrorEpochs.js"

const TOPIC_ID = "q83vEjRWeJCrze8SNFZ4kA"

const answer = (
  epochs: ReadonlyArray<readonly [number, number]>,
  mirrors: DescribeClusterMirrors.Response["mirrors"] = []
): DescribeClusterMirrors.Response =>
  ({
    throttleTimeMs: 0,
    errorCode: 0,
    errorMessage: null,
    mirrors,
    lookupResults: [
      {
        topicId: TOPIC_ID,
        partitions: epochs.map(([partitionIndex, lastMirrorEpoch]) => ({ partitionIndex, lastMirrorEpoch }))
      }
    ]
  }) as unknown as DescribeClusterMirrors.Response

const back = (mirrorName: string, partitions: ReadonlyArray<readonly [number, string]>) =>
  [
    {
      mirrorName,
      topics: [
        {
          topicName: "t",
          partitions: partitions.map(([partitionIndex, stateValue]) => ({ partitionIndex, stateValue }))
        }
      ]
    }
  ] as unknown as DescribeClusterMirrors.Response["mirrors"]

const lookup = { topic: "t", topicId: TOPIC_ID, partitions: [0, 1, 2] }

describe("LastMirrorEpochs", () => {
  it("merges the last mirror epochs of every source broker by max per partition", () => {
    const found = LastMirrorEpochs.merge(
      [
        Either.right(
          answer([
            [0, 3],
            [1, 7]
          ])
        ),
        Either.right(
          answer([
            [0, 5],
            [1, 2]
          ])
        )
      ],
      new Set(),
      new Set(["t"]),
      new Map()
    )
    expect(Either.isRight(found)).toBe(true)
    const info = LastMirrorEpochs.truncationInfo(Either.getOrThrow(found), lookup)
    expect([...info.lastMirrorEpochs]).toEqual([
      [0, 5],
      [1, 7],
      [2, -1]
    ])
    expect(info.refusal).toBeNull()
  })

  it("skips brokers without KIP-1279 and fails on any other broker failure", () => {
    const unsupported = new ClientError.UnsupportedVersion({ api: "DescribeClusterMirrors", version: 0 } as never)
    const skipped = LastMirrorEpochs.merge(
      [Either.left(unsupported), Either.right(answer([[0, 4]]))],
      new Set(),
      new Set(["t"]),
      new Map()
    )
    expect(Either.getOrThrow(skipped).supported).toBe(true)
    const none = LastMirrorEpochs.merge([Either.left(unsupported)], new Set(), new Set(["t"]), new Map())
    expect(Either.getOrThrow(none).supported).toBe(false)
    const failed = LastMirrorEpochs.merge(
      [Either.right(answer([[0, 4]])), Either.left(new Error("connection refused"))],
      new Set(),
      new Set(["t"]),
      new Map()
    )
    expect(Either.isLeft(failed) && failed.left.message).toBe("connection refused")
  })

  it("refuses a loop first, then a source mirror of the topic that has not stopped (failback)", () => {
    const listed = LastMirrorEpochs.loopsOf(
      {
        mirrors: [
          { mirrorName: "back", sourceClusterId: "dest", topicNames: ["t"] },
          { mirrorName: "other", sourceClusterId: "elsewhere", topicNames: ["t"] }
        ]
      } as never,
      "dest",
      new Set(["t"])
    )
    expect([...listed.back]).toEqual(["back"])
    expect(listed.loops.get("t")).toBe("back")

    const notStopped = LastMirrorEpochs.merge(
      [
        Either.right(
          answer(
            [],
            back("back", [
              [0, "STOPPED"],
              [1, "MIRRORING"]
            ])
          )
        )
      ],
      listed.back,
      new Set(["t"]),
      new Map()
    )
    expect(LastMirrorEpochs.truncationInfo(Either.getOrThrow(notStopped), lookup).refusal).toBe(
      "Source mirror(s) back have not stopped for partition(s) t-1 (MIRRORING)"
    )
    const loop = LastMirrorEpochs.merge([Either.right(answer([]))], listed.back, new Set(["t"]), listed.loops)
    expect(LastMirrorEpochs.truncationInfo(Either.getOrThrow(loop), lookup).refusal).toBe(
      "Detected mirror loop for mirror:back"
    )
  })

  it("asks for the union of the partitions of every lookup of a topic", () => {
    const request = LastMirrorEpochs.requestOf("dest", [
      { topic: "t", topicId: TOPIC_ID, partitions: [0, 1] },
      { topic: "t", topicId: TOPIC_ID, partitions: [1, 2] }
    ])
    expect(request.clusterId).toBe("dest")
    expect(request.lastMirrorEpochLookups).toEqual([{ topicId: TOPIC_ID, partitions: [0, 1, 2] }])
  })
})
