/**
 * Real Apache Kafka as a test peer and benchmark baseline: KRaft nodes started from Maven Central's jars
 * on free loopback ports with temporary data dirs. `startKafka` runs one combined broker+controller;
 * `startKafkaCluster` runs a dedicated controller plus N brokers, each its own JVM.
 *
 * It owns the processes and temp dirs it creates and removes them on `stop()`, also when a start fails
 * half-way. It never reads or edits Kafka's data files; tests talk to the nodes over the protocol only.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Uuid } from "@clustermirror/protocol"
import { Effect, type Scope } from "effect"
import * as JavaTools from "./JavaTools.js"
import * as KafkaPeer from "./KafkaPeer.js"
import * as Ports from "./Ports.js"
import * as Properties from "./Properties.js"
import { awaitListener } from "./internal/ApiVersionsProbe.js"
import * as Process from "./internal/Process.js"
import { KafkaLibsError, PeerStartError, PeerStopError } from "./TestkitError.js"

export type ExitInfo = Process.ExitInfo

const HOST = "127.0.0.1"
const READY_TIMEOUT_MS = 120_000
// A broker's controlled shutdown waits for the controller to move leaders away; give it time.
const STOP_TIMEOUT_MS = 30_000
const OUTPUT_TAIL_CHARS = 64 * 1024
const FORMAT_TIMEOUT_MS = 60_000

/** Settings that keep a test node small and quick; any of them can be overridden per node. */
export const TEST_DEFAULTS: Properties.Properties = {
  "num.partitions": 1,
  "group.initial.rebalance.delay.ms": 0,
  // Internal topics with one partition are created in milliseconds instead of seconds.
  "offsets.topic.num.partitions": 1,
  "transaction.state.log.num.partitions": 1,
  "share.coordinator.state.topic.num.partitions": 1,
  "auto.create.topics.enable": true
}

/**
 * For functional tests, not benchmarks: after a SIGKILL the controller refuses the broker's new
 * registration until the old session times out (9 s by default), so a shorter session makes kill+restart
 * scenarios quick. Benchmarks that measure failover keep Kafka's defaults.
 */
export const QUICK_SESSION_PROPERTIES: Properties.Properties = {
  "broker.session.timeout.ms": 3_000,
  "broker.heartbeat.interval.ms": 1_000
}

/**
 * For functional tests, not benchmarks: the client JIT only, which roughly halves a node's start time on a
 * busy machine and costs peak throughput.
 */
export const FAST_START_JVM_FLAGS: ReadonlyArray<string> = ["-XX:TieredStopAtLevel=1", "-Xshare:auto"]

export interface NodeOptions {
  /** Kafka version (default `KafkaPeer.version()`). */
  readonly version?: string
  /** A ready libs folder instead of resolving `version`. */
  readonly libs?: string
  /** Extra `server.properties` entries, over the generated ones. */
  readonly properties?: Properties.Properties
  /** Maximum heap per JVM (default `512m`). */
  readonly heap?: string
  /** Extra JVM flags (GC settings, profiling agents, ...). */
  readonly jvmFlags?: ReadonlyArray<string>
  /** How long to wait for each node's listener (default 120 s). */
  readonly readyTimeoutMs?: number
  /** The KRaft cluster id (default: a fresh random one). */
  readonly clusterId?: string
}

/** A client listener besides PLAINTEXT, e.g. `{ name: "SSL", protocol: "SSL" }`; its port is picked free. */
export interface ExtraListener {
  /** The listener name (upper case, as in `listeners`). */
  readonly name: string
  readonly protocol: "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL"
}

/** A SCRAM credential written into the metadata log when the node is formatted (`kafka-storage format --add-scram`). */
export interface ScramUser {
  readonly mechanism: "SCRAM-SHA-256" | "SCRAM-SHA-512"
  readonly name: string
  readonly password: string
}

