import { describe, expect, it } from "@effect/vitest"
import * as LiveView from "../src/LiveView.js"

const row = (
  partition: number,
  state: string,
  sourceOffset: number,
  destinationOffset: number,
  lag: number
): LiveView.PartitionRow => ({ topic: "orders", partition, state, sourceOffset, destinationOffset, lag })

const tick = (rows: ReadonlyArray<LiveView.PartitionRow>, error: string | null = null): LiveView.Tick => ({
  elapsedSeconds: 3.25,
  produced: 123_456,
  rows,
  error
})

/** A test double of stdout that records what is written. */
const capture = (isTTY: boolean) => {
  const written: string[] = []
  return { out: { isTTY, write: (t: string) => written.push(t) }, written }
}

describe("LiveView", () => {
  it("formats counts with separators and unknown values as a dash", () => {
    expect(LiveView.count(1234567)).toBe("1,234,567")
    expect(LiveView.count(0)).toBe("0")
    expect(LiveView.count(-1)).toBe("-")
    expect(LiveView.megabytes(25_912_345)).toBe("25.9 MB")
    expect(LiveView.seconds(6.94)).toBe("6.9 s")
    expect(LiveView.throughput(26_000_000, 10_000)).toBe("2.6 MB/s")
    expect(LiveView.throughput(26_000_000, 0)).toBe("0.0 MB/s")
  })

  it("draws the partitions as aligned columns, numbers to the right, then the summary", () => {
    const lines = LiveView.table(
      tick([row(0, "MIRRORING", 120_000, 119_500, 500), row(11, "LOG_TRUNCATION", -1, -1, -1)])
    )
    expect(lines).toEqual([
      "PARTITION  STATE            SOURCE  DESTINATION  LAG",
      "orders-0   MIRRORING       120,000      119,500  500",
      "orders-11  LOG_TRUNCATION        -            -    -",
      "[  3.3 s] produced 123,456  mirrored 119,500  lag 500  MIRRORING 1, LOG_TRUNCATION 1"
    ])
  })

  it("keeps every table line but the summary as wide as the header, whatever the values", () => {
    const states = ["MIRRORING", "FAILED", "STOPPED", "LOG_TRUNCATION"]
    const values = [-1, 0, 7, 123_456, 10 ** 12]
    for (const [i, v] of values.entries()) {
      const rows = values.map((w, j) => row(j * 37, states[(i + j) % states.length]!, v, w, (v + w) % 1000))
      const lines = LiveView.table(tick(rows))
      expect(lines.length).toBe(rows.length + 2)
      for (const l of lines.slice(1, -1)) expect(l.length).toBe(lines[0]!.length)
    }
  })

  it("summarises a tick: lag over the partitions with known offsets, states counted, errors shown", () => {
    expect(LiveView.summaryLine(tick([row(0, "MIRRORING", 10, 7, 3), row(1, "MIRRORING", 5, 5, 0)]))).toBe(
      "[  3.3 s] produced 123,456  mirrored 12  lag 3  MIRRORING 2"
    )
    expect(LiveView.summaryLine(tick([row(0, "STOPPED", -1, -1, -1), row(1, "STOPPING", -1, -1, -1)]))).toBe(
      "[  3.3 s] produced 123,456  STOPPED 1, STOPPING 1"
    )
    expect(LiveView.summaryLine(tick([], "UNKNOWN_CLUSTER_MIRROR"))).toBe(
      "[  3.3 s] produced 123,456  mirror: UNKNOWN_CLUSTER_MIRROR"
    )
    expect(LiveView.summaryLine(tick([]))).toBe("[  3.3 s] produced 123,456  mirror: no partitions yet")
  })

  it("prints the verification line", () => {
    expect(LiveView.verifiedLine(12, 232, 229_989)).toBe(
      "offsets and batch bytes identical: 12 partitions, 232 batches, 229,989 records"
    )
  })

  it("reports the run, one fact per line, the values in one column", () => {
    const lines = LiveView.report({
      topics: 3,
      partitions: 12,
      recordsMirrored: 229_989,
      bytesMirrored: 25_900_000,
      catchUpMs: 6_900,
      mirroringMs: 10_000,
      failoverMs: 700,
      refusedBeforeStop: "READ_ONLY_TOPIC",
      producedAfterStop: 1_000
    })
    expect(lines).toEqual([
      "report",
      "  partitions        12 (3 topics)",
      "  records mirrored  229,989",
      "  data mirrored     25.9 MB (record batches as produced)",
      "  time to catch up  6.9 s",
      "  throughput        2.6 MB/s (data mirrored / 10.0 s from start to lag 0)",
      "  failover          0.7 s (StopMirrorTopics until every partition STOPPED)",
      "  writes            refused while mirroring (READ_ONLY_TOPIC), 1,000 records accepted after the stop"
    ])
  })

  it("on a terminal redraws the table in place; the first table and the one after done() start fresh", () => {
    const { out, written } = capture(true)
    const view = new LiveView.LiveView(out)
    const t = tick([row(0, "MIRRORING", 1, 1, 0)])
    view.show(t)
    view.show(t)
    view.done()
    view.show(t)
    const lines = LiveView.table(t)
    expect(written[0]).toBe(`\x1b[J${lines.join("\n")}\n`)
    expect(written[1]).toBe(`\x1b[${lines.length}F\x1b[J${lines.join("\n")}\n`)
    expect(written[2]).toBe(written[0])
  })

  it("elsewhere writes one summary line per tick, no escape codes", () => {
    const { out, written } = capture(false)
    const view = new LiveView.LiveView(out)
    const t = tick([row(0, "MIRRORING", 1, 1, 0)])
    view.show(t)
    view.show(t)
    expect(written).toEqual([`${LiveView.summaryLine(t)}\n`, `${LiveView.summaryLine(t)}\n`])
  })
})
