/**
 * `clustermirror-mirrors`: the operator's tool for KIP-1279 cluster mirrors, with the options and
 * output of Kafka's `kafka-cluster-mirrors.sh` (create, start, stop, pause, resume, list, describe,
 * delete) plus `--recover` for partitions left FAILED once their retries ran out. Parsing and
 * formatting are pure; `run` talks to the destination cluster through `MirrorAdmin` and returns the
 * exit code (0 done, 1 the cluster refused or failed, 2 bad usage). It must not decide anything the
 * cluster decides.
 */
import { ClientError, ClusterClient, MirrorAdmin, Security } from "@clustermirror/client"
import { Either } from "effect"
import * as fs from "node:fs"
import * as AclsCommand from "./AclsCommand.js"
import * as JsonOutput from "./JsonOutput.js"

export const usage = `usage: clustermirror-mirrors --bootstrap-server <host:port> <action> [options]
actions (exactly one):
  --create   --mirror <name> --mirror-config <file>     create a mirror from a source cluster
  --start    --mirror <name> --topics <names|regexes> [--exclude <regexes>] [--dry-run]
             (--dry-run: per partition, where the start would truncate the local log, and nothing else)
  --stop     --mirror <name> --topics <names|regexes>
  --pause    --mirror <name> --topics <names|regexes>
  --resume   --mirror <name> --topics <names|regexes>
  --recover  --mirror <name> --topics <names|regexes> [--accept-data-loss]
             retry topics whose partitions stay FAILED (--accept-data-loss: partitions failed on data
             loss restart at the source log start; the records deleted on the source stay lost)
  --list     [--mirror <name>]
  --describe [--mirror <name>] [--failed] [--json]    partition states and lag (--failed: FAILED only)
  --describe --groups --mirror <name> [--json]        per consumer group, what the offset sync did
  --describe --acls --mirror <name> [--json]          what the last ACL sync did (mirror.acls.include)
  --describe --configs --mirror <name> [--json]       the mirror's configs (secrets shown as sensitive, never their value)
  --delete   --mirror <name>
  acls ...   manage ACLs (ClusterMirror ACLs too) like kafka-acls: "acls --help"
options:
  --command-config <file>   admin client properties: client.id, request.timeout.ms (how long each request
                            waits for the cluster's answer, default 30000; a request that times out is
                            sent again, at most 3 times in all), and the connection's security as Kafka's
                            clients configure it: security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*`

const ACTIONS = ["create", "start", "stop", "pause", "resume", "recover", "list", "describe", "delete"] as const
export type Action = (typeof ACTIONS)[number]
const WITH_VALUE = new Set(["bootstrap-server", "command-config", "mirror-config", "mirror", "topics", "exclude"])
const FLAGS = new Set<string>([
  ...ACTIONS,
  "json",
  "failed",
  "groups",
  "acls",
  "configs",
  "help",
  "dry-run",
  "accept-data-loss"
])

export interface Command {
  readonly action: Action
  readonly bootstrapServer: string
  readonly mirror: string | null
  readonly mirrorConfig: string | null
  readonly commandConfig: string | null
  readonly topics: ReadonlyArray<string>
  readonly exclude: ReadonlyArray<string>
  /** `--start --dry-run`: the failback preview only. */
  readonly dryRun: boolean
  readonly json: boolean
  readonly failed: boolean
  /** `--describe --groups`: the mirror's consumer group offset sync status. */
  readonly groups: boolean
  /** `--describe --acls`: the mirror's last ACL sync. */
  readonly acls: boolean
  /** `--describe --configs`: the mirror's configs. */
  readonly configs: boolean
  /** `--recover --accept-data-loss`: partitions failed on data loss restart at the source log start. */
  readonly acceptDataLoss: boolean
}

export class UsageError extends Error {}

const csv = (s: string | undefined): ReadonlyArray<string> =>
  s === undefined
    ? []
    : s
        .split(",")
        .map((x) => x.trim())
        .filter((x) => x.length > 0)

