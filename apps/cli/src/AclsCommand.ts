/**
 * `clustermirror acls`: ACL management with the options and output of Kafka's `kafka-acls.sh`
 * (`--add`, `--remove`, `--list`; `--allow-principal`, `--deny-principal`, `--allow-host`, `--deny-host`,
 * `--operation`, `--topic`, `--group`, `--cluster`, `--transactional-id`, `--resource-pattern-type`,
 * `--principal`), plus KIP-1279's `--cluster-mirror <name|*>`. Parsing and formatting are pure; `run`
 * sends CreateAcls, DeleteAcls and DescribeAcls to the cluster, which validates and decides.
 */
import { Acl } from "@clustermirror/authorizer"
import { ClientError, ClusterClient } from "@clustermirror/client"
import { CreateAcls, DeleteAcls, DescribeAcls, Errors } from "@clustermirror/protocol"

export const usage = `usage: clustermirror acls --bootstrap-server <host:port> (--add | --remove | --list) [options]
resources (any number; none with --list lists every ACL):
  --topic <name>  --group <name>  --cluster  --transactional-id <id>  --cluster-mirror <name|*>
  --resource-pattern-type literal|prefixed (with --list and --remove also match|any; default literal)
entries:
  --allow-principal <Type:name>  --deny-principal <Type:name>  (--add needs at least one)
  --allow-host <host>  --deny-host <host>                        (default *)
  --operation <op>   Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
                     AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All (default All)
  --principal <Type:name>   (--list) only the ACLs of this principal
  --force                   (--remove) accepted: nothing is asked
  --command-config <file>   admin client properties (as for the mirrors command)`

export class UsageError extends Error {}

const ACTIONS = ["add", "remove", "list"] as const
type Action = (typeof ACTIONS)[number]
const REPEATED = new Set([
  "topic",
  "group",
  "transactional-id",
  "cluster-mirror",
  "allow-principal",
  "deny-principal",
  "allow-host",
  "deny-host",
  "operation",
  "principal"
])
const SINGLE = new Set(["bootstrap-server", "command-config", "resource-pattern-type"])
const FLAGS = new Set<string>([...ACTIONS, "cluster", "force", "help"])

export interface Resource {
  readonly resourceType: number
  readonly name: string
}

export interface AclsCommand {
  readonly action: Action
  readonly bootstrapServer: string
  readonly commandConfig: string | null
  readonly resources: ReadonlyArray<Resource>
  readonly patternType: number
  /** [principal, permission type] pairs from --allow-principal / --deny-principal. */
  readonly principals: ReadonlyArray<readonly [string, number]>
  readonly allowHosts: ReadonlyArray<string>
  readonly denyHosts: ReadonlyArray<string>
  /** Operation codes; empty means none given. */
  readonly operations: ReadonlyArray<number>
  /** --list --principal filters. */
  readonly listPrincipals: ReadonlyArray<string>
}

/** Kafka's CamelCase operation names (`ClusterAction`) and Kafka's upper-case ones (`CLUSTER_ACTION`). */
export const parseOperation = (name: string): number => {
  const snake = name.replace(/([a-z])([A-Z])/g, "$1_$2")
  const code = Acl.parseOperation(snake)
  if (code === undefined || code === Acl.AclOperation.ANY || code === Acl.AclOperation.UNKNOWN)
    throw new UsageError(`unknown operation ${name}`)
  return code
}

