import { describe, expect, it } from "@effect/vitest"
import * as JavaTools from "../src/JavaTools.js"
import { ToolError } from "../src/TestkitError.js"

const result = (code: number | null, timedOut = false): JavaTools.ToolResult => ({
  code,
  signal: code === null ? "SIGKILL" : null,
  stdout: "a\n\nb\n",
  stderr: "Error: unknown topic",
  timedOut
})

describe("JavaTools", () => {
  it("passes a successful result through", () => {
    expect(JavaTools.expectSuccess("kafka-topics", result(0)).stdout).toBe("a\n\nb\n")
  })

  it("turns a failing exit into a ToolError quoting stderr", () => {
    expect(() => JavaTools.expectSuccess("kafka-topics", result(1))).toThrow(ToolError)
    expect(() => JavaTools.expectSuccess("kafka-topics", result(1))).toThrow(/exited with 1:\nError: unknown topic/)
  })

  it("reports a timeout as such", () => {
    expect(() => JavaTools.expectSuccess("console-consumer", result(null, true))).toThrow(/timed out/)
  })

  it("splits stdout into non-empty lines", () => {
    expect(JavaTools.lines("a\n\nb\n")).toEqual(["a", "b"])
  })
})
