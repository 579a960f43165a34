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
 * fetcher event, retry timer) runs another step after it. Decisions come from `MirrorStateMachine`; the
 * manager must not touch logs, sockets or the metadata log itself — only the ports.
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
import { Either, Option } from "effect"
import type { ClusterMirrorCoordinator } from "./ClusterMirrorCoordinator.js"
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
  /** BumpLeaderEpochs through the controller; resolves once this broker's image shows the new epochs. */
  readonly bumpLeaderEpochs: (
    partitions: ReadonlyArray<{ readonly topicId: string; readonly partition: number; readonly minLeaderEpoch: number }>
  ) => Promise<void>
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
  timer: ReturnType<typeof setTimeout> | undefined = undefined
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

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref())
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
  private readonly pacer = new Pacer()

  constructor(private readonly options: MirrorMetadataManagerOptions) {
    this.retryConfig = options.retry ?? MirrorStateMachine.defaultRetryConfig
    this.random = options.random ?? Math.random
    this.log = options.log ?? (() => {})
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
    this.options.partitions
      .bumpLeaderEpochs([
        { topicId: part.topicId, partition, minLeaderEpoch: sourceEpoch + LEADER_EPOCH_BUMP_INCREMENT }
      ])
      .catch((e) => this.log(`proactive epoch bump of ${topic}-${partition} failed: ${messageOf(e)}`))
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
          groupSyncStatuses: []
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
        groupSyncStatuses: []
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
    const deadline = Date.now() + (this.options.stoppingWaitMs ?? STOPPING_WAIT_MS)
    for (;;) {
      const v = await this.validateOnce(op, mirror, topicNames)
      if (v._tag === "Valid" || op !== "delete" || !v.stopping || Date.now() > deadline) return v
      await sleep(100)
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
    const results = await Promise.all(reads.map((r) => this.readState(r)))
    for (let i = 0; i < reads.length; i++) {
      const r = results[i]!
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
    this.closed = true
    this.pacer.close()
    for (const part of this.parts.values()) {
      part.gone = true
      if (part.timer !== undefined) clearTimeout(part.timer)
    }
    this.parts.clear()
  }

  // ------------------------------------------------------------------------------------------ the loop

  private drop(part: Part): void {
    part.gone = true
    if (part.timer !== undefined) clearTimeout(part.timer)
    part.timer = undefined
    this.parts.delete(part.topic, part.partition)
    this.options.partitions.removeFetcher(part.mirror, part.topic, part.partition)
  }

  private kick(part: Part): void {
    if (part.gone) return
    if (part.running) {
      part.again = true
      return
    }
    part.running = true
    void this.run(part)
  }

  private async run(part: Part): Promise<void> {
    try {
      do {
        part.again = false
        try {
          await this.step(part)
        } catch (e) {
          this.log(`mirror partition ${part.topic}-${part.partition}: ${messageOf(e)}`)
          await sleep(500)
          part.again = true
        }
      } while (part.again && !part.gone && !this.closed)
    } finally {
      part.running = false
    }
  }

  /** Runs `kick` after `ms`, unless a timer is already set. */
  private later(part: Part, ms: number): void {
    if (part.timer !== undefined || part.gone) return
    part.timer = setTimeout(() => {
      part.timer = undefined
      this.kick(part)
    }, ms)
    part.timer.unref?.()
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
      clearTimeout(part.timer)
      part.timer = undefined
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
        if (!event.retryable && part.timer !== undefined) {
          clearTimeout(part.timer)
          part.timer = undefined
        }
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
        if (part.timer !== undefined) clearTimeout(part.timer)
        part.timer = undefined
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
      await this.options.partitions.bumpLeaderEpochs([
        { topicId: part.topicId, partition: part.partition, minLeaderEpoch: sourceEpoch + LEADER_EPOCH_BUMP_INCREMENT }
      ])
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
      const found = await this.options.source.prepareTruncation(part.mirror, part.topic, part.topicId, [part.partition])
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
      await this.options.partitions.truncateToEpoch(part.topic, part.partition, lme)
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
   * STOPPING (§5.4): remove the fetcher, write the last mirror epoch, bump the leader epoch above it,
   * abort open transactions and reset producer state, then → STOPPED (writable).
   */
  private async stopSequence(part: Part): Promise<void> {
    const ports = this.options.partitions
    ports.removeFetcher(part.mirror, part.topic, part.partition)
    const lme = ports.latestEpoch(part.topic, part.partition)
    try {
      if (lme >= 0) {
        if (!(await this.persist(part, part.value!, lme))) return
        await ports.bumpLeaderEpochs([{ topicId: part.topicId, partition: part.partition, minLeaderEpoch: lme }])
      }
      const sourceClusterId = this.options.metadata.mirrorConfigs(part.mirror)?.get("mirror.source.cluster.id") ?? null
      if (!(await this.paced(part))) return
      await ports.finishStop(part.topic, part.partition, sourceClusterId)
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

  private scheduleRetry(part: Part): void {
    const v = part.value
    if (v === undefined || !MirrorStateMachine.shouldRetry(v, this.retryConfig)) return
    if (part.timer !== undefined) clearTimeout(part.timer)
    const delay = MirrorStateMachine.retryDelay(v.retryAttempt, this.retryConfig, this.random)
    part.timer = setTimeout(() => {
      part.timer = undefined
      part.retryDue = true
      this.kick(part)
    }, delay)
    part.timer.unref?.()
  }

  /**
   * Writes `next` (and an LME record when `lastMirrorEpoch` >= 0) to the partition's coordinator before
   * anything acts on it. Transient errors retry with backoff for as long as this broker leads the
   * partition; a stale state epoch re-reads the state; a newer leader stops this one. True once written.
   */
  private async persist(part: Part, next: Value, lastMirrorEpoch = -1): Promise<boolean> {
    const epoch = part.leaderEpoch
    const writeState = next !== part.value || lastMirrorEpoch < 0
    let backoff = 100
    for (;;) {
      if (part.gone || this.closed || part.leaderEpoch !== epoch) return false
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
      await sleep(backoff)
      backoff = Math.min(backoff * 2, 2000)
    }
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

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    setImmediate(() => {
      this.flushScheduled = false
      const writes = this.writeQueue
      const reads = this.readQueue
      this.writeQueue = new Map()
      this.readQueue = new Map()
      for (const [k, entries] of writes) void this.flushWrites(k, entries)
      for (const [k, entries] of reads) void this.flushReads(k, entries)
    })
  }

  private async flushWrites(k: string, entries: ReadonlyArray<WriteEntry>): Promise<void> {
    const [nodeText, mirror] = k.split("\u0000") as [string, string]
    const node = Number(nodeText)
    const byTopic = groupByTopic(entries)
    const local = node === this.options.metadata.nodeId
    const topics = [...byTopic].map(([name, list]) => ({
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
    const fail = (errorCode: number, errorMessage: string) => {
      for (const e of entries) e.resolve({ errorCode, errorMessage, stateEpoch: -1 })
    }
    let res: WriteMirrorStates.Response
    try {
      res = local
        ? await this.options.coordinator.write({ mirrorName: mirror, topics, stoppedTopics: [] })
        : await this.options.channel.write(node, { mirrorName: mirror, topics, stoppedTopics: [] })
    } catch (e) {
      fail(E.COORDINATOR_NOT_AVAILABLE, messageOf(e))
      return
    }
    if (res.errorCode !== E.NONE) {
      fail(res.errorCode, res.errorMessage ?? Errors.message(res.errorCode))
      return
    }
    const answers = new TopicPartitionMap<(typeof res.topics)[number]["partitions"][number]>()
    for (const t of res.topics) for (const p of t.partitions) answers.set(t.name, p.partitionIndex, p)
    for (const e of entries) {
      const a = answers.get(e.part.topic, e.part.partition)
      e.resolve(
        a === undefined
          ? { errorCode: E.UNKNOWN_SERVER_ERROR, errorMessage: "no answer for the partition", stateEpoch: -1 }
          : { errorCode: a.errorCode, errorMessage: a.errorMessage, stateEpoch: a.stateEpoch }
      )
    }
  }

  private async flushReads(k: string, entries: ReadonlyArray<ReadEntry>): Promise<void> {
    const [nodeText, mirror] = k.split("\u0000") as [string, string]
    const byTopic = groupByTopic(entries)
    const request: ReadMirrorStates.Request = {
      mirrorName: mirror,
      topics: [...byTopic].map(([name, list]) => ({
        name,
        partitions: list.map((e) => ({ partitionIndex: e.part.partition, leaderEpoch: -1, stateEpoch: -1 }))
      }))
    }
    const fail = (errorCode: number, errorMessage: string) => {
      for (const e of entries) e.resolve(Either.left({ errorCode, errorMessage }))
    }
    let res: ReadMirrorStates.Response
    try {
      res = await this.options.channel.read(Number(nodeText), request)
    } catch (e) {
      fail(E.COORDINATOR_NOT_AVAILABLE, messageOf(e))
      return
    }
    if (res.errorCode !== E.NONE) {
      fail(res.errorCode, res.errorMessage ?? Errors.message(res.errorCode))
      return
    }
    const answers = new TopicPartitionMap<(typeof res.topics)[number]["partitions"][number]>()
    for (const t of res.topics) for (const p of t.partitions) answers.set(t.name, p.partitionIndex, p)
    for (const e of entries) {
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
      this.options.coordinator.deleteMirror(name).then(
        (n) => {
          this.pendingDeletes.delete(name)
          if (n > 0) this.log(`deleted the mirror state of ${n} partition(s) of mirror ${name}`)
        },
        (e) => this.log(`deleting the mirror state of ${name} failed (retried on the next update): ${messageOf(e)}`)
      )
    }
  }
}
