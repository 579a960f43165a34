/**
 * Transactions on the partition leader: a transactional batch produced over the wire (the producer id from
 * an idempotent InitProducerId) stays invisible to read_committed consumers — kcat and Kafka's Java console
 * consumer — until a WriteTxnMarkers COMMIT is replicated; an ABORT hides it for good; read_uncommitted
 * consumers see everything. The markers are replicated byte for byte to the followers, and the log fences
 * markers of an older producer or coordinator epoch. TxnOffsetCommit offsets stay pending in the group
 * coordinator until the COMMIT marker reaches their `__consumer_offsets` partition.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import {
  ControlRecord,
  CreateClusterMirror,
  Errors,
  FindCoordinator,
  Hashing,
  InitProducerId,
  Metadata,
  OffsetFetch,
  Produce,
  RecordBatch,
  StartMirrorTopics,
  TxnOffsetCommit,
  WriteTxnMarkers
} from "@clustermirror/protocol"
import { IsolatedConsumer, JavaTools, Kcat } from "@clustermirror/testkit"
import { Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as ClusterBroker from "../src/ClusterBroker.js"
import { ControllerServer } from "@clustermirror/controller-server"

const E = Errors.ErrorCode
const TOPIC = "txn"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const until = async <A>(what: string, f: () => A | undefined | Promise<A | undefined>, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const a = await f()
    if (a !== undefined) return a
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

describe("WriteTxnMarkers on partition leaders", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "cm-txnmarkers-"))
  let controller: ControllerServer.ControllerServer
  const brokers: ClusterBroker.ClusterBroker[] = []
  const connections = new Map<number, Connection.Connection>()
  let bootstrap = ""

  beforeAll(async () => {
    controller = await ControllerServer.start({
      nodeId: 1000,
      clusterId: "AAAAAAAAAAAAAAAAAAAAAC",
      host: "127.0.0.1",
      port: 0,
      dataDir: path.join(root, "controller"),
      maxFrameBytes: 1 << 26,
      defaultPartitions: 1,
      defaultReplicationFactor: 3,
      sessionTimeoutMs: 3000
    })
    for (const id of [1, 2, 3])
      brokers.push(
        await ClusterBroker.start({
          ...BrokerConfig.defaults,
          nodeId: id,
          port: 0,
          dataDir: path.join(root, `broker-${id}`),
          processRoles: ["broker"],
          clusterId: "AAAAAAAAAAAAAAAAAAAAAC",
          controllerBootstrap: { host: "127.0.0.1", port: controller.port },
          brokerHeartbeatIntervalMs: 100,
          // This cluster has no transaction coordinator: the test plays its part (markers by hand).
          transactionPartitionVerificationEnable: false
        })
      )
    for (const b of brokers) connections.set(b.nodeId, await Connection.open({ host: "127.0.0.1", port: b.port }))
    bootstrap = brokers.map((b) => `127.0.0.1:${b.port}`).join(",")
    const created = await controller.controller.createTopics({
      topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 3, assignments: [], configs: [], mirrorInfo: null }],
      timeoutMs: 5000,
      validateOnly: false
    })
    expect(created[0]!.errorCode).toBe(0)
    await until("every broker hosts the partition with its leader", () =>
      brokers.every((b) => (b.replicas.get(TOPIC, 0)?.leader ?? -1) >= 0) ? true : undefined
    )
  }, 120_000)

  afterAll(async () => {
    for (const c of connections.values()) await c.close()
    for (const b of brokers) await b.close()
    await controller?.close()
    fs.rmSync(root, { recursive: true, force: true })
  })

  const leaderId = () => brokers[0]!.replicas.get(TOPIC, 0)!.leader
  const leader = () => connections.get(leaderId())!
  const follower = () => connections.get([1, 2, 3].find((id) => id !== leaderId())!)!
  const leaderLog = () => brokers.find((b) => b.nodeId === leaderId())!.replicas.get(TOPIC, 0)!.log

  const initProducerId = async () => {
    const r = await leader().call(InitProducerId.api, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: -1n,
      producerEpoch: -1
    })
    expect(r.errorCode).toBe(0)
    return { producerId: r.producerId, producerEpoch: r.producerEpoch }
  }

  const produce = async (
    records: Buffer,
    transactionalId: string | null,
    to: Connection.Connection = leader(),
    topic = TOPIC
  ) => {
    const r = await to.call(Produce.api, {
      transactionalId,
      acks: -1,
      timeoutMs: 10_000,
      topicData: [{ name: topic, partitionData: [{ index: 0, records }] }]
    })
    return r.responses[0]!.partitionResponses[0]!
  }

  const txnBatch = (p: { producerId: bigint; producerEpoch: number }, baseSequence: number, values: string[]) =>
    RecordBatch.build({
      records: values.map((v) => ({ value: Buffer.from(v) })),
      producerId: p.producerId,
      producerEpoch: p.producerEpoch,
      baseSequence,
      isTransactional: true,
      timestamp: Date.now()
    })
  const plainBatch = (values: string[]) =>
    RecordBatch.build({ records: values.map((v) => ({ value: Buffer.from(v) })), timestamp: Date.now() })

  const marker = async (
    p: { producerId: bigint; producerEpoch: number },
    commit: boolean,
    coordinatorEpoch: number,
    to: Connection.Connection = leader(),
    topics = [{ name: TOPIC, partitionIndexes: [0] }]
  ) => {
    const r = await to.call(WriteTxnMarkers.api, {
      markers: [{ ...p, transactionResult: commit, topics, coordinatorEpoch }]
    })
    expect(r.markers[0]!.producerId).toBe(p.producerId)
    return r.markers[0]!.topics.flatMap((t) => t.partitions.map((x) => x.errorCode))
  }

  const kcat = async (isolation: "read_committed" | "read_uncommitted") =>
    JavaTools.lines(
      (
        await Kcat.kcat([
          "-b",
          bootstrap,
          "-C",
          "-t",
          TOPIC,
          "-p",
          "0",
          "-o",
          "beginning",
          "-e",
          "-q",
          "-f",
          "%s\\n",
          "-X",
          `isolation.level=${isolation}`
        ])
      ).stdout
    )

  /** Kafka's console consumer, partition 0 from the beginning, until it has been idle for 6 s. */
  const consoleConsumer = async (isolation: "read_committed" | "read_uncommitted") => {
    const r = await JavaTools.consoleConsumer([
      "--bootstrap-server",
      bootstrap,
      "--topic",
      TOPIC,
      "--partition",
      "0",
      "--offset",
      "earliest",
      "--isolation-level",
      isolation,
      "--timeout-ms",
      "6000"
    ])
    expect(r.stderr).toContain("Processed a total of")
    return JavaTools.lines(r.stdout)
  }

  const javaEndOffset = async (isolation: IsolatedConsumer.IsolationLevel) =>
    (await IsolatedConsumer.consume({ bootstrap, topic: TOPIC, partitions: 1, isolationLevel: isolation }))
      .endOffsets[0]

  it("keeps a transaction from read_committed consumers until its COMMIT is replicated", async () => {
    const p = await initProducerId()
    expect((await produce(txnBatch(p, 0, ["c0", "c1", "c2"]), "tx-a")).errorCode).toBe(0)
    expect((await produce(plainBatch(["after-c"]), null)).errorCode).toBe(0)
    const log = leaderLog()
    expect([log.highWatermark, log.lastStableOffset]).toEqual([4, 0])

    expect(await kcat("read_uncommitted")).toEqual(["c0", "c1", "c2", "after-c"])
    // Open: read_committed consumers stop at the LSO, before the transaction and what follows it.
    expect(await kcat("read_committed")).toEqual([])
    expect(await consoleConsumer("read_committed")).toEqual([])
    expect(await javaEndOffset("read_committed")).toBe(0)
    expect(await javaEndOffset("read_uncommitted")).toBe(4)

    expect(await marker(p, true, 0)).toEqual([0])
    // Answered after replication: the marker is below the high watermark, and the LSO moved past it.
    expect([log.logEndOffset, log.highWatermark, log.lastStableOffset]).toEqual([5, 5, 5])
    expect(await kcat("read_committed")).toEqual(["c0", "c1", "c2", "after-c"])
    expect(await consoleConsumer("read_committed")).toEqual(["c0", "c1", "c2", "after-c"])
  }, 120_000)

  it("hides an aborted transaction from read_committed consumers, not from read_uncommitted ones", async () => {
    const p = await initProducerId()
    expect((await produce(txnBatch(p, 0, ["a0", "a1"]), "tx-b")).errorCode).toBe(0)
    expect((await produce(plainBatch(["after-a"]), null)).errorCode).toBe(0)
    expect(await marker(p, false, 0)).toEqual([0])
    const committed = ["c0", "c1", "c2", "after-c", "after-a"]
    expect(await kcat("read_committed")).toEqual(committed)
    expect(await consoleConsumer("read_committed")).toEqual(committed)
    expect(await kcat("read_uncommitted")).toEqual(["c0", "c1", "c2", "after-c", "a0", "a1", "after-a"])
    expect(await consoleConsumer("read_uncommitted")).toEqual(["c0", "c1", "c2", "after-c", "a0", "a1", "after-a"])
  }, 120_000)

  it("fences markers of an older coordinator or producer epoch; answers per partition like Kafka", async () => {
    const p = await initProducerId()
    expect((await produce(txnBatch(p, 0, ["f0"]), "tx-c")).errorCode).toBe(0)
    expect(await marker(p, true, 3)).toEqual([0])
    expect((await produce(txnBatch(p, 1, ["f1"]), "tx-c")).errorCode).toBe(0)
    // A coordinator that lost the transactional id to a newer one (epoch 3) is fenced.
    expect(await marker(p, false, 2)).toEqual([E.TRANSACTION_COORDINATOR_FENCED])
    // The producer re-initialised (epoch bump): its old epoch's markers are refused.
    const bumped = await leader().call(InitProducerId.api, {
      transactionalId: null,
      transactionTimeoutMs: 60_000,
      producerId: p.producerId,
      producerEpoch: p.producerEpoch
    })
    expect(bumped.producerEpoch).toBe(p.producerEpoch + 1)
    expect(await marker({ producerId: p.producerId, producerEpoch: bumped.producerEpoch }, false, 3)).toEqual([0])
    expect(await marker(p, true, 3)).toEqual([E.INVALID_PRODUCER_EPOCH])
    expect(await marker(p, true, 3, follower())).toEqual([E.NOT_LEADER_OR_FOLLOWER])
    expect(
      await marker(p, true, 3, leader(), [
        { name: "missing", partitionIndexes: [0] },
        { name: TOPIC, partitionIndexes: [5] }
      ])
    ).toEqual([E.UNKNOWN_TOPIC_OR_PARTITION, E.UNKNOWN_TOPIC_OR_PARTITION])
    expect(await kcat("read_committed")).toEqual(["c0", "c1", "c2", "after-c", "after-a", "f0"])
    // Transactional records without a transactional id are refused, as Kafka does without an authorizer too.
    const anonymous = await produce(txnBatch(await initProducerId(), 0, ["x"]), null)
    expect(anonymous.errorCode).toBe(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
  }, 120_000)

  it("replicates the markers: every replica holds the same bytes", async () => {
    const log = leaderLog()
    const end = log.logEndOffset
    const bytesOf = (b: ClusterBroker.ClusterBroker) => {
      const l = b.replicas.get(TOPIC, 0)!.log
      return l.logEndOffset < end ? undefined : l.read(0, 1 << 24, { minOneMessage: true }).records
    }
    const copies = await Promise.all(brokers.map((b) => until(`broker ${b.nodeId} at ${end}`, () => bytesOf(b))))
    for (const c of copies.slice(1)) expect(Buffer.compare(c, copies[0]!)).toBe(0)
    const controls = RecordBatch.split(copies[0]!).batches.flatMap((ref) => {
      const b = copies[0]!.subarray(ref.position, ref.position + ref.size)
      if (!RecordBatch.isControl(b)) return []
      const c = Either.getOrThrow(ControlRecord.parseControl(b))
      return c.type === "COMMIT" || c.type === "ABORT" ? [[c.type, c.coordinatorEpoch]] : []
    })
    expect(controls).toEqual([
      ["COMMIT", 0],
      ["ABORT", 0],
      ["COMMIT", 3],
      ["ABORT", 3]
    ])
  }, 60_000)

  it("refuses transactional batches and markers on a mirror topic, as every write there", async () => {
    const c = leader()
    const config = [
      { name: "bootstrap.servers", value: "127.0.0.1:1" },
      { name: "mirror.source.cluster.id", value: "source-cluster" }
    ]
    expect((await c.call(CreateClusterMirror.api, { mirrorName: "m", config })).errorCode).toBe(0)
    const started = await c.call(StartMirrorTopics.api, {
      mirrorName: "m",
      topics: [{ topicId: "q83vEjRWeJCrze8SNFZ4kA", topicName: "mirrored", numPartitions: 1 }]
    })
    expect(started.topics.map((t) => t.errorCode)).toEqual([0])
    const mirrorLeader = await until("a leader of the mirror topic", async () => {
      const md = await c.call(Metadata.api, {
        topics: [{ name: "mirrored", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
        allowAutoTopicCreation: false
      })
      const id = md.topics[0]?.partitions[0]?.leaderId ?? -1
      return id >= 0 ? id : undefined
    })
    const p = await initProducerId()
    const r = await produce(txnBatch(p, 0, ["m0"]), "tx-m", connections.get(mirrorLeader)!, "mirrored")
    expect(r.errorCode).toBe(E.READ_ONLY_TOPIC)
    // No marker of this cluster may enter a mirrored log either.
    const topics = [{ name: "mirrored", partitionIndexes: [0] }]
    expect(await marker(p, false, 0, connections.get(mirrorLeader)!, topics)).toEqual([E.READ_ONLY_TOPIC])
  }, 60_000)

  it("keeps TxnOffsetCommit offsets pending until the COMMIT marker reaches __consumer_offsets", async () => {
    const group = "txn-group"
    const coordinatorId = await until("the group coordinator", async () => {
      const r = await leader().call(FindCoordinator.api, { key: group, keyType: 0, coordinatorKeys: [group] })
      const id = r.coordinators?.[0]?.nodeId ?? r.nodeId
      return id >= 0 ? id : undefined
    })
    const coordinator = connections.get(coordinatorId)!
    const p = await initProducerId()
    const commit = await until("a loaded group coordinator", async () => {
      const r = await coordinator.call(TxnOffsetCommit.api, {
        transactionalId: "tx-g",
        groupId: group,
        ...p,
        generationId: -1,
        memberId: "",
        groupInstanceId: null,
        topics: [
          {
            name: TOPIC,
            partitions: [{ partitionIndex: 0, committedOffset: 3n, committedLeaderEpoch: -1, committedMetadata: "m" }]
          }
        ]
      })
      const code = r.topics[0]!.partitions[0]!.errorCode
      return code === E.COORDINATOR_LOAD_IN_PROGRESS || code === E.NOT_COORDINATOR ? undefined : code
    })
    expect(commit).toBe(0)
    const fetchOffset = async (requireStable: boolean) => {
      const r = await coordinator.request(OffsetFetch.api, 8, {
        groups: [{ groupId: group, topics: [{ name: TOPIC, partitionIndexes: [0] }] }],
        requireStable
      })
      const partition = r.groups[0]!.topics[0]!.partitions[0]!
      return [partition.committedOffset, partition.errorCode]
    }
    expect(await fetchOffset(false)).toEqual([-1n, 0])
    expect(await fetchOffset(true)).toEqual([-1n, E.UNSTABLE_OFFSET_COMMIT])
    const offsetsPartition = Hashing.groupCoordinatorPartition(group, 1)
    const topics = [{ name: "__consumer_offsets", partitionIndexes: [offsetsPartition] }]
    const other = connections.get([1, 2, 3].find((id) => id !== coordinatorId)!)!
    expect(await marker(p, true, 0, other, topics)).toEqual([E.NOT_LEADER_OR_FOLLOWER])
    expect(await marker(p, true, 0, coordinator, topics)).toEqual([0])
    expect(await fetchOffset(true)).toEqual([3n, 0])
    // Kafka's consumer-groups tool sees the committed offset.
    const described = JavaTools.expectSuccess(
      "kafka-consumer-groups",
      await JavaTools.consumerGroups(["--bootstrap-server", bootstrap, "--describe", "--group", group])
    )
    expect(described.stdout).toMatch(new RegExp(`${group}\\s+${TOPIC}\\s+0\\s+3\\s`))
  }, 120_000)

  it("describes the active producers of a partition to kafka-transactions describe-producers", async () => {
    const p = await initProducerId()
    const first = await produce(txnBatch(p, 0, ["d0", "d1"]), "tx-d")
    expect(first.errorCode).toBe(0)
    const describe = async () => {
      const r = JavaTools.expectSuccess(
        "kafka-transactions",
        await JavaTools.transactions([
          "--bootstrap-server",
          bootstrap,
          "describe-producers",
          "--topic",
          TOPIC,
          "--partition",
          "0"
        ])
      )
      const rows = JavaTools.lines(r.stdout).map((l) => l.trim().split(/\s+/))
      expect(rows[0]).toEqual([
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset"
      ])
      return rows.find((row) => row[0] === String(p.producerId))
    }
    const open = await describe()
    expect(open).toBeDefined()
    expect([open![1], open![2], open![3], open![5]]).toEqual(["0", "-1", "1", String(first.baseOffset)])
    expect(await marker(p, true, 2)).toEqual([0])
    const closed = await describe()
    expect([closed![1], closed![2], closed![3], closed![5]]).toEqual(["0", "2", "1", "None"])
  }, 120_000)

  // Last: it stops a broker.
  it("a new group coordinator replays pending transactional offsets from __consumer_offsets and takes the marker", async () => {
    const group = "txn-group-moved"
    const coordinatorOf = () =>
      until("the group coordinator", async () => {
        const any = [...connections.values()][0]!
        const r = await any.call(FindCoordinator.api, { key: group, keyType: 0, coordinatorKeys: [group] })
        const id = r.coordinators?.[0]?.nodeId ?? r.nodeId
        return id >= 0 && brokers.some((b) => b.nodeId === id) ? id : undefined
      })
    const first = await coordinatorOf()
    const p = await initProducerId()
    const commit = await until("a loaded group coordinator", async () => {
      const r = await connections.get(first)!.call(TxnOffsetCommit.api, {
        transactionalId: "tx-moved",
        groupId: group,
        ...p,
        generationId: -1,
        memberId: "",
        groupInstanceId: null,
        topics: [
          {
            name: TOPIC,
            partitions: [{ partitionIndex: 0, committedOffset: 7n, committedLeaderEpoch: -1, committedMetadata: null }]
          }
        ]
      })
      const code = r.topics[0]!.partitions[0]!.errorCode
      return code === E.COORDINATOR_LOAD_IN_PROGRESS || code === E.NOT_COORDINATOR ? undefined : code
    })
    expect(commit).toBe(0)
    // The coordinator's broker goes; another replica of the __consumer_offsets partition takes over.
    const stopped = brokers.findIndex((b) => b.nodeId === first)
    await brokers[stopped]!.close()
    await connections.get(first)!.close()
    connections.delete(first)
    brokers.splice(stopped, 1)
    const fetchStable = (id: number) =>
      connections
        .get(id)!
        .request(OffsetFetch.api, 8, {
          groups: [{ groupId: group, topics: [{ name: TOPIC, partitionIndexes: [0] }] }],
          requireStable: true
        })
        .then((r) => r.groups[0]!)
    const moved = await until("a new coordinator that loaded the group", async () => {
      const id = await coordinatorOf()
      if (id === first) return undefined
      const g = await fetchStable(id)
      const code = g.errorCode !== 0 ? g.errorCode : g.topics[0]!.partitions[0]!.errorCode
      return code === E.UNSTABLE_OFFSET_COMMIT ? id : undefined
    })
    const topics = [{ name: "__consumer_offsets", partitionIndexes: [Hashing.groupCoordinatorPartition(group, 1)] }]
    expect(await marker(p, true, 0, connections.get(moved)!, topics)).toEqual([0])
    const after = (await fetchStable(moved)).topics[0]!.partitions[0]!
    expect([after.committedOffset, after.errorCode]).toEqual([7n, 0])
  }, 120_000)
})
