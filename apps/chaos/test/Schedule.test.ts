import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Schedule from "../src/Schedule.js"

const options = fc.record({
  seed: fc.integer({ min: 0, max: 0xffffffff }),
  durationMs: fc.integer({ min: 10_000, max: 40 * 60_000 }),
  brokers: fc.integer({ min: 1, max: 5 }),
  sessionTimeoutMs: fc.integer({ min: 2_000, max: 20_000 }),
  quorums: fc.subarray([...Schedule.CLUSTERS])
})

/** Nodes down or paused at time `t` per cluster. */
const downAt = (faults: ReadonlyArray<Schedule.Fault>, cluster: Schedule.ClusterName, t: number): number =>
  faults.filter((f) => f.cluster === cluster && f.kind !== "elect" && f.at <= t && t < f.at + f.downMs).length

describe("Schedule", () => {
  it.prop("the same options give the same schedule", [options], ([o]) => {
    expect(Schedule.generate(o)).toEqual(Schedule.generate(o))
  })

  it.prop("another seed gives another schedule", [options, fc.integer({ min: 1, max: 1000 })], ([o, d]) => {
    fc.pre(o.durationMs >= 60_000)
    const other = { ...o, seed: (o.seed + d) >>> 0 }
    expect(Schedule.generate(o)).not.toEqual(Schedule.generate(other))
  })

  it.prop("has no invariant violations", [options], ([o]) => {
    expect(Schedule.violations(Schedule.generate(o), o)).toEqual([])
  })

  it.prop("never has two nodes of a cluster down at once", [options], ([o]) => {
    const faults = Schedule.generate(o)
    for (const c of Schedule.CLUSTERS)
      for (const f of faults.filter((x) => x.cluster === c && x.kind !== "elect")) {
        expect(downAt(faults, c, f.at)).toBe(1)
        expect(downAt(faults, c, f.at + f.downMs - 1)).toBe(1)
      }
  })

  it.prop("reverts every fault within the duration, in time order", [options], ([o]) => {
    const faults = Schedule.generate(o)
    for (const f of faults) {
      expect(f.at).toBeGreaterThanOrEqual(0)
      expect(f.at + f.downMs).toBeLessThanOrEqual(o.durationMs)
      if (f.kind === "elect") expect(f.downMs).toBe(0)
      else expect(f.downMs).toBeGreaterThan(0)
    }
    for (let i = 1; i < faults.length; i++) expect(faults[i]!.at).toBeGreaterThanOrEqual(faults[i - 1]!.at)
    for (const c of Schedule.CLUSTERS) expect(downAt(faults, c, o.durationMs)).toBe(0)
  })

  it.prop("quick outages end inside the session timeout, long ones beyond it", [options], ([o]) => {
    for (const f of Schedule.generate(o)) {
      if (f.outage === "quick") expect(f.downMs).toBeLessThan(o.sessionTimeoutMs)
      if (f.outage === "long") expect(f.downMs).toBeGreaterThan(o.sessionTimeoutMs)
    }
  })

  it("a three-minute campaign has every kind of fault against both clusters and every controller", () => {
    const seen = new Set<string>()
    const quorums = ["destination"] as const
    for (let seed = 0; seed < 20; seed++)
      for (const f of Schedule.generate({ seed, durationMs: 180_000, brokers: 3, sessionTimeoutMs: 6_000, quorums })) {
        seen.add(`${f.cluster} ${Schedule.label(f)}`)
        if (Schedule.isController(f.node)) seen.add(Schedule.nodeName(f.cluster, f.node))
      }
    // The lone controller of the source is never a standby; the destination's quorum has both.
    expect(seen).toContain("destination standby controller")
    expect(seen).not.toContain("source standby controller")
    for (const c of Schedule.CLUSTERS) {
      for (const l of [
        "SIGKILL+restart (quick)",
        "SIGKILL+restart (long)",
        "SIGTERM+restart (quick)",
        "SIGTERM+restart (long)",
        "SIGSTOP/SIGCONT (quick)",
        "SIGSTOP/SIGCONT (long)",
        "preferred election"
      ])
        expect(seen).toContain(`${c} ${l}`)
      expect(seen).toContain(`${c} controller`)
    }
  })

  it("violations finds overlapping outages and faults past the end", () => {
    const o = { seed: 1, durationMs: 60_000, brokers: 3, sessionTimeoutMs: 6_000 }
    const f = (at: number, node: number, downMs: number): Schedule.Fault => ({
      at,
      cluster: "source",
      kind: "sigkill",
      node,
      downMs,
      outage: "long"
    })
    expect(Schedule.violations([f(1_000, 1, 10_000), f(5_000, 2, 1_000)], o)).toHaveLength(1)
    expect(Schedule.violations([f(55_000, 1, 10_000)], o)).toHaveLength(1)
    expect(Schedule.violations([f(1_000, 4, 1_000)], o)).toHaveLength(1)
    expect(Schedule.violations([f(1_000, 1, 1_000), { ...f(1_500, 2, 1_000), cluster: "destination" }], o)).toEqual([])
  })
})
