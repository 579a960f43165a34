import { describe, expect, it } from "@effect/vitest"
import * as ProducerIdManager from "../src/ProducerIdManager.js"

/** Blocks of 10 handed out in order, as the controller does; `next` is where the next one starts. */
const blocks = () => {
  const state = { next: 0n, asked: 0 }
  const allocateBlock = async () => {
    state.asked++
    const firstProducerId = state.next
    state.next += 10n
    return { firstProducerId, size: 10n }
  }
  return { state, allocateBlock }
}

describe("ProducerIdManager", () => {
  it("initIdempotent: a producer with its id keeps it at the next epoch (KIP-360); a new one or an exhausted epoch gets a new id", async () => {
    const { allocateBlock } = blocks()
    const m = new ProducerIdManager.ProducerIdManager({ allocateBlock, floor: () => -1n })
    expect(await m.initIdempotent(-1n, -1)).toEqual({ producerId: 0n, producerEpoch: 0 })
    expect(await m.initIdempotent(7n, 3)).toEqual({ producerId: 7n, producerEpoch: 4 })
    expect(await m.initIdempotent(7n, 32767)).toEqual({ producerId: 1n, producerEpoch: 0 })
  })

  it("hands out a block's ids in order, then takes the next block", async () => {
    const { state, allocateBlock } = blocks()
    const m = new ProducerIdManager.ProducerIdManager({ allocateBlock, floor: () => -1n })
    const ids: bigint[] = []
    for (let i = 0; i < 12; i++) ids.push(await m.allocate())
    expect(ids).toEqual([0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n, 11n])
    expect(state.asked).toBe(2)
  })

  it("gives up a block held below the floor for a new one, and skips the ids below a floor inside a block", async () => {
    const { state, allocateBlock } = blocks()
    let floor = -1n
    const m = new ProducerIdManager.ProducerIdManager({ allocateBlock, floor: () => floor })
    expect([await m.allocate(), await m.allocate()]).toEqual([0n, 1n])
    // The controller's floor at its next block: the held block [0, 10) is below it.
    state.next = 10n
    floor = 10n
    expect(await m.allocate()).toBe(10n)
    expect(state.asked).toBe(2)
    floor = 15n
    expect(await m.allocate()).toBe(15n)
  })

  it("asks once for concurrent callers and fails them all when the controller refuses, then asks again", async () => {
    let calls = 0
    const m = new ProducerIdManager.ProducerIdManager({
      allocateBlock: async () => {
        calls++
        if (calls === 1) throw new Error("AllocateProducerIds failed: STALE_BROKER_EPOCH")
        return { firstProducerId: 100n, size: 10n }
      },
      floor: () => -1n
    })
    const failed = await Promise.allSettled([m.allocate(), m.allocate()])
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"])
    expect(calls).toBe(1)
    expect(await m.allocate()).toBe(100n)
  })
})
