import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import * as MirrorPartitionState from "../src/MirrorPartitionState.js"
import type { MirrorPartitionState as State } from "../src/MirrorPartitionState.js"

const BYTES: ReadonlyArray<readonly [State, number]> = [
  ["LOG_TRUNCATION", 0],
  ["EPOCH_FENCING", 1],
  ["MIRRORING", 2],
  ["PAUSING", 3],
  ["PAUSED", 4],
  ["STOPPING", 5],
  ["STOPPED", 6],
  ["FAILED", 7],
  ["UNKNOWN", -1]
]

// Allowed sources per target, written out independently of the module's table ("null" = untracked).
const ALLOWED: Readonly<Record<State, ReadonlyArray<State | null>>> = {
  LOG_TRUNCATION: [null, "UNKNOWN", "STOPPED", "FAILED", "LOG_TRUNCATION"],
  EPOCH_FENCING: ["MIRRORING", "EPOCH_FENCING"],
  MIRRORING: ["LOG_TRUNCATION", "EPOCH_FENCING", "PAUSED", "FAILED", "MIRRORING"],
  PAUSING: ["MIRRORING", "PAUSING"],
  PAUSED: ["PAUSING", "PAUSED"],
  STOPPING: ["LOG_TRUNCATION", "EPOCH_FENCING", "MIRRORING", "PAUSING", "PAUSED", "FAILED", "STOPPING"],
  STOPPED: ["STOPPING", "STOPPED"],
  FAILED: [null, ...BYTES.map(([s]) => s)],
  UNKNOWN: ["UNKNOWN"]
}

describe("MirrorPartitionState", () => {
  it("uses the wire bytes of the July 2026 prototype", () => {
    for (const [state, byte] of BYTES) {
      expect(MirrorPartitionState.toByte(state)).toBe(byte)
      expect(MirrorPartitionState.fromByte(byte)).toEqual(Option.some(state))
      expect(MirrorPartitionState.fromName(MirrorPartitionState.name(state))).toEqual(Option.some(state))
    }
    expect(MirrorPartitionState.all).toEqual(BYTES.map(([s]) => s))
  })

  it("has no state for other bytes or names", () => {
    for (const b of [8, 16, -2, 127, -128]) expect(Option.isNone(MirrorPartitionState.fromByte(b))).toBe(true)
    expect(Option.isNone(MirrorPartitionState.fromName("PREPARING"))).toBe(true)
  })

  it("allows exactly the transitions of the state table", () => {
    const sources: ReadonlyArray<State | null> = [null, ...MirrorPartitionState.all]
    for (const target of MirrorPartitionState.all) {
      for (const source of sources) {
        expect(MirrorPartitionState.isValidTransition(source, target), `${source} -> ${target}`).toBe(
          ALLOWED[target].includes(source)
        )
      }
    }
  })

  it("keeps failback and resume paths distinct", () => {
    // Resume goes straight back to MIRRORING; a stopped partition must truncate first.
    expect(MirrorPartitionState.isValidTransition("PAUSED", "MIRRORING")).toBe(true)
    expect(MirrorPartitionState.isValidTransition("STOPPED", "MIRRORING")).toBe(false)
    expect(MirrorPartitionState.isValidTransition("STOPPED", "LOG_TRUNCATION")).toBe(true)
    // A pause must pass through PAUSING.
    expect(MirrorPartitionState.isValidTransition("MIRRORING", "PAUSED")).toBe(false)
  })
})
