import { describe, expect, it } from "@effect/vitest"
import { StandardAuthorizer } from "@clustermirror/authorizer"
import { Handlers } from "@clustermirror/network/RequestChannel"
import type { Connection } from "@clustermirror/network/SocketServer"
import { Api, DescribeQuorum, ListGroups } from "@clustermirror/protocol"
import { Either } from "effect"
import * as Authorization from "../src/Authorization.js"

const connection = (principal: string): Connection => ({
  id: 1,
  remoteHost: "::ffff:10.0.0.1",
  remotePort: 5000,
  listenerName: "PLAINTEXT",
  securityProtocol: "PLAINTEXT",
  principal
})

const authorizer = StandardAuthorizer.StandardAuthorizer.make(
  { superUsers: new Set(["User:admin"]), allowEveryoneIfNoAclFound: true },
  []
)

const install = (handlers: Handlers) =>
  Authorization.install(handlers, {
    authorizer: () => authorizer,
    topicNameById: () => undefined,
    topicExists: () => true,
    autoCreateTopicsEnable: () => false
  })

describe("Authorization.install", () => {
  it("fails closed: a served API without a rule answers super users only and closes other connections", async () => {
    const handlers = new Handlers().register(DescribeQuorum.api, () => ({ errorCode: 0, topics: [] }))
    install(handlers)
    const frame = Either.getOrThrow(Api.encodeRequest(DescribeQuorum.api, 0, 1, "t", { topics: [] })).subarray(4)
    const run = (principal: string) => handlers.frameHandler(() => {})(frame, connection(principal))
    expect((await run("User:admin"))._tag).toBe("Respond")
    expect(await run("User:alice")).toEqual({ _tag: "Close", reason: "internal error" })
  })

  it("leaves APIs with a rule to their rule", async () => {
    const handlers = new Handlers().register(ListGroups.api, () => ({ throttleTimeMs: 0, errorCode: 0, groups: [] }))
    install(handlers)
    const frame = Either.getOrThrow(Api.encodeRequest(ListGroups.api, 4, 1, "t", { statesFilter: [] })).subarray(4)
    expect((await handlers.frameHandler(() => {})(frame, connection("User:alice")))._tag).toBe("Respond")
  })

  it("names the host of an IPv4-mapped address as Kafka does", () => {
    expect(Authorization.identityOf(connection("User:a"))).toEqual({ principal: "User:a", host: "10.0.0.1" })
    expect(Authorization.hostOf("::1")).toBe("::1")
  })
})
