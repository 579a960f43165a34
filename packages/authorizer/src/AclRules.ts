/**
 * The rules of a mirror's `mirror.acls.include` (KIP-1279 §5.9, §7.3): which source ACLs the mirror copies.
 *
 * The config is a comma-separated list of rules; a rule is
 * `resourceType;resourceName;operation;permissionType;principal`, trailing fields optional (a missing one
 * matches anything), `*` in any field matches anything. resourceType is a `ResourceType` name, operation an
 * `AclOperation` name, permissionType ALLOW or DENY (names case-insensitive; ANY means `*`); resourceName
 * and principal are regular expressions matching the whole name (as Java's `Pattern.matches`). A binding
 * is included when one rule matches it; an empty list includes nothing. Pure values and functions.
 */
import { AclOperation, AclPermissionType, type AclBinding, ResourceType } from "./Acl.js"

/** One parsed rule; null fields match anything. */
export interface AclRule {
  /** The rule as configured (trimmed). */
  readonly text: string
  readonly resourceType: number | null
  readonly resourceName: RegExp | null
  readonly operation: number | null
  readonly permissionType: number | null
  readonly principal: RegExp | null
}

/** The rules of a config value, or the first rule that does not parse and why. */
export type Parsed =
  | { readonly _tag: "Rules"; readonly rules: ReadonlyArray<AclRule> }
  | { readonly _tag: "Invalid"; readonly rule: string; readonly reason: string }

const WILDCARD = "*"
const FIELDS = ["resourceType", "resourceName", "operation", "permissionType", "principal"] as const

const codeOf = (table: Readonly<Record<string, number>>, name: string): number | undefined => {
  const key = name.toUpperCase().replace(/-/g, "_")
  return Object.hasOwn(table, key) ? table[key] : undefined
}

/** A whole-name regular expression (Java's `Pattern.matches`). */
const wholeName = (pattern: string): RegExp => new RegExp(`^(?:${pattern})$`)

/** Parses one rule: the rule, or why it is invalid. */
export const parseRule = (text: string): AclRule | string => {
  const rule = text.trim()
  const fields = rule.split(";").map((f) => f.trim())
  if (fields.length > FIELDS.length)
    return `a rule has at most ${FIELDS.length} fields (${FIELDS.join(";")}), this one has ${fields.length}`
  const empty = fields.indexOf("")
  if (empty >= 0) return `the ${FIELDS[empty]} field is empty (use * to match anything)`
  const [type, name, operation, permission, principal] = fields
  const wild = (f: string | undefined) => f === undefined || f === WILDCARD || f.toUpperCase() === "ANY"

  let resourceType: number | null = null
  if (!wild(type)) {
    const code = codeOf(ResourceType, type!)
    if (code === undefined || code === ResourceType.UNKNOWN)
      return `unknown resourceType '${type}' (one of ${names(ResourceType, [0, 1])} or *)`
    resourceType = code
  }
  let op: number | null = null
  if (!wild(operation)) {
    const code = codeOf(AclOperation, operation!)
    if (code === undefined || code === AclOperation.UNKNOWN)
      return `unknown operation '${operation}' (one of ${names(AclOperation, [0, 1])} or *)`
    op = code
  }
  let perm: number | null = null
  if (!wild(permission)) {
    const code = codeOf(AclPermissionType, permission!)
    if (code !== AclPermissionType.ALLOW && code !== AclPermissionType.DENY)
      return `unknown permissionType '${permission}' (ALLOW, DENY or *)`
    perm = code
  }
  const regex = (field: string, value: string | undefined): RegExp | null | string => {
    if (value === undefined || value === WILDCARD) return null
    try {
      return wholeName(value)
    } catch {
      return `the ${field} '${value}' is not a valid regular expression`
    }
  }
  const n = regex("resourceName", name)
  if (typeof n === "string") return n
  const p = regex("principal", principal)
  if (typeof p === "string") return p
  return { text: rule, resourceType, resourceName: n, operation: op, permissionType: perm, principal: p }
}

const names = (table: Readonly<Record<string, number>>, skip: ReadonlyArray<number>) =>
  Object.entries(table)
    .filter(([, c]) => !skip.includes(c))
    .map(([n]) => n)
    .join(", ")

/** The rules of a `mirror.acls.include` value (empty entries dropped), or the first invalid one. */
export const parse = (value: string): Parsed => {
  const rules: Array<AclRule> = []
  for (const text of value.split(",")) {
    if (text.trim() === "") continue
    const r = parseRule(text)
    if (typeof r === "string") return { _tag: "Invalid", rule: text.trim(), reason: r }
    rules.push(r)
  }
  return { _tag: "Rules", rules }
}

/** Why a `mirror.acls.include` value is invalid (naming the rule), or null. */
export const invalid = (value: string): string | null => {
  const p = parse(value)
  return p._tag === "Invalid" ? `invalid rule '${p.rule}': ${p.reason}` : null
}

/** Whether a rule matches a binding (every pattern type: the rule has no pattern type field). */
export const ruleMatches = (rule: AclRule, b: AclBinding): boolean =>
  (rule.resourceType === null || rule.resourceType === b.resourceType) &&
  (rule.resourceName === null || rule.resourceName.test(b.resourceName)) &&
  (rule.operation === null || rule.operation === b.operation) &&
  (rule.permissionType === null || rule.permissionType === b.permissionType) &&
  (rule.principal === null || rule.principal.test(b.principal))

/** Whether one of the rules matches a binding. */
export const included = (rules: ReadonlyArray<AclRule>, b: AclBinding): boolean => rules.some((r) => ruleMatches(r, b))
