import { RaftConfig, type RaftMessages } from "@clustermirror/raft"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Exit, Fiber, Scope, Stream, TestClock } from "effect"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll } from "vitest"
import * as RaftRuntime from "../src/RaftRuntime.js"
import {
  InvalidSnapshot,
  NotLeader,
  OffsetBelowLogStart,
  SnapshotAboveHighWatermark,
  TransportError
} from "../src/RaftRuntimeError.js"
import * as RaftSnapshotStore from "../src/RaftSnapshotStore.js"
import * as RaftTransport from "../src/RaftTransport.js"
import * as RaftWire from "../src/RaftWire.js"

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

const logDirOf = (dataDir: string) => path.join(dataDir, "__cluster_metadata-0")
const checkpoints = (dataDir: string) =>
  fs.existsSync(logDirOf(dataDir)) ? fs.readdirSync(logDirOf(dataDir)).filter((f) => f.includes(".checkpoint")) : []

interface Voter {
  readonly id: number
  readonly dataDir: string
  runtime: RaftRuntime.RaftRuntime
  scope: Scope.CloseableScope
}

/** Starts voter `id` on `dataDir` in a scope of its own, so it can be stopped as a process exit would. */
const startVoter = (
  network: RaftTransport.MemoryNetwork,
  id: number,
  dataDir: string,
  voters = VOTERS,
  transport = RaftTransport.memory(network, id)
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const runtime = yield* RaftRuntime.make({
      config: RaftConfig.make(id, voters),
      dataDir,
      transport,
      snapshotChunkBytes: 100
    }).pipe(Scope.extend(scope))
    network.voters.set(id, runtime.handle)
    return { id, dataDir, runtime, scope } satisfies Voter
  })

const stopVoter = (network: RaftTransport.MemoryNetwork, v: Voter) =>
  Effect.gen(function* () {
    network.voters.delete(v.id)
    yield* Scope.close(v.scope, Exit.void)
  })

const leaderAmong = (voters: ReadonlyArray<Voter>) =>
  Effect.gen(function* () {
    const views = yield* Effect.forEach(voters, (v) => v.runtime.leader)
    const first = views[0]!
    if (first.leaderId < 0) return undefined
    return views.every((v) => v.leaderId === first.leaderId && v.leaderEpoch === first.leaderEpoch)
      ? voters.find((v) => v.id === first.leaderId)
      : undefined
  })

const values = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => Buffer.from(`${prefix}-${i}`))

/** Collects a voter's committed stream until its high watermark reaches `hw`. */
const committedUntil = (runtime: RaftRuntime.RaftRuntime, hw: number) =>
  runtime.committed.pipe(
    Stream.takeUntil((c) => c.highWatermark >= hw),
    Stream.runCollect,
    Effect.map(Chunk.toArray)
  )