/** Parses the command line after `acls`; throws `UsageError` with what is wrong. */
export const parse = (argv: ReadonlyArray<string>): AclsCommand => {
  const values = new Map<string, Array<string>>()
  const flags = new Set<string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith("--")) throw new UsageError(`unexpected argument "${a}"`)
    const eq = a.indexOf("=")
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2)
    if (REPEATED.has(name) || SINGLE.has(name)) {
      const v = eq > 0 ? a.slice(eq + 1) : argv[++i]
      if (v === undefined || (eq < 0 && v.startsWith("--"))) throw new UsageError(`missing value for --${name}`)
      if (SINGLE.has(name) && values.has(name)) throw new UsageError(`--${name} given twice`)
      values.set(name, [...(values.get(name) ?? []), v])
    } else if (FLAGS.has(name) && eq < 0) flags.add(name)
    else throw new UsageError(`unknown option ${a}`)
  }
  const actions = ACTIONS.filter((a) => flags.has(a))
  if (actions.length !== 1) throw new UsageError("exactly one of --add, --remove, --list is required")
  const action = actions[0]!
  const bootstrapServer = values.get("bootstrap-server")?.[0]
  if (bootstrapServer === undefined) throw new UsageError("--bootstrap-server is required")
  const all = (k: string) => values.get(k) ?? []
  const resources: Array<Resource> = [
    ...all("topic").map((name) => ({ resourceType: Acl.ResourceType.TOPIC, name })),
    ...all("group").map((name) => ({ resourceType: Acl.ResourceType.GROUP, name })),
    ...all("transactional-id").map((name) => ({ resourceType: Acl.ResourceType.TRANSACTIONAL_ID, name })),
    ...all("cluster-mirror").map((name) => ({ resourceType: Acl.ResourceType.CLUSTER_MIRROR, name })),
    ...(flags.has("cluster") ? [{ resourceType: Acl.ResourceType.CLUSTER, name: Acl.CLUSTER_NAME }] : [])
  ]
  const patternName = values.get("resource-pattern-type")?.[0] ?? "literal"
  const patternType = Acl.parsePatternType(patternName)
  if (patternType === undefined || patternType === Acl.PatternType.UNKNOWN)
    throw new UsageError(`unknown resource pattern type ${patternName}`)
  if (action === "add" && patternType !== Acl.PatternType.LITERAL && patternType !== Acl.PatternType.PREFIXED)
    throw new UsageError("--add takes --resource-pattern-type literal or prefixed")
  const principals: Array<readonly [string, number]> = [
    ...all("allow-principal").map((p) => [p, Acl.AclPermissionType.ALLOW] as const),
    ...all("deny-principal").map((p) => [p, Acl.AclPermissionType.DENY] as const)
  ]
  for (const [p] of principals)
    if (p.indexOf(":") <= 0) throw new UsageError(`principal ${p} is not of the form Type:name (e.g. User:alice)`)
  if (action === "add" && resources.length === 0) throw new UsageError("--add needs at least one resource")
  if (action === "add" && principals.length === 0)
    throw new UsageError("--add needs --allow-principal or --deny-principal")
  if (action === "remove" && resources.length === 0) throw new UsageError("--remove needs at least one resource")
  if (action !== "list" && all("principal").length > 0) throw new UsageError("--principal is only valid with --list")
  if (action === "list" && principals.length > 0)
    throw new UsageError("--allow-principal and --deny-principal are not valid with --list (use --principal)")
  const operations = all("operation").map(parseOperation)
  for (const r of resources)
    if (r.resourceType === Acl.ResourceType.CLUSTER_MIRROR)
      for (const op of operations)
        if (!Acl.CLUSTER_MIRROR_OPERATIONS.has(op))
          throw new UsageError(
            `operation ${Acl.operationName(op)} is not valid for --cluster-mirror (Create, Alter, Describe, Delete, AlterConfigs, DescribeConfigs, All)`
          )
  return {
    action,
    bootstrapServer,
    commandConfig: values.get("command-config")?.[0] ?? null,
    resources,
    patternType,
    principals,
    allowHosts: all("allow-host"),
    denyHosts: all("deny-host"),
    operations,
    listPrincipals: all("principal")
  }
}