export interface KafkaOptions extends NodeOptions {
  /** `node.id` of the combined broker+controller (default 1). */
  readonly nodeId?: number
  /** SCRAM users to bootstrap at format time, so that SASL listeners serve them from the first start. */
  readonly scramUsers?: ReadonlyArray<ScramUser>
  /**
   * More client listeners, advertised next to PLAINTEXT (which stays the inter-broker listener and
   * `bootstrap`); their security settings (`ssl.keystore.*`, ...) go in `properties`.
   */
  readonly extraListeners?: ReadonlyArray<ExtraListener>
}

export interface KafkaClusterOptions extends NodeOptions {
  /** Number of broker processes (default 3); their ids are 1..brokers. */
  readonly brokers?: number
  /** `node.id` of the dedicated controller (default 0). */
  readonly controllerId?: number
  /** Extra properties for one broker, over `properties`. */
  readonly brokerProperties?: (nodeId: number) => Properties.Properties | undefined
}

/** One running Kafka JVM. */
export interface KafkaNode {
  readonly nodeId: number
  readonly roles: "broker,controller" | "broker" | "controller"
  /** `127.0.0.1:<port>` of the client listener (the controller listener for a controller-only node). */
  readonly bootstrap: string
  /** Client (PLAINTEXT) listener port; for a controller-only node, its CONTROLLER port. */
  readonly port: number
  /** CONTROLLER listener port, or `undefined` for a broker-only node. */
  readonly controllerPort: number | undefined
  /** Port of each extra listener (`KafkaOptions.extraListeners`) by name; empty without them. */
  readonly listenerPorts: Readonly<Record<string, number>>
  readonly dataDir: string
  readonly propertiesFile: string
  /** The current JVM's process id (changes on `restart()`). */
  readonly pid: number
  /** SIGTERM, wait (SIGKILL after 30 s), then remove the node's temp dir. */
  stop(): Promise<ExitInfo>
  /** Sends `signal` and waits for exit; the data dir stays for `restart()`. */
  kill(signal: NodeJS.Signals): Promise<ExitInfo>
  /** Starts the node again on the same ports and data dir (stopping it first if it runs). */
  restart(): Promise<void>
  isAlive(): boolean
  /** The recent stdout+stderr of the JVM (WARN and above, see `KafkaPeer.log4jConfig`). */
  logs(): string
}

export interface KafkaCluster {
  /** Comma-separated broker listeners, for `--bootstrap-server` and `kcat -b`. */
  readonly bootstrap: string
  readonly controller: KafkaNode
  readonly brokers: ReadonlyArray<KafkaNode>
  /** The broker with `node.id` `nodeId`. */
  broker(nodeId: number): KafkaNode
  /** Stops the brokers, then the controller, and removes every temp dir. */
  stop(): Promise<void>
}

/** Where one node listens and keeps its data. */
export interface NodeSpec {
  readonly nodeId: number
  readonly roles: KafkaNode["roles"]
  /** PLAINTEXT port, absent for a controller-only node. */
  readonly port: number | undefined
  /** CONTROLLER port, absent for a broker-only node. */
  readonly controllerPort: number | undefined
  /** `host:port` of the controller quorum. */
  readonly quorum: string
  readonly logDir: string
  /** Client listeners besides PLAINTEXT, with their ports. */
  readonly extraListeners?: ReadonlyArray<ExtraListener & { readonly port: number }>
}

/**
 * The `server.properties` of a node: roles, listeners on loopback, the KRaft quorum, the log dir and
 * single-node-friendly replication factors; `extra` entries win over all of them.
 */
