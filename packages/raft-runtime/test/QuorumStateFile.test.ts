import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as QuorumStateFile from "../src/QuorumStateFile.js"
import { QuorumStateFileError } from "../src/RaftRuntimeError.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "quorum-state-"))
let n = 0
const dir = () => path.join(root, `d${n++}`)
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const failure = <A>(e: Effect.Effect<A, QuorumStateFileError>) =>
  Effect.map(Effect.exit(e), (exit) => {
    if (Exit.isSuccess(exit)) throw new Error("expected a failure")
    const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    expect(error).toBeInstanceOf(QuorumStateFileError)
    return error as QuorumStateFileError
  })

describe("QuorumStateFile", () => {
  it.effect("starts from epoch 0, no vote, no leader when there is no file", () =>
    Effect.gen(function* () {
      const file = QuorumStateFile.make(dir(), [1, 2, 3])
      expect(yield* file.read).toEqual({ leaderEpoch: 0, votedId: -1, leaderId: -1 })
    })
  )

  it.effect("writes Kafka's JSON (data version 0) and reads it back", () =>
    Effect.gen(function* () {
      const d = dir()
      const file = QuorumStateFile.make(d, [1, 2, 3])
      yield* file.write({ leaderEpoch: 7, votedId: 2, leaderId: 2 })
      expect(fs.readFileSync(path.join(d, "quorum-state"), "utf8")).toBe(
        '{"clusterId":"","leaderId":2,"leaderEpoch":7,"votedId":2,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
      )
      expect(fs.readdirSync(d)).toEqual(["quorum-state"])
      expect(yield* QuorumStateFile.make(d, [1, 2, 3]).read).toEqual({ leaderEpoch: 7, votedId: 2, leaderId: 2 })
      yield* file.write({ leaderEpoch: 8, votedId: -1, leaderId: -1 })
      expect(yield* file.read).toEqual({ leaderEpoch: 8, votedId: -1, leaderId: -1 })
    })
  )

  it.effect("reads a data version 1 file (KIP-853 voters)", () =>
    Effect.gen(function* () {
      const d = dir()
      fs.mkdirSync(d, { recursive: true })
      fs.writeFileSync(
        path.join(d, "quorum-state"),
        '{"leaderId":3,"leaderEpoch":12,"votedId":3,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
      )
      expect(yield* QuorumStateFile.make(d, [1, 2, 3]).read).toEqual({ leaderEpoch: 12, votedId: 3, leaderId: 3 })
    })
  )

  it.effect("refuses a torn file, naming it, and leaves it in place", () =>
    Effect.gen(function* () {
      const d = dir()
      const file = QuorumStateFile.make(d, [1, 2, 3])
      yield* file.write({ leaderEpoch: 4, votedId: 1, leaderId: -1 })
      const full = fs.readFileSync(file.path, "utf8")
      fs.writeFileSync(file.path, full.slice(0, 40))
      const error = yield* failure(file.read)
      expect(error.path).toBe(file.path)
      expect(error.message).toContain(file.path)
      expect(error.message).toContain("torn or corrupt")
      expect(fs.readFileSync(file.path, "utf8")).toBe(full.slice(0, 40))
    })
  )

  it.effect("refuses an empty file, an unknown version and missing or bad fields", () =>
    Effect.gen(function* () {
      const d = dir()
      fs.mkdirSync(d, { recursive: true })
      const file = QuorumStateFile.make(d, [1])
      const cases: Array<[string, string]> = [
        ["", "torn or corrupt"],
        ['{"leaderId":1,"leaderEpoch":1,"votedId":-1,"currentVoters":[],"data_version":2}', "unknown data_version 2"],
        ['{"leaderId":1,"votedId":-1,"currentVoters":[],"data_version":0}', "leaderEpoch is missing"],
        ['{"leaderId":1,"leaderEpoch":-3,"votedId":-1,"currentVoters":[],"data_version":0}', "negative"],
        ['{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":0}', "currentVoters is missing"],
        ["[1,2]", "not a JSON object"]
      ]
      for (const [text, reason] of cases) {
        fs.writeFileSync(file.path, text)
        expect((yield* failure(file.read)).reason).toContain(reason)
      }
    })
  )

  it.effect("a write interrupted before its rename leaves the previous state readable", () =>
    Effect.gen(function* () {
      const d = dir()
      const file = QuorumStateFile.make(d, [1, 2, 3])
      yield* file.write({ leaderEpoch: 5, votedId: 1, leaderId: 1 })
      fs.writeFileSync(`${file.path}.tmp`, '{"leaderId":2,"leaderE')
      expect(yield* file.read).toEqual({ leaderEpoch: 5, votedId: 1, leaderId: 1 })
      yield* file.write({ leaderEpoch: 6, votedId: -1, leaderId: 2 })
      expect(yield* file.read).toEqual({ leaderEpoch: 6, votedId: -1, leaderId: 2 })
      expect(fs.existsSync(`${file.path}.tmp`)).toBe(false)
    })
  )
})
