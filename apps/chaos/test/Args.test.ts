import { describe, expect, it } from "@effect/vitest"
import * as Args from "../src/Args.js"

describe("Args", () => {
  it("defaults to 3 minutes and no seed", () => {
    expect(Args.parse([])).toEqual({ seed: undefined, minutes: 3, keepData: false, dataDir: undefined, help: false })
  })

  it("reads the seed, the minutes and the flags", () => {
    expect(Args.parse(["--", "--seed", "42", "--minutes", "0.5", "--keep-data", "--data-dir", "d"])).toEqual({
      seed: 42,
      minutes: 0.5,
      keepData: true,
      dataDir: "d",
      help: false
    })
  })

  it("refuses unknown arguments and bad values", () => {
    expect(() => Args.parse(["--seeds", "1"])).toThrow("unknown argument --seeds")
    expect(() => Args.parse(["--seed", "-1"])).toThrow("--seed -1")
    expect(() => Args.parse(["--seed", "4294967296"])).toThrow("--seed")
    expect(() => Args.parse(["--minutes", "0"])).toThrow("--minutes 0")
    expect(() => Args.parse(["--minutes"])).toThrow("--minutes needs a value")
  })
})