export const nodeProperties = (
  spec: NodeSpec,
  replicationFactor: number,
  extra?: Properties.Properties
): Properties.Properties => {
  const listeners: Array<string> = []
  if (spec.port !== undefined) listeners.push(`PLAINTEXT://${HOST}:${spec.port}`)
  const more = spec.extraListeners ?? []
  for (const l of more) listeners.push(`${l.name}://${HOST}:${l.port}`)
  if (spec.controllerPort !== undefined) listeners.push(`CONTROLLER://${HOST}:${spec.controllerPort}`)
  const protocolMap = ["PLAINTEXT:PLAINTEXT", ...more.map((l) => `${l.name}:${l.protocol}`), "CONTROLLER:PLAINTEXT"]
  const isBroker = spec.roles !== "controller"
  return Properties.merge(
    {
      "process.roles": spec.roles,
      "node.id": spec.nodeId,
      "controller.quorum.bootstrap.servers": spec.quorum,
      "controller.listener.names": "CONTROLLER",
      listeners: listeners.join(","),
      "advertised.listeners": listeners.join(","),
      "listener.security.protocol.map": protocolMap.join(","),
      "log.dirs": spec.logDir
    },
    isBroker
      ? {
          "inter.broker.listener.name": "PLAINTEXT",
          ...TEST_DEFAULTS,
          "offsets.topic.replication.factor": replicationFactor,
          "transaction.state.log.replication.factor": replicationFactor,
          "transaction.state.log.min.isr": Math.min(2, replicationFactor),
          "share.coordinator.state.topic.replication.factor": replicationFactor,
          "share.coordinator.state.topic.min.isr": Math.min(2, replicationFactor)
        }
      : undefined,
    extra
  )
}

interface Launch {
  readonly spec: NodeSpec
  readonly libs: string
  readonly scratch: string
  readonly propertiesFile: string
  readonly jvmFlags: ReadonlyArray<string>
  readonly readyTimeoutMs: number
}

const jvmFlags = (opts: NodeOptions): ReadonlyArray<string> => [
  `-Xmx${opts.heap ?? "512m"}`,
  `-Xms${opts.heap ?? "512m"}`,
  // The flags Kafka's start script uses, so the baseline runs as operators run it.
  "-XX:+UseG1GC",
  "-XX:MaxGCPauseMillis=20",
  "-XX:InitiatingHeapOccupancyPercent=35",
  "-XX:+ExplicitGCInvokesConcurrent",
  "-Djava.awt.headless=true",
  `-Dlog4j2.configurationFile=${KafkaPeer.log4jConfig}`,
  ...(opts.jvmFlags ?? [])
]

/** The `--add-scram` arguments of `kafka-storage format` for `users`. */
export const addScramArgs = (users: ReadonlyArray<ScramUser>): ReadonlyArray<string> =>
  users.flatMap((u) => ["--add-scram", `${u.mechanism}=[name=${u.name},password=${u.password}]`])

const format = async (
  l: Launch,
  clusterId: string,
  mode: "--standalone" | "--no-initial-controllers",
  scramUsers: ReadonlyArray<ScramUser> = []
) => {
  const result = await JavaTools.run(
    JavaTools.MainClass.storage,
    ["format", "-t", clusterId, "-c", l.propertiesFile, mode, ...addScramArgs(scramUsers)],
    { libs: l.libs, timeoutMs: FORMAT_TIMEOUT_MS }
  )
  if (result.code !== 0)
    throw new PeerStartError({
      peer: `kafka node ${l.spec.nodeId}`,
      output: result.stdout + result.stderr,
      message: `formatting kafka node ${l.spec.nodeId} failed (exit ${result.code ?? result.signal}):\n${result.stdout}${result.stderr}`
    })
}

