import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as MirrorMetrics from "../src/MirrorMetrics.js"

/** One sample line of the text format: name, the label pairs as written, the value. */
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (\S+)$/

/** Parses an exposition back: per series (name + labels as written), its value; checks HELP/TYPE order. */
const parse = (text: string): Map<string, number> => {
  expect(text.endsWith("\n")).toBe(true)
  const out = new Map<string, number>()
  const typed = new Set<string>()
  for (const line of text.slice(0, -1).split("\n")) {
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
    if (meta !== null) {
      if (meta[1] === "TYPE") {
        expect(["counter", "gauge"]).toContain(meta[3])
        typed.add(meta[2]!)
      }
      continue
    }
    const m = SAMPLE.exec(line)
    expect(m, line).not.toBeNull()
    expect(typed.has(m![1]!), `${m![1]} typed before its samples`).toBe(true)
    const value =
      m![3] === "+Inf" ? Number.POSITIVE_INFINITY : m![3] === "-Inf" ? Number.NEGATIVE_INFINITY : Number(m![3])
    out.set(m![2] === undefined ? m![1]! : `${m![1]}{${m![2]}}`, value)
  }
  return out
}

describe("Registry: Prometheus text exposition 0.0.4", () => {
  it("writes HELP and TYPE before the samples, labels in declared order, series sorted", async () => {
    const r = new MirrorMetrics.Registry()
    const c = r.counter("cm_events_total", "Events.", ["mirror", "kind"])
    c.inc({ kind: "b", mirror: "m2" })
    c.inc({ kind: "a", mirror: "m1" }, 3)
    r.gauge("cm_level", "A level.").set({}, 2.5)
    expect(await r.expose()).toBe(
      "# HELP cm_events_total Events.\n" +
        "# TYPE cm_events_total counter\n" +
        'cm_events_total{mirror="m1",kind="a"} 3\n' +
        'cm_events_total{mirror="m2",kind="b"} 1\n' +
        "# HELP cm_level A level.\n" +
        "# TYPE cm_level gauge\n" +
        "cm_level 2.5\n"
    )
  })

  it("escapes backslash, double quote and line feed in label values, and backslash and line feed in help", async () => {
    const r = new MirrorMetrics.Registry()
    r.counter("cm_x_total", "Line one\nback\\slash", ["v"]).inc({ v: 'a"b\\c\nd' })
    const text = await r.expose()
    expect(text).toContain("# HELP cm_x_total Line one\\nback\\\\slash\n")
    expect(text).toContain('cm_x_total{v="a\\"b\\\\c\\nd"} 1\n')
    expect(parse(text).size).toBe(1)
  })

  it("writes NaN and infinities as Prometheus reads them", () => {
    expect(MirrorMetrics.formatValue(Number.NaN)).toBe("NaN")
    expect(MirrorMetrics.formatValue(Number.POSITIVE_INFINITY)).toBe("+Inf")
    expect(MirrorMetrics.formatValue(Number.NEGATIVE_INFINITY)).toBe("-Inf")
    expect(MirrorMetrics.formatValue(0.25)).toBe("0.25")
  })

  it("refuses counters that would shrink, labels that are missing or unknown, and bad names", () => {
    const r = new MirrorMetrics.Registry()
    const c = r.counter("cm_c_total", "C.", ["mirror"])
    expect(() => c.inc({ mirror: "m" }, -1)).toThrow(RangeError)
    expect(() => c.inc({ mirror: "m" }, Number.NaN)).toThrow(RangeError)
    expect(() => c.inc({})).toThrow(/takes the labels mirror/)
    expect(() => c.inc({ mirror: "m", other: "x" })).toThrow(/takes the labels mirror/)
    expect(() => r.counter("cm_c_total", "again")).toThrow(/registered twice/)
    expect(() => r.gauge("bad-name", "x")).toThrow(/invalid metric name/)
    expect(() => r.gauge("cm_g", "x", ["__reserved"])).toThrow(/invalid label name/)
    expect(c.get({ mirror: "m" })).toBeUndefined()
  })

  it("property: a counter's exposed value is the sum of its increments and never goes down", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom("m1", "m2", 'q"\\\n'), fc.nat({ max: 1_000_000 })), { maxLength: 40 }),
        async (incs) => {
          const r = new MirrorMetrics.Registry()
          const c = r.counter("cm_bytes_total", "Bytes.", ["mirror"])
          const sums = new Map<string, number>()
          let previous = new Map<string, number>()
          for (const [mirror, by] of incs) {
            c.inc({ mirror }, by)
            sums.set(mirror, (sums.get(mirror) ?? 0) + by)
            const now = parse(await r.expose())
            for (const [series, v] of previous) expect(now.get(series)!).toBeGreaterThanOrEqual(v)
            previous = now
          }
          for (const [mirror, sum] of sums) expect(c.get({ mirror })).toBe(sum)
          expect(previous.size).toBe(sums.size)
        }
      ),
      { numRuns: 100 }
    )
  })
})

