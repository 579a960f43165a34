/**
 * Apache Kafka's MirrorMaker 2 as a peer: the dedicated MirrorMaker process
 * (`org.apache.kafka.connect.mirror.MirrorMaker`, from Maven Central's `connect-mirror` jars) copying
 * topics from one Kafka-protocol cluster to another, configured for a plain copy (identity topic names,
 * no heartbeats, checkpoints, offset syncs or config and ACL syncs).
 *
 * It owns the JVM and the temp dir it creates and removes them on `stop()`. It has no listener to probe:
 * callers watch the target cluster to see the copy progress. It never talks to the clusters itself.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as KafkaPeer from "./KafkaPeer.js"
import * as Process from "./internal/Process.js"
import * as Properties from "./Properties.js"
import { PeerStartError, PeerStopError } from "./TestkitError.js"

export type ExitInfo = Process.ExitInfo

export const MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"

/** Keeps topic names unchanged on the target (no `<alias>.` prefix). */
export const IDENTITY_REPLICATION_POLICY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"

const STOP_TIMEOUT_MS = 30_000
const OUTPUT_TAIL_CHARS = 64 * 1024
/** A JVM that exits this soon after the spawn did not start. */
const EARLY_EXIT_MS = 2_000

export interface MirrorMakerOptions {
  /** `bootstrap.servers` of the cluster copied from. */
  readonly source: string
  /** `bootstrap.servers` of the cluster copied to. */
  readonly target: string
  /** Topics to copy: a comma-separated list of names or regular expressions (`<source>-><target>.topics`). */
  readonly topics: string
  /** Cluster aliases in the configuration (default `source` and `target`). */
  readonly sourceAlias?: string
  readonly targetAlias?: string
  /** `tasks.max` of the source connector (default 2). */
  readonly tasksMax?: number
  /** Settings of the producers writing to the target (`<target>.producer.*`), e.g. compression. */
  readonly targetProducer?: Properties.Properties
  /** Settings of the consumers reading from the source (`<source>.consumer.*`). */
  readonly sourceConsumer?: Properties.Properties
  /** Further `mm2.properties` entries, over every generated one. */
  readonly properties?: Properties.Properties
  /** MirrorMaker version (default `KafkaPeer.connectMirrorVersion()`). */
  readonly version?: string
  /** A ready libs folder instead of resolving `version`. */
  readonly libs?: string
  /** Maximum heap (default `1g`). */
  readonly heap?: string
  /** Extra JVM flags. */
  readonly jvmFlags?: ReadonlyArray<string>
}

/** One running MirrorMaker JVM. */
export interface MirrorMakerProcess {
  readonly pid: number
  readonly propertiesFile: string
  /** SIGTERM, wait (SIGKILL after 30 s), then remove the temp dir. */
  stop(): Promise<ExitInfo>
  isAlive(): boolean
  /** The recent stdout+stderr of the JVM (WARN and above, see `KafkaPeer.log4jConfig`). */
  logs(): string
}

const prefixed = (prefix: string, props: Properties.Properties | undefined): Properties.Properties =>
  Object.fromEntries(Object.entries(props ?? {}).map(([k, v]) => [`${prefix}.${k}`, v]))

/**
 * The `mm2.properties` of a one-way copy from `source` to `target`: the reverse flow, heartbeats,
 * checkpoints, offset syncs, group offset syncs, topic config and ACL syncs are off, and every internal
 * topic has replication factor 1; `properties` entries win over all of them. MirrorMaker still tries to
 * configure its checkpoint connector and logs (at ERROR) that it cannot run without offset syncs; the
 * copy is not affected. Any `offset-syncs.*` setting would make the source connector refuse to start.
 */
