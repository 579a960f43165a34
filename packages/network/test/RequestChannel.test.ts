import { describe, expect, it } from "@effect/vitest"
import { Api, Errors, ListGroups } from "@clustermirror/protocol"
import { Either } from "effect"
import { Handlers } from "../src/RequestChannel.js"
import type { Connection } from "../src/SocketServer.js"

const connection = (principal: string): Connection => ({
  id: 1,
  remoteHost: "127.0.0.1",
  remotePort: 5000,
  listenerName: "PLAINTEXT",
  securityProtocol: "PLAINTEXT",
  principal
})

/** Runs one ListGroups request through the handlers' frame handler and decodes the answer. */
const listGroups = async (handlers: Handlers, principal: string) => {
  const frame = Either.getOrThrow(Api.encodeRequest(ListGroups.api, 4, 7, "t", { statesFilter: [] })).subarray(4)
  const result = await handlers.frameHandler(() => {})(frame, connection(principal))
  if (result._tag !== "Respond") throw new Error(result._tag)
  return Either.getOrThrow(Api.decodeResponse(ListGroups.api, 4, Buffer.concat(result.chunks).subarray(4))).body
}

describe("Handlers.wrap", () => {
  it("puts a check in front of a registered handler at the same versions, seeing the connection", async () => {
    const handlers = new Handlers().register(
      ListGroups.api,
      () => ({
        throttleTimeMs: 0,
        errorCode: 0,
        groups: [{ groupId: "g", protocolType: "consumer", groupState: "Stable" }]
      }),
      { min: 0, max: 4 }
    )
    const versions = handlers.versions()
    expect(
      handlers.wrap(
        ListGroups.api,
        (next) => (ctx, request) =>
          ctx.connection.principal === "User:admin"
            ? next(ctx, request)
            : { throttleTimeMs: 0, errorCode: Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED, groups: [] }
      )
    ).toBe(true)
    expect(handlers.versions()).toEqual(versions)
    expect((await listGroups(handlers, "User:admin")).groups.map((g) => g.groupId)).toEqual(["g"])
    expect((await listGroups(handlers, "User:ANONYMOUS")).errorCode).toBe(Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
  })

  it("does nothing for an API without a handler", () => {
    const handlers = new Handlers()
    expect(handlers.wrap(ListGroups.api, (next) => next)).toBe(false)
    expect(handlers.has(ListGroups.api.key)).toBe(false)
  })
})

describe("Handlers.measureRequestTime", () => {
  it("gives the hook each request's handling time; a throttle goes on the response and mutes the connection", async () => {
    let clock = 0
    const seen: number[] = []
    const handlers = new Handlers()
      .register(ListGroups.api, async (ctx) => {
        clock += ctx.connection.principal === "User:slow" ? 250 : 10
        if (ctx.connection.principal === "User:replica") ctx.exemptFromRequestQuota()
        // A long poll: 1 s waiting for data, reported as such, is not handling time.
        if (ctx.connection.principal === "User:polling") {
          clock += 1000
          ctx.waited(1000)
        }
        return { throttleTimeMs: 5, errorCode: 0, groups: [] }
      })
      .measureRequestTime(
        (_ctx, ms) => {
          seen.push(ms)
          return ms > 100 ? ms * 2 : 0
        },
        () => clock
      )
    const frame = Either.getOrThrow(Api.encodeRequest(ListGroups.api, 4, 7, "t", { statesFilter: [] })).subarray(4)
    const run = async (principal: string) => {
      const result = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (result._tag !== "Respond") throw new Error(result._tag)
      const body = Either.getOrThrow(
        Api.decodeResponse(ListGroups.api, 4, Buffer.concat(result.chunks).subarray(4))
      ).body
      return { throttleTimeMs: body.throttleTimeMs, muteMs: result.muteMs ?? 0 }
    }
    expect(await run("User:fast")).toEqual({ throttleTimeMs: 5, muteMs: 0 })
    expect(await run("User:slow")).toEqual({ throttleTimeMs: 500, muteMs: 500 })
    // An exempt request is not measured at all.
    expect(await run("User:replica")).toEqual({ throttleTimeMs: 5, muteMs: 0 })
    expect(await run("User:polling")).toEqual({ throttleTimeMs: 5, muteMs: 0 })
    expect(seen).toEqual([10, 250, 10])
  })
})
