/**
 * Kafka's ACL model: resource types, pattern types, operations and permission types with Kafka's wire
 * codes (plus KIP-1279's CLUSTER_MIRROR resource type), ACL bindings and binding filters, and the rules
 * of filter matching that DescribeAcls and DeleteAcls use. Pure values and functions; storing bindings
 * belongs to the controller, deciding access to `StandardAuthorizer`.
 */

/** Kafka's `ResourceType` codes; CLUSTER_MIRROR (8) is KIP-1279's. */
export const ResourceType = {
  UNKNOWN: 0,
  ANY: 1,
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
  DELEGATION_TOKEN: 6,
  USER: 7,
  CLUSTER_MIRROR: 8
} as const
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType]

/** Kafka's `PatternType` codes: ANY and MATCH only in filters. */
export const PatternType = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const
export type PatternType = (typeof PatternType)[keyof typeof PatternType]

/** Kafka's `AclOperation` codes: ANY only in filters. */
export const AclOperation = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
  CREATE_TOKENS: 13,
  DESCRIBE_TOKENS: 14,
  TWO_PHASE_COMMIT: 15
} as const
export type AclOperation = (typeof AclOperation)[keyof typeof AclOperation]

/** Kafka's `AclPermissionType` codes: ANY only in filters. */
export const AclPermissionType = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const
export type AclPermissionType = (typeof AclPermissionType)[keyof typeof AclPermissionType]

/** The resource name that matches every name of its type (as a LITERAL pattern). */
export const WILDCARD_RESOURCE = "*"
/** The principal that matches every principal. */
export const WILDCARD_PRINCIPAL = "User:*"
/** The host that matches every host. */
export const WILDCARD_HOST = "*"

const nameOf = (table: Readonly<Record<string, number>>, code: number): string =>
  Object.entries(table).find(([, c]) => c === code)?.[0] ?? "UNKNOWN"

export const resourceTypeName = (code: number): string => nameOf(ResourceType, code)
export const patternTypeName = (code: number): string => nameOf(PatternType, code)
export const operationName = (code: number): string => nameOf(AclOperation, code)
export const permissionTypeName = (code: number): string => nameOf(AclPermissionType, code)

/** Parses a name (case-insensitive, `-` or `_`) into its code in `table`, or undefined. */
const codeOf = (table: Readonly<Record<string, number>>, name: string): number | undefined => {
  const key = name.trim().toUpperCase().replace(/-/g, "_")
  return Object.hasOwn(table, key) ? table[key] : undefined
}
export const parseResourceType = (name: string): number | undefined => codeOf(ResourceType, name)
export const parsePatternType = (name: string): number | undefined => codeOf(PatternType, name)
export const parseOperation = (name: string): number | undefined => codeOf(AclOperation, name)
export const parsePermissionType = (name: string): number | undefined => codeOf(AclPermissionType, name)

/** One ACL: a resource pattern and an access control entry (Kafka's `AclBinding`). */
export interface AclBinding {
  readonly resourceType: number
  readonly resourceName: string
  readonly patternType: number
  readonly principal: string
  readonly host: string
  readonly operation: number
  readonly permissionType: number
}

/** Kafka's `AclBindingFilter`: null names, principals and hosts, and the ANY codes, match anything. */
export interface AclBindingFilter {
  readonly resourceType: number
  readonly resourceName: string | null
  readonly patternType: number
  readonly principal: string | null
  readonly host: string | null
  readonly operation: number
  readonly permissionType: number
}

/** The filter that matches every binding. */
export const ANY_FILTER: AclBindingFilter = {
  resourceType: ResourceType.ANY,
  resourceName: null,
  patternType: PatternType.ANY,
  principal: null,
  host: null,
  operation: AclOperation.ANY,
  permissionType: AclPermissionType.ANY
}

const RESOURCE_TYPES: ReadonlySet<number> = new Set([2, 3, 4, 5, 6, 7, 8])
const OPERATIONS: ReadonlySet<number> = new Set([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])

/**
 * Why a binding cannot be created, with Kafka's wording (CreateAcls answers INVALID_REQUEST with it),
 * or null for a valid one.
 */
