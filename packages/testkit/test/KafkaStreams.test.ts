import { describe, expect, it } from "@effect/vitest"
import * as KafkaStreams from "../src/KafkaStreams.js"

describe("KafkaStreams", () => {
  it("splits lines as the application does: lower case, on runs of whitespace", () => {
    expect(KafkaStreams.words("  The quick\tTHE  fox ")).toEqual(["the", "quick", "the", "fox"])
    expect(KafkaStreams.toRecord(KafkaStreams.expectedCounts(["a B a", "b\t c", ""]))).toEqual({ a: 2, b: 2, c: 1 })
  })

  it("makes sample lines whose phases share words and bring new ones", () => {
    const [first, second] = [0, 1].map((phase) => KafkaStreams.expectedCounts(KafkaStreams.sampleLines(phase, 100)))
    expect(KafkaStreams.sampleLines(0, 100)).toEqual(KafkaStreams.sampleLines(0, 100))
    expect(first!.size).toBe(20)
    expect(new Set(first!.values()).size).toBeGreaterThan(5)
    expect([...second!.keys()].filter((w) => first!.has(w))).toHaveLength(16)
  })

  it("keeps the last count per word of the output and ignores other lines", () => {
    const counts = KafkaStreams.parseCounts("a 1\nb 1\na 2\n% Reached end\nb 5\n\n")
    expect(KafkaStreams.toRecord(counts)).toEqual({ a: 2, b: 5 })
  })

  it("passes the settings after the positional arguments", () => {
    expect(
      KafkaStreams.programArgs({
        bootstrap: "h:1",
        applicationId: "app",
        inputTopic: "in",
        outputTopic: "out",
        stateDir: "/s",
        properties: { "repartition.purge.interval.ms": 500 }
      })
    ).toEqual(["h:1", "app", "in", "out", "/s", "200", "3", "repartition.purge.interval.ms=500"])
  })
})
