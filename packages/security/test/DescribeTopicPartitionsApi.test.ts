import { describe, expect, it } from "@effect/vitest"
import { Acl, StandardAuthorizer } from "@clustermirror/authorizer"
import { Handlers } from "@clustermirror/network/RequestChannel"
import type { Connection } from "@clustermirror/network/SocketServer"
import { Api, DescribeTopicPartitions, Errors, Uuid } from "@clustermirror/protocol"
import { Either } from "effect"
import * as Authorization from "../src/Authorization.js"
import * as DescribeTopicPartitionsApi from "../src/DescribeTopicPartitionsApi.js"

const E = Errors.ErrorCode
const UNSET_OPS = -2147483648

const topic = (name: string, topicId: string, count: number) => ({
  name,
  topicId,
  partitions: Array.from({ length: count }, (_, i) => ({
    partitionId: i,
    leader: i % 2 === 0 ? 1 : 2,
    leaderEpoch: 3 + i,
    replicas: [1, 2, 3],
    isr: [1, 2]
  }))
})

// Listed out of order, as the metadata may hold them; broker 3 has no endpoint on PLAINTEXT.
const topics = [
  topic("orders", "AAAAAAAAAAAAAAAAAAAAAQ", 3),
  topic("__consumer_offsets", "AAAAAAAAAAAAAAAAAAAAAg", 2),
  topic("audit", "AAAAAAAAAAAAAAAAAAAAAw", 2),
  topic("clicks", "AAAAAAAAAAAAAAAAAAAABA", 1)
]

const view: DescribeTopicPartitionsApi.TopicPartitionsView = {
  topicByName: (name) => topics.find((t) => t.name === name),
  topics: () => topics,
  broker: (id, listenerName) => (listenerName === "PLAINTEXT" && (id === 1 || id === 2) ? { nodeId: id } : undefined)
}

const context = (
  maxPartitions = 2000,
  access: DescribeTopicPartitionsApi.TopicAccess = DescribeTopicPartitionsApi.allowAll
): DescribeTopicPartitionsApi.DescribeContext => ({
  view,
  listenerName: "PLAINTEXT",
  maxPartitions,
  internalTopics: new Set(["__consumer_offsets", "__transaction_state"]),
  access
})

const request = (
  names: ReadonlyArray<string>,
  responsePartitionLimit = 2000,
  cursor: DescribeTopicPartitions.Request["cursor"] = null
): DescribeTopicPartitions.Request => ({ topics: names.map((name) => ({ name })), responsePartitionLimit, cursor })

/** Each topic's name, error and partition indexes, and the next cursor. */
const pages = (r: DescribeTopicPartitions.Response) => ({
  topics: r.topics.map((t) => [t.name, t.errorCode, t.partitions.map((p) => p.partitionIndex)]),
  next: r.nextCursor
})

