/**
 * A clustermirror node: the roles of `process.roles` over one data directory.
 * - no roles: a single node that keeps its own metadata (`Broker`);
 * - `controller`: the controller on the CONTROLLER listener (`ControllerServer`);
 * - `broker`: a broker following that controller (`ClusterBroker`);
 * - both: a combined node, its broker talking to its own controller.
 * `embedded` runs a controller (or a quorum of them) and N brokers in one process, each on its own loopback port and data dir
 * (and metrics port, when `metrics.port` is set).
 */
import { Uuid } from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as BrokerConfigs from "@clustermirror/broker-config/BrokerConfig"
import type { BrokerConfig } from "@clustermirror/broker-config/BrokerConfig"
import * as ClusterBroker from "./ClusterBroker.js"
import { ControllerServer } from "@clustermirror/controller-server"
import * as Listeners from "@clustermirror/security/Listeners"

export interface Node {
  /** The client listener (-1 for a controller-only node). */
  readonly port: number
  readonly controllerPort: number
  readonly clusterId: string
  readonly close: () => Promise<void>
}

/** The node's cluster id: `meta.properties` in its data dir, else `cluster.id`, else (when allowed) a new one. */
export const formatClusterId = (
  dataDir: string,
  configured: string | null,
  nodeId: number,
  allowNew: boolean
): string => {
  const file = path.join(dataDir, "meta.properties")
  if (fs.existsSync(file)) {
    const m = /^cluster\.id=(.+)$/m.exec(fs.readFileSync(file, "utf8"))
    if (m) {
      const stored = m[1]!.trim()
      if (configured !== null && configured !== stored)
        throw new Error(`${file} has cluster.id ${stored}, the config says ${configured}`)
      return stored
    }
  }
  if (configured === null && !allowNew)
    throw new Error(`no cluster id: set cluster.id (the same on every node of the cluster) for ${dataDir}`)
  const clusterId = configured ?? Uuid.random()
  fs.mkdirSync(dataDir, { recursive: true })
  const tmp = `${file}.tmp`
  fs.writeFileSync(tmp, `version=1\ncluster.id=${clusterId}\nnode.id=${nodeId}\n`)
  fs.renameSync(tmp, file)
  return clusterId
}

export const start = async (
  config: BrokerConfig,
  log: (line: string) => void = () => {},
  /** The broker role's mirror extension points (coordinator tasks, sync errors). */
  options: ClusterBroker.ClusterBrokerOptions = {}
): Promise<Node> => {
  // Without roles, a node is a whole cluster of one: both roles, the controller on a loopback port.
  const combinedDefault = config.processRoles.length === 0
  const roles: ReadonlyArray<"broker" | "controller"> = combinedDefault ? ["broker", "controller"] : config.processRoles
  // The controllers of a quorum must agree on the cluster id, so none of them makes one up.
  const quorum = config.controllerQuorumVoters.length > 1
  const clusterId = formatClusterId(
    config.dataDir,
    config.clusterId,
    config.nodeId,
    roles.includes("controller") && !quorum
  )
  let controller: ControllerServer.ControllerServer | undefined
  if (roles.includes("controller")) {
    if (config.controllerPort < 0 && !combinedDefault)
      throw new Error("a controller needs a listener of controller.listener.names in listeners")
    const [listener, ...more] = BrokerConfigs.listenersOf(config).filter((l) =>
      config.controllerListenerNames.includes(l.name)
    )
    controller = await ControllerServer.start({
      ...(listener === undefined ? {} : { listener: Listeners.socketOptions(config, listener) }),
      moreListeners: more.map((l) => ({
        host: l.host || "0.0.0.0",
        port: l.port,
        ...Listeners.socketOptions(config, l)
      })),
      nodeId: config.nodeId,
      clusterId,
      host: config.controllerPort < 0 ? "127.0.0.1" : config.controllerHost,
      port: Math.max(0, config.controllerPort),
      dataDir: path.join(config.dataDir, "controller"),
      maxFrameBytes: config.socketRequestMaxBytes,
      defaultPartitions: config.numPartitions,
      defaultReplicationFactor: config.defaultReplicationFactor,
      sessionTimeoutMs: config.brokerSessionTimeoutMs,
      uncleanLeaderElectionEnable: config.uncleanLeaderElectionEnable,
      mirrorStateTopicPartitions: config.mirrorStateTopicNumPartitions,
      mirrorStateTopicReplicationFactor: config.mirrorStateTopicReplicationFactor,
      autoLeaderRebalanceEnable: config.autoLeaderRebalanceEnable,
      leaderImbalanceCheckIntervalMs: config.leaderImbalanceCheckIntervalSeconds * 1000,
      leaderImbalancePerBrokerPercentage: config.leaderImbalancePerBrokerPercentage,
      bootstrapScramCredentials: config.bootstrapScramCredentials,
      authorizer: config.authorizer,
      ...(quorum && {
        quorum: {
          voters: config.controllerQuorumVoters,
          electionTimeoutMs: config.controllerQuorumElectionTimeoutMs,
          fetchTimeoutMs: config.controllerQuorumFetchTimeoutMs,
          electionBackoffMaxMs: config.controllerQuorumElectionBackoffMaxMs,
          requestTimeoutMs: config.controllerQuorumRequestTimeoutMs
        }
      }),
      log
    })
  }
  let broker: ClusterBroker.ClusterBroker | undefined
  if (roles.includes("broker")) {
    const bootstrap =
      config.controllerBootstrap ??
      (controller !== undefined ? { host: config.controllerHost, port: controller.port } : null)
    broker = await ClusterBroker.start({ ...config, controllerBootstrap: bootstrap, clusterId }, log, options)
  }
  const listening =
    broker !== undefined ? `${config.host}:${broker.port}` : `${config.controllerHost}:${controller?.port ?? -1}`
  log(`clustermirror node ${config.nodeId} (${roles.join(",")}, cluster ${clusterId}) listening on ${listening}`)
  return {
    port: broker?.port ?? -1,
    controllerPort: controller?.port ?? -1,
    clusterId,
    close: async () => {
      await broker?.close()
      await controller?.close()
    }
  }
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })

export interface Embedded {
  readonly clusterId: string
  /** The first controller's port. */
  readonly controllerPort: number
  /** Every controller's port (node ids 1000, 1001, ...). */
  readonly controllerPorts: ReadonlyArray<number>
  readonly brokers: ReadonlyArray<{ readonly nodeId: number; readonly port: number }>
  readonly bootstrap: string
  readonly close: () => Promise<void>
}

/**
 * A controller (node id 1000), or a KRaft quorum of `controllers` (1000, 1001, ...), and brokers 1..n in
 * this process, real TCP on loopback.
 */
export const embedded = async (
  n: number,
  base: BrokerConfig,
  log: (line: string) => void = () => {},
  options: ClusterBroker.ClusterBrokerOptions = {},
  controllers = 1
): Promise<Embedded> => {
  const clusterId = formatClusterId(path.join(base.dataDir, "controller-1000"), base.clusterId, 1000, true)
  const controllerPorts: Array<number> = []
  for (let i = 0; i < controllers; i++)
    controllerPorts.push(base.controllerPort > 0 ? base.controllerPort + i : await freePort())
  const voters = controllerPorts.map((port, i) => ({ id: 1000 + i, host: "127.0.0.1", port }))
  // The controllers of a quorum start together: none has a leader before a majority runs.
  const started = await Promise.allSettled(
    voters.map((v) =>
      start(
        {
          ...base,
          nodeId: v.id,
          processRoles: ["controller"],
          clusterId,
          controllerHost: "127.0.0.1",
          controllerPort: v.port,
          controllerQuorumVoters: controllers > 1 ? voters : [],
          dataDir: path.join(base.dataDir, `controller-${v.id}`)
        },
        log
      )
    )
  )
  const quorum = started.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))
  const failed = started.find((r) => r.status === "rejected")
  if (failed !== undefined) {
    for (const c of quorum) await c.close()
    throw failed.reason
  }
  const brokers: Node[] = []
  for (let i = 1; i <= n; i++) {
    const port = base.port > 0 ? base.port + i - 1 : await freePort()
    brokers.push(
      await start(
        {
          ...base,
          nodeId: i,
          processRoles: ["broker"],
          clusterId,
          host: "127.0.0.1",
          advertisedHost: "127.0.0.1",
          port,
          // Like the client ports: broker i serves metrics on the configured port + i - 1.
          metricsPort: base.metricsPort > 0 ? base.metricsPort + i - 1 : 0,
          controllerBootstrap: { host: "127.0.0.1", port: controllerPorts[0]! },
          controllerBootstrapServers: voters.map(({ host, port }) => ({ host, port })),
          dataDir: path.join(base.dataDir, `broker-${i}`)
        },
        log,
        options
      )
    )
  }
  return {
    clusterId,
    controllerPort: controllerPorts[0]!,
    controllerPorts,
    brokers: brokers.map((b, i) => ({ nodeId: i + 1, port: b.port })),
    bootstrap: brokers.map((b) => `127.0.0.1:${b.port}`).join(","),
    close: async () => {
      for (const b of brokers) await b.close()
      for (const c of quorum) await c.close()
    }
  }
}
