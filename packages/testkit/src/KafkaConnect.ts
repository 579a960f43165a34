/**
 * Apache Kafka Connect as a peer: one distributed worker (`org.apache.kafka.connect.cli.ConnectDistributed`,
 * Connect's runtime from Maven Central) against any Kafka-protocol cluster, with exactly-once source support
 * on by default, its config, offset and status topics (compacted, replication 3 unless told otherwise), and
 * its REST API on a free loopback port. The worker's classpath also holds our test connectors
 * (`java/connect/`): `LineFileSource` (a file's lines to a topic, the byte position as the source offset)
 * and `LineFileSink` (record values appended to a file as lines).
 *
 * It owns the JVM and the temp dir of its properties file; it talks to the worker only through REST and
 * never to the cluster itself.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as KafkaPeer from "./KafkaPeer.js"
import * as JavaClasses from "./internal/JavaClasses.js"
import * as Process from "./internal/Process.js"
import * as Ports from "./Ports.js"
import * as Properties from "./Properties.js"
import { PeerStartError, PeerStopError, ToolError } from "./TestkitError.js"

export type ExitInfo = Process.ExitInfo

export const MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"

/** Our file source connector's class (settings `file`, `topic`, `batch.lines`). */
export const LINE_FILE_SOURCE = "LineFileSource"
/** Our file sink connector's class (settings `file`, `topics`). */
export const LINE_FILE_SINK = "LineFileSink"

const STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
const READY_TIMEOUT_MS = 120_000
const STOP_TIMEOUT_MS = 60_000
const REQUEST_TIMEOUT_MS = 30_000
const OUTPUT_TAIL_CHARS = 256 * 1024

export interface WorkerOptions {
  readonly bootstrap: string
  /** `group.id` of the Connect cluster (default `connect`). */
  readonly groupId?: string
  /** `exactly.once.source.support` (default `enabled`). */
  readonly exactlyOnceSourceSupport?: "enabled" | "preparing" | "disabled"
  /** Names of the internal topics (default `<groupId>-configs`, `-offsets`, `-status`). */
  readonly configTopic?: string
  readonly offsetTopic?: string
  readonly statusTopic?: string
  /** Replication factor of the internal topics (default 3). */
  readonly replicationFactor?: number
  /** REST port (default a free one). */
  readonly restPort?: number
  /** Further worker properties, over every generated one. */
  readonly properties?: Properties.Properties
  /** Connect version (default `KafkaPeer.DEFAULT_VERSION`). */
  readonly version?: string
  /** A ready libs folder instead of resolving `version`. */
  readonly libs?: string
  /** Maximum heap (default `512m`). */
  readonly heap?: string
  readonly jvmFlags?: ReadonlyArray<string>
  /** Log4j2 configuration of the JVM (default `KafkaPeer.log4jConfig`: WARN and above). */
  readonly log4jConfig?: string
}

/** A connector's state as `GET /connectors/<name>/status` reports it. */
export interface ConnectorStatus {
  readonly name: string
  readonly connector: { readonly state: string; readonly worker_id: string; readonly trace?: string }
  readonly tasks: ReadonlyArray<{
    readonly id: number
    readonly state: string
    readonly worker_id: string
    readonly trace?: string
  }>
}

export interface RestResponse {
  readonly status: number
  readonly body: unknown
}

/** One running worker. */
export interface Worker {
  readonly pid: number
  readonly restPort: number
  /** `http://127.0.0.1:<restPort>`. */
  readonly url: string
  readonly propertiesFile: string
  /** One REST call; the body is parsed JSON (or the text when it is not JSON). */
  rest(method: string, path: string, body?: unknown): Promise<RestResponse>
  /**
   * `POST /connectors`, retried while the worker is rebalancing or not yet the leader's follower (409,
   * 503, 500 request timeouts); rejects with a `ToolError` on any other failure.
   */
  createConnector(name: string, config: Properties.Properties): Promise<void>
  /** `GET /connectors/<name>/status`, or `undefined` while the worker does not know the connector. */
  status(name: string): Promise<ConnectorStatus | undefined>
  /** Resolves once the connector and all its (at least one) tasks are RUNNING; rejects on FAILED. */
  awaitRunning(name: string, timeoutMs?: number): Promise<ConnectorStatus>
  /** SIGTERM and wait for the worker to stop its tasks and exit (SIGKILL after 60 s, then a `PeerStopError`). */
  stop(): Promise<ExitInfo>
  isAlive(): boolean
  /** The recent stdout+stderr of the JVM. */
  logs(): string
}

