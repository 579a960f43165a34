import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Properties from "../src/Properties.js"

/** The subset of java.util.Properties#load that `render` relies on: one `key=value` per line, backslash escapes. */
const parse = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const raw of text.split("\n")) {
    if (raw === "") continue
    let key = ""
    let value = ""
    let inKey = true
    let skippingLeading = false
    for (let i = 0; i < raw.length; i++) {
      let c = raw[i]!
      if (c === "\\") {
        const n = raw[++i]!
        if (n === "u") {
          c = String.fromCharCode(Number.parseInt(raw.slice(i + 1, i + 5), 16))
          i += 4
        } else c = n === "n" ? "\n" : n === "r" ? "\r" : n === "t" ? "\t" : n === "f" ? "\f" : n
        skippingLeading = false
      } else if (inKey && (c === "=" || c === ":")) {
        inKey = false
        skippingLeading = true
        continue
      } else if (skippingLeading && c === " ") continue
      else skippingLeading = false
      if (inKey) key += c
      else value += c
    }
    out[key] = value
  }
  return out
}

describe("Properties", () => {
  it("renders key=value lines in order", () => {
    expect(Properties.render({ "node.id": 1, "process.roles": "broker,controller", "a.b": true })).toBe(
      "node.id=1\nprocess.roles=broker,controller\na.b=true\n"
    )
  })

  it("escapes characters outside printable ASCII as \\uXXXX", () => {
    expect(Properties.render({ k: "é\u0001" })).toBe("k=\\u00e9\\u0001\n")
  })

  it("escapes what the properties parser would otherwise eat", () => {
    expect(Properties.render({ "k=x": " v\\n\n" })).toBe("k\\=x=\\ v\\\\n\\n\n")
  })

  it.prop(
    "rendered text parses back to the same strings",
    [fc.dictionary(fc.string({ minLength: 1, unit: "binary" }), fc.string({ unit: "binary" }))],
    ([dict]) => {
      // Keys starting with a comment marker or containing whitespace are not configuration keys Kafka has.
      const props = Object.fromEntries(
        Object.entries(dict).filter(
          ([k]) => !/^[#!]/.test(k) && !/\s/.test(k) && !k.includes("\\") && k !== "__proto__"
        )
      )
      expect(parse(Properties.render(props))).toEqual(props)
    }
  )

  it("merges layers with later ones winning and undefined removing", () => {
    expect(Properties.merge({ a: 1, b: 2 }, undefined, { b: 3, c: 4 }, { a: undefined })).toEqual({ b: 3, c: 4 })
  })
})
