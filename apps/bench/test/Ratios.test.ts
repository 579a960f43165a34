import { describe, expect, it } from "@effect/vitest"
import * as Cleaner from "../src/Cleaner.js"
import type { PerfSummary } from "../src/Replication.js"
import * as TransactionalProduce from "../src/TransactionalProduce.js"

const MB = 1024 * 1024

const summary = (mbPerSec: number, records = 1024): PerfSummary => ({
  records,
  recordsPerSec: mbPerSec * 1024,
  mbPerSec,
  avgLatencyMs: 1,
  maxLatencyMs: 1,
  p50Ms: 1,
  p95Ms: 1,
  p99Ms: 1,
  p999Ms: 1
})

const run = (
  setup: string,
  mode: TransactionalProduce.Mode,
  round: number,
  mbPerSec: number,
  cpuSeconds = 1
): TransactionalProduce.Run => ({
  setup,
  mode,
  round,
  summary: summary(mbPerSec),
  seconds: 1,
  cpuSeconds,
  clientCpuSeconds: 0,
  offsetsAdded: 1024
})

describe("TransactionalProduce.summarize", () => {
  const runs = [
    run("ours", "idempotent", 0, 30),
    run("ours", "transactional", 0, 10),
    run("kafka", "idempotent", 0, 50),
    run("kafka", "transactional", 0, 40),
    run("ours", "idempotent", 1, 20),
    run("ours", "transactional", 1, 18, 2),
    run("kafka", "idempotent", 1, 40),
    run("kafka", "transactional", 1, 20),
    run("ours", "idempotent", 2, 40),
    run("ours", "transactional", 2, 12),
    run("kafka", "idempotent", 2, 60),
    run("kafka", "transactional", 2, 30)
  ]
  const rows = TransactionalProduce.summarize(runs, "kafka", 1024)

  it("takes the median round of each setup and mode, in setup then mode order", () => {
    expect(rows.map((r) => [r.setup, r.mode, r.median.summary.mbPerSec, r.median.round])).toEqual([
      ["ours", "idempotent", 30, 0],
      ["ours", "transactional", 12, 2],
      ["kafka", "idempotent", 50, 0],
      ["kafka", "transactional", 30, 2]
    ])
    expect(rows[1]!.mbPerSecByRound).toEqual([10, 18, 12])
  })

  it("divides by Kafka's median in the same mode and by the same setup's idempotent median", () => {
    expect(rows.map((r) => r.vsKafka)).toEqual([30 / 50, 12 / 30, 1, 1])
    expect(rows.map((r) => r.vsIdempotent)).toEqual([1, 12 / 30, 1, 30 / 50])
  })

  it("gives MB of values per server CPU second of the median run", () => {
    // 1024 records of 1 KB is 1 MB.
    expect(rows[0]!.mbPerCpuSecond).toBe(1)
  })

  it("leaves a ratio undefined (NaN, printed as -) when its baseline did not run", () => {
    const only = TransactionalProduce.summarize([run("ours", "transactional", 0, 10)], "kafka", 1024)
    expect(Number.isNaN(only[0]!.vsKafka)).toBe(true)
    expect(Number.isNaN(only[0]!.vsIdempotent)).toBe(true)
    expect(TransactionalProduce.table(only)).toContain("-x")
  })
})

describe("Cleaner.compare", () => {
  const phase = (sectionMb: number, seconds: number, cpuSeconds: number): Cleaner.Phase => ({
    sectionBytes: sectionMb * MB,
    seconds,
    cpuSeconds,
    bytesRead: sectionMb * MB,
    bytesWritten: sectionMb * MB
  })
  const round = (r: number, copy: Cleaner.Phase, clean: Cleaner.Phase): Cleaner.Round => ({
    round: r,
    copy,
    clean: { ...clean, recordsRead: 0, recordsRetained: 0, segmentsCleaned: 0, passes: 1 }
  })

  it("reports MB/s and CPU seconds per MB of the section", () => {
    expect(Cleaner.figures(phase(200, 4, 2))).toEqual({ mbPerSec: 50, cpuSecondsPerMb: 0.01 })
  })

  it("compares the median cleaning with the median copy", () => {
    const rounds = [
      round(0, phase(100, 1, 0.1), phase(100, 10, 5)),
      round(1, phase(100, 0.5, 0.1), phase(100, 4, 4)),
      round(2, phase(100, 0.25, 0.1), phase(100, 5, 3))
    ]
    const c = Cleaner.compare(rounds)
    expect(c.copy).toEqual({ mbPerSec: 200, cpuSecondsPerMb: 0.001 })
    expect(c.clean).toEqual({ mbPerSec: 20, cpuSecondsPerMb: 0.03 })
    expect(c.speedVsCopy).toBeCloseTo(0.1)
    expect(c.cpuVsCopy).toBeCloseTo(30)
    expect(c.extraCpuSecondsPerMb).toBeCloseTo(0.029)
    expect(Cleaner.table(rounds, c)).toContain("log cleaner")
  })
})
