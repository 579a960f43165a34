/**
 * Transactional clients against our 3-broker cluster and against Apache Kafka 4.4, the same program on the
 * same input in the same test, and the results compared:
 *
 * - Kafka's Java clients consume-transform-produce: a read_committed consumer group reads an input that
 *   holds committed and aborted transactions, a transactional producer writes the output and commits the
 *   group's offsets with sendOffsetsToTransaction, aborting every third transaction on purpose. Compared:
 *   the records read_committed and read_uncommitted consumers see per partition (and their end offsets),
 *   the committed output values, the group's committed offsets (kafka-consumer-groups --describe), and
 *   `kafka-transactions list` / `describe` (states, epochs and partitions, not timestamps or ids).
 * - librdkafka (confluent-kafka 2.16) runs the same loop: init_transactions, begin, produce,
 *   send_offsets_to_transaction, commit, abort.
 * - A zombie: a producer left with an open transaction is fenced by a new producer with the same
 *   transactional.id, and its commit fails with the same exception on both.
 */
import {
  ApacheKafka,
  ConfluentKafka,
  ConsumeTransformProduce,
  JavaTools,
  KafkaPeer,
  Kcat,
  ServerProcess,
  TransactionalProducer
} from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const PARTITIONS = 3
const INPUT = "ctp-in"
/** The input: committed, aborted and committed again; read_committed sees 40 + 30 records per partition. */
const INPUT_PLAN: ReadonlyArray<TransactionalProducer.Step> = [
  { kind: "commit", records: 120 },
  { kind: "abort", records: 30 },
  { kind: "commit", records: 90 }
]
const CHUNK = 16
const ABORT_EVERY = 3

interface Cluster {
  readonly name: string
  readonly bootstrap: string
}

type IsolationLevel = "read_committed" | "read_uncommitted"

/** A topic as kcat read it: per partition, `<offset> <value>` in offset order. */
type Read = ReadonlyArray<ReadonlyArray<string>>

const valuesOf = (read: Read): string[][] => read.map((lines) => lines.map((l) => l.split(" ")[1]!).sort())

/** The committed input values per partition, as the producer plan wrote them. */
const committedInput: string[][] = Array.from({ length: PARTITIONS }, (_, p) =>
  INPUT_PLAN.flatMap((s, i) =>
    s.kind === "commit" ? TransactionalProducer.values("in", PARTITIONS, INPUT_PLAN, i)[p]! : []
  )
)

/** `kafka-consumer-groups --describe` rows as `topic partition current-offset log-end-offset lag`. */
const groupOffsets = (stdout: string): string[] =>
  stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols.length >= 6 && /^\d+$/.test(cols[2]!))
    .map((cols) => cols.slice(1, 6).join(" "))
    .sort()

/** `kafka-transactions list` rows of the given ids as `id state` (coordinator and producer id differ by design). */
const listed = (stdout: string, ids: ReadonlyArray<string>): string[] =>
  stdout
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => ids.includes(cols[0]!))
    .map((cols) => `${cols[0]} ${cols[3]}`)
    .sort()

/**
 * `kafka-transactions describe` as `{ epoch, state, timeoutMs, partitions }`: its columns are CoordinatorId,
 * TransactionalId, ProducerId, ProducerEpoch, TransactionState, TransactionTimeoutMs,
 * CurrentTransactionStartTimeMs, TransactionDurationMs and TopicPartitions (comma separated, or empty).
 */
const described = (stdout: string) => {
  const [header, row] = stdout.trim().split("\n")
  expect(header!.trim().split(/\s+/)).toEqual([
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions"
  ])
  const cols = row!.trim().split(/\s+/)
  return {
    epoch: cols[3],
    state: cols[4],
    timeoutMs: cols[5],
    partitions: (cols[8] ?? "")
      .split(",")
      .filter((p) => p !== "")
      .sort()
  }
}

/**
 * A description without the producer epoch. Kafka 4.4 finalizes `transaction.version` 2 and its Java
 * client then bumps the epoch with every EndTxn (KIP-890); our cluster does not offer that feature yet, so
 * the same client stays on transactions v1 there and keeps its epoch (librdkafka does v1 on both).
 */
const sameShape = ({ epoch: _, ...shape }: ReturnType<typeof described>) => shape

