/**
 * MirrorMetadataManager: the per-broker reconciler of KIP-1279 (§1, §4.6, §5.8, §5.10). For every mirror
 * partition this broker leads it keeps the actual state (read from the partition's `__mirror_state`
 * coordinator, local or remote), compares it with the topic's desired state from the metadata, persists
 * the next transition (local append or WriteMirrorStates) and only then runs the transition's action
 * through the broker's ports: start or stop the mirror fetcher, truncate by last mirror epoch, bump the
 * leader epoch, abort open transactions and reset producers. FAILED partitions retry with exponential
 * backoff back to their previous state. It also validates user operations (phase 1 of §5.8), answers
 * DescribeClusterMirrors (99) with states, lag and the last-mirror-epoch lookup, and recovers exhausted
 * partitions (RecoverMirrorTopics, 106).
 *
 * Work for one partition is serialized: at most one step runs, and a trigger arriving meanwhile (metadata,
 * fetcher event, retry timer) runs another step after it. The steps run as fibers of a runtime the
 * manager owns (or the one `make` runs in): a `FiberMap` keyed by partition holds a partition's fiber only
 * while its work runs, so an idle partition costs none. Time comes only from Effect's `Clock` (retry
 * timers, write backoff, the stopping wait, the pacer), and every call that leaves the manager (the
 * coordinators on other brokers, the ports that do I/O) runs under `Effect.timeout`; the Read/Write-
 * MirrorStates to other brokers' coordinators go through `FanOut.forEachBroker`. Decisions come from
 * `MirrorStateMachine`; the manager must not touch logs, sockets or the metadata log itself — only the
 * ports.
 */
import {
  type DescribeClusterMirrors,
  Errors,
  Hashing,
  MirrorPartitionState,
  MirrorStateRecords,
  type ReadMirrorStates,
  TopicPartitionMap,
  type WriteMirrorStates
} from "@clustermirror/protocol"
import * as FanOut from "@clustermirror/client/FanOut"
import {
  Cause,
  type Clock,
  Duration,
  Effect,
  Either,
  Exit,
  Fiber,
  FiberMap,
  Option,
  Runtime,
  RuntimeFlags,
  Schedule,
  Scope
} from "effect"
import type { ClusterMirrorCoordinator } from "./ClusterMirrorCoordinator.js"
import * as CoordinatorError from "./CoordinatorError.js"
import { Pacer } from "./internal/Pacer.js"
import * as MirrorStateMachine from "./MirrorStateMachine.js"

type State = MirrorPartitionState.MirrorPartitionState
type Value = MirrorStateMachine.MirrorStateValue
const E = Errors.ErrorCode

/** A topic as the manager sees it in the broker's metadata image. */
export interface MirrorTopic {
  readonly name: string
  readonly topicId: string
  /** The mirror the topic belongs to; null when none. */
  readonly mirrorName: string | null
  /** The desired state of the MirrorTopicStateChangeRecord; UNKNOWN when none. */
  readonly desired: State
  readonly partitions: ReadonlyMap<number, { readonly leader: number; readonly leaderEpoch: number }>
}

/** The broker's metadata image, as far as mirrors go. */
export interface MetadataPort {
  readonly nodeId: number
  readonly clusterId: string
  /** The offset of the image's last record: the stamp of a validated request (§5.8). */
  readonly offset: () => number
  readonly topicByName: (name: string) => MirrorTopic | undefined
  readonly topicById: (topicId: string) => MirrorTopic | undefined
  /** Topics with a mirror name. */
  readonly mirrorTopics: () => Iterable<MirrorTopic>
  /** A mirror's stored configs; undefined when the mirror does not exist. */
  readonly mirrorConfigs: (name: string) => ReadonlyMap<string, string> | undefined
  readonly mirrorNames: () => ReadonlyArray<string>
  /** `__mirror_state`: its partition count and the leader of each partition; undefined while it does not exist. */
  readonly stateTopic: () =>
    | { readonly numPartitions: number; readonly leader: (partition: number) => number }
    | undefined
}

/** Read/WriteMirrorStates to the coordinator on another broker. */
export interface CoordinatorChannel {
  readonly read: (nodeId: number, request: ReadMirrorStates.Request) => Promise<ReadMirrorStates.Response>
  readonly write: (nodeId: number, request: WriteMirrorStates.Request) => Promise<WriteMirrorStates.Response>
}

/** Mirror lag of a partition, from its fetcher. */
export interface Lag {
  readonly sourceHighWatermark: number
  readonly highWatermark: number
  readonly lag: number
  readonly lagMs: number
}

/** What the manager asks of the broker's partitions; every method acts on a partition this broker leads. */
export interface PartitionPort {
  /** The latest leader epoch in the local log, -1 when none. */
  readonly latestEpoch: (topic: string, partition: number) => number
  /** LOG_TRUNCATION's local step: cut the log at the end of epoch `lastMirrorEpoch` (0 when unknown). */
  readonly truncateToEpoch: (topic: string, partition: number, lastMirrorEpoch: number) => Promise<void>
  /** Creates (or keeps) the mirror fetcher of a partition. */
  readonly startFetcher: (mirror: string, topic: string, topicId: string, partition: number) => void
  readonly removeFetcher: (mirror: string, topic: string, partition: number) => void
  readonly lag: (mirror: string, topic: string, partition: number) => Lag | undefined
  /** The source leader epoch the fetcher knows; undefined when none. */
  readonly sourceLeaderEpoch: (mirror: string, topic: string, partition: number) => number | undefined
  /**
   * BumpLeaderEpochs through the controller; resolves once this broker's image shows the new epochs and,
   * for a `minProducerId`, a producer id floor above it.
   */
  readonly bumpLeaderEpochs: (
    partitions: ReadonlyArray<{
      readonly topicId: string
      readonly partition: number
      readonly minLeaderEpoch: number
      readonly minProducerId?: bigint
    }>
  ) => Promise<void>
  /**
   * The highest producer id the partition's log holds or held (its producer state and the ids of every
   * batch appended, mirrored ones included); -1n when none.
   */
  readonly highestProducerId: (topic: string, partition: number) => bigint
  /** STOPPING steps 4-5: ABORT markers for open transactions, then MIRROR_PID_RESET. */
  readonly finishStop: (topic: string, partition: number, sourceClusterId: string | null) => Promise<void>
  /** The operator accepted a data loss: the partition's next fetcher restarts it at the source log start. */
  readonly acceptDataLoss?: (mirror: string, topic: string, partition: number) => void
}

/** What LOG_TRUNCATION learns from the source cluster (§5.5 steps 1-5). */
export interface TruncationInfo {
  /** The last mirror epoch per partition (-1 where none; all -1 when the source cannot tell). */
  readonly lastMirrorEpochs: ReadonlyMap<number, number>
  /**
   * Why mirroring must not start: a mirror on the source mirrors this topic from this cluster (a loop), or
   * the source's mirror of it has not stopped. Null when it may start.
   */
  readonly refusal: string | null
}

/** What the manager asks of the mirror's source cluster. */
export interface SourcePort {
  /**
   * Before truncating partitions of `topic` (§5.5): mirror-loop protection, the check that the source's
   * own mirror of this topic (failback) is stopped, and the last mirror epochs the source holds for these
   * partitions (mirrors on the source whose source is this cluster, max per partition).
   */
  readonly prepareTruncation: (
    mirror: string,
    topic: string,
    topicId: string,
    partitions: ReadonlyArray<number>
  ) => Promise<TruncationInfo>
}

export interface MirrorMetadataManagerOptions {
  readonly metadata: MetadataPort
  readonly coordinator: ClusterMirrorCoordinator
  readonly channel: CoordinatorChannel
  readonly partitions: PartitionPort
  readonly source: SourcePort
  readonly retry?: MirrorStateMachine.RetryConfig
  readonly random?: () => number
  readonly log?: (line: string) => void
  /** How long a delete waits for the partitions of stopped topics to reach STOPPED (default 15 s). */
  readonly stoppingWaitMs?: number
  /** Called for every automatic retry of a FAILED partition (metrics). */
  readonly onRetry?: (mirror: string) => void
  /**
   * How long a call that leaves the manager may take (Read/WriteMirrorStates, the source's truncation
   * check, truncation, epoch bumps, the stop sequence) before it counts as failed (default 30 s).
   */
  readonly callTimeoutMs?: number
}

