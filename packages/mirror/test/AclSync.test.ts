import { Acl, AclRules } from "@clustermirror/authorizer"
import { DescribeClusterMirrors } from "@clustermirror/protocol"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as AclSync from "../src/AclSync.js"

const { AclOperation: Op, ResourceType: Res, PatternType: Pat, AclPermissionType: Perm } = Acl

const rulesOf = (value: string): ReadonlyArray<AclRules.AclRule> => {
  const p = AclRules.parse(value)
  if (p._tag === "Invalid") throw new Error(p.reason)
  return p.rules
}

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

/** Bindings from a small space, so that source and destination often share some. */
const bindingArb: fc.Arbitrary<Acl.AclBinding> = fc.record({
  resourceType: fc.constantFrom(Res.TOPIC, Res.GROUP, Res.CLUSTER, Res.TRANSACTIONAL_ID, Res.CLUSTER_MIRROR),
  resourceName: fc.constantFrom("orders", "payments", "app-1", "*", "kafka-cluster"),
  patternType: fc.constantFrom(Pat.LITERAL, Pat.PREFIXED),
  principal: fc.constantFrom("User:alice", "User:bob", "User:app-1", "User:*"),
  host: fc.constantFrom("*", "10.0.0.1"),
  operation: fc.constantFrom(Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER),
  permissionType: fc.constantFrom(Perm.ALLOW, Perm.DENY)
})
const rulesArb = fc
  .array(
    fc.constantFrom(
      "*",
      "TOPIC",
      "GROUP;app-.*",
      "*;*;READ",
      "*;*;*;DENY",
      "*;*;*;*;User:a.*",
      "TOPIC;orders|payments;*;ALLOW;User:alice",
      "CLUSTER_MIRROR"
    ),
    { maxLength: 3 }
  )
  .map((rs) => rulesOf(rs.join(",")))

/** The destination after a plan, as the controller applies CreateAcls and exact DeleteAcls. */
const apply = (
  destination: ReadonlyArray<Acl.AclBinding>,
  plan: AclSync.AclSyncPlan
): ReadonlyArray<Acl.AclBinding> => {
  const out = new Map(destination.map((b) => [AclSync.keyOf(b), b]))
  for (const b of plan.create) out.set(AclSync.keyOf(b), b)
  for (const b of plan.delete) out.delete(AclSync.keyOf(b))
  return [...out.values()]
}
const keys = (bs: ReadonlyArray<Acl.AclBinding>) => new Set(bs.map(AclSync.keyOf))

describe("aclSyncPlan", () => {
  it("creates the included source bindings the destination lacks and deletes destination bindings not in them", () => {
    const orders = binding({})
    const payments = binding({ resourceName: "payments" })
    const group = binding({ resourceType: Res.GROUP, resourceName: "app-1" })
    const local = binding({ principal: "User:local" })
    const plan = AclSync.aclSyncPlan([orders, payments, group], [payments, local], rulesOf("TOPIC"))
    expect(plan.wanted).toEqual([orders, payments])
    expect(plan.create).toEqual([orders])
    expect(plan.delete).toEqual([local])
  })

  it("never copies, creates or deletes CLUSTER_MIRROR bindings, even when a rule includes them", () => {
    const sourceMirror = binding({ resourceType: Res.CLUSTER_MIRROR, resourceName: "dr", operation: Op.ALTER })
    const destinationMirror = binding({ resourceType: Res.CLUSTER_MIRROR, resourceName: "*", operation: Op.ALL })
    const plan = AclSync.aclSyncPlan([sourceMirror], [destinationMirror], rulesOf("*,CLUSTER_MIRROR"))
    expect(plan).toEqual({ wanted: [], create: [], delete: [] })
  })

  it("keeps the destination admin's own bindings: neither copied from the source nor deleted", () => {
    const own = binding({ principal: "User:mirror-admin", resourceType: Res.GROUP, resourceName: "*" })
    const ownOnSource = binding({ principal: "User:mirror-admin" })
    const local = binding({ principal: "User:local" })
    const plan = AclSync.aclSyncPlan([ownOnSource], [own, local], rulesOf("*"), "User:mirror-admin")
    expect(plan).toEqual({ wanted: [], create: [], delete: [local] })
    expect(AclSync.aclSyncPlan([ownOnSource], [own, local], rulesOf("*")).delete).toEqual([own, local])
  })

  it("leaves out source bindings this cluster cannot create (an unknown resource type)", () => {
    const future = binding({ resourceType: 42 })
    expect(AclSync.aclSyncPlan([future], [], rulesOf("*")).create).toEqual([])
  })

  it("with no rules included nothing, so the destination loses all but its CLUSTER_MIRROR bindings", () => {
    const local = binding({})
    const mirror = binding({ resourceType: Res.CLUSTER_MIRROR, resourceName: "dr", operation: Op.DESCRIBE })
    expect(AclSync.aclSyncPlan([local], [local, mirror], []).delete).toEqual([local])
  })

  it("properties: idempotent, never touches CLUSTER_MIRROR, result is the filtered source plus the kept CLUSTER_MIRROR bindings", () => {
    fc.assert(
      fc.property(
        fc.array(bindingArb, { maxLength: 25 }),
        fc.array(bindingArb, { maxLength: 25 }),
        rulesArb,
        (source, destination, rules) => {
          const plan = AclSync.aclSyncPlan(source, destination, rules)
          expect([...plan.create, ...plan.delete].some(AclSync.isClusterMirror)).toBe(false)
          // create and delete are disjoint, delete only names what the destination has, create only what it lacks
          const have = keys(destination)
          expect(plan.create.every((b) => !have.has(AclSync.keyOf(b)))).toBe(true)
          expect(plan.delete.every((b) => have.has(AclSync.keyOf(b)))).toBe(true)

          const after = apply(destination, plan)
          expect(AclSync.aclSyncPlan(source, after, rules)).toEqual({ wanted: plan.wanted, create: [], delete: [] })

          const filtered = source.filter((b) => !AclSync.isClusterMirror(b) && AclRules.included(rules, b))
          const kept = destination.filter(AclSync.isClusterMirror)
          expect(keys(after)).toEqual(keys([...filtered, ...kept]))
        }
      ),
      { numRuns: 500 }
    )
  })
})

describe("ACL sync status in DescribeClusterMirrors", () => {
  it("fills the described mirrors this broker has a status for, and leaves the others and failed ones alone", () => {
    const store = new AclSync.AclSyncStatusStore()
    store.set("dr", { state: "SYNCED", error: null, timeMs: 20, lastSyncedMs: 20, synced: 3, created: 2, deleted: 1 })
    store.set("gone", { state: "FAILED", error: "x", timeMs: 5, lastSyncedMs: -1, synced: 0, created: 0, deleted: 0 })
    const mirror = (mirrorName: string, errorCode = 0) => ({
      errorCode,
      mirrorName,
      authorizedOperations: -2147483648,
      topics: [],
      groupSyncStatuses: [],
      aclSyncStatuses: []
    })
    const filled = AclSync.withAclSync(
      { ...DescribeClusterMirrors.Response.empty, mirrors: [mirror("dr"), mirror("gone", 137), mirror("other")] },
      store
    )
    expect(filled.mirrors.map((m) => m.aclSyncStatuses)).toEqual([
      [{ state: "SYNCED", detail: null, timeMs: 20n, lastSyncedMs: 20n, synced: 3, created: 2, deleted: 1 }],
      [],
      []
    ])
    store.retain(new Set(["other"]))
    expect(store.status("dr")).toBeUndefined()
  })
})