export const invalidBinding = (b: AclBinding): string | null => {
  if (!RESOURCE_TYPES.has(b.resourceType)) return "Invalid resourceType " + b.resourceType
  if (b.patternType !== PatternType.LITERAL && b.patternType !== PatternType.PREFIXED)
    return "Invalid patternType " + b.patternType
  if (!OPERATIONS.has(b.operation)) return "Invalid operation " + b.operation
  if (b.permissionType !== AclPermissionType.ALLOW && b.permissionType !== AclPermissionType.DENY)
    return "Invalid permissionType " + b.permissionType
  if (b.resourceName === "") return "Resource name should not be empty"
  const colon = b.principal.indexOf(":")
  if (colon <= 0)
    return `Could not parse principal from \`${b.principal}\` (no colon is present separating the principal type from name)`
  if (b.host === "") return "Invalid host ''"
  if (b.resourceType === ResourceType.CLUSTER_MIRROR && !CLUSTER_MIRROR_OPERATIONS.has(b.operation))
    return `Operation ${operationName(b.operation)} is not valid for CLUSTER_MIRROR resources`
  return null
}

/** KIP-1279 §8.1: the operations an ACL on a CLUSTER_MIRROR may name (and ALL). */
export const CLUSTER_MIRROR_OPERATIONS: ReadonlySet<number> = new Set([
  AclOperation.ALL,
  AclOperation.CREATE,
  AclOperation.ALTER,
  AclOperation.DESCRIBE,
  AclOperation.DELETE,
  AclOperation.ALTER_CONFIGS,
  AclOperation.DESCRIBE_CONFIGS
])

/** The name of the single CLUSTER resource. */
export const CLUSTER_NAME = "kafka-cluster"

/**
 * Why a filter cannot be used, with Kafka's messages (an UNKNOWN or out-of-range code in its pattern
 * part or its entry part), or null for a valid one.
 */
export const invalidFilter = (f: AclBindingFilter): string | null => {
  if (
    (f.resourceType !== ResourceType.ANY && !RESOURCE_TYPES.has(f.resourceType)) ||
    f.patternType < PatternType.ANY ||
    f.patternType > PatternType.PREFIXED
  )
    return "Unknown patternFilter."
  if (
    (f.operation !== AclOperation.ANY && !OPERATIONS.has(f.operation)) ||
    f.permissionType < AclPermissionType.ANY ||
    f.permissionType > AclPermissionType.ALLOW
  )
    return "Unknown entryFilter."
  return null
}

/**
 * Whether a filter's resource pattern part matches a binding's pattern (Kafka's
 * `ResourcePatternFilter.matches`): ANY matches every pattern type with the exact name; MATCH matches
 * the literal pattern of the name, the literal wildcard and every prefix of the name; LITERAL and
 * PREFIXED match their own type with the exact name.
 */
export const patternMatches = (f: AclBindingFilter, b: AclBinding): boolean => {
  if (f.resourceType !== ResourceType.ANY && f.resourceType !== b.resourceType) return false
  if (f.patternType !== PatternType.ANY && f.patternType !== PatternType.MATCH && f.patternType !== b.patternType)
    return false
  if (f.resourceName === null) return true
  if (f.patternType === PatternType.ANY || f.patternType === b.patternType) return f.resourceName === b.resourceName
  switch (b.patternType) {
    case PatternType.LITERAL:
      return f.resourceName === b.resourceName || b.resourceName === WILDCARD_RESOURCE
    case PatternType.PREFIXED:
      return f.resourceName.startsWith(b.resourceName)
    default:
      return false
  }
}

/** Whether a filter's entry part matches a binding's entry (Kafka's `AccessControlEntryFilter.matches`). */
export const entryMatches = (f: AclBindingFilter, b: AclBinding): boolean =>
  (f.principal === null || f.principal === b.principal) &&
  (f.host === null || f.host === b.host) &&
  (f.operation === AclOperation.ANY || f.operation === b.operation) &&
  (f.permissionType === AclPermissionType.ANY || f.permissionType === b.permissionType)

/** Whether a filter matches a binding: both its pattern and its entry part. */
export const matches = (f: AclBindingFilter, b: AclBinding): boolean => patternMatches(f, b) && entryMatches(f, b)

/** A binding as text, in the shape of Kafka's `AclBinding.toString` (for logs and CLI output). */
export const format = (b: AclBinding): string =>
  `(pattern=ResourcePattern(resourceType=${resourceTypeName(b.resourceType)}, name=${b.resourceName}, ` +
  `patternType=${patternTypeName(b.patternType)}), entry=(principal=${b.principal}, host=${b.host}, ` +
  `operation=${operationName(b.operation)}, permissionType=${permissionTypeName(b.permissionType)}))`
