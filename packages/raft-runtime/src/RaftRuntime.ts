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
 * `NotLeader`), `committed` streams the latest snapshot and the committed records after it (a hot
 * standby replays it), `leader` and `describeQuorum` read the voter's state. For the network face:
 * `handle` runs an incoming request through the core and returns its answer.
 *
 * Snapshots (KIP-630): `snapshot` writes the state machine's image at a committed offset as a
 * snapshot file (`RaftSnapshotStore`), then the core's `CreateSnapshot` moves the log start up to
 * it. The leader answers FetchSnapshot with chunks of its latest snapshot file (the core checks the
 * leader, the epoch and the snapshot id; the runtime serves `Position` and `MaxBytes`). A follower
 * sent to a snapshot fetches it chunk by chunk into a `.part` file, outside the loop; once `Size` is
 * reached and the file checked, the core gets the whole snapshot as one answer, and its
 * `InstallSnapshot` renames the file, replaces the log and hands the snapshot to the subscribers. A
 * transfer goes on across the core's request timeouts and failed chunks (see `Transfer`).
 */
import { RecordBatch } from "@clustermirror/protocol"
import { RaftError, RaftLog, RaftNode, type RaftConfig, type RaftEvent, type RaftMessages } from "@clustermirror/raft"
import { Clock, Deferred, Effect, Either, Fiber, Queue, Random, Stream } from "effect"
import type { Scope } from "effect"
import type { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as path from "node:path"
import * as QuorumStateFile from "./QuorumStateFile.js"
import * as RaftLogStore from "./RaftLogStore.js"
import {
  InvalidSnapshot,
  NotLeader,
  OffsetBelowLogStart,
  type QuorumStateFileError,
  RaftLogError,
  SnapshotAboveHighWatermark
} from "./RaftRuntimeError.js"
import * as RaftSnapshotStore from "./RaftSnapshotStore.js"
import type { RaftTransportService } from "./RaftTransport.js"
import * as RaftWire from "./RaftWire.js"

type Record = RaftLogStore.Record
type Event = RaftEvent.RaftEvent<Buffer>

/** A snapshot: the state machine's records describing its state at committed offset `endOffset`. */
export interface CommittedSnapshot {
  readonly endOffset: number
  /** The epoch of the record before `endOffset`. */
  readonly epoch: number
  readonly values: ReadonlyArray<Buffer>
}

/** Records newly below the high watermark, in offset order. */
export interface Committed {
  /**
   * Set on a subscriber's first item when the log starts at a snapshot, and when this voter installs
   * a snapshot from the leader: the state machine resets to it, and `records` follow it.
   */
  readonly snapshot?: CommittedSnapshot
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
  /**
   * The latest snapshot (if any) and every committed record after it, then each new commit as it
   * happens, and any snapshot installed from the leader.
   */
  readonly committed: Stream.Stream<Committed>
  /** The leader this voter knows (-1 when none) and its epoch. */
  readonly leader: Effect.Effect<{ readonly leaderId: number; readonly leaderEpoch: number }>
  readonly highWatermark: Effect.Effect<number>
  /**
   * The log's record batches from `from` up to the high watermark, bytes as stored (whole batches).
   * `OffsetBelowLogStart` when `from` is below the log start (those records are in the snapshot).
   */
  readonly readCommitted: (from: number) => Effect.Effect<Buffer, OffsetBelowLogStart>
  readonly describeQuorum: Effect.Effect<QuorumDescription>
  /** Runs a request from voter `from` through the core; its answer. */
  readonly handle: (from: number, request: RaftMessages.RaftRequest) => Effect.Effect<RaftWire.Response>
  /** Graceful shutdown of a leader: it resigns and names its successors. */
  readonly resign: Effect.Effect<void>
  /**
   * Writes `values` (the state machine's records describing its state at committed offset
   * `endOffset`, an image rather than log records) as a snapshot and deletes the log below it; its
   * id once durable. `endOffset` must be at most the high watermark, past the log start and on a
   * batch boundary (the end of an append).
   */
  readonly snapshot: (
    endOffset: number,
    values: ReadonlyArray<Buffer>
  ) => Effect.Effect<RaftMessages.SnapshotId, SnapshotAboveHighWatermark | InvalidSnapshot>
  /** The log start offset: the end of the latest snapshot, or 0. */
  readonly logStartOffset: Effect.Effect<number>
  /** The latest snapshot's id, or null. */
  readonly latestSnapshot: Effect.Effect<RaftMessages.SnapshotId | null>
}

export interface Options {
  readonly config: RaftConfig.RaftConfig
  /** The metadata log directory's parent (`log.dirs`/`metadata.log.dir`): the log is `<dataDir>/__cluster_metadata-0`. */
  readonly dataDir: string
  readonly transport: RaftTransportService
  /** The most snapshot bytes one FetchSnapshot asks for or answers (Kafka fetches 8 MiB at a time). */
  readonly snapshotChunkBytes?: number
}

export const DEFAULT_SNAPSHOT_CHUNK_BYTES = 8 * 1024 * 1024

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
  | {
      readonly _tag: "Snapshot"
      readonly endOffset: number
      readonly values: ReadonlyArray<Buffer>
      readonly reply: Deferred.Deferred<RaftMessages.SnapshotId, SnapshotAboveHighWatermark | InvalidSnapshot>
    }
  /** A snapshot fetched whole: the core gets it as the answer to its latest FetchSnapshot. */
  | { readonly _tag: "SnapshotFetched"; readonly transfer: Transfer }

/**
 * A snapshot being fetched from a leader, chunk by chunk. It outlives the core's request timeout:
 * the core asks again (a Fetch sends it back to the snapshot) and the transfer goes on from where it
 * is, or answers at once when it is complete; a failed chunk is asked again from its position.
 */
interface Transfer {
  readonly leaderId: number
  readonly snapshotId: RaftMessages.SnapshotId
  readonly receiving: RaftSnapshotStore.Receiving
  /** The core's latest FetchSnapshot for it: the one the whole snapshot answers. */
  request: RaftMessages.FetchSnapshotRequest
  position: number
  fiber: Fiber.RuntimeFiber<void> | null
  /** Set once complete and checked. */
  complete: {
    readonly response: RaftMessages.FetchSnapshotResponse<Buffer>
    readonly values: ReadonlyArray<Buffer>
  } | null
}

/**
 * Sleeps until the clock reads `at` or later. A timer of the event loop may fire a millisecond before
 * the wall clock reaches its deadline, and the core ignores a timer that fires before its deadline (it
 * is then gone): a follower would stop fetching until its fetch timeout made it start an election.
 */
const sleepUntil = (at: number): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    now >= at ? Effect.void : Effect.zipRight(Effect.sleep(at - now), sleepUntil(at))
  )