/** The bindings `--add` creates: every resource × principal × host × operation. */
export const bindingsToAdd = (c: AclsCommand): ReadonlyArray<Acl.AclBinding> => {
  const operations = c.operations.length === 0 ? [Acl.AclOperation.ALL] : c.operations
  return c.resources.flatMap((r) =>
    c.principals.flatMap(([principal, permissionType]) => {
      const given = permissionType === Acl.AclPermissionType.ALLOW ? c.allowHosts : c.denyHosts
      const hosts = given.length === 0 ? [Acl.WILDCARD_HOST] : given
      return hosts.flatMap((host) =>
        operations.map((operation) => ({
          resourceType: r.resourceType,
          resourceName: r.name,
          patternType: c.patternType,
          principal,
          host,
          operation,
          permissionType
        }))
      )
    })
  )
}

/** The filters `--remove` deletes with (all ACLs of a resource when no principal is given). */
export const filtersToRemove = (c: AclsCommand): ReadonlyArray<Acl.AclBindingFilter> =>
  c.resources.flatMap((r) => {
    const pattern = { resourceType: r.resourceType, resourceName: r.name, patternType: c.patternType }
    if (c.principals.length === 0) return [{ ...Acl.ANY_FILTER, ...pattern }]
    const operations = c.operations.length === 0 ? [Acl.AclOperation.ANY] : c.operations
    return c.principals.flatMap(([principal, permissionType]) => {
      const given = permissionType === Acl.AclPermissionType.ALLOW ? c.allowHosts : c.denyHosts
      const hosts: ReadonlyArray<string | null> = given.length === 0 ? [null] : given
      return hosts.flatMap((host) =>
        operations.map((operation) => ({ ...pattern, principal, host, operation, permissionType }))
      )
    })
  })

/** The filters `--list` describes with. */
export const filtersToList = (c: AclsCommand): ReadonlyArray<Acl.AclBindingFilter> => {
  const patternType = c.resources.length === 0 ? Acl.PatternType.ANY : c.patternType
  const patterns =
    c.resources.length === 0
      ? [{ resourceType: Acl.ResourceType.ANY, resourceName: null, patternType }]
      : c.resources.map((r) => ({ resourceType: r.resourceType, resourceName: r.name, patternType }))
  const principals: ReadonlyArray<string | null> = c.listPrincipals.length === 0 ? [null] : c.listPrincipals
  return patterns.flatMap((p) => principals.map((principal) => ({ ...Acl.ANY_FILTER, ...p, principal })))
}

const patternText = (b: { resourceType: number; resourceName: string; patternType: number }) =>
  `ResourcePattern(resourceType=${Acl.resourceTypeName(b.resourceType)}, name=${b.resourceName}, patternType=${Acl.patternTypeName(b.patternType)})`
const entryText = (b: { principal: string; host: string; operation: number; permissionType: number }) =>
  `(principal=${b.principal}, host=${b.host}, operation=${Acl.operationName(b.operation)}, permissionType=${Acl.permissionTypeName(b.permissionType)})`

/** Bindings grouped by resource pattern, as kafka-acls prints them under `heading`. */
export const formatBindings = (heading: string, bindings: ReadonlyArray<Acl.AclBinding>): ReadonlyArray<string> => {
  const groups = new Map<string, Array<Acl.AclBinding>>()
  for (const b of bindings) {
    const key = patternText(b)
    groups.set(key, [...(groups.get(key) ?? []), b])
  }
  return [...groups].flatMap(([pattern, bs]) => [
    `${heading} \`${pattern}\`:`,
    ...bs.map((b) => ` \t${entryText(b)} `),
    ""
  ])
}

const filterWire = (f: Acl.AclBindingFilter) => ({
  resourceTypeFilter: f.resourceType,
  resourceNameFilter: f.resourceName,
  patternTypeFilter: f.patternType,
  principalFilter: f.principal,
  hostFilter: f.host,
  operation: f.operation,
  permissionType: f.permissionType
})

const failure = (errorCode: number, errorMessage: string | null | undefined) =>
  new ClientError.KafkaError({ errorCode, errorMessage: errorMessage ?? null, context: "" })