/** The worker properties of `o` with the REST listener on `restPort`. */
export const workerProperties = (o: WorkerOptions, restPort: number): Properties.Properties => {
  const group = o.groupId ?? "connect"
  const rf = o.replicationFactor ?? 3
  return Properties.merge(
    {
      "bootstrap.servers": o.bootstrap,
      "group.id": group,
      "exactly.once.source.support": o.exactlyOnceSourceSupport ?? "enabled",
      "config.storage.topic": o.configTopic ?? `${group}-configs`,
      "offset.storage.topic": o.offsetTopic ?? `${group}-offsets`,
      "status.storage.topic": o.statusTopic ?? `${group}-status`,
      "config.storage.replication.factor": rf,
      "offset.storage.replication.factor": rf,
      "status.storage.replication.factor": rf,
      "offset.storage.partitions": 5,
      "status.storage.partitions": 3,
      "key.converter": STRING_CONVERTER,
      "value.converter": STRING_CONVERTER,
      "offset.flush.interval.ms": 1000,
      listeners: `http://127.0.0.1:${restPort}`,
      "rest.advertised.host.name": "127.0.0.1",
      "rest.advertised.port": restPort,
      // Our connectors and Connect's own plugins all carry service manifests: no classpath scan.
      "plugin.discovery": "service_load"
    },
    o.properties
  )
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Starts a worker and resolves once its REST API answers `GET /connectors` (it has joined its group). */
export const start = async (o: WorkerOptions): Promise<Worker> => {
  const libs = o.libs ?? (await KafkaPeer.connectLibs(o.version))
  const cp = await JavaClasses.classpath(libs, JavaClasses.connectSourceDir)
  const restPort = o.restPort ?? (await Ports.freePort())
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-connect-"))
  Process.trackDir(scratch)
  const propertiesFile = join(scratch, "worker.properties")
  writeFileSync(propertiesFile, Properties.render(workerProperties(o, restPort)))
  const heap = o.heap ?? "512m"
  const output = new Process.OutputTail(OUTPUT_TAIL_CHARS)
  const child: ChildProcess = spawn(
    "java",
    [
      `-Xmx${heap}`,
      "-XX:+UseSerialGC",
      "-XX:TieredStopAtLevel=1",
      "-Djava.awt.headless=true",
      `-Dlog4j2.configurationFile=${o.log4jConfig ?? KafkaPeer.log4jConfig}`,
      ...(o.jvmFlags ?? []),
      "-cp",
      cp,
      MAIN_CLASS,
      propertiesFile
    ],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  Process.track(child)
  output.attach(child)
  const url = `http://127.0.0.1:${restPort}`

  const rest = async (method: string, path: string, body?: unknown): Promise<RestResponse> => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { "content-type": "application/json", accept: "application/json" },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS + 10_000),
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: res.status, body: parse(await res.text()) }
  }

  const fail = (message: string) =>
    new PeerStartError({
      peer: "kafka connect",
      output: output.toString(),
      message: `${message}; output:\n${output.toString()}`
    })

  const until = async <A>(what: string, timeoutMs: number, check: () => Promise<A | undefined>): Promise<A> => {
    const deadline = Date.now() + timeoutMs
    let last = ""
    for (;;) {
      if (Process.hasExited(child))
        throw fail(`the worker exited (code ${child.exitCode}, signal ${child.signalCode}) before ${what}`)
      try {
        const a = await check()
        if (a !== undefined) return a
      } catch (e) {
        last = e instanceof Error ? e.message : String(e)
        if (e instanceof ToolError) throw e
      }
      if (Date.now() > deadline)
        throw fail(`timed out after ${timeoutMs} ms waiting for ${what}${last === "" ? "" : ` (${last})`}`)
      await new Promise((r) => setTimeout(r, 250))
    }
  }

  const stop = async (): Promise<ExitInfo> => {
    try {
      if (!Process.hasExited(child)) child.kill("SIGTERM")
      const info = await Process.waitForExit(child, STOP_TIMEOUT_MS)
      if (info !== undefined) return info
      child.kill("SIGKILL")
      const forced = await Process.waitForExit(child, 10_000)
      throw new PeerStopError({
        peer: "kafka connect",
        output: output.toString(),
        message: `the Connect worker ignored SIGTERM for ${STOP_TIMEOUT_MS} ms (then ${forced ? "SIGKILLed" : "still running"})`
      })
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  }

  try {
    await until("its REST API to list connectors", READY_TIMEOUT_MS, async () => {
      const r = await rest("GET", "/connectors")
      return r.status === 200 ? true : undefined
    })
  } catch (e) {
    child.kill("SIGKILL")
    await Process.waitForExit(child, 10_000)
    rmSync(scratch, { recursive: true, force: true })
    throw e
  }

  const status = async (name: string): Promise<ConnectorStatus | undefined> => {
    const r = await rest("GET", `/connectors/${encodeURIComponent(name)}/status`)
    if (r.status === 404) return undefined
    if (r.status !== 200) throw new Error(`GET status of ${name}: ${r.status} ${JSON.stringify(r.body)}`)
    return r.body as ConnectorStatus
  }

  return {
    pid: child.pid ?? -1,
    restPort,
    url,
    propertiesFile,
    rest,
    createConnector: (name, config) =>
      until(`connector ${name} to be created`, READY_TIMEOUT_MS, async () => {
        const r = await rest("POST", "/connectors", {
          name,
          config: Object.fromEntries(Object.entries(config).map(([k, v]) => [k, String(v)]))
        })
        if (r.status === 201) return true
        const retriable =
          r.status === 409 || r.status === 503 || (r.status === 500 && JSON.stringify(r.body).includes("timed out"))
        if (retriable) throw new Error(`${r.status} ${JSON.stringify(r.body)}`)
        throw new ToolError({
          tool: "kafka connect",
          code: r.status,
          timedOut: false,
          stderr: JSON.stringify(r.body),
          message: `creating connector ${name} failed: ${r.status} ${JSON.stringify(r.body)}`
        })
      }).then(() => undefined),
    status,
    awaitRunning: (name, timeoutMs = READY_TIMEOUT_MS) =>
      until(`connector ${name} and its tasks to run`, timeoutMs, async () => {
        const s = await status(name)
        if (s === undefined) return undefined
        const failed = [s.connector, ...s.tasks].find((x) => x.state === "FAILED")
        if (failed !== undefined)
          throw new ToolError({
            tool: "kafka connect",
            code: null,
            timedOut: false,
            stderr: failed.trace ?? "",
            message: `connector ${name} failed: ${failed.trace ?? JSON.stringify(s)}`
          })
        if (s.connector.state === "RUNNING" && s.tasks.length > 0 && s.tasks.every((t) => t.state === "RUNNING"))
          return s
        throw new Error(JSON.stringify(s))
      }),
    stop,
    isAlive: () => !Process.hasExited(child),
    logs: () => output.toString()
  }
}