/** Parses the command line (after the program name); throws `UsageError` with what is wrong. */
export const parse = (argv: ReadonlyArray<string>): Command => {
  const values = new Map<string, string>()
  const flags = new Set<string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith("--")) throw new UsageError(`unexpected argument "${a}"`)
    const eq = a.indexOf("=")
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2)
    if (WITH_VALUE.has(name)) {
      const v = eq > 0 ? a.slice(eq + 1) : argv[++i]
      if (v === undefined || (eq < 0 && v.startsWith("--"))) throw new UsageError(`missing value for --${name}`)
      values.set(name, v)
    } else if (FLAGS.has(name) && eq < 0) flags.add(name)
    else throw new UsageError(`unknown option ${a}`)
  }
  const actions = ACTIONS.filter((a) => flags.has(a))
  if (actions.length !== 1)
    throw new UsageError(`exactly one of ${ACTIONS.map((a) => `--${a}`).join(", ")} is required`)
  const action = actions[0]!
  const bootstrapServer = values.get("bootstrap-server")
  if (bootstrapServer === undefined) throw new UsageError("--bootstrap-server is required")
  const mirror = values.get("mirror") ?? null
  if (mirror === null && action !== "list" && action !== "describe")
    throw new UsageError(`--mirror is required with --${action}`)
  const mirrorConfig = values.get("mirror-config") ?? null
  if (action === "create" && mirrorConfig === null) throw new UsageError("--mirror-config is required with --create")
  if (action !== "create" && mirrorConfig !== null) throw new UsageError("--mirror-config is only valid with --create")
  const topics = csv(values.get("topics"))
  const needsTopics =
    action === "start" || action === "stop" || action === "pause" || action === "resume" || action === "recover"
  if (needsTopics && topics.length === 0) throw new UsageError(`--topics is required with --${action}`)
  if (!needsTopics && topics.length > 0) throw new UsageError(`--topics is not valid with --${action}`)
  const exclude = csv(values.get("exclude"))
  if (action !== "start" && values.has("exclude")) throw new UsageError("--exclude is only valid with --start")
  for (const f of ["json", "failed", "groups", "acls", "configs"] as const)
    if (flags.has(f) && action !== "describe") throw new UsageError(`--${f} is only valid with --describe`)
  for (const f of ["groups", "acls", "configs"] as const)
    if (flags.has(f) && mirror === null) throw new UsageError(`--mirror is required with --${f}`)
  if (flags.has("acls") && (flags.has("failed") || flags.has("groups") || flags.has("configs")))
    throw new UsageError("--acls excludes --failed, --groups and --configs")
  if (flags.has("groups") && flags.has("failed")) throw new UsageError("--groups and --failed exclude each other")
  if (flags.has("configs") && (flags.has("failed") || flags.has("groups")))
    throw new UsageError("--configs excludes --failed and --groups")
  if (flags.has("dry-run") && action !== "start") throw new UsageError("--dry-run is only valid with --start")
  if (flags.has("accept-data-loss") && action !== "recover")
    throw new UsageError("--accept-data-loss is only valid with --recover")
  return {
    action,
    bootstrapServer,
    mirror,
    mirrorConfig,
    commandConfig: values.get("command-config") ?? null,
    topics,
    exclude,
    dryRun: flags.has("dry-run"),
    json: flags.has("json"),
    failed: flags.has("failed"),
    groups: flags.has("groups"),
    acls: flags.has("acls"),
    configs: flags.has("configs"),
    acceptDataLoss: flags.has("accept-data-loss")
  }
}

/** A Java-style properties file: `key=value` or `key: value`, `#`/`!` comments. */
export const parseProperties = (text: string): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    if (line === "" || line.startsWith("#") || line.startsWith("!")) continue
    const m = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line)
    if (m === null) out.set(line, "")
    else out.set(m[1]!, m[2]!)
  }
  return out
}

