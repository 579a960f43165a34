import { Acl } from "@clustermirror/authorizer"
import { describe, expect, it } from "@effect/vitest"
import * as AclsCommand from "../src/AclsCommand.js"

const B = ["--bootstrap-server", "127.0.0.1:9092"]

describe("AclsCommand.parse", () => {
  it("reads kafka-acls' options and KIP-1279's --cluster-mirror", () => {
    const c = AclsCommand.parse([
      ...B,
      "--add",
      "--allow-principal",
      "User:alice",
      "--deny-principal",
      "User:mallory",
      "--operation",
      "Alter",
      "--operation",
      "DescribeConfigs",
      "--cluster-mirror",
      "*",
      "--topic",
      "orders"
    ])
    expect(c.action).toBe("add")
    expect(c.resources).toEqual([
      { resourceType: Acl.ResourceType.TOPIC, name: "orders" },
      { resourceType: Acl.ResourceType.CLUSTER_MIRROR, name: "*" }
    ])
    const bindings = AclsCommand.bindingsToAdd(c)
    expect(bindings.length).toBe(8)
    expect(bindings[0]).toEqual({
      resourceType: Acl.ResourceType.TOPIC,
      resourceName: "orders",
      patternType: Acl.PatternType.LITERAL,
      principal: "User:alice",
      host: "*",
      operation: Acl.AclOperation.ALTER,
      permissionType: Acl.AclPermissionType.ALLOW
    })
    expect(bindings.filter((b) => b.permissionType === Acl.AclPermissionType.DENY).length).toBe(4)
  })

  it("parses operations as kafka-acls names them", () => {
    expect(AclsCommand.parseOperation("ClusterAction")).toBe(Acl.AclOperation.CLUSTER_ACTION)
    expect(AclsCommand.parseOperation("IdempotentWrite")).toBe(Acl.AclOperation.IDEMPOTENT_WRITE)
    expect(AclsCommand.parseOperation("READ")).toBe(Acl.AclOperation.READ)
    expect(() => AclsCommand.parseOperation("Fly")).toThrow(/unknown operation Fly/)
  })

  it("refuses what kafka-acls refuses, and operations a cluster mirror ACL cannot name", () => {
    expect(() => AclsCommand.parse([...B, "--add", "--topic", "t"])).toThrow(/--allow-principal or --deny-principal/)
    expect(() => AclsCommand.parse([...B, "--add", "--allow-principal", "User:a"])).toThrow(/at least one resource/)
    expect(() => AclsCommand.parse([...B, "--add", "--allow-principal", "alice", "--topic", "t"])).toThrow(
      /not of the form Type:name/
    )
    expect(() =>
      AclsCommand.parse([...B, "--add", "--allow-principal", "User:a", "--operation", "Read", "--cluster-mirror", "m"])
    ).toThrow(/READ is not valid for --cluster-mirror/)
    expect(() => AclsCommand.parse([...B, "--add", "--list"])).toThrow(/exactly one of/)
    expect(() =>
      AclsCommand.parse([
        ...B,
        "--add",
        "--allow-principal",
        "User:a",
        "--topic",
        "t",
        "--resource-pattern-type",
        "match"
      ])
    ).toThrow(/literal or prefixed/)
  })

  it("builds the filters of --remove and --list", () => {
    const remove = AclsCommand.parse([...B, "--remove", "--force", "--cluster-mirror", "m1"])
    expect(AclsCommand.filtersToRemove(remove)).toEqual([
      { ...Acl.ANY_FILTER, resourceType: Acl.ResourceType.CLUSTER_MIRROR, resourceName: "m1", patternType: 3 }
    ])
    const list = AclsCommand.parse([...B, "--list", "--principal", "User:a"])
    expect(AclsCommand.filtersToList(list)).toEqual([{ ...Acl.ANY_FILTER, principal: "User:a" }])
  })

  it("prints bindings grouped by resource pattern as kafka-acls does", () => {
    const lines = AclsCommand.formatBindings("Current ACLs for resource", [
      {
        resourceType: Acl.ResourceType.CLUSTER_MIRROR,
        resourceName: "m1",
        patternType: 3,
        principal: "User:a",
        host: "*",
        operation: Acl.AclOperation.ALTER,
        permissionType: Acl.AclPermissionType.ALLOW
      }
    ])
    expect(lines).toEqual([
      "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER_MIRROR, name=m1, patternType=LITERAL)`:",
      " \t(principal=User:a, host=*, operation=ALTER, permissionType=ALLOW) ",
      ""
    ])
  })
})
