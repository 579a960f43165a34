import { RequestChannel, SocketServer } from "@clustermirror/network"
import { RaftConfig } from "@clustermirror/raft"
import { Chunk, Effect, Exit, Scope, Stream } from "effect"
import { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as QuorumStateFile from "../src/QuorumStateFile.js"
import * as RaftHandlers from "../src/RaftHandlers.js"
import * as RaftRuntime from "../src/RaftRuntime.js"
import * as RaftTransport from "../src/RaftTransport.js"
import * as RaftWire from "../src/RaftWire.js"

const VOTERS = [1, 2, 3]
// Kafka's fetch timeout (a leader resigns after 1.5 x it without a majority fetching: generous on a
// loaded machine), a shorter election timeout, and a short wait between fetches (no long poll yet).
const TIMEOUTS = {
  clusterId: "raft-runtime-test",
  electionTimeoutMs: 500,
  fetchTimeoutMs: 2000,
  electionBackoffMaxMs: 500,
  requestTimeoutMs: 1000,
  fetchWaitMs: 20
}

interface Voter {
  readonly id: number
  readonly dir: string
  server: SocketServer.SocketServer
  handlers: RequestChannel.Handlers
  runtime: RaftRuntime.RaftRuntime | null
  scope: Scope.CloseableScope | null
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "raft-runtime-"))
const voters: Array<Voter> = []
/** The FetchSnapshot chunks every voter served: who, from which position, how many bytes. */
const served: Array<{ readonly by: number; readonly position: number; readonly bytes: number; readonly size: number }> =
  []
const CHUNK_BYTES = 512
let endpoints: Array<RaftConfig.VoterEndpoint> = []

const listen = async (handlers: RequestChannel.Handlers, port: number) =>
  SocketServer.start({
    host: "127.0.0.1",
    port,
    maxFrameBytes: 16 * 1024 * 1024,
    handle: handlers.frameHandler(() => undefined),
    log: () => undefined
  })

const start = async (v: Voter): Promise<void> => {
  const scope = Effect.runSync(Scope.make())
  const runtime = await Effect.runPromise(
    Effect.gen(function* () {
      const transport = yield* RaftTransport.tcp({
        voters: endpoints,
        nodeId: v.id,
        requestTimeoutMs: TIMEOUTS.requestTimeoutMs
      })
      return yield* RaftRuntime.make({
        config: RaftConfig.make(v.id, VOTERS, TIMEOUTS),
        dataDir: v.dir,
        transport,
        snapshotChunkBytes: CHUNK_BYTES
      })
    }).pipe(Scope.extend(scope))
  )
  const handle: RaftRuntime.RaftRuntime["handle"] = (from, request) =>
    Effect.tap(runtime.handle(from, request), (response) =>
      Effect.sync(() => {
        if (response._tag === "FetchSnapshotResponse")
          served.push({
            by: v.id,
            position: response.position,
            bytes: RaftWire.snapshotChunk(response).length,
            size: response.size
          })
      })
    )
  RaftHandlers.register(v.handlers, { ...runtime, handle }, { voters: VOTERS })
  v.runtime = runtime
  v.scope = scope
}

/** Stops the voter's runtime and its listener, as a process exit would. */
const stop = async (v: Voter): Promise<void> => {
  if (v.scope !== null) await Effect.runPromise(Scope.close(v.scope, Exit.void))
  v.scope = null
  v.runtime = null
  await v.server.close()
}

const run = <A, E>(e: Effect.Effect<A, E>) => Effect.runPromise(e)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const waitFor = async <A>(what: string, ms: number, probe: () => Promise<A | undefined>): Promise<A> => {
  const until = Date.now() + ms
  for (;;) {
    const found = await probe()
    if (found !== undefined) return found
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await sleep(25)
  }
}

const running = () => voters.filter((v) => v.runtime !== null)

/** The voter every running voter agrees leads, in one epoch. */
const agreedLeader = () =>
  waitFor("an agreed leader", 12_000, async () => {
    const views = await Promise.all(running().map((v) => run(v.runtime!.leader)))
    const first = views[0]
    if (first === undefined || first.leaderId < 0) return undefined
    const same = views.every((l) => l.leaderId === first.leaderId && l.leaderEpoch === first.leaderEpoch)
    const leader = voters.find((v) => v.id === first.leaderId)
    return same && leader?.runtime !== null ? leader : undefined
  })

const appendMany = (leader: Voter, from: number, count: number) =>
  run(
    Effect.forEach(
      Array.from({ length: count }, (_, i) => from + i),
      (i) => leader.runtime!.append([Buffer.from(`record-${i}`)]),
      { concurrency: 16 }
    )
  )

/** Every running voter has committed below `hw`; their logs are byte-identical up to it. */
const allCommitted = async (hw: number) => {
  await waitFor(`every voter at high watermark ${hw}`, 12_000, async () => {
    const hws = await Promise.all(running().map((v) => run(v.runtime!.highWatermark)))
    return hws.every((h) => h >= hw) ? true : undefined
  })
  const logs = await Promise.all(running().map((v) => run(v.runtime!.readCommitted(0))))
  const reference = logs[0]!
  for (const bytes of logs) expect(bytes.equals(reference)).toBe(true)
  return reference
}

afterAll(async () => {
  for (const v of voters) await stop(v).catch(() => undefined)
  fs.rmSync(root, { recursive: true, force: true })
})