export interface Io {
  readonly out: (line: string) => void
  readonly err: (line: string) => void
}

const describeFailure = (e: unknown): string =>
  e instanceof ClientError.KafkaError
    ? `${e.errorName}: ${e.errorMessage ?? Errors.message(e.errorCode)}`
    : e instanceof Error
      ? e.message
      : String(e)

/** Runs a parsed command with a client made from `settings`; resolves with the exit code. */
export const run = async (
  command: AclsCommand,
  io: Io,
  settings: Partial<ClusterClient.Config> = {}
): Promise<number> => {
  const client = new ClusterClient.Client({
    bootstrapServers: command.bootstrapServer.split(",").map((s) => s.trim()),
    clientId: "clustermirror-acls",
    retry: { attempts: 3, baseMs: 100, maxMs: 1000, jitter: 0.2 },
    ...settings
  })
  try {
    switch (command.action) {
      case "add": {
        const bindings = bindingsToAdd(command)
        const res = await client.sendToAnyBroker(CreateAcls.api, {
          creations: bindings.map((b) => ({ ...b, resourcePatternType: b.patternType }))
        })
        for (const line of formatBindings("Adding ACLs for resource", bindings)) io.out(line)
        const failed = res.results.flatMap((r, i) => (r.errorCode === 0 ? [] : [[bindings[i]!, r] as const]))
        for (const [b, r] of failed)
          io.err(
            `Error while adding ACL ${entryText(b)} on ${patternText(b)}: ${describeFailure(failure(r.errorCode, r.errorMessage))}`
          )
        return failed.length === 0 ? 0 : 1
      }
      case "remove": {
        const res = await client.sendToAnyBroker(DeleteAcls.api, { filters: filtersToRemove(command).map(filterWire) })
        let code = 0
        const removed: Array<Acl.AclBinding> = []
        for (const r of res.filterResults) {
          if (r.errorCode !== 0) {
            io.err(`Error while removing ACLs: ${describeFailure(failure(r.errorCode, r.errorMessage))}`)
            code = 1
          }
          for (const m of r.matchingAcls) removed.push(m)
        }
        if (removed.length === 0 && code === 0) io.out("No ACLs matched.")
        for (const line of formatBindings("Removed ACLs for resource", removed)) io.out(line)
        return code
      }
      case "list": {
        const found: Array<Acl.AclBinding> = []
        for (const f of filtersToList(command)) {
          const res = await client.sendToAnyBroker(DescribeAcls.api, filterWire(f))
          if (res.errorCode !== 0) {
            io.err(`Error while listing ACLs: ${describeFailure(failure(res.errorCode, res.errorMessage))}`)
            return 1
          }
          for (const r of res.resources)
            for (const a of r.acls)
              found.push({
                resourceType: r.resourceType,
                resourceName: r.resourceName,
                patternType: r.patternType,
                ...a
              })
        }
        for (const line of formatBindings("Current ACLs for resource", found)) io.out(line)
        return 0
      }
    }
  } catch (e) {
    io.err(`Error: ${describeFailure(e)}`)
    return 1
  } finally {
    await client.close()
  }
}

/** The whole command: usage, parsing, then `run` with the client settings `settingsOf` reads from `--command-config`. */
export const main = async (
  argv: ReadonlyArray<string>,
  io: Io,
  settingsOf: (file: string | null) => Partial<ClusterClient.Config> = () => ({})
): Promise<number> => {
  if (argv.length === 0 || argv.includes("--help")) {
    io.out(usage)
    return argv.length === 0 ? 2 : 0
  }
  let command: AclsCommand
  let settings: Partial<ClusterClient.Config>
  try {
    command = parse(argv)
    settings = settingsOf(command.commandConfig)
  } catch (e) {
    io.err(`${e instanceof Error ? e.message : String(e)}\n${usage}`)
    return 2
  }
  return run(command, io, settings)
}