describe("DescribeTopicPartitionsApi.describe", () => {
  it("an empty list describes every topic, by name, each partition with leader, replicas, ISR and offline replicas", () => {
    const r = DescribeTopicPartitionsApi.describe(context(), request([]))
    expect(pages(r)).toEqual({
      topics: [
        ["__consumer_offsets", 0, [0, 1]],
        ["audit", 0, [0, 1]],
        ["clicks", 0, [0]],
        ["orders", 0, [0, 1, 2]]
      ],
      next: null
    })
    expect(r.topics.map((t) => [t.name, t.topicId, t.isInternal])).toEqual([
      ["__consumer_offsets", "AAAAAAAAAAAAAAAAAAAAAg", true],
      ["audit", "AAAAAAAAAAAAAAAAAAAAAw", false],
      ["clicks", "AAAAAAAAAAAAAAAAAAAABA", false],
      ["orders", "AAAAAAAAAAAAAAAAAAAAAQ", false]
    ])
    expect(r.topics[3]!.partitions[1]).toEqual({
      errorCode: 0,
      partitionIndex: 1,
      leaderId: 2,
      leaderEpoch: 4,
      replicaNodes: [1, 2, 3],
      isrNodes: [1, 2],
      eligibleLeaderReplicas: [],
      lastKnownElr: [],
      offlineReplicas: [3]
    })
    // No authorizer: every topic operation (READ .. ALTER_CONFIGS), as Kafka answers.
    expect(r.topics.map((t) => t.topicAuthorizedOperations)).toEqual([0xdf8, 0xdf8, 0xdf8, 0xdf8])
  })

  it("a leader without an endpoint on the request's listener is reported as no leader", () => {
    const r = DescribeTopicPartitionsApi.describe(
      { ...context(), view: { ...view, broker: (id, l) => (l === "PLAINTEXT" && id === 2 ? {} : undefined) } },
      request(["clicks"])
    )
    expect(r.topics[0]!.partitions[0]).toMatchObject({ leaderId: -1, leaderEpoch: 3, offlineReplicas: [1, 3] })
  })

  it("named topics: sorted and deduplicated, an unknown one UNKNOWN_TOPIC_OR_PARTITION, an illegal name INVALID_TOPIC_EXCEPTION", () => {
    const r = DescribeTopicPartitionsApi.describe(
      context(),
      request(["orders", "missing", "clicks", "orders", "bad/name"])
    )
    expect(pages(r).topics).toEqual([
      ["bad/name", E.INVALID_TOPIC_EXCEPTION, []],
      ["clicks", 0, [0]],
      ["missing", E.UNKNOWN_TOPIC_OR_PARTITION, []],
      ["orders", 0, [0, 1, 2]]
    ])
    expect(r.topics[2]).toMatchObject({ topicId: Uuid.ZERO, isInternal: false })
  })

  it("the limit cuts inside a topic: the cursor names the first partition left out, and resumes there", () => {
    const first = DescribeTopicPartitionsApi.describe(context(), request([], 3))
    expect(pages(first)).toEqual({
      topics: [
        ["__consumer_offsets", 0, [0, 1]],
        ["audit", 0, [0]]
      ],
      next: { topicName: "audit", partitionIndex: 1 }
    })
    const second = DescribeTopicPartitionsApi.describe(context(), request([], 3, first.nextCursor))
    expect(pages(second)).toEqual({
      topics: [
        ["audit", 0, [1]],
        ["clicks", 0, [0]],
        ["orders", 0, [0]]
      ],
      next: { topicName: "orders", partitionIndex: 1 }
    })
    const third = DescribeTopicPartitionsApi.describe(context(), request([], 3, second.nextCursor))
    expect(pages(third)).toEqual({ topics: [["orders", 0, [1, 2]]], next: null })
  })

  it("the limit used up at a topic's end: the cursor is the next topic's partition 0", () => {
    const r = DescribeTopicPartitionsApi.describe(context(), request(["audit", "clicks", "orders"], 3))
    expect(pages(r)).toEqual({
      topics: [
        ["audit", 0, [0, 1]],
        ["clicks", 0, [0]]
      ],
      next: { topicName: "orders", partitionIndex: 0 }
    })
  })

  it("the limit is capped by max.request.partition.size.limit, and is at least 1", () => {
    expect(pages(DescribeTopicPartitionsApi.describe(context(2), request(["orders"], 2000)))).toEqual({
      topics: [["orders", 0, [0, 1]]],
      next: { topicName: "orders", partitionIndex: 2 }
    })
    expect(pages(DescribeTopicPartitionsApi.describe(context(), request(["orders"], 0)))).toEqual({
      topics: [["orders", 0, [0]]],
      next: { topicName: "orders", partitionIndex: 1 }
    })
  })

  it("a cursor skips the topics before its own; a named request must name the cursor's topic", () => {
    const cursor = { topicName: "clicks", partitionIndex: 0 }
    expect(
      pages(DescribeTopicPartitionsApi.describe(context(), request(["audit", "clicks", "orders"], 10, cursor)))
    ).toEqual({
      topics: [
        ["clicks", 0, [0]],
        ["orders", 0, [0, 1, 2]]
      ],
      next: null
    })
    // Every topic: the cursor's topic need not exist.
    const gone = { topicName: "b", partitionIndex: 0 }
    expect(pages(DescribeTopicPartitionsApi.describe(context(), request([], 10, gone))).topics.map(([n]) => n)).toEqual(
      ["clicks", "orders"]
    )
    const refused = DescribeTopicPartitionsApi.describe(context(), request(["audit", "orders"], 10, cursor))
    expect(refused).toEqual({
      throttleTimeMs: 0,
      topics: ["audit", "orders"].map((name) => ({
        errorCode: E.INVALID_REQUEST,
        name,
        topicId: Uuid.ZERO,
        isInternal: false,
        partitions: [],
        topicAuthorizedOperations: UNSET_OPS
      })),
      nextCursor: null
    })
    const negative = { topicName: "clicks", partitionIndex: -1 }
    expect(pages(DescribeTopicPartitionsApi.describe(context(), request([], 10, negative))).topics).toEqual([])
    expect(
      DescribeTopicPartitionsApi.describe(context(), request(["clicks"], 10, negative)).topics.map((t) => t.errorCode)
    ).toEqual([E.INVALID_REQUEST])
  })

  it("a cursor past a topic's last partition gives it no partitions and goes on to the next topic", () => {
    const r = DescribeTopicPartitionsApi.describe(
      context(),
      request([], 10, { topicName: "clicks", partitionIndex: 5 })
    )
    expect(pages(r)).toEqual({
      topics: [
        ["clicks", 0, []],
        ["orders", 0, [0, 1, 2]]
      ],
      next: null
    })
  })

  it("without DESCRIBE: left out of an all-topics page before the limit counts, TOPIC_AUTHORIZATION_FAILED when named", () => {
    const access: DescribeTopicPartitionsApi.TopicAccess = {
      mayDescribe: (t) => t !== "audit" && t !== "__consumer_offsets",
      operations: (t) => t.length
    }
    const all = DescribeTopicPartitionsApi.describe(context(2000, access), request([], 2))
    expect(pages(all)).toEqual({
      topics: [
        ["clicks", 0, [0]],
        ["orders", 0, [0]]
      ],
      next: { topicName: "orders", partitionIndex: 1 }
    })
    expect(all.topics.map((t) => t.topicAuthorizedOperations)).toEqual([6, 6])
    const named = DescribeTopicPartitionsApi.describe(context(2000, access), request(["orders", "audit", "missing"]))
    expect(named.topics.map((t) => [t.name, t.errorCode, t.topicId, t.topicAuthorizedOperations])).toEqual([
      ["missing", E.UNKNOWN_TOPIC_OR_PARTITION, Uuid.ZERO, 7],
      ["orders", 0, "AAAAAAAAAAAAAAAAAAAAAQ", 6],
      ["audit", E.TOPIC_AUTHORIZATION_FAILED, Uuid.ZERO, UNSET_OPS]
    ])
  })
})

