/**
 * Transactional failover from a real Apache Kafka 4.4 source (KIP-1279 §5.4, §6.6): Kafka's Java client
 * writes committed, aborted and one open transaction beside an idempotent producer; the topic is mirrored
 * to a 3-broker destination, which meanwhile hands out producer ids of its own (both clusters count them
 * from 0, so the destination holds a block whose ids the source also used). Then the mirror is stopped.
 *
 * New Java producers (transactional and idempotent) on the destination then get producer ids above every
 * producer id mirrored from the source: the stop raised the controller's producer id floor above them in
 * its leader epoch bump, and the brokers gave up the blocks they held below it. Every record they had
 * acknowledged is in the log after the mirrored offsets, and a read_committed consumer sees the source's
 * committed records and theirs, the transaction open at the stop aborted.
 */
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { Hashing, Uuid } from "@clustermirror/protocol"
import {
  ApacheKafka,
  IsolatedConsumer,
  JavaTools,
  KafkaPeer,
  Ports,
  ServerProcess,
  TransactionalProducer,
  Wait
} from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const PARTITIONS = 3
const TOPIC = "payments"
/** A destination topic of its own, written before the stop so that the destination's brokers hold blocks. */
const LOCAL_TOPIC = "local-before-stop"
const MIRROR = "txn-failover"
const kafkaClusterId = Uuid.random()
/** `__transaction_state` partitions on the destination. */
const TXN_PARTITIONS = 5
/** The destination's transactional id before the stop. */
const LOCAL_TXN_ID = "local-t"
/**
 * The transactional id after the stop: another id with the same `__transaction_state` partition
 * (`abs(hashCode) % partitions`), so the same broker coordinates it and hands out its producer id from
 * the block it holds since the first one, unless the floor makes it take a new block.
 */
const DST_TXN_ID = Array.from({ length: 100 }, (_, i) => `dst-t-${i}`).find(
  (id) =>
    Hashing.groupCoordinatorPartition(id, TXN_PARTITIONS) ===
    Hashing.groupCoordinatorPartition(LOCAL_TXN_ID, TXN_PARTITIONS)
)!

type Plan = ReadonlyArray<TransactionalProducer.Step>
const SRC_IDEM: Plan = [{ kind: "send", records: 60 }]
const SRC_A: Plan = [
  { kind: "commit", records: 90 },
  { kind: "abort", records: 60 },
  { kind: "commit", records: 60 }
]
const SRC_B: Plan = [
  { kind: "commit", records: 30 },
  { kind: "open", records: 30 }
]
const DST_T: Plan = [
  { kind: "commit", records: 90 },
  { kind: "commit", records: 60 }
]
const DST_IDEM: Plan = [{ kind: "send", records: 60 }]

const valuesOf = (prefix: string, plan: Plan, pick: (s: TransactionalProducer.Step) => boolean): string[][] =>
  TransactionalProducer.valuesOf(prefix, PARTITIONS, plan, pick)
const merge = (...parts: ReadonlyArray<string[][]>): string[][] =>
  TransactionalProducer.mergeSorted(PARTITIONS, ...parts)
const committed = TransactionalProducer.isCommitted
const any = () => true

const byPartition = (c: IsolatedConsumer.Consumed): string[][] =>
  IsolatedConsumer.sortedValuesByPartition(c, PARTITIONS)

/** The producer ids `kafka-transactions describe-producers` lists for a partition. */
const producerIds = async (bootstrap: string, topic: string, partition: number): Promise<bigint[]> => {
  const r = JavaTools.expectSuccess(
    "kafka-transactions",
    await JavaTools.transactions([
      "--bootstrap-server",
      bootstrap,
      "describe-producers",
      "--topic",
      topic,
      "--partition",
      String(partition)
    ])
  )
  const rows = JavaTools.lines(r.stdout).map((l) => l.trim().split(/\s+/))
  expect(rows[0]![0]).toBe("ProducerId")
  return rows.slice(1).map((row) => BigInt(row[0]!))
}
const idsOf = async (bootstrap: string, topic: string, partitions: number) =>
  (await Promise.all(Array.from({ length: partitions }, (_, p) => producerIds(bootstrap, topic, p)))).flat()
