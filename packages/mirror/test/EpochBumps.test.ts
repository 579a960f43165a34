import { describe, expect, it } from "@effect/vitest"
import type { BumpLeaderEpochs } from "@clustermirror/protocol"
import { Duration, Effect, Exit, Fiber, TestClock } from "effect"
import * as EpochBumps from "../src/EpochBumps.js"

const ok: BumpLeaderEpochs.Response = { throttleTimeMs: 0, errorCode: 0, errorMessage: null, topics: [] } as never

describe("EpochBumps", () => {
  it("asks once per partition with the highest minimum of the batch", () => {
    expect(
      EpochBumps.requestOf([
        { topicId: "a", partition: 0, minLeaderEpoch: 3 },
        { topicId: "a", partition: 0, minLeaderEpoch: 5 },
        { topicId: "a", partition: 1, minLeaderEpoch: 1 },
        { topicId: "b", partition: 0, minLeaderEpoch: 2 }
      ])
    ).toEqual({
      topics: [
        {
          topicId: "a",
          partitions: [
            { partitionIndex: 0, minLeaderEpoch: 5 },
            { partitionIndex: 1, minLeaderEpoch: 1 }
          ]
        },
        { topicId: "b", partitions: [{ partitionIndex: 0, minLeaderEpoch: 2 }] }
      ],
      minProducerId: -1n
    })
  })

  it("asks for the highest producer id floor of the batch", () => {
    expect(
      EpochBumps.requestOf([
        { topicId: "a", partition: 0, minLeaderEpoch: 3, minProducerId: 40n },
        { topicId: "a", partition: 1, minLeaderEpoch: 3, minProducerId: 4321n },
        { topicId: "b", partition: 0, minLeaderEpoch: 2 }
      ]).minProducerId
    ).toBe(4321n)
  })

  it.effect(
    "with a producer id, resolves once the image shows the floor above it too, even when the epoch already is",
    () =>
      Effect.gen(function* () {
        let floor = -1n
        const requests: Array<BumpLeaderEpochs.Request> = []
        const options = {
          request: async (r: BumpLeaderEpochs.Request) => {
            requests.push(r)
            return ok
          },
          catchUp: async () => {},
          epochOf: () => 9,
          floor: () => floor
        }
        const bump = { topicId: "a", partition: 0, minLeaderEpoch: 4, minProducerId: 4321n }
        expect(EpochBumps.isVisible(options, bump)).toBe(false)
        const fiber = yield* Effect.fork(EpochBumps.run(options, [bump]))
        yield* TestClock.adjust(Duration.millis(EpochBumps.POLL_MS * 3))
        expect(fiber.unsafePoll()).toBeNull()
        expect(requests.map((r) => r.minProducerId)).toEqual([4321n])
        floor = 4322n
        yield* TestClock.adjust(Duration.millis(EpochBumps.POLL_MS))
        expect(Exit.isSuccess(yield* Fiber.await(fiber))).toBe(true)
        expect(EpochBumps.isVisible(options, bump)).toBe(true)
      })
  )

  it.effect("resolves once the bumped epoch shows in the image", () =>
    Effect.gen(function* () {
      let epoch = 4
      const fiber = yield* Effect.fork(
        EpochBumps.run({ request: async () => ok, catchUp: async () => {}, epochOf: () => epoch, floor: () => -1n }, [
          { topicId: "a", partition: 0, minLeaderEpoch: 4 }
        ])
      )
      yield* TestClock.adjust(Duration.millis(EpochBumps.POLL_MS * 3))
      expect(fiber.unsafePoll()).toBeNull()
      epoch = 5
      yield* TestClock.adjust(Duration.millis(EpochBumps.POLL_MS))
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isSuccess(exit)).toBe(true)
    })
  )

  it.effect("fails when the bumped epoch does not reach this broker in time", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(
        EpochBumps.run({ request: async () => ok, catchUp: async () => {}, epochOf: () => 4, floor: () => -1n }, [
          { topicId: "a", partition: 0, minLeaderEpoch: 4 }
        ])
      )
      yield* TestClock.adjust(Duration.millis(EpochBumps.PROPAGATION_TIMEOUT_MS))
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain("did not reach this broker")
    })
  )

  it.effect("fails with the controller's refusal", () =>
    Effect.gen(function* () {
      const refused = { ...ok, errorCode: 41, errorMessage: "not the controller" } as BumpLeaderEpochs.Response
      const exit = yield* Effect.exit(
        EpochBumps.run({ request: async () => refused, catchUp: async () => {}, epochOf: () => 4, floor: () => -1n }, [
          { topicId: "a", partition: 0, minLeaderEpoch: 4 }
        ])
      )
      expect(Exit.isFailure(exit) && String(exit.cause)).toContain("BumpLeaderEpochs: not the controller")
    })
  )

  it("batches the bumps of one turn into one request and skips those already past", async () => {
    const requests: Array<BumpLeaderEpochs.Request> = []
    let epoch = 4
    const bump = EpochBumps.make({
      request: async (r) => {
        requests.push(r)
        epoch = 9
        return ok
      },
      catchUp: async () => {},
      epochOf: (topicId) => (topicId === "past" ? 10 : epoch),
      floor: () => -1n,
      defer: (f) => queueMicrotask(f)
    })
    await Promise.all([
      bump([{ topicId: "a", partition: 0, minLeaderEpoch: 4 }]),
      bump([
        { topicId: "a", partition: 1, minLeaderEpoch: 4 },
        { topicId: "past", partition: 0, minLeaderEpoch: 4 }
      ])
    ])
    expect(requests).toHaveLength(1)
    expect(requests[0]!.topics).toEqual([
      {
        topicId: "a",
        partitions: [
          { partitionIndex: 0, minLeaderEpoch: 4 },
          { partitionIndex: 1, minLeaderEpoch: 4 }
        ]
      }
    ])
  })
})
