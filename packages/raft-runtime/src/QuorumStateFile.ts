/**
 * The `quorum-state` file in the metadata log directory, in Kafka's JSON shape (data version 0, the
 * one a static `controller.quorum.voters` quorum writes):
 * `{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1},...],"data_version":0}`.
 * Version 1 files (KIP-853: `votedDirectoryId`, no voter list) are read too. A write is atomic:
 * temporary file, fsync, rename, fsync of the directory. A file that does not parse is an error naming
 * the file; only an absent file starts from the initial state. It must not decide what to persist.
 */
import type { QuorumState } from "@clustermirror/raft"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { QuorumStateFileError } from "./RaftRuntimeError.js"
import { fsyncDir } from "./internal/fsyncDir.js"

export const FILE_NAME = "quorum-state"

export interface QuorumStateFile {
  readonly path: string
  /** The persisted state; the initial state (epoch 0, no vote, no leader) when there is no file yet. */
  readonly read: Effect.Effect<QuorumState.QuorumStateData, QuorumStateFileError>
  /** Writes the state durably before returning. */
  readonly write: (state: QuorumState.QuorumStateData) => Effect.Effect<void, QuorumStateFileError>
}

const INITIAL: QuorumState.QuorumStateData = { leaderEpoch: 0, votedId: -1, leaderId: -1 }

/** The file's JSON text for `state` in a quorum of `voters`. */
export const encode = (state: QuorumState.QuorumStateData, voters: ReadonlyArray<number>): string =>
  JSON.stringify({
    clusterId: "",
    leaderId: state.leaderId,
    leaderEpoch: state.leaderEpoch,
    votedId: state.votedId,
    appliedOffset: 0,
    currentVoters: voters.map((voterId) => ({ voterId })),
    data_version: 0
  })

const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v)

/** Parses the file's text; the reason on failure. */
export const decode = (text: string): QuorumState.QuorumStateData | string => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return `not valid JSON (${e instanceof Error ? e.message : String(e)}): torn or corrupt`
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return "not a JSON object"
  const o = json as Record<string, unknown>
  const version = o.data_version
  if (version !== 0 && version !== 1) return `unknown data_version ${JSON.stringify(version)}`
  for (const key of ["leaderId", "leaderEpoch", "votedId"])
    if (!isInt(o[key])) return `${key} is missing or not an integer`
  const leaderEpoch = o.leaderEpoch as number
  const leaderId = o.leaderId as number
  const votedId = o.votedId as number
  if (leaderEpoch < 0) return `leaderEpoch ${leaderEpoch} is negative`
  if (leaderId < -1 || votedId < -1) return "leaderId and votedId are node ids or -1"
  if (version === 0 && !Array.isArray(o.currentVoters) && o.currentVoters !== null)
    return "currentVoters is missing (data_version 0)"
  return { leaderEpoch, votedId, leaderId }
}

/** The quorum-state file of the log directory `dir` for a quorum of `voters`. */
export const make = (dir: string, voters: ReadonlyArray<number>): QuorumStateFile => {
  const file = path.join(dir, FILE_NAME)
  const fail = (reason: string) => new QuorumStateFileError({ path: file, reason })
  return {
    path: file,
    read: Effect.suspend(() => {
      let text: string
      try {
        text = fs.readFileSync(file, "utf8")
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return Effect.succeed(INITIAL)
        return Effect.fail(fail(`cannot be read: ${String(e)}`))
      }
      const decoded = decode(text)
      return typeof decoded === "string" ? Effect.fail(fail(decoded)) : Effect.succeed(decoded)
    }),
    write: (state) =>
      Effect.try({
        try: () => {
          fs.mkdirSync(dir, { recursive: true })
          const tmp = `${file}.tmp`
          const fd = fs.openSync(tmp, "w")
          try {
            fs.writeSync(fd, encode(state, voters))
            fs.fsyncSync(fd)
          } finally {
            fs.closeSync(fd)
          }
          fs.renameSync(tmp, file)
          fsyncDir(dir)
        },
        catch: (e) => fail(`cannot be written: ${String(e)}`)
      })
  }
}
