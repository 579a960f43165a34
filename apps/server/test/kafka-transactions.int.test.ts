/**
 * Transactions mirrored from a real Apache Kafka 4.x source (KIP-1279 §6.2, §6.6, §5.4): Kafka's Java
 * client produces committed, aborted and open transactions (lz4 and zstd) beside idempotent producers;
 * the mirror copies data and control batches unchanged, so the destination rebuilds the same producer
 * state, aborted-transaction index and last stable offset from them, and a read_committed consumer sees
 * the same records on both sides, stopping at the same LSO while a transaction is open.
 *
 * Stopping the mirror with that transaction still open aborts it on the destination (an ABORT marker
 * written locally for its producer, then MIRROR_PID_RESET), so the LSO reaches the high watermark, the
 * records after the open transaction become readable, and new producers on the destination start clean.
 * Atomicity of the transaction in flight is broken by design (§6.6): the source may still commit it.
 */
import { Buffer } from "node:buffer"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { ControlRecord, Fetch, RecordBatch, Uuid } from "@clustermirror/protocol"
import {
  ApacheKafka,
  IsolatedConsumer,
  Kcat,
  KafkaPeer,
  MirrorCheck,
  Ports,
  ServerProcess,
  TransactionalProducer,
  Wait
} from "@clustermirror/testkit"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const PARTITIONS = 3
/** Codecs of the full scenario (interleaved idempotent producers, a transaction open at stop). */
const CODECS = ["lz4", "zstd"] as const
/** The other codecs: committed and aborted transactions only. */
const OTHER_CODECS = ["none", "gzip", "snappy"] as const
const MIRROR = "txn-from-kafka"
const kafkaClusterId = Uuid.random()

type Plan = ReadonlyArray<TransactionalProducer.Step>
/** Every transaction spreads its records over all partitions (record i goes to partition i % 3). */
const TXN_A: Plan = [
  { kind: "commit", records: 300 },
  { kind: "abort", records: 210 },
  { kind: "commit", records: 240 }
]
const TXN_B: Plan = [
  { kind: "commit", records: 90 },
  { kind: "open", records: 150 }
]
const send = (records: number): Plan => [{ kind: "send", records }]

const valuesOf = (prefix: string, plan: Plan, pick: (s: TransactionalProducer.Step) => boolean): string[][] =>
  TransactionalProducer.valuesOf(prefix, PARTITIONS, plan, pick)
const merge = (...parts: ReadonlyArray<string[][]>): string[][] =>
  TransactionalProducer.mergeSorted(PARTITIONS, ...parts)

const committed = TransactionalProducer.isCommitted
const any = () => true

/** `partition offset value` lines from kcat, sorted values per partition. */
const kcatByPartition = (stdout: string): string[][] => {
  const out: string[][] = Array.from({ length: PARTITIONS }, () => [])
  for (const line of stdout.split("\n")) {
    const m = /^(\d+) (\d+) (.+)$/.exec(line)
    if (m !== null) out[Number(m[1])]!.push(m[3]!)
  }
  return out.map((vs) => vs.sort())
}

const consumedByPartition = (c: IsolatedConsumer.Consumed): string[][] =>
  IsolatedConsumer.sortedValuesByPartition(c, PARTITIONS)

const coordinatorEpochOf = (c: ControlRecord.ControlRecord | undefined): number | undefined =>
  c !== undefined && (c.type === "ABORT" || c.type === "COMMIT") ? c.coordinatorEpoch : undefined

const readCommittedKcat = (bootstrap: string, topic: string) =>
  Kcat.forBootstrap(bootstrap)([
    "-C",
    "-t",
    topic,
    "-e",
    "-q",
    "-o",
    "beginning",
    "-X",
    "isolation.level=read_committed",
    "-f",
    "%p %o %s\\n"
  ])

