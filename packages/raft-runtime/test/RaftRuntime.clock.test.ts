import { RaftConfig } from "@clustermirror/raft"
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as RaftRuntime from "../src/RaftRuntime.js"
import * as RaftTransport from "../src/RaftTransport.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "raft-runtime-clock-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const VOTERS = [1, 2, 3]
const TIMEOUTS = {
  electionTimeoutMs: 100,
  fetchTimeoutMs: 300,
  electionBackoffMaxMs: 100,
  requestTimeoutMs: 300,
  fetchWaitMs: 5
}

/**
 * The wall clock, but every sleep ends a millisecond before its deadline, as the event loop's timers
 * sometimes do: the runtime must still hand the core each timer once the deadline passed.
 */
const early: Clock.Clock = (() => {
  const real = Clock.make()
  return {
    ...real,
    sleep: (d: Duration.Duration) => real.sleep(Duration.millis(Math.max(0, Duration.toMillis(d) - 1)))
  }
})()

describe("RaftRuntime on a clock whose timers fire early", () => {
  it.live("elects a leader and keeps it while idle", () =>
    Effect.gen(function* () {
      const network = RaftTransport.makeMemoryNetwork()
      const runtimes = yield* Effect.forEach(VOTERS, (id) =>
        Effect.tap(
          RaftRuntime.make({
            config: RaftConfig.make(id, VOTERS, TIMEOUTS),
            dataDir: path.join(root, `voter-${id}`),
            transport: RaftTransport.memory(network, id)
          }),
          (runtime) => Effect.sync(() => network.voters.set(id, runtime.handle))
        )
      )
      const views = Effect.forEach(runtimes, (r) => r.leader)
      const agreed = Effect.map(views, (vs) =>
        vs[0]!.leaderId >= 0 && vs.every((v) => v.leaderId === vs[0]!.leaderId && v.leaderEpoch === vs[0]!.leaderEpoch)
          ? vs[0]
          : undefined
      )
      let leader: { leaderId: number; leaderEpoch: number } | undefined
      for (let i = 0; i < 100 && leader === undefined; i++) {
        yield* Effect.sleep("20 millis")
        leader = yield* agreed
      }
      expect(leader).toBeDefined()
      // Idle for five fetch timeouts: followers keep fetching, nobody starts an election.
      yield* Effect.sleep("1500 millis")
      expect(yield* agreed).toEqual(leader)
    }).pipe(Effect.withClock(early), Effect.scoped)
  )
})
