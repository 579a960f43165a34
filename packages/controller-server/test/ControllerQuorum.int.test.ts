import { Connection } from "@clustermirror/client"
import { FeatureControl } from "@clustermirror/controller"
import {
  ApiVersions,
  BrokerRegistration,
  CreateTopics,
  DescribeCluster,
  DescribeQuorum,
  Errors,
  Fetch,
  Uuid
} from "@clustermirror/protocol"
import { Ports, Wait } from "@clustermirror/testkit"
import { Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as ControllerServer from "../src/ControllerServer.js"

const CLUSTER_ID = "q1uorumTestCluster0001"
const E = Errors.ErrorCode
const root = fs.mkdtempSync(path.join(os.tmpdir(), "controller-quorum-"))
const lines: Array<string> = []
const servers = new Map<number, ControllerServer.ControllerServer>()
let voters: Array<{ id: number; host: string; port: number }> = []

const start = async (id: number) => {
  const v = voters.find((x) => x.id === id)!
  const server = await ControllerServer.start({
    nodeId: id,
    clusterId: CLUSTER_ID,
    host: "127.0.0.1",
    port: v.port,
    dataDir: path.join(root, `controller-${id}`),
    maxFrameBytes: 16 * 1024 * 1024,
    defaultPartitions: 1,
    defaultReplicationFactor: 1,
    autoLeaderRebalanceEnable: false,
    // Snapshots every few records, so that the voters' logs start at snapshots.
    snapshotEveryRecords: 5,
    quorum: {
      voters,
      snapshots: true,
      electionTimeoutMs: 500,
      fetchTimeoutMs: 1500,
      electionBackoffMaxMs: 300,
      requestTimeoutMs: 1000
    },
    log: (line) => lines.push(`[${id}] ${line}`)
  })
  servers.set(id, server)
}

const connect = (port: number) => Connection.open({ host: "127.0.0.1", port, clientId: "quorum-test" })

const request = async <A>(port: number, f: (c: Connection.Connection) => Promise<A>): Promise<A> => {
  const c = await connect(port)
  try {
    return await f(c)
  } finally {
    c.close()
  }
}

const register = (port: number, brokerId: number) =>
  request(port, (c) =>
    c.request(BrokerRegistration.api, 4, {
      brokerId,
      clusterId: CLUSTER_ID,
      incarnationId: Uuid.random(),
      listeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9092 + brokerId, securityProtocol: 0 }],
      features: [...FeatureControl.SUPPORTED].map(([name, r]) => ({
        name,
        minSupportedVersion: r.min,
        maxSupportedVersion: r.max
      })),
      logDirs: []
    })
  )

