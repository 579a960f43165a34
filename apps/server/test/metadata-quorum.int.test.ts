/**
 * `kafka-metadata-quorum describe --status` and `--replication` (DescribeQuorum, key 55) against our
 * 3-broker cluster, through a broker (`--bootstrap-server`: the broker forwards it to the controller) and
 * through the controller listener (`--bootstrap-controller`: DescribeCluster with endpoint type
 * CONTROLLER finds the controller first, KIP-919), beside Apache Kafka 4.4 in combined mode: the same
 * fields and table columns; our controller is the leader and only voter, with a stable directory id and
 * its listener, every broker an observer with the offset and time of its last metadata fetch, and the
 * high watermark grows with the metadata log. Wrong endpoint types and partitions are refused with
 * Kafka's error codes, compared with Kafka's own answers.
 */
import { Connection } from "@clustermirror/client"
import { CreateTopics, DescribeCluster, DescribeQuorum, Errors } from "@clustermirror/protocol"
import { ApacheKafka, JavaTools, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const BROKERS = 3
const CONTROLLER_ID = 1000

let ours: ServerProcess.ServerHandle
let kafka: ApacheKafka.KafkaNode
/** `127.0.0.1:<port>` of our controller listener and of our brokers. */
let ourController: string
let ourBrokers: string
let kafkaController: string

const quorum = async (bootstrap: readonly [string, string], what: "--status" | "--replication") =>
  JavaTools.expectSuccess("kafka-metadata-quorum", await JavaTools.metadataQuorum([...bootstrap, "describe", what]))
    .stdout

/** `Key: value` lines of `describe --status`. */
const statusOf = (stdout: string): ReadonlyMap<string, string> =>
  new Map(
    stdout
      .split("\n")
      .map((l) => /^(\w+):\s+(.*)$/.exec(l.trim()))
      .flatMap((m) => (m === null ? [] : [[m[1]!, m[2]!.trim()] as const]))
  )

/** The tab-separated table of `describe --replication`: its header and rows of cells. */
const tableOf = (stdout: string) => {
  const [header, ...rows] = stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) =>
      l
        .split("\t")
        .map((c) => c.trim())
        .filter((c) => c !== "")
    )
  const columns = header ?? []
  return {
    columns,
    rows: rows.map((cells) => new Map(columns.map((c, i) => [c, cells[i] ?? ""])))
  }
}

/** The `{"id": …}` entries of CurrentVoters / CurrentObservers. */
const nodesOf = (
  value: string | undefined
): ReadonlyArray<{ id: number; directoryId?: string; endpoints?: string[] }> => JSON.parse(value ?? "null")

const withConnection = async <A>(hostPort: string, f: (c: Connection.Connection) => Promise<A>): Promise<A> => {
  const [host, port] = hostPort.split(":")
  const c = await Connection.open({ host: host!, port: Number(port) })
  try {
    return await f(c)
  } finally {
    await c.close()
  }
}

const describeCluster = (hostPort: string, endpointType: number) =>
  withConnection(hostPort, (c) =>
    c.request(DescribeCluster.api, 1, { includeClusterAuthorizedOperations: false, endpointType })
  )

const describeQuorum = (hostPort: string, topicName: string, partitionIndex: number) =>
  withConnection(hostPort, (c) =>
    c.request(DescribeQuorum.api, 2, { topics: [{ topicName, partitions: [{ partitionIndex }] }] })
  )

beforeAll(async () => {
  ;[ours, kafka] = await Promise.all([
    ServerProcess.start({
      config: ServerProcess.TEST_DEFAULTS,
      args: ["--embedded", String(BROKERS)],
      readyLines: BROKERS + 1,
      tempPrefix: "clustermirror-quorum-"
    }),
    ApacheKafka.startKafka({})
  ])
  // The first listening line is the controller node's, then one per broker.
  const [controllerPort, ...brokerPorts] = ours.ports()
  ourController = `127.0.0.1:${controllerPort}`
  ourBrokers = brokerPorts.map((p) => `127.0.0.1:${p}`).join(",")
  kafkaController = `127.0.0.1:${kafka.controllerPort}`
  // Every broker has fetched the metadata log at least once.
  await Wait.eventually("every broker observed by the controller", async () => {
    const r = await describeQuorum(ourController, "__cluster_metadata", 0)
    const observers = r.topics[0]?.partitions[0]?.observers ?? []
    return observers.length === BROKERS && observers.every((o) => o.logEndOffset > 0n) ? true : undefined
  })
}, 180_000)