/** The user operations of §4.5 and the states they accept (desired and actual). */
export type Operation = "start" | "stop" | "pause" | "resume" | "delete"

/** §4.5: the desired states (metadata) each operation accepts. */
export const VALID_STATES: Readonly<Record<Operation, ReadonlyArray<State>>> = {
  start: ["STOPPED", "UNKNOWN"],
  stop: ["MIRRORING", "PAUSED"],
  pause: ["MIRRORING"],
  resume: ["PAUSED"],
  delete: ["STOPPED"]
}

/**
 * The actual states (coordinators) each operation accepts: §4.5's, widened to the states on the way to
 * them, so that an operation right after the previous one works: Stop from every state §4.2 lets go to
 * STOPPING (and UNKNOWN, a partition not picked up yet) — an operator must be able to stop a FAILED
 * partition (a mirror loop, a lost source) or one still truncating; Pause while the partition is still
 * on its way to MIRRORING; Resume while it is still PAUSING. The state machine applies the new desired
 * state once the current step ends.
 */
export const VALID_ACTUAL_STATES: Readonly<Record<Operation, ReadonlyArray<State>>> = {
  start: VALID_STATES.start,
  stop: ["UNKNOWN", "LOG_TRUNCATION", "EPOCH_FENCING", "MIRRORING", "PAUSING", "PAUSED", "FAILED"],
  pause: ["UNKNOWN", "LOG_TRUNCATION", "EPOCH_FENCING", "MIRRORING"],
  resume: ["PAUSING", "PAUSED"],
  delete: ["STOPPED", "UNKNOWN"]
}

/**
 * The desired state an operation sets. A topic already desired in it is a no-op for the controller
 * (success, nothing written), so validation does not check it: an operation retried after a timeout, or
 * repeated by an operator, is answered as the first one was instead of refused by the states the first
 * one started.
 */
export const TARGET_STATES: Readonly<Partial<Record<Operation, State>>> = {
  start: "MIRRORING",
  stop: "STOPPED",
  pause: "PAUSED",
  resume: "MIRRORING"
}

export type Validation =
  | { readonly _tag: "Valid"; readonly stateValidationOffset: number }
  | { readonly _tag: "Invalid"; readonly errorCode: number; readonly errorMessage: string }

/** How long a delete waits for partitions of stopped topics to reach STOPPED before it is refused. */
export const STOPPING_WAIT_MS = 15_000

/** How long a call that leaves the manager may take by default. */
export const CALL_TIMEOUT_MS = 30_000

/** The backoff of a `__mirror_state` write the coordinator could not commit: 100 ms doubling to 2 s, jittered. */
export const writeRetrySchedule: Schedule.Schedule<unknown> = Schedule.exponential(Duration.millis(100)).pipe(
  Schedule.either(Schedule.spaced(Duration.seconds(2))),
  Schedule.jittered
)

/** §6.5: a bump sets the destination epoch this far above the source epoch. */
export const LEADER_EPOCH_BUMP_INCREMENT = 10
/** §6.4: a batch epoch within this distance of the destination epoch bumps proactively. */
export const LEADER_EPOCH_BUMP_THRESHOLD = 3

type PartEvent =
  | { readonly _tag: "FetchFailed"; readonly message: string; readonly retryable: boolean }
  | { readonly _tag: "SourceFailed"; readonly message: string; readonly retryable: boolean }
  | { readonly _tag: "EpochAhead"; readonly sourceEpoch: number }
  | { readonly _tag: "Recover"; readonly acceptDataLoss: boolean }
  | { readonly _tag: "FetchSucceeded" }

const RUNNING = 1
const AGAIN = 2
const RETRY_DUE = 4
const GONE = 8

/**
 * One mirror partition this broker leads. Kept small: thousands of idle ones live on a broker, so the
 * four step flags share one field.
 */
class Part {
  /** The persisted actual state; undefined until read from the coordinator. */
  value: Value | undefined = undefined
  event: PartEvent | undefined = undefined
  /** The pending retry or re-read timer (a sleeping fiber); undefined when none. */
  timer: Fiber.RuntimeFiber<void> | undefined = undefined
  private flags = 0

  constructor(
    readonly mirror: string,
    readonly topic: string,
    readonly topicId: string,
    readonly partition: number,
    public leaderEpoch: number,
    public desired: State,
    /** The metadata update that last saw this broker lead the partition. */
    public seen: number
  ) {}

  private flag(bit: number, on: boolean): void {
    this.flags = on ? this.flags | bit : this.flags & ~bit
  }
  /** A step runs now. */
  get running(): boolean {
    return (this.flags & RUNNING) !== 0
  }
  set running(on: boolean) {
    this.flag(RUNNING, on)
  }
  /** A trigger arrived while a step ran: run another. */
  get again(): boolean {
    return (this.flags & AGAIN) !== 0
  }
  set again(on: boolean) {
    this.flag(AGAIN, on)
  }
  /** The FAILED retry timer fired. */
  get retryDue(): boolean {
    return (this.flags & RETRY_DUE) !== 0
  }
  set retryDue(on: boolean) {
    this.flag(RETRY_DUE, on)
  }
  /** No longer led here (or the manager closed). */
  get gone(): boolean {
    return (this.flags & GONE) !== 0
  }
  set gone(on: boolean) {
    this.flag(GONE, on)
  }
}

type WriteEntry = {
  readonly part: Part
  readonly epoch: number
  readonly state: State
  readonly lastMirrorEpoch: number
  readonly value: Value | undefined
  readonly resolve: (r: {
    readonly errorCode: number
    readonly errorMessage: string | null
    readonly stateEpoch: number
  }) => void
}
type ReadEntry = {
  readonly part: {
    readonly topic: string
    readonly topicId: string
    readonly partition: number
    readonly mirror: string
  }
  readonly resolve: (r: Either.Either<Value, { readonly errorCode: number; readonly errorMessage: string }>) => void
}

/** A partition's key in the manager's FiberMaps. */
const keyOf = (part: Part): string => `${part.topic}\u0000${part.partition}`

/** A write the coordinator could not commit (not enough replicas, not available): tried again. */
class WriteNotCommitted {
  readonly _tag = "WriteNotCommitted"
}

type WriteBatch = {
  readonly _tag: "Write"
  readonly node: number
  readonly mirror: string
  readonly entries: ReadonlyArray<WriteEntry>
}
type ReadBatch = {
  readonly _tag: "Read"
  readonly node: number
  readonly mirror: string
  readonly entries: ReadonlyArray<ReadEntry>
}
type Batch = WriteBatch | ReadBatch

const splitKey = (k: string): { readonly node: number; readonly mirror: string } => {
  const i = k.indexOf("\u0000")
  return { node: Number(k.slice(0, i)), mirror: k.slice(i + 1) }
}

const failWrites = (b: WriteBatch, errorCode: number, errorMessage: string): void => {
  for (const e of b.entries) e.resolve({ errorCode, errorMessage, stateEpoch: -1 })
}