/** A `--topics` entry that can only be a topic name, not a pattern. */
export const isLiteralName = (s: string): boolean => /^[a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*$/.test(s)

/** Kafka's full-match semantics of a pattern list: one anchored alternation. */
export const matcher = (patterns: ReadonlyArray<string>): ((name: string) => boolean) => {
  if (patterns.length === 0) return () => false
  const re = new RegExp(`^(?:${patterns.join("|")})$`)
  return (name) => re.test(name)
}

const cell = (value: string, width: number): string => {
  const v = value === "" ? "-" : value
  return (v.length >= width ? `${v.slice(0, width - 4)}...` : v).padEnd(width)
}

/** The `--list` table (or "No mirrors found"). */
export const formatList = (mirrors: ReadonlyArray<MirrorAdmin.MirrorListing>): string => {
  if (mirrors.length === 0) return "No mirrors found"
  const row = (cols: ReadonlyArray<string>) =>
    [cell(cols[0]!, 30), cell(cols[1]!, 10), cell(cols[2]!, 26), cell(cols[3]!, 50)].join(" ").trimEnd()
  return [
    row(["MIRROR", "TOPICS", "SOURCE-CLUSTER-ID", "SOURCE-BOOTSTRAP-SERVER"]),
    ...mirrors.map((m) => row([m.mirrorName, String(m.topicCount), m.sourceClusterId, m.sourceBootstrap]))
  ].join("\n")
}

/** One row of `--describe`: a mirror partition. */
export interface MirrorPartition extends MirrorAdmin.PartitionDescription {
  readonly mirror: string
}

/** The broker config bounding retries of FAILED partitions. */
export const RETRY_MAX_ATTEMPTS_CONFIG = "mirror.failed.retry.max.attempts"

/** Our broker's default of `mirror.failed.retry.max.attempts`, shown when a broker does not tell. */
export const DEFAULT_RETRY_MAX_ATTEMPTS = 100

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** The partitions of described mirrors (those described without error), sorted by mirror, topic, partition. */
export const describeRows = (
  mirrors: ReadonlyArray<MirrorAdmin.MirrorDescription>,
  failedOnly: boolean
): ReadonlyArray<MirrorPartition> =>
  mirrors
    .filter((m) => m.errorCode === 0)
    .flatMap((m) => m.partitions.map((p) => ({ ...p, mirror: m.mirrorName })))
    .filter((p) => !failedOnly || p.state === "FAILED")
    .sort((a, b) => compareStrings(a.mirror, b.mirror) || compareStrings(a.topic, b.topic) || a.partition - b.partition)

/** `mirror.failed.retry.max.attempts` from a broker's configs, or our default when it is missing. */
export const retryMaxAttempts = (configs: ReadonlyMap<string, string | null>): number => {
  const value = configs.get(RETRY_MAX_ATTEMPTS_CONFIG)
  const n = value === undefined || value === null || value.trim() === "" ? Number.NaN : Number(value)
  return Number.isInteger(n) && n >= 0 ? n : DEFAULT_RETRY_MAX_ATTEMPTS
}

/** Pads a cell without cutting it ("-" when empty). */
const padded = (value: string, width: number): string => (value === "" ? "-" : value).padEnd(width)

const offset = (value: bigint): string => (value < 0n ? "-" : String(value))

/** The `--describe` table (or "No mirror partitions found"); offsets and lag of -1 show as "-". */
export const formatDescribe = (rows: ReadonlyArray<MirrorPartition>): string => {
  if (rows.length === 0) return "No mirror partitions found"
  const row = (cols: ReadonlyArray<string>) =>
    [
      cell(cols[0]!, 30),
      padded(cols[1]!, 40),
      padded(cols[2]!, 10),
      padded(cols[3]!, 15),
      padded(cols[4]!, 18),
      padded(cols[5]!, 10),
      padded(cols[6]!, 12)
    ]
      .join(" ")
      .trimEnd()
  return [
    row(["MIRROR", "TOPIC", "PARTITION", "SOURCE-OFFSET", "DESTINATION-OFFSET", "LAG", "STATE"]),
    ...rows.map((r) =>
      row([
        r.mirror,
        r.topic,
        String(r.partition),
        offset(r.sourceOffset),
        offset(r.destinationOffset),
        offset(r.lag),
        r.state
      ])
    )
  ].join("\n")
}

const ERROR_WIDTH = 80

/** A failure reason on one line, cut to 80 characters. */
const errorCell = (message: string | null): string => {
  const m = (message ?? "").replace(/\s*\r?\n\s*/g, " ").trim()
  if (m === "") return "-"
  return m.length > ERROR_WIDTH ? `${m.slice(0, ERROR_WIDTH - 3)}...` : m
}

/** The `--describe --failed` table (or "No failed partitions found"); RETRY is `<attempt>/<max>` or NonRetryable. */
export const formatFailed = (rows: ReadonlyArray<MirrorPartition>, maxAttempts: number): string => {
  if (rows.length === 0) return "No failed partitions found"
  const row = (cols: ReadonlyArray<string>) =>
    [cell(cols[0]!, 30), padded(cols[1]!, 40), padded(cols[2]!, 10), padded(cols[3]!, 15), cols[4]!].join(" ").trimEnd()
  return [
    row(["MIRROR", "TOPIC", "PARTITION", "RETRY", "ERROR"]),
    ...rows.map((r) =>
      row([
        r.mirror,
        r.topic,
        String(r.partition),
        r.retryAttempt === -1 ? "NonRetryable" : `${r.retryAttempt}/${maxAttempts}`,
        errorCell(r.errorMessage)
      ])
    )
  ].join("\n")
}

/** The `--start --dry-run` table: per partition, where a start would cut the local log. */
export const formatPreview = (mirror: string, rows: ReadonlyArray<MirrorAdmin.TruncationPreview>): string => {
  if (rows.length === 0) return "No existing topics to truncate: the start would create them."
  const header = ["MIRROR", "TOPIC", "PARTITION", "LAST-MIRROR-EPOCH", "HIGH-WATERMARK", "TRUNCATE-TO", "RECORDS-CUT"]
  const widths = [30, 40, 10, 18, 15, 15, 12]
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join(" ")
      .trimEnd()
  const sorted = [...rows].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  return [
    line(header),
    ...sorted.map((r) =>
      line([
        mirror,
        r.topic,
        String(r.partition),
        r.lastMirrorEpoch < 0 ? "-" : String(r.lastMirrorEpoch),
        String(r.highWatermark),
        String(r.truncateTo),
        String(r.recordsCut)
      ])
    )
  ].join("\n")
}

/** The `--describe --json` array (`JsonOutput.DescribeRow`: offsets as numbers, -1 kept); `[]` when empty. */
export const formatJson = (rows: ReadonlyArray<MirrorPartition>): string =>
  JsonOutput.encode(JsonOutput.DescribeRow, rows)

const time = (ms: number): string => (ms < 0 ? "-" : new Date(ms).toISOString())

/**
 * The `--describe --groups` table (or "No group sync status found"): one row per synced partition, one
 * row with "-" for a group without offsets (skipped, filtered, failed); DETAIL is the local group's state
 * or the error.
 */
export const formatGroupSync = (statuses: ReadonlyArray<MirrorAdmin.GroupSyncStatus>): string => {
  if (statuses.length === 0) return "No group sync status found"
  const widths = [30, 15, 40, 10, 15, 15, 25]
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? errorCell(c) : i === 0 ? cell(c, widths[0]!) : padded(c, widths[i]!)))
      .join(" ")
      .trimEnd()
  const rows: Array<ReadonlyArray<string>> = []
  for (const g of statuses) {
    const detail = g.detail ?? ""
    if (g.offsets.length === 0) rows.push([g.group, g.state, "-", "-", "-", "-", time(g.lastSyncedMs), detail])
    for (const o of g.offsets)
      rows.push([
        g.group,
        g.state,
        o.topic,
        String(o.partition),
        String(o.sourceOffset),
        String(o.offset),
        time(g.lastSyncedMs),
        detail
      ])
  }
  return [
    line(["GROUP", "STATE", "TOPIC", "PARTITION", "SOURCE-OFFSET", "OFFSET", "LAST-SYNC", "DETAIL"]),
    ...rows.map(line)
  ].join("\n")
}