const createTopic = (port: number, name: string) =>
  request(port, (c) =>
    c.request(CreateTopics.api, Either.getOrThrow(c.versionFor(CreateTopics.api)), {
      topics: [{ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 5000,
      validateOnly: false
    })
  )

/** The voter that is the active controller, once exactly one is. */
const activeController = () =>
  Wait.eventually(
    "one active controller",
    () => {
      const active = [...servers].filter(([, s]) => s.quorum?.active() !== undefined)
      return active.length === 1 ? active[0]![0] : undefined
    },
    20_000,
    20
  )

/** The brokers registered in a voter's replayed state. */
const brokersOf = (id: number) => [...servers.get(id)!.quorum!.standby().state.cluster.brokers.keys()].sort().join()

afterAll(async () => {
  for (const s of servers.values()) await s.close()
  fs.rmSync(root, { recursive: true, force: true })
})

describe("a quorum of three controllers", () => {
  it("elects one active controller; the others answer NOT_CONTROLLER and replay its records", async () => {
    const ports = await Ports.freePorts(3)
    voters = ports.map((port, i) => ({ id: i + 1, host: "127.0.0.1", port }))
    await Promise.all(voters.map((v) => start(v.id)))
    const leader = await activeController()
    const leaderPort = voters.find((v) => v.id === leader)!.port
    const standbys = voters.filter((v) => v.id !== leader)

    // Any controller answers ApiVersions with the finalized features, and DescribeCluster with the
    // controllers and the active one.
    for (const v of voters) {
      const versions = await request(v.port, (c) =>
        c.request(ApiVersions.api, 3, { clientSoftwareName: "t", clientSoftwareVersion: "1" })
      )
      expect(versions.errorCode).toBe(0)
      expect(versions.finalizedFeatures.map((f) => f.name)).toContain("metadata.version")
      const cluster = await request(v.port, (c) =>
        c.request(DescribeCluster.api, 1, { includeClusterAuthorizedOperations: false, endpointType: 2 })
      )
      expect(cluster.controllerId).toBe(leader)
      expect(cluster.brokers.map((b) => b.brokerId).sort()).toEqual([1, 2, 3])
    }

    expect((await register(leaderPort, 7)).errorCode).toBe(0)
    for (const s of standbys) {
      expect((await register(s.port, 8)).errorCode).toBe(E.NOT_CONTROLLER)
      const refused = await createTopic(s.port, "refused")
      expect(refused.topics.map((t) => [t.name, t.errorCode])).toEqual([["refused", E.NOT_CONTROLLER]])
    }
    // Every standby replays the committed registration, and none has the refused one.
    await Wait.eventually("the standbys replayed the registration", () =>
      standbys.every((s) => brokersOf(s.id) === "7") ? true : undefined
    )

    // DescribeQuorum: the leader lists its voters; a standby answers NOT_LEADER_OR_FOLLOWER.
    const quorumRequest = { topics: [{ topicName: "__cluster_metadata", partitions: [{ partitionIndex: 0 }] }] }
    const described = await request(leaderPort, (c) => c.request(DescribeQuorum.api, 2, quorumRequest))
    const p = described.topics[0]!.partitions[0]!
    expect(p.errorCode).toBe(0)
    expect(p.leaderId).toBe(leader)
    expect(p.currentVoters.map((x) => x.replicaId).sort()).toEqual([1, 2, 3])
    expect(described.nodes.map((n) => n.nodeId).sort()).toEqual([1, 2, 3])
    const fromStandby = await request(standbys[0]!.port, (c) => c.request(DescribeQuorum.api, 2, quorumRequest))
    expect(fromStandby.topics[0]!.partitions[0]!.errorCode).toBe(E.NOT_LEADER_OR_FOLLOWER)

    // A broker's metadata fetch (no cluster id) is served by the active controller only.
    const fetchOf = (port: number) =>
      request(port, (c) =>
        c.request(Fetch.api, 16, {
          replicaState: { replicaId: 7, replicaEpoch: -1n },
          maxWaitMs: 0,
          minBytes: 1,
          maxBytes: 1 << 20,
          topics: [
            {
              topicId: Uuid.METADATA_TOPIC_ID,
              partitions: [{ partition: 0, fetchOffset: 0n, lastFetchedEpoch: -1, partitionMaxBytes: 1 << 20 }]
            }
          ]
        })
      )
    const fetched = (await fetchOf(leaderPort)).responses[0]!.partitions[0]!
    expect(fetched.errorCode).toBe(0)
    expect(fetched.records?.length ?? 0).toBeGreaterThan(0)
    const notLeader = (await fetchOf(standbys[0]!.port)).responses[0]!.partitions[0]!
    expect(notLeader.errorCode).toBe(E.NOT_LEADER_OR_FOLLOWER)
    expect(notLeader.currentLeader.leaderId).toBe(leader)
  }, 60_000)

  it("a new active controller takes over when the active one stops, with everything committed", async () => {
    const old = await activeController()
    await servers.get(old)!.close()
    servers.delete(old)
    const next = await activeController()
    expect(next).not.toBe(old)
    const nextPort = voters.find((v) => v.id === next)!.port
    // The registration committed under the first leader is in the new one's state.
    expect(brokersOf(next)).toBe("7")
    expect((await register(nextPort, 8)).errorCode).toBe(0)
    expect(brokersOf(next)).toBe("7,8")

    // The stopped controller comes back as a standby and replays what it missed.
    await start(old)
    await Wait.eventually("the restarted controller caught up", () => (brokersOf(old) === "7,8" ? true : undefined))
    expect(servers.get(old)!.quorum!.active()).toBeUndefined()
  }, 60_000)

  it("snapshots the log; a voter that lost its directory catches up from the leader's snapshot", async () => {
    const leader = await activeController()
    const leaderPort = voters.find((v) => v.id === leader)!.port
    for (let id = 9; id < 21; id++) expect((await register(leaderPort, id)).errorCode).toBe(0)
    const all = "10,11,12,13,14,15,16,17,18,19,20,7,8,9"
    const checkpoints = (id: number) =>
      fs
        .readdirSync(path.join(root, `controller-${id}`, "__cluster_metadata-0"))
        .filter((f) => f.endsWith(".checkpoint"))
    await Wait.eventually("a snapshot on every voter", () =>
      voters.every((v) => checkpoints(v.id).length > 0) ? true : undefined
    )

    const lost = voters.find((v) => v.id !== leader)!.id
    await servers.get(lost)!.close()
    servers.delete(lost)
    fs.rmSync(path.join(root, `controller-${lost}`), { recursive: true, force: true })
    // More records while it is away, so that the leader's log starts past everything the voter had.
    expect((await register(leaderPort, 21)).errorCode).toBe(0)
    await start(lost)
    await Wait.eventually("the emptied voter caught up", () =>
      brokersOf(lost) === `${all},21`.split(",").sort().join() ? true : undefined
    )
    expect(checkpoints(lost).length).toBeGreaterThan(0)
    expect(lines.some((l) => l.startsWith(`[${lost}]`) && l.includes("replays the metadata snapshot"))).toBe(true)
  }, 60_000)
})
