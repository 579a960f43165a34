/**
 * Authorization end to end on a real cluster (a controller and a broker over TCP, StandardAuthorizer on
 * both): these plaintext connections are all `User:ANONYMOUS`, so the cluster's own traffic and the admin
 * come from 127.0.0.1, which the ACLs allow everything, and the client under test connects from
 * 127.0.0.2, which gets exactly the ACLs each test grants (host-specific ACLs). Each KIP-1279 §8.2 row
 * is refused without its permission and accepted with it, and the per-RPC checks answer Kafka's errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Acl } from "@clustermirror/authorizer"
import {
  AddOffsetsToTxn,
  AddPartitionsToTxn,
  AlterUserScramCredentials,
  Api,
  BrokerHeartbeat,
  BrokerRegistration,
  BumpLeaderEpochs,
  CreateAcls,
  CreateClusterMirror,
  CreateTopics,
  DeleteAcls,
  DeleteClusterMirror,
  DeleteRecords,
  DeleteTopics,
  DescribeAcls,
  DescribeClientQuotas,
  DescribeClusterMirrors,
  DescribeConfigs,
  DescribeTransactions,
  DescribeUserScramCredentials,
  EndTxn,
  Errors,
  Fetch,
  FindCoordinator,
  Header,
  IncrementalAlterConfigs,
  InitProducerId,
  JoinGroup,
  ListClusterMirrors,
  ListGroups,
  ListOffsets,
  Metadata,
  OffsetFetch,
  PauseMirrorTopics,
  Produce,
  ReadMirrorStates,
  RecordBatch,
  RecoverMirrorTopics,
  ResumeMirrorTopics,
  type Spec,
  StartMirrorTopics,
  StopMirrorTopics,
  WriteMirrorStates
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

const E = Errors.ErrorCode
const { AclOperation: Op, ResourceType: Res, PatternType: Pat, AclPermissionType: Perm } = Acl
const ZERO_ID = "AAAAAAAAAAAAAAAAAAAAAA"

/** A connection from `localAddress`: requests encoded and answers decoded with our codec, matched by correlation id. */
const connect = (port: number, localAddress: string) =>
  new Promise<{
    call: <Req extends Spec.Fields, Res extends Spec.Fields>(
      api: Api.ApiDef<Req, Res>,
      body: Spec.StructInput<Req>,
      version?: number
    ) => Promise<Spec.StructType<Res>>
    close: () => void
  }>((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress })
    const waiting = new Map<number, (b: Buffer) => void>()
    const frames = new Header.FrameDecoder()
    let correlation = 1
    socket.on("data", (chunk) => {
      const r = frames.push(chunk)
      if (Either.isRight(r)) for (const f of r.right) waiting.get(f.readInt32BE(0))?.(f)
    })
    socket.once("error", reject)
    socket.once("connect", () =>
      resolve({
        call: (api, body, version = api.maxVersion) =>
          new Promise((res, rej) => {
            const id = correlation++
            waiting.set(id, (frame) => {
              waiting.delete(id)
              const decoded = Api.decodeResponse(api, version, frame)
              if (Either.isLeft(decoded)) rej(decoded.left)
              else res(decoded.right.body)
            })
            socket.write(Either.getOrThrow(Api.encodeRequest(api, version, id, "authz-test", body)))
          }),
        close: () => socket.destroy()
      })
    )
  })
type Conn = Awaited<ReturnType<typeof connect>>