/** Starts the JVM of a formatted node; resolves once its listener answers ApiVersions. */
const launchNode = async (l: Launch): Promise<KafkaNode> => {
  const name = `kafka node ${l.spec.nodeId}`
  let child: ChildProcess | undefined
  let output = new Process.OutputTail(OUTPUT_TAIL_CHARS)
  const probePort = l.spec.port ?? l.spec.controllerPort!

  const isAlive = (): boolean => child !== undefined && !Process.hasExited(child)

  const spawnAndWait = async (): Promise<void> => {
    output = new Process.OutputTail(OUTPUT_TAIL_CHARS)
    const proc = spawn("java", [...l.jvmFlags, "-cp", KafkaPeer.classpath(l.libs), "kafka.Kafka", l.propertiesFile], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    child = proc
    Process.track(proc)
    output.attach(proc)
    let spawnError: Error | undefined
    proc.once("error", (e) => (spawnError = e))
    const ready = await awaitListener(HOST, probePort, Date.now() + l.readyTimeoutMs, () => Process.hasExited(proc))
    if (ready) return
    proc.kill("SIGKILL")
    const exit = await Process.waitForExit(proc, 5_000)
    throw new PeerStartError({
      peer: name,
      output: output.toString(),
      message:
        spawnError !== undefined
          ? `${name}: java failed to spawn: ${spawnError.message}`
          : `${name} ${exit !== undefined && exit.signal !== "SIGKILL" ? `exited (code ${exit.code}, signal ${exit.signal})` : `was not ready within ${l.readyTimeoutMs} ms`}; output:\n${output.toString()}`
    })
  }

  const kill = async (signal: NodeJS.Signals): Promise<ExitInfo> => {
    const proc = child
    if (proc === undefined) return { code: null, signal: null }
    if (!Process.hasExited(proc)) proc.kill(signal)
    const info = await Process.waitForExit(proc, STOP_TIMEOUT_MS)
    if (info !== undefined) return info
    proc.kill("SIGKILL")
    const forced = await Process.waitForExit(proc, STOP_TIMEOUT_MS)
    throw new PeerStopError({
      peer: name,
      output: output.toString(),
      message: `${name} ignored ${signal} for ${STOP_TIMEOUT_MS} ms (then ${forced ? "SIGKILLed" : "still running"})`
    })
  }

  await spawnAndWait()
  return {
    nodeId: l.spec.nodeId,
    roles: l.spec.roles,
    bootstrap: `${HOST}:${probePort}`,
    port: probePort,
    controllerPort: l.spec.controllerPort,
    listenerPorts: Object.fromEntries((l.spec.extraListeners ?? []).map((x) => [x.name, x.port])),
    dataDir: l.spec.logDir,
    propertiesFile: l.propertiesFile,
    get pid() {
      return child?.pid ?? -1
    },
    stop: async () => {
      try {
        return await kill("SIGTERM")
      } finally {
        rmSync(l.scratch, { recursive: true, force: true })
      }
    },
    kill,
    restart: async () => {
      if (isAlive()) await kill("SIGTERM")
      await spawnAndWait()
    },
    isAlive,
    logs: () => output.toString()
  }
}

/** Writes the node's properties into a fresh temp dir; the caller formats and launches it. */
const prepare = (
  libs: string,
  spec: Omit<NodeSpec, "logDir">,
  replicationFactor: number,
  opts: NodeOptions,
  extra: Properties.Properties | undefined
): Launch => {
  const scratch = mkdtempSync(join(tmpdir(), `clustermirror-kafka-${spec.nodeId}-`))
  Process.trackDir(scratch)
  const logDir = join(scratch, "data")
  mkdirSync(logDir)
  const full: NodeSpec = { ...spec, logDir }
  const propertiesFile = join(scratch, "server.properties")
  writeFileSync(
    propertiesFile,
    Properties.render(nodeProperties(full, replicationFactor, Properties.merge(opts.properties, extra)))
  )
  return {
    spec: full,
    libs,
    scratch,
    propertiesFile,
    jvmFlags: jvmFlags(opts),
    readyTimeoutMs: opts.readyTimeoutMs ?? READY_TIMEOUT_MS
  }
}

/** Starts a single-node KRaft cluster (one JVM, broker and controller) and waits until it serves. */
export const startKafka = async (opts: KafkaOptions = {}): Promise<KafkaNode> => {
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  const extra = opts.extraListeners ?? []
  const [port, controllerPort, ...extraPorts] = await Ports.freePorts(2 + extra.length)
  const nodeId = opts.nodeId ?? 1
  const extraListeners = extra.map((l, i) => ({ ...l, port: extraPorts[i]! }))
  const launch = prepare(
    libs,
    {
      nodeId,
      roles: "broker,controller",
      port,
      controllerPort,
      quorum: `${HOST}:${controllerPort}`,
      extraListeners
    },
    1,
    opts,
    undefined
  )
  try {
    await format(launch, opts.clusterId ?? Uuid.random(), "--standalone", opts.scramUsers)
    return await launchNode(launch)
  } catch (e) {
    rmSync(launch.scratch, { recursive: true, force: true })
    throw e
  }
}

/**
 * Starts a KRaft cluster of one dedicated controller and `brokers` broker JVMs (ids 1..N) and waits until
 * every broker serves. Internal topics get replication factor min(3, N).
 */
export const startKafkaCluster = async (opts: KafkaClusterOptions = {}): Promise<KafkaCluster> => {
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  const count = opts.brokers ?? 3
  const controllerId = opts.controllerId ?? 0
  const replicationFactor = Math.min(3, count)
  const clusterId = opts.clusterId ?? Uuid.random()
  const ports = await Ports.freePorts(count + 1)
  const controllerPort = ports[0]!
  const quorum = `${HOST}:${controllerPort}`

  const prepared: Launch[] = []
  const started: KafkaNode[] = []
  const cleanup = async (): Promise<void> => {
    await Promise.allSettled(started.map((n) => n.kill("SIGKILL")))
    for (const l of prepared) rmSync(l.scratch, { recursive: true, force: true })
  }
  try {
    const controllerLaunch = prepare(
      libs,
      { nodeId: controllerId, roles: "controller", port: undefined, controllerPort, quorum },
      replicationFactor,
      opts,
      undefined
    )
    prepared.push(controllerLaunch)
    const brokerLaunches = Array.from({ length: count }, (_, i) => {
      const nodeId = i + 1
      const l = prepare(
        libs,
        { nodeId, roles: "broker", port: ports[i + 1]!, controllerPort: undefined, quorum },
        replicationFactor,
        opts,
        opts.brokerProperties?.(nodeId)
      )
      prepared.push(l)
      return l
    })
    await Promise.all([
      format(controllerLaunch, clusterId, "--standalone"),
      ...brokerLaunches.map((l) => format(l, clusterId, "--no-initial-controllers"))
    ])
    const controller = await launchNode(controllerLaunch)
    started.push(controller)
    const results = await Promise.allSettled(brokerLaunches.map((l) => launchNode(l)))
    for (const r of results) if (r.status === "fulfilled") started.push(r.value)
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected")
    if (failed !== undefined) throw failed.reason
    const brokers = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))
    return {
      bootstrap: brokers.map((b) => b.bootstrap).join(","),
      controller,
      brokers,
      broker: (nodeId) => {
        const b = brokers.find((n) => n.nodeId === nodeId)
        if (b === undefined) throw new Error(`no broker ${nodeId} in this cluster`)
        return b
      },
      stop: async () => {
        const stops = await Promise.allSettled(brokers.map((b) => b.stop()))
        await controller.stop()
        const failure = stops.find((r): r is PromiseRejectedResult => r.status === "rejected")
        if (failure !== undefined) throw failure.reason
      }
    }
  } catch (e) {
    await cleanup()
    throw e
  }
}

const startError =
  (peer: string) =>
  (e: unknown): KafkaLibsError | PeerStartError =>
    e instanceof KafkaLibsError || e instanceof PeerStartError
      ? e
      : new PeerStartError({ peer, output: "", message: `${peer} failed to start: ${String(e)}` })

/** `startKafka` as a scoped resource (for `@effect/vitest`'s `layer` or `it.scoped`): stopped when the scope closes. */
export const scoped = (
  opts: KafkaOptions = {}
): Effect.Effect<KafkaNode, KafkaLibsError | PeerStartError, Scope.Scope> =>
  Effect.acquireRelease(Effect.tryPromise({ try: () => startKafka(opts), catch: startError("kafka node") }), (node) =>
    Effect.promise(() => node.stop())
  )

/** `startKafkaCluster` as a scoped resource: stopped when the scope closes. */
export const scopedCluster = (
  opts: KafkaClusterOptions = {}
): Effect.Effect<KafkaCluster, KafkaLibsError | PeerStartError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({ try: () => startKafkaCluster(opts), catch: startError("kafka cluster") }),
    (cluster) => Effect.promise(() => cluster.stop())
  )