afterAll(async () => {
  await Promise.all([ours?.stop(), kafka?.stop()])
})

describe("kafka-metadata-quorum describe", () => {
  it("--status: the controller leads as the only voter, every broker observes, through a broker and the controller", async () => {
    const [viaBroker, viaController, kafkaStatus] = await Promise.all([
      quorum(["--bootstrap-server", ourBrokers], "--status"),
      quorum(["--bootstrap-controller", ourController], "--status"),
      quorum(["--bootstrap-server", kafka.bootstrap], "--status")
    ])
    const expected = statusOf(kafkaStatus)
    expect([...expected.keys()]).toEqual([
      "ClusterId",
      "LeaderId",
      "LeaderEpoch",
      "HighWatermark",
      "MaxFollowerLag",
      "MaxFollowerLagTimeMs",
      "CurrentVoters",
      "CurrentObservers"
    ])
    const kafkaVoters = nodesOf(expected.get("CurrentVoters"))
    expect(kafkaVoters[0]?.endpoints).toEqual([`CONTROLLER://${kafkaController}`])
    for (const out of [viaBroker, viaController]) {
      const status = statusOf(out)
      expect([...status.keys()]).toEqual([...expected.keys()])
      expect(status.get("LeaderId")).toBe(String(CONTROLLER_ID))
      expect(status.get("LeaderEpoch")).toBe("1")
      expect(Number(status.get("HighWatermark"))).toBeGreaterThan(0)
      expect(status.get("MaxFollowerLag")).toBe("0")
      expect(status.get("MaxFollowerLagTimeMs")).toBe("0")
      const voters = nodesOf(status.get("CurrentVoters"))
      expect(voters.map((v) => v.id)).toEqual([CONTROLLER_ID])
      expect(voters[0]?.directoryId).toMatch(/^[A-Za-z0-9_-]{22}$/)
      expect(voters[0]?.endpoints).toEqual([`CONTROLLER://${ourController}`])
      expect(nodesOf(status.get("CurrentObservers")).map((o) => o.id)).toEqual([1, 2, 3])
    }
    expect(statusOf(viaController).get("ClusterId")).toBe(statusOf(viaBroker).get("ClusterId"))
    expect(statusOf(viaController).get("CurrentVoters")).toBe(statusOf(viaBroker).get("CurrentVoters"))
  })

  it("--replication: the same columns as Kafka's, the leader's row and one observer row per broker", async () => {
    const [viaBroker, viaController, kafkaReplication] = await Promise.all([
      quorum(["--bootstrap-server", ourBrokers], "--replication"),
      quorum(["--bootstrap-controller", ourController], "--replication"),
      quorum(["--bootstrap-controller", kafkaController], "--replication")
    ])
    const expected = tableOf(kafkaReplication)
    expect(expected.columns).toEqual([
      "NodeId",
      "DirectoryId",
      "LogEndOffset",
      "Lag",
      "LastFetchTimestamp",
      "LastCaughtUpTimestamp",
      "Status"
    ])
    expect(expected.rows.map((r) => r.get("Status"))).toEqual(["Leader"])
    for (const out of [viaBroker, viaController]) {
      const table = tableOf(out)
      expect(table.columns).toEqual(expected.columns)
      expect(table.rows.map((r) => [r.get("NodeId"), r.get("Status")])).toEqual([
        [String(CONTROLLER_ID), "Leader"],
        ["1", "Observer"],
        ["2", "Observer"],
        ["3", "Observer"]
      ])
      const [leader, ...observers] = table.rows
      expect(leader!.get("Lag")).toBe("0")
      expect(Number(leader!.get("LastFetchTimestamp"))).toBeGreaterThan(0)
      for (const o of observers) {
        // Brokers fetch with their metadata directory's id, and long-poll from the log end.
        expect(o.get("DirectoryId")).toMatch(/^[A-Za-z0-9_-]{22}$/)
        expect(o.get("DirectoryId")).not.toBe("AAAAAAAAAAAAAAAAAAAAAA")
        expect(Number(o.get("LogEndOffset"))).toBeGreaterThan(0)
        expect(Number(o.get("Lag"))).toBeGreaterThanOrEqual(0)
        expect(Number(o.get("LastFetchTimestamp"))).toBeGreaterThan(0)
        expect(Number(o.get("LastCaughtUpTimestamp"))).toBeGreaterThan(0)
      }
      expect(new Set(observers.map((o) => o.get("DirectoryId"))).size).toBe(BROKERS)
    }
    const leaderDir = (out: string) => tableOf(out).rows[0]!.get("DirectoryId")
    expect(leaderDir(viaController)).toBe(leaderDir(viaBroker))
  })

  it("the high watermark and the observers' log end offsets grow with a created topic", async () => {
    const before = Number(
      statusOf(await quorum(["--bootstrap-controller", ourController], "--status")).get("HighWatermark")
    )
    const created = await withConnection(ourBrokers.split(",")[0]!, (c) =>
      c.request(CreateTopics.api, 7, {
        topics: [{ name: "quorum-grows", numPartitions: 3, replicationFactor: 3, assignments: [], configs: [] }],
        timeoutMs: 30_000,
        validateOnly: false
      })
    )
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
    const after = await Wait.eventually("the observers past the new topic's records", async () => {
      const table = tableOf(await quorum(["--bootstrap-server", ourBrokers], "--replication"))
      const offsets = table.rows.map((r) => Number(r.get("LogEndOffset")))
      return offsets.every((o) => o > before) ? offsets : undefined
    })
    expect(after.length).toBe(BROKERS + 1)
    const status = statusOf(await quorum(["--bootstrap-server", ourBrokers], "--status"))
    expect(Number(status.get("HighWatermark"))).toBeGreaterThan(before)
  })
})

