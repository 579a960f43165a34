/**
 * A cluster of our servers as separate OS processes: one controller (`process.roles=controller`), or a
 * quorum of several (`controller.quorum.voters`, node ids 1000, 1001, ...), and N brokers
 * (`process.roles=broker`, trying every controller), each started through the server's entrypoint with its own config
 * file, data dir and log file under one base directory, on free loopback ports fixed for the cluster's
 * life so that a restarted node comes back at the same address.
 *
 * Nodes are addressed by node id (the controller is `CONTROLLER_NODE_ID`), so fault injectors can kill,
 * pause, resume and restart any one of them. It owns only the processes it started and the files under
 * its base directory; it never reads or changes the data files (callers may read `logDir`).
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import * as Ports from "./Ports.js"
import * as Properties from "./Properties.js"
import * as ServerProcess from "./ServerProcess.js"

/** The controller's node id; brokers are 1..N. */
export const CONTROLLER_NODE_ID = 1000

export interface ClusterOptions {
  /** Names the cluster in file names and messages, e.g. "source". */
  readonly name: string
  /** Directory holding every node's config, data and log (created; kept on stop). */
  readonly baseDir: string
  /** Number of brokers (node ids 1..N). */
  readonly brokers: number
  /** Number of controllers (node ids 1000, 1001, ...; default 1): several form a KRaft quorum. */
  readonly controllers?: number
  /** The `cluster.id` (22 characters, base64url); random by default. */
  readonly clusterId?: string
  /** Extra settings of the controller's config. */
  readonly controllerConfig?: Properties.Properties
  /** Extra settings of every broker's config. */
  readonly brokerConfig?: Properties.Properties
  /** Extra `server` arguments of the controller, e.g. `["--add-scram", "SCRAM-SHA-512=[name=admin,password=…]"]`. */
  readonly controllerArgs?: ReadonlyArray<string>
  /** The name of the brokers' listener (default PLAINTEXT), e.g. SSL; its protocol is the config's business. */
  readonly brokerListener?: string
  /**
   * A second listener on every broker (e.g. `MTLS`), at a port of its own (`ClusterNode.secondPort`); its
   * protocol and settings are the config's business. The first listener stays the one the cluster reports.
   */
  readonly secondBrokerListener?: string
  /** Flags for `node` itself, e.g. `--max-old-space-size=256`. */
  readonly nodeArgs?: ReadonlyArray<string>
  readonly readyTimeoutMs?: number
}

export interface ClusterNode {
  readonly nodeId: number
  readonly role: "controller" | "broker"
  /** The node's listener port (fixed across restarts). */
  readonly port: number
  /** The port of the broker's second listener (`ClusterOptions.secondBrokerListener`), if it has one. */
  readonly secondPort?: number
  /** The node's `log.dirs`. */
  readonly logDir: string
  /** The file that collects the node's output across restarts. */
  readonly logFile: string
  readonly configFile: string
  /** The running process, `undefined` before the first start. */
  readonly handle: () => ServerProcess.ServerHandle | undefined
}

export interface Cluster {
  readonly name: string
  readonly clusterId: string
  /** The first controller. */
  readonly controller: ClusterNode
  /** Every controller (one unless `controllers` asked for a quorum). */
  readonly controllers: ReadonlyArray<ClusterNode>
  readonly brokers: ReadonlyArray<ClusterNode>
  /** `127.0.0.1:<port>` of every broker, comma-separated. */
  readonly bootstrap: string
  /** The controllers, then the brokers. */
  readonly nodes: ReadonlyArray<ClusterNode>
  node(nodeId: number): ClusterNode
  /** Sends `signal` to a node's process without waiting (SIGSTOP / SIGCONT, or a kill waited for elsewhere). */
  signal(nodeId: number, signal: NodeJS.Signals): void
  /** Sends `signal` and waits for the process to exit. */
  kill(nodeId: number, signal: "SIGKILL" | "SIGTERM"): Promise<ServerProcess.ExitInfo>
  /** Starts a node's process again (after a kill) and waits until it listens. */
  start(nodeId: number): Promise<void>
  isAlive(nodeId: number): boolean
  /** Stops every node (SIGCONT first, then SIGTERM, brokers before the controllers); files stay. */
  stop(): Promise<void>
}

/** A random `cluster.id`: 16 random bytes, base64url, 22 characters. */
export const randomClusterId = (): string => {
  const bytes = new Uint8Array(16)
  crypto.getRandomValues(bytes)
  return Buffer.from(bytes).toString("base64url").slice(0, 22)
}

/** A controller's config; `voters` (`id@host:port,...`) when it is one of a quorum. */
export const controllerProperties = (
  clusterId: string,
  port: number,
  logDir: string,
  extra: Properties.Properties = {},
  nodeId = CONTROLLER_NODE_ID,
  voters?: string
): Properties.Properties =>
  Properties.merge(
    {
      "process.roles": "controller",
      "node.id": nodeId,
      "cluster.id": clusterId,
      listeners: `CONTROLLER://127.0.0.1:${port}`,
      "log.dirs": logDir,
      ...(voters === undefined ? {} : { "controller.quorum.voters": voters })
    },
    extra
  )

/** A broker's config; `controllerPort` one port, or `host:port,...` of every controller. */
export const brokerProperties = (
  clusterId: string,
  nodeId: number,
  port: number,
  controllerPort: number | string,
  logDir: string,
  extra: Properties.Properties = {},
  listenerName = "PLAINTEXT"
): Properties.Properties =>
  Properties.merge(
    {
      "process.roles": "broker",
      "node.id": nodeId,
      "cluster.id": clusterId,
      listeners: `${listenerName}://127.0.0.1:${port}`,
      "controller.quorum.bootstrap.servers":
        typeof controllerPort === "number" ? `127.0.0.1:${controllerPort}` : controllerPort,
      "log.dirs": logDir
    },
    extra
  )

