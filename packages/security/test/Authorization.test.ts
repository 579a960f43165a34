import { describe, expect, it } from "@effect/vitest"
import { Acl, StandardAuthorizer } from "@clustermirror/authorizer"
import { Handlers } from "@clustermirror/network/RequestChannel"
import type { Connection } from "@clustermirror/network/SocketServer"
import {
  AlterPartitionReassignments,
  AlterReplicaLogDirs,
  Api,
  type Apis,
  ConsumerGroupDescribe,
  ConsumerGroupHeartbeat,
  DeleteGroups,
  DescribeCluster,
  DescribeLogDirs,
  DescribeQuorum,
  Envelope,
  Errors,
  ListGroups,
  ListPartitionReassignments,
  OffsetDelete,
  type Spec,
  TxnOffsetCommit,
  UpdateFeatures,
  WriteTxnMarkers
} from "@clustermirror/protocol"
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
    const handlers = new Handlers().register(Envelope.api, () => ({ responseData: null, errorCode: 0 }))
    install(handlers)
    const envelope = { requestData: Buffer.alloc(0), clientHostAddress: Buffer.from([127, 0, 0, 1]) }
    const frame = Either.getOrThrow(Api.encodeRequest(Envelope.api, 0, 1, "t", envelope)).subarray(4)
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

  it("serves partition reassignments to ALTER (alter) and DESCRIBE (list) on the cluster", async () => {
    const cluster = (principal: string, operation: number) => ({
      resourceType: Acl.ResourceType.CLUSTER,
      resourceName: Acl.CLUSTER_NAME,
      patternType: Acl.PatternType.LITERAL,
      principal,
      host: "*",
      operation,
      permissionType: Acl.AclPermissionType.ALLOW
    })
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [cluster("User:ops", Acl.AclOperation.ALTER), cluster("User:viewer", Acl.AclOperation.DESCRIBE)]
    )
    const handlers = new Handlers()
      .register(AlterPartitionReassignments.api, (_req, request) => ({
        throttleTimeMs: 0,
        errorCode: 0,
        responses: request.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: 0 }))
        }))
      }))
      .register(ListPartitionReassignments.api, () => ({ throttleTimeMs: 0, errorCode: 0, topics: [] }))
    Authorization.install(handlers, {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const respond = async <Req extends Spec.Fields, Res extends Spec.Fields>(
      api: Api.ApiDef<Req, Res>,
      version: number,
      body: unknown,
      principal: string
    ) => {
      const frame = Either.getOrThrow(Api.encodeRequest(api, version, 1, "t", body as never)).subarray(4)
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      return Either.getOrThrow(Api.decodeResponse(api, version, bytes)).body
    }
    const alter = {
      timeoutMs: 1000,
      allowReplicationFactorChange: true,
      topics: [{ name: "t", partitions: [{ partitionIndex: 0, replicas: [1, 2] }] }]
    }
    const refused = Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    const altered = (principal: string) => respond(AlterPartitionReassignments.api, 1, alter, principal)
    expect((await altered("User:ops")).responses[0]!.partitions[0]!.errorCode).toBe(0)
    const denied = await altered("User:viewer")
    expect(denied.errorCode).toBe(refused)
    expect(denied.responses[0]!.partitions[0]!.errorCode).toBe(refused)
    const listed = (principal: string) =>
      respond(ListPartitionReassignments.api, 0, { timeoutMs: 1000, topics: null }, principal)
    expect((await listed("User:viewer")).errorCode).toBe(0)
    expect((await listed("User:nobody")).errorCode).toBe(refused)
  })

  it("checks TxnOffsetCommit as Kafka: WRITE on the transactional id, READ on the group, READ on each topic", async () => {
    const allow = (principal: string, resourceType: number, resourceName: string, operation: number) => ({
      resourceType,
      resourceName,
      patternType: Acl.PatternType.LITERAL,
      principal,
      host: "*",
      operation,
      permissionType: Acl.AclPermissionType.ALLOW
    })
    const { READ, WRITE } = Acl.AclOperation
    const { GROUP, TOPIC, TRANSACTIONAL_ID } = Acl.ResourceType
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [
        allow("User:noTxn", GROUP, "g", READ),
        allow("User:noTxn", TOPIC, "a", READ),
        allow("User:noGroup", TRANSACTIONAL_ID, "tx", WRITE),
        allow("User:noGroup", TOPIC, "a", READ),
        allow("User:oneTopic", TRANSACTIONAL_ID, "tx", WRITE),
        allow("User:oneTopic", GROUP, "g", READ),
        allow("User:oneTopic", TOPIC, "a", READ)
      ]
    )
    const handlers = new Handlers().register(TxnOffsetCommit.api, (_req, request) => ({
      throttleTimeMs: 0,
      topics: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: 0 }))
      }))
    }))
    Authorization.install(handlers, {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const partition = { partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }
    const body = {
      transactionalId: "tx",
      groupId: "g",
      producerId: 1n,
      producerEpoch: 0,
      generationId: -1,
      memberId: "",
      groupInstanceId: null,
      topics: [
        { name: "a", partitions: [partition] },
        { name: "b", partitions: [partition] }
      ]
    }
    const frame = Either.getOrThrow(Api.encodeRequest(TxnOffsetCommit.api, 3, 1, "t", body)).subarray(4)
    const codes = async (principal: string) => {
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      const decoded = Either.getOrThrow(Api.decodeResponse(TxnOffsetCommit.api, 3, bytes))
      return decoded.body.topics.map((t) => [t.name, t.partitions[0]!.errorCode])
    }
    const E = Errors.ErrorCode
    expect(await codes("User:noTxn")).toEqual([
      ["a", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED],
      ["b", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    ])
    expect(await codes("User:noGroup")).toEqual([
      ["a", E.GROUP_AUTHORIZATION_FAILED],
      ["b", E.GROUP_AUTHORIZATION_FAILED]
    ])
    expect(await codes("User:oneTopic")).toEqual([
      ["a", 0],
      ["b", E.TOPIC_AUTHORIZATION_FAILED]
    ])
  })

  it("serves DescribeQuorum to principals with DESCRIBE on the cluster, on brokers and controllers", async () => {
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [
        {
          resourceType: Acl.ResourceType.CLUSTER,
          resourceName: Acl.CLUSTER_NAME,
          patternType: Acl.PatternType.LITERAL,
          principal: "User:ops",
          host: "*",
          operation: Acl.AclOperation.DESCRIBE,
          permissionType: Acl.AclPermissionType.ALLOW
        },
        {
          resourceType: Acl.ResourceType.CLUSTER,
          resourceName: Acl.CLUSTER_NAME,
          patternType: Acl.PatternType.LITERAL,
          principal: "User:admin",
          host: "*",
          operation: Acl.AclOperation.ALTER,
          permissionType: Acl.AclPermissionType.ALLOW
        }
      ]
    )
    const ctx = {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    }
    const quorum = { topics: [{ topicName: "__cluster_metadata", partitions: [{ partitionIndex: 0 }] }] }
    const answer = async <Req extends Spec.Fields, Res extends Spec.Fields>(
      handlers: Handlers,
      api: Api.ApiDef<Req, Res>,
      body: Spec.StructInput<Req>,
      principal: string
    ) => {
      const frame = Either.getOrThrow(Api.encodeRequest(api, 1, 1, "t", body)).subarray(4)
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      return Either.getOrThrow(Api.decodeResponse(api, 1, bytes)).body
    }
    const handlers = () =>
      new Handlers()
        .register(DescribeQuorum.api, () => ({ errorCode: 0, topics: [] }))
        .register(DescribeCluster.api, () => ({ errorCode: 0, errorMessage: null, clusterId: "c", brokers: [] }))
    const broker = handlers()
    Authorization.install(broker, ctx)
    const controller = handlers()
    Authorization.installController(controller, { ...ctx, trustClusterAction: true })
    const refused = Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    for (const h of [broker, controller]) {
      expect((await answer(h, DescribeQuorum.api, quorum, "User:ops")).errorCode).toBe(0)
      expect((await answer(h, DescribeQuorum.api, quorum, "User:alice")).errorCode).toBe(refused)
    }
    // Kafka's controller lists its controllers (DescribeCluster) to principals with ALTER on the cluster only.
    const cluster = { includeClusterAuthorizedOperations: false, endpointType: 2 }
    expect((await answer(broker, DescribeCluster.api, cluster, "User:alice")).errorCode).toBe(0)
    expect((await answer(controller, DescribeCluster.api, cluster, "User:ops")).errorCode).toBe(refused)
    expect((await answer(controller, DescribeCluster.api, cluster, "User:admin")).errorCode).toBe(0)
  })

  it("checks DeleteGroups and OffsetDelete as Kafka: DELETE on each group, and READ on each topic for OffsetDelete", async () => {
    const allow = (principal: string, resourceType: number, resourceName: string, operation: number) => ({
      resourceType,
      resourceName,
      patternType: Acl.PatternType.LITERAL,
      principal,
      host: "*",
      operation,
      permissionType: Acl.AclPermissionType.ALLOW
    })
    const { DELETE, READ } = Acl.AclOperation
    const { GROUP, TOPIC } = Acl.ResourceType
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [
        allow("User:ops", GROUP, "g", DELETE),
        allow("User:ops", TOPIC, "a", READ),
        // READ on the group is not DELETE.
        allow("User:reader", GROUP, "g", READ),
        allow("User:reader", TOPIC, "a", READ)
      ]
    )
    const handlers = new Handlers()
      .register(DeleteGroups.api, (_req, request) => ({
        throttleTimeMs: 0,
        results: request.groupsNames.map((groupId) => ({ groupId, errorCode: 0 }))
      }))
      .register(OffsetDelete.api, (_req, request) => ({
        errorCode: 0,
        throttleTimeMs: 0,
        topics: request.topics.map((t) => ({
          name: t.name,
          partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: 0 }))
        }))
      }))
    Authorization.install(handlers, {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const respond = async <Req extends Spec.Fields, Res extends Spec.Fields>(
      api: Api.ApiDef<Req, Res>,
      version: number,
      body: Spec.StructInput<Req>,
      principal: string
    ) => {
      const frame = Either.getOrThrow(Api.encodeRequest(api, version, 1, "t", body)).subarray(4)
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      return Either.getOrThrow(Api.decodeResponse(api, version, bytes)).body
    }
    const E = Errors.ErrorCode
    const deleted = async (principal: string) =>
      (await respond(DeleteGroups.api, 2, { groupsNames: ["g", "h", "g"] }, principal)).results.map((r) => [
        r.groupId,
        r.errorCode
      ])
    expect(await deleted("User:ops")).toEqual([
      ["g", 0],
      ["h", E.GROUP_AUTHORIZATION_FAILED]
    ])
    expect(await deleted("User:reader")).toEqual([
      ["g", E.GROUP_AUTHORIZATION_FAILED],
      ["h", E.GROUP_AUTHORIZATION_FAILED]
    ])
    const offsets = async (principal: string) => {
      const r = await respond(
        OffsetDelete.api,
        0,
        {
          groupId: "g",
          topics: [
            { name: "a", partitions: [{ partitionIndex: 0 }] },
            { name: "b", partitions: [{ partitionIndex: 0 }, { partitionIndex: 1 }] }
          ]
        },
        principal
      )
      return [r.errorCode, r.topics.flatMap((t) => t.partitions.map((p) => [t.name, p.partitionIndex, p.errorCode]))]
    }
    expect(await offsets("User:ops")).toEqual([
      0,
      [
        ["b", 0, E.TOPIC_AUTHORIZATION_FAILED],
        ["b", 1, E.TOPIC_AUTHORIZATION_FAILED],
        ["a", 0, 0]
      ]
    ])
    expect(await offsets("User:reader")).toEqual([E.GROUP_AUTHORIZATION_FAILED, []])
  })

  it("log dirs and features: DESCRIBE or ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED where each response carries it", async () => {
    const allow = (principal: string, operation: number) => ({
      resourceType: Acl.ResourceType.CLUSTER,
      resourceName: Acl.CLUSTER_NAME,
      patternType: Acl.PatternType.LITERAL,
      principal,
      host: "*",
      operation,
      permissionType: Acl.AclPermissionType.ALLOW
    })
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [allow("User:ops", Acl.AclOperation.ALTER), allow("User:viewer", Acl.AclOperation.DESCRIBE)]
    )
    const dir = { errorCode: 0, logDir: "/d", topics: [], totalBytes: 1n, usableBytes: 1n, isCordoned: false }
    const handlers = new Handlers()
      .register(DescribeLogDirs.api, () => ({ throttleTimeMs: 0, errorCode: 0, results: [dir] }))
      .register(AlterReplicaLogDirs.api, () => ({ throttleTimeMs: 0, results: [] }))
      .register(UpdateFeatures.api, () => ({ throttleTimeMs: 0, errorCode: 0, errorMessage: null, results: [] }))
    Authorization.install(handlers, {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const call = async (api: Apis.AnyApi, version: number, body: unknown, principal: string) => {
      const frame = Either.getOrThrow(Api.encodeRequest(api, version, 1, "t", body as never)).subarray(4)
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      return Either.getOrThrow(Api.decodeResponse(api, version, bytes)).body as Record<string, unknown>
    }
    const refused = Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    const describe = (p: string) => call(DescribeLogDirs.api, 4, { topics: null }, p)
    expect(await describe("User:viewer")).toMatchObject({ errorCode: 0, results: [dir] })
    expect(await describe("User:ops")).toMatchObject({ errorCode: 0, results: [dir] }) // ALTER implies DESCRIBE
    expect(await describe("User:nobody")).toMatchObject({ errorCode: refused, results: [] })
    expect(await call(DescribeLogDirs.api, 1, { topics: null }, "User:nobody")).toMatchObject({ results: [] })
    const move = { dirs: [{ path: "/e", topics: [{ name: "t", partitions: [0, 1] }] }] }
    expect((await call(AlterReplicaLogDirs.api, 2, move, "User:viewer")).results).toEqual([
      {
        topicName: "t",
        partitions: [
          { partitionIndex: 0, errorCode: refused },
          { partitionIndex: 1, errorCode: refused }
        ]
      }
    ])
    expect((await call(AlterReplicaLogDirs.api, 2, move, "User:ops")).results).toEqual([])
    const update = {
      timeoutMs: 1000,
      featureUpdates: [{ feature: "mirror.version", maxVersionLevel: 1, upgradeType: 1, allowDowngrade: false }],
      validateOnly: false
    }
    const message = Errors.message(refused)
    expect(await call(UpdateFeatures.api, 1, update, "User:viewer")).toEqual({
      throttleTimeMs: 0,
      errorCode: refused,
      errorMessage: message,
      results: [{ feature: "mirror.version", errorCode: refused, errorMessage: message }]
    })
    expect(await call(UpdateFeatures.api, 2, update, "User:ops")).toMatchObject({ errorCode: 0 })
  })

  it("checks the KIP-848 APIs as Kafka: READ on the group to heartbeat, DESCRIBE on each group to describe it", async () => {
    const allow = (principal: string, operation: number) => ({
      resourceType: Acl.ResourceType.GROUP,
      resourceName: "g",
      patternType: Acl.PatternType.LITERAL,
      principal,
      host: "*",
      operation,
      permissionType: Acl.AclPermissionType.ALLOW
    })
    const acls = StandardAuthorizer.StandardAuthorizer.make(
      { superUsers: new Set(), allowEveryoneIfNoAclFound: false },
      [allow("User:member", Acl.AclOperation.READ), allow("User:viewer", Acl.AclOperation.DESCRIBE)]
    )
    const handlers = new Handlers()
      .register(ConsumerGroupHeartbeat.api, (_req, request) => ({
        throttleTimeMs: 0,
        errorCode: 0,
        errorMessage: null,
        memberId: request.memberId,
        memberEpoch: 1,
        heartbeatIntervalMs: 5000,
        assignment: null
      }))
      .register(ConsumerGroupDescribe.api, (_req, request) => ({
        throttleTimeMs: 0,
        groups: request.groupIds.map((groupId) => ({
          errorCode: 0,
          errorMessage: null,
          groupId,
          groupState: "Stable",
          groupEpoch: 1,
          assignmentEpoch: 1,
          assignorName: "uniform",
          members: []
        }))
      }))
    Authorization.install(handlers, {
      authorizer: () => acls,
      topicNameById: () => undefined,
      topicExists: () => true,
      autoCreateTopicsEnable: () => false
    })
    const respond = async <Req extends Spec.Fields, Res extends Spec.Fields>(
      api: Api.ApiDef<Req, Res>,
      body: Spec.StructInput<Req>,
      principal: string
    ) => {
      const frame = Either.getOrThrow(Api.encodeRequest(api, 1, 1, "t", body)).subarray(4)
      const r = await handlers.frameHandler(() => {})(frame, connection(principal))
      if (r._tag !== "Respond") throw new Error(`no response: ${r._tag}`)
      const bytes = Buffer.concat(r.chunks.map((c) => Buffer.from(c))).subarray(4)
      return Either.getOrThrow(Api.decodeResponse(api, 1, bytes)).body
    }
    const E = Errors.ErrorCode
    const heartbeat = {
      groupId: "g",
      memberId: "m",
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: ["t"],
      subscribedTopicRegex: null,
      serverAssignor: null,
      topicPartitions: []
    }
    expect((await respond(ConsumerGroupHeartbeat.api, heartbeat, "User:member")).errorCode).toBe(0)
    // DESCRIBE on the group is not READ.
    expect((await respond(ConsumerGroupHeartbeat.api, heartbeat, "User:viewer")).errorCode).toBe(
      E.GROUP_AUTHORIZATION_FAILED
    )
    const described = async (principal: string) =>
      (
        await respond(
          ConsumerGroupDescribe.api,
          { groupIds: ["g", "h"], includeAuthorizedOperations: false },
          principal
        )
      ).groups.map((g) => [g.groupId, g.errorCode])
    expect(await described("User:viewer")).toEqual([
      ["g", 0],
      ["h", E.GROUP_AUTHORIZATION_FAILED]
    ])
    expect(await described("User:nobody")).toEqual([
      ["g", E.GROUP_AUTHORIZATION_FAILED],
      ["h", E.GROUP_AUTHORIZATION_FAILED]
    ])
  })

  it("names the host of an IPv4-mapped address as Kafka does", () => {
    expect(Authorization.identityOf(connection("User:a"))).toEqual({ principal: "User:a", host: "10.0.0.1" })
    expect(Authorization.hostOf("::1")).toBe("::1")
  })
})