describe("refusals, as Kafka answers them", () => {
  it("DescribeCluster of the other endpoint type: MISMATCHED_ENDPOINT_TYPE on brokers and controllers", async () => {
    const [ourBroker, ourCtl, kafkaBroker, kafkaCtl] = await Promise.all([
      describeCluster(ourBrokers.split(",")[0]!, 2),
      describeCluster(ourController, 1),
      describeCluster(kafka.bootstrap, 2),
      describeCluster(kafkaController, 1)
    ])
    expect(kafkaBroker.errorCode).toBe(Errors.ErrorCode.MISMATCHED_ENDPOINT_TYPE)
    expect(kafkaCtl.errorCode).toBe(Errors.ErrorCode.MISMATCHED_ENDPOINT_TYPE)
    expect(ourBroker.errorCode).toBe(kafkaBroker.errorCode)
    expect(ourCtl.errorCode).toBe(kafkaCtl.errorCode)
  })

  it("DescribeCluster of the controllers lists the controller on the listener asked", async () => {
    const [described, kafkaDescribed] = await Promise.all([
      describeCluster(ourController, 2),
      describeCluster(kafkaController, 2)
    ])
    expect([kafkaDescribed.errorCode, kafkaDescribed.endpointType]).toEqual([0, 2])
    expect(kafkaDescribed.brokers.map((b) => `${b.host}:${b.port}`)).toEqual([kafkaController])
    expect([described.errorCode, described.endpointType, described.controllerId]).toEqual([0, 2, CONTROLLER_ID])
    expect(described.brokers.map((b) => [b.brokerId, `${b.host}:${b.port}`])).toEqual([[CONTROLLER_ID, ourController]])
  })

  it("kafka-features describe through the controller lists both features, as through a broker", async () => {
    const features = async (flag: string, at: string) =>
      JavaTools.expectSuccess("kafka-features", await JavaTools.features([flag, at, "describe"])).stdout
    const [viaController, viaBroker] = await Promise.all([
      features("--bootstrap-controller", ourController),
      features("--bootstrap-server", ourBrokers.split(",")[0]!)
    ])
    for (const out of [viaController, viaBroker]) {
      expect(out).toMatch(
        /Feature: metadata\.version\s+SupportedMinVersion: \S+\s+SupportedMaxVersion: \S+\s+FinalizedVersionLevel: \S+/
      )
      expect(out).toMatch(
        /Feature: mirror\.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1/
      )
    }
    // Kafka answers the same through its controller.
    expect(await features("--bootstrap-controller", kafkaController)).toContain("Feature: metadata.version")
  })

  it("DescribeQuorum of another partition: UNKNOWN_TOPIC_OR_PARTITION", async () => {
    const answers = await Promise.all([
      describeQuorum(ourBrokers.split(",")[0]!, "__cluster_metadata", 1),
      describeQuorum(ourController, "not-the-metadata", 0),
      describeQuorum(kafka.bootstrap, "__cluster_metadata", 1),
      describeQuorum(kafkaController, "not-the-metadata", 0)
    ])
    for (const r of answers) {
      expect(r.errorCode).toBe(0)
      expect(r.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))).toEqual([
        Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
      ])
    }
  })
})

