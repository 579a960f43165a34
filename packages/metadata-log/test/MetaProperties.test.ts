import { Uuid } from "@clustermirror/protocol"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as MetaProperties from "../src/MetaProperties.js"

const made: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "meta-properties-"))
  made.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

describe("MetaProperties.loadOrCreate", () => {
  it.effect("creates a directory id once and keeps it across loads", () =>
    Effect.gen(function* () {
      const dir = path.join(tempDir(), "controller")
      const first = yield* MetaProperties.loadOrCreate(dir, "cluster-a", 1000)
      expect(Uuid.isValid(first.directoryId)).toBe(true)
      expect(Uuid.RESERVED.has(first.directoryId)).toBe(false)
      const again = yield* MetaProperties.loadOrCreate(dir, "cluster-a", 1000)
      expect(again).toEqual(first)
      const text = fs.readFileSync(path.join(dir, MetaProperties.FILE_NAME), "utf8")
      expect(MetaProperties.parse(text)).toEqual(
        new Map([
          ["version", "1"],
          ["cluster.id", "cluster-a"],
          ["node.id", "1000"],
          ["directory.id", first.directoryId]
        ])
      )
    })
  )

  it.effect("adds a directory id to a file without one, keeping its cluster and node", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      fs.writeFileSync(path.join(dir, MetaProperties.FILE_NAME), "#comment\nversion=1\ncluster.id=c\nnode.id=3\n")
      const props = yield* MetaProperties.loadOrCreate(dir, "c", 3)
      const stored = MetaProperties.parse(fs.readFileSync(path.join(dir, MetaProperties.FILE_NAME), "utf8"))
      expect(stored.get("directory.id")).toBe(props.directoryId)
      expect(stored.get("cluster.id")).toBe("c")
    })
  )

  it.effect("refuses another cluster's or node's file and an invalid directory id", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      yield* MetaProperties.loadOrCreate(dir, "c", 3)
      const otherCluster = yield* Effect.either(MetaProperties.loadOrCreate(dir, "d", 3))
      expect(Either.isLeft(otherCluster) && otherCluster.left.message).toContain("has cluster.id c, not d")
      const otherNode = yield* Effect.either(MetaProperties.loadOrCreate(dir, "c", 4))
      expect(Either.isLeft(otherNode) && otherNode.left.message).toContain("has node.id 3, not 4")
      const bad = tempDir()
      fs.writeFileSync(path.join(bad, MetaProperties.FILE_NAME), `cluster.id=c\ndirectory.id=${Uuid.ZERO}\n`)
      const invalid = yield* Effect.either(MetaProperties.loadOrCreate(bad, "c", 3))
      expect(Either.isLeft(invalid) && invalid.left._tag).toBe("MetaPropertiesError")
    })
  )
})