describe("RaftRuntime on TCP with 3 voters", () => {
  it("elects a leader, commits appends on every voter, survives the leader's loss and a restart", async () => {
    for (const id of VOTERS) {
      const handlers = new RequestChannel.Handlers()
      const server = await listen(handlers, 0)
      voters.push({ id, dir: path.join(root, `voter-${id}`), server, handlers, runtime: null, scope: null })
    }
    endpoints = voters.map((v) => ({ id: v.id, host: "127.0.0.1", port: v.server.port }))
    for (const v of voters) await start(v)

    const leader = await agreedLeader()
    const offsets = await appendMany(leader, 0, 200)
    expect(new Set(offsets).size).toBe(200)
    const firstHw = Math.max(...offsets) + 1
    const committedBytes = await allCommitted(firstHw)

    // A follower's subscription replays every committed record from the start.
    const follower = voters.find((v) => v !== leader)!
    const replayed = await run(
      follower.runtime!.committed.pipe(
        Stream.takeUntil((c) => c.highWatermark >= firstHw),
        Stream.runCollect
      )
    )
    const records = Chunk.toArray(replayed).flatMap((c) => c.records)
    expect(records.map((r) => r.offset)).toEqual(Array.from({ length: firstHw }, (_, i) => i))
    const data = records.flatMap((r) => (r._tag === "Data" ? [r.value.toString()] : []))
    expect(data.sort()).toEqual(Array.from({ length: 200 }, (_, i) => `record-${i}`).sort())

    // The leader goes away: a new one is elected among the two left, and the committed records stay.
    const oldLeader = leader
    const epochBefore = (await run(oldLeader.runtime!.leader)).leaderEpoch
    await stop(oldLeader)
    const newLeader = await agreedLeader()
    expect(newLeader.id).not.toBe(oldLeader.id)
    expect((await run(newLeader.runtime!.leader)).leaderEpoch).toBeGreaterThan(epochBefore)
    const more = await appendMany(newLeader, 200, 20)
    const secondHw = Math.max(...more) + 1
    const afterFailover = await allCommitted(secondHw)
    expect(afterFailover.subarray(0, committedBytes.length).equals(committedBytes)).toBe(true)

    // The old leader restarts from its directory: its quorum state comes back from the file, and it catches up.
    const persisted = await run(QuorumStateFile.make(path.join(oldLeader.dir, "__cluster_metadata-0"), VOTERS).read)
    expect(persisted.leaderEpoch).toBe(epochBefore)
    expect(persisted.leaderId).toBe(oldLeader.id)
    oldLeader.server = await listen(oldLeader.handlers, endpoints.find((e) => e.id === oldLeader.id)!.port)
    await start(oldLeader)
    expect((await run(oldLeader.runtime!.leader)).leaderEpoch).toBeGreaterThanOrEqual(persisted.leaderEpoch)
    const caughtUp = await allCommitted(secondHw)
    expect(caughtUp.subarray(0, afterFailover.length).equals(afterFailover)).toBe(true)
    // The leader's DescribeQuorum sees every voter at the log end once each fetched again.
    const quorum = await waitFor("every voter's fetch at the log end", 8000, async () => {
      const q = await run(newLeader.runtime!.describeQuorum)
      return q.currentVoters.every((v) => v.logEndOffset >= secondHw) ? q : undefined
    })
    expect(quorum.leaderId).toBe(newLeader.id)
    expect(quorum.currentVoters.map((v) => v.replicaId)).toEqual(VOTERS)
    for (const v of quorum.currentVoters) {
      expect(v.lastCaughtUpTimestamp).toBeGreaterThan(0)
      if (v.replicaId !== newLeader.id) expect(v.lastFetchTimestamp).toBeGreaterThan(0)
    }
  }, 45_000)

  it("the leader snapshots; a follower that lost its directory catches up through FetchSnapshot chunks over TCP", async () => {
    const leader = await agreedLeader()
    const hw = await run(leader.runtime!.highWatermark)
    const image = Array.from({ length: 300 }, (_, i) => Buffer.from(`image-${i}`))
    const id = await run(leader.runtime!.snapshot(hw, image))
    expect(id.endOffset).toBe(hw)
    expect(await run(leader.runtime!.logStartOffset)).toBe(hw)

    const lost = voters.find((v) => v !== leader)!
    await stop(lost)
    fs.rmSync(lost.dir, { recursive: true, force: true })
    const more = await appendMany(leader, 300, 10)
    const target = Math.max(...more) + 1
    lost.server = await listen(lost.handlers, endpoints.find((e) => e.id === lost.id)!.port)
    await start(lost)
    await waitFor(`voter ${lost.id} at high watermark ${target}`, 12_000, async () =>
      (await run(lost.runtime!.highWatermark)) >= target ? true : undefined
    )
    const chunks = served.filter((c) => c.by === leader.id && c.bytes > 0)
    const size = chunks[0]?.size ?? 0
    expect(size).toBeGreaterThan(4 * CHUNK_BYTES)
    expect(chunks.length).toBeGreaterThanOrEqual(Math.ceil(size / CHUNK_BYTES))
    expect(chunks.every((c) => c.bytes <= CHUNK_BYTES)).toBe(true)

    const items = await run(
      lost.runtime!.committed.pipe(
        Stream.takeUntil((c) => c.highWatermark >= target),
        Stream.runCollect
      )
    )
    const first = Chunk.toArray(items)[0]
    expect(first?.snapshot?.endOffset).toBe(hw)
    expect(first?.snapshot?.values.map(String)).toEqual(image.map(String))
    const after = Chunk.toArray(items).flatMap((c) => c.records)
    expect(after[0]?.offset).toBe(hw)
    const mine = await run(lost.runtime!.readCommitted(hw))
    const theirs = await run(leader.runtime!.readCommitted(hw))
    expect(mine.subarray(0, theirs.length).equals(theirs.subarray(0, mine.length))).toBe(true)
    expect(RaftWire.recordsOf(mine)).toMatchObject({ _tag: "Right" })
  }, 45_000)
})
