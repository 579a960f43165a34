import { Acl } from "@clustermirror/authorizer"
import { Errors, MetadataRecords, type Uuid } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as AclControl from "../src/AclControl.js"

const binding = (over: Partial<Acl.AclBinding> = {}): Acl.AclBinding => ({
  resourceType: Acl.ResourceType.TOPIC,
  resourceName: "orders",
  patternType: Acl.PatternType.LITERAL,
  principal: "User:alice",
  host: "*",
  operation: Acl.AclOperation.READ,
  permissionType: Acl.AclPermissionType.ALLOW,
  ...over
})
const ids = () => {
  let n = 0
  return () => `0000000000000000000000000000000${(n++).toString(16)}`.slice(-32) as Uuid.Uuid
}
const replayAll = (state: AclControl.State, records: ReadonlyArray<MetadataRecords.MetadataRecord>) =>
  records.reduce((s, r) => AclControl.replay(s, r as AclControl.AclRecord), state)

describe("AclControl", () => {
  it("creates valid bindings once and refuses invalid ones with INVALID_REQUEST", () => {
    const r = AclControl.createAcls(
      AclControl.empty,
      [binding(), binding(), binding({ principal: "alice" }), binding({ patternType: Acl.PatternType.ANY })],
      ids()
    )
    expect(r.records.map((x) => x.type)).toEqual(["AccessControlEntryRecord"])
    expect(r.response.map((x) => x.errorCode)).toEqual([
      0,
      0,
      Errors.ErrorCode.INVALID_REQUEST,
      Errors.ErrorCode.INVALID_REQUEST
    ])
    expect(r.response[3]!.errorMessage).toBe("Invalid patternType 1")
    const state = replayAll(AclControl.empty, r.records)
    expect([...state.acls.values()].map(({ id: _, ...b }) => b)).toEqual([binding()])
    // Existing bindings are not written again.
    expect(AclControl.createAcls(state, [binding()], ids()).records).toEqual([])
  })

  it("deletes what each filter matches, each binding once, and reports the matches", () => {
    const created = AclControl.createAcls(
      AclControl.empty,
      [
        binding(),
        binding({ resourceName: "ord", patternType: Acl.PatternType.PREFIXED }),
        binding({ resourceType: 3 })
      ],
      ids()
    )
    const state = replayAll(AclControl.empty, created.records)
    const r = AclControl.deleteAcls(state, [
      {
        ...Acl.ANY_FILTER,
        resourceType: Acl.ResourceType.TOPIC,
        resourceName: "orders",
        patternType: Acl.PatternType.MATCH
      },
      { ...Acl.ANY_FILTER, resourceType: Acl.ResourceType.TOPIC },
      { ...Acl.ANY_FILTER, operation: 0 }
    ])
    expect(r.response.map((x) => x.matchingAcls.length)).toEqual([2, 2, 0])
    expect(r.response[2]).toEqual({
      errorCode: Errors.ErrorCode.INVALID_REQUEST,
      errorMessage: "Unknown entryFilter.",
      matchingAcls: []
    })
    expect(r.records.length).toBe(2)
    const after = replayAll(state, r.records)
    expect([...after.acls.values()].map((a) => a.resourceType)).toEqual([3])
  })

  it("dies replaying an unknown removal or a duplicate id", () => {
    expect(() =>
      AclControl.replay(AclControl.empty, MetadataRecords.make("RemoveAccessControlEntryRecord", { id: ids()() }))
    ).toThrow(/unknown ACL/)
  })

  it("create then delete with the ANY filter leaves nothing, for any bindings (property)", () => {
    const arb = fc.record({
      resourceType: fc.constantFrom(0, 1, 2, 3, 4, 8),
      resourceName: fc.constantFrom("", "a", "b", "*"),
      patternType: fc.constantFrom(1, 2, 3, 4),
      principal: fc.constantFrom("User:a", "User:*", "bad"),
      host: fc.constantFrom("*", "h"),
      operation: fc.constantFrom(0, 2, 3, 8, 11),
      permissionType: fc.constantFrom(1, 2, 3)
    })
    fc.assert(
      fc.property(fc.array(arb, { maxLength: 10 }), (creations) => {
        const created = AclControl.createAcls(AclControl.empty, creations, ids())
        const state = replayAll(AclControl.empty, created.records)
        expect(state.acls.size).toBe(created.records.length)
        for (const a of state.acls.values()) expect(Acl.invalidBinding(a)).toBeNull()
        const deleted = AclControl.deleteAcls(state, [Acl.ANY_FILTER])
        expect(replayAll(state, deleted.records).acls.size).toBe(0)
        expect(deleted.response[0]!.matchingAcls.length).toBe(state.acls.size)
      })
    )
  })
})
