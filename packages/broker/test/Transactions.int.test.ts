/**
 * Transactions end to end on a cluster of three brokers, with Kafka's own Java clients as peers: the
 * transactional producer's InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn-free commits and aborts go to
 * the transaction coordinator (found with FindCoordinator key type 1, which creates `__transaction_state`),
 * whose markers make committed records visible to a read_committed consumer and aborted ones never; a
 * second producer with the same transactional.id fences the first (its open transaction is aborted); and
 * `kafka-transactions.sh list / describe` show the coordinators' state.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { IsolatedConsumer, JavaTools, TransactionalProducer } from "@clustermirror/testkit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

const sorted = (xs: ReadonlyArray<string>) => [...xs].sort()

describe("transactions with Kafka's Java clients", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-txn-"))
  let cluster: Node.Embedded
  let b = ""

  beforeAll(async () => {
    cluster = await Node.embedded(3, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200,
      transactionStateLogNumPartitions: 3
    })
    b = cluster.bootstrap
  })
  afterAll(async () => {
    await cluster?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const createTopic = async (topic: string, partitions: number) =>
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        topic,
        "--partitions",
        String(partitions),
        "--replication-factor",
        "3"
      ])
    )
  const read = async (topic: string, partitions: number, isolationLevel: IsolatedConsumer.IsolationLevel) =>
    sorted(
      (await IsolatedConsumer.consume({ bootstrap: b, topic, partitions, isolationLevel })).records.map((r) => r.value)
    )

  it("commits and aborts: read_committed sees exactly the committed records, read_uncommitted all of them", async () => {
    const topic = "txn-plan"
    await createTopic(topic, 2)
    const plan: ReadonlyArray<TransactionalProducer.Step> = [
      { kind: "commit", records: 6 },
      { kind: "abort", records: 4 },
      { kind: "commit", records: 5 },
      { kind: "open", records: 3 }
    ]
    const producer = await TransactionalProducer.start({
      bootstrap: b,
      topic,
      partitions: 2,
      transactionalId: "plan-1",
      compression: "lz4",
      prefix: "p",
      plan
    })
    try {
      const step = (i: number) => TransactionalProducer.values("p", 2, plan, i).flat()
      expect(await read(topic, 2, "read_committed")).toEqual(sorted([...step(0), ...step(2)]))
      expect(await read(topic, 2, "read_uncommitted")).toEqual(sorted([...step(0), ...step(1), ...step(2), ...step(3)]))
      const listed = JavaTools.expectSuccess(
        "kafka-transactions list",
        await JavaTools.transactions(["--bootstrap-server", b, "list"])
      )
      expect(listed.stdout).toMatch(/plan-1\s+\d+\s+\d+\s+Ongoing/)
      const described = JavaTools.expectSuccess(
        "kafka-transactions describe",
        await JavaTools.transactions(["--bootstrap-server", b, "describe", "--transactional-id", "plan-1"])
      )
      expect(described.stdout).toMatch(/Ongoing/)
      expect(described.stdout).toMatch(new RegExp(`${topic}-0`))
      await producer.commit()
      expect(await read(topic, 2, "read_committed")).toEqual(sorted([...step(0), ...step(2), ...step(3)]))
      const after = await JavaTools.transactions(["--bootstrap-server", b, "describe", "--transactional-id", "plan-1"])
      expect(after.stdout).toMatch(/CompleteCommit/)
    } finally {
      await producer.stop()
    }
  })

  it("a second producer with the same transactional.id fences the first: its open transaction is aborted and its commit fails", async () => {
    const topic = "txn-zombie"
    await createTopic(topic, 1)
    const zombie = await TransactionalProducer.start({
      bootstrap: b,
      topic,
      partitions: 1,
      transactionalId: "zombie",
      compression: "none",
      prefix: "z",
      plan: [{ kind: "open", records: 3 }]
    })
    try {
      const successorPlan: ReadonlyArray<TransactionalProducer.Step> = [{ kind: "commit", records: 4 }]
      const successor = await TransactionalProducer.start({
        bootstrap: b,
        topic,
        partitions: 1,
        transactionalId: "zombie",
        compression: "none",
        prefix: "s",
        plan: successorPlan
      })
      await successor.stop()
      await expect(zombie.commit()).rejects.toThrow()
      expect(zombie.output()).toMatch(/ProducerFencedException|InvalidProducerEpochException/)
      expect(await read(topic, 1, "read_committed")).toEqual(
        sorted(TransactionalProducer.values("s", 1, successorPlan, 0).flat())
      )
    } finally {
      await zombie.stop()
    }
  })
})