describe("kafka-metadata-quorum describe of a quorum of three controllers", () => {
  let quorumServer: ServerProcess.ServerHandle
  let controllers: string
  let brokers: string

  beforeAll(async () => {
    quorumServer = await ServerProcess.start({
      config: ServerProcess.TEST_DEFAULTS,
      args: ["--embedded", String(BROKERS), "--embedded-controllers", "3"],
      readyLines: BROKERS + 3,
      tempPrefix: "clustermirror-quorum3-"
    })
    // The controllers' listening lines come first, then one per broker.
    const ports = quorumServer.ports()
    controllers = ports
      .slice(0, 3)
      .map((p) => `127.0.0.1:${p}`)
      .join(",")
    brokers = ports
      .slice(3)
      .map((p) => `127.0.0.1:${p}`)
      .join(",")
    await Wait.eventually("every broker observed by the quorum", async () => {
      const status = statusOf(await quorum(["--bootstrap-server", brokers], "--status"))
      return nodesOf(status.get("CurrentObservers")).length === BROKERS ? true : undefined
    })
  }, 180_000)

  afterAll(async () => {
    await quorumServer?.stop()
  })

  it("--status and --replication show the three voters, the leader, its epoch and the lags", async () => {
    for (const bootstrap of [
      ["--bootstrap-server", brokers] as const,
      ["--bootstrap-controller", controllers] as const
    ]) {
      const status = statusOf(await quorum(bootstrap, "--status"))
      const voters = nodesOf(status.get("CurrentVoters"))
      expect(voters.map((v) => v.id)).toEqual([1000, 1001, 1002])
      for (const [i, v] of voters.entries()) expect(v.endpoints).toEqual([`CONTROLLER://${controllers.split(",")[i]}`])
      const leader = Number(status.get("LeaderId"))
      expect([1000, 1001, 1002]).toContain(leader)
      expect(Number(status.get("LeaderEpoch"))).toBeGreaterThan(0)
      expect(Number(status.get("HighWatermark"))).toBeGreaterThan(0)
      expect(Number(status.get("MaxFollowerLag"))).toBeGreaterThanOrEqual(0)
      expect(nodesOf(status.get("CurrentObservers")).map((o) => o.id)).toEqual([1, 2, 3])

      const table = tableOf(await quorum(bootstrap, "--replication"))
      const rows = table.rows.map((r) => [r.get("NodeId"), r.get("Status")])
      expect(rows).toEqual([
        [String(leader), "Leader"],
        ...[1000, 1001, 1002].filter((id) => id !== leader).map((id) => [String(id), "Follower"]),
        ["1", "Observer"],
        ["2", "Observer"],
        ["3", "Observer"]
      ])
      for (const r of table.rows) {
        expect(Number(r.get("LogEndOffset"))).toBeGreaterThan(0)
        expect(Number(r.get("Lag"))).toBeGreaterThanOrEqual(0)
        expect(Number(r.get("LastFetchTimestamp"))).toBeGreaterThan(0)
      }
    }
  })
})