const failReads = (b: ReadBatch, errorCode: number, errorMessage: string): void => {
  for (const e of b.entries) e.resolve(Either.left({ errorCode, errorMessage }))
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

const stateValueOf = (p: ReadMirrorStates.Response["topics"][number]["partitions"][number]): Value => ({
  state: Option.getOrElse(MirrorPartitionState.fromByte(p.state), () => "UNKNOWN" as const),
  previousState: Option.getOrElse(MirrorPartitionState.fromByte(p.previousState), () => "UNKNOWN" as const),
  retryAttempt: p.retryAttempt,
  errorMessage: p.errorMessage,
  lastMirrorEpoch: p.lastMirrorEpoch,
  stateEpoch: Math.max(p.stateEpoch, 0)
})

/** Queued entries grouped by topic, in queue order: one request lists each topic once. */
const groupByTopic = <A extends { readonly part: { readonly topic: string } }>(
  entries: ReadonlyArray<A>
): ReadonlyMap<string, ReadonlyArray<A>> => {
  const byTopic = new Map<string, Array<A>>()
  for (const e of entries) {
    let list = byTopic.get(e.part.topic)
    if (list === undefined) byTopic.set(e.part.topic, (list = []))
    list.push(e)
  }
  return byTopic
}

const desiredOf = (s: State): MirrorStateMachine.Desired | undefined =>
  s === "MIRRORING" || s === "PAUSED" || s === "STOPPED" ? s : undefined

export class MirrorMetadataManager {
  private readonly parts = new TopicPartitionMap<Part>()
  private updates = 0
  private readonly retryConfig: MirrorStateMachine.RetryConfig
  private readonly random: () => number
  private readonly log: (line: string) => void
  private knownMirrors = new Set<string>()
  private readonly pendingDeletes = new Set<string>()
  private writeQueue = new Map<string, Array<WriteEntry>>()
  private readQueue = new Map<string, Array<ReadEntry>>()
  private flushScheduled = false
  private closed = false
  /** Log work of many partitions at once (a stop of every topic) runs a few per event-loop turn. */
  private readonly pacer: Pacer
  private readonly runtime: Runtime.Runtime<never>
  private readonly clock: Clock.Clock
  private readonly scope: Scope.CloseableScope
  /** The fiber of each partition whose work runs now; a partition leaves it when its work ends. */
  private readonly work: FiberMap.FiberMap<string>
  private readonly runWork: (key: string, effect: Effect.Effect<void>) => Fiber.RuntimeFiber<void>
  /** The pending timer of each partition that has one. */
  private readonly timers: FiberMap.FiberMap<string>
  private readonly runTimer: (key: string, effect: Effect.Effect<void>) => Fiber.RuntimeFiber<void>
  private readonly callTimeoutMs: number

  /**
   * A manager whose fibers run in `runtime` (default: Effect's default runtime, with the live clock).
   * `close()` interrupts them.
   */
  constructor(
    private readonly options: MirrorMetadataManagerOptions,
    runtime: Runtime.Runtime<never> = Runtime.defaultRuntime
  ) {
    this.retryConfig = options.retry ?? MirrorStateMachine.defaultRetryConfig
    this.random = options.random ?? Math.random
    this.log = options.log ?? (() => {})
    this.callTimeoutMs = options.callTimeoutMs ?? CALL_TIMEOUT_MS
    // A runtime captured where interruption is off (an acquire) would make every timeout wait for its call.
    this.runtime = Runtime.enableRuntimeFlag(runtime, RuntimeFlags.Interruption)
    const setUp = Effect.gen(function* () {
      const scope = yield* Scope.make()
      const work = yield* FiberMap.make<string>().pipe(Scope.extend(scope))
      const timers = yield* FiberMap.make<string>().pipe(Scope.extend(scope))
      return {
        clock: yield* Effect.clock,
        scope,
        work,
        runWork: yield* FiberMap.runtime(work)<never>(),
        timers,
        runTimer: yield* FiberMap.runtime(timers)<never>()
      }
    })
    const r = Runtime.runSync(this.runtime)(setUp)
    this.clock = r.clock
    this.scope = r.scope
    this.work = r.work
    this.runWork = r.runWork
    this.timers = r.timers
    this.runTimer = r.runTimer
    this.pacer = new Pacer({ now: () => this.clock.unsafeCurrentTimeMillis() })
  }

  /**
   * A manager whose fibers run in the caller's runtime (its `Clock`: a test's `TestClock`), closed with
   * the scope.
   */
  static make(options: MirrorMetadataManagerOptions): Effect.Effect<MirrorMetadataManager, never, Scope.Scope> {
    return Effect.flatMap(Effect.runtime<never>(), (rt) =>
      Effect.acquireRelease(
        Effect.sync(() => new MirrorMetadataManager(options, rt)),
        (m) => Effect.sync(() => m.close())
      )
    )
  }

  /** Partitions whose work runs now (each holds one fiber); an idle partition holds none. */
  get runningPartitions(): number {
    return Runtime.runSync(this.runtime)(FiberMap.size(this.work))
  }

  /** Partitions waiting for a retry or re-read timer. */
  get pendingTimers(): number {
    return Runtime.runSync(this.runtime)(FiberMap.size(this.timers))
  }

  private now(): number {
    return this.clock.unsafeCurrentTimeMillis()
  }

  private runPromise<A, E>(effect: Effect.Effect<A, E>): Promise<A> {
    return Runtime.runPromiseExit(this.runtime)(effect).then((exit) => {
      if (Exit.isSuccess(exit)) return exit.value
      throw Option.getOrElse(
        Cause.failureOption(exit.cause),
        () => new CoordinatorError.ManagerClosed({ call: "a call of the mirror reconciler" })
      )
    })
  }

  private sleep(ms: number): Promise<void> {
    return this.runPromise(Effect.sleep(Duration.millis(ms)))
  }

  /**
   * A call that leaves the manager, as an Effect: a rejection is a `RemoteCallFailed`, no answer within
   * the call timeout a `RemoteCallTimeout`.
   */
  private callEffect<A>(call: string, f: () => Promise<A>): Effect.Effect<A, CoordinatorError.CallError> {
    return Effect.tryPromise({
      try: f,
      catch: (cause) => new CoordinatorError.RemoteCallFailed({ call, cause })
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(this.callTimeoutMs),
        onTimeout: () => new CoordinatorError.RemoteCallTimeout({ call, timeoutMs: this.callTimeoutMs })
      })
    )
  }

  /** `callEffect` for the Promise code of the steps: rejects with the typed error. */
  private call<A>(call: string, f: () => Promise<A>): Promise<A> {
    return this.runPromise(this.callEffect(call, f))
  }

  // ------------------------------------------------------------------------------------------ triggers

  /** The metadata image changed: take on, update or drop the mirror partitions this broker leads. */
  onMetadataUpdate(): void {
    if (this.closed) return
    const md = this.options.metadata
    const update = ++this.updates
    for (const t of md.mirrorTopics()) {
      const mirror = t.mirrorName
      if (mirror === null || md.mirrorConfigs(mirror) === undefined) continue
      for (const [partition, reg] of t.partitions) {
        if (reg.leader !== md.nodeId) continue
        let part = this.parts.get(t.name, partition)
        if (part !== undefined && (part.topicId !== t.topicId || part.mirror !== mirror)) {
          this.drop(part)
          part = undefined
        }
        if (part === undefined) {
          part = new Part(mirror, t.name, t.topicId, partition, reg.leaderEpoch, t.desired, update)
          this.parts.set(t.name, partition, part)
          this.kick(part)
        } else if (part.leaderEpoch !== reg.leaderEpoch || part.desired !== t.desired) {
          part.leaderEpoch = reg.leaderEpoch
          part.desired = t.desired
          this.kick(part)
        }
        part.seen = update
      }
    }
    for (const part of [...this.parts.values()]) if (part.seen !== update) this.drop(part)
    const names = new Set(md.mirrorNames())
    for (const name of this.knownMirrors) if (!names.has(name)) this.pendingDeletes.add(name)
    this.knownMirrors = names
    this.deletePending()
  }

  /**
   * Leadership of `__mirror_state` partition `partition` changed: load it (leaderEpoch >= 0) or drop it.
   * A new coordinator resumes the work of the cached states of partitions this broker leads.
   */
  onStatePartition(partition: number, leaderEpoch: number, numPartitions: number): void {
    const coordinator = this.options.coordinator
    if (leaderEpoch < 0) {
      coordinator.onResign(partition)
      return
    }
    const entries = coordinator.onBecomeLeader(partition, leaderEpoch, numPartitions)
    const names = new Set(this.options.metadata.mirrorNames())
    for (const e of entries) if (!names.has(e.key.mirrorName)) this.pendingDeletes.add(e.key.mirrorName)
    this.deletePending()
    for (const part of this.parts.values()) if (part.value === undefined) this.kick(part)
  }

  /** The mirror fetcher stopped fetching a partition because of an error: → FAILED. */
  fetchFailed(topic: string, partition: number, failure: MirrorStateMachine.Failure): void {
    this.send(topic, partition, { _tag: "FetchFailed", message: failure.message, retryable: failure.retryable })
  }

  /**
   * The periodic refresh (§5.9) found the partition's source gone (topic deleted or recreated, another
   * source cluster): → FAILED with `reason`, persisted like a fetch failure. Applies to partitions this
   * broker leads that are mirroring or on their way to it (a STOPPED partition no longer depends on its
   * source); a non-retryable failure also replaces a retryable one (and cancels its retry) or one with
   * another reason.
   */
  sourceFailed(topic: string, partition: number, reason: string, retryable: boolean): void {
    this.send(topic, partition, { _tag: "SourceFailed", message: reason, retryable })
  }

  /**
   * The periodic refresh learned the partition's source leader (§5.9 2b): a partition still UNKNOWN
   * and desired MIRRORING gets another evaluation, which starts LOG_TRUNCATION.
   */
  sourceLeaderKnown(topic: string, partition: number): void {
    const part = this.parts.get(topic, partition)
    if (part === undefined || part.gone || part.desired !== "MIRRORING") return
    if (part.value === undefined || part.value.state === "UNKNOWN") this.kick(part)
  }

  /** A source batch's epoch is above the local leader epoch (§6.4 case 1): → EPOCH_FENCING. */
  epochAhead(topic: string, partition: number, sourceEpoch: number): void {
    this.send(topic, partition, { _tag: "EpochAhead", sourceEpoch })
  }

  /** A source batch's epoch is close to the local leader epoch (§6.4 case 2): bump without stopping. */
  epochNearlyAhead(topic: string, partition: number, sourceEpoch: number): void {
    const part = this.parts.get(topic, partition)
    if (part === undefined || part.gone) return
    this.call("BumpLeaderEpochs", () =>
      this.options.partitions.bumpLeaderEpochs([
        { topicId: part.topicId, partition, minLeaderEpoch: sourceEpoch + LEADER_EPOCH_BUMP_INCREMENT }
      ])
    ).catch((e) => this.log(`proactive epoch bump of ${topic}-${partition} failed: ${messageOf(e)}`))
  }

  /**
   * The fetcher appended: a partition that works again starts its failure count over (§4.4). The reset
   * is written to the partition's coordinator like any other change of its state, so a restart or a
   * coordinator move counts the next failure as the cache does.
   */
  fetched(topic: string, partition: number): void {
    const part = this.parts.get(topic, partition)
    if (part?.value !== undefined && part.value.retryAttempt > 0 && part.value.state !== "FAILED")
      this.send(topic, partition, { _tag: "FetchSucceeded" })
  }

  private send(topic: string, partition: number, event: PartEvent): void {
    const part = this.parts.get(topic, partition)
    if (part === undefined || part.gone) return
    // A failure outranks an epoch report: the fetcher stopped either way.
    const failure = (e: PartEvent | undefined) => e?._tag === "FetchFailed" || e?._tag === "SourceFailed"
    // A working fetch is the least news: every other event keeps its place.
    if (event._tag === "FetchSucceeded" && part.event !== undefined) return
    if (failure(part.event) && !failure(event)) return
    // A lost source outranks a fetch error: retrying cannot help.
    if (part.event?._tag === "SourceFailed" && !part.event.retryable && event._tag === "FetchFailed") return
    part.event = event
    this.kick(part)
  }

  // ------------------------------------------------------------------------------------------ queries

  /**
   * Whether clients may produce to a partition this broker leads (§6.8): "writable" when its topic is not
   * a mirror topic or its actual state is STOPPED (or it never mirrored and its topic is desired STOPPED);
   * "stopping" while a topic desired STOPPED has not finished stopping here (a retriable wait: failover is
   * under way); "readOnly" otherwise.
   */
  produceState(topic: string, partition: number): "writable" | "stopping" | "readOnly" {
    const t = this.options.metadata.topicByName(topic)
    if (t === undefined || t.mirrorName === null) return "writable"
    const v = this.parts.get(topic, partition)?.value
    if (v !== undefined && (v.state === "STOPPED" || (v.state === "UNKNOWN" && t.desired === "STOPPED")))
      return "writable"
    return t.desired === "STOPPED" ? "stopping" : "readOnly"
  }

  /** Every mirror partition this broker leads with its actual state (UNKNOWN until loaded), for metrics. */
  *partitionStates(): Iterable<{
    readonly mirror: string
    readonly topic: string
    readonly partition: number
    readonly state: State
  }> {
    for (const part of this.parts.values())
      if (!part.gone)
        yield {
          mirror: part.mirror,
          topic: part.topic,
          partition: part.partition,
          state: part.value?.state ?? "UNKNOWN"
        }
  }

  /** The actual state of a partition this broker leads; undefined when it leads none or has not loaded it. */
  stateOf(topic: string, partition: number): Value | undefined {
    return this.parts.get(topic, partition)?.value
  }

  get partitionCount(): number {
    return this.parts.size
  }

  /** DescribeClusterMirrors (99) as this broker answers it: the partitions it leads, and LME lookups. */
  describe(request: DescribeClusterMirrors.Request): DescribeClusterMirrors.Response {
    const md = this.options.metadata
    const names = request.mirrorNames.length === 0 ? [...md.mirrorNames()].sort() : request.mirrorNames
    const mirrors = names.map((name) => {
      if (md.mirrorConfigs(name) === undefined)
        return {
          errorCode: E.UNKNOWN_CLUSTER_MIRROR,
          mirrorName: name,
          authorizedOperations: -2147483648,
          topics: [],
          groupSyncStatuses: [],
          aclSyncStatuses: []
        }
      const topics = new Map<
        string,
        Array<DescribeClusterMirrors.Response["mirrors"][number]["topics"][number]["partitions"][number]>
      >()
      for (const part of this.parts.values()) {
        if (part.mirror !== name || part.gone) continue
        const v = part.value
        const state = v?.state ?? "UNKNOWN"
        const lag = state === "MIRRORING" ? this.options.partitions.lag(name, part.topic, part.partition) : undefined
        let list = topics.get(part.topic)
        if (list === undefined) topics.set(part.topic, (list = []))
        list.push({
          partitionIndex: part.partition,
          sourceOffset: lag === undefined ? -1n : BigInt(lag.sourceHighWatermark),
          destinationOffset: lag === undefined ? -1n : BigInt(lag.highWatermark),
          lag: lag === undefined ? -1n : BigInt(lag.lag),
          stateValue: state,
          retryAttempt: v?.retryAttempt ?? 0,
          errorMessage: v?.errorMessage ?? null,
          lagTimeMs: lag === undefined ? -1n : BigInt(lag.lagMs)
        })
      }
      return {
        errorCode: E.NONE,
        mirrorName: name,
        authorizedOperations: -2147483648,
        topics: [...topics]
          .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
          .map(([topicName, partitions]) => ({
            topicName,
            partitions: partitions.sort((a, b) => a.partitionIndex - b.partitionIndex)
          })),
        // Filled by the broker running the mirror's coordinator tasks, not here.
        groupSyncStatuses: [],
        aclSyncStatuses: []
      }
    })
    return {
      throttleTimeMs: 0,
      errorCode: E.NONE,
      errorMessage: null,
      mirrors,
      lookupResults: this.lookupLastMirrorEpochs(request.clusterId ?? null, request.lastMirrorEpochLookups ?? [])
    }
  }

  /**
   * The LME lookup side of DescribeClusterMirrors (§2.9): for mirrors whose source is `clusterId`, the
   * cached last mirror epoch of each requested partition this broker coordinates (-1 otherwise), max over
   * those mirrors.
   */
  private lookupLastMirrorEpochs(
    clusterId: string | null,
    lookups: DescribeClusterMirrors.Request["lastMirrorEpochLookups"]
  ): DescribeClusterMirrors.Response["lookupResults"] {
    if (clusterId === null || lookups.length === 0) return []
    const md = this.options.metadata
    const mirrors = md.mirrorNames().filter((m) => md.mirrorConfigs(m)?.get("mirror.source.cluster.id") === clusterId)
    const n = md.stateTopic()?.numPartitions ?? 0
    return lookups.map((l) => ({
      topicId: l.topicId,
      partitions: l.partitions.map((partitionIndex) => {
        let lme = -1
        for (const m of mirrors) {
          const v = this.options.coordinator.get(MirrorStateRecords.key(m, l.topicId, partitionIndex), n)
          if (v !== undefined) lme = Math.max(lme, v.lastMirrorEpoch)
        }
        return { partitionIndex, lastMirrorEpoch: lme }
      })
    }))
  }

  // ------------------------------------------------------------------------------------------ operations

  /**
   * Phase 1 of §5.8 on the broker that received a Start/Stop/Pause/Resume/Delete: every partition of the
   * named topics of this mirror (all of the mirror's topics for delete) must be in a valid state, desired
   * (metadata) and actual (coordinators); then the request carries this image's offset to the controller.
   * Topics unknown here or belonging to another mirror are left to the controller's per-topic errors;
   * topics already desired in the operation's target state (`TARGET_STATES`) to its no-op success.
   */
  async validate(op: Operation, mirror: string, topicNames: ReadonlyArray<string> | null): Promise<Validation> {
    // A delete right after a stop finds partitions not STOPPED yet (stopping, or finishing the step they
    // were in): wait for them (briefly) rather than fail a scripted "stop, then delete".
    const deadline = this.now() + (this.options.stoppingWaitMs ?? STOPPING_WAIT_MS)
    for (;;) {
      const v = await this.validateOnce(op, mirror, topicNames)
      if (v._tag === "Valid" || op !== "delete" || !v.stopping || this.now() > deadline) return v
      await this.sleep(100)
    }
  }

  private async validateOnce(
    op: Operation,
    mirror: string,
    topicNames: ReadonlyArray<string> | null
  ): Promise<Validation & { readonly stopping?: boolean }> {
    const md = this.options.metadata
    const offset = md.offset()
    const valid = VALID_STATES[op]
    const validActual = VALID_ACTUAL_STATES[op]
    const topics: Array<MirrorTopic> = []
    const target = TARGET_STATES[op]
    if (topicNames === null) {
      for (const t of md.mirrorTopics()) if (t.mirrorName === mirror) topics.push(t)
    } else
      for (const name of topicNames) {
        const t = md.topicByName(name)
        if (t === undefined || t.mirrorName !== mirror || t.desired === target) continue
        topics.push(t)
      }
    const invalid = (errorMessage: string): Validation => ({
      _tag: "Invalid",
      errorCode: E.INVALID_CLUSTER_MIRROR_STATES,
      errorMessage
    })
    // A mirror still mirroring or pausing a topic: the controller answers CLUSTER_MIRROR_NOT_EMPTY, a
    // clearer error than ours.
    if (op === "delete" && topics.some((t) => t.desired !== "STOPPED"))
      return { _tag: "Valid", stateValidationOffset: offset }
    for (const t of topics)
      if (!valid.includes(t.desired))
        return invalid(
          `Topic ${t.name} of mirror ${mirror} is desired ${t.desired}; ${op} needs one of ${valid.join(", ")}`
        )
    const reads = topics.flatMap((t) =>
      [...t.partitions.keys()].map((partition) => ({ topic: t.name, topicId: t.topicId, partition, mirror }))
    )
    // Every read is queued before the first is awaited: one ReadMirrorStates per coordinator carries them.
    const pending = reads.map((r) => this.readState(r))
    for (let i = 0; i < reads.length; i++) {
      const r = await pending[i]!
      const what = `${reads[i]!.topic}-${reads[i]!.partition}`
      if (Either.isLeft(r))
        return { _tag: "Invalid", errorCode: r.left.errorCode, errorMessage: `${what}: ${r.left.errorMessage}` }
      if (!validActual.includes(r.right.state))
        return {
          ...invalid(
            `Partition ${what} of mirror ${mirror} is ${r.right.state}; ${op} needs one of ${validActual.join(", ")}`
          ),
          // Delete only gets here with every topic desired STOPPED: a partition not STOPPED yet is on its way.
          stopping: op === "delete"
        }
    }
    return { _tag: "Valid", stateValidationOffset: offset }
  }

  /**
   * RecoverMirrorTopics (106) for the partitions of `topicNames` this broker leads: FAILED partitions
   * whose retries are exhausted (or not retryable) go back to their previous state with a fresh retry
   * budget. A partition that failed on data loss recovers only with `acceptDataLoss` (it then restarts at
   * the source log start); otherwise its topic is refused with how to accept. Per topic: the error of the
   * first partition that could not be recovered, or NONE.
   */
  recover(
    mirror: string,
    topicNames: ReadonlyArray<string>,
    options: { readonly acceptDataLoss?: boolean } = {}
  ): ReadonlyArray<{ readonly topicName: string; readonly errorCode: number; readonly errorMessage: string | null }> {
    const acceptDataLoss = options.acceptDataLoss === true
    return topicNames.map((topicName) => {
      const t = this.options.metadata.topicByName(topicName)
      if (t === undefined)
        return { topicName, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `Unknown topic ${topicName}` }
      if (t.mirrorName !== mirror)
        return {
          topicName,
          errorCode: E.TOPIC_NOT_IN_CLUSTER_MIRROR,
          errorMessage: `Topic ${topicName} is not in mirror ${mirror}`
        }
      if (!acceptDataLoss)
        for (const part of this.parts.values())
          if (part.topic === topicName && part.value !== undefined && MirrorStateMachine.isDataLoss(part.value))
            return {
              topicName,
              errorCode: E.INVALID_CLUSTER_MIRROR_STATES,
              errorMessage: `${part.topic}-${part.partition} is FAILED: ${part.value.errorMessage}. Recover with AcceptDataLoss (clustermirror mirrors --recover --accept-data-loss) to restart it at the source log start, or stop the topic`
            }
      for (const part of this.parts.values()) {
        if (part.topic !== topicName || part.value === undefined || part.value.state !== "FAILED") continue
        const r = MirrorStateMachine.recover(part.value, this.retryConfig)
        if (Either.isLeft(r))
          return { topicName, errorCode: E.INVALID_CLUSTER_MIRROR_STATES, errorMessage: r.left.message }
        part.event = { _tag: "Recover", acceptDataLoss }
        this.kick(part)
      }
      return { topicName, errorCode: E.NONE, errorMessage: null }
    })
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.pacer.close()
    for (const part of this.parts.values()) {
      part.gone = true
      part.timer = undefined
    }
    this.parts.clear()
    // Interrupts every partition's work and timer.
    Runtime.runFork(this.runtime)(Scope.close(this.scope, Exit.void))
  }

  // ------------------------------------------------------------------------------------------ the loop

  private drop(part: Part): void {
    part.gone = true
    this.clearTimer(part)
    this.parts.delete(part.topic, part.partition)
    this.options.partitions.removeFetcher(part.mirror, part.topic, part.partition)
  }

  private kick(part: Part): void {
    if (part.gone || this.closed) return
    if (part.running) {
      part.again = true
      return
    }
    part.running = true
    this.runWork(keyOf(part), this.loop(part))
  }

  /**
   * A partition's work: steps until no trigger arrived during the last one. The fiber ends with it (and
   * leaves the FiberMap): an idle partition holds no fiber.
   */
  private loop(part: Part): Effect.Effect<void> {
    const once = Effect.suspend(() => {
      part.again = false
      return Effect.tryPromise(() => this.step(part))
    }).pipe(
      Effect.catchAll((e) =>
        Effect.sync(() => this.log(`mirror partition ${part.topic}-${part.partition}: ${messageOf(e.error)}`)).pipe(
          Effect.zipRight(Effect.sleep(Duration.millis(500))),
          Effect.zipRight(
            Effect.sync(() => {
              part.again = true
            })
          )
        )
      )
    )
    return once.pipe(
      Effect.repeat({ while: () => part.again && !part.gone && !this.closed }),
      Effect.ensuring(
        Effect.sync(() => {
          part.running = false
        })
      )
    )
  }

  /** Runs `fire` then `kick` after `ms` on the Clock, replacing the partition's pending timer. */
  private setTimer(part: Part, ms: number, fire: () => void = () => {}): void {
    if (part.gone || this.closed) return
    const timer: Fiber.RuntimeFiber<void> = this.runTimer(
      keyOf(part),
      Effect.sleep(Duration.millis(ms)).pipe(
        Effect.zipRight(
          Effect.sync(() => {
            if (part.timer !== timer) return
            part.timer = undefined
            fire()
            this.kick(part)
          })
        )
      )
    )
    part.timer = timer
  }

  private clearTimer(part: Part): void {
    const timer = part.timer
    if (timer === undefined) return
    part.timer = undefined
    Runtime.runFork(this.runtime)(Fiber.interrupt(timer))
  }

  /** Runs `kick` after `ms`, unless a timer is already set. */
  private later(part: Part, ms: number): void {
    if (part.timer !== undefined) return
    this.setTimer(part, ms)
  }

  private async step(part: Part): Promise<void> {
    if (part.value === undefined) {
      const r = await this.readState(part)
      if (part.gone) return
      if (Either.isLeft(r)) {
        this.later(part, 300)
        return
      }
      part.value = r.right
      if (part.value.state === "FAILED") this.scheduleRetry(part)
    }
    const event = part.event
    part.event = undefined
    if (event !== undefined) {
      await this.onEvent(part, event)
      part.again = true
      return
    }
    const v = part.value
    if (v.state === "FAILED" && part.desired === "STOPPED" && part.timer !== undefined) {
      // Stopped by the operator: no retry any more, the stop sequence runs now.
      this.clearTimer(part)
    }
    if (v.state === "FAILED" && part.desired !== "STOPPED") {
      if (!part.retryDue) return
      part.retryDue = false
      const next = MirrorStateMachine.retry(v, this.retryConfig)
      if (Either.isLeft(next)) return
      if (await this.persist(part, next.right)) {
        this.log(`retrying ${part.topic}-${part.partition} (attempt ${v.retryAttempt}): ${next.right.state}`)
        this.options.onRetry?.(part.mirror)
        part.again = true
      }
      return
    }
    const desired = desiredOf(part.desired)
    if (desired === undefined) return
    const planned = MirrorStateMachine.onDesiredState(v, desired)
    if (Either.isLeft(planned)) {
      this.log(planned.left.message)
      return
    }
    const { value, action } = planned.right
    if (value !== v && !(await this.persist(part, value))) return
    await this.runAction(part, action)
  }

  private async onEvent(part: Part, event: PartEvent): Promise<void> {
    const v = part.value!
    switch (event._tag) {
      case "FetchFailed":
        if (v.state === "MIRRORING" || v.state === "EPOCH_FENCING" || v.state === "LOG_TRUNCATION")
          await this.failPart(part, { message: event.message, retryable: event.retryable })
        return
      case "SourceFailed": {
        // A topic being stopped, or stopped, no longer depends on its source.
        if (part.desired === "STOPPED") return
        const active =
          v.state === "UNKNOWN" ||
          v.state === "LOG_TRUNCATION" ||
          v.state === "EPOCH_FENCING" ||
          v.state === "MIRRORING"
        if (!active && v.state !== "FAILED") return
        // Already failed: news only when the failure becomes non-retryable, or gets a more precise reason
        // than the fetcher's (the refresh tells a recreated topic from a deleted one).
        if (v.state === "FAILED" && event.retryable) return
        if (v.retryAttempt === MirrorStateMachine.NON_RETRYABLE && v.errorMessage === event.message) return
        if (!event.retryable) this.clearTimer(part)
        await this.failPart(part, { message: event.message, retryable: event.retryable })
        return
      }
      case "EpochAhead": {
        const fencing = MirrorStateMachine.epochAhead(v)
        if (Either.isLeft(fencing)) return
        if (!(await this.persist(part, fencing.right))) return
        await this.bumpEpoch(part, event.sourceEpoch)
        return
      }
      case "Recover": {
        const next = MirrorStateMachine.recover(v, this.retryConfig)
        if (Either.isLeft(next)) return
        this.clearTimer(part)
        if (event.acceptDataLoss && MirrorStateMachine.isDataLoss(v)) {
          this.options.partitions.acceptDataLoss?.(part.mirror, part.topic, part.partition)
          this.log(`${part.topic}-${part.partition}: data loss accepted, mirroring restarts at the source log start`)
        }
        await this.persist(part, next.right)
        return
      }
      case "FetchSucceeded": {
        if (v.state === "FAILED" || v.retryAttempt <= 0) return
        await this.persist(part, MirrorStateMachine.fetchSucceeded(v))
        return
      }
    }
  }

  /** EPOCH_FENCING's work: destination epoch above the source's, then → MIRRORING (§6.5 reactive bump). */
  private async bumpEpoch(part: Part, sourceEpoch: number): Promise<void> {
    try {
      await this.call("BumpLeaderEpochs", () =>
        this.options.partitions.bumpLeaderEpochs([
          {
            topicId: part.topicId,
            partition: part.partition,
            minLeaderEpoch: sourceEpoch + LEADER_EPOCH_BUMP_INCREMENT
          }
        ])
      )
    } catch (e) {
      await this.failPart(part, { message: `Leader epoch bump failed: ${messageOf(e)}`, retryable: true })
      return
    }
    const next = MirrorStateMachine.epochBumped(part.value!)
    if (Either.isRight(next) && (await this.persist(part, next.right)))
      this.options.partitions.startFetcher(part.mirror, part.topic, part.topicId, part.partition)
  }

  private async runAction(part: Part, action: MirrorStateMachine.Action): Promise<void> {
    const ports = this.options.partitions
    switch (action._tag) {
      case "Nothing":
        return
      case "StartFetcher":
        ports.startFetcher(part.mirror, part.topic, part.topicId, part.partition)
        return
      case "RemoveFetcher": {
        ports.removeFetcher(part.mirror, part.topic, part.partition)
        const next = MirrorStateMachine.fetcherRemoved(part.value!)
        if (Either.isRight(next) && (await this.persist(part, next.right))) part.again = true
        return
      }
      case "BumpLeaderEpoch": {
        const source = ports.sourceLeaderEpoch(part.mirror, part.topic, part.partition)
        await this.bumpEpoch(part, Math.max(source ?? 0, ports.latestEpoch(part.topic, part.partition)))
        return
      }
      case "StartTruncation":
        await this.truncate(part)
        return
      case "RunStopSequence":
        await this.stopSequence(part)
        return
    }
  }

  /**
   * LOG_TRUNCATION (§5.5): loop and stopped checks and the last mirror epoch from the source, truncate to
   * the end of that epoch here (0 when unknown: mirror from scratch), then → MIRRORING.
   */
  private async truncate(part: Part): Promise<void> {
    let lme: number
    try {
      const found = await this.call("the source's truncation check", () =>
        this.options.source.prepareTruncation(part.mirror, part.topic, part.topicId, [part.partition])
      )
      if (found.refusal !== null) {
        // Retried with backoff: the operator stops the other direction, and the next attempt goes on.
        await this.failPart(part, { message: found.refusal, retryable: true })
        return
      }
      lme = found.lastMirrorEpochs.get(part.partition) ?? -1
    } catch (e) {
      await this.failPart(part, { message: `Last mirror epoch lookup failed: ${messageOf(e)}`, retryable: true })
      return
    }
    if (!(await this.paced(part))) return
    try {
      await this.call("truncation", () => this.options.partitions.truncateToEpoch(part.topic, part.partition, lme))
    } catch (e) {
      await this.failPart(part, { message: `Truncation failed: ${messageOf(e)}`, retryable: true })
      return
    }
    if (part.gone) return
    const next = MirrorStateMachine.truncationDone(part.value!)
    if (Either.isRight(next) && (await this.persist(part, next.right)))
      this.options.partitions.startFetcher(part.mirror, part.topic, part.topicId, part.partition)
  }

  /**
   * STOPPING (§5.4): remove the fetcher, write the last mirror epoch, bump the leader epoch above it and
   * the controller's producer id floor above the highest producer id mirrored here (so producer ids
   * handed out on this cluster never collide with mirrored ones), abort open transactions and reset
   * producer state, then → STOPPED (writable).
   */
  private async stopSequence(part: Part): Promise<void> {
    const ports = this.options.partitions
    ports.removeFetcher(part.mirror, part.topic, part.partition)
    const lme = ports.latestEpoch(part.topic, part.partition)
    // Read after the fetcher is gone, before the reset: nothing mirrored can follow it.
    const minProducerId = ports.highestProducerId(part.topic, part.partition)
    try {
      if (lme >= 0 && !(await this.persist(part, part.value!, lme))) return
      if (lme >= 0 || minProducerId >= 0n)
        await this.call("BumpLeaderEpochs", () =>
          ports.bumpLeaderEpochs([
            {
              topicId: part.topicId,
              partition: part.partition,
              minLeaderEpoch: lme,
              ...(minProducerId >= 0n ? { minProducerId } : {})
            }
          ])
        )
      const sourceClusterId = this.options.metadata.mirrorConfigs(part.mirror)?.get("mirror.source.cluster.id") ?? null
      if (!(await this.paced(part))) return
      await this.call("the stop sequence", () => ports.finishStop(part.topic, part.partition, sourceClusterId))
    } catch (e) {
      // The sequence is idempotent: a retry of STOPPING runs it again.
      await this.failPart(part, { message: `Stopping failed: ${messageOf(e)}`, retryable: true })
      return
    }
    if (part.gone) return
    const next = MirrorStateMachine.stopDone(part.value!, lme)
    if (Either.isRight(next) && (await this.persist(part, next.right)))
      this.log(`stopped mirroring ${part.topic}-${part.partition} (last mirror epoch ${lme})`)
  }

  /**
   * Waits for this partition's turn before log work the broker does synchronously (appends, truncation):
   * thousands of partitions reaching it at once must leave the event loop to requests in between. False
   * when the partition is no longer led here or the manager closed meanwhile.
   */
  private async paced(part: Part): Promise<boolean> {
    return (await this.pacer.turn()) && !part.gone && !this.closed
  }

  private async failPart(part: Part, failure: MirrorStateMachine.Failure): Promise<void> {
    this.options.partitions.removeFetcher(part.mirror, part.topic, part.partition)
    const next = MirrorStateMachine.fail(part.value!, failure)
    if (!(await this.persist(part, next))) return
    this.log(
      `mirror partition ${part.topic}-${part.partition} FAILED (attempt ${next.retryAttempt}): ${failure.message}`
    )
    this.scheduleRetry(part)
  }

  /**
   * The FAILED retry timer, on the Clock. The delay is the retry schedule's (`retryDelay`: exponential
   * from the initial backoff, jittered, capped) at the persisted attempt, so a new leader or a restarted
   * broker waits as this one would have.
   */
  private scheduleRetry(part: Part): void {
    const v = part.value
    if (v === undefined || !MirrorStateMachine.shouldRetry(v, this.retryConfig)) return
    const delay = MirrorStateMachine.retryDelay(v.retryAttempt, this.retryConfig, this.random)
    this.setTimer(part, delay, () => {
      part.retryDue = true
    })
  }

  /**
   * Writes `next` (and an LME record when `lastMirrorEpoch` >= 0) to the partition's coordinator before
   * anything acts on it. Transient errors retry with backoff for as long as this broker leads the
   * partition; a stale state epoch re-reads the state; a newer leader stops this one. True once written.
   */
  private persist(part: Part, next: Value, lastMirrorEpoch = -1): Promise<boolean> {
    const epoch = part.leaderEpoch
    const once = Effect.suspend(() => {
      if (part.gone || this.closed || part.leaderEpoch !== epoch) return Effect.succeed(false)
      return Effect.promise(() => this.persistOnce(part, next, lastMirrorEpoch)).pipe(
        Effect.flatMap((done) => (done === undefined ? Effect.fail(new WriteNotCommitted()) : Effect.succeed(done)))
      )
    })
    return this.runPromise(once.pipe(Effect.retry(writeRetrySchedule)))
  }

  /** One write of `persist`: true once written, false when it must not go on, undefined to retry. */
  private async persistOnce(part: Part, next: Value, lastMirrorEpoch: number): Promise<boolean | undefined> {
    const writeState = next !== part.value || lastMirrorEpoch < 0
    const r = await this.writeState(
      part,
      writeState ? next.state : "UNKNOWN",
      lastMirrorEpoch,
      writeState ? next : undefined
    )
    if (r.errorCode === E.NONE) {
      const stateEpoch = writeState ? (r.stateEpoch >= 0 ? r.stateEpoch : next.stateEpoch) : part.value!.stateEpoch
      const written: Value = {
        ...(writeState ? next : part.value!),
        lastMirrorEpoch: lastMirrorEpoch >= 0 ? lastMirrorEpoch : next.lastMirrorEpoch,
        stateEpoch
      }
      part.value = this.sharedWithCoordinator(part, written)
      return true
    }
    if (r.errorCode === E.FENCED_STATE_EPOCH) {
      this.log(`${part.topic}-${part.partition}: ${r.errorMessage ?? "stale state epoch"}; re-reading`)
      part.value = undefined
      part.again = true
      return false
    }
    if (r.errorCode === E.FENCED_LEADER_EPOCH) return false
    if (r.errorCode === E.INVALID_CLUSTER_MIRROR_STATES) {
      // The coordinator holds a state this transition does not start from: re-read and re-plan.
      this.log(`${part.topic}-${part.partition}: ${r.errorMessage ?? "invalid transition"}; re-reading`)
      part.value = undefined
      part.again = true
      return false
    }
    return undefined
  }

  /**
   * When this broker coordinates the partition too, its cache and the coordinator's hold equal immutable
   * values: keep one object (thousands of idle partitions otherwise hold two copies each).
   */
  private sharedWithCoordinator(part: Part, value: Value): Value {
    const n = this.options.metadata.stateTopic()?.numPartitions
    if (n === undefined) return value
    const stored = this.options.coordinator.get(MirrorStateRecords.key(part.mirror, part.topicId, part.partition), n)
    return stored !== undefined &&
      stored.state === value.state &&
      stored.previousState === value.previousState &&
      stored.retryAttempt === value.retryAttempt &&
      stored.errorMessage === value.errorMessage &&
      stored.lastMirrorEpoch === value.lastMirrorEpoch &&
      stored.stateEpoch === value.stateEpoch
      ? stored
      : value
  }

  // ------------------------------------------------------------------------------------------ routing

  /** Where a key's state lives: this broker's coordinator, another broker, or nowhere yet. */
  private route(
    mirror: string,
    topicId: string,
    partition: number
  ): { node: number; numPartitions: number } | undefined {
    const st = this.options.metadata.stateTopic()
    if (st === undefined) return undefined
    const p = Hashing.mirrorStatePartition(mirror, topicId, partition, st.numPartitions)
    return { node: st.leader(p), numPartitions: st.numPartitions }
  }

  private writeState(
    part: Part,
    state: State,
    lastMirrorEpoch: number,
    value: Value | undefined
  ): Promise<{ readonly errorCode: number; readonly errorMessage: string | null; readonly stateEpoch: number }> {
    const r = this.route(part.mirror, part.topicId, part.partition)
    if (r === undefined || r.node < 0)
      return Promise.resolve({
        errorCode: E.COORDINATOR_NOT_AVAILABLE,
        errorMessage: "The __mirror_state coordinator is not available",
        stateEpoch: -1
      })
    return new Promise((resolve) => {
      const k = `${r.node}\u0000${part.mirror}`
      let q = this.writeQueue.get(k)
      if (q === undefined) this.writeQueue.set(k, (q = []))
      q.push({ part, epoch: part.leaderEpoch, state, lastMirrorEpoch, value, resolve })
      this.scheduleFlush()
    })
  }

  /** The coordinator's state of a partition (read before acting on it, and by validation). */
  private readState(
    part: ReadEntry["part"]
  ): Promise<Either.Either<Value, { errorCode: number; errorMessage: string }>> {
    const r = this.route(part.mirror, part.topicId, part.partition)
    // No `__mirror_state` yet: nothing was ever mirrored (§5.8 step 3).
    if (r === undefined) return Promise.resolve(Either.right(MirrorStateMachine.initial))
    if (r.node < 0)
      return Promise.resolve(
        Either.left({
          errorCode: E.COORDINATOR_NOT_AVAILABLE,
          errorMessage: "The __mirror_state coordinator is not available"
        })
      )
    if (r.node === this.options.metadata.nodeId) {
      const v = this.options.coordinator.get(
        MirrorStateRecords.key(part.mirror, part.topicId, part.partition),
        r.numPartitions
      )
      return Promise.resolve(
        v === undefined
          ? Either.left({
              errorCode: E.COORDINATOR_LOAD_IN_PROGRESS,
              errorMessage: "The __mirror_state partition is loading"
            })
          : Either.right(v)
      )
    }
    return new Promise((resolve) => {
      const k = `${r.node}\u0000${part.mirror}`
      let q = this.readQueue.get(k)
      if (q === undefined) this.readQueue.set(k, (q = []))
      q.push({ part, resolve })
      this.scheduleFlush()
    })
  }

  /**
   * Sends what was queued in this turn of the event loop: one Read/WriteMirrorStates per coordinator and
   * mirror, fanned out with `FanOut.forEachBroker` (each under the call timeout); one broker's failure or
   * silence answers its own entries only.
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    setImmediate(() => {
      this.flushScheduled = false
      const batches: Array<Batch> = []
      for (const [k, entries] of this.writeQueue) batches.push({ _tag: "Write", ...splitKey(k), entries })
      for (const [k, entries] of this.readQueue) batches.push({ _tag: "Read", ...splitKey(k), entries })
      this.writeQueue = new Map()
      this.readQueue = new Map()
      Runtime.runFork(this.runtime)(
        FanOut.forEachBroker(
          batches,
          (b) => (b._tag === "Write" ? this.sendWrites(b) : this.sendReads(b)),
          (outcomes) => {
            for (const { target, result } of outcomes) {
              if (target._tag === "Write") {
                if (Either.isRight(result)) this.answerWrites(target, result.right as WriteMirrorStates.Response)
                else failWrites(target, E.COORDINATOR_NOT_AVAILABLE, result.left.message)
              } else if (Either.isRight(result)) this.answerReads(target, result.right as ReadMirrorStates.Response)
              else failReads(target, E.COORDINATOR_NOT_AVAILABLE, result.left.message)
            }
          },
          {
            concurrency: Math.max(1, batches.length),
            timeoutMs: this.callTimeoutMs,
            describe: (b) => `${b._tag === "Write" ? "WriteMirrorStates" : "ReadMirrorStates"} to broker ${b.node}`
          }
        )
      )
    })
  }

  private writeTopics(b: WriteBatch): WriteMirrorStates.Request["topics"] {
    const local = b.node === this.options.metadata.nodeId
    return [...groupByTopic(b.entries)].map(([name, list]) => ({
      name,
      partitions: list.map((e) => ({
        partitionIndex: e.part.partition,
        lastMirrorEpoch: e.lastMirrorEpoch,
        state: MirrorPartitionState.toByte(e.state),
        leaderEpoch: e.epoch,
        stateEpoch: e.state === "UNKNOWN" ? -1 : (e.part.value?.stateEpoch ?? -1),
        previousState: MirrorPartitionState.toByte(e.value?.previousState ?? "UNKNOWN"),
        retryAttempt: e.value?.retryAttempt ?? 0,
        errorMessage: e.value?.errorMessage ?? null,
        ...(local && e.value !== undefined
          ? {
              failure: {
                previousState: e.value.previousState,
                retryAttempt: e.value.retryAttempt,
                errorMessage: e.value.errorMessage
              }
            }
          : {})
      }))
    }))
  }

  /** WriteMirrorStates to the batch's coordinator: this broker's own, or another broker's. */
  private sendWrites(b: WriteBatch): Effect.Effect<WriteMirrorStates.Response, CoordinatorError.CallError> {
    return Effect.suspend(() => {
      const request = { mirrorName: b.mirror, topics: this.writeTopics(b), stoppedTopics: [] }
      return b.node === this.options.metadata.nodeId
        ? this.callEffect("WriteMirrorStates", () => this.options.coordinator.write(request))
        : this.callEffect("WriteMirrorStates", () => this.options.channel.write(b.node, request))
    })
  }

  private answerWrites(b: WriteBatch, res: WriteMirrorStates.Response): void {
    if (res.errorCode !== E.NONE) {
      failWrites(b, res.errorCode, res.errorMessage ?? Errors.message(res.errorCode))
      return
    }
    const answers = new TopicPartitionMap<(typeof res.topics)[number]["partitions"][number]>()
    for (const t of res.topics) for (const p of t.partitions) answers.set(t.name, p.partitionIndex, p)
    for (const e of b.entries) {
      const a = answers.get(e.part.topic, e.part.partition)
      e.resolve(
        a === undefined
          ? { errorCode: E.UNKNOWN_SERVER_ERROR, errorMessage: "no answer for the partition", stateEpoch: -1 }
          : { errorCode: a.errorCode, errorMessage: a.errorMessage, stateEpoch: a.stateEpoch }
      )
    }
  }

  /** ReadMirrorStates to another broker's coordinator. */
  private sendReads(b: ReadBatch): Effect.Effect<ReadMirrorStates.Response, CoordinatorError.CallError> {
    const request: ReadMirrorStates.Request = {
      mirrorName: b.mirror,
      topics: [...groupByTopic(b.entries)].map(([name, list]) => ({
        name,
        partitions: list.map((e) => ({ partitionIndex: e.part.partition, leaderEpoch: -1, stateEpoch: -1 }))
      }))
    }
    return this.callEffect("ReadMirrorStates", () => this.options.channel.read(b.node, request))
  }

  private answerReads(b: ReadBatch, res: ReadMirrorStates.Response): void {
    if (res.errorCode !== E.NONE) {
      failReads(b, res.errorCode, res.errorMessage ?? Errors.message(res.errorCode))
      return
    }
    const answers = new TopicPartitionMap<(typeof res.topics)[number]["partitions"][number]>()
    for (const t of res.topics) for (const p of t.partitions) answers.set(t.name, p.partitionIndex, p)
    for (const e of b.entries) {
      const a = answers.get(e.part.topic, e.part.partition)
      if (a === undefined) e.resolve(Either.left({ errorCode: E.UNKNOWN_SERVER_ERROR, errorMessage: "no answer" }))
      else if (a.errorCode !== E.NONE)
        e.resolve(Either.left({ errorCode: a.errorCode, errorMessage: a.errorMessage ?? Errors.message(a.errorCode) }))
      else e.resolve(Either.right(stateValueOf(a)))
    }
  }

  private deletePending(): void {
    for (const name of [...this.pendingDeletes]) {
      if (this.options.metadata.mirrorConfigs(name) !== undefined) {
        this.pendingDeletes.delete(name)
        continue
      }
      this.call("the deletion of a mirror's state", () => this.options.coordinator.deleteMirror(name)).then(
        (n) => {
          this.pendingDeletes.delete(name)
          if (n > 0) this.log(`deleted the mirror state of ${n} partition(s) of mirror ${name}`)
        },
        (e) => this.log(`deleting the mirror state of ${name} failed (retried on the next update): ${messageOf(e)}`)
      )
    }
  }
}