describe("DescribeTopicPartitionsApi.register", () => {
  const connection = (principal: string): Connection => ({
    id: 1,
    remoteHost: "::ffff:10.0.0.1",
    remotePort: 5000,
    listenerName: "PLAINTEXT",
    securityProtocol: "PLAINTEXT",
    principal
  })
  const describeAlice = StandardAuthorizer.StandardAuthorizer.make(
    { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
    [
      {
        resourceType: Acl.ResourceType.TOPIC,
        resourceName: "orders",
        patternType: Acl.PatternType.LITERAL,
        principal: "User:alice",
        host: "*",
        operation: Acl.AclOperation.READ,
        permissionType: Acl.AclPermissionType.ALLOW
      }
    ]
  )
  const run = async (handlers: Handlers, principal: string, body: DescribeTopicPartitions.Request) => {
    const frame = Either.getOrThrow(Api.encodeRequest(DescribeTopicPartitions.api, 0, 1, "t", body)).subarray(4)
    const r = await handlers.frameHandler(() => {})(frame, connection(principal))
    if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
    const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
    return Either.getOrThrow(Api.decodeResponse(DescribeTopicPartitions.api, 0, bytes)).body
  }

  it("checks DESCRIBE itself (READ implies it), under the authorization checks, and reads the limit per request", async () => {
    const config = { maxRequestPartitionSizeLimit: 2000 }
    const handlers = DescribeTopicPartitionsApi.register(
      new Handlers(),
      { view, config },
      { internalTopics: new Set(), authorizer: () => describeAlice }
    )
    Authorization.install(handlers, {
      authorizer: () => describeAlice,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const all = await run(handlers, "User:alice", request([]))
    expect(all.topics.map((t) => [t.name, t.partitions.length])).toEqual([["orders", 3]])
    const bits = all.topics[0]!.topicAuthorizedOperations
    expect([Acl.AclOperation.READ, Acl.AclOperation.DESCRIBE].map((op) => (bits >> op) & 1)).toEqual([1, 1])
    expect((bits >> Acl.AclOperation.WRITE) & 1).toBe(0)
    const named = await run(handlers, "User:bob", request(["orders"]))
    expect(named.topics.map((t) => [t.name, t.errorCode])).toEqual([["orders", E.TOPIC_AUTHORIZATION_FAILED]])
    config.maxRequestPartitionSizeLimit = 1
    expect((await run(handlers, "User:alice", request([]))).nextCursor).toEqual({
      topicName: "orders",
      partitionIndex: 1
    })
  })

  it("without an authorizer every topic is described", async () => {
    const handlers = DescribeTopicPartitionsApi.register(
      new Handlers(),
      { view, config: { maxRequestPartitionSizeLimit: 2000 } },
      { internalTopics: new Set(), authorizer: undefined }
    )
    expect((await run(handlers, "User:ANONYMOUS", request([]))).topics).toHaveLength(4)
  })
})
