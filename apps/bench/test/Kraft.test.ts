import { describe, expect, it } from "@effect/vitest"
import * as Kraft from "../src/Kraft.js"

const round = (signal: Kraft.Signal, i: number, electedMs: number, committedMs: number): Kraft.FailoverRound => ({
  signal,
  round: i,
  oldLeader: 1,
  oldEpoch: i + 1,
  newLeader: 2,
  newEpoch: i + 2,
  electedMs,
  committedMs
})

describe("Kraft.distribution", () => {
  it("takes percentiles by nearest rank, whatever the order of the samples", () => {
    const samples = Array.from({ length: 100 }, (_, i) => 100 - i)
    expect(Kraft.distribution(samples)).toEqual({ count: 100, min: 1, p50: 50, p90: 90, p99: 99, max: 100 })
  })

  it("gives the only sample for every percentile of one, and NaN for none", () => {
    expect(Kraft.distribution([7])).toEqual({ count: 1, min: 7, p50: 7, p90: 7, p99: 7, max: 7 })
    expect(Kraft.percentile([], 50)).toBeNaN()
    expect(Kraft.percentile([1, 2, 3, 4], 50)).toBe(2)
    expect(Kraft.percentile([1, 2, 3, 4], 51)).toBe(3)
  })
})

describe("Kraft.withRatios", () => {
  it("divides each row's p50 and p99 by the baseline's of the same mode", () => {
    const run = (setup: string, mode: "sequential" | "pipelined", p50: number, p99: number): Kraft.LatencyRun => ({
      setup,
      mode,
      latency: { count: 10, min: 0, p50, p90: p99, p99, max: p99 },
      recordsPerSec: 1,
      leaderChanges: 0,
      failedAppends: 0
    })
    const rows = Kraft.withRatios([
      run(Kraft.BASELINE, "sequential", 2, 4),
      run(Kraft.BASELINE, "pipelined", 1, 10),
      run("3 voters", "sequential", 6, 20),
      run("3 voters", "pipelined", 4, 5)
    ])
    expect(rows.map((r) => [r.setup, r.mode, r.p50VsBaseline, r.p99VsBaseline])).toEqual([
      [Kraft.BASELINE, "sequential", 1, 1],
      [Kraft.BASELINE, "pipelined", 1, 1],
      ["3 voters", "sequential", 3, 5],
      ["3 voters", "pipelined", 4, 0.5]
    ])
  })
})

describe("Kraft.summarizeFailover", () => {
  const rounds = [
    round("SIGKILL", 0, 2000, 2100),
    round("SIGKILL", 1, 2900, 3000),
    round("SIGKILL", 2, 2950, 3001),
    round("SIGSTOP", 0, 1000, 4000)
  ]

  it("summarizes one signal's rounds and counts those that committed after more than 3 s", () => {
    const kill = Kraft.summarizeFailover(rounds, "SIGKILL")
    expect(kill.elected).toEqual({ count: 3, min: 2000, p50: 2900, p90: 2950, p99: 2950, max: 2950 })
    expect(kill.committed.max).toBe(3001)
    expect([kill.electedOver3s, kill.over3s]).toEqual([0, 1])
    const stop = Kraft.summarizeFailover(rounds, "SIGSTOP")
    expect([stop.elected.count, stop.electedOver3s, stop.over3s]).toEqual([1, 0, 1])
    const slow = Kraft.summarizeFailover([round("SIGKILL", 0, 3001, 3002)], "SIGKILL")
    expect([slow.electedOver3s, slow.over3s]).toEqual([1, 1])
  })

  it("prints a row per signal and measure, each with its count of rounds over 3 s", () => {
    const table = Kraft.failoverTable([Kraft.summarizeFailover(rounds, "SIGKILL")]).split("\n")
    expect(table).toHaveLength(4)
    expect(table[2]).toMatch(/^SIGKILL\s+new leader known\s+3\s+2000\s+2900\s+2950\s+2950\s+0$/)
    expect(table[3]).toMatch(/^SIGKILL\s+append committed\s+3\s+2100\s+3000\s+3001\s+3001\s+1$/)
  })
})