/** The class of the first Kafka exception in a JVM's output. */
const kafkaException = (output: string): string | undefined =>
  /(org\.apache\.kafka\.common\.(?:errors\.)?\w+Exception)/.exec(output)?.[1]

const librdkafkaLoop = `
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition

bootstrap, inp, out, parts, group, tid = sys.argv[1:7]
parts, chunk, abort_every = int(parts), int(sys.argv[7]), int(sys.argv[8])
expected = [int(n) for n in sys.argv[9].split(",")]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5})
producer.init_transactions(60)
consumer.subscribe([inp])
queues = [[] for _ in range(parts)]
done = [0] * parts
txns = [0] * parts
log = []
deadline = time.time() + 120
while any(done[p] < expected[p] for p in range(parts)):
    if time.time() > deadline:
        raise SystemExit("input not processed: %s of %s" % (done, expected))
    for m in consumer.consume(500, 0.1):
        if m.error() is None:
            queues[m.partition()].append(m)
    for p in range(parts):
        q = queues[p]
        if not q or (len(q) < chunk and done[p] + len(q) < expected[p]):
            continue
        records, queues[p] = q[:chunk], q[chunk:]
        txns[p] += 1
        abort = abort_every > 0 and txns[p] % abort_every == 0
        producer.begin_transaction()
        for m in records:
            producer.produce(out, value=m.value() + b"-out", partition=p)
        offsets = [TopicPartition(inp, p, records[-1].offset() + 1)]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 60)
        if abort:
            producer.flush(60)
            producer.abort_transaction(60)
            queues[p] = []
            consumer.seek(TopicPartition(inp, p, records[0].offset()))
            log.append(["aborted", p, len(records)])
        else:
            producer.commit_transaction(60)
            done[p] += len(records)
            log.append(["committed", p, len(records)])
consumer.close()
print(json.dumps(log))
`

