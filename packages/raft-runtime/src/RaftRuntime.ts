/**
 * RaftRuntime: one KRaft voter on real I/O. A fiber owns the `RaftNode` core and takes its inputs
 * from one queue (requests from the other voters, their responses, timers, appends, flush
 * completions), one at a time; the outputs of each step are carried out in order before the next
 * input: `PersistQuorumState` is on disk (the `quorum-state` file) before any later `Send` or
 * answer, log writes go to the `RaftLogStore`, a `Flush` is an fsync answered by `FlushCompleted`,
 * timers sleep on Effect's `Clock` (so `TestClock` drives them), requests go out through the
 * `RaftTransport` without holding the loop.
 *
 * For the controller: `append` completes once the high watermark passes the records (or fails with
 * `NotLeader`), `committed` streams the committed records from the start of the log (a hot standby
 * replays it), `leader` and `describeQuorum` read the voter's state. For the network face: `handle`
 * runs an incoming request through the core and returns its answer. Snapshots are not kept yet: a
 * core output asking to write or install one stops the voter with a defect naming it.
 */
import { RaftNode, type RaftConfig, type RaftEvent, type RaftMessages } from "@clustermirror/raft"
import { Clock, Deferred, Effect, Fiber, Queue, Random, Stream } from "effect"
import type { Scope } from "effect"
import type { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as path from "node:path"
import * as QuorumStateFile from "./QuorumStateFile.js"
import * as RaftLogStore from "./RaftLogStore.js"
import { NotLeader, type QuorumStateFileError, RaftLogError } from "./RaftRuntimeError.js"
import type { RaftTransportService } from "./RaftTransport.js"
import * as RaftWire from "./RaftWire.js"

type Record = RaftLogStore.Record
type Event = RaftEvent.RaftEvent<Buffer>

/** Records newly below the high watermark, in offset order. */
export interface Committed {
  readonly records: ReadonlyArray<Record>
  /** The high watermark after them. */
  readonly highWatermark: number
}

/** A voter's line in DescribeQuorum. */
export interface VoterDescription {
  readonly replicaId: number
  readonly logEndOffset: number
  /** -1 when unknown. */
  readonly lastFetchTimestamp: number
  /** The last time the voter's fetch reached the leader's log end; -1 when unknown. */
  readonly lastCaughtUpTimestamp: number
}

export interface QuorumDescription {
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly highWatermark: number
  /** Empty unless this voter is the leader. */
  readonly currentVoters: ReadonlyArray<VoterDescription>
}

export interface RaftRuntime {
  readonly nodeId: number
  /**
   * Appends `values` (framed records, opaque here) as the leader; succeeds with the offset of the
   * last one once it is committed. `NotLeader` when this voter does not lead, or stopped leading
   * before the records committed (they may still commit under the next leader).
   */
  readonly append: (values: ReadonlyArray<Buffer>) => Effect.Effect<number, NotLeader>
  /** Every committed record from offset 0 on, then each new commit as it happens. */
  readonly committed: Stream.Stream<Committed>
  /** The leader this voter knows (-1 when none) and its epoch. */
  readonly leader: Effect.Effect<{ readonly leaderId: number; readonly leaderEpoch: number }>
  readonly highWatermark: Effect.Effect<number>
  /** The log's record batches from `from` up to the high watermark, bytes as stored (whole batches). */
  readonly readCommitted: (from: number) => Effect.Effect<Buffer>
  readonly describeQuorum: Effect.Effect<QuorumDescription>
  /** Runs a request from voter `from` through the core; its answer. */
  readonly handle: (from: number, request: RaftMessages.RaftRequest) => Effect.Effect<RaftWire.Response>
  /** Graceful shutdown of a leader: it resigns and names its successors. */
  readonly resign: Effect.Effect<void>
}

export interface Options {
  readonly config: RaftConfig.RaftConfig
  /** The metadata log directory's parent (`log.dirs`/`metadata.log.dir`): the log is `<dataDir>/__cluster_metadata-0`. */
  readonly dataDir: string
  readonly transport: RaftTransportService
}

type Item =
  | { readonly _tag: "Event"; readonly event: Event }
  | {
      readonly _tag: "Request"
      readonly from: number
      readonly request: RaftMessages.RaftRequest
      readonly reply: Deferred.Deferred<RaftWire.Response>
    }
  | {
      readonly _tag: "Append"
      readonly values: ReadonlyArray<Buffer>
      readonly reply: Deferred.Deferred<number, NotLeader>
    }

const logError = (reason: string) => (cause: unknown) =>
  new RaftLogError({ reason: `${reason}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

/** Starts a voter from its directory; it runs until the scope closes. */
export const make = (options: Options): Effect.Effect<RaftRuntime, QuorumStateFileError | RaftLogError, Scope.Scope> =>
  Effect.gen(function* () {
    const { config, transport } = options
    const logDir = path.join(options.dataDir, "__cluster_metadata-0")
    const log = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          fs.mkdirSync(options.dataDir, { recursive: true })
          return RaftLogStore.openFile(options.dataDir)
        },
        catch: logError(`cannot open the metadata log in ${options.dataDir}`)
      }),
      (l) => Effect.sync(() => l.close())
    )
    const quorumFile = QuorumStateFile.make(logDir, config.voters)
    const persisted = yield* quorumFile.read

    const queue = yield* Queue.unbounded<Item>()
    yield* Effect.addFinalizer(() => Queue.shutdown(queue))
    const scope = yield* Effect.scope
    const timers = new Map<RaftEvent.TimerName, Fiber.RuntimeFiber<void>>()
    const waiters: Array<{ readonly lastOffset: number; readonly reply: Deferred.Deferred<number, NotLeader> }> = []
    const pendingRequests = new Map<RaftMessages.RaftRequest, Deferred.Deferred<RaftWire.Response>>()
    const caughtUp = new Map<number, number>()
    const subscribers = new Set<Queue.Queue<Committed>>()
    let published = 0

    const random = Random.nextIntBetween(0, 0x7fffffff)
    const now0 = yield* Clock.currentTimeMillis
    const init = RaftNode.init<Buffer>(config, persisted, log.view(), now0, yield* random)
    let state = init.state

    const notLeader = () => new NotLeader({ leaderId: RaftNode.leaderId(state), leaderEpoch: RaftNode.epoch(state) })

    const readRecords = (from: number, to: number): ReadonlyArray<Record> => {
      if (to <= from) return []
      const decoded = RaftWire.recordsOf(log.read(from, to))
      if (decoded._tag === "Left") throw new Error(`the metadata log holds unreadable batches: ${decoded.left}`)
      return decoded.right
    }

    /** Publishes the records newly below the high watermark, in one synchronous step. */
    const publish = (hw: number) => {
      if (hw <= published) return
      const records = readRecords(published, hw).filter((r) => r.offset >= published && r.offset < hw)
      published = hw
      const item: Committed = { records, highWatermark: hw }
      for (const q of subscribers) Queue.unsafeOffer(q, item)
    }

    const carry = (o: RaftEvent.RaftOutput<Buffer>, now: number, item: Item | null): Effect.Effect<void> => {
      switch (o._tag) {
        case "PersistQuorumState":
          return Effect.orDie(quorumFile.write(o.state))
        case "Send":
          return Effect.asVoid(
            Effect.forkIn(
              Effect.flatMap(transport.send(o.to, o.message), (response) =>
                Queue.offer(queue, {
                  _tag: "Event",
                  event: { _tag: "Response", from: o.to, request: o.message, response }
                })
              ).pipe(Effect.ignore),
              scope
            )
          )
        case "Respond":
        case "RespondFetchSnapshot":
          return answer(o.request, o.response)
        case "RespondFetch":
          return Effect.suspend(() => answer(o.request, { ...o.response, records: readRecords(o.readFrom, o.readTo) }))
        case "AppendLog":
          return Effect.sync(() => {
            const fetched = RaftWire.fetchedBatches(o.records)
            if (fetched !== undefined) log.appendBatches(fetched, now)
            else log.appendRecords(o.records, now)
          })
        case "TruncateLog":
          return Effect.sync(() => {
            log.truncateTo(o.endOffset)
            // Committed records are never truncated (the core guarantees it); later ones were never published.
            published = Math.min(published, o.endOffset)
          })
        case "Flush":
          return Effect.suspend(() => {
            const durable = log.flush()
            return Queue.offer(queue, {
              _tag: "Event",
              event: { _tag: "FlushCompleted", endOffset: Math.min(o.endOffset, durable) }
            })
          })
        case "CreateSnapshot":
        case "InstallSnapshot":
          return Effect.dieMessage(`raft runtime of voter ${config.nodeId}: ${o._tag} is not supported yet`)
        case "SetTimer":
          return Effect.gen(function* () {
            const previous = timers.get(o.timer)
            if (previous !== undefined) yield* Fiber.interruptFork(previous)
            const fiber = yield* Effect.forkIn(
              Effect.sleep(Math.max(0, o.at - now)).pipe(
                Effect.zipRight(Queue.offer(queue, { _tag: "Event", event: { _tag: "TimerFired", timer: o.timer } })),
                Effect.asVoid
              ),
              scope
            )
            timers.set(o.timer, fiber)
          })
        case "HighWatermark":
          return Effect.suspend(() => {
            publish(o.offset)
            const done = waiters.filter((w) => w.lastOffset < o.offset)
            for (const w of done) waiters.splice(waiters.indexOf(w), 1)
            return Effect.forEach(done, (w) => Deferred.succeed(w.reply, w.lastOffset), { discard: true })
          })
        case "Appended":
          return Effect.sync(() => {
            if (item?._tag === "Append") waiters.push({ lastOffset: o.lastOffset, reply: item.reply })
          })
        case "AppendRejected":
          return item?._tag === "Append"
            ? Deferred.fail(item.reply, new NotLeader({ leaderId: o.leaderId, leaderEpoch: RaftNode.epoch(state) }))
            : Effect.void
        case "Transition":
          if (o.from !== "Leader" || o.to === "Leader") return Effect.void
          return Effect.suspend(() => {
            const lost = waiters.splice(0, waiters.length)
            const error = new NotLeader({ leaderId: o.leaderId, leaderEpoch: o.epoch })
            return Effect.forEach(lost, (w) => Deferred.fail(w.reply, error), { discard: true })
          })
      }
    }

    const answer = (request: RaftMessages.RaftRequest, response: RaftWire.Response): Effect.Effect<void> =>
      Effect.suspend(() => {
        const reply = pendingRequests.get(request)
        if (reply === undefined) return Effect.void
        pendingRequests.delete(request)
        return Deferred.succeed(reply, response)
      })

    const stepWith = (event: Event, item: Item | null) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        if (event._tag === "Request" && event.request._tag === "FetchRequest" && state.role._tag === "Leader")
          if (event.request.fetchOffset >= state.log.endOffset) caughtUp.set(event.from, now)
        const result = RaftNode.step<Buffer>(state, { now, random: yield* random, event })
        state = result.state
        for (const o of result.outputs) yield* carry(o, now, item)
      })

    const run = (item: Item): Effect.Effect<void> => {
      switch (item._tag) {
        case "Event":
          return stepWith(item.event, item)
        case "Request":
          return Effect.gen(function* () {
            pendingRequests.set(item.request, item.reply)
            yield* stepWith({ _tag: "Request", from: item.from, request: item.request }, item)
            // The core answers every request in its step; one it ignored gets no answer here either.
            if (pendingRequests.delete(item.request)) yield* Deferred.interrupt(item.reply)
          })
        case "Append":
          return Effect.gen(function* () {
            yield* stepWith({ _tag: "Append", values: item.values }, item)
            if (!(yield* Deferred.isDone(item.reply)) && !waiters.some((w) => w.reply === item.reply))
              yield* Deferred.fail(item.reply, notLeader())
          })
      }
    }

    for (const o of init.outputs) yield* carry(o, now0, null)
    yield* Effect.forkIn(
      Queue.take(queue).pipe(
        Effect.flatMap(run),
        Effect.forever,
        Effect.tapErrorCause((cause) => Effect.logError(`raft voter ${config.nodeId} stopped`, cause)),
        // A stopped voter answers nothing more: whoever waits on it is released (see `ask`).
        Effect.ensuring(Queue.shutdown(queue))
      ),
      scope
    )

    /** Queues `item` and waits for its answer; a voter that stops first answers with `stopped`. */
    const ask = <A, E>(item: Item, reply: Deferred.Deferred<A, E>, stopped: Effect.Effect<A, E>) =>
      Effect.flatMap(Queue.isShutdown(queue), (down) =>
        down
          ? stopped
          : Effect.raceFirst(
              Queue.offer(queue, item).pipe(Effect.zipRight(Deferred.await(reply))),
              Queue.awaitShutdown(queue).pipe(Effect.zipRight(stopped))
            )
      )

    const committed: Stream.Stream<Committed> = Stream.unwrapScoped(
      Effect.gen(function* () {
        const q = yield* Queue.unbounded<Committed>()
        yield* Effect.sync(() => {
          if (published > 0) Queue.unsafeOffer(q, { records: readRecords(0, published), highWatermark: published })
          subscribers.add(q)
        })
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => subscribers.delete(q)).pipe(Effect.zipRight(Queue.shutdown(q)))
        )
        return Stream.fromQueue(q)
      })
    )

    return {
      nodeId: config.nodeId,
      append: (values) =>
        Effect.flatMap(Deferred.make<number, NotLeader>(), (reply) =>
          ask(
            { _tag: "Append", values, reply },
            reply,
            Effect.suspend(() => Effect.fail(new NotLeader({ leaderId: -1, leaderEpoch: RaftNode.epoch(state) })))
          )
        ),
      committed,
      leader: Effect.sync(() => ({ leaderId: RaftNode.leaderId(state), leaderEpoch: RaftNode.epoch(state) })),
      highWatermark: Effect.sync(() => state.highWatermark),
      readCommitted: (from) => Effect.sync(() => log.read(from, Math.max(from, state.highWatermark))),
      describeQuorum: Effect.map(Clock.currentTimeMillis, (now) => {
        const d = RaftNode.describeQuorum(state)
        return {
          ...d,
          currentVoters: d.currentVoters.map((v) => ({
            ...v,
            lastCaughtUpTimestamp: v.replicaId === config.nodeId ? now : (caughtUp.get(v.replicaId) ?? -1)
          }))
        }
      }),
      handle: (from, request) =>
        Effect.flatMap(Deferred.make<RaftWire.Response>(), (reply) =>
          ask({ _tag: "Request", from, request, reply }, reply, Effect.interrupt)
        ),
      resign: Queue.offer(queue, { _tag: "Event", event: { _tag: "Resign" } }).pipe(Effect.asVoid)
    }
  })