describe("transactions mirrored from a real Apache Kafka source", () => {
  let kafka: ApacheKafka.KafkaNode
  let destination: ServerProcess.ServerHandle
  let client: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin
  let destinationBootstrap: string
  const producers: TransactionalProducer.ProducerHandle[] = []

  const produce = async (opts: Omit<TransactionalProducer.ProducerOptions, "partitions">) => {
    const p = await TransactionalProducer.start({ ...opts, partitions: PARTITIONS })
    producers.push(p)
    return p
  }

  beforeAll(async () => {
    await KafkaPeer.libs()
    // The embedded cluster listens on port, port + 1 and port + 2; only the first is known to be free, so a
    // start that loses one of the others to another process is tried again on new ports.
    const startDestination = async (attempt = 1): Promise<ServerProcess.ServerHandle> => {
      const port = await Ports.freePort()
      try {
        return await ServerProcess.start({
          tempPrefix: "cm-kafka-txn-dst-",
          port,
          args: ["--embedded", "3"],
          readyLines: 4,
          config: {
            "default.replication.factor": 3,
            "offsets.topic.replication.factor": 3,
            "broker.heartbeat.interval.ms": 300,
            "mirror.state.topic.num.partitions": 5
          }
        })
      } catch (e) {
        if (attempt < 3 && e instanceof Error && e.message.includes("EADDRINUSE")) return startDestination(attempt + 1)
        throw e
      }
    }
    // Both handles are kept as soon as each is up, so that teardown stops one even when the other fails.
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        clusterId: kafkaClusterId,
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "num.partitions": PARTITIONS }
      }).then((k) => (kafka = k)),
      startDestination().then((d) => (destination = d))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    const port = destination.port
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

  /** The batches of a destination partition from `offset` on, read uncommitted from its leader. */
  const destinationBatches = async (topic: string, partition: number, offset: number) => {
    await client.metadata([topic])
    const topicId = client.snapshot.topics.get(topic)!.topicId
    const r = await client.sendToLeader(
      topic,
      partition,
      Fetch.api,
      (leader) => ({
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        topics: [
          {
            topic,
            topicId,
            partitions: [
              {
                partition,
                currentLeaderEpoch: leader.leaderEpoch,
                fetchOffset: BigInt(offset),
                partitionMaxBytes: 1 << 20
              }
            ]
          }
        ]
      }),
      (res) => (res.errorCode !== 0 ? res.errorCode : res.responses[0]!.partitions[0]!.errorCode)
    )
    const p = r.responses[0]!.partitions[0]!
    const buf = Buffer.from(p.records ?? new Uint8Array())
    return {
      highWatermark: Number(p.highWatermark),
      lastStableOffset: Number(p.lastStableOffset),
      batches: RecordBatch.split(buf).batches.map(({ position }) => ({
        baseOffset: RecordBatch.baseOffset(buf, position),
        producerId: RecordBatch.producerId(buf, position),
        producerEpoch: RecordBatch.producerEpoch(buf, position),
        baseSequence: RecordBatch.baseSequence(buf, position),
        control: RecordBatch.isControl(buf, position)
          ? Either.getOrThrow(ControlRecord.parseControl(buf, position))
          : undefined
      }))
    }
  }

  it("keeps offsets, bytes and read_committed results equal while mirroring, and aborts the open transaction on stop", async () => {
    const topics = CODECS.map((c) => `txn-${c}`)
    const otherTopics = OTHER_CODECS.map((c) => `txn-${c}`)
    const allTopics = [...topics, ...otherTopics]
    // The first producers create the topics (auto-created with 3 partitions) before the mirror starts. The
    // idempotent producer of the first topic runs alone, so it is the source's first producer id.
    const first = { bootstrap: kafka.bootstrap, transactionalId: null, prefix: "idem0", plan: send(60) }
    await produce({ ...first, topic: topics[0]!, compression: CODECS[0] })
    await Promise.all([
      ...CODECS.slice(1).map((codec, i) => produce({ ...first, topic: topics[i + 1]!, compression: codec })),
      ...OTHER_CODECS.map((codec, i) =>
        produce({
          bootstrap: kafka.bootstrap,
          topic: otherTopics[i]!,
          transactionalId: `a-${codec}`,
          compression: codec,
          prefix: "a",
          plan: TXN_A
        })
      )
    ])
    await admin.createClusterMirror(MIRROR, new Map([["bootstrap.servers", kafka.bootstrap]]))
    expect((await admin.startMirrorTopics(MIRROR, allTopics)).map((t) => t.error)).toEqual(allTopics.map(() => null))

    // While mirroring: a transactional producer interleaved with an idempotent one, then a transaction left open,
    // then more idempotent records after the open transaction's first offsets.
    const openTxns = await Promise.all(
      CODECS.map(async (codec, i) => {
        const topic = topics[i]!
        const base = { bootstrap: kafka.bootstrap, topic, compression: codec }
        await Promise.all([
          produce({ ...base, transactionalId: `a-${codec}`, prefix: "a", plan: TXN_A }),
          produce({ ...base, transactionalId: null, prefix: "idem1", plan: send(300) })
        ])
        const open = await produce({ ...base, transactionalId: `b-${codec}`, prefix: "b", plan: TXN_B })
        await produce({ ...base, transactionalId: null, prefix: "idem2", plan: send(90) })
        return open
      })
    )

    const describe = async () => (await admin.describeClusterMirrors([MIRROR])).mirrors[0]?.partitions ?? []
    const sourceEnds = await Wait.eventually(
      "every partition mirrored with lag 0",
      async () => {
        const ps = await describe()
        return ps.length === allTopics.length * PARTITIONS &&
          ps.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset > 0n)
          ? new Map(ps.map((p) => [`${p.topic}-${p.partition}`, Number(p.sourceOffset)]))
          : undefined
      },
      90_000,
      250
    )

    // Data and control batches, byte for byte, and the topic ids.
    const c = await MirrorCheck.compareClusters({
      source: kafka.bootstrap,
      destination: destinationBootstrap,
      topics: allTopics,
      upTo: "sourceHighWatermark"
    })
    expect(c.partitions.filter((p) => p.firstMismatch !== null).map((p) => JSON.stringify(p.firstMismatch))).toEqual([])
    expect(c.identical).toBe(true)
    for (const p of c.partitions) {
      expect(p.destinationTopicId).toBe(p.sourceTopicId)
      expect(p.records).toBe(p.sourceEnd)
    }
    const dataRecords = 60 + 750 + 300 + 240 + 90
    // Every data record plus one marker per partition per transaction (3 of A, 1 committed and 0 open of B).
    const recordsOf = (ts: ReadonlyArray<string>) =>
      c.partitions.filter((p) => ts.includes(p.topic)).reduce((n, p) => n + p.records, 0)
    expect(recordsOf(topics)).toBe(topics.length * (dataRecords + 4 * PARTITIONS))
    expect(recordsOf(otherTopics)).toBe(otherTopics.length * (750 + 3 * PARTITIONS))
    const committedOfA = merge(valuesOf("a", TXN_A, committed))
    for (const topic of otherTopics) {
      const [src, dst] = await Promise.all([
        readCommittedKcat(kafka.bootstrap, topic),
        readCommittedKcat(destinationBootstrap, topic)
      ])
      expect(kcatByPartition(src.stdout)).toEqual(committedOfA)
      expect(kcatByPartition(dst.stdout)).toEqual(committedOfA)
    }

    // read_committed stops at the open transaction on both sides and shows the same records there.
    const before = merge(
      valuesOf("idem0", send(60), any),
      valuesOf("a", TXN_A, committed),
      valuesOf("idem1", send(300), any)
    )
    const lsoWhileOpen = new Map<string, number>()
    const visibleWhileOpen = merge(before, valuesOf("b", TXN_B, committed))
    for (const topic of topics) {
      const [src, dst, srcJava, dstJava] = await Promise.all([
        readCommittedKcat(kafka.bootstrap, topic),
        readCommittedKcat(destinationBootstrap, topic),
        IsolatedConsumer.consume({
          bootstrap: kafka.bootstrap,
          topic,
          partitions: PARTITIONS,
          isolationLevel: "read_committed"
        }),
        IsolatedConsumer.consume({
          bootstrap: destinationBootstrap,
          topic,
          partitions: PARTITIONS,
          isolationLevel: "read_committed"
        })
      ])
      expect(kcatByPartition(dst.stdout)).toEqual(kcatByPartition(src.stdout))
      expect(kcatByPartition(src.stdout)).toEqual(visibleWhileOpen)
      expect(dstJava.records).toEqual(srcJava.records)
      expect(dstJava.endOffsets).toEqual(srcJava.endOffsets)
      expect(consumedByPartition(dstJava)).toEqual(visibleWhileOpen)
      for (let p = 0; p < PARTITIONS; p++) {
        expect(dstJava.endOffsets[p]).toBeLessThan(sourceEnds.get(`${topic}-${p}`)!)
        lsoWhileOpen.set(`${topic}-${p}`, dstJava.endOffsets[p]!)
      }
    }

    // Stop with the transactions of B still open on the source.
    await admin.stopMirrorTopics(MIRROR, allTopics)
    await Wait.eventually(
      "stopped",
      async () => {
        const ps = await describe()
        return ps.length === allTopics.length * PARTITIONS && ps.every((p) => p.state === "STOPPED") ? true : undefined
      },
      60_000,
      250
    )

    // Without an open transaction the stop only resets producer state.
    for (const topic of otherTopics)
      for (let p = 0; p < PARTITIONS; p++) {
        const end = sourceEnds.get(`${topic}-${p}`)!
        const local = await Wait.eventually(`${topic}-${p} reset replicated`, async () => {
          const r = await destinationBatches(topic, p, end)
          return r.highWatermark === end + 1 ? r : undefined
        })
        expect(local.batches.map((b) => [b.baseOffset, b.control?.type])).toEqual([[end, "MIRROR_PID_RESET"]])
        expect(local.lastStableOffset).toBe(local.highWatermark)
      }

    const afterStop = merge(visibleWhileOpen, valuesOf("idem2", send(90), any))
    for (const topic of topics) {
      // Past the mirrored log: an ABORT for the open transaction's producer, then MIRROR_PID_RESET.
      for (let p = 0; p < PARTITIONS; p++) {
        const end = sourceEnds.get(`${topic}-${p}`)!
        // Both markers are written on the leader with acks=1; the high watermark follows as the followers fetch them.
        const local = await Wait.eventually(`${topic}-${p} markers replicated`, async () => {
          const r = await destinationBatches(topic, p, end)
          return r.highWatermark === end + 2 ? r : undefined
        })
        expect(local.batches.map((b) => b.control?.type)).toEqual(["ABORT", "MIRROR_PID_RESET"])
        expect(local.batches.map((b) => b.baseOffset)).toEqual([end, end + 1])
        expect(local.lastStableOffset).toBe(local.highWatermark)
        // The open transaction starts at the LSO read while it was open; the ABORT names its producer and
        // carries the coordinator epoch of that producer's earlier COMMIT, mirrored from the source.
        const lso = lsoWhileOpen.get(`${topic}-${p}`)!
        const mirrored = await destinationBatches(topic, p, 0)
        const openBatch = mirrored.batches.find((b) => b.baseOffset === lso)!
        const abort = local.batches[0]!
        expect(abort.producerId).toBe(openBatch.producerId)
        const commits = mirrored.batches.filter(
          (b) => b.control?.type === "COMMIT" && b.producerId === openBatch.producerId
        )
        expect(commits.length).toBe(1)
        expect(coordinatorEpochOf(abort.control)).toBe(coordinatorEpochOf(commits[0]!.control))
        expect(local.batches[1]!.control).toMatchObject({ type: "MIRROR_PID_RESET", sourceClusterId: kafkaClusterId })
      }
      const [kcatDst, committedDst, uncommittedDst] = await Promise.all([
        readCommittedKcat(destinationBootstrap, topic),
        IsolatedConsumer.consume({
          bootstrap: destinationBootstrap,
          topic,
          partitions: PARTITIONS,
          isolationLevel: "read_committed"
        }),
        IsolatedConsumer.consume({
          bootstrap: destinationBootstrap,
          topic,
          partitions: PARTITIONS,
          isolationLevel: "read_uncommitted"
        })
      ])
      expect(kcatByPartition(kcatDst.stdout)).toEqual(afterStop)
      expect(consumedByPartition(committedDst)).toEqual(afterStop)
      // LSO = HW: read_committed ends where read_uncommitted does.
      expect(committedDst.endOffsets).toEqual(uncommittedDst.endOffsets)
    }

    // New producers on the destination start clean. Both clusters hand out producer ids from 0; the stop raised
    // the destination's producer id floor above every mirrored id, so the first producer on the destination
    // gets an id above them instead of the id of the source's first producer (whose epoch and sequences the
    // destination mirrored), and starts at epoch 0, sequence 0.
    const localKcat = (i: number) =>
      Kcat.forBootstrap(destinationBootstrap)(
        ["-P", "-t", topics[i]!, "-p", "0", "-X", "enable.idempotence=true", "-X", "acks=all", "-z", CODECS[i]!],
        { input: `${Array.from({ length: 50 }, (_, n) => `local-kcat-${n}`).join("\n")}\n` }
      )
    await localKcat(0)
    await Promise.all([
      ...topics.slice(1).map((_, i) => localKcat(i + 1)),
      ...topics.map((topic, i) =>
        produce({
          bootstrap: destinationBootstrap,
          topic,
          transactionalId: null,
          compression: CODECS[i]!,
          prefix: "local-java",
          plan: send(90)
        })
      )
    ])
    const mirroredIds = (await destinationBatches(topics[0]!, 0, 0)).batches
      .filter((b) => b.baseOffset < sourceEnds.get(`${topics[0]}-0`)!)
      .map((b) => b.producerId)
    const localFirst = (await destinationBatches(topics[0]!, 0, sourceEnds.get(`${topics[0]}-0`)! + 2)).batches[0]!
    expect(mirroredIds).toContain(0n)
    for (const id of mirroredIds) expect(localFirst.producerId).toBeGreaterThan(id)
    expect([localFirst.producerEpoch, localFirst.baseSequence]).toEqual([0, 0])
    const afterLocal = merge(afterStop, valuesOf("local-java", send(90), any), [
      Array.from({ length: 50 }, (_, n) => `local-kcat-${n}`),
      [],
      []
    ])
    for (const topic of topics) {
      const r = await readCommittedKcat(destinationBootstrap, topic)
      expect(kcatByPartition(r.stdout)).toEqual(afterLocal)
    }

    // The source may still commit what the destination aborted (§6.6): its read_committed view now holds the
    // open transaction's records, the destination's never will.
    await Promise.all(openTxns.map((t) => t.commit()))
    const committedOnSource = merge(
      afterStop,
      valuesOf("b", TXN_B, any).map((vs) => vs.filter((v) => v.includes("-open-")))
    )
    for (const topic of topics) {
      const [src, dst] = await Promise.all([
        readCommittedKcat(kafka.bootstrap, topic),
        readCommittedKcat(destinationBootstrap, topic)
      ])
      expect(kcatByPartition(src.stdout)).toEqual(committedOnSource)
      expect(kcatByPartition(dst.stdout)).toEqual(afterLocal)
    }
  })
})
