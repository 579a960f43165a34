import { RaftConfig } from "@clustermirror/raft"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Fiber, Scope, Stream, TestClock } from "effect"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as RaftRuntime from "../src/RaftRuntime.js"
import { NotLeader } from "../src/RaftRuntimeError.js"
import * as RaftTransport from "../src/RaftTransport.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "raft-runtime-unit-"))
let n = 0
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const VOTERS = [1, 2, 3]

/** Three voters on an in-process network, each on its own directory, timers on the test clock. */
const quorum = Effect.gen(function* () {
  const network = RaftTransport.makeMemoryNetwork()
  const base = path.join(root, `q${n++}`)
  const runtimes = new Map<number, RaftRuntime.RaftRuntime>()
  for (const id of VOTERS) {
    const runtime = yield* RaftRuntime.make({
      config: RaftConfig.make(id, VOTERS),
      dataDir: path.join(base, `voter-${id}`),
      transport: RaftTransport.memory(network, id)
    })
    network.voters.set(id, runtime.handle)
    runtimes.set(id, runtime)
  }
  return { network, runtimes }
})

/** Moves the test clock in steps of 50 ms until `probe` answers, at most `ms` of simulated time. */
const advanceUntil = <A>(ms: number, probe: Effect.Effect<A | undefined>) =>
  Effect.gen(function* () {
    for (let t = 0; t <= ms; t += 50) {
      const found = yield* probe
      if (found !== undefined) return found
      yield* TestClock.adjust(50)
    }
    return yield* Effect.dieMessage(`nothing after ${ms} ms of simulated time`)
  })

const leaderOf = (runtimes: Map<number, RaftRuntime.RaftRuntime>, among: ReadonlyArray<number> = VOTERS) =>
  Effect.gen(function* () {
    const views = yield* Effect.forEach(among, (id) => runtimes.get(id)!.leader)
    const first = views[0]!
    if (first.leaderId < 0 || !among.includes(first.leaderId)) return undefined
    return views.every((v) => v.leaderId === first.leaderId && v.leaderEpoch === first.leaderEpoch) ? first : undefined
  })

/** Runs `effect` while the test clock moves, until it completes. */
const whileAdvancing = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    const exit = yield* advanceUntil(
      10_000,
      Fiber.poll(fiber).pipe(Effect.map((o) => (o._tag === "Some" ? o.value : undefined)))
    )
    return yield* exit
  })

describe("RaftRuntime", () => {
  it.scoped("elects a leader on the test clock with Kafka's timeouts, commits appends, refuses them elsewhere", () =>
    Effect.gen(function* () {
      const { runtimes } = yield* quorum
      // Nobody is elected before an election timeout (1 s) has passed.
      yield* TestClock.adjust(900)
      expect((yield* runtimes.get(1)!.leader).leaderId).toBe(-1)
      const leader = yield* advanceUntil(5000, leaderOf(runtimes))
      const lead = runtimes.get(leader.leaderId)!
      const follower = runtimes.get(VOTERS.find((id) => id !== leader.leaderId)!)!

      const offsets = yield* whileAdvancing(
        Effect.forEach([0, 1, 2, 3, 4], (i) => lead.append([Buffer.from(`r${i}`), Buffer.from(`s${i}`)]), {
          concurrency: "unbounded"
        })
      )
      // Offset 0 is the leader's LeaderChange record; each append is one batch of two records.
      expect([...offsets].sort((a, b) => a - b)).toEqual([2, 4, 6, 8, 10])
      expect(yield* lead.highWatermark).toBe(11)

      const refused = yield* Effect.flip(follower.append([Buffer.from("nope")]))
      expect(refused).toBeInstanceOf(NotLeader)
      expect(refused.leaderId).toBe(leader.leaderId)
      expect(refused.leaderEpoch).toBe(leader.leaderEpoch)

      yield* advanceUntil(
        5000,
        Effect.map(follower.highWatermark, (hw) => (hw >= 11 ? true : undefined))
      )
      const committed = yield* follower.committed.pipe(
        Stream.takeUntil((c) => c.highWatermark >= 11),
        Stream.runCollect
      )
      const records = Chunk.toArray(committed).flatMap((c) => c.records)
      expect(records.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      expect(records[0]).toMatchObject({ _tag: "LeaderChange", epoch: leader.leaderEpoch })
      expect(records[0]?.value).toMatchObject({ leaderId: leader.leaderId })

      const described = yield* lead.describeQuorum
      expect(described.leaderId).toBe(leader.leaderId)
      expect(described.highWatermark).toBe(11)
      expect(described.currentVoters.map((v) => v.replicaId)).toEqual(VOTERS)
    })
  )

  it.scoped("an isolated leader resigns: its pending append fails with NotLeader, the others elect and go on", () =>
    Effect.gen(function* () {
      const { network, runtimes } = yield* quorum
      const first = yield* advanceUntil(5000, leaderOf(runtimes))
      network.isolated.add(first.leaderId)
      const old = runtimes.get(first.leaderId)!
      const pending = yield* Effect.fork(old.append([Buffer.from("lost?")]))
      const others = VOTERS.filter((id) => id !== first.leaderId)
      const second = yield* advanceUntil(10_000, leaderOf(runtimes, others))
      expect(second.leaderEpoch).toBeGreaterThan(first.leaderEpoch)
      // Kafka's check-quorum: a leader without a majority fetching for 1.5 x fetch.timeout.ms steps down.
      const exit = yield* whileAdvancing(Effect.exit(Fiber.join(pending)))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(exit.cause._tag === "Fail" && exit.cause.error).toBeInstanceOf(NotLeader)
      const lastOffset = yield* whileAdvancing(runtimes.get(second.leaderId)!.append([Buffer.from("after")]))
      expect(lastOffset).toBeGreaterThan(0)

      // Healed, the old leader follows the new one and gets the new records.
      network.isolated.delete(first.leaderId)
      const rejoined = yield* advanceUntil(10_000, leaderOf(runtimes))
      expect(rejoined.leaderId).toBe(second.leaderId)
      yield* advanceUntil(
        10_000,
        Effect.map(old.highWatermark, (hw) => (hw > lastOffset ? true : undefined))
      )
      const everyLog = yield* Effect.forEach(VOTERS, (id) => runtimes.get(id)!.readCommitted(0))
      const common = Math.min(...everyLog.map((b) => b.length))
      expect(common).toBeGreaterThan(0)
      for (const bytes of everyLog)
        expect(bytes.subarray(0, common).equals(everyLog[0]!.subarray(0, common))).toBe(true)
    })
  )

  it.effect("a single voter elects itself, commits on its own flush, and answers NotLeader once stopped", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const network = RaftTransport.makeMemoryNetwork()
      const runtime = yield* RaftRuntime.make({
        config: RaftConfig.make(7, [7]),
        dataDir: path.join(root, `single${n++}`),
        transport: RaftTransport.memory(network, 7)
      }).pipe(Scope.extend(scope))
      yield* advanceUntil(
        3000,
        Effect.map(runtime.leader, (l) => (l.leaderId === 7 ? l : undefined))
      )
      expect(yield* whileAdvancing(runtime.append([Buffer.from("alone")]))).toBe(1)
      yield* Scope.close(scope, Exit.void)
      const refused = yield* Effect.flip(runtime.append([Buffer.from("after stop")]))
      expect(refused).toBeInstanceOf(NotLeader)
      expect(refused.leaderId).toBe(-1)
    })
  )
})
