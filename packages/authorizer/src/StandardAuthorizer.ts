/**
 * Access decisions as Kafka's StandardAuthorizer makes them, over an index of the ACL bindings of the
 * metadata image: super users may do everything; a matching DENY wins over any ALLOW; an ALLOW of
 * READ, WRITE, DELETE or ALTER implies DESCRIBE and one of ALTER_CONFIGS implies DESCRIBE_CONFIGS;
 * ALL covers every operation; a resource with no ACL at all is allowed only under
 * `allow.everyone.if.no.acl.found`. The index is immutable: a new one is built when the ACLs change.
 *
 * A decision looks up the literal name, the literal wildcard and the name's prefixes of the lengths
 * that prefixed ACLs of the type have: a few map lookups per request and resource. Pure; it must not
 * read anything but the bindings and the config it was built with.
 */
import {
  type AclBinding,
  AclOperation,
  AclPermissionType,
  PatternType,
  ResourceType,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE
} from "./Acl.js"

/** The class name that enables the authorizer (`authorizer.class.name`), as Kafka's KRaft brokers use it. */
export const CLASS_NAME = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

export interface AuthorizerConfig {
  /** `super.users`: principals that may do everything. */
  readonly superUsers: ReadonlySet<string>
  /** `allow.everyone.if.no.acl.found`: allow access to resources that have no ACL at all. */
  readonly allowEveryoneIfNoAclFound: boolean
}

export const defaultConfig: AuthorizerConfig = { superUsers: new Set(), allowEveryoneIfNoAclFound: false }

/** Parses `super.users`: principals separated by semicolons, each `Type:name`. */
export const parseSuperUsers = (value: string): ReadonlySet<string> => {
  const users = value
    .split(";")
    .map((u) => u.trim())
    .filter((u) => u !== "")
  for (const u of users)
    if (u.indexOf(":") <= 0) throw new Error(`super.users=${value}: ${u} is not a principal of the form Type:name`)
  return new Set(users)
}

/** Who asks: the connection's principal and the host it connects from. */
export interface RequestIdentity {
  readonly principal: string
  readonly host: string
}

export type AuthorizationResult = "ALLOWED" | "DENIED"

interface TypeIndex {
  readonly literal: ReadonlyMap<string, ReadonlyArray<AclBinding>>
  readonly prefixed: ReadonlyMap<string, ReadonlyArray<AclBinding>>
  /** The distinct lengths of the prefixes in `prefixed`, ascending. */
  readonly prefixLengths: ReadonlyArray<number>
  /** Every binding of the type (for decisions by resource type). */
  readonly all: ReadonlyArray<AclBinding>
}

/** Whether an ALLOW of `granted` permits `requested` (Kafka's implied operations). */
export const implies = (granted: number, requested: number): boolean =>
  granted === requested ||
  granted === AclOperation.ALL ||
  (requested === AclOperation.DESCRIBE &&
    (granted === AclOperation.READ ||
      granted === AclOperation.WRITE ||
      granted === AclOperation.DELETE ||
      granted === AclOperation.ALTER)) ||
  (requested === AclOperation.DESCRIBE_CONFIGS && granted === AclOperation.ALTER_CONFIGS)

const identityMatches = (acl: AclBinding, id: RequestIdentity): boolean =>
  (acl.principal === id.principal || acl.principal === WILDCARD_PRINCIPAL) &&
  (acl.host === id.host || acl.host === WILDCARD_HOST)

const denies = (acl: AclBinding, operation: number): boolean =>
  acl.permissionType === AclPermissionType.DENY && (acl.operation === operation || acl.operation === AclOperation.ALL)

const allows = (acl: AclBinding, operation: number): boolean =>
  acl.permissionType === AclPermissionType.ALLOW && implies(acl.operation, operation)

/** Operations reported in Metadata's and DescribeCluster's authorized-operations bit sets, per resource type. */
export const SUPPORTED_OPERATIONS: ReadonlyMap<number, ReadonlyArray<number>> = new Map([
  [
    ResourceType.TOPIC,
    [
      AclOperation.READ,
      AclOperation.WRITE,
      AclOperation.CREATE,
      AclOperation.DELETE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS
    ]
  ],
  [
    ResourceType.GROUP,
    [
      AclOperation.READ,
      AclOperation.DESCRIBE,
      AclOperation.DELETE,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS
    ]
  ],
  [
    ResourceType.CLUSTER,
    [
      AclOperation.CREATE,
      AclOperation.CLUSTER_ACTION,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
      AclOperation.IDEMPOTENT_WRITE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE
    ]
  ],
  [
    ResourceType.CLUSTER_MIRROR,
    [
      AclOperation.CREATE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE,
      AclOperation.DELETE,
      AclOperation.ALTER_CONFIGS,
      AclOperation.DESCRIBE_CONFIGS
    ]
  ]
])

export class StandardAuthorizer {
  private constructor(
    readonly config: AuthorizerConfig,
    private readonly byType: ReadonlyMap<number, TypeIndex>,
    /** The bindings the index was built from. */
    readonly acls: ReadonlyArray<AclBinding>
  ) {}