describe("RaftRuntime snapshots", () => {
  it.scoped(
    "the leader snapshots; a follower restarted on an empty directory fetches the snapshot in chunks and catches up",
    () =>
      Effect.gen(function* () {
        const network = RaftTransport.makeMemoryNetwork()
        const base = path.join(root, `q${n++}`)
        const voters: Array<Voter> = []
        for (const id of VOTERS) voters.push(yield* startVoter(network, id, path.join(base, `voter-${id}`)))
        const leader = yield* advanceUntil(5000, leaderAmong(voters))
        for (let i = 0; i < 4; i++) yield* whileAdvancing(leader.runtime.append(values(`r${i}`, 3)))
        const hw = yield* leader.runtime.highWatermark
        expect(hw).toBe(13)

        // Only committed state is snapshotted, and only at the end of an append.
        const above = yield* Effect.flip(leader.runtime.snapshot(hw + 1, []))
        expect(above).toBeInstanceOf(SnapshotAboveHighWatermark)
        expect(above).toMatchObject({ endOffset: 14, highWatermark: 13 })
        const inside = yield* Effect.flip(leader.runtime.snapshot(hw - 1, []))
        expect(inside).toBeInstanceOf(InvalidSnapshot)

        const image = values("image", 40)
        const id = yield* leader.runtime.snapshot(hw, image)
        expect(id).toEqual({ endOffset: 13, epoch: (yield* leader.runtime.leader).leaderEpoch })
        expect(checkpoints(leader.dataDir)).toEqual([RaftSnapshotStore.fileName(id)])
        expect(RaftSnapshotStore.fileName(id)).toBe(
          `00000000000000000013-${String(id.epoch).padStart(10, "0")}.checkpoint`
        )
        expect(yield* leader.runtime.logStartOffset).toBe(13)
        const below = yield* Effect.flip(leader.runtime.readCommitted(0))
        expect(below).toBeInstanceOf(OffsetBelowLogStart)
        expect(below).toMatchObject({ offset: 0, logStartOffset: 13, snapshotId: id })
        const again = yield* Effect.flip(leader.runtime.snapshot(hw, image))
        expect(again).toBeInstanceOf(InvalidSnapshot)

        // A follower stops; its directory is lost; the quorum goes on without it.
        const lost = voters.find((v) => v.id !== leader.id)!
        yield* stopVoter(network, lost)
        fs.rmSync(lost.dataDir, { recursive: true, force: true })
        const after = yield* whileAdvancing(leader.runtime.append(values("after", 2)))
        expect(after).toBe(14)

        // Every FetchSnapshot the leader answers, with its position and chunk.
        const served: Array<{ position: number; bytes: number; size: number }> = []
        network.voters.set(leader.id, (from, request) =>
          Effect.tap(leader.runtime.handle(from, request), (response) =>
            Effect.sync(() => {
              if (response._tag === "FetchSnapshotResponse")
                served.push({
                  position: response.position,
                  bytes: RaftWire.snapshotChunk(response).length,
                  size: response.size
                })
            })
          )
        )
        // The third chunk's request is lost once: the transfer goes on from there, not from the start.
        const memory = RaftTransport.memory(network, lost.id)
        let lose = true
        const flaky: RaftTransport.RaftTransportService = {
          send: (to, request) => {
            if (request._tag === "FetchSnapshotRequest" && request.position === 200 && lose) {
              lose = false
              return Effect.fail(new TransportError({ to, reason: "connection lost" }))
            }
            return memory.send(to, request)
          }
        }
        const back = yield* startVoter(network, lost.id, lost.dataDir, VOTERS, flaky)
        voters.splice(voters.indexOf(lost), 1, back)
        yield* advanceUntil(
          10_000,
          Effect.map(back.runtime.highWatermark, (h) => (h >= 15 ? h : undefined))
        )
        const size = fs.statSync(path.join(logDirOf(leader.dataDir), RaftSnapshotStore.fileName(id))).size
        expect(served.length).toBeGreaterThanOrEqual(Math.ceil(size / 100))
        expect(served.every((s) => s.bytes <= 100 && s.size === size)).toBe(true)
        expect(lose).toBe(false)
        const positions = served.map((s) => s.position)
        expect(positions.slice(0, 3)).toEqual([0, 100, 200])
        // Every chunk was served once: nothing was fetched again from the start.
        expect(new Set(positions).size).toBe(positions.length)

        // The follower's snapshot file is the leader's, byte for byte, and its log starts after it.
        expect(checkpoints(back.dataDir)).toEqual([RaftSnapshotStore.fileName(id)])
        const file = RaftSnapshotStore.fileName(id)
        expect(
          fs
            .readFileSync(path.join(logDirOf(back.dataDir), file))
            .equals(fs.readFileSync(path.join(logDirOf(leader.dataDir), file)))
        ).toBe(true)
        expect(yield* back.runtime.logStartOffset).toBe(13)

        // Its state machine starts from the snapshot and continues with the records after it.
        const items = yield* committedUntil(back.runtime, 15)
        expect(items[0]?.snapshot?.endOffset).toBe(13)
        expect(items[0]?.snapshot?.values.map(String)).toEqual(image.map(String))
        const records = items.flatMap((c) => c.records)
        expect(records.map((r) => r.offset)).toEqual([13, 14])
        expect(records.filter((r) => r._tag === "Data").map((r) => String(r.value))).toEqual(["after-0", "after-1"])
        expect((yield* back.runtime.readCommitted(13)).equals(yield* leader.runtime.readCommitted(13))).toBe(true)
        for (const v of voters) yield* stopVoter(network, v)
      })
  )

  it.scoped("a follower subscribed while it installs a snapshot gets the snapshot on its stream", () =>
    Effect.gen(function* () {
      const network = RaftTransport.makeMemoryNetwork()
      const base = path.join(root, `q${n++}`)
      const voters: Array<Voter> = []
      for (const id of VOTERS) voters.push(yield* startVoter(network, id, path.join(base, `voter-${id}`)))
      const leader = yield* advanceUntil(5000, leaderAmong(voters))
      const behind = voters.find((v) => v.id !== leader.id)!
      network.isolated.add(behind.id)
      // Isolated, the follower stays at what it had; it is subscribed all along.
      const seen = yield* Effect.fork(committedUntil(behind.runtime, 9))
      const others = voters.filter((v) => v !== behind)
      yield* advanceUntil(5000, leaderAmong(others))
      yield* whileAdvancing(leader.runtime.append(values("a", 4)))
      yield* whileAdvancing(leader.runtime.append(values("b", 4)))
      const hw = yield* leader.runtime.highWatermark
      expect(hw).toBe(9)
      yield* leader.runtime.snapshot(hw, values("state", 3))
      network.isolated.delete(behind.id)
      const items = yield* whileAdvancing(Fiber.join(seen))
      const installed = items.find((c) => c.snapshot !== undefined)
      expect(installed?.snapshot).toMatchObject({ endOffset: 9 })
      expect(installed?.snapshot?.values.map(String)).toEqual(["state-0", "state-1", "state-2"])
      expect(yield* behind.runtime.logStartOffset).toBe(9)
      for (const v of voters) yield* stopVoter(network, v)
    })
  )

  it.effect(
    "a restarted voter starts from its snapshot; torn part files are deleted; a damaged snapshot is refused",
    () =>
      Effect.gen(function* () {
        const network = RaftTransport.makeMemoryNetwork()
        const dataDir = path.join(root, `single${n++}`)
        const first = yield* startVoter(network, 7, dataDir, [7])
        yield* advanceUntil(
          3000,
          Effect.map(first.runtime.leader, (l) => (l.leaderId === 7 ? l : undefined))
        )
        yield* whileAdvancing(first.runtime.append(values("x", 5)))
        const id = yield* first.runtime.snapshot(yield* first.runtime.highWatermark, values("image", 20))
        expect(id.endOffset).toBe(6)
        // FetchSnapshot is answered from the file at the asked position, at most MaxBytes (or the chunk size).
        const file = path.join(logDirOf(dataDir), RaftSnapshotStore.fileName(id))
        const whole = fs.readFileSync(file)
        const fetchAt = (position: number, maxBytes: number, snapshotId = id) =>
          first.runtime.handle(
            8,
            RaftWire.withSnapshotMaxBytes(
              {
                _tag: "FetchSnapshotRequest",
                clusterId: "clustermirror",
                replicaId: 8,
                currentLeaderEpoch: id.epoch,
                snapshotId,
                position
              },
              maxBytes
            )
          )
        const middle = yield* fetchAt(10, 7)
        expect(middle).toMatchObject({ _tag: "FetchSnapshotResponse", errorCode: 0, size: whole.length, position: 10 })
        if (middle._tag === "FetchSnapshotResponse")
          expect(RaftWire.snapshotChunk(middle).equals(whole.subarray(10, 17))).toBe(true)
        expect(whole.length).toBeGreaterThan(100)
        const capped = yield* fetchAt(0, 1 << 20)
        expect(capped._tag).toBe("FetchSnapshotResponse")
        if (capped._tag === "FetchSnapshotResponse") expect(RaftWire.snapshotChunk(capped).length).toBe(100)
        // POSITION_OUT_OF_RANGE past the end, SNAPSHOT_NOT_FOUND for another snapshot.
        expect(yield* fetchAt(whole.length + 1, 10)).toMatchObject({ errorCode: 99, position: whole.length + 1 })
        expect(yield* fetchAt(0, 10, { endOffset: 3, epoch: id.epoch })).toMatchObject({ errorCode: 98 })

        const last = yield* whileAdvancing(first.runtime.append(values("y", 2)))
        expect(last).toBe(7)
        yield* stopVoter(network, first)

        // A crash while a snapshot was being written or fetched leaves a part file.
        const torn = path.join(
          logDirOf(dataDir),
          `${RaftSnapshotStore.fileName({ endOffset: 8, epoch: id.epoch })}.part`
        )
        fs.writeFileSync(torn, Buffer.from("torn"))
        const second = yield* startVoter(network, 7, dataDir, [7])
        expect(fs.existsSync(torn)).toBe(false)
        expect(yield* second.runtime.latestSnapshot).toEqual(id)
        expect(yield* second.runtime.logStartOffset).toBe(6)
        const items = yield* whileAdvancing(committedUntil(second.runtime, 8))
        expect(items[0]?.snapshot).toMatchObject({ endOffset: 6, epoch: id.epoch })
        expect(items[0]?.snapshot?.values.map(String)).toEqual(values("image", 20).map(String))
        expect(
          items
            .flatMap((c) => c.records)
            .filter((r): r is Extract<RaftMessages.LogRecord<Buffer>, { _tag: "Data" }> => r._tag === "Data")
            .map((r) => String(r.value))
        ).toEqual(["y-0", "y-1"])
        expect(yield* Effect.flip(second.runtime.readCommitted(5))).toBeInstanceOf(OffsetBelowLogStart)
        yield* stopVoter(network, second)

        // One flipped byte in the snapshot: the voter refuses to start, naming the file.
        const bytes = fs.readFileSync(file)
        bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff
        fs.writeFileSync(file, bytes)
        const refused = yield* Effect.flip(startVoter(network, 7, dataDir, [7]))
        expect(refused.message).toContain(file)
        expect(refused.message).toContain("CRC")
        expect(fs.existsSync(file)).toBe(true)
      })
  )
})
