/**
 * The server's integration-test setup over the shared testkit: our server as a process, or a controller
 * and N brokers as separate processes (`ProcessCluster`), with the test broker defaults
 * (`ServerProcess.TEST_DEFAULTS`) under each test's own settings, plus a kafkajs client pointed at a
 * server. Process control, kcat, RSS sampling, free ports and polling live in the testkit.
 *
 * It adds no process handling of its own; a cluster's base directory is a temp dir removed on `stop()`.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { ProcessCluster, Properties, ServerProcess } from "@clustermirror/testkit"
import { Kafka, logLevel } from "kafkajs"

export interface ServerOptions {
  /** Broker/topic settings written to the `--config` properties file, over the test defaults. */
  readonly config?: Properties.Properties
  /** Reuse an existing data dir (it is then not removed by `stop()`). */
  readonly dataDir?: string
  /** Keep the server's complete output in this file. */
  readonly logFile?: string
}

export interface ServerHandle extends ServerProcess.ServerHandle {
  /** A kafkajs client for this server with logging off. */
  kafka(clientId?: string): Kafka
}

/** Starts a server process on a free port and resolves once it is listening. */
export const startServer = async (opts: ServerOptions = {}): Promise<ServerHandle> => {
  const server = await ServerProcess.start({
    config: Properties.merge(ServerProcess.TEST_DEFAULTS, opts.config),
    tempPrefix: "clustermirror-int-",
    ...(opts.dataDir === undefined ? {} : { dataDir: opts.dataDir }),
    ...(opts.logFile === undefined ? {} : { logFile: opts.logFile })
  })
  return withKafka(server)
}

/** Extends the handle in place: its `pid` is a getter that follows restarts, which a copy would freeze. */
const withKafka = <H extends ServerProcess.ServerHandle>(server: H): H & ServerHandle =>
  Object.assign(server, {
    kafka: (clientId = "clustermirror-int") =>
      new Kafka({
        clientId,
        brokers: [server.bootstrap],
        logLevel: logLevel.NOTHING,
        connectionTimeout: 10_000,
        requestTimeout: 60_000
      })
  })

export interface ClusterOptions {
  /** Number of brokers (node ids 1..N; the controller is node 1000). */
  readonly brokers: number
  /** The controller's settings, over the test defaults. */
  readonly controllerConfig?: Properties.Properties
  /** Every broker's settings, over the test defaults. */
  readonly brokerConfig?: Properties.Properties
  /** The brokers' listener name (default PLAINTEXT). */
  readonly brokerListener?: string
  /** A second listener on every broker, at `cluster.node(id).secondPort`. */
  readonly secondBrokerListener?: string
  /** Extra `server` arguments of the controller (e.g. `--add-scram`). */
  readonly controllerArgs?: ReadonlyArray<string>
  /** Controllers (default 1); several form a KRaft quorum (node ids 1000, 1001, ...). */
  readonly controllers?: number
}

/** A node of a cluster: its server handle (it follows the node's restarts) with the node's id and `log.dirs`. */
export interface ClusterServer extends ServerHandle {
  readonly nodeId: number
  readonly logDir: string
}

export interface Cluster {
  readonly cluster: ProcessCluster.Cluster
  readonly controller: ClusterServer
  /** Every controller: the one of `controller`, or a quorum. */
  readonly controllers: ReadonlyArray<ClusterServer>
  /** Broker `i + 1` at index `i`. */
  readonly brokers: ReadonlyArray<ClusterServer>
  /** Stops every node and removes the cluster's files. */
  stop(): Promise<void>
}

/**
 * Starts a controller and `brokers` brokers as separate processes, each with the test defaults under
 * the given settings, and resolves once every one of them listens.
 */
export const startCluster = async (opts: ClusterOptions): Promise<Cluster> => {
  const baseDir = mkdtempSync(join(tmpdir(), "clustermirror-int-cluster-"))
  let cluster: ProcessCluster.Cluster
  try {
    cluster = await ProcessCluster.start({
      name: "int",
      baseDir,
      brokers: opts.brokers,
      ...(opts.controllers === undefined ? {} : { controllers: opts.controllers }),
      controllerConfig: Properties.merge(ServerProcess.TEST_DEFAULTS, opts.controllerConfig),
      brokerConfig: Properties.merge(ServerProcess.TEST_DEFAULTS, opts.brokerConfig),
      ...(opts.brokerListener === undefined ? {} : { brokerListener: opts.brokerListener }),
      ...(opts.secondBrokerListener === undefined ? {} : { secondBrokerListener: opts.secondBrokerListener }),
      ...(opts.controllerArgs === undefined ? {} : { controllerArgs: opts.controllerArgs })
    })
  } catch (e) {
    rmSync(baseDir, { recursive: true, force: true })
    throw e
  }
  const server = (node: ProcessCluster.ClusterNode): ClusterServer =>
    Object.assign(withKafka(node.handle()!), { nodeId: node.nodeId, logDir: node.logDir })
  return {
    cluster,
    controller: server(cluster.controller),
    controllers: cluster.controllers.map(server),
    brokers: cluster.brokers.map(server),
    stop: async () => {
      try {
        await cluster.stop()
      } finally {
        rmSync(baseDir, { recursive: true, force: true })
      }
    }
  }
}

const cliMain = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url))
const cliDir = fileURLToPath(new URL("../../cli/", import.meta.url))

/** Runs the operator CLI as a process and resolves with its exit code and output once it exits. */
export const cli = (args: ReadonlyArray<string>): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", cliMain, ...args], { cwd: cliDir })
    let stdout = ""
    let stderr = ""
    p.stdout.on("data", (d) => (stdout += d))
    p.stderr.on("data", (d) => (stderr += d))
    p.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Peak RSS budget for the server across the integration tests. */
export const PEAK_RSS_LIMIT_MB = 300
