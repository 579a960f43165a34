import { ClientError } from "@clustermirror/client"
import { describe, expect, it } from "@effect/vitest"
import * as MirrorsCommand from "../src/MirrorsCommand.js"

const parse = (line: string) => MirrorsCommand.parse(line.split(" "))

describe("MirrorsCommand.parse", () => {
  it("reads an action with its options", () => {
    expect(parse("--bootstrap-server h:1 --start --mirror m --topics a,b.c,x.* --exclude x.tmp")).toMatchObject({
      action: "start",
      bootstrapServer: "h:1",
      mirror: "m",
      topics: ["a", "b.c", "x.*"],
      exclude: ["x.tmp"]
    })
    expect(parse("--bootstrap-server=h:1 --list")).toMatchObject({ action: "list", mirror: null })
  })

  it("refuses what kafka-cluster-mirrors.sh refuses", () => {
    for (const bad of [
      "--bootstrap-server h:1",
      "--bootstrap-server h:1 --list --delete --mirror m",
      "--list",
      "--bootstrap-server h:1 --create --mirror m",
      "--bootstrap-server h:1 --start --mirror m",
      "--bootstrap-server h:1 --stop --mirror m --topics a --exclude b",
      "--bootstrap-server h:1 --delete",
      "--bootstrap-server h:1 --list --json",
      "--bootstrap-server h:1 --list --nope",
      "--bootstrap-server"
    ])
      expect(() => parse(bad), bad).toThrow(MirrorsCommand.UsageError)
  })
})

describe("MirrorsCommand helpers", () => {
  it("reads properties files", () => {
    const props = MirrorsCommand.parseProperties(
      "# c\nbootstrap.servers = a:1,b:2\n! x\nmirror.source.cluster.id: abc\n\n"
    )
    expect([...props]).toEqual([
      ["bootstrap.servers", "a:1,b:2"],
      ["mirror.source.cluster.id", "abc"]
    ])
  })

  it("tells names from patterns and matches patterns in full", () => {
    expect(["orders", "a.b-c_d", "x.*", "a|b", "[ab]"].map(MirrorsCommand.isLiteralName)).toEqual([
      true,
      true,
      false,
      false,
      false
    ])
    const m = MirrorsCommand.matcher(["x.*", "y"])
    expect(["x", "xa", "y", "yy", "ax"].map(m)).toEqual([true, true, true, false, false])
    expect(MirrorsCommand.matcher([])("x")).toBe(false)
  })

  it("formats the list as fixed columns with '-' for empty values", () => {
    expect(MirrorsCommand.formatList([])).toBe("No mirrors found")
    const long = "m".repeat(40)
    const lines = MirrorsCommand.formatList([
      { mirrorName: long, sourceBootstrap: "s:9092", sourceClusterId: "", topicCount: 2, topicNames: [] }
    ]).split("\n")
    expect(lines[0]).toBe(
      `${"MIRROR".padEnd(30)} ${"TOPICS".padEnd(10)} ${"SOURCE-CLUSTER-ID".padEnd(26)} SOURCE-BOOTSTRAP-SERVER`
    )
    expect(lines[1]).toBe(`${`${"m".repeat(26)}...`.padEnd(30)} ${"2".padEnd(10)} ${"-".padEnd(26)} s:9092`)
  })

  it("names Kafka errors", () => {
    const e = new ClientError.KafkaError({ errorCode: 137, errorMessage: "no such mirror", context: "x" })
    expect(MirrorsCommand.describeError(e)).toBe(`${e.errorName}: no such mirror`)
  })
})
