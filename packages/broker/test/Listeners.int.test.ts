/**
 * Per-listener discovery, as Kafka answers it: broker 1 serves a PLAINTEXT and an EXTERNAL listener,
 * broker 2 only PLAINTEXT. Metadata and DescribeCluster over EXTERNAL give EXTERNAL endpoints only and
 * leave broker 2 out; the partition broker 2 leads has no leader there and LISTENER_NOT_FOUND, while
 * over PLAINTEXT both brokers and both leaders are answered at their PLAINTEXT endpoints.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import { DescribeCluster, Errors, FindCoordinator, Metadata } from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as ClusterBroker from "../src/ClusterBroker.js"
import { ControllerServer } from "@clustermirror/controller-server"
import * as Node from "../src/Node.js"

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("listeners in discovery", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "cm-listeners-"))
  const running: Array<{ close: () => Promise<void> }> = []
  afterAll(async () => {
    for (const r of running.reverse()) await r.close()
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("answers each listener's endpoints, leaving out brokers without it", async () => {
    const clusterId = "AAAAAAAAAAAAAAAAAAAAAC"
    const controller = await ControllerServer.start({
      nodeId: 1000,
      clusterId,
      host: "127.0.0.1",
      port: 0,
      dataDir: path.join(root, "controller"),
      maxFrameBytes: 1 << 26,
      defaultPartitions: 1,
      defaultReplicationFactor: 1
    })
    running.push(controller)
    const externalPort = await freePort()
    const start = async (id: number, listeners: string) => {
      const parsed = BrokerConfig.fromProperties(
        new Map([
          ["listeners", listeners],
          ["listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"],
          ["inter.broker.listener.name", "PLAINTEXT"]
        ])
      )
      const b = await ClusterBroker.start({
        ...parsed,
        nodeId: id,
        dataDir: path.join(root, `broker-${id}`),
        processRoles: ["broker"],
        clusterId,
        controllerBootstrap: { host: "127.0.0.1", port: controller.port },
        brokerHeartbeatIntervalMs: 100
      })
      running.push(b)
      return b
    }
    const b1 = await start(1, `PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:${externalPort}`)
    const b2 = await start(2, "PLAINTEXT://127.0.0.1:0")
    const created = await controller.controller.createTopics({
      topics: [
        {
          name: "t",
          numPartitions: -1,
          replicationFactor: -1,
          assignments: [
            { partitionIndex: 0, brokerIds: [1] },
            { partitionIndex: 1, brokerIds: [2] }
          ],
          configs: [],
          mirrorInfo: null
        }
      ],
      timeoutMs: 5000,
      validateOnly: false
    })
    expect(created[0]!.errorCode).toBe(0)

    const external = await Connection.open({ host: "127.0.0.1", port: externalPort })
    const plain = await Connection.open({ host: "127.0.0.1", port: b1.port })
    try {
      const metadata = async (c: Connection.Connection) => {
        for (;;) {
          const md = await c.request(Metadata.api, 12, {
            topics: [{ name: "t", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
            allowAutoTopicCreation: false,
            includeTopicAuthorizedOperations: false
          })
          // Until broker 1 has loaded the topic and both registrations.
          if (md.topics[0]?.errorCode === 0 && md.topics[0].partitions.length === 2) return md
          await sleep(50)
        }
      }
      const onExternal = await metadata(external)
      expect(onExternal.brokers.map((b) => [b.nodeId, b.host, b.port])).toEqual([[1, "127.0.0.1", externalPort]])
      const partitions = [...onExternal.topics[0]!.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex)
      expect(partitions.map((p) => [p.partitionIndex, p.errorCode, p.leaderId])).toEqual([
        [0, 0, 1],
        [1, Errors.ErrorCode.LISTENER_NOT_FOUND, -1]
      ])
      expect(partitions[1]!.offlineReplicas).toEqual([2])

      const onPlain = await metadata(plain)
      expect(onPlain.brokers.map((b) => [b.nodeId, b.port]).sort()).toEqual(
        [
          [1, b1.port],
          [2, b2.port]
        ].sort()
      )
      expect(onPlain.topics[0]!.partitions.every((p) => p.errorCode === 0 && p.leaderId >= 1)).toBe(true)

      const described = await external.request(DescribeCluster.api, 0, { includeClusterAuthorizedOperations: false })
      expect(described.brokers.map((b) => [b.brokerId, b.port])).toEqual([[1, externalPort]])

      // FindCoordinator: the coordinator at its endpoint on the request's listener, else not available there.
      const find = async (c: Connection.Connection) => {
        for (;;) {
          const r = await c.request(FindCoordinator.api, 4, { keyType: 0, coordinatorKeys: ["g"] })
          const answer = r.coordinators[0]!
          if (answer.errorCode === 0 || c === external) return answer
          await sleep(50)
        }
      }
      const coordinator = await find(plain)
      const onExternalListener = await find(external)
      if (coordinator.nodeId === 1)
        expect([onExternalListener.nodeId, onExternalListener.port]).toEqual([1, externalPort])
      else expect(onExternalListener.errorCode).toBe(Errors.ErrorCode.COORDINATOR_NOT_AVAILABLE)
      expect(coordinator.port).toBe(coordinator.nodeId === 1 ? b1.port : b2.port)
    } finally {
      await external.close()
      await plain.close()
    }
  })

  it("a controller serves every listener of controller.listener.names", async () => {
    const [a, b] = [await freePort(), await freePort()]
    const config = BrokerConfig.fromProperties(
      new Map([
        ["process.roles", "controller"],
        ["node.id", "1000"],
        ["cluster.id", "AAAAAAAAAAAAAAAAAAAAAD"],
        ["log.dirs", path.join(root, "two-listener-controller")],
        ["listeners", `CONTROLLER://127.0.0.1:${a},CONTROLLER_B://127.0.0.1:${b}`],
        ["controller.listener.names", "CONTROLLER,CONTROLLER_B"]
      ])
    )
    const node = await Node.start(config)
    running.push(node)
    for (const port of [a, b]) {
      const c = await Connection.open({ host: "127.0.0.1", port })
      expect(c.apiVersions?.size).toBeGreaterThan(0)
      await c.close()
    }
  })
})
