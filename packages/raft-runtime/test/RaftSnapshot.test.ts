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
  OffsetBelowLogStart,
  SnapshotAboveHighWatermark,
  TransportError
} from "../src/RaftRuntimeError.js"
import * as RaftSnapshotStore from "../src/RaftSnapshotStore.js"
import * as RaftTransport from "../src/RaftTransport.js"
import * as RaftWire from "../src/RaftWire.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "raft-snapshot-unit-"))
let n = 0
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const VOTERS = [1, 2, 3]
const logDirOf = (dataDir: string) => path.join(dataDir, "__cluster_metadata-0")
const checkpoints = (dataDir: string) =>
  fs.existsSync(logDirOf(dataDir)) ? fs.readdirSync(logDirOf(dataDir)).filter((f) => f.includes(".checkpoint")) : []

const advanceUntil = <A>(ms: number, probe: Effect.Effect<A | undefined>) =>
  Effect.gen(function* () {
    for (let t = 0; t <= ms; t += 50) {
      const found = yield* probe
      if (found !== undefined) return found
      yield* TestClock.adjust(50)
    }
    return yield* Effect.dieMessage(`nothing after ${ms} ms of simulated time`)
  })

const whileAdvancing = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(effect)
    const exit = yield* advanceUntil(
      10_000,
      Fiber.poll(fiber).pipe(Effect.map((o) => (o._tag === "Some" ? o.value : undefined)))
    )
    return yield* exit
  })

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
