import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { ApiVersions } from "../src/index.js"
import * as S from "../src/Spec.js"

describe("Spec", () => {
  it("encodes ApiVersionsResponse v3 with tagged fields after the regular ones", () => {
    const bytes = Either.getOrThrow(
      ApiVersions.Response.encode(3, {
        errorCode: 0,
        apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 4 }],
        throttleTimeMs: 0,
        finalizedFeaturesEpoch: 7n
      })
    )
    // errorCode(2) + compact array len(1) + entry(6) + entry tags(1) + throttle(4) + tag count(1) + tag 1 (1+1+8)
    expect(bytes.toString("hex")).toBe(
      "0000" + "02" + "001200000004" + "00" + "00000000" + "01" + "0108" + "0000000000000007"
    )
    const back = Either.getOrThrow(ApiVersions.Response.decode(3, bytes))
    expect(back.finalizedFeaturesEpoch).toBe(7n)
    expect(back.supportedFeatures).toEqual([])
    expect(back.zkMigrationReady).toBe(false)
  })

  it("fills absent fields with defaults and rejects trailing bytes", () => {
    const v0 = Either.getOrThrow(ApiVersions.Response.encode(0, { errorCode: 35, apiKeys: [] }))
    const back = Either.getOrThrow(ApiVersions.Response.decode(0, v0))
    expect(back.throttleTimeMs).toBe(0)
    expect(back.finalizedFeaturesEpoch).toBe(-1n)
    expect(Either.isLeft(ApiVersions.Response.decode(0, Buffer.concat([v0, Buffer.from([1])])))).toBe(true)
  })

  it("rejects null in a non-nullable field", () => {
    const M = S.message({
      name: "T",
      type: "data",
      validVersions: "0-1",
      flexibleVersions: "1+",
      fields: [S.string("A", { nullableVersions: "1+" })]
    })
    expect(Either.isLeft(M.encode(0, { a: null }))).toBe(true)
    const ok = Either.getOrThrow(M.encode(1, { a: null }))
    expect(Either.getOrThrow(M.decode(1, ok)).a).toBe(null)
  })
})
