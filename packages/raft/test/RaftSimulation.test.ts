import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as RaftSimulation from "../src/RaftSimulation.js"

/** Runs seeds [from, from + count) and fails with the first violation's seed, its message and trace tail. */
const campaign = (from: number, count: number, voters: number) => {
  let elections = 0
  let snapshots = 0
  let truncations = 0
  for (let seed = from; seed < from + count; seed++) {
    const r = RaftSimulation.run({ seed, voters })
    if (!r.ok) {
      const replay = RaftSimulation.run({ seed, voters, trace: true })
      throw new Error(`seed ${seed} (${voters} voters): ${r.violation}\n${replay.trace.slice(-60).join("\n")}`)
    }
    elections += r.stats.elections
    snapshots += r.stats.snapshotsInstalled
    truncations += r.stats.divergingTruncations
  }
  return { elections, snapshots, truncations }
}

describe("RaftSimulation", () => {
  // 3,000 seeds per voter count: about 4 s each on a quiet 2-core machine, well inside the timeout when every
  // package's tests run at once; `pnpm --filter @clustermirror/raft simulate --seeds 100000` runs the long campaign.
  it(
    "3 voters: 3,000 seeds of drops, delays, duplicates, partitions, crashes and skew keep every invariant",
    { timeout: 120_000 },
    () => {
      const figures = campaign(0, 3_000, 3)
      // The faults did make the protocol work: elections, diverging truncations and snapshot installs happened.
      expect(figures.elections).toBeGreaterThan(3_000)
      expect(figures.truncations).toBeGreaterThan(0)
      expect(figures.snapshots).toBeGreaterThan(0)
    }
  )

  it("5 voters: 3,000 seeds keep every invariant", { timeout: 120_000 }, () => {
    const figures = campaign(1_000_000, 3_000, 5)
    expect(figures.elections).toBeGreaterThan(3_000)
    expect(figures.truncations).toBeGreaterThan(0)
    expect(figures.snapshots).toBeGreaterThan(0)
  })

  it("a seed replays exactly: the same run, step for step", () => {
    for (const seed of [7, 12345, 4_000_000_001]) {
      const a = RaftSimulation.run({ seed, trace: true })
      const b = RaftSimulation.run({ seed, trace: true })
      expect(b.trace).toEqual(a.trace)
      expect(b.stats).toEqual(a.stats)
      expect(a.trace.length).toBeGreaterThan(100)
    }
  })

  it.prop(
    "any seed runs to its end and replays to the same figures",
    [fc.integer({ min: 0, max: 0xffffffff })],
    ([seed]) => {
      const a = RaftSimulation.run({ seed })
      expect(a.violation).toBeNull()
      expect(RaftSimulation.run({ seed }).stats).toEqual(a.stats)
    },
    { fastCheck: { numRuns: 200 } }
  )

  const firstFailure = (broken: RaftSimulation.SimulationOptions["broken"], seeds: number) => {
    for (let seed = 0; seed < seeds; seed++) {
      const r = RaftSimulation.run({ seed, ...(broken !== undefined ? { broken } : {}) })
      if (!r.ok) return { seed, violation: r.violation ?? "" }
    }
    return null
  }

  it("acknowledging fetched offsets before their fsync is caught within 50 seeds: a crash leaves a committed record durable on a minority", () => {
    const found = firstFailure({ ackBeforeFlush: true }, 50)
    expect(found).not.toBeNull()
    expect(found?.violation).toMatch(/durable on|committed/)
  })

  it("granting a second vote in an epoch is caught within 200 seeds: two leaders in one epoch", () => {
    const found = firstFailure({ voteTwice: true }, 200)
    expect(found).not.toBeNull()
    expect(found?.violation).toMatch(/two leaders in epoch/)
  })

  it("the PRNG is deterministic and uniform enough for the schedule", () => {
    const a = RaftSimulation.prng(42)
    const b = RaftSimulation.prng(42)
    const xs = Array.from({ length: 1000 }, () => a.int(0, 9))
    expect(Array.from({ length: 1000 }, () => b.int(0, 9))).toEqual(xs)
    for (let v = 0; v <= 9; v++) expect(xs.filter((x) => x === v).length).toBeGreaterThan(50)
  })
})