/** `kafka-transactions describe --transactional-id`: the producer id and epoch the coordinator holds. */
const describeTxnAt = async (bootstrap: string, transactionalId: string) => {
  const r = JavaTools.expectSuccess(
    "kafka-transactions",
    await JavaTools.transactions(["--bootstrap-server", bootstrap, "describe", "--transactional-id", transactionalId])
  )
  const [header, row] = JavaTools.lines(r.stdout).map((l) => l.trim().split(/\s+/))
  const column = (name: string) => row![header!.indexOf(name)]!
  return { producerId: BigInt(column("ProducerId")), producerEpoch: Number(column("ProducerEpoch")) }
}
const max = (ids: ReadonlyArray<bigint>) => ids.reduce((m, id) => (id > m ? id : m), -1n)

describe("transactional failover from a real Apache Kafka source", () => {
  let kafka: ApacheKafka.KafkaNode
  let destination: ServerProcess.ServerHandle
  let client: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  let destinationBootstrap: string
  const producers: TransactionalProducer.ProducerHandle[] = []

  const describeTxn = (transactionalId: string) => describeTxnAt(destinationBootstrap, transactionalId)

  const produce = async (opts: Omit<TransactionalProducer.ProducerOptions, "partitions" | "compression">) => {
    const p = await TransactionalProducer.start({
      ...opts,
      partitions: opts.topic === LOCAL_TOPIC ? 1 : PARTITIONS,
      compression: "lz4"
    })
    producers.push(p)
    return p
  }

  beforeAll(async () => {
    await KafkaPeer.libs()
    const port = await Ports.freePort()
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        clusterId: kafkaClusterId,
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "num.partitions": PARTITIONS }
      }).then((k) => (kafka = k)),
      ServerProcess.start({
        tempPrefix: "cm-txn-failover-dst-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          "auto.create.topics.enable": true,
          "num.partitions": 1,
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "transaction.state.log.replication.factor": 3,
          "transaction.state.log.num.partitions": TXN_PARTITIONS,
          "broker.heartbeat.interval.ms": 300,
          "mirror.state.topic.num.partitions": 5
        }
      }).then((d) => (destination = d))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    destinationBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
    client = new ClusterClient.Client({ bootstrapServers: destinationBootstrap.split(","), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(client)
    await Wait.eventually("3 destination brokers", async () =>
      (await client.metadata([])).brokers.size === 3 ? true : undefined
    )
  }, 300_000)

  afterAll(async () => {
    await Promise.all(producers.map((p) => p.stop()))
    await client?.close()
    await destination?.stop()
    await kafka?.stop()
  })

  it("gives destination producers ids above every mirrored one after the stop, and loses none of their records", async () => {
    // The source: an idempotent producer first (it creates the topic), then two transactional ones, the
    // second leaving a transaction open. Meanwhile the destination hands out ids to producers of its own
    // topic: its transactional one first and alone, so that its coordinator takes the first block, from 0.
    const source = { bootstrap: kafka.bootstrap, topic: TOPIC }
    const local = { bootstrap: destinationBootstrap, topic: LOCAL_TOPIC }
    await Promise.all([
      produce({ ...source, transactionalId: null, prefix: "src-idem", plan: SRC_IDEM }),
      produce({ ...local, transactionalId: LOCAL_TXN_ID, prefix: "local-t", plan: [{ kind: "commit", records: 10 }] })
    ])
    const [, , open] = await Promise.all([
      produce({ ...local, transactionalId: null, prefix: "local-idem", plan: [{ kind: "send", records: 10 }] }),
      produce({ ...source, transactionalId: "src-a", prefix: "src-a", plan: SRC_A }),
      produce({ ...source, transactionalId: "src-b", prefix: "src-b", plan: SRC_B })
    ])
    expect(open!.isAlive()).toBe(true)
    const [mirroredIds, localIds] = await Promise.all([
      idsOf(kafka.bootstrap, TOPIC, PARTITIONS),
      idsOf(destinationBootstrap, LOCAL_TOPIC, 1)
    ])
    const highestMirrored = max(mirroredIds)
    expect(new Set(mirroredIds).size).toBe(3)
    // The coordinator of both transactional ids holds the block from 0, below the highest mirrored id: without
    // the floor, the next transactional producer would get an id one of the source's producers has.
    expect(localIds).toHaveLength(2)
    const localTxnId = (await describeTxn(LOCAL_TXN_ID)).producerId
    expect(localTxnId).toBe(0n)
    expect(localTxnId).toBeLessThan(highestMirrored)

    await admin.createClusterMirror(MIRROR, new Map([["bootstrap.servers", kafka.bootstrap]]))
    expect((await admin.startMirrorTopics(MIRROR, [TOPIC])).map((t) => t.error)).toEqual([null])
    const partitions = async () => (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions ?? []
    const sourceEnds = await Wait.eventually(
      "mirrored with lag 0",
      async () => {
        const ps = await partitions()
        return ps.length === PARTITIONS &&
          ps.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset > 0n)
          ? ps
          : undefined
      },
      60_000,
      250
    ).then((ps) => new Map(ps.map((p) => [p.partition, Number(p.sourceOffset)])))

    // Failover, the source's transaction still open.
    await admin.stopMirrorTopics(MIRROR, [TOPIC])
    await Wait.eventually(
      "stopped",
      async () => ((await partitions()).every((p) => p.state === "STOPPED") ? true : undefined),
      60_000,
      250
    )

    const target = { bootstrap: destinationBootstrap, topic: TOPIC }
    await Promise.all([
      produce({ ...target, transactionalId: DST_TXN_ID, prefix: "dst-t", plan: DST_T }),
      produce({ ...target, transactionalId: null, prefix: "dst-idem", plan: DST_IDEM })
    ])

    // (a) The reset cleared the mirrored producers; the ones left are the new producers, above the mirrored ids.
    const newIds = [...new Set(await idsOf(destinationBootstrap, TOPIC, PARTITIONS))]
    expect(newIds).toHaveLength(2)
    for (const id of newIds) expect(id).toBeGreaterThan(highestMirrored)
    for (const id of newIds) expect(localIds).not.toContain(id)
    const dstTxnId = (await describeTxn(DST_TXN_ID)).producerId
    expect(newIds).toContain(dstTxnId)
    console.log(
      `producer ids: mirrored ${[...new Set(mirroredIds)].join(",")}; destination before the stop ${localIds.join(",")} ` +
        `(${LOCAL_TXN_ID} ${localTxnId}); after the stop ${newIds.join(",")} (${DST_TXN_ID} ${dstTxnId})`
    )

    // (b) Every acknowledged record is in the log, once, after the mirrored offsets and the stop's two markers.
    const [uncommitted, readCommitted] = await Promise.all(
      (["read_uncommitted", "read_committed"] as const).map((isolationLevel) =>
        IsolatedConsumer.consume({ ...target, partitions: PARTITIONS, isolationLevel })
      )
    )
    const mirroredAll = merge(
      valuesOf("src-idem", SRC_IDEM, any),
      valuesOf("src-a", SRC_A, any),
      valuesOf("src-b", SRC_B, any)
    )
    const written = merge(valuesOf("dst-t", DST_T, any), valuesOf("dst-idem", DST_IDEM, any))
    expect(byPartition(uncommitted)).toEqual(merge(mirroredAll, written))
    for (const r of uncommitted!.records)
      if (r.value.startsWith("dst-")) expect(r.offset).toBeGreaterThanOrEqual(sourceEnds.get(r.partition)! + 2)

    // (c) read_committed: the source's committed records and the new ones; the open transaction aborted.
    const expected = merge(
      valuesOf("src-idem", SRC_IDEM, committed),
      valuesOf("src-a", SRC_A, committed),
      valuesOf("src-b", SRC_B, committed),
      written
    )
    expect(byPartition(readCommitted!)).toEqual(expected)
    expect(readCommitted!.endOffsets).toEqual(uncommitted!.endOffsets)
  })
})