/**
 * Starts the controller, then the brokers (one after another, each once it listens). On a failure
 * half-way, whatever was started is stopped before the error is rethrown.
 */
export const start = async (opts: ClusterOptions): Promise<Cluster> => {
  const clusterId = opts.clusterId ?? randomClusterId()
  const second = opts.secondBrokerListener
  const quorumSize = opts.controllers ?? 1
  // Brokers' ports first (broker i at ports[i], its second listener at ports[brokers + i]), then the controllers'.
  const ports = await Ports.freePorts(opts.brokers + 1 + (second === undefined ? 0 : opts.brokers) + quorumSize - 1)
  const controllerPorts = [ports[0]!, ...ports.slice(ports.length - (quorumSize - 1))]
  const voters =
    quorumSize > 1 ? controllerPorts.map((p, i) => `${CONTROLLER_NODE_ID + i}@127.0.0.1:${p}`).join(",") : undefined
  const controllerList = controllerPorts.map((p) => `127.0.0.1:${p}`).join(",")
  mkdirSync(opts.baseDir, { recursive: true })
  const handles = new Map<number, ServerProcess.ServerHandle>()

  const makeNode = (nodeId: number, role: "controller" | "broker", port: number): ClusterNode => {
    const label =
      role === "broker" ? `broker-${nodeId}` : nodeId === CONTROLLER_NODE_ID ? "controller" : `controller-${nodeId}`
    const dir = join(opts.baseDir, label)
    mkdirSync(dir, { recursive: true })
    const logDir = join(dir, "data")
    const configFile = join(dir, "server.properties")
    const secondPort = role === "broker" && second !== undefined ? ports[opts.brokers + nodeId]! : undefined
    const first =
      role === "controller"
        ? controllerProperties(clusterId, port, logDir, opts.controllerConfig, nodeId, voters)
        : brokerProperties(clusterId, nodeId, port, controllerList, logDir, opts.brokerConfig, opts.brokerListener)
    const props =
      secondPort === undefined
        ? first
        : { ...first, listeners: `${first.listeners},${second}://127.0.0.1:${secondPort}` }
    writeFileSync(configFile, Properties.render(props))
    return {
      nodeId,
      role,
      port,
      ...(secondPort === undefined ? {} : { secondPort }),
      logDir,
      logFile: join(dir, "server.log"),
      configFile,
      handle: () => handles.get(nodeId)
    }
  }

  const controllers = controllerPorts.map((p, i) => makeNode(CONTROLLER_NODE_ID + i, "controller", p))
  const controller = controllers[0]!
  const brokers = Array.from({ length: opts.brokers }, (_, i) => makeNode(i + 1, "broker", ports[i + 1]!))
  const nodes = [...controllers, ...brokers]
  const byId = new Map(nodes.map((n) => [n.nodeId, n]))

  const node = (nodeId: number): ClusterNode => {
    const n = byId.get(nodeId)
    if (n === undefined) throw new Error(`${opts.name}: no node ${nodeId}`)
    return n
  }

  const launch = async (n: ClusterNode): Promise<void> => {
    const running = handles.get(n.nodeId)
    if (running !== undefined) {
      if (running.isAlive()) throw new Error(`${opts.name}: node ${n.nodeId} is already running`)
      await running.restart()
      return
    }
    handles.set(
      n.nodeId,
      await ServerProcess.start({
        configFile: n.configFile,
        port: false,
        dataDir: false,
        logFile: n.logFile,
        tempPrefix: `clustermirror-${opts.name}-${n.nodeId}-`,
        ...(n.role === "controller" && opts.controllerArgs !== undefined ? { args: opts.controllerArgs } : {}),
        ...(opts.nodeArgs === undefined ? {} : { nodeArgs: opts.nodeArgs }),
        ...(opts.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: opts.readyTimeoutMs })
      })
    )
  }

  const stop = async (): Promise<void> => {
    for (const n of [...brokers, ...controllers]) {
      const h = handles.get(n.nodeId)
      if (h === undefined) continue
      if (h.isAlive()) process.kill(h.pid, "SIGCONT")
      await h.stop().catch(() => undefined)
    }
  }

  try {
    // The controllers of a quorum start together: none is ready to serve before a majority runs.
    await Promise.all(controllers.map(launch))
    for (const n of brokers) await launch(n)
  } catch (e) {
    await stop()
    throw e
  }

  return {
    name: opts.name,
    clusterId,
    controller,
    controllers,
    brokers,
    bootstrap: brokers.map((b) => `127.0.0.1:${b.port}`).join(","),
    nodes,
    node,
    signal: (nodeId, signal) => {
      const h = handles.get(node(nodeId).nodeId)
      if (h === undefined || !h.isAlive()) throw new Error(`${opts.name}: node ${nodeId} is not running`)
      process.kill(h.pid, signal)
    },
    kill: async (nodeId, signal) => {
      const h = handles.get(node(nodeId).nodeId)
      if (h === undefined) throw new Error(`${opts.name}: node ${nodeId} was never started`)
      return h.kill(signal)
    },
    start: (nodeId) => launch(node(nodeId)),
    isAlive: (nodeId) => handles.get(node(nodeId).nodeId)?.isAlive() === true,
    stop
  }
}