/** The `--describe --acls` table (or "No ACL sync status found"): one row, DETAIL the error. */
export const formatAclSync = (status: MirrorAdmin.AclSyncStatus | undefined): string => {
  if (status === undefined) return "No ACL sync status found"
  const widths = [10, 8, 8, 8, 25]
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? errorCell(c) : padded(c, widths[i]!)))
      .join(" ")
      .trimEnd()
  return [
    line(["STATE", "SYNCED", "CREATED", "DELETED", "LAST-SYNC", "DETAIL"]),
    line([
      status.state,
      String(status.synced),
      String(status.created),
      String(status.deleted),
      time(status.lastSyncedMs),
      status.detail ?? ""
    ])
  ].join("\n")
}

/** The `--describe --acls --json` array (`JsonOutput.AclSyncStatus`): empty before the first sync. */
export const formatAclSyncJson = (status: MirrorAdmin.AclSyncStatus | undefined): string =>
  JsonOutput.encode(JsonOutput.AclSyncStatus, status === undefined ? [] : [status])

/** The `--describe --groups --json` array (`JsonOutput.GroupSyncStatus`: offsets as numbers). */
export const formatGroupSyncJson = (statuses: ReadonlyArray<MirrorAdmin.GroupSyncStatus>): string =>
  JsonOutput.encode(JsonOutput.GroupSyncStatus, statuses)

