import { describe, expect, it } from "vitest"
import * as Acl from "../src/Acl.js"
import * as AclRules from "../src/AclRules.js"

const { AclOperation: Op, ResourceType: Res, PatternType: Pat, AclPermissionType: Perm } = Acl

const binding = (over: Partial<Acl.AclBinding>): Acl.AclBinding => ({
  resourceType: Res.TOPIC,
  resourceName: "orders",
  patternType: Pat.LITERAL,
  principal: "User:alice",
  host: "*",
  operation: Op.READ,
  permissionType: Perm.ALLOW,
  ...over
})

const rules = (value: string): ReadonlyArray<AclRules.AclRule> => {
  const p = AclRules.parse(value)
  if (p._tag === "Invalid") throw new Error(`${p.rule}: ${p.reason}`)
  return p.rules
}
const includes = (value: string, b: Partial<Acl.AclBinding>) => AclRules.included(rules(value), binding(b))

describe("mirror.acls.include rules", () => {
  it("the default * includes every binding; an empty list none", () => {
    expect(includes("*", {})).toBe(true)
    expect(includes("*", { resourceType: Res.GROUP, operation: Op.ALL, permissionType: Perm.DENY })).toBe(true)
    expect(rules("")).toEqual([])
    expect(rules(" , ")).toEqual([])
    expect(AclRules.included([], binding({}))).toBe(false)
  })

  it("trailing fields are optional and * matches anything in any field", () => {
    expect(includes("TOPIC", {})).toBe(true)
    expect(includes("TOPIC", { resourceType: Res.GROUP })).toBe(false)
    expect(includes("*;orders", {})).toBe(true)
    expect(includes("*;*;READ", { operation: Op.WRITE })).toBe(false)
    expect(includes("*;*;*;DENY", {})).toBe(false)
    expect(includes("*;*;*;ALLOW;*", {})).toBe(true)
  })

  it("names are case-insensitive, ANY is *, and cluster-mirror spells CLUSTER_MIRROR", () => {
    expect(includes("topic;*;read;allow", {})).toBe(true)
    expect(includes("ANY;*;ANY;ANY", {})).toBe(true)
    expect(includes("cluster-mirror", { resourceType: Res.CLUSTER_MIRROR })).toBe(true)
    expect(includes("Transactional_Id", { resourceType: Res.TRANSACTIONAL_ID })).toBe(true)
  })

  it("resourceName and principal are regexes matching the whole name (Java's Pattern.matches)", () => {
    expect(includes("TOPIC;ord.*", {})).toBe(true)
    expect(includes("TOPIC;ord", {})).toBe(false)
    expect(includes("TOPIC;rders", {})).toBe(false)
    expect(includes("TOPIC;a|orders", {})).toBe(true)
    expect(includes("TOPIC;orders|x;*;*;User:ali.*", {})).toBe(true)
    expect(includes("TOPIC;*;*;*;User:bob|ali", {})).toBe(false)
    expect(includes("TOPIC;*;*;*;alice", {})).toBe(false)
    // The literal wildcard resource name is a name like any other to a regex.
    expect(includes("TOPIC;\\*", { resourceName: "*" })).toBe(true)
    expect(includes("TOPIC;\\*", {})).toBe(false)
  })

  it("a rule matches literal and prefixed bindings alike (the rule has no pattern type)", () => {
    expect(includes("TOPIC;ord.*", { patternType: Pat.PREFIXED, resourceName: "ord" })).toBe(true)
  })

  it("a binding is included when one of the comma-separated rules matches", () => {
    const value = "GROUP;app-.*;READ, TOPIC;orders;WRITE"
    expect(includes(value, { resourceType: Res.GROUP, resourceName: "app-1" })).toBe(true)
    expect(includes(value, { operation: Op.WRITE })).toBe(true)
    expect(includes(value, {})).toBe(false)
  })

  it("refuses an invalid rule, naming it and the reason", () => {
    expect(AclRules.invalid("*")).toBeNull()
    expect(AclRules.invalid("TOPIC;x,FOO")).toBe(
      "invalid rule 'FOO': unknown resourceType 'FOO' (one of TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER, CLUSTER_MIRROR or *)"
    )
    expect(AclRules.invalid("UNKNOWN")).toContain("unknown resourceType 'UNKNOWN'")
    expect(AclRules.invalid("TOPIC;*;UNKNOWN")).toContain("unknown operation 'UNKNOWN'")
    expect(AclRules.invalid("TOPIC;*;READ;MAYBE")).toBe(
      "invalid rule 'TOPIC;*;READ;MAYBE': unknown permissionType 'MAYBE' (ALLOW, DENY or *)"
    )
    expect(AclRules.invalid("TOPIC;(x")).toBe(
      "invalid rule 'TOPIC;(x': the resourceName '(x' is not a valid regular expression"
    )
    expect(AclRules.invalid("*;*;*;*;User:[")).toBe(
      "invalid rule '*;*;*;*;User:[': the principal 'User:[' is not a valid regular expression"
    )
    expect(AclRules.invalid("TOPIC;;READ")).toBe(
      "invalid rule 'TOPIC;;READ': the resourceName field is empty (use * to match anything)"
    )
    expect(AclRules.invalid("*;*;*;*;*;*")).toBe(
      "invalid rule '*;*;*;*;*;*': a rule has at most 5 fields (resourceType;resourceName;operation;permissionType;principal), this one has 6"
    )
  })
})
