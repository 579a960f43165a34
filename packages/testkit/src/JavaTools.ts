/**
 * Apache Kafka's own command-line tools, run as `java -cp '<libs>/*' <main class> ...` against any
 * cluster (Apache Kafka or ours): kafka-topics, kafka-acls, the console producer and consumer, consumer-groups,
 * kafka-configs, kafka-leader-election, kafka-transactions, kafka-delete-records, kafka-metadata-quorum,
 * kafka-reassign-partitions, kafka-log-dirs, kafka-features and the producer/consumer performance tools.
 *
 * Arguments are passed through unchanged (including `--bootstrap-server`), so a test says exactly what an
 * operator would type. A failing exit is a result, not an exception; `expectSuccess` turns it into one.
 */
import * as KafkaPeer from "./KafkaPeer.js"
import * as Process from "./internal/Process.js"
import { ToolError } from "./TestkitError.js"

/** Main classes of the Kafka 4.x tools (the `bin/kafka-*.sh` scripts run these). */
export const MainClass = {
  topics: "org.apache.kafka.tools.TopicCommand",
  consoleProducer: "org.apache.kafka.tools.ConsoleProducer",
  consoleConsumer: "org.apache.kafka.tools.consumer.ConsoleConsumer",
  consumerGroups: "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
  // Moved from the Scala `kafka.admin` package into kafka-tools in 4.x.
  configs: "org.apache.kafka.tools.ConfigCommand",
  producerPerf: "org.apache.kafka.tools.ProducerPerformance",
  consumerPerf: "org.apache.kafka.tools.ConsumerPerformance",
  leaderElection: "org.apache.kafka.tools.LeaderElectionCommand",
  deleteRecords: "org.apache.kafka.tools.DeleteRecordsCommand",
  reassignPartitions: "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
  acls: "org.apache.kafka.tools.AclCommand",
  transactions: "org.apache.kafka.tools.TransactionsCommand",
  metadataQuorum: "org.apache.kafka.tools.MetadataQuorumCommand",
  logDirs: "org.apache.kafka.tools.LogDirsCommand",
  features: "org.apache.kafka.tools.FeatureCommand",
  storage: "kafka.tools.StorageTool"
} as const

/** JVM flags for short-lived tools: start fast rather than run fast. */
export const TOOL_JVM_FLAGS: ReadonlyArray<string> = [
  "-Xshare:auto",
  "-XX:TieredStopAtLevel=1",
  "-XX:+UseSerialGC",
  "-Xmx256m",
  "-Djava.awt.headless=true"
]

const DEFAULT_TIMEOUT_MS = 120_000

export interface ToolOptions {
  /** Written to the tool's stdin, which is then closed. */
  readonly input?: string | Buffer
  /** The tool is SIGKILLed after this long (default 120 s); the result then has `timedOut: true`. */
  readonly timeoutMs?: number
  /** A libs folder to use instead of resolving `version`. */
  readonly libs?: string
  /** Kafka version whose jars to use (default `KafkaPeer.version()`). */
  readonly version?: string
  /** JVM flags replacing `TOOL_JVM_FLAGS` (e.g. a larger heap for the performance tools). */
  readonly jvmFlags?: ReadonlyArray<string>
}

export type ToolResult = Process.RunResult

/** Runs `mainClass` from Kafka's jars with `args`. Rejects only if `java` cannot be spawned. */
export const run = async (
  mainClass: string,
  args: ReadonlyArray<string>,
  opts: ToolOptions = {}
): Promise<ToolResult> => {
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  return Process.run(
    "java",
    [
      ...(opts.jvmFlags ?? TOOL_JVM_FLAGS),
      `-Dlog4j2.configurationFile=${KafkaPeer.log4jConfig}`,
      "-cp",
      KafkaPeer.classpath(libs),
      mainClass,
      ...args
    ],
    {
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      ...(opts.input === undefined ? {} : { input: opts.input })
    }
  )
}

/** `kafka-transactions.sh`: e.g. `["--bootstrap-server", b, "list"]` or `[..., "describe", "--transactional-id", id]`. */
export const transactions = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.transactions, args, opts)

/** `kafka-acls.sh`: e.g. `["--bootstrap-server", b, "--add", "--allow-principal", "User:x", "--operation", "Read", "--topic", t]`. */
export const acls = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.acls, args, opts)

/** `kafka-topics.sh`: e.g. `["--bootstrap-server", b, "--create", "--topic", t, "--partitions", "3"]`. */
export const kafkaTopics = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.topics, args, opts)

/** `kafka-console-producer.sh`: one record per line of `input`. */
export const consoleProducer = (
  args: ReadonlyArray<string>,
  input: string | Buffer,
  opts: ToolOptions = {}
): Promise<ToolResult> => run(MainClass.consoleProducer, args, { ...opts, input })

/** `kafka-console-consumer.sh`: bound it with `--max-messages` or `--timeout-ms`, or it runs until the timeout. */
export const consoleConsumer = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.consoleConsumer, args, opts)

/** `kafka-consumer-groups.sh`. */
export const consumerGroups = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.consumerGroups, args, opts)

/** `kafka-configs.sh`. */
export const configs = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.configs, args, opts)

/** `kafka-producer-perf-test.sh`. */
export const producerPerf = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.producerPerf, args, opts)

/** `kafka-consumer-perf-test.sh`. */
export const consumerPerf = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.consumerPerf, args, opts)

/** `kafka-leader-election.sh`: e.g. `["--bootstrap-server", b, "--election-type", "PREFERRED", "--all-topic-partitions"]`. */
export const leaderElection = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.leaderElection, args, opts)

/**
 * `kafka-delete-records.sh`: `["--bootstrap-server", b, "--offset-json-file", file]`, the file
 * `{"partitions":[{"topic":t,"partition":0,"offset":n}],"version":1}` (offset -1: the high watermark).
 */
export const deleteRecords = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.deleteRecords, args, opts)

/** `kafka-metadata-quorum.sh`: e.g. `["--bootstrap-controller", c, "describe", "--status"]` (or `--replication`). */
export const metadataQuorum = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.metadataQuorum, args, opts)
/**
 * `kafka-reassign-partitions.sh`: `--generate --topics-to-move-json-file f --broker-list 1,2,3`, then
 * `--execute` and `--verify` with `--reassignment-json-file f`.
 */
export const reassignPartitions = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.reassignPartitions, args, opts)

/** `kafka-log-dirs.sh`: e.g. `["--bootstrap-server", b, "--describe", "--topic-list", t]` (prints one JSON line). */
export const logDirs = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.logDirs, args, opts)

/** `kafka-features.sh`: e.g. `["--bootstrap-server", b, "describe"]` or `[..., "upgrade", "--feature", "f=1"]`. */
export const features = (args: ReadonlyArray<string>, opts?: ToolOptions): Promise<ToolResult> =>
  run(MainClass.features, args, opts)

/** Returns `result` if the tool exited with 0, else throws a `ToolError` quoting its stderr. */
export const expectSuccess = (tool: string, result: ToolResult): ToolResult => {
  if (result.code === 0) return result
  throw new ToolError({
    tool,
    code: result.code,
    timedOut: result.timedOut,
    stderr: result.stderr,
    message: `${tool} ${result.timedOut ? "timed out" : `exited with ${result.code ?? result.signal}`}:\n${result.stderr.slice(-4_000)}`
  })
}

/** The non-empty lines of a tool's stdout (console consumer records, topic listings). */
export const lines = (stdout: string): ReadonlyArray<string> => stdout.split("\n").filter((l) => l !== "")
