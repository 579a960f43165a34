import { describe, expect, it } from "@effect/vitest"
import { MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import * as ControllerError from "../src/ControllerError.js"
import * as ControllerResult from "../src/ControllerResult.js"
import { bootstrap, given } from "../src/ControllerTest.js"

const noop = MetadataRecords.make("NoOpRecord", {})
const fence9 = MetadataRecords.make("FenceBrokerRecord", { id: 9, epoch: 0n })

describe("ControllerTest", () => {
  it("given replays records from offset 0 and tracks the next offset", () => {
    const g = given([...bootstrap, noop])
    expect(g.nextOffset).toBe(3n)
    expect(g.state.features.metadataVersion).toBe(30)
    expect(g.when((_, ctx) => ControllerResult.response(ctx.nextOffset)).then([], 3n).nextOffset).toBe(3n)
    expect(g.when(() => ControllerResult.of([noop], 1)).then([noop], 1).nextOffset).toBe(4n)
  })

  it("then fails on other records or another response", () => {
    const w = given().when(() => ControllerResult.of([noop], { ok: true }))
    expect(() => w.then([], { ok: true })).toThrow(/records/)
    expect(() => w.then([noop], { ok: false })).toThrow(/response/)
  })

  it("then fails when replay of the produced records dies", () => {
    expect(() =>
      given()
        .when(() => ControllerResult.of([noop, fence9], undefined))
        .then([noop, fence9], undefined)
    ).toThrow(/replay died on record 1 \(FenceBrokerRecord\) at offset 1/)
    expect(() => given([fence9])).toThrow(/replay died/)
  })

  it("awaiting an unfinished When fails loudly instead of passing", async () => {
    const unfinished: unknown = given().when(() => ControllerResult.response(1))
    await expect(Promise.resolve().then(() => unfinished)).rejects.toThrow(/not a promise/)
  })

  it("thenFails checks tag and message, and then fails on a failure", () => {
    const failed = given().when(() => Either.left(new ControllerError.InvalidRequest({ message: "bad" })))
    expect(failed.thenFails({ _tag: "InvalidRequest", message: "bad" }).nextOffset).toBe(0n)
    expect(() => failed.thenFails({ _tag: "NotController" })).toThrow(/error tag/)
    expect(() => failed.thenFails({ _tag: "InvalidRequest", message: "other" })).toThrow(/error message/)
    expect(() => failed.then([], undefined)).toThrow(/expected success/)
    expect(() =>
      given()
        .when(() => ControllerResult.response(1))
        .thenFails({ _tag: "InvalidRequest" })
    ).toThrow(/expected failure/)
  })
})

describe("ControllerResult", () => {
  it("combines and maps results", () => {
    const a = ControllerResult.of([noop], 1)
    const b = ControllerResult.of([noop, noop], 2)
    expect(ControllerResult.zipWith(a, b, (x, y) => x + y)).toEqual({ records: [noop, noop, noop], response: 3 })
    expect(ControllerResult.map(a, (x) => x * 10)).toEqual({ records: [noop], response: 10 })
    expect(ControllerResult.validateOnly(b)).toEqual({ records: [], response: 2 })
  })
})

describe("ControllerError", () => {
  it("every error carries its Kafka error code", () => {
    expect(new ControllerError.NotController({ message: "" }).errorCode).toBe(41)
    expect(new ControllerError.StaleBrokerEpoch({ message: "" }).errorCode).toBe(77)
    expect(new ControllerError.InvalidReplicationFactor({ message: "" }).errorCode).toBe(38)
    expect(new ControllerError.DuplicateBrokerRegistration({ message: "" }).errorCode).toBe(101)
    expect(new ControllerError.InconsistentClusterId({ message: "" }).errorCode).toBe(104)
    expect(new ControllerError.UnknownClusterMirror({ message: "" }).errorCode).toBe(137)
    expect(ControllerError.toApiError(new ControllerError.InvalidConfig({ message: "m" }))).toEqual({
      errorCode: 40,
      errorMessage: "m"
    })
  })
})
