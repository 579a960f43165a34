import { describe, expect, it } from "@effect/vitest"
import { RecordBatch } from "@clustermirror/protocol"
import * as ReplicaCheck from "../src/ReplicaCheck.js"

/** A log of `n` one-record batches at offsets 0..n-1 in leader epoch `epoch`. */
const log = (n: number, epoch = 0): Buffer =>
  Buffer.concat(
    Array.from({ length: n }, (_, i) => {
      const b = RecordBatch.build({ records: [{ key: null, value: Buffer.from(`v-${i}`) }], timestamp: 1_000 + i })
      RecordBatch.setBaseOffset(b, i)
      RecordBatch.setPartitionLeaderEpoch(b, epoch)
      return b
    })
  )

describe("ReplicaCheck", () => {
  it("passes replicas with the same bytes", () => {
    const r = ReplicaCheck.compareReplicas("t", 0, [
      { broker: 1, log: log(5) },
      { broker: 2, log: log(5) },
      { broker: 3, log: log(5) }
    ])
    expect(r.mismatch).toBeNull()
    expect(r.batches).toBe(5)
    expect(r.ends).toEqual([
      [1, 5],
      [2, 5],
      [3, 5]
    ])
  })

  it("finds a replica that is short, differs or has no log", () => {
    const short = ReplicaCheck.compareReplicas("t", 0, [
      { broker: 1, log: log(5) },
      { broker: 2, log: log(4) }
    ])
    expect(short.mismatch).toMatch(/broker 1 vs broker 2 at offset 4: missing/)
    const epoch = ReplicaCheck.compareReplicas("t", 0, [
      { broker: 1, log: log(3) },
      { broker: 3, log: log(3, 1) }
    ])
    expect(epoch.mismatch).toMatch(/at offset 0: crc|at offset 0: leaderEpoch/)
    const none = ReplicaCheck.compareReplicas("t", 0, [
      { broker: 1, log: log(3) },
      { broker: 2, log: undefined }
    ])
    expect(none.mismatch).toMatch(/broker 1 vs broker 2 \(no log directory\) at offset 0: missing/)
  })

  it("passes replicas that have no records yet", () => {
    const r = ReplicaCheck.compareReplicas("t", 0, [
      { broker: 1, log: undefined },
      { broker: 2, log: undefined },
      { broker: 3, log: Buffer.alloc(0) }
    ])
    expect(r.mismatch).toBeNull()
    expect(r.batches).toBe(0)
  })
})