/** What `--start` prints: lines for stdout and stderr, and the exit code. */
export interface StartReport {
  readonly out: ReadonlyArray<string>
  readonly err: ReadonlyArray<string>
  readonly code: number
}

/**
 * The `--start` report. Topics found on the source are started; named topics the source does not have
 * are recorded in the mirror's `mirror.topics.include` and start when they appear there (KIP-1279); an
 * unreachable source is said with its reason (exit 1, the names are still recorded). Patterns that
 * matched nothing on the source are saved for auto-discovery. Per-topic refusals go to stderr (exit 1).
 */
export const formatStart = (
  mirror: string,
  patterns: ReadonlyArray<string>,
  results: ReadonlyArray<MirrorAdmin.StartTopicResult>
): StartReport => {
  const ok = results.filter((r) => r.error === null)
  const started = ok.filter((r) => r.source === "present").map((r) => r.name)
  const absent = ok.filter((r) => r.source === "absent").map((r) => r.name)
  const unknown = ok.filter((r) => r.source === "unreachable")
  const list = (topics: ReadonlyArray<string>) => `[${topics.join(", ")}]`
  const out: Array<string> = []
  const err: Array<string> = []
  if (started.length > 0 || (absent.length === 0 && unknown.length === 0 && patterns.length === 0))
    out.push(`Started ${started.length} mirror topic(s) in mirror ${mirror}: ${list(started)}`)
  if (absent.length > 0)
    out.push(
      `Topic(s) ${list(absent)} do not exist on the source yet: recorded in mirror ${mirror}'s mirror.topics.include; ` +
        "mirroring starts when they appear on the source."
    )
  if (unknown.length > 0)
    err.push(
      `Could not look up ${list(unknown.map((r) => r.name))} on the source (${unknown[0]!.sourceError?.message ?? "source unreachable"}): ` +
        `recorded in mirror ${mirror}'s mirror.topics.include; mirroring starts once the source is reachable and has them.`
    )
  if (patterns.length > 0 && results.length === 0)
    out.push(`No matching topics found yet. Patterns saved to mirror ${mirror} for auto-discovery.`)
  else if (patterns.length > 0)
    out.push(`Patterns ${list(patterns)} saved to mirror ${mirror}: topics that match later are started automatically.`)
  for (const r of results)
    if (r.error !== null) err.push(`Failed to start mirroring topic ${r.name}: ${describeError(r.error)}`)
  return { out, err, code: unknown.length > 0 || results.some((r) => r.error !== null) ? 1 : 0 }
}

/** "NAME: message" of a failure, for stderr. */
export const describeError = (e: unknown): string => {
  if (e instanceof ClientError.KafkaError) return `${e.errorName}: ${e.errorMessage ?? e.context}`
  if (e instanceof ClientError.SourceUnreachable) return e.message
  if (ClientError.isClientError(e)) return `${e._tag}: ${e.message}`
  return e instanceof Error ? e.message : String(e)
}