describe("transactional clients, compared with Apache Kafka 4.4", () => {
  let kafka: ApacheKafka.KafkaNode
  let ours: ServerProcess.ServerHandle
  let clusters: ReadonlyArray<Cluster> = []
  const producers: TransactionalProducer.ProducerHandle[] = []

  beforeAll(async () => {
    await KafkaPeer.libs()
    // Both handles are kept as soon as each is up, so that teardown stops one even when the other fails.
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "num.partitions": PARTITIONS }
      }).then((k) => (kafka = k)),
      ServerProcess.start({
        tempPrefix: "cm-txn-vs-kafka-",
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          ...ServerProcess.TEST_DEFAULTS,
          "num.partitions": PARTITIONS,
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "transaction.state.log.replication.factor": 3,
          "transaction.state.log.num.partitions": 3,
          "broker.heartbeat.interval.ms": 300
        }
      }).then((s) => (ours = s))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    clusters = [
      { name: "kafka", bootstrap: kafka.bootstrap },
      { name: "ours", bootstrap: [0, 1, 2].map((i) => `127.0.0.1:${ours.port + i}`).join(",") }
    ]
    // The same input on both from one transactional producer's plan. Every topic is auto-created by its first
    // producer, with 3 partitions (and 3 replicas on our cluster).
    await Promise.all(
      clusters.map(async (c) =>
        producers.push(
          await TransactionalProducer.start({
            bootstrap: c.bootstrap,
            topic: INPUT,
            partitions: PARTITIONS,
            transactionalId: "ctp-input",
            compression: "lz4",
            prefix: "in",
            plan: INPUT_PLAN
          })
        )
      )
    )
  }, 300_000)

  afterAll(async () => {
    await Promise.all(producers.map((p) => p.stop()))
    await ours?.stop()
    await kafka?.stop()
  })

  /** Runs `f` on both clusters at once; the results as `[kafka, ours]`. */
  const onBoth = async <A>(f: (c: Cluster) => Promise<A>): Promise<[A, A]> => {
    const [k, o] = await Promise.all(clusters.map(f))
    return [k!, o!]
  }
  /** Every record of `topic` from the start, read by kcat at an isolation level up to its end (LSO or HW). */
  const read = async (c: Cluster, topic: string, isolationLevel: IsolationLevel): Promise<Read> => {
    const { stdout } = await Kcat.forBootstrap(c.bootstrap)([
      ...["-C", "-t", topic, "-e", "-q", "-o", "beginning"],
      ...["-X", `isolation.level=${isolationLevel}`, "-f", "%p %o %s\\n"]
    ])
    const out: string[][] = Array.from({ length: PARTITIONS }, () => [])
    for (const line of stdout.split("\n")) {
      const m = /^(\d+) (\d+ .+)$/.exec(line)
      if (m !== null) out[Number(m[1])]!.push(m[2]!)
    }
    return out
  }
  /** The output both ways on both clusters: `[[kafka committed, kafka uncommitted], [ours ...]]`. */
  const readBothWays = (topic: string) =>
    onBoth((c) => Promise.all([read(c, topic, "read_committed"), read(c, topic, "read_uncommitted")]))
  /**
   * The same records at the same offsets on both, both ways: per partition the transactions, their
   * records and so their markers come in the same order. read_committed holds every input record once.
   */
  const expectSameOutput = async (topic: string) => {
    const [[kCommitted, kUncommitted], [oCommitted, oUncommitted]] = await readBothWays(topic)
    expect(valuesOf(kCommitted)).toEqual(committedInput.map((vs) => vs.map((v) => `${v}-out`).sort()))
    expect(oCommitted).toEqual(kCommitted)
    expect(oUncommitted).toEqual(kUncommitted)
    return { committed: kCommitted, uncommitted: kUncommitted }
  }
  const describeGroup = async (c: Cluster, group: string) =>
    groupOffsets(
      JavaTools.expectSuccess(
        `kafka-consumer-groups --describe on ${c.name}`,
        await JavaTools.consumerGroups(["--bootstrap-server", c.bootstrap, "--describe", "--group", group])
      ).stdout
    )
  const describeTxn = async (c: Cluster, id: string) =>
    described(
      JavaTools.expectSuccess(
        `kafka-transactions describe on ${c.name}`,
        await JavaTools.transactions(["--bootstrap-server", c.bootstrap, "describe", "--transactional-id", id])
      ).stdout
    )
  const listTxns = async (c: Cluster, ids: ReadonlyArray<string>) =>
    listed(
      JavaTools.expectSuccess(
        `kafka-transactions list on ${c.name}`,
        await JavaTools.transactions(["--bootstrap-server", c.bootstrap, "list"])
      ).stdout,
      ids
    )

  it("Java consume-transform-produce with sendOffsetsToTransaction: the same output, offsets and transaction state", async () => {
    const [kafkaRun, oursRun] = await onBoth((c) =>
      ConsumeTransformProduce.run({
        bootstrap: c.bootstrap,
        input: INPUT,
        output: "ctp-out",
        partitions: PARTITIONS,
        groupId: "ctp",
        transactionalId: "ctp-txn",
        chunk: CHUNK,
        abortEvery: ABORT_EVERY
      })
    )
    const byPartition = (r: ConsumeTransformProduce.Result) =>
      Array.from({ length: PARTITIONS }, (_, p) => r.transactions.filter((t) => t.partition === p))
    expect(byPartition(oursRun)).toEqual(byPartition(kafkaRun))
    // 70 records per partition in chunks of 16: 5 committed transactions, every third of 7 aborted.
    expect([kafkaRun.commits, kafkaRun.aborts]).toEqual([5 * PARTITIONS, 2 * PARTITIONS])

    const { uncommitted } = await expectSameOutput("ctp-out")
    expect(uncommitted.map((lines) => lines.length)).toEqual(
      byPartition(kafkaRun).map((ts) => ts.reduce((n, t) => n + t.records, 0))
    )

    // The group's offsets came only through the transactions: at the input's end, lag 0.
    const [kGroup, oGroup] = await onBoth((c) => describeGroup(c, "ctp"))
    expect(oGroup).toEqual(kGroup)
    expect(kGroup.map((row) => row.split(" ").slice(0, 2).join(" "))).toEqual([0, 1, 2].map((p) => `${INPUT} ${p}`))
    for (const row of kGroup) {
      const [, , current, end, lag] = row.split(" ")
      expect([current, lag]).toEqual([end, "0"])
    }

    const [kTxn, oTxn] = await onBoth((c) => describeTxn(c, "ctp-txn"))
    expect(sameShape(oTxn)).toEqual(sameShape(kTxn))
    expect(kTxn.state).toBe("CompleteCommit")
  })

  it("librdkafka's transactional producer in the same loop: the same output and offsets", async () => {
    const expected = committedInput.map((vs) => vs.length).join(",")
    const [kafkaRun, oursRun] = await onBoth(
      async (c) =>
        (
          await ConfluentKafka.run<ReadonlyArray<[string, number, number]>>(librdkafkaLoop, [
            ...[c.bootstrap, INPUT, "rd-out", String(PARTITIONS), "rd", "rd-txn"],
            ...[String(CHUNK), String(ABORT_EVERY), expected]
          ])
        ).result
    )
    const byPartition = (log: ReadonlyArray<[string, number, number]>) =>
      Array.from({ length: PARTITIONS }, (_, p) => log.filter((t) => t[1] === p))
    expect(byPartition(oursRun)).toEqual(byPartition(kafkaRun))
    expect(kafkaRun.filter((t) => t[0] === "aborted").length).toBe(2 * PARTITIONS)
    await expectSameOutput("rd-out")
    // librdkafka commits the offset after the last record: the final marker of each input partition is lag 1.
    const [kGroup, oGroup] = await onBoth((c) => describeGroup(c, "rd"))
    expect(oGroup).toEqual(kGroup)
    expect(kGroup.map((row) => row.split(" ")[4])).toEqual(["1", "1", "1"])
    const [kTxn, oTxn] = await onBoth((c) => describeTxn(c, "rd-txn"))
    // librdkafka does not use transactions v2, so here even the epochs match.
    expect(oTxn).toEqual(kTxn)
    expect(kTxn).toEqual({ epoch: "0", state: "CompleteCommit", timeoutMs: "60000", partitions: [] })
  })

  it("a zombie with an open transaction is fenced by its successor the same way; kafka-transactions list agrees", async () => {
    const plan = [{ kind: "open", records: 6 }] as const
    const zombies = await onBoth(async (c) => {
      const p = await TransactionalProducer.start({
        bootstrap: c.bootstrap,
        topic: "zombie-out",
        partitions: PARTITIONS,
        transactionalId: "zombie",
        compression: "none",
        prefix: "z",
        plan
      })
      producers.push(p)
      return p
    })
    const [kOpen, oOpen] = await onBoth((c) => describeTxn(c, "zombie"))
    expect(oOpen).toEqual(kOpen)
    expect(kOpen).toMatchObject({ state: "Ongoing", partitions: [0, 1, 2].map((p) => `zombie-out-${p}`) })
    const ids = ["ctp-input", "ctp-txn", "rd-txn", "zombie"]
    const [kList, oList] = await onBoth((c) => listTxns(c, ids))
    expect(oList).toEqual(kList)
    expect(kList).toEqual([
      "ctp-input CompleteCommit",
      "ctp-txn CompleteCommit",
      "rd-txn CompleteCommit",
      "zombie Ongoing"
    ])

    const successorPlan = [{ kind: "commit", records: 9 }] as const
    await onBoth(async (c) => {
      const p = await TransactionalProducer.start({
        bootstrap: c.bootstrap,
        topic: "zombie-out",
        partitions: PARTITIONS,
        transactionalId: "zombie",
        compression: "none",
        prefix: "s",
        plan: successorPlan
      })
      await p.stop()
    })
    const fenced = await Promise.all(
      zombies.map(async (z) => {
        await expect(z.commit()).rejects.toThrow()
        return kafkaException(z.output())
      })
    )
    expect(fenced[1]).toBe(fenced[0])
    expect(fenced[0]).toMatch(/ProducerFencedException|InvalidProducerEpochException/)

    // The zombie's records were aborted by the successor's InitProducerId; only the successor's are committed.
    const [[kCommitted, kUncommitted], [oCommitted, oUncommitted]] = await readBothWays("zombie-out")
    expect(valuesOf(kCommitted)).toEqual(
      TransactionalProducer.values("s", PARTITIONS, successorPlan, 0).map((vs) => [...vs].sort())
    )
    expect(oCommitted).toEqual(kCommitted)
    expect(oUncommitted).toEqual(kUncommitted)
    const [kAfter, oAfter] = await onBoth((c) => describeTxn(c, "zombie"))
    expect(sameShape(oAfter)).toEqual(sameShape(kAfter))
    expect(kAfter.state).toBe("CompleteCommit")
  })
})
