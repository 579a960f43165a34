import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Acl from "../src/Acl.js"
import * as StandardAuthorizer from "../src/StandardAuthorizer.js"

const { AclOperation: Op, AclPermissionType: Perm, PatternType: Pat, ResourceType: Res } = Acl

const acl = (over: Partial<Acl.AclBinding>): Acl.AclBinding => ({
  resourceType: Res.TOPIC,
  resourceName: "orders",
  patternType: Pat.LITERAL,
  principal: "User:alice",
  host: "*",
  operation: Op.READ,
  permissionType: Perm.ALLOW,
  ...over
})
const alice = { principal: "User:alice", host: "10.0.0.1" }
const bob = { principal: "User:bob", host: "10.0.0.2" }
const make = (acls: ReadonlyArray<Acl.AclBinding>, config: Partial<StandardAuthorizer.AuthorizerConfig> = {}) =>
  StandardAuthorizer.StandardAuthorizer.make({ ...StandardAuthorizer.defaultConfig, ...config }, acls)

describe("StandardAuthorizer.authorize", () => {
  it("allows what an ALLOW names and denies everything else", () => {
    const a = make([acl({})])
    expect(a.result(alice, Op.READ, Res.TOPIC, "orders")).toBe("ALLOWED")
    expect(a.result(alice, Op.WRITE, Res.TOPIC, "orders")).toBe("DENIED")
    expect(a.result(bob, Op.READ, Res.TOPIC, "orders")).toBe("DENIED")
    expect(a.result(alice, Op.READ, Res.TOPIC, "payments")).toBe("DENIED")
    expect(a.result(alice, Op.READ, Res.GROUP, "orders")).toBe("DENIED")
  })

  it("puts DENY before ALLOW, for the exact operation and ALL only", () => {
    const a = make([acl({ operation: Op.ALL }), acl({ permissionType: Perm.DENY, operation: Op.WRITE })])
    expect(a.authorize(alice, Op.READ, Res.TOPIC, "orders")).toBe(true)
    expect(a.authorize(alice, Op.WRITE, Res.TOPIC, "orders")).toBe(false)
    // A DENY of READ does not deny the DESCRIBE that READ would imply.
    const b = make([acl({ operation: Op.DESCRIBE }), acl({ permissionType: Perm.DENY })])
    expect(b.authorize(alice, Op.DESCRIBE, Res.TOPIC, "orders")).toBe(true)
    expect(b.authorize(alice, Op.READ, Res.TOPIC, "orders")).toBe(false)
  })

  it("implies DESCRIBE from READ, WRITE, DELETE and ALTER, and DESCRIBE_CONFIGS from ALTER_CONFIGS", () => {
    for (const op of [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
      expect(make([acl({ operation: op })]).authorize(alice, Op.DESCRIBE, Res.TOPIC, "orders")).toBe(true)
    for (const op of [Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS])
      expect(make([acl({ operation: op })]).authorize(alice, Op.DESCRIBE, Res.TOPIC, "orders")).toBe(false)
    expect(
      make([acl({ operation: Op.ALTER_CONFIGS })]).authorize(alice, Op.DESCRIBE_CONFIGS, Res.TOPIC, "orders")
    ).toBe(true)
    expect(make([acl({ operation: Op.READ })]).authorize(alice, Op.WRITE, Res.TOPIC, "orders")).toBe(false)
  })

  it("matches the literal wildcard, prefixes, the wildcard principal and the host", () => {
    const a = make([
      acl({ resourceName: "*", operation: Op.DESCRIBE }),
      acl({ resourceName: "pay", patternType: Pat.PREFIXED, principal: "User:*", operation: Op.WRITE }),
      acl({ resourceName: "audit", host: "10.0.0.1", operation: Op.READ })
    ])
    expect(a.authorize(alice, Op.DESCRIBE, Res.TOPIC, "anything")).toBe(true)
    expect(a.authorize(bob, Op.WRITE, Res.TOPIC, "payments")).toBe(true)
    expect(a.authorize(bob, Op.WRITE, Res.TOPIC, "pa")).toBe(false)
    expect(a.authorize(alice, Op.READ, Res.TOPIC, "audit")).toBe(true)
    expect(a.authorize({ ...alice, host: "10.0.0.9" }, Op.READ, Res.TOPIC, "audit")).toBe(false)
    // A literal "*" topic name is only the wildcard pattern, a prefixed "*" only its prefix.
    expect(
      make([acl({ resourceName: "*", patternType: Pat.PREFIXED })]).authorize(alice, Op.READ, Res.TOPIC, "x")
    ).toBe(false)
  })

  it("lets super users do everything and applies allow.everyone.if.no.acl.found only to resources without ACLs", () => {
    const a = make([acl({ principal: "User:bob", permissionType: Perm.DENY, operation: Op.ALL })], {
      superUsers: StandardAuthorizer.parseSuperUsers("User:admin; User:bob")
    })
    expect(a.authorize(bob, Op.READ, Res.TOPIC, "orders")).toBe(true)
    expect(a.authorize({ principal: "User:admin", host: "h" }, Op.CLUSTER_ACTION, Res.CLUSTER, "kafka-cluster")).toBe(
      true
    )
    const open = make([acl({ principal: "User:bob" })], { allowEveryoneIfNoAclFound: true })
    expect(open.authorize(alice, Op.WRITE, Res.TOPIC, "payments")).toBe(true)
    expect(open.authorize(alice, Op.READ, Res.TOPIC, "orders")).toBe(false)
    expect(open.authorize(alice, Op.READ, Res.GROUP, "g")).toBe(true)
    expect(make([]).authorize(alice, Op.READ, Res.GROUP, "g")).toBe(false)
    expect(() => StandardAuthorizer.parseSuperUsers("alice")).toThrow(/alice is not a principal/)
  })

  it("decides by resource type as Kafka's authorizeByResourceType", () => {
    const allowPay = acl({ resourceName: "pay", patternType: Pat.PREFIXED, operation: Op.WRITE })
    expect(make([allowPay]).authorizeByResourceType(alice, Op.WRITE, Res.TOPIC)).toBe(true)
    expect(make([allowPay]).authorizeByResourceType(bob, Op.WRITE, Res.TOPIC)).toBe(false)
    expect(
      make([
        allowPay,
        acl({ resourceName: "p", patternType: Pat.PREFIXED, operation: Op.WRITE, permissionType: Perm.DENY })
      ]).authorizeByResourceType(alice, Op.WRITE, Res.TOPIC)
    ).toBe(false)
    expect(
      make([
        allowPay,
        acl({ resourceName: "*", operation: Op.ALL, permissionType: Perm.DENY })
      ]).authorizeByResourceType(alice, Op.WRITE, Res.TOPIC)
    ).toBe(false)
  })

  it("reports authorized operations as a bit set of the type's supported operations", () => {
    const a = make([acl({ operation: Op.READ })])
    expect(a.authorizedOperations(alice, Res.TOPIC, "orders")).toBe((1 << Op.READ) | (1 << Op.DESCRIBE))
  })
})

// ---------------------------------------------------------------------------------------------------
// Properties: the index decides as a plain scan over every binding does

const names = fc.constantFrom("*", "o", "or", "orders", "orders-eu", "pay", "p", "")
const principal = fc.constantFrom("User:alice", "User:bob", "User:*")
const binding: fc.Arbitrary<Acl.AclBinding> = fc.record({
  resourceType: fc.constantFrom(Res.TOPIC, Res.GROUP, Res.CLUSTER_MIRROR),
  resourceName: names.filter((n) => n !== ""),
  patternType: fc.constantFrom(Pat.LITERAL, Pat.PREFIXED),
  principal,
  host: fc.constantFrom("*", "10.0.0.1", "10.0.0.2"),
  operation: fc.constantFrom(Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS),
  permissionType: fc.constantFrom(Perm.ALLOW, Perm.DENY)
})
const identity = fc.record({
  principal: fc.constantFrom("User:alice", "User:bob", "User:carol"),
  host: fc.constantFrom("10.0.0.1", "10.0.0.2")
})
const requested = fc.constantFrom(Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)
const resource = fc.record({
  resourceType: fc.constantFrom(Res.TOPIC, Res.GROUP, Res.CLUSTER_MIRROR),
  name: fc.constantFrom("o", "or", "orders", "orders-eu", "pay", "payments", "x")
})

/** The model: which bindings apply to a resource, then DENY before ALLOW. */
const reference = (
  acls: ReadonlyArray<Acl.AclBinding>,
  config: StandardAuthorizer.AuthorizerConfig,
  id: StandardAuthorizer.RequestIdentity,
  op: number,
  r: { resourceType: number; name: string }
): boolean => {
  if (config.superUsers.has(id.principal)) return true
  const onResource = acls.filter(
    (a) =>
      a.resourceType === r.resourceType &&
      (a.patternType === Pat.LITERAL
        ? a.resourceName === r.name || a.resourceName === "*"
        : r.name.startsWith(a.resourceName))
  )
  if (onResource.length === 0) return config.allowEveryoneIfNoAclFound
  const mine = onResource.filter(
    (a) => (a.principal === id.principal || a.principal === "User:*") && (a.host === id.host || a.host === "*")
  )
  if (mine.some((a) => a.permissionType === Perm.DENY && (a.operation === op || a.operation === Op.ALL))) return false
  return mine.some((a) => a.permissionType === Perm.ALLOW && StandardAuthorizer.implies(a.operation, op))
}

describe("StandardAuthorizer properties", () => {
  it("decides as the reference scan for any ACLs, identity, operation and resource", () => {
    fc.assert(
      fc.property(
        fc.array(binding, { maxLength: 12 }),
        fc.boolean(),
        fc.subarray(["User:alice", "User:carol"]),
        identity,
        requested,
        resource,
        (acls, everyone, supers, id, op, r) => {
          const config = { allowEveryoneIfNoAclFound: everyone, superUsers: new Set(supers) }
          expect(make(acls, config).authorize(id, op, r.resourceType, r.name)).toBe(reference(acls, config, id, op, r))
        }
      ),
      { numRuns: 2000 }
    )
  })

  it("never allows more after a matching DENY is added, and never less after an ALLOW is added", () => {
    fc.assert(
      fc.property(
        fc.array(binding, { maxLength: 8 }),
        binding,
        identity,
        requested,
        resource,
        (acls, extra, id, op, r) => {
          const before = make(acls).authorize(id, op, r.resourceType, r.name)
          const after = make([...acls, extra]).authorize(id, op, r.resourceType, r.name)
          if (extra.permissionType === Perm.DENY && before === false) expect(after).toBe(false)
          if (extra.permissionType === Perm.ALLOW && before === true) expect(after).toBe(true)
        }
      )
    )
  })

  it("is independent of the order of the bindings", () => {
    fc.assert(
      fc.property(fc.array(binding, { maxLength: 10 }), identity, requested, resource, (acls, id, op, r) => {
        expect(make([...acls].reverse()).authorize(id, op, r.resourceType, r.name)).toBe(
          make(acls).authorize(id, op, r.resourceType, r.name)
        )
      })
    )
  })
})

describe("Acl filters", () => {
  const filter = (over: Partial<Acl.AclBindingFilter>): Acl.AclBindingFilter => ({ ...Acl.ANY_FILTER, ...over })

  it("matches by ANY, MATCH, LITERAL and PREFIXED as Kafka's filters do", () => {
    const literal = acl({ resourceName: "orders" })
    const wildcard = acl({ resourceName: "*" })
    const prefixed = acl({ resourceName: "ord", patternType: Pat.PREFIXED })
    const all = [literal, wildcard, prefixed]
    const hits = (f: Acl.AclBindingFilter) => all.filter((b) => Acl.matches(f, b))
    expect(hits(Acl.ANY_FILTER)).toEqual(all)
    expect(hits(filter({ resourceName: "orders" }))).toEqual([literal])
    expect(hits(filter({ resourceName: "orders", patternType: Pat.MATCH }))).toEqual(all)
    expect(hits(filter({ resourceName: "ord", patternType: Pat.PREFIXED }))).toEqual([prefixed])
    expect(hits(filter({ resourceName: "ord", patternType: Pat.LITERAL }))).toEqual([])
    expect(hits(filter({ patternType: Pat.LITERAL }))).toEqual([literal, wildcard])
    expect(hits(filter({ resourceType: Res.GROUP }))).toEqual([])
    expect(hits(filter({ principal: "User:bob" }))).toEqual([])
    expect(hits(filter({ operation: Op.READ, permissionType: Perm.ALLOW }))).toEqual(all)
    expect(hits(filter({ operation: Op.WRITE }))).toEqual([])
  })

  it("validates bindings and filters with Kafka's messages", () => {
    expect(Acl.invalidBinding(acl({}))).toBeNull()
    expect(Acl.invalidBinding(acl({ resourceType: Res.ANY }))).toBe("Invalid resourceType 1")
    expect(Acl.invalidBinding(acl({ patternType: Pat.MATCH }))).toBe("Invalid patternType 2")
    expect(Acl.invalidBinding(acl({ operation: Op.ANY }))).toBe("Invalid operation 1")
    expect(Acl.invalidBinding(acl({ permissionType: Perm.ANY }))).toBe("Invalid permissionType 1")
    expect(Acl.invalidBinding(acl({ principal: "alice" }))).toMatch(/no colon is present/)
    expect(Acl.invalidBinding(acl({ resourceName: "" }))).toBe("Resource name should not be empty")
    expect(Acl.invalidBinding(acl({ resourceType: Res.CLUSTER_MIRROR, operation: Op.READ }))).toMatch(
      /READ is not valid for CLUSTER_MIRROR/
    )
    expect(Acl.invalidFilter(Acl.ANY_FILTER)).toBeNull()
    expect(Acl.invalidFilter(filter({ resourceType: 0 }))).toBe("Unknown patternFilter.")
    expect(Acl.invalidFilter(filter({ operation: 0 }))).toBe("Unknown entryFilter.")
  })

  it("a MATCH filter for a name matches exactly the bindings that apply to that resource (property)", () => {
    fc.assert(
      fc.property(binding, resource, (b, r) => {
        const applies =
          b.resourceType === r.resourceType &&
          (b.patternType === Pat.LITERAL
            ? b.resourceName === r.name || b.resourceName === "*"
            : r.name.startsWith(b.resourceName))
        expect(
          Acl.matches(filter({ resourceType: r.resourceType, resourceName: r.name, patternType: Pat.MATCH }), b)
        ).toBe(applies)
      })
    )
  })

  it("a binding's exact filter matches it, ANY matches everything, and filters only narrow (property)", () => {
    fc.assert(
      fc.property(binding, binding, (b, other) => {
        expect(Acl.matches(Acl.ANY_FILTER, b)).toBe(true)
        expect(Acl.matches({ ...b }, b)).toBe(true)
        if (Acl.matches({ ...other }, b)) expect(other).toEqual(b)
      })
    )
  })
})