describe("MirrorMetrics", () => {
  it("counts partitions per mirror and state (every state, 0 included) and lag only where it is known", async () => {
    const m = new MirrorMetrics.MirrorMetrics()
    m.mirrorKnown("idle")
    m.partitions(async () => [
      { mirror: "dr", topic: "t", partition: 0, state: "MIRRORING", lag: { records: 5, seconds: 1.5 } },
      { mirror: "dr", topic: "t", partition: 1, state: "PAUSED", lag: { records: 0, seconds: 0 } },
      { mirror: "dr", topic: "u", partition: 0, state: "MIRRORING" }
    ])
    const s = parse(await m.expose())
    expect(s.get('clustermirror_mirror_partitions{mirror="dr",state="MIRRORING"}')).toBe(2)
    expect(s.get('clustermirror_mirror_partitions{mirror="dr",state="PAUSED"}')).toBe(1)
    expect(s.get('clustermirror_mirror_partitions{mirror="dr",state="FAILED"}')).toBe(0)
    expect(s.get('clustermirror_mirror_partitions{mirror="idle",state="MIRRORING"}')).toBe(0)
    expect(s.get('clustermirror_mirror_partition_lag_records{mirror="dr",topic="t",partition="0"}')).toBe(5)
    expect(s.get('clustermirror_mirror_partition_lag_seconds{mirror="dr",topic="t",partition="0"}')).toBe(1.5)
    expect(s.get('clustermirror_mirror_partition_lag_records{mirror="dr",topic="t",partition="1"}')).toBe(0)
    expect(s.has('clustermirror_mirror_partition_lag_records{mirror="dr",topic="u",partition="0"}')).toBe(false)
  })

  it("exposes each mirror's counters at 0 once known, and counts fetches, retries, sync errors and data loss", async () => {
    const m = new MirrorMetrics.MirrorMetrics()
    m.mirrorKnown("dr")
    const before = parse(await m.expose())
    for (const name of ["fetched_bytes", "fetched_records", "retry_attempts", "data_loss"])
      expect(before.get(`clustermirror_mirror_${name}_total{mirror="dr"}`)).toBe(0)
    expect([...before.keys()].some((k) => k.startsWith("clustermirror_mirror_sync_errors_total{"))).toBe(false)

    m.fetched("dr", 1000, 10)
    m.fetched("dr", 500, 4)
    m.retryAttempt("dr")
    m.syncError("dr", "topic_configs")
    m.syncError("dr", "topic_configs")
    m.dataLoss("dr")
    m.coordinatorLoaded(3, 12.5)
    const after = parse(await m.expose())
    expect(after.get('clustermirror_mirror_fetched_bytes_total{mirror="dr"}')).toBe(1500)
    expect(after.get('clustermirror_mirror_fetched_records_total{mirror="dr"}')).toBe(14)
    expect(after.get('clustermirror_mirror_retry_attempts_total{mirror="dr"}')).toBe(1)
    expect(after.get('clustermirror_mirror_sync_errors_total{mirror="dr",kind="topic_configs"}')).toBe(2)
    expect(after.get('clustermirror_mirror_sync_errors_total{mirror="dr",kind="data_loss"}')).toBe(1)
    expect(after.get('clustermirror_mirror_data_loss_total{mirror="dr"}')).toBe(1)
    expect(after.get('clustermirror_mirror_coordinator_load_seconds{partition="3"}')).toBe(0.0125)
  })

  it("documents every metric with HELP and TYPE even before it has a series", async () => {
    const text = await new MirrorMetrics.MirrorMetrics().expose()
    for (const name of Object.values(MirrorMetrics.Names)) {
      expect(text).toContain(`# HELP ${name} `)
      expect(text).toMatch(new RegExp(`# TYPE ${name} (counter|gauge)\\n`))
    }
  })
})