export interface Io {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

/** The settings of a `--command-config` file for the command's client. */
export interface AdminConfig {
  readonly clientId?: string
  readonly requestTimeoutMs?: number
  /** The connection's TLS and SASL; absent for PLAINTEXT. */
  readonly security?: Security.ClientSecurity
  /** `security.protocol` as given (PLAINTEXT when unset). */
  readonly protocol: Security.SecurityProtocol
}

/**
 * The admin client settings of a `--command-config` file (`file` names it in errors): `client.id`,
 * `request.timeout.ms` (a positive number of milliseconds), and Kafka's client security configs
 * (`security.protocol`, `sasl.*`, `ssl.*`, read by `Security.fromConfig`, files included). Other keys
 * and bad values are refused, naming the key and never a secret.
 */
export const adminConfig = (props: ReadonlyMap<string, string>, file: string): AdminConfig => {
  let config: { clientId?: string; requestTimeoutMs?: number } = {}
  const security = new Map<string, string>()
  for (const [k, v] of props) {
    if (k === "client.id") config = { ...config, clientId: v }
    else if (k === "request.timeout.ms") {
      const ms = /^\d+$/.test(v.trim()) ? Number(v.trim()) : Number.NaN
      if (!Number.isSafeInteger(ms) || ms <= 0)
        throw new UsageError(`invalid request.timeout.ms in ${file}: "${v}" (a positive number of milliseconds)`)
      config = { ...config, requestTimeoutMs: ms }
    } else if (Security.isSecurityConfig(k)) security.set(k, v)
    else throw new UsageError(`unsupported admin client property in ${file}: ${k}`)
  }
  const parsed = Security.fromConfig(security)
  if (Either.isLeft(parsed)) throw new UsageError(`invalid ${parsed.left.key} in ${file}: ${parsed.left.reason}`)
  const protocol = Either.getOrElse(Security.protocolOf(security), () => "PLAINTEXT" as const)
  const secured = parsed.right.tls === undefined && parsed.right.sasl === undefined ? {} : { security: parsed.right }
  return { ...config, ...secured, protocol }
}

const commandConfig = (file: string | null): AdminConfig =>
  file === null ? { protocol: "PLAINTEXT" } : adminConfig(parseProperties(fs.readFileSync(file, "utf8")), file)

/**
 * The `--describe --configs` text, in the form of Kafka's `kafka-configs --describe`: one line per key,
 * a secret as `key=null sensitive=true` (the cluster never returns its value).
 */
export const formatConfigs = (mirror: string, entries: ReadonlyArray<MirrorAdmin.MirrorConfigEntry>): string =>
  [
    `Dynamic configs for cluster mirror ${mirror} are:`,
    ...[...entries]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((e) => `  ${e.name}=${e.isSensitive ? "null" : (e.value ?? "null")} sensitive=${e.isSensitive}`)
  ].join("\n")

/** The `--describe --configs --json` array (`JsonOutput.ConfigEntry`): a secret's value is null. */
export const formatConfigsJson = (entries: ReadonlyArray<MirrorAdmin.MirrorConfigEntry>): string =>
  JsonOutput.encode(
    JsonOutput.ConfigEntry,
    [...entries]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((e) => ({ name: e.name, value: e.isSensitive ? null : e.value, sensitive: e.isSensitive }))
  )

/** Runs a parsed command against the destination cluster; resolves with the exit code. */
export const run = async (command: Command, io: Io): Promise<number> => {
  let settings: AdminConfig
  try {
    settings = commandConfig(command.commandConfig)
  } catch (e) {
    io.err(e instanceof UsageError ? e.message : `Error: ${describeError(e)}`)
    return e instanceof UsageError ? 2 : 1
  }
  const client = new ClusterClient.Client({
    bootstrapServers: csv(command.bootstrapServer),
    clientId: "clustermirror-mirrors",
    retry: { attempts: 3, baseMs: 100, maxMs: 1000, jitter: 0.2 },
    ...(settings.clientId === undefined ? {} : { clientId: settings.clientId }),
    ...(settings.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: settings.requestTimeoutMs }),
    ...(settings.security === undefined ? {} : { security: settings.security })
  })
  const admin = new MirrorAdmin.MirrorAdmin(client)
  const mirror = command.mirror ?? ""
  /** Reports per-topic failures; 0 when there were none. */
  const topicFailures = (verb: string, results: ReadonlyArray<MirrorAdmin.TopicResult>): number => {
    const failed = results.filter((r) => r.error !== null)
    for (const r of failed) io.err(`Failed to ${verb} topic ${r.name}: ${describeError(r.error)}`)
    return failed.length === 0 ? 0 : 1
  }
  const names = (topics: ReadonlyArray<string>) => `[${topics.join(", ")}]`
  /** Topics of the mirror on the destination that `--topics` selects (names as given, patterns matched). */
  const destinationTopics = async (): Promise<{ names: ReadonlyArray<string>; patterns: ReadonlyArray<string> }> => {
    const literal = command.topics.filter(isLiteralName)
    const patterns = command.topics.filter((t) => !isLiteralName(t))
    if (patterns.length === 0) return { names: literal, patterns }
    const matches = matcher(patterns)
    const listing = (await admin.listClusterMirrors(true)).find((m) => m.mirrorName === mirror)
    const matched = (listing?.topicNames ?? []).filter(matches)
    return { names: [...new Set([...literal, ...matched])], patterns }
  }
  try {
    switch (command.action) {
      case "create": {
        const configs = parseProperties(fs.readFileSync(command.mirrorConfig!, "utf8"))
        await admin.createClusterMirror(mirror, configs)
        io.out(`Created mirror ${mirror}.`)
        return 0
      }
      case "start": {
        const literal = command.topics.filter(isLiteralName)
        const patterns = command.topics.filter((t) => !isLiteralName(t))
        const excluded = matcher(command.exclude)
        let topics = literal.filter((t) => !excluded(t))
        if (patterns.length > 0) {
          // Patterns select topics on the source; internal topics are never mirrored this way.
          const matches = matcher(patterns)
          const source = await admin.sourceTopics(mirror, null)
          const found = source.filter((t) => !t.isInternal && matches(t.name) && !excluded(t.name)).map((t) => t.name)
          topics = [...new Set([...topics, ...found])]
        }
        if (command.dryRun) {
          // Topics that exist here are the ones a start would truncate; the others would be created.
          const local = await admin.client.metadata(topics)
          const existing = topics.filter((t) => local.topics.get(t)?.errorCode === 0)
          io.out(formatPreview(mirror, await admin.previewTruncation(mirror, existing)))
          return 0
        }
        const results = await admin.startMirrorTopics(mirror, topics, { include: patterns, exclude: command.exclude })
        const report = formatStart(mirror, patterns, results)
        for (const line of report.out) io.out(line)
        for (const line of report.err) io.err(line)
        return report.code
      }
      case "stop": {
        const { names: topics, patterns } = await destinationTopics()
        const results = await admin.stopMirrorTopics(mirror, topics, patterns)
        const failed = new Set(results.filter((r) => r.error !== null).map((r) => r.name))
        io.out(`Stopped mirroring for topics ${names(topics.filter((t) => !failed.has(t)))} in mirror ${mirror}.`)
        return topicFailures("stop mirroring", results)
      }
      case "pause":
      case "resume": {
        const { names: topics } = await destinationTopics()
        const results =
          command.action === "pause"
            ? await admin.pauseMirrorTopics(mirror, topics)
            : await admin.resumeMirrorTopics(mirror, topics)
        const failed = new Set(results.filter((r) => r.error !== null).map((r) => r.name))
        const done = topics.filter((t) => !failed.has(t))
        const verb = command.action === "pause" ? "Paused" : "Resumed"
        io.out(`${verb} mirroring for ${done.length} topic(s) in mirror ${mirror}: ${names(done)}`)
        return topicFailures(`${command.action} mirroring`, results)
      }
      case "recover": {
        const { names: topics } = await destinationTopics()
        const results = await admin.recoverMirrorTopics(mirror, topics, { acceptDataLoss: command.acceptDataLoss })
        const failed = new Set(results.filter((r) => r.error !== null).map((r) => r.name))
        const done = topics.filter((t) => !failed.has(t))
        if (done.length > 0 || failed.size === 0)
          io.out(`Recovered mirroring for ${done.length} topic(s) in mirror ${mirror}: ${names(done)}`)
        return topicFailures("recover mirroring", results)
      }
      case "describe": {
        if (command.configs) {
          const entries = await admin.mirrorConfigEntries(mirror)
          io.out(command.json ? formatConfigsJson(entries) : formatConfigs(mirror, entries))
          return 0
        }
        if (command.acls) {
          const status = await admin.describeAclSync(mirror)
          io.out(command.json ? formatAclSyncJson(status) : formatAclSync(status))
          return 0
        }
        if (command.groups) {
          const statuses = await admin.describeGroupSync(mirror)
          io.out(command.json ? formatGroupSyncJson(statuses) : formatGroupSync(statuses))
          return 0
        }
        const { mirrors } = await admin.describeMirrorPartitions(command.mirror === null ? [] : [command.mirror])
        const refused = mirrors.filter((m) => m.errorCode !== 0)
        for (const m of refused) {
          const e = new ClientError.KafkaError({ errorCode: m.errorCode, errorMessage: null, context: "" })
          io.err(`Failed to describe mirror ${m.mirrorName}: ${e.errorName}`)
        }
        const rows = describeRows(mirrors, command.failed)
        if (command.json) io.out(formatJson(rows))
        else if (!command.failed) io.out(formatDescribe(rows))
        else {
          // The retry bound only labels the RETRY column: a broker that cannot tell gets our default.
          const maxAttempts =
            rows.length === 0
              ? DEFAULT_RETRY_MAX_ATTEMPTS
              : await admin
                  .describeBrokerConfigs([RETRY_MAX_ATTEMPTS_CONFIG])
                  .then(retryMaxAttempts, () => DEFAULT_RETRY_MAX_ATTEMPTS)
          io.out(formatFailed(rows, maxAttempts))
        }
        return refused.length === 0 ? 0 : 1
      }
      case "list": {
        const all = await admin.listClusterMirrors(false)
        io.out(formatList(command.mirror === null ? all : all.filter((m) => m.mirrorName === command.mirror)))
        return 0
      }
      case "delete": {
        await admin.deleteClusterMirror(mirror)
        io.out(`Deleted mirror ${mirror}.`)
        return 0
      }
    }
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(e.message)
      return 2
    }
    // A failure to reach the cluster (or to authenticate) says how the command connected (never with what secret).
    const reaching =
      settings.protocol !== "PLAINTEXT" &&
      ClientError.isClientError(e) &&
      (e._tag === "ConnectionError" ||
        e._tag === "NoBrokerAvailable" ||
        (e._tag === "KafkaError" && /^Sasl(Handshake|Authenticate)/.test(e.context)))
    io.err(`Error: ${describeError(e)}${reaching ? ` (connecting with security.protocol ${settings.protocol})` : ""}`)
    return 1
  } finally {
    await client.close()
  }
}

/**
 * The whole command: usage on no arguments or `--help`, parsing, then `run`. Both entrypoints use it:
 * `clustermirror-mirrors ...` and `clustermirror mirrors ...`; `acls ...` runs the ACL command
 * (`clustermirror acls ...`).
 */
export const main = async (argv: ReadonlyArray<string>, io: Io): Promise<number> => {
  if (argv[0] === "acls") return AclsCommand.main(argv.slice(1), io, commandConfig)
  if (argv.length === 0 || argv.includes("--help")) {
    io.out(usage)
    return argv.length === 0 ? 2 : 0
  }
  let command: Command
  try {
    command = parse(argv)
  } catch (e) {
    io.err(`${e instanceof Error ? e.message : String(e)}\n${usage}`)
    return 2
  }
  return run(command, io)
}