const binding = (over: Partial<Acl.AclBinding>): Acl.AclBinding => ({
  resourceType: Res.TOPIC,
  resourceName: "*",
  patternType: Pat.LITERAL,
  principal: "User:ANONYMOUS",
  host: "127.0.0.2",
  operation: Op.ALL,
  permissionType: Perm.ALLOW,
  ...over
})
const creation = (b: Acl.AclBinding) => ({ ...b, resourcePatternType: b.patternType })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("authorization (StandardAuthorizer, KIP-1279 §8.2)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-authz-"))
  let cluster: Node.Embedded
  let admin: Conn
  let client: Conn

  /** Waits until the broker's authorizer decides as `ok` says (brokers follow the metadata log). */
  const untilApplied = async (ok: () => Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await ok()) return
      await sleep(25)
    }
    throw new Error("ACL change not applied")
  }
  const countAcls = async () =>
    (await admin.call(DescribeAcls.api, { ...filterWire(Acl.ANY_FILTER) })).resources.reduce(
      (n, r) => n + r.acls.length,
      0
    )
  const filterWire = (f: Acl.AclBindingFilter) => ({
    resourceTypeFilter: f.resourceType,
    resourceNameFilter: f.resourceName,
    patternTypeFilter: f.patternType,
    principalFilter: f.principal,
    hostFilter: f.host,
    operation: f.operation,
    permissionType: f.permissionType
  })
  /** Whether the broker serves exactly this binding (DescribeAcls with its exact filter). */
  const present = async (b: Acl.AclBinding) =>
    (await admin.call(DescribeAcls.api, filterWire({ ...b }))).resources.length > 0
  const grant = async (bindings: ReadonlyArray<Acl.AclBinding>) => {
    const res = await admin.call(CreateAcls.api, { creations: bindings.map(creation) })
    expect(res.results.map((r) => r.errorCode)).toEqual(bindings.map(() => 0))
    await untilApplied(async () => (await Promise.all(bindings.map(present))).every((p) => p))
  }
  const revoke = async (bindings: ReadonlyArray<Acl.AclBinding>) => {
    const res = await admin.call(DeleteAcls.api, {
      filters: bindings.map((b) => filterWire({ ...b }))
    })
    expect(res.filterResults.map((r) => r.errorCode)).toEqual(bindings.map(() => 0))
    await untilApplied(async () => (await Promise.all(bindings.map(present))).every((p) => !p))
  }
  /** Refused without `bindings`, accepted with them; the grants are removed again afterwards. */
  const row = async (
    bindings: ReadonlyArray<Acl.AclBinding>,
    refused: () => Promise<void>,
    accepted: () => Promise<void>
  ) => {
    await refused()
    await grant(bindings)
    try {
      await accepted()
    } finally {
      await revoke(bindings)
    }
  }

  beforeAll(async () => {
    cluster = await Node.embedded(1, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200,
      mirrorStateTopicNumPartitions: 1,
      mirrorStateTopicReplicationFactor: 1,
      offsetsTopicReplicationFactor: 1,
      groupInitialRebalanceDelayMs: 0,
      // Until the first ACLs are in, resources without ACLs are open: then every type has ACLs.
      authorizer: { superUsers: new Set(), allowEveryoneIfNoAclFound: true }
    })
    const port = cluster.brokers[0]!.port
    admin = await connect(port, "127.0.0.1")
    client = await connect(port, "127.0.0.2")
    const local = (resourceType: number, resourceName: string) =>
      binding({ resourceType, resourceName, host: "127.0.0.1" })
    const everything = [
      local(Res.CLUSTER, Acl.CLUSTER_NAME),
      local(Res.TOPIC, "*"),
      local(Res.GROUP, "*"),
      local(Res.TRANSACTIONAL_ID, "*"),
      local(Res.CLUSTER_MIRROR, "*")
    ]
    const res = await admin.call(CreateAcls.api, { creations: everything.map(creation) })
    expect(res.results.map((r) => r.errorCode)).toEqual([0, 0, 0, 0, 0])
    await untilApplied(async () => (await countAcls()) === everything.length)
    const created = await admin.call(CreateTopics.api, {
      topics: ["orders", "payments"].map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: []
      })),
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0, 0])
  }, 60_000)

  afterAll(async () => {
    admin?.close()
    client?.close()
    await cluster?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  // -------------------------------------------------------------------------------------------------
  // The ACL APIs

  it("DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER", async () => {
    const d = await client.call(DescribeAcls.api, filterWire(Acl.ANY_FILTER))
    expect(d.errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED)
    const c = await client.call(CreateAcls.api, { creations: [creation(binding({}))] })
    expect(c.results.map((r) => r.errorCode)).toEqual([E.CLUSTER_AUTHORIZATION_FAILED])
    const x = await client.call(DeleteAcls.api, { filters: [filterWire(Acl.ANY_FILTER)] })
    expect(x.filterResults.map((r) => r.errorCode)).toEqual([E.CLUSTER_AUTHORIZATION_FAILED])
    await row(
      [binding({ resourceType: Res.CLUSTER, resourceName: Acl.CLUSTER_NAME, operation: Op.DESCRIBE })],
      async () => {},
      async () => {
        const res = await client.call(DescribeAcls.api, filterWire({ ...Acl.ANY_FILTER, host: "127.0.0.1" }))
        expect(res.errorCode).toBe(0)
        expect(res.resources.map((r) => r.resourceType).sort()).toEqual([2, 3, 4, 5, 8])
      }
    )
  })

  it("validates bindings and filters at the controller with Kafka's messages", async () => {
    const res = await admin.call(CreateAcls.api, {
      creations: [
        creation(binding({ principal: "ANONYMOUS" })),
        creation(binding({ patternType: Pat.MATCH })),
        creation(binding({ operation: Op.ANY }))
      ]
    })
    expect(res.results.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [
        E.INVALID_REQUEST,
        "Could not parse principal from `ANONYMOUS` (no colon is present separating the principal type from name)"
      ],
      [E.INVALID_REQUEST, "Invalid patternType 2"],
      [E.INVALID_REQUEST, "Invalid operation 1"]
    ])
    const bad = await admin.call(DeleteAcls.api, { filters: [filterWire({ ...Acl.ANY_FILTER, resourceType: 0 })] })
    expect(bad.filterResults.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [E.INVALID_REQUEST, "Unknown patternFilter."]
    ])
  })

  it("answers prefixed and match filters, and DeleteAcls returns what it removed", async () => {
    const acls = [
      binding({ resourceName: "pay", patternType: Pat.PREFIXED, operation: Op.READ }),
      binding({ resourceName: "payments", operation: Op.WRITE })
    ]
    await grant(acls)
    const match = await admin.call(
      DescribeAcls.api,
      filterWire({
        ...Acl.ANY_FILTER,
        resourceType: Res.TOPIC,
        resourceName: "payments",
        patternType: Pat.MATCH,
        host: "127.0.0.2"
      })
    )
    expect(match.resources.map((r) => [r.resourceName, r.patternType]).sort()).toEqual([
      ["pay", Pat.PREFIXED],
      ["payments", Pat.LITERAL]
    ])
    const prefixed = await admin.call(
      DescribeAcls.api,
      filterWire({ ...Acl.ANY_FILTER, resourceType: Res.TOPIC, patternType: Pat.PREFIXED })
    )
    expect(prefixed.resources.map((r) => r.resourceName)).toEqual(["pay"])
    const deleted = await admin.call(DeleteAcls.api, {
      filters: [filterWire({ ...Acl.ANY_FILTER, resourceType: Res.TOPIC, host: "127.0.0.2" })]
    })
    expect(deleted.filterResults[0]!.matchingAcls.map((a) => a.resourceName).sort()).toEqual(["pay", "payments"])
  })

  // -------------------------------------------------------------------------------------------------
  // Per-RPC checks

  it("Metadata: a named topic without DESCRIBE is TOPIC_AUTHORIZATION_FAILED, all-topics omits it", async () => {
    const named = () =>
      client.call(Metadata.api, {
        topics: [{ name: "orders", topicId: ZERO_ID }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: true
      })
    // v10: the last version with clusterAuthorizedOperations in Metadata.
    const all = () =>
      client.call(
        Metadata.api,
        {
          topics: null,
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false,
          includeClusterAuthorizedOperations: true
        },
        10
      )
    await row(
      [binding({ resourceName: "orders", operation: Op.READ })],
      async () => {
        expect((await named()).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED])
        const res = await all()
        expect(res.topics.map((t) => t.name)).toEqual([])
        expect(res.clusterAuthorizedOperations).toBe(0)
      },
      async () => {
        const res = await named()
        expect(res.topics.map((t) => t.errorCode)).toEqual([0])
        expect(res.topics[0]!.topicAuthorizedOperations).toBe((1 << Op.READ) | (1 << Op.DESCRIBE))
        expect((await all()).topics.map((t) => t.name)).toEqual(["orders"])
      }
    )
  })

  it("Metadata auto-creation needs DESCRIBE and CREATE on the cluster or the topic", async () => {
    const ask = (name: string) =>
      client.call(Metadata.api, {
        topics: [{ name, topicId: ZERO_ID }],
        allowAutoTopicCreation: true,
        includeTopicAuthorizedOperations: false
      })
    const describe = binding({ resourceName: "auto-", patternType: Pat.PREFIXED, operation: Op.DESCRIBE })
    expect((await ask("auto-1")).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED])
    await row(
      [describe, binding({ resourceName: "auto-", patternType: Pat.PREFIXED, operation: Op.CREATE })],
      async () => {
        await grant([describe])
        expect((await ask("auto-1")).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED])
      },
      async () => {
        const res = await ask("auto-1")
        expect([0, E.LEADER_NOT_AVAILABLE]).toContain(res.topics[0]!.errorCode)
      }
    )
  })

  it("Produce needs WRITE and Fetch READ on the topic, ListOffsets DESCRIBE", async () => {
    const produce = () =>
      client.call(
        Produce.api,
        {
          transactionalId: null,
          acks: -1,
          timeoutMs: 10_000,
          topicData: [
            {
              name: "payments",
              partitionData: [
                {
                  index: 0,
                  records: RecordBatch.build({
                    records: [{ value: Buffer.from("x") }],
                    timestamp: Date.now(),
                    compression: 0
                  })
                }
              ]
            }
          ]
        },
        9
      )
    const fetch = () =>
      client.call(
        Fetch.api,
        {
          replicaId: -1,
          maxWaitMs: 0,
          minBytes: 1,
          maxBytes: 1 << 20,
          isolationLevel: 0,
          topics: [{ topic: "payments", partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }]
        },
        12
      )
    const list = () =>
      client.call(ListOffsets.api, {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: "payments", partitions: [{ partitionIndex: 0, timestamp: -1n }] }]
      })
    await row(
      [binding({ resourceName: "payments", operation: Op.WRITE })],
      async () => {
        expect((await produce()).responses[0]!.partitionResponses[0]!.errorCode).toBe(E.TOPIC_AUTHORIZATION_FAILED)
      },
      async () => {
        expect((await produce()).responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
      }
    )
    await row(
      [binding({ resourceName: "payments", operation: Op.READ })],
      async () => {
        expect((await fetch()).responses[0]!.partitions[0]!.errorCode).toBe(E.TOPIC_AUTHORIZATION_FAILED)
        expect((await list()).topics[0]!.partitions[0]!.errorCode).toBe(E.TOPIC_AUTHORIZATION_FAILED)
      },
      async () => {
        expect((await fetch()).responses[0]!.partitions[0]!.errorCode).toBe(0)
        expect((await list()).topics[0]!.partitions[0]!.errorCode).toBe(0)
      }
    )
    // Transactional records need WRITE on the request's transactional id, and a transactional id at all.
    const transactional = (transactionalId: string | null) =>
      client.call(
        Produce.api,
        {
          transactionalId,
          acks: -1,
          timeoutMs: 10_000,
          topicData: [
            {
              name: "payments",
              partitionData: [
                {
                  index: 0,
                  records: RecordBatch.build({
                    records: [{ value: Buffer.from("t") }],
                    timestamp: Date.now(),
                    isTransactional: true,
                    producerId: 1n,
                    producerEpoch: 0
                  })
                }
              ]
            }
          ]
        },
        9
      )
    for (const id of [null, "txn-1"])
      expect((await transactional(id)).responses[0]!.partitionResponses[0]!.errorCode).toBe(
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
      )
    // A follower's fetch needs CLUSTER_ACTION.
    const follower = await client.call(
      Fetch.api,
      {
        replicaId: 7,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        topics: [{ topic: "payments", partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }]
      },
      12
    )
    expect(follower.responses[0]!.partitions[0]!.errorCode).toBe(E.TOPIC_AUTHORIZATION_FAILED)
  })

  it("CreateTopics needs CREATE, DeleteTopics DELETE, DescribeConfigs DESCRIBE_CONFIGS", async () => {
    const create = () =>
      client.call(CreateTopics.api, {
        topics: [{ name: "made", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
        timeoutMs: 10_000,
        validateOnly: false
      })
    await row(
      [binding({ resourceName: "made", operation: Op.CREATE })],
      async () => expect((await create()).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED]),
      async () => {
        const res = await create()
        expect(res.topics.map((t) => t.errorCode)).toEqual([0])
        // Without DESCRIBE_CONFIGS the created topic's configs are withheld.
        expect(res.topics.map((t) => [t.topicConfigErrorCode, t.configs])).toEqual([[E.TOPIC_AUTHORIZATION_FAILED, []]])
      }
    )
    const describe = () =>
      client.call(DescribeConfigs.api, {
        resources: [{ resourceType: 2, resourceName: "made", configurationKeys: null }],
        includeSynonyms: false,
        includeDocumentation: false
      })
    await row(
      [binding({ resourceName: "made", operation: Op.ALTER_CONFIGS })],
      async () => expect((await describe()).results.map((r) => r.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED]),
      async () => expect((await describe()).results.map((r) => r.errorCode)).toEqual([0])
    )
    const remove = () =>
      client.call(DeleteTopics.api, { topics: [{ name: "made", topicId: ZERO_ID }], timeoutMs: 10_000 })
    await row(
      [binding({ resourceName: "made", operation: Op.DELETE })],
      async () => expect((await remove()).responses.map((r) => r.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED]),
      async () => expect((await remove()).responses.map((r) => r.errorCode)).toEqual([0])
    )
  })

  it("DeleteRecords needs DELETE on the topic", async () => {
    const produced = await admin.call(Produce.api, {
      acks: -1,
      timeoutMs: 10_000,
      topicData: [
        {
          name: "payments",
          partitionData: [
            {
              index: 0,
              records: RecordBatch.build({ records: [{ value: Buffer.from("a") }, { value: Buffer.from("b") }] })
            }
          ]
        }
      ]
    })
    expect(produced.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
    const remove = () =>
      client.call(DeleteRecords.api, {
        topics: [{ name: "payments", partitions: [{ partitionIndex: 0, offset: 1n }] }],
        timeoutMs: 10_000
      })
    const answers = async () =>
      (await remove()).topics.flatMap((t) => t.partitions.map((p) => [p.errorCode, p.lowWatermark]))
    // DESCRIBE (implied by READ) is not enough.
    await row(
      [binding({ resourceName: "payments", operation: Op.READ })],
      async () => expect(await answers()).toEqual([[E.TOPIC_AUTHORIZATION_FAILED, -1n]]),
      async () => expect(await answers()).toEqual([[E.TOPIC_AUTHORIZATION_FAILED, -1n]])
    )
    await row(
      [binding({ resourceName: "payments", operation: Op.DELETE })],
      async () => expect(await answers()).toEqual([[E.TOPIC_AUTHORIZATION_FAILED, -1n]]),
      async () => expect(await answers()).toEqual([[0, 1n]])
    )
  })

  it("groups: FindCoordinator and OffsetFetch need DESCRIBE, JoinGroup READ, ListGroups filters", async () => {
    const find = () => client.call(FindCoordinator.api, { keyType: 0, coordinatorKeys: ["g1"] })
    const join = () =>
      client.call(JoinGroup.api, {
        groupId: "g1",
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        memberId: "",
        groupInstanceId: null,
        protocolType: "consumer",
        protocols: [{ name: "range", metadata: Buffer.alloc(0) }],
        reason: null
      })
    const offsets = () =>
      client.call(OffsetFetch.api, { groups: [{ groupId: "g1", topics: null }], requireStable: false }, 8)
    await row(
      [binding({ resourceType: Res.GROUP, resourceName: "g1", operation: Op.DESCRIBE })],
      async () => {
        expect((await find()).coordinators.map((c) => c.errorCode)).toEqual([E.GROUP_AUTHORIZATION_FAILED])
        expect((await offsets()).groups.map((g) => g.errorCode)).toEqual([E.GROUP_AUTHORIZATION_FAILED])
      },
      async () => {
        let found = await find()
        // The group coordinator loads while __consumer_offsets is created.
        for (let i = 0; i < 200 && found.coordinators[0]!.errorCode === E.COORDINATOR_NOT_AVAILABLE; i++) {
          await sleep(50)
          found = await find()
        }
        expect(found.coordinators.map((c) => c.errorCode)).toEqual([0])
        expect((await offsets()).groups.map((g) => g.errorCode)).toEqual([0])
      }
    )
    expect((await join()).errorCode).toBe(E.GROUP_AUTHORIZATION_FAILED)
    // The admin's group is listed for the admin only.
    await admin.call(JoinGroup.api, {
      groupId: "admins",
      sessionTimeoutMs: 10_000,
      rebalanceTimeoutMs: 10_000,
      memberId: "",
      groupInstanceId: null,
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: Buffer.alloc(0) }],
      reason: null
    })
    const listed = async (c: Conn) =>
      (await c.call(ListGroups.api, { statesFilter: [], typesFilter: [] })).groups.map((g) => g.groupId)
    expect(await listed(admin)).toContain("admins")
    expect(await listed(client)).toEqual([])
  })

  it("InitProducerId needs IDEMPOTENT_WRITE on the cluster or WRITE on a topic", async () => {
    const init = () =>
      client.call(InitProducerId.api, {
        transactionalId: null,
        transactionTimeoutMs: 60_000,
        producerId: -1n,
        producerEpoch: -1
      })
    await row(
      [binding({ resourceName: "payments", operation: Op.WRITE })],
      async () => expect((await init()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED),
      async () => expect((await init()).errorCode).toBe(0)
    )
  })

  it("transactions: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn need WRITE on the transactional id; DescribeTransactions DESCRIBE", async () => {
    const txn = (operation: number) => binding({ resourceType: Res.TRANSACTIONAL_ID, resourceName: "t1", operation })
    const add = () =>
      client.call(
        AddPartitionsToTxn.api,
        {
          v3AndBelowTransactionalId: "t1",
          v3AndBelowProducerId: 1n,
          v3AndBelowProducerEpoch: 0,
          v3AndBelowTopics: [{ name: "orders", partitions: [0] }]
        },
        3
      )
    const offsets = () =>
      client.call(AddOffsetsToTxn.api, { transactionalId: "t1", producerId: 1n, producerEpoch: 0, groupId: "g1" })
    const end = () =>
      client.call(EndTxn.api, { transactionalId: "t1", producerId: 1n, producerEpoch: 0, committed: true })
    const describe = () => client.call(DescribeTransactions.api, { transactionalIds: ["t1"] })
    const code = async () => (await add()).resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode
    await row(
      [txn(Op.WRITE), txn(Op.DESCRIBE)],
      async () => {
        expect(await code()).toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        expect((await offsets()).errorCode).toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        expect((await end()).errorCode).toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        expect((await describe()).transactionStates[0]!.errorCode).toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
      },
      async () => {
        // Past authorization: the topic and the group are refused next, then the coordinator answers.
        expect(await code()).toBe(E.TOPIC_AUTHORIZATION_FAILED)
        expect((await offsets()).errorCode).toBe(E.GROUP_AUTHORIZATION_FAILED)
        expect((await end()).errorCode).not.toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        expect((await describe()).transactionStates[0]!.errorCode).not.toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
      }
    )
  })

  // -------------------------------------------------------------------------------------------------
  // SCRAM credentials and client quotas (kafka-configs --entity-type users)

  const cluster_ = (operation: number) =>
    binding({ resourceType: Res.CLUSTER, resourceName: Acl.CLUSTER_NAME, operation })

  it("DescribeUserScramCredentials needs DESCRIBE on the cluster", async () => {
    const describe = () => client.call(DescribeUserScramCredentials.api, { users: null })
    await row(
      [cluster_(Op.DESCRIBE)],
      async () => {
        const res = await describe()
        expect([res.errorCode, res.results]).toEqual([E.CLUSTER_AUTHORIZATION_FAILED, []])
      },
      async () => expect((await describe()).errorCode).toBe(0)
    )
  })

  it("AlterUserScramCredentials needs ALTER on the cluster, each user refused once", async () => {
    const upsertion = (name: string) => ({
      name,
      mechanism: 1, // SCRAM-SHA-256
      iterations: 4096,
      salt: Buffer.alloc(16, 7),
      saltedPassword: Buffer.alloc(32, 9)
    })
    const alter = () =>
      client.call(AlterUserScramCredentials.api, {
        deletions: [{ name: "bob", mechanism: 2 }],
        upsertions: [upsertion("alice"), upsertion("bob")]
      })
    await row(
      [cluster_(Op.ALTER)],
      async () => {
        const res = await alter()
        expect(res.results.map((r) => [r.user, r.errorCode])).toEqual([
          ["bob", E.CLUSTER_AUTHORIZATION_FAILED],
          ["alice", E.CLUSTER_AUTHORIZATION_FAILED]
        ])
      },
      async () => {
        const res = await client.call(AlterUserScramCredentials.api, {
          deletions: [],
          upsertions: [upsertion("alice")]
        })
        expect(res.results.map((r) => [r.user, r.errorCode])).toEqual([["alice", 0]])
      }
    )
  })

  it("DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster", async () => {
    const describe = () => client.call(DescribeClientQuotas.api, { components: [], strict: false })
    await row(
      [cluster_(Op.DESCRIBE_CONFIGS)],
      async () => {
        const res = await describe()
        expect([res.errorCode, res.entries]).toEqual([E.CLUSTER_AUTHORIZATION_FAILED, null])
      },
      async () => expect((await describe()).errorCode).toBe(0)
    )
  })

  // -------------------------------------------------------------------------------------------------
  // KIP-1279 §8.2, one test per row

  const mirrorConfig = [
    { name: "bootstrap.servers", value: "127.0.0.1:1" },
    { name: "mirror.source.cluster.id", value: "source-cluster" }
  ]
  const mirror = (name: string, operation: number) =>
    binding({ resourceType: Res.CLUSTER_MIRROR, resourceName: name, operation })
  const topicsOf = (name: string) => [{ topicId: "q83vEjRWeJCrze8SNFZ4kA", topicName: name, numPartitions: 1 }]

  it("CreateClusterMirror: CREATE on the mirror, plus CREATE on the cluster or __mirror_state for the state topic", async () => {
    const create = () => client.call(CreateClusterMirror.api, { mirrorName: "m1", config: mirrorConfig })
    expect((await create()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED)
    await row(
      [mirror("m1", Op.CREATE), binding({ resourceName: "__mirror_state", operation: Op.CREATE })],
      async () => {},
      async () => expect((await create()).errorCode).toBe(0)
    )
    // The state topic exists now: CREATE on the mirror alone is enough.
    await row(
      [mirror("m2", Op.CREATE)],
      async () => {},
      async () =>
        expect((await client.call(CreateClusterMirror.api, { mirrorName: "m2", config: mirrorConfig })).errorCode).toBe(
          0
        )
    )
  })

  it("StartMirrorTopics: ALTER on the mirror and ALTER_CONFIGS on each topic", async () => {
    const start = () => client.call(StartMirrorTopics.api, { mirrorName: "m1", topics: topicsOf("mirrored") })
    expect((await start()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED)
    await row(
      [mirror("m1", Op.ALTER), binding({ resourceName: "mirrored", operation: Op.ALTER_CONFIGS })],
      async () => {
        await grant([mirror("m1", Op.ALTER)])
        expect((await start()).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED])
      },
      async () => {
        const res = await start()
        expect(res.topics.map((t) => [t.errorCode, t.errorMessage])).toEqual([[0, null]])
      }
    )
  })

  for (const [name, api] of [
    ["PauseMirrorTopics", PauseMirrorTopics.api],
    ["ResumeMirrorTopics", ResumeMirrorTopics.api],
    ["StopMirrorTopics", StopMirrorTopics.api]
  ] as const)
    it(`${name}: ALTER on the mirror and ALTER_CONFIGS on each topic`, async () => {
      const call = () =>
        client.call(api as typeof PauseMirrorTopics.api, { mirrorName: "m1", topics: [{ topicName: "mirrored" }] })
      await row(
        [mirror("m1", Op.ALTER)],
        async () => expect((await call()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED),
        async () => expect((await call()).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED])
      )
      await row(
        [mirror("m1", Op.ALTER), binding({ resourceName: "mirrored", operation: Op.ALTER_CONFIGS })],
        async () => {},
        async () => {
          const res = await call()
          expect([res.errorCode, ...res.topics.map((t) => t.errorCode)]).not.toContain(E.TOPIC_AUTHORIZATION_FAILED)
          expect([res.errorCode, ...res.topics.map((t) => t.errorCode)]).not.toContain(
            E.CLUSTER_MIRROR_AUTHORIZATION_FAILED
          )
        }
      )
    })

  it("RecoverMirrorTopics: ALTER on the mirror and ALTER_CONFIGS on each topic", async () => {
    const call = () =>
      client.call(RecoverMirrorTopics.api, {
        mirrorName: "m1",
        topics: [{ topicName: "mirrored" }],
        acceptDataLoss: false
      })
    await row(
      [mirror("m1", Op.ALTER), binding({ resourceName: "mirrored", operation: Op.ALTER_CONFIGS })],
      async () => expect((await call()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED),
      async () => expect((await call()).errorCode).not.toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED)
    )
  })

  it("ListClusterMirrors and DescribeClusterMirrors: DESCRIBE on each mirror", async () => {
    const list = async () =>
      (await client.call(ListClusterMirrors.api, { includeTopicNames: false })).mirrors.map((m) => m.mirrorName)
    const describe = () =>
      client.call(DescribeClusterMirrors.api, { mirrorNames: ["m1"], includeAuthorizedOperations: true })
    await row(
      [mirror("m1", Op.DESCRIBE)],
      async () => {
        expect(await list()).toEqual([])
        expect((await describe()).mirrors.map((m) => m.errorCode)).toEqual([E.CLUSTER_MIRROR_AUTHORIZATION_FAILED])
      },
      async () => {
        expect(await list()).toEqual(["m1"])
        const res = await describe()
        expect(res.mirrors.map((m) => m.errorCode)).toEqual([0])
        expect(res.mirrors[0]!.authorizedOperations).toBe(1 << Op.DESCRIBE)
      }
    )
  })

  it("DescribeConfigs and IncrementalAlterConfigs of a mirror: DESCRIBE_CONFIGS and ALTER_CONFIGS on it", async () => {
    const describe = () =>
      client.call(DescribeConfigs.api, {
        resources: [{ resourceType: 64, resourceName: "m1", configurationKeys: null }],
        includeSynonyms: false,
        includeDocumentation: false
      })
    await row(
      [mirror("m1", Op.DESCRIBE_CONFIGS)],
      async () =>
        expect((await describe()).results.map((r) => r.errorCode)).toEqual([E.CLUSTER_MIRROR_AUTHORIZATION_FAILED]),
      async () => expect((await describe()).results.map((r) => r.errorCode)).toEqual([0])
    )
    const alter = () =>
      client.call(IncrementalAlterConfigs.api, {
        resources: [
          {
            resourceType: 64,
            resourceName: "m1",
            configs: [{ name: "mirror.source.cluster.id", configOperation: 0, value: "source-cluster" }]
          }
        ],
        validateOnly: true
      })
    await row(
      [mirror("m1", Op.ALTER_CONFIGS)],
      async () =>
        expect((await alter()).responses.map((r) => r.errorCode)).toEqual([E.CLUSTER_MIRROR_AUTHORIZATION_FAILED]),
      async () =>
        expect((await alter()).responses.map((r) => r.errorCode)).not.toContain(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED)
    )
  })

  it("ReadMirrorStates, WriteMirrorStates and BumpLeaderEpochs: CLUSTER_ACTION on the cluster", async () => {
    const read = () => client.call(ReadMirrorStates.api, { mirrorName: "m1", topics: [] })
    const write = () => client.call(WriteMirrorStates.api, { mirrorName: "m1", topics: [], stoppedTopics: [] })
    const bump = () => client.call(BumpLeaderEpochs.api, { topics: [] })
    await row(
      [binding({ resourceType: Res.CLUSTER, resourceName: Acl.CLUSTER_NAME, operation: Op.CLUSTER_ACTION })],
      async () => {
        expect((await read()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED)
        expect((await write()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED)
        expect((await bump()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED)
      },
      async () => {
        expect((await read()).errorCode).not.toBe(E.CLUSTER_AUTHORIZATION_FAILED)
        expect((await write()).errorCode).not.toBe(E.CLUSTER_AUTHORIZATION_FAILED)
        expect((await bump()).errorCode).not.toBe(E.CLUSTER_AUTHORIZATION_FAILED)
      }
    )
  })

  it("DeleteClusterMirror: DELETE on the mirror (the controller takes the forwarding broker's CLUSTER_ACTION)", async () => {
    expect((await admin.call(CreateClusterMirror.api, { mirrorName: "gone", config: mirrorConfig })).errorCode).toBe(0)
    const remove = () => client.call(DeleteClusterMirror.api, { mirrorName: "gone" })
    await row(
      [mirror("gone", Op.DELETE)],
      async () => expect((await remove()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED),
      async () => expect((await remove()).errorCode).toBe(0)
    )
  })
  it("the controller: brokers' RPCs need CLUSTER_ACTION, admin requests their own permission", async () => {
    const controller = await connect(cluster.controllerPort, "127.0.0.2")
    try {
      const register = () =>
        controller.call(BrokerRegistration.api, {
          brokerId: 99,
          clusterId: cluster.clusterId,
          incarnationId: "q83vEjRWeJCrze8SNFZ4kA",
          listeners: [{ name: "PLAINTEXT", host: "127.0.0.2", port: 1, securityProtocol: 0 }],
          features: [],
          rack: null,
          isMigratingZkBroker: false,
          logDirs: [],
          previousBrokerEpoch: -1n
        })
      const heartbeat = () =>
        controller.call(BrokerHeartbeat.api, {
          brokerId: 1,
          brokerEpoch: 0n,
          currentMetadataOffset: 0n,
          wantFence: false,
          wantShutDown: false
        })
      const createTopic = () =>
        controller.call(CreateTopics.api, {
          topics: [{ name: "direct", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
          timeoutMs: 10_000,
          validateOnly: true
        })
      const createAcl = () => controller.call(CreateAcls.api, { creations: [creation(binding({ resourceName: "x" }))] })
      expect((await register()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED)
      expect((await heartbeat()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED)
      expect((await createTopic()).topics.map((t) => t.errorCode)).toEqual([E.TOPIC_AUTHORIZATION_FAILED])
      expect((await createAcl()).results.map((r) => r.errorCode)).toEqual([E.CLUSTER_AUTHORIZATION_FAILED])
      // The controller decides with the ACLs it committed: no broker to catch up with.
      await grant([binding({ resourceName: "direct", operation: Op.CREATE })])
      expect((await createTopic()).topics.map((t) => t.errorCode)).toEqual([0])
      await revoke([binding({ resourceName: "direct", operation: Op.CREATE })])

      // §8.2's controller column: DeleteClusterMirror needs ALTER on the mirror there, Start (and the other
      // topic operations) ALTER and ALTER_CONFIGS, BumpLeaderEpochs CLUSTER_ACTION.
      const remove = () => controller.call(DeleteClusterMirror.api, { mirrorName: "m2", stateValidationOffset: -1n })
      await row(
        [mirror("m2", Op.ALTER)],
        async () => expect((await remove()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED),
        async () => expect((await remove()).errorCode).not.toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED)
      )
      const start = () =>
        controller.call(StartMirrorTopics.api, {
          mirrorName: "m1",
          topics: topicsOf("direct-mirrored"),
          stateValidationOffset: -1n
        })
      await row(
        [mirror("m1", Op.ALTER), binding({ resourceName: "direct-mirrored", operation: Op.ALTER_CONFIGS })],
        async () => expect((await start()).errorCode).toBe(E.CLUSTER_MIRROR_AUTHORIZATION_FAILED),
        async () => {
          const res = await start()
          expect([res.errorCode, ...res.topics.map((t) => t.errorCode)]).not.toContain(
            E.CLUSTER_MIRROR_AUTHORIZATION_FAILED
          )
          expect(res.topics.map((t) => t.errorCode)).not.toContain(E.TOPIC_AUTHORIZATION_FAILED)
        }
      )
      const bump = () => controller.call(BumpLeaderEpochs.api, { topics: [] })
      await row(
        [binding({ resourceType: Res.CLUSTER, resourceName: Acl.CLUSTER_NAME, operation: Op.CLUSTER_ACTION })],
        async () => expect((await bump()).errorCode).toBe(E.CLUSTER_AUTHORIZATION_FAILED),
        async () => expect((await bump()).errorCode).toBe(0)
      )
    } finally {
      controller.close()
    }
  })
})

describe("without an authorizer", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-no-authz-"))
  let cluster: Node.Embedded
  let conn: Conn
  beforeAll(async () => {
    cluster = await Node.embedded(1, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200
    })
    conn = await connect(cluster.brokers[0]!.port, "127.0.0.2")
  }, 60_000)
  afterAll(async () => {
    conn?.close()
    await cluster?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("answers the ACL APIs with SECURITY_DISABLED and allows everything else", async () => {
    const d = await conn.call(DescribeAcls.api, {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1
    })
    expect([d.errorCode, d.errorMessage]).toEqual([E.SECURITY_DISABLED, "No Authorizer is configured."])
    const c = await conn.call(CreateAcls.api, { creations: [creation(binding({}))] })
    expect(c.results.map((r) => r.errorCode)).toEqual([E.SECURITY_DISABLED])
    const x = await conn.call(DeleteAcls.api, {
      filters: [
        {
          resourceTypeFilter: 1,
          resourceNameFilter: null,
          patternTypeFilter: 1,
          principalFilter: null,
          hostFilter: null,
          operation: 1,
          permissionType: 1
        }
      ]
    })
    expect(x.filterResults.map((r) => r.errorCode)).toEqual([E.SECURITY_DISABLED])
    const m = await conn.call(Metadata.api, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false
    })
    expect(m.brokers.length).toBe(1)
  })
})
