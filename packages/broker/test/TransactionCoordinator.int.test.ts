/**
 * The transaction coordinator over the wire, on a cluster of three brokers (real TCP): FindCoordinator key
 * type 1 creates `__transaction_state` and answers the leader of `abs(hashCode(id)) % partitions`, single
 * (v3) and batched (v4); InitProducerId refuses a timeout above `transaction.max.timeout.ms`; EndTxn without
 * a transaction is INVALID_TXN_STATE; AddPartitionsToTxn v4 VerifyOnly answers membership; a transaction
 * left open past its timeout is aborted by the coordinator (epoch bumped, ABORT markers written, so the last
 * stable offset moves past it), after which the old epoch is fenced with the error of each request version.
 */
import { Connection } from "@clustermirror/client"
import {
  AddPartitionsToTxn,
  DescribeConfigs,
  DescribeTransactions,
  EndTxn,
  Errors,
  FindCoordinator,
  Hashing,
  InitProducerId,
  ListOffsets,
  Metadata,
  Produce,
  RecordBatch
} from "@clustermirror/protocol"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

const E = Errors.ErrorCode
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const until = async <A>(what: string, f: () => Promise<A | undefined>, timeoutMs = 30_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const a = await f()
    if (a !== undefined) return a
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

describe("transaction coordinator over the wire", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-txncoord-"))
  let cluster: Node.Embedded
  let any: Connection.Connection
  const open: Array<Connection.Connection> = []
  const PARTITIONS = 3

  beforeAll(async () => {
    cluster = await Node.embedded(3, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200,
      transactionStateLogNumPartitions: PARTITIONS,
      transactionMaxTimeoutMs: 60_000,
      transactionAbortTimedOutTransactionCleanupIntervalMs: 200
    })
    any = await Connection.open({ host: "127.0.0.1", port: cluster.brokers[0]!.port })
    open.push(any)
  })
  afterAll(async () => {
    for (const c of open) await c.close()
    await cluster?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  /** A connection to the coordinator of `id`, once FindCoordinator (v4, batched) names one. */
  const coordinatorOf = async (id: string) => {
    const found = await until(`the coordinator of ${id}`, async () => {
      const r = await any.request(FindCoordinator.api, 4, { keyType: 1, coordinatorKeys: [id] })
      return r.coordinators[0]?.errorCode === 0 ? r.coordinators[0] : undefined
    })
    const c = await Connection.open({ host: "127.0.0.1", port: found.port })
    open.push(c)
    return { conn: c, nodeId: found.nodeId }
  }

  it("FindCoordinator key type 1 creates __transaction_state and names each id's partition leader (v3 and v4)", async () => {
    const ids = ["alpha", "beta", "gamma", "delta"]
    const first = await any.request(FindCoordinator.api, 4, { keyType: 1, coordinatorKeys: ids })
    expect(first.coordinators.map((c) => c.key)).toEqual(ids)
    const batched = await until("every coordinator", async () => {
      const r = await any.request(FindCoordinator.api, 4, { keyType: 1, coordinatorKeys: ids })
      return r.coordinators.every((c) => c.errorCode === 0) ? r.coordinators : undefined
    })
    const meta = await any.request(Metadata.api, 12, {
      topics: [{ name: "__transaction_state", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false
    })
    const topic = meta.topics[0]!
    expect(topic.isInternal).toBe(true)
    expect(topic.partitions).toHaveLength(PARTITIONS)
    for (const p of topic.partitions) expect(p.replicaNodes).toHaveLength(3)
    for (const c of batched) {
      const partition = Hashing.groupCoordinatorPartition(c.key, PARTITIONS)
      expect(c.nodeId).toBe(topic.partitions.find((p) => p.partitionIndex === partition)!.leaderId)
    }
    const single = await any.request(FindCoordinator.api, 3, { key: "alpha", keyType: 1 })
    expect(single).toMatchObject({ errorCode: 0, nodeId: batched[0]!.nodeId })
    const configs = await any.request(DescribeConfigs.api, 4, {
      resources: [{ resourceType: 2, resourceName: "__transaction_state", configurationKeys: null }],
      includeSynonyms: false,
      includeDocumentation: false
    })
    const value = (name: string) => configs.results[0]!.configs.find((c) => c.name === name)?.value
    expect(value("cleanup.policy")).toBe("compact")
    expect(value("min.insync.replicas")).toBe("2")
  })

  it("InitProducerId refuses a timeout above transaction.max.timeout.ms; EndTxn without a transaction is INVALID_TXN_STATE", async () => {
    const { conn } = await coordinatorOf("refusals")
    const init = (timeout: number) =>
      conn.request(InitProducerId.api, 4, {
        transactionalId: "refusals",
        transactionTimeoutMs: timeout,
        producerId: -1n,
        producerEpoch: -1
      })
    expect((await init(60_001)).errorCode).toBe(E.INVALID_TRANSACTION_TIMEOUT)
    const ok = await init(10_000)
    expect(ok).toMatchObject({ errorCode: 0, producerEpoch: 0 })
    expect(ok.producerId >= 0n).toBe(true)
    const end = await conn.request(EndTxn.api, 3, {
      transactionalId: "refusals",
      producerId: ok.producerId,
      producerEpoch: 0,
      committed: true
    })
    expect(end.errorCode).toBe(E.INVALID_TXN_STATE)
    // The coordinator of another id's partition is not this one (or it is: then the answer is the same).
    const wrong = await conn.request(EndTxn.api, 3, {
      transactionalId: "refusals",
      producerId: ok.producerId + 1n,
      producerEpoch: 0,
      committed: true
    })
    expect(wrong.errorCode).toBe(E.INVALID_PRODUCER_ID_MAPPING)
  })

  it("a transaction left open past its timeout is aborted by the coordinator, and its old epoch is fenced", async () => {
    const created = await any.request(Metadata.api, 12, {
      topics: [{ name: "expiring", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      allowAutoTopicCreation: true,
      includeTopicAuthorizedOperations: false
    })
    expect([0, E.LEADER_NOT_AVAILABLE]).toContain(created.topics[0]!.errorCode)
    const leader = await until("the leader of expiring-0", async () => {
      const m = await any.request(Metadata.api, 12, {
        topics: [{ name: "expiring", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false
      })
      const l = m.topics[0]?.partitions[0]?.leaderId ?? -1
      return l >= 0 ? l : undefined
    })
    const { conn } = await coordinatorOf("expiring-txn")
    const init = await conn.request(InitProducerId.api, 4, {
      transactionalId: "expiring-txn",
      transactionTimeoutMs: 1000,
      producerId: -1n,
      producerEpoch: -1
    })
    expect(init.errorCode).toBe(0)
    const add = (version: number, epoch: number, partitions: ReadonlyArray<number>) =>
      conn.request(AddPartitionsToTxn.api, version, {
        v3AndBelowTransactionalId: "expiring-txn",
        v3AndBelowProducerId: init.producerId,
        v3AndBelowProducerEpoch: epoch,
        v3AndBelowTopics: [{ name: "expiring", partitions }]
      })
    const added = await add(3, 0, [0])
    expect(added.resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode).toBe(0)
    const unknown = await add(3, 0, [0, 7])
    expect(unknown.resultsByTopicV3AndBelow[0]!.resultsByPartition.map((p) => p.partitionErrorCode)).toEqual([
      E.OPERATION_NOT_ATTEMPTED,
      E.UNKNOWN_TOPIC_OR_PARTITION
    ])

    // KIP-890 verification, as a partition leader asks it.
    const verify = await conn.request(AddPartitionsToTxn.api, 4, {
      transactions: [
        {
          transactionalId: "expiring-txn",
          producerId: init.producerId,
          producerEpoch: 0,
          verifyOnly: true,
          topics: [{ name: "expiring", partitions: [0, 1] }]
        }
      ]
    })
    expect(
      verify.resultsByTransaction[0]!.topicResults[0]!.resultsByPartition.map((p) => p.partitionErrorCode)
    ).toEqual([0, E.INVALID_TXN_STATE])

    const port = cluster.brokers.find((b) => b.nodeId === leader)!.port
    const toLeader = await Connection.open({ host: "127.0.0.1", port })
    open.push(toLeader)
    const produced = await toLeader.request(Produce.api, 9, {
      transactionalId: "expiring-txn",
      acks: -1,
      timeoutMs: 5000,
      topicData: [
        {
          name: "expiring",
          partitionData: [
            {
              index: 0,
              records: RecordBatch.build({
                records: [{ value: Buffer.from("never committed") }],
                timestamp: Date.now(),
                producerId: init.producerId,
                producerEpoch: 0,
                baseSequence: 0,
                isTransactional: true
              })
            }
          ]
        }
      ]
    })
    expect(produced.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
    const stable = () =>
      toLeader.request(ListOffsets.api, 7, {
        replicaId: -1,
        isolationLevel: 1,
        topics: [{ name: "expiring", partitions: [{ partitionIndex: 0, timestamp: -1n }] }]
      })
    // The open transaction holds the last stable offset at its first record.
    expect((await stable()).topics[0]!.partitions[0]!.offset).toBe(0n)

    const described = await until("the coordinator's abort", async () => {
      const d = await conn.request(DescribeTransactions.api, 0, { transactionalIds: ["expiring-txn"] })
      return d.transactionStates[0]?.transactionState === "CompleteAbort" ? d.transactionStates[0] : undefined
    })
    expect(described).toMatchObject({ errorCode: 0, producerId: init.producerId, producerEpoch: 1, topics: [] })
    // The ABORT marker follows the record: the last stable offset is past both.
    await until("the last stable offset past the abort marker", async () =>
      (await stable()).topics[0]!.partitions[0]!.offset === 2n ? true : undefined
    )
    const fencedV3 = await add(3, 0, [0])
    expect(fencedV3.resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode).toBe(E.PRODUCER_FENCED)
    const fencedV1 = await add(1, 0, [0])
    expect(fencedV1.resultsByTopicV3AndBelow[0]!.resultsByPartition[0]!.partitionErrorCode).toBe(
      E.INVALID_PRODUCER_EPOCH
    )
  })
})