const logError = (reason: string) => (cause: unknown) =>
  new RaftLogError({ reason: `${reason}: ${cause instanceof Error ? cause.message : String(cause)}`, cause })

/** Starts a voter from its directory; it runs until the scope closes. */
export const make = (options: Options): Effect.Effect<RaftRuntime, QuorumStateFileError | RaftLogError, Scope.Scope> =>
  Effect.gen(function* () {
    const { config, transport } = options
    const chunkBytes = options.snapshotChunkBytes ?? DEFAULT_SNAPSHOT_CHUNK_BYTES
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1)
      return yield* Effect.dieMessage(`snapshotChunkBytes must be a positive integer, not ${chunkBytes}`)
    const logDir = path.join(options.dataDir, "__cluster_metadata-0")
    const snapshots = yield* Effect.try({
      try: () => RaftSnapshotStore.open(logDir),
      catch: logError(`cannot open the snapshots in ${logDir}`)
    })
    const log = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          fs.mkdirSync(options.dataDir, { recursive: true })
          return RaftLogStore.openFile(options.dataDir, snapshots.latest()?.id ?? null)
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
    // Everything below the snapshot is committed (only committed state is snapshotted).
    let published = snapshots.latest()?.id.endOffset ?? 0
    /** The snapshot being fetched from the leader, one at a time. */
    let transfer: Transfer | null = null
    /** The complete transfer the core is being told about (its `InstallSnapshot` installs it). */
    let installing: Transfer | null = null
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        transfer?.receiving.discard()
        transfer = null
      })
    )
    /** The positions and sizes of FetchSnapshot requests being answered (the core sees position 0). */
    const snapshotReads = new Map<RaftMessages.RaftRequest, { readonly position: number; readonly maxBytes: number }>()

    const random = Random.nextIntBetween(0, 0x7fffffff)
    const now0 = yield* Clock.currentTimeMillis
    const init = RaftNode.init<Buffer>(config, persisted, log.view(), now0, yield* random)
    let state = init.state

    const notLeader = () => new NotLeader({ leaderId: RaftNode.leaderId(state), leaderEpoch: RaftNode.epoch(state) })

    const readRecords = (from: number, to: number): ReadonlyArray<Record> => {
      if (to <= from) return []
      const decoded = RaftWire.recordsOf(log.read(Math.max(from, log.logStartOffset()), to))
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

    /** Fetches the rest of `t` from its leader; the loop hears of the whole snapshot or of a refusal. */
    const fetchSnapshot = (t: Transfer): Effect.Effect<void> => {
      const to = t.leaderId
      const failed = (reason: string) =>
        Effect.fail(new RaftLogError({ reason: `FetchSnapshot ${t.snapshotId.endOffset} from ${to}: ${reason}` }))
      const dropped = () =>
        Effect.sync(() => {
          t.receiving.discard()
          if (transfer === t) transfer = null
        })
      return Effect.gen(function* () {
        for (;;) {
          const chunkRequest = RaftWire.withSnapshotMaxBytes({ ...t.request, position: t.position }, chunkBytes)
          const response = yield* transport.send(to, chunkRequest)
          if (response._tag !== "FetchSnapshotResponse") return yield* failed(`answered ${response._tag}`)
          if (response.errorCode !== RaftError.ErrorCode.NONE) {
            // The core learns of the refusal (and of a new leader) as the answer to its request.
            yield* dropped()
            return yield* Queue.offer(queue, {
              _tag: "Event",
              event: { _tag: "Response", from: to, request: t.request, response: { ...response, position: 0 } }
            })
          }
          if (response.position !== t.position)
            return yield* failed(`answered position ${response.position}, not ${t.position}`)
          const chunk = RaftWire.snapshotChunk(response)
          if (t.position + chunk.length > response.size)
            return yield* failed(`${t.position + chunk.length} bytes of a snapshot of ${response.size}`)
          t.receiving.write(t.position, chunk)
          t.position += chunk.length
          if (t.position === response.size) {
            const values = t.receiving.finish()
            if (Either.isLeft(values)) {
              yield* dropped()
              return yield* failed(`the fetched file cannot be installed: ${values.left}`)
            }
            t.complete = { response, values: values.right }
            return yield* Queue.offer(queue, { _tag: "SnapshotFetched", transfer: t })
          }
          if (chunk.length === 0) return yield* failed(`an empty chunk at ${t.position} of ${response.size}`)
        }
      }).pipe(
        // A failed chunk is asked again when the core asks again (its request timeout).
        Effect.catchAll((e) => Effect.logWarning(e.message))
      )
    }

    /** The core asks for a snapshot: the transfer of it starts, goes on, or answers at once. */
    const askSnapshot = (to: number, request: RaftMessages.FetchSnapshotRequest) =>
      Effect.gen(function* () {
        const same = (t: Transfer) =>
          t.leaderId === to &&
          t.snapshotId.endOffset === request.snapshotId.endOffset &&
          t.snapshotId.epoch === request.snapshotId.epoch
        if (transfer !== null && !same(transfer)) {
          const old = transfer
          transfer = null
          if (old.fiber !== null) yield* Fiber.interrupt(old.fiber)
          old.receiving.discard()
        }
        if (transfer === null)
          transfer = {
            leaderId: to,
            snapshotId: request.snapshotId,
            receiving: snapshots.receive(request.snapshotId),
            request,
            position: 0,
            fiber: null,
            complete: null
          }
        const t = transfer
        t.request = request
        if (t.complete !== null) return yield* Queue.offer(queue, { _tag: "SnapshotFetched", transfer: t })
        const running = t.fiber !== null && (yield* Fiber.poll(t.fiber))._tag === "None"
        if (!running) t.fiber = yield* Effect.forkIn(fetchSnapshot(t), scope)
      })

    const carry = (o: RaftEvent.RaftOutput<Buffer>, now: number, item: Item | null): Effect.Effect<void> => {
      switch (o._tag) {
        case "PersistQuorumState":
          return Effect.orDie(quorumFile.write(o.state))
        case "Send":
          if (o.message._tag === "FetchSnapshotRequest") return Effect.asVoid(askSnapshot(o.to, o.message))
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
          return answer(o.request, o.response)
        case "RespondFetchSnapshot":
          return Effect.suspend(() => {
            const read = snapshotReads.get(o.request)
            const latest = snapshots.latest()
            if (o.response.errorCode !== RaftError.ErrorCode.NONE || read === undefined || latest === null)
              return answer(o.request, { ...o.response, position: read?.position ?? o.response.position })
            // The core checked the leader, the epoch and the snapshot id; the bytes are the runtime's.
            if (read.position > latest.size)
              return answer(o.request, {
                ...o.response,
                errorCode: RaftError.ErrorCode.POSITION_OUT_OF_RANGE,
                size: latest.size,
                position: read.position
              })
            const chunk = snapshots.read(read.position, Math.min(read.maxBytes, chunkBytes))
            return answer(
              o.request,
              RaftWire.withSnapshotChunk({ ...o.response, size: latest.size, position: read.position }, chunk)
            )
          })
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
          return Effect.sync(() => {
            // The snapshot file is already durable (see `takeSnapshot`): the log follows it.
            log.deleteBefore(o.snapshotId.endOffset, o.snapshotId)
            snapshots.deleteOlder()
          })
        case "InstallSnapshot":
          return Effect.sync(() => {
            const fetched = installing
            installing = null
            if (fetched?.complete == null) throw new Error(`InstallSnapshot ${o.snapshotId.endOffset} without its file`)
            if (transfer === fetched) transfer = null
            const installed = fetched.receiving.install()
            log.reset(o.snapshotId)
            snapshots.deleteOlder()
            published = o.snapshotId.endOffset
            const item: Committed = {
              snapshot: { ...installed.id, values: fetched.complete.values },
              records: [],
              highWatermark: o.snapshotId.endOffset
            }
            for (const q of subscribers) Queue.unsafeOffer(q, item)
          })
        case "SetTimer":
          return Effect.gen(function* () {
            const previous = timers.get(o.timer)
            if (previous !== undefined) yield* Fiber.interruptFork(previous)
            const fiber = yield* Effect.forkIn(
              sleepUntil(o.at).pipe(
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

    /** The append time of the batch holding the record before `endOffset` (the snapshot's last record). */
    const lastTimestampBefore = (endOffset: number, otherwise: number): number => {
      const bytes = log.read(endOffset - 1, endOffset)
      const batch = RecordBatch.split(bytes).batches[0]
      return batch === undefined ? otherwise : RecordBatch.maxTimestamp(bytes, batch.position)
    }

    const takeSnapshot = (
      endOffset: number,
      values: ReadonlyArray<Buffer>
    ): Effect.Effect<RaftMessages.SnapshotId, SnapshotAboveHighWatermark | InvalidSnapshot> =>
      Effect.gen(function* () {
        const refuse = (reason: string) => Effect.fail(new InvalidSnapshot({ endOffset, reason }))
        if (endOffset > state.highWatermark)
          return yield* Effect.fail(new SnapshotAboveHighWatermark({ endOffset, highWatermark: state.highWatermark }))
        if (endOffset <= state.log.logStartOffset)
          return yield* refuse(`the log already starts at ${state.log.logStartOffset}`)
        if (!log.isBatchBoundary(endOffset)) return yield* refuse("it is inside a batch of the log")
        if (endOffset > state.log.flushedOffset)
          yield* stepWith({ _tag: "FlushCompleted", endOffset: Math.min(endOffset, log.flush()) }, null)
        const id: RaftMessages.SnapshotId = { endOffset, epoch: RaftLog.epochAt(state.log, endOffset - 1) }
        const now = yield* Clock.currentTimeMillis
        yield* Effect.try({
          try: () => snapshots.write(id, values, now, lastTimestampBefore(endOffset, now)),
          catch: (e) => new InvalidSnapshot({ endOffset, reason: `cannot be written: ${String(e)}` })
        })
        yield* stepWith({ _tag: "CreateSnapshot", endOffset }, null)
        if (state.log.snapshotId?.endOffset !== endOffset || state.log.snapshotId.epoch !== id.epoch)
          return yield* Effect.dieMessage(`the raft core did not take the snapshot ${endOffset} it was given`)
        return id
      })

    const run = (item: Item): Effect.Effect<void> => {
      switch (item._tag) {
        case "Event":
          return stepWith(item.event, item)
        case "Request":
          return Effect.gen(function* () {
            const original = item.request
            // The core serves a snapshot whole; the runtime serves its bytes from the asked position.
            const request = original._tag === "FetchSnapshotRequest" ? { ...original, position: 0 } : original
            if (original._tag === "FetchSnapshotRequest")
              snapshotReads.set(request, {
                position: original.position,
                maxBytes: RaftWire.snapshotMaxBytes(original)
              })
            pendingRequests.set(request, item.reply)
            yield* stepWith({ _tag: "Request", from: item.from, request }, item)
            snapshotReads.delete(request)
            // The core answers every request in its step; one it ignored gets no answer here either.
            if (pendingRequests.delete(request)) yield* Deferred.interrupt(item.reply)
          })
        case "Snapshot":
          return Effect.flatMap(Effect.exit(takeSnapshot(item.endOffset, item.values)), (exit) =>
            Deferred.done(item.reply, exit)
          )
        case "SnapshotFetched":
          return Effect.gen(function* () {
            const t = item.transfer
            if (transfer !== t || t.complete === null) return
            const epoch = t.snapshotId.epoch
            const records = t.complete.values.map((value, i): Record => ({ _tag: "Data", offset: i + 1, epoch, value }))
            // The core takes a snapshot as one answer holding all of it.
            const response: RaftMessages.FetchSnapshotResponse<Buffer> = {
              ...t.complete.response,
              position: 0,
              size: records.length,
              unalignedRecords: records
            }
            installing = t
            yield* stepWith({ _tag: "Response", from: t.leaderId, request: t.request, response }, item)
            // Not installed: the core moved on since it asked (its request timed out); it asks again.
            installing = null
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
          const latest = snapshots.latest()
          if (latest !== null)
            Queue.unsafeOffer(q, {
              snapshot: { ...latest.id, values: snapshots.values() },
              records: readRecords(latest.id.endOffset, published),
              highWatermark: Math.max(published, latest.id.endOffset)
            })
          else if (published > 0) Queue.unsafeOffer(q, { records: readRecords(0, published), highWatermark: published })
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
      readCommitted: (from) =>
        Effect.suspend(() =>
          from < log.logStartOffset()
            ? Effect.fail(
                new OffsetBelowLogStart({
                  offset: from,
                  logStartOffset: log.logStartOffset(),
                  snapshotId: snapshots.latest()?.id ?? null
                })
              )
            : Effect.succeed(log.read(from, Math.max(from, state.highWatermark)))
        ),
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
      resign: Queue.offer(queue, { _tag: "Event", event: { _tag: "Resign" } }).pipe(Effect.asVoid),
      snapshot: (endOffset, values) =>
        Effect.flatMap(
          Deferred.make<RaftMessages.SnapshotId, SnapshotAboveHighWatermark | InvalidSnapshot>(),
          (reply) =>
            ask(
              { _tag: "Snapshot", endOffset, values, reply },
              reply,
              Effect.fail(new InvalidSnapshot({ endOffset, reason: `voter ${config.nodeId} is stopped` }))
            )
        ),
      logStartOffset: Effect.sync(() => log.logStartOffset()),
      latestSnapshot: Effect.sync(() => snapshots.latest()?.id ?? null)
    }
  })