  /** An authorizer over `acls` (the metadata image's bindings) with `config`. */
  static make(config: AuthorizerConfig, acls: Iterable<AclBinding>): StandardAuthorizer {
    const building = new Map<
      number,
      { literal: Map<string, AclBinding[]>; prefixed: Map<string, AclBinding[]>; all: AclBinding[] }
    >()
    const list: AclBinding[] = []
    for (const acl of acls) {
      list.push(acl)
      let t = building.get(acl.resourceType)
      if (t === undefined) building.set(acl.resourceType, (t = { literal: new Map(), prefixed: new Map(), all: [] }))
      t.all.push(acl)
      const bucket = acl.patternType === PatternType.PREFIXED ? t.prefixed : t.literal
      const existing = bucket.get(acl.resourceName)
      if (existing === undefined) bucket.set(acl.resourceName, [acl])
      else existing.push(acl)
    }
    const byType = new Map<number, TypeIndex>()
    for (const [type, t] of building)
      byType.set(type, {
        literal: t.literal,
        prefixed: t.prefixed,
        prefixLengths: [...new Set([...t.prefixed.keys()].map((p) => p.length))].sort((a, b) => a - b),
        all: t.all
      })
    return new StandardAuthorizer(config, byType, list)
  }

  /** The same ACLs under another config. */
  withConfig(config: AuthorizerConfig): StandardAuthorizer {
    return new StandardAuthorizer(config, this.byType, this.acls)
  }

  /** Whether `id` may perform `operation` on the resource `resourceType`:`name`. */
  authorize(id: RequestIdentity, operation: number, resourceType: number, name: string): boolean {
    if (this.config.superUsers.has(id.principal)) return true
    const t = this.byType.get(resourceType)
    if (t === undefined) return this.config.allowEveryoneIfNoAclFound
    const sections: Array<ReadonlyArray<AclBinding>> = []
    const literal = t.literal.get(name)
    if (literal !== undefined) sections.push(literal)
    if (name !== WILDCARD_RESOURCE) {
      const wildcard = t.literal.get(WILDCARD_RESOURCE)
      if (wildcard !== undefined) sections.push(wildcard)
    }
    for (const length of t.prefixLengths) {
      if (length > name.length) break
      const prefixed = t.prefixed.get(name.length === length ? name : name.slice(0, length))
      if (prefixed !== undefined) sections.push(prefixed)
    }
    if (sections.length === 0) return this.config.allowEveryoneIfNoAclFound
    let allowed = false
    for (const section of sections)
      for (const acl of section) {
        if (!identityMatches(acl, id)) continue
        if (denies(acl, operation)) return false
        if (!allowed && allows(acl, operation)) allowed = true
      }
    return allowed
  }

  /** `authorize` as Kafka's result name. */
  result(id: RequestIdentity, operation: number, resourceType: number, name: string): AuthorizationResult {
    return this.authorize(id, operation, resourceType, name) ? "ALLOWED" : "DENIED"
  }

  /**
   * Whether `id` may perform `operation` on at least one resource of the type (Kafka's
   * `authorizeByResourceType`): some ALLOW for it names a pattern that no DENY for it covers whole
   * (a literal wildcard DENY covers everything, a prefixed DENY every name it is a prefix of).
   */
  authorizeByResourceType(id: RequestIdentity, operation: number, resourceType: number): boolean {
    if (this.config.superUsers.has(id.principal)) return true
    const t = this.byType.get(resourceType)
    if (t === undefined) return this.config.allowEveryoneIfNoAclFound
    const deniedLiteral = new Set<string>()
    const deniedPrefixes: string[] = []
    for (const acl of t.all) {
      if (!identityMatches(acl, id) || !denies(acl, operation)) continue
      if (acl.patternType === PatternType.LITERAL) {
        if (acl.resourceName === WILDCARD_RESOURCE) return false
        deniedLiteral.add(acl.resourceName)
      } else deniedPrefixes.push(acl.resourceName)
    }
    const coveredByPrefix = (name: string) => deniedPrefixes.some((p) => name.startsWith(p))
    for (const acl of t.all) {
      if (!identityMatches(acl, id) || !allows(acl, operation)) continue
      if (coveredByPrefix(acl.resourceName)) continue
      if (acl.patternType === PatternType.LITERAL && deniedLiteral.has(acl.resourceName)) continue
      return true
    }
    return false
  }

  /**
   * The authorized-operations bit set of Metadata and DescribeCluster: bit `op` set for every supported
   * operation of the type that `id` may perform on the resource.
   */
  authorizedOperations(id: RequestIdentity, resourceType: number, name: string): number {
    let bits = 0
    for (const op of SUPPORTED_OPERATIONS.get(resourceType) ?? [])
      if (this.authorize(id, op, resourceType, name)) bits |= 1 << op
    return bits
  }
}

/** A decision from the bindings alone, for one-off checks (the per-request path keeps an authorizer). */
export const authorize = (
  acls: Iterable<AclBinding>,
  id: RequestIdentity,
  operation: number,
  resource: { readonly resourceType: number; readonly name: string },
  config: AuthorizerConfig = defaultConfig
): AuthorizationResult =>
  StandardAuthorizer.make(config, acls).result(id, operation, resource.resourceType, resource.name)
