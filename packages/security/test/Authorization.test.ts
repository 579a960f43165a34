import { describe, expect, it } from "@effect/vitest"
import { Acl, StandardAuthorizer } from "@clustermirror/authorizer"
import { Handlers } from "@clustermirror/network/RequestChannel"
import type { Connection } from "@clustermirror/network/SocketServer"
import { Api, DescribeQuorum, Errors, ListGroups, WriteTxnMarkers } from "@clustermirror/protocol"
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

  it("serves WriteTxnMarkers only to principals with CLUSTER_ACTION on the cluster", async () => {
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [
        {
          resourceType: Acl.ResourceType.CLUSTER,
          resourceName: Acl.CLUSTER_NAME,
          patternType: Acl.PatternType.LITERAL,
          principal: "User:broker",
          host: "*",
          operation: Acl.AclOperation.CLUSTER_ACTION,
          permissionType: Acl.AclPermissionType.ALLOW
        }
      ]
    )
    const handlers = new Handlers().register(WriteTxnMarkers.api, (_req, request) => ({
      markers: request.markers.map((m) => ({
        producerId: m.producerId,
        topics: m.topics.map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode: 0 }))
        }))
      }))
    }))
    Authorization.install(handlers, {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const body = {
      markers: [
        {
          producerId: 7n,
          producerEpoch: 0,
          transactionResult: true,
          topics: [{ name: "t", partitionIndexes: [0, 1] }],
          coordinatorEpoch: 0
        }
      ]
    }
    const frame = Either.getOrThrow(Api.encodeRequest(WriteTxnMarkers.api, 1, 1, "t", body)).subarray(4)
    const codes = async (principal: string) => {
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      const decoded = Either.getOrThrow(Api.decodeResponse(WriteTxnMarkers.api, 1, bytes))
      return decoded.body.markers.flatMap((m) => m.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)))
    }
    expect(await codes("User:broker")).toEqual([0, 0])
    const refused = Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    expect(await codes("User:alice")).toEqual([refused, refused])
  })

  it("names the host of an IPv4-mapped address as Kafka does", () => {
    expect(Authorization.identityOf(connection("User:a"))).toEqual({ principal: "User:a", host: "10.0.0.1" })
    expect(Authorization.hostOf("::1")).toBe("::1")
  })
})