export const mm2Properties = (o: MirrorMakerOptions): Properties.Properties => {
  const a = o.sourceAlias ?? "source"
  const b = o.targetAlias ?? "target"
  return Properties.merge(
    {
      clusters: `${a},${b}`,
      [`${a}.bootstrap.servers`]: o.source,
      [`${b}.bootstrap.servers`]: o.target,
      [`${a}->${b}.enabled`]: true,
      [`${a}->${b}.topics`]: o.topics,
      [`${b}->${a}.enabled`]: false,
      "tasks.max": o.tasksMax ?? 2,
      "replication.policy.class": IDENTITY_REPLICATION_POLICY,
      "replication.factor": 1,
      "emit.heartbeats.enabled": false,
      "emit.checkpoints.enabled": false,
      "emit.offset-syncs.enabled": false,
      "sync.group.offsets.enabled": false,
      "refresh.groups.enabled": false,
      "sync.topic.configs.enabled": false,
      "sync.topic.acls.enabled": false,
      "heartbeats.topic.replication.factor": 1,
      "offset.storage.replication.factor": 1,
      "status.storage.replication.factor": 1,
      "config.storage.replication.factor": 1
    },
    prefixed(`${b}.producer`, o.targetProducer),
    prefixed(`${a}.consumer`, o.sourceConsumer),
    o.properties
  )
}

/** The JVM's command line (after `java`). */
export const commandLine = (libs: string, propertiesFile: string, o: Pick<MirrorMakerOptions, "heap" | "jvmFlags">) => [
  `-Xmx${o.heap ?? "1g"}`,
  `-Xms${o.heap ?? "1g"}`,
  "-XX:+UseG1GC",
  "-XX:MaxGCPauseMillis=20",
  "-XX:InitiatingHeapOccupancyPercent=35",
  "-Djava.awt.headless=true",
  `-Dlog4j2.configurationFile=${KafkaPeer.log4jConfig}`,
  ...(o.jvmFlags ?? []),
  "-cp",
  KafkaPeer.classpath(libs),
  MAIN_CLASS,
  propertiesFile
]

/**
 * Starts MirrorMaker with `mm2Properties(o)`. Resolves once the JVM runs (it fails if the JVM exits
 * within two seconds); the copy itself starts after MirrorMaker has created its internal topics and
 * tasks, which the caller observes on the target.
 */
export const start = async (o: MirrorMakerOptions): Promise<MirrorMakerProcess> => {
  const libs = o.libs ?? (await KafkaPeer.connectMirrorLibs(o.version))
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-mm2-"))
  Process.trackDir(scratch)
  const propertiesFile = join(scratch, "mm2.properties")
  writeFileSync(propertiesFile, Properties.render(mm2Properties(o)))
  const output = new Process.OutputTail(OUTPUT_TAIL_CHARS)
  const child: ChildProcess = spawn("java", commandLine(libs, propertiesFile, o), {
    stdio: ["ignore", "pipe", "pipe"]
  })
  Process.track(child)
  output.attach(child)
  let spawnError: Error | undefined
  child.once("error", (e) => (spawnError = e))
  const early = await Process.waitForExit(child, EARLY_EXIT_MS)
  if (early !== undefined || spawnError !== undefined) {
    rmSync(scratch, { recursive: true, force: true })
    throw new PeerStartError({
      peer: "mirror maker",
      output: output.toString(),
      message: `MirrorMaker ${spawnError !== undefined ? `failed to spawn: ${spawnError.message}` : `exited (code ${early?.code}, signal ${early?.signal})`}; output:\n${output.toString()}`
    })
  }
  return {
    pid: child.pid ?? -1,
    propertiesFile,
    stop: async () => {
      try {
        if (!Process.hasExited(child)) child.kill("SIGTERM")
        const info = await Process.waitForExit(child, STOP_TIMEOUT_MS)
        if (info !== undefined) return info
        child.kill("SIGKILL")
        const forced = await Process.waitForExit(child, STOP_TIMEOUT_MS)
        throw new PeerStopError({
          peer: "mirror maker",
          output: output.toString(),
          message: `MirrorMaker ignored SIGTERM for ${STOP_TIMEOUT_MS} ms (then ${forced ? "SIGKILLed" : "still running"})`
        })
      } finally {
        rmSync(scratch, { recursive: true, force: true })
      }
    },
    isAlive: () => !Process.hasExited(child),
    logs: () => output.toString()
  }
}
