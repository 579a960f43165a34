import { describe, expect, it } from "@effect/vitest"
import { checkLastFetchedEpoch, leaderEndOffsetForEpoch, mirrorLeaderEpochAnswer } from "../src/LeaderEpochChecks.js"
import type { PartitionLog } from "../src/PartitionLog.js"
import * as PartitionLogStore from "../src/PartitionLogStore.js"
import { batch } from "./Batches.js"

/** A leader's log: epoch 1 on offsets 0..3, epoch 3 on 4..5 (batches of two records). */
const leaderLog = (): PartitionLog => {
  const log = PartitionLogStore.makeMemoryStore().open("t", 0, {}, "AAAAAAAAAAAAAAAAAAAAAQ")
  const write = (epoch: number, n: number) => {
    for (let i = 0; i < n; i++) log.appendAsLeader(batch({ count: 2 }), epoch, 0)
  }
  write(1, 2)
  write(3, 1)
  return log
}

describe("LeaderEpochChecks", () => {
  it("answers OffsetForLeaderEpoch from the epoch cache, with the current epoch starting at the log end", () => {
    const log = leaderLog()
    expect(leaderEndOffsetForEpoch(log, 3, 1)).toEqual({ epoch: 1, endOffset: 4 })
    expect(leaderEndOffsetForEpoch(log, 3, 2)).toEqual({ epoch: 1, endOffset: 4 })
    expect(leaderEndOffsetForEpoch(log, 3, 3)).toEqual({ epoch: 3, endOffset: 6 })
    expect(leaderEndOffsetForEpoch(log, 3, 0)).toEqual({ epoch: 0, endOffset: 0 })
    expect(leaderEndOffsetForEpoch(log, 3, 4)).toEqual({ epoch: -1, endOffset: -1 })
    // Elected at epoch 6 with nothing written yet: epochs 3..5 end where epoch 6 starts, at the log end.
    expect(leaderEndOffsetForEpoch(log, 6, 1)).toEqual({ epoch: 1, endOffset: 4 })
    expect(leaderEndOffsetForEpoch(log, 6, 3)).toEqual({ epoch: 3, endOffset: 6 })
    expect(leaderEndOffsetForEpoch(log, 6, 5)).toEqual({ epoch: 3, endOffset: 6 })
    expect(leaderEndOffsetForEpoch(log, 6, 6)).toEqual({ epoch: 6, endOffset: 6 })
    expect(leaderEndOffsetForEpoch(log, 6, 7)).toEqual({ epoch: -1, endOffset: -1 })
  })

  it("checks LastFetchedEpoch like a Kafka leader", () => {
    const log = leaderLog()
    expect(checkLastFetchedEpoch(log, 3, 6, 3)).toEqual({ _tag: "Valid" })
    expect(checkLastFetchedEpoch(log, 3, 4, 1)).toEqual({ _tag: "Valid" })
    expect(checkLastFetchedEpoch(log, 3, 5, 1)).toEqual({ _tag: "Diverging", epoch: 1, endOffset: 4 })
    expect(checkLastFetchedEpoch(log, 3, 4, 2)).toEqual({ _tag: "Diverging", epoch: 1, endOffset: 4 })
    expect(checkLastFetchedEpoch(log, 3, 7, 3)).toEqual({ _tag: "Diverging", epoch: 3, endOffset: 6 })
    expect(checkLastFetchedEpoch(log, 3, 2, 4)).toEqual({ _tag: "OffsetOutOfRange" })
    expect(checkLastFetchedEpoch(log, 3, 9, -1)).toEqual({ _tag: "Valid" })
  })

  it("answers a follower's MirrorLeaderEpoch on a mirror topic with the log's latest epoch, every other fetch with -1", () => {
    const log = leaderLog()
    expect(mirrorLeaderEpochAnswer(log, 2, 0, true)).toBe(3)
    expect(mirrorLeaderEpochAnswer(log, 2, -1, true)).toBe(-1)
    expect(mirrorLeaderEpochAnswer(log, -1, 0, true)).toBe(-1)
    expect(mirrorLeaderEpochAnswer(log, 2, 0, false)).toBe(-1)
  })
})
