/**
 * The controller runtime: the single writer of the metadata log.
 *
 * Every operation runs alone, in arrival order: decide against the committed state → replay the
 * records into a candidate state (a replay defect aborts with nothing written) → append them to the
 * metadata log (fsynced; one batch, or a metadata transaction over several when they exceed
 * `maxRecordsPerBatch`) → adopt the candidate → answer. A restart applies transactions whole and
 * aborts one the previous run left unfinished. Brokers learn every change by fetching the
 * log. Soft state (broker heartbeat times) lives here, never in the records. A timer fences brokers
 * whose session expired and elects new leaders for what they led.
 */
import {
  type AlterPartition,
  type AlterPartitionReassignments,
  type BumpLeaderEpochs,
  type CreatePartitions,
  type CreateTopics,
  type DeleteTopics,
  type AlterClientQuotas,
  type AlterUserScramCredentials,
  Errors,
  type Fetch,
  type Spec,
  type IncrementalAlterConfigs,
  type ListPartitionReassignments,
  type MetadataRecords,
  Scram,
  Uuid
} from "@clustermirror/protocol"
import type {
  BrokerHeartbeat,
  BrokerRegistration,
  CreateClusterMirror,
  DeleteClusterMirror,
  ElectLeaders,
  PauseMirrorTopics,
  ResumeMirrorTopics,
  StartMirrorTopics,
  StopMirrorTopics,
  UnregisterBroker,
  UpdateFeatures
} from "@clustermirror/protocol"
import { MetadataDelta, MetadataImage, MetadataLog, MetadataTransaction } from "@clustermirror/metadata-log"
import { Cause, type Clock, Duration, Effect, Either, Exit, Queue, Scope } from "effect"
import type { Acl } from "@clustermirror/authorizer"
import * as AclControl from "./AclControl.js"
import * as BrokerHeartbeats from "./BrokerHeartbeats.js"
import * as ClusterControl from "./ClusterControl.js"
import * as ConfigurationControl from "./ConfigurationControl.js"
import * as ControllerErrors from "./ControllerError.js"
import type { ControllerResult } from "./ControllerResult.js"
import * as ControllerState from "./ControllerState.js"
import * as FeatureControl from "./FeatureControl.js"
import * as MetadataQuorum from "./MetadataQuorum.js"
import * as MirrorControl from "./MirrorControl.js"
import * as ProducerIdControl from "./ProducerIdControl.js"
import * as ReplicationControl from "./ReplicationControl.js"
import * as ClientQuotaControl from "./ClientQuotaControl.js"
import * as ScramControl from "./ScramControl.js"

export interface QuorumControllerOptions {
  readonly nodeId: number
  readonly clusterId: string
  readonly log: MetadataLog.MetadataLogService
  /** `broker.session.timeout.ms` */
  readonly sessionTimeoutMs?: number
  /** `num.partitions` */
  readonly defaultPartitions?: number
  /** `default.replication.factor` */
  readonly defaultReplicationFactor?: number
  /** `unclean.leader.election.enable` for topics that do not set it. */
  readonly uncleanLeaderElectionEnable?: boolean
  readonly log_?: (line: string) => void
  /** Committed records between two snapshots of the metadata image (default 10,000). */
  readonly snapshotEveryRecords?: number
  /** `mirror.state.topic.num.partitions` (default 50). */
  readonly mirrorStateTopicPartitions?: number
  /** `mirror.state.topic.replication.factor` (default 3, capped by the live brokers). */
  readonly mirrorStateTopicReplicationFactor?: number
  /** Records per metadata log batch; larger decisions become metadata transactions (default 10,000). */
  readonly maxRecordsPerBatch?: number
  /** `auto.leader.rebalance.enable` (default true). */
  readonly autoLeaderRebalanceEnable?: boolean
  /** `leader.imbalance.check.interval.seconds`, in ms (default 300,000). */
  readonly leaderImbalanceCheckIntervalMs?: number
  /** `leader.imbalance.per.broker.percentage` (default 10). */
  readonly leaderImbalancePerBrokerPercentage?: number
  /**
   * SCRAM credentials a new cluster starts with (`kafka-storage format --add-scram`), written with the
   * bootstrap records; an existing metadata log keeps its own.
   */
  readonly bootstrapScramCredentials?: ReadonlyArray<BootstrapScramCredential>
  /** The `directory.id` of the metadata log's directory (DescribeQuorum's ReplicaDirectoryId); default none. */
  readonly directoryId?: Uuid.Uuid
  /**
   * The leader epoch this controller writes in: its Raft epoch when it is the active controller of a
   * quorum (default 1, the one epoch of a lone controller).
   */
  readonly leaderEpoch?: number
}

export interface BootstrapScramCredential {
  readonly mechanism: Scram.Mechanism
  readonly name: string
  readonly password: string
  readonly iterations: number
}

/** Kafka's `leader.imbalance.check.interval.seconds` default (300 s). */
const DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS = 300_000
/** Kafka's `leader.imbalance.per.broker.percentage` default. */
const DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = 10

/** How often broker sessions are checked for expiry. */
const SESSION_CHECK_INTERVAL_MS = 1000
/** Preferred elections per controller write of a leader rebalance. */
const REBALANCE_ELECTIONS_PER_ROUND = 1000

/** A lone controller's leader epoch in its own log; one controller, one epoch. */
const LONE_CONTROLLER_EPOCH = 1

/** A whole-request failure: the Kafka error code and message. */
export interface RequestError {
  readonly errorCode: number
  readonly errorMessage: string
}

const toRequestError = (e: ControllerErrors.ApiError | { errorCode: number; message: string }): RequestError => ({
  errorCode: e.errorCode,
  errorMessage: "errorMessage" in e && e.errorMessage !== null ? e.errorMessage : "message" in e ? e.message : ""
})

export interface RegisterBrokerResult {
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly brokerEpoch: bigint
}

/**
 * A controller's state replayed from the metadata log: what a controller opens with (the latest
 * snapshot plus the log after it), and what a standby controller of a quorum keeps current by replaying
 * each commit, so that it takes over as the active controller without reading the log again.
 */
export interface Loaded {
  readonly state: ControllerState.ControllerState
  readonly image: MetadataImage.MetadataImage
  /** The offset the next record will be written at. */
  readonly offset: number
  /** The transaction the log ends inside of (the writer stopped, or an append failed, in the middle). */
  readonly transaction: MetadataTransaction.TransactionBuffer<readonly [MetadataRecords.MetadataRecord, number]>
}

/**
 * Reads the latest snapshot and the log after it. Records restored from a snapshot count as written
 * at the snapshot's last offset; records of a metadata transaction apply at its End, each at its own
 * offset, and an aborted one never.
 */
export const load = (
  log: MetadataLog.MetadataLogService
): Effect.Effect<Loaded, ControllerErrors.CorruptMetadataLog | MetadataLogError> =>
  Effect.gen(function* () {
    const snapshot = yield* log.latestSnapshot
    return yield* catchUp(log, snapshot._tag === "Some" ? fromSnapshot(snapshot.value) : empty())
  })

/** The state of an empty log. */
export const empty = (): Loaded => ({
  state: ControllerState.empty,
  image: MetadataImage.empty,
  offset: 0,
  transaction: new MetadataTransaction.TransactionBuffer()
})

/** The state a snapshot holds: its records count as written at its last offset. */
export const fromSnapshot = (s: MetadataLog.StoredSnapshot): Loaded => ({
  state: ControllerState.replaySnapshot(ControllerState.empty, s.records, BigInt(s.provenance.lastOffset)),
  image: MetadataDelta.make(MetadataImage.empty, s.records).apply(s.provenance),
  offset: s.endOffset,
  transaction: new MetadataTransaction.TransactionBuffer()
})

/**
 * Replays the log from `from.offset` to its end onto `from` (whose transaction buffer it continues).
 * Control batches (Kafka's leader changes) carry no records but move the offset and the image's epoch.
 */
export const catchUp = (
  log: MetadataLog.MetadataLogService,
  from: Loaded
): Effect.Effect<Loaded, ControllerErrors.CorruptMetadataLog | MetadataLogError> =>
  Effect.gen(function* () {
    let { state, image, offset } = from
    const transaction = from.transaction
    const end = yield* log.logEndOffset
    while (offset < end) {
      const read = yield* log.readFrom(offset)
      if (read.batches.length === 0) break
      for (const bytes of read.batches) {
        const batch = MetadataLog.decodeBatch(bytes)
        if (Either.isLeft(batch))
          return yield* new ControllerErrors.CorruptMetadataLog({
            message: `corrupt metadata log at ${offset}: ${String(batch.left)}`
          })
        const { records, provenance } = batch.right
        if (provenance.lastOffset < offset) continue
        const first = provenance.lastOffset - records.length + 1
        const ready: Array<MetadataRecords.MetadataRecord> = []
        for (const [i, record] of records.entries())
          for (const [r, at] of transaction.offer(record, [record, first + i])) {
            state = ControllerState.replay(state, r, BigInt(at))
            ready.push(r)
          }
        image = MetadataDelta.make(image, ready).apply(provenance)
        offset = provenance.lastOffset + 1
      }
    }
    return { state, image, offset, transaction }
  })

/** What the log service fails with: whatever its effects declare. */
type MetadataLogError = Effect.Effect.Error<ReturnType<MetadataLog.MetadataLogService["readFrom"]>>

/** A message for what a failed effect left. */
const describeCause = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause)
  return e instanceof Error ? e.message : String(e)
}

export class QuorumController {
  private state: ControllerState.ControllerState
  private heartbeats: BrokerHeartbeats.BrokerHeartbeats
  /** The last metadata fetch of each broker (soft state, for DescribeQuorum's observers). */
  private fetches: MetadataQuorum.FetchStates = MetadataQuorum.empty
  /** Brokers heard from since this controller started (seeded sessions only delay fencing). */
  private readonly contacted = new Set<number>()
  /** The offset the next record will be written at. */
  private nextOffset: bigint
  private closed = false
  /** `close` was called: the timers start nothing more. */
  private closing = false
  /**
   * Set when an append failed: what the log holds is unknown to this controller, so before its next
   * write it reopens its state from the log. Until that succeeds every write fails (retriable).
   */
  private reloadNeeded = false
  /** This controller stopped leading its quorum's log: every write is refused (NOT_CONTROLLER). */
  private deposed = false
  private readonly commitWaiters = new Set<() => void>()
  /** The metadata image as of the last commit: what a snapshot writes. */
  private image: MetadataImage.MetadataImage
  private recordsSinceSnapshot = 0
  private lastSessionCheck: number

  private constructor(
    private readonly options: QuorumControllerOptions,
    loaded: Loaded,
    /** The single writer's queue: one fiber takes the operations one at a time, in arrival order. */
    private readonly jobs: Queue.Queue<Effect.Effect<void>>,
    /** Owns the writer and the timers; `close` closes it. */
    private readonly scope: Scope.CloseableScope,
    private readonly clock: Clock.Clock
  ) {
    this.state = loaded.state
    this.nextOffset = BigInt(loaded.offset)
    this.image = loaded.image
    // Brokers registered before this controller started get a full session to reach it.
    this.heartbeats = BrokerHeartbeats.seed(loaded.state.cluster.brokers.keys(), this.now())
    this.lastSessionCheck = this.now()
  }

  /**
   * Opens the controller on the caller's runtime (its `Clock` drives the session and rebalance timers):
   * restart = the latest snapshot + the log after it; a new cluster is bootstrapped with its feature
   * levels. `close` stops it.
   */
  static make(
    options: QuorumControllerOptions,
    /** The state replayed so far (a standby taking over): only the log after it is read. */
    replayed?: Loaded
  ): Effect.Effect<QuorumController, ControllerErrors.RuntimeError | MetadataLogError> {
    return Effect.gen(function* () {
      const loaded = yield* replayed === undefined ? load(options.log) : catchUp(options.log, replayed)
      const clock = yield* Effect.clock
      const scope = yield* Scope.make()
      const jobs = yield* Queue.unbounded<Effect.Effect<void>>()
      const controller = new QuorumController(options, loaded, jobs, scope, clock)
      return yield* Effect.gen(function* () {
        yield* Effect.forkIn(Effect.forever(Effect.flatten(Queue.take(jobs))), scope)
        yield* Effect.forkIn(controller.sessionTimer, scope)
        if (options.autoLeaderRebalanceEnable ?? true) yield* Effect.forkIn(controller.rebalanceTimer, scope)
        // The previous controller stopped between two batches of a transaction: close it, so that brokers
        // drop what they hold of it and nothing written from now on joins it.
        if (loaded.transaction.isOpen) yield* controller.enqueue(controller.abortOpenTransaction(loaded))
        // A new cluster: nothing but control records (a quorum's leader changes) is in the log yet.
        if (loaded.state.features.metadataVersion === null) {
          const boot = FeatureControl.bootstrapRecords()
          if (Either.isLeft(boot))
            return yield* Effect.die(new Error(`cannot bootstrap the cluster: ${boot.left.message}`))
          yield* controller.enqueue(controller.writeEffect(() => ({ records: boot.right, response: undefined })))
          const scram = options.bootstrapScramCredentials ?? []
          if (scram.length > 0) {
            // One decision per credential: a user may start with both mechanisms, which one
            // AlterUserScramCredentials request may not carry.
            const results = scram.map((c) => {
              const salt = Scram.randomSalt()
              return ScramControl.alterUserScramCredentials(ScramControl.empty, {
                deletions: [],
                upsertions: [
                  {
                    name: c.name,
                    mechanism: Scram.mechanismId(c.mechanism),
                    iterations: c.iterations,
                    salt,
                    saltedPassword: Scram.saltedPassword(c.mechanism, c.password, salt, c.iterations)
                  }
                ]
              })
            })
            const refused = results.flatMap((r) => r.response).find((r) => r.errorCode !== 0)
            if (refused !== undefined)
              return yield* Effect.die(
                new Error(`cannot bootstrap the SCRAM credential of user ${refused.user}: ${refused.errorMessage}`)
              )
            const result = { records: results.flatMap((r) => r.records), response: undefined }
            yield* controller.enqueue(controller.writeEffect(() => result, "bootstrap SCRAM credentials"))
          }
        } else if ((options.bootstrapScramCredentials ?? []).length > 0)
          options.log_?.(
            "the metadata log exists already: its SCRAM credentials stay as they are (the bootstrap credentials apply to a new cluster only)"
          )
        return controller
      }).pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
    })
  }

  /** `make` on the default runtime (the wall clock), for Promise callers. */
  static open(options: QuorumControllerOptions): Promise<QuorumController> {
    return Effect.runPromise(QuorumController.make(options))
  }

  /** The current time, from the `Clock` of the runtime the controller was made on. */
  private now(): number {
    return this.clock.unsafeCurrentTimeMillis()
  }

  /** Puts an operation at the end of the writer's queue; resolves with its outcome once it ran. */
  private enqueue<A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E | ControllerErrors.ControllerClosed> {
    return Effect.async<A, E | ControllerErrors.ControllerClosed>((resume) => {
      const job = Effect.flatMap(Effect.exit(effect), (exit) => Effect.sync(() => resume(exit)))
      if (!Queue.unsafeOffer(this.jobs, job))
        resume(new ControllerErrors.ControllerClosed({ message: "controller closed" }))
    })
  }

  /** `enqueue` for Promise callers: rejects with the operation's error itself (a tagged error or a defect). */
  private submit<A, E>(effect: Effect.Effect<A, E>): Promise<A> {
    return new Promise<A>((resolve, reject) => {
      const job = Effect.flatMap(Effect.exit(effect), (exit) =>
        Effect.sync(() => Exit.match(exit, { onSuccess: resolve, onFailure: (cause) => reject(Cause.squash(cause)) }))
      )
      if (!Queue.unsafeOffer(this.jobs, job))
        reject(new ControllerErrors.ControllerClosed({ message: "controller closed" }))
    })
  }

  /** Runs an effect on the controller's clock for a Promise caller; rejects with its error itself. */
  private run<A, E>(effect: Effect.Effect<A, E>): Promise<A> {
    return Effect.runPromiseExit(Effect.withClock(effect, this.clock)).then((exit) =>
      Exit.match(exit, {
        onSuccess: (a) => a,
        onFailure: (cause) => {
          throw Cause.squash(cause)
        }
      })
    )
  }

  /** Writes the current image as a snapshot, so that a restart replays only what follows it. */
  snapshot(): Promise<void> {
    return this.submit(this.snapshotEffect)
  }

  private readonly snapshotEffect = Effect.suspend(() => {
    if (this.nextOffset === 0n || this.reloadNeeded) return Effect.void
    return Effect.map(this.options.log.writeSnapshot(this.image, Number(this.nextOffset)), () => {
      this.recordsSinceSnapshot = 0
    })
  })

  get clusterId(): string {
    return this.options.clusterId
  }

  /** The leader epoch this controller writes in. */
  get epoch(): number {
    return this.options.leaderEpoch ?? LONE_CONTROLLER_EPOCH
  }

  get nodeId(): number {
    return this.options.nodeId
  }

  /** The committed state (for reads that need no serialization). */
  get current(): ControllerState.ControllerState {
    return this.state
  }

  /** The highest committed offset of the metadata log (-1 when empty). */
  get committedOffset(): bigint {
    return this.nextOffset - 1n
  }

  private write<R>(
    decide: (state: ControllerState.ControllerState) => ControllerResult<R>,
    name = "metadata"
  ): Promise<R> {
    return this.submit(this.writeEffect(decide, name))
  }

  /**
   * One decision, run by the writer alone: decide, replay into a candidate, append, adopt, answer.
   * Records that do not fit one batch are appended as one metadata transaction (`name`) over several
   * batches. A failed append is fatal for the in-memory state: nothing of the decision is adopted, and
   * the controller reopens its state from the log (which also aborts a transaction the failure left
   * open), so that what it holds is always a replay of what the log holds.
   */
  private writeEffect<R>(
    decide: (state: ControllerState.ControllerState) => ControllerResult<R>,
    name = "metadata"
  ): Effect.Effect<R, ControllerErrors.RuntimeError> {
    return Effect.gen(this, function* () {
      if (this.closed) return yield* new ControllerErrors.ControllerClosed({ message: "controller closed" })
      if (this.deposed)
        return yield* new ControllerErrors.ControllerDeposed({
          message: "this controller is no longer the active controller"
        })
      if (this.reloadNeeded) yield* this.reload
      const result = decide(this.state)
      if (result.records.length === 0) return result.response
      const batches = MetadataTransaction.transactionBatches(
        name,
        result.records,
        this.options.maxRecordsPerBatch ?? MetadataTransaction.MAX_RECORDS_PER_BATCH
      )
      const records = batches.length === 1 ? batches[0]! : batches.flat()
      const candidate = ControllerState.replayAll(this.state, records, this.nextOffset)
      let appended: MetadataLog.AppendResult | undefined
      for (const batch of batches) appended = yield* this.append(batch, name)
      this.adopt(candidate, records, appended!)
      if (this.recordsSinceSnapshot >= (this.options.snapshotEveryRecords ?? 10_000))
        yield* Effect.catchAllCause(this.snapshotEffect, (cause) =>
          // The records are committed and adopted: a snapshot that failed only means a longer replay.
          Effect.sync(() => this.options.log_?.(`writing a metadata snapshot failed: ${describeCause(cause)}`))
        )
      return result.response
    })
  }

  private adopt(
    state: ControllerState.ControllerState,
    records: ReadonlyArray<MetadataRecords.MetadataRecord>,
    appended: MetadataLog.AppendResult
  ): void {
    this.state = state
    this.nextOffset = BigInt(appended.lastOffset) + 1n
    this.image = MetadataDelta.make(this.image, records).apply(appended.provenance)
    this.recordsSinceSnapshot += records.length
    for (const w of [...this.commitWaiters]) w()
  }

  /**
   * Appends one batch; a failure marks the state for a reload from the log and tries it at once. On a
   * quorum's log, `NotLeader` deposes this controller instead: its records may still commit under the
   * next leader, whose controller takes over from the log; this one only refuses from now on.
   */
  private append(
    batch: ReadonlyArray<MetadataRecords.MetadataRecord>,
    name: string
  ): Effect.Effect<MetadataLog.AppendResult, ControllerErrors.MetadataAppendFailed> {
    return Effect.catchAllCause(this.options.log.append(batch, this.epoch), (cause) => {
      const error = new ControllerErrors.MetadataAppendFailed({
        message: `appending ${name} to the metadata log failed: ${describeCause(cause)}`,
        cause: Cause.squash(cause)
      })
      const failure = Cause.failureOption(cause)
      if (failure._tag === "Some" && failure.value._tag === "NotLeader") {
        this.deposed = true
        return Effect.fail(error)
      }
      this.reloadNeeded = true
      this.options.log_?.(`${error.message}; reopening the controller state from the log`)
      // A reload that fails now is tried again before the next write.
      return Effect.zipRight(Effect.ignore(this.reload), Effect.fail(error))
    })
  }

  /**
   * Reopens the state from the log (snapshot + tail), as a restart would, and aborts a transaction the
   * log ends inside of. Heartbeat times are kept; a broker only the log knows gets a full session.
   */
  private readonly reload: Effect.Effect<void, ControllerErrors.MetadataLogUnavailable> = Effect.gen(
    this,
    function* () {
      const loaded = yield* load(this.options.log)
      this.state = loaded.state
      this.image = loaded.image
      this.nextOffset = BigInt(loaded.offset)
      this.recordsSinceSnapshot = 0
      const now = this.now()
      for (const id of loaded.state.cluster.brokers.keys())
        if (!this.heartbeats.lastContactMs.has(id)) this.heartbeats = BrokerHeartbeats.touch(this.heartbeats, id, now)
      if (loaded.transaction.isOpen) yield* this.abortOpenTransaction(loaded)
      this.reloadNeeded = false
      this.options.log_?.(`controller state reopened from the metadata log at offset ${this.nextOffset}`)
      for (const w of [...this.commitWaiters]) w()
    }
  ).pipe(
    Effect.catchAllCause((cause) =>
      Effect.fail(
        new ControllerErrors.MetadataLogUnavailable({
          message: `the controller cannot reopen its state from the metadata log: ${describeCause(cause)}`,
          cause: Cause.squash(cause)
        })
      )
    )
  )

  /** Closes the transaction the log ends inside of; the log then holds records no state ever adopted. */
  private abortOpenTransaction(loaded: Loaded): Effect.Effect<void, ControllerErrors.MetadataAppendFailed> {
    return Effect.gen(this, function* () {
      this.options.log_?.(
        `aborting the unfinished metadata transaction ${loaded.transaction.openName ?? ""} (${loaded.transaction.size} records)`
      )
      const abort = [MetadataTransaction.abortRecord("the controller stopped before the transaction ended")]
      const appended = yield* Effect.catchAllCause(this.options.log.append(abort, this.epoch), (cause) => {
        this.reloadNeeded = true
        return Effect.fail(
          new ControllerErrors.MetadataAppendFailed({
            message: `aborting the unfinished metadata transaction failed: ${describeCause(cause)}`,
            cause: Cause.squash(cause)
          })
        )
      })
      this.adopt(this.state, abort, appended)
    })
  }

  /**
   * The records moving a broker's leaderships and ISR memberships away, decided against the state the
   * request's own records (`records`) leave: for a fenced broker, or a new incarnation of one.
   */
  private leadershipMovesOff(
    state: ControllerState.ControllerState,
    records: ReadonlyArray<MetadataRecords.MetadataRecord>,
    brokerId: number
  ): ReadonlyArray<MetadataRecords.MetadataRecord> {
    const after = ControllerState.replayAll(state, records, this.nextOffset)
    return ReplicationControl.handleBrokerFenced(
      after.replication,
      brokerId,
      this.clusterView(after),
      this.uncleanEnabled(after)
    ).records
  }

  private clusterView(state: ControllerState.ControllerState): ReplicationControl.ClusterView {
    const live = ClusterControl.liveBrokers(state.cluster)
    const active = new Set(live)
    return {
      liveBrokers: live,
      isActive: (id) => active.has(id),
      isRegistered: (id) => state.cluster.brokers.has(id)
    }
  }

  private uncleanEnabled(state: ControllerState.ControllerState): ReplicationControl.UncleanElectionEnabled {
    // The topic's value, else the dynamic cluster default, else this controller's properties.
    const key = "unclean.leader.election.enable"
    const clusterDefault = ConfigurationControl.configsOf(
      state.configs,
      ConfigurationControl.ResourceType.BROKER,
      ""
    ).get(key)
    return (topic) => {
      const v =
        ConfigurationControl.configsOf(state.configs, ConfigurationControl.ResourceType.TOPIC, topic).get(key) ??
        clusterDefault
      return v === undefined ? (this.options.uncleanLeaderElectionEnable ?? false) : v.trim().toLowerCase() === "true"
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Brokers

  registerBroker(request: BrokerRegistration.Request): Promise<RegisterBrokerResult> {
    return this.write<RegisterBrokerResult>((state) => {
      const r = ClusterControl.registerBroker(state.cluster, request, {
        nextBrokerEpoch: this.nextOffset,
        clusterId: this.options.clusterId,
        finalizedFeatures: FeatureControl.finalizedFeatures(state.features),
        now: this.now(),
        // A new incarnation may replace one this controller never heard from (a restart of both).
        heartbeats: {
          lastContactMs: new Map([...this.heartbeats.lastContactMs].filter(([id]) => this.contacted.has(id)))
        },
        ...(this.options.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: this.options.sessionTimeoutMs } : {})
      })
      if (Either.isLeft(r)) return { records: [], response: { ...toRequestError(r.left), brokerEpoch: -1n } }
      const records: MetadataRecords.MetadataRecord[] = [...r.right.records]
      // Like Kafka's unclean-shutdown handling: a new incarnation lost whatever the old one had in memory,
      // so the id leaves every ISR and its leaderships move (new leader epochs), whether or not its old
      // session was fenced yet. Replicas then follow the new leaders and it rejoins as a fresh follower.
      const previous = state.cluster.brokers.get(request.brokerId)
      if (previous !== undefined && previous.incarnationId !== request.incarnationId) {
        records.push(...this.leadershipMovesOff(state, records, request.brokerId))
      }
      return {
        records,
        response: { errorCode: 0, errorMessage: null, brokerEpoch: r.right.response.brokerEpoch }
      }
    }).then((res) => {
      if (res.errorCode === 0) {
        this.heartbeats = BrokerHeartbeats.touch(this.heartbeats, request.brokerId, this.now())
        this.contacted.add(request.brokerId)
      }
      return res
    })
  }

  /**
   * A heartbeat counts as contact when it arrives, not when the write queue reaches it, and one that
   * changes nothing is answered from the committed state at once: neither waits behind expensive work
   * (a large topic creation, a burst of ISR changes), so a busy controller does not expire live sessions.
   */
  brokerHeartbeat(
    request: BrokerHeartbeat.Request
  ): Promise<{ errorCode: number; isCaughtUp: boolean; isFenced: boolean; shouldShutDown: boolean }> {
    const registered = this.state.cluster.brokers.get(request.brokerId)
    if (registered !== undefined && registered.epoch === request.brokerEpoch) this.touch(request.brokerId)
    const quick = this.decideHeartbeat(this.state, request)
    if (quick.records.length === 0) return Promise.resolve(quick.response)
    return this.write((state) => this.decideHeartbeat(state, request)).then((res) => {
      if (res.errorCode === 0) this.touch(request.brokerId)
      return res
    })
  }

  private touch(brokerId: number): void {
    this.heartbeats = BrokerHeartbeats.touch(this.heartbeats, brokerId, this.now())
    this.contacted.add(brokerId)
  }

  private decideHeartbeat(
    state: ControllerState.ControllerState,
    request: BrokerHeartbeat.Request
  ): ControllerResult<{ errorCode: number; isCaughtUp: boolean; isFenced: boolean; shouldShutDown: boolean }> {
    const current = state.cluster.brokers.get(request.brokerId)
    // Only a broker shutting down needs to know whether it still leads (a scan of every partition).
    const leads =
      (request.wantShutDown || current?.inControlledShutdown === true) &&
      ReplicationControl.partitionsLedBy(state.replication, request.brokerId).length > 0
    const r = ClusterControl.processHeartbeat(state.cluster, request, {
      now: this.now(),
      metadataOffsetCommitted: this.committedOffset,
      hasLeaderships: leads
    })
    if (Either.isLeft(r))
      return {
        records: [],
        response: { errorCode: r.left.errorCode, isCaughtUp: false, isFenced: true, shouldShutDown: false }
      }
    const records: MetadataRecords.MetadataRecord[] = [...r.right.records]
    const wasFenced = current?.fenced ?? true
    // An unfenced broker can lead again: partitions without a leader may elect it.
    if (wasFenced && !r.right.response.isFenced) {
      const after = ControllerState.replayAll(state, records, this.nextOffset)
      const elected = ReplicationControl.handleBrokerUnfenced(
        after.replication,
        request.brokerId,
        this.clusterView(after),
        this.uncleanEnabled(after)
      )
      records.push(...elected.records)
    }
    // A broker going away moves its leaderships first.
    if (!wasFenced && r.right.response.isFenced) {
      records.push(...this.leadershipMovesOff(state, records, request.brokerId))
    }
    const { isCaughtUp, isFenced, shouldShutDown } = r.right.response
    return { records, response: { errorCode: 0, isCaughtUp, isFenced, shouldShutDown } }
  }

  /**
   * The session timer (every second, on the controller's `Clock`). When the timer itself ran late (this
   * process stalled), heartbeats may be waiting unread in socket buffers: they are read before anyone's
   * session is judged. The fencing is queued, not awaited, like any other write; its failure is logged.
   */
  private readonly sessionTimer: Effect.Effect<never> = Effect.forever(
    Effect.zipRight(
      Effect.sleep(Duration.millis(SESSION_CHECK_INTERVAL_MS)),
      Effect.sync(() => {
        const now = this.now()
        const stalled = now - this.lastSessionCheck > 2 * SESSION_CHECK_INTERVAL_MS
        this.lastSessionCheck = now
        if (!stalled && !this.closing)
          Queue.unsafeOffer(this.jobs, this.logFailure("fencing brokers whose session expired", this.fenceEffect))
      })
    )
  )

  /** The leader rebalance timer (every `leader.imbalance.check.interval.seconds`). */
  private readonly rebalanceTimer: Effect.Effect<never> = Effect.forever(
    Effect.zipRight(
      Effect.suspend(() =>
        Effect.sleep(
          Duration.millis(this.options.leaderImbalanceCheckIntervalMs ?? DEFAULT_LEADER_IMBALANCE_CHECK_INTERVAL_MS)
        )
      ),
      Effect.suspend(() => (this.closing ? Effect.void : this.logFailure("the leader rebalance", this.rebalanceEffect)))
    )
  )

  /** Runs a timer's operation; a failure is logged with its reason (the write path already reacted to it). */
  private logFailure<A, E>(what: string, effect: Effect.Effect<A, E>): Effect.Effect<void> {
    return Effect.catchAllCause(Effect.asVoid(effect), (cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.void
        : Effect.sync(() => this.options.log_?.(`${what} failed: ${describeCause(cause)}`))
    )
  }

  /**
   * Fences brokers whose session expired and moves their leaderships (the session timer runs it every
   * second). A failure is the request's, not swallowed: a failed append rejects, and the controller
   * reopens its state from the log.
   */
  fenceStaleBrokers(): Promise<ReadonlyArray<number>> {
    return this.submit(this.fenceEffect)
  }

  private readonly fenceEffect: Effect.Effect<ReadonlyArray<number>, ControllerErrors.RuntimeError> = Effect.suspend(
    () =>
      this.writeEffect<ReadonlyArray<number>>((state) => {
        const fenced = ClusterControl.fenceStaleBrokers(
          state.cluster,
          this.heartbeats,
          this.now(),
          this.options.sessionTimeoutMs ?? BrokerHeartbeats.DEFAULT_SESSION_TIMEOUT_MS
        )
        if (fenced.response.length === 0) return { records: [], response: [] }
        const records: MetadataRecords.MetadataRecord[] = [...fenced.records]
        let after = ControllerState.replayAll(state, records, this.nextOffset)
        for (const id of fenced.response) {
          const moved = ReplicationControl.handleBrokerFenced(
            after.replication,
            id,
            this.clusterView(after),
            this.uncleanEnabled(after)
          )
          records.push(...moved.records)
          after = ControllerState.replayAll(state, records, this.nextOffset)
        }
        this.options.log_?.(`fencing brokers ${fenced.response.join(", ")} (session expired)`)
        return { records, response: fenced.response }
      })
  )

  /**
   * Moves leadership back to preferred replicas on brokers whose leader imbalance is above
   * `leader.imbalance.per.broker.percentage` (run every `leader.imbalance.check.interval.seconds`); a
   * round that hit its election cap runs again at once (each round is one write, so other requests
   * go between rounds). Resolves with the partitions moved; rejects when a round's write failed.
   */
  rebalanceLeaders(): Promise<ReadonlyArray<ReplicationControl.TopicIdPartition>> {
    return this.run(this.rebalanceEffect)
  }

  private readonly rebalanceEffect: Effect.Effect<
    ReadonlyArray<ReplicationControl.TopicIdPartition>,
    ControllerErrors.RuntimeError
  > = Effect.gen(this, function* () {
    const moved: ReplicationControl.TopicIdPartition[] = []
    for (;;) {
      const round = yield* this.enqueue(
        this.writeEffect((state) =>
          ReplicationControl.rebalanceLeaders(state.replication, this.clusterView(state), {
            imbalancePerBrokerPercentage:
              this.options.leaderImbalancePerBrokerPercentage ?? DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
            maxElections: REBALANCE_ELECTIONS_PER_ROUND
          })
        )
      )
      moved.push(...round)
      if (round.length < REBALANCE_ELECTIONS_PER_ROUND || this.closed) break
    }
    if (moved.length > 0) this.options.log_?.(`leader rebalance: ${moved.length} partitions back to preferred replicas`)
    return moved
  })

  // -------------------------------------------------------------------------------------------------
  // Topics and partitions

  createTopics(request: CreateTopics.Request): Promise<ReadonlyArray<ReplicationControl.CreatableTopicResult>> {
    return this.write(
      (state) =>
        ReplicationControl.createTopics(state.replication, request, this.clusterView(state), {
          newTopicId: Uuid.random,
          defaultPartitions: this.options.defaultPartitions ?? 1,
          defaultReplicationFactor: this.options.defaultReplicationFactor ?? 1,
          validateConfigs: (topic, configs) => {
            const r = ConfigurationControl.createTopicConfigRecords(topic, configs)
            return Either.isLeft(r) ? { errorCode: r.left.errorCode, errorMessage: r.left.message } : null
          },
          configRecords: (topic, configs) =>
            Either.getOrElse(ConfigurationControl.createTopicConfigRecords(topic, configs), () => [])
        }),
      "CreateTopics"
    )
  }

  createPartitions(
    request: CreatePartitions.Request
  ): Promise<ReadonlyArray<ReplicationControl.CreatePartitionsResult>> {
    return this.write(
      (state) => ReplicationControl.createPartitions(state.replication, request, this.clusterView(state)),
      "CreatePartitions"
    )
  }

  deleteTopics(request: DeleteTopics.Request): Promise<ReadonlyArray<ReplicationControl.DeletableTopicResult>> {
    return this.write((state) => ReplicationControl.deleteTopics(state.replication, request), "DeleteTopics")
  }

  alterPartition(
    request: AlterPartition.Request,
    version: number
  ): Promise<Either.Either<ReplicationControl.AlterPartitionResponse, RequestError>> {
    return this.write<Either.Either<ReplicationControl.AlterPartitionResponse, RequestError>>((state) => {
      const epochs = new Map([...state.cluster.brokers.values()].map((b) => [b.id, b.epoch]))
      const r = ReplicationControl.alterPartition(state.replication, request, epochs, this.clusterView(state), version)
      if (Either.isLeft(r)) return { records: [], response: Either.left(toRequestError(r.left)) }
      return { records: r.right.records, response: Either.right(r.right.response) }
    })
  }

  /**
   * UnregisterBroker (64): removes a broker's registration (see `ClusterControl.unregisterBroker`);
   * BROKER_ID_NOT_REGISTERED with Kafka's message for an id without one.
   */
  unregisterBroker(brokerId: number): Promise<UnregisterBroker.Response> {
    return this.write<UnregisterBroker.Response>((state) => {
      const r = ClusterControl.unregisterBroker(state.cluster, brokerId)
      return Either.isLeft(r)
        ? { records: [], response: { throttleTimeMs: 0, errorCode: r.left.errorCode, errorMessage: r.left.message } }
        : { records: r.right.records, response: { throttleTimeMs: 0, errorCode: 0, errorMessage: null } }
    }, "UnregisterBroker")
  }

  electLeaders(
    request: ElectLeaders.Request
  ): Promise<Either.Either<ReplicationControl.ElectLeadersResponse, RequestError>> {
    return this.write<Either.Either<ReplicationControl.ElectLeadersResponse, RequestError>>((state) => {
      const r = ReplicationControl.electLeaders(state.replication, request, this.clusterView(state))
      if (Either.isLeft(r)) return { records: [], response: Either.left(toRequestError(r.left)) }
      return { records: r.right.records, response: Either.right(r.right.response) }
    })
  }

  /** AlterPartitionReassignments (45): see `ReplicationControl.alterPartitionReassignments`. */
  alterPartitionReassignments(
    request: AlterPartitionReassignments.Request
  ): Promise<ReplicationControl.AlterPartitionReassignmentsResponse> {
    return this.write(
      (state) => ReplicationControl.alterPartitionReassignments(state.replication, request, this.clusterView(state)),
      "AlterPartitionReassignments"
    )
  }

  /** ListPartitionReassignments (46), from the committed state. */
  listPartitionReassignments(
    request: ListPartitionReassignments.Request
  ): Promise<ReplicationControl.ListPartitionReassignmentsResponse> {
    return this.write((state) => ({
      records: [],
      response: ReplicationControl.listPartitionReassignments(state.replication, request)
    }))
  }

  /**
   * BumpLeaderEpochs: the epoch bumps and, for a MinProducerId, the producer id floor above it, in one
   * atomic batch, so a broker that sees the bumped epoch also sees the floor.
   */
  bumpLeaderEpochs(
    request: Pick<BumpLeaderEpochs.Request, "topics"> & { readonly minProducerId?: bigint }
  ): Promise<ReplicationControl.BumpLeaderEpochsResponse> {
    return this.write((state) => {
      const bumped = ReplicationControl.bumpLeaderEpochs(state.replication, request)
      const floor = ProducerIdControl.raiseFloor(state.producerIds, request.minProducerId ?? -1n)
      return { records: [...bumped.records, ...floor], response: bumped.response }
    }, "BumpLeaderEpochs")
  }

  // -------------------------------------------------------------------------------------------------
  // Configs and producer ids

  incrementalAlterConfigs(
    request: IncrementalAlterConfigs.Request
  ): Promise<ReadonlyArray<ConfigurationControl.ResourceResponse>> {
    return this.write((state) =>
      ConfigurationControl.incrementalAlterConfigs(state.configs, request.resources, request.validateOnly, {
        topicExists: (name) => ReplicationControl.topicByName(state.replication, name) !== undefined
      })
    )
  }

  legacyAlterConfigs(
    resources: ReadonlyArray<ConfigurationControl.LegacyResource>,
    validateOnly: boolean
  ): Promise<ReadonlyArray<ConfigurationControl.ResourceResponse>> {
    return this.write((state) =>
      ConfigurationControl.legacyAlterConfigs(state.configs, resources, validateOnly, {
        topicExists: (name) => ReplicationControl.topicByName(state.replication, name) !== undefined
      })
    )
  }

  /** AlterClientQuotas (49): see `ClientQuotaControl.alterClientQuotas`. */
  alterClientQuotas(request: AlterClientQuotas.Request): Promise<ReadonlyArray<ClientQuotaControl.EntryResult>> {
    return this.write((state) => ClientQuotaControl.alterClientQuotas(state.clientQuotas, request), "AlterClientQuotas")
  }

  /** AlterUserScramCredentials (51): see `ScramControl.alterUserScramCredentials`. */
  alterUserScramCredentials(
    request: AlterUserScramCredentials.Request
  ): Promise<ReadonlyArray<ScramControl.UserResult>> {
    return this.write(
      (state) => ScramControl.alterUserScramCredentials(state.scram, request),
      "AlterUserScramCredentials"
    )
  }

  allocateProducerIds(
    brokerId: number,
    brokerEpoch: bigint
  ): Promise<Either.Either<ProducerIdControl.ProducerIdsBlock, RequestError>> {
    return this.write<Either.Either<ProducerIdControl.ProducerIdsBlock, RequestError>>((state) => {
      const r = ProducerIdControl.allocateProducerIds(state.producerIds, brokerId, brokerEpoch, state.cluster)
      if (Either.isLeft(r)) return { records: [], response: Either.left(toRequestError(r.left)) }
      return { records: r.right.records, response: Either.right(r.right.response) }
    })
  }

  /** ApiVersions' feature fields on the controller listener: its ranges and the committed finalized levels. */
  apiVersionsFeatures(apiVersion: number): ReturnType<typeof FeatureControl.apiVersionsFeatures> {
    const finalized = FeatureControl.finalizedFeatures(this.state.features)
    return FeatureControl.apiVersionsFeatures(apiVersion, finalized, this.committedOffset)
  }

  /**
   * UpdateFeatures (57): `FeatureControl.updateFeatures` against the supported ranges of every registered
   * broker, all or nothing; validateOnly writes nothing. One outcome for the whole request.
   */
  updateFeatures(request: UpdateFeatures.Request): Promise<UpdateFeatures.Response> {
    return this.write((state) => {
      const r = FeatureControl.updateFeatures(state.features, request, {
        brokerSupported: ClusterControl.brokerSupportedFeatures(state.cluster),
        controllerId: this.options.nodeId
      })
      if (Either.isLeft(r))
        return { records: [], response: FeatureControl.updateFeaturesResponse(request, FeatureControl.refusal(r.left)) }
      const ok = FeatureControl.updateFeaturesResponse(request, { errorCode: 0, errorMessage: null })
      return { records: r.right.records, response: ok }
    }, "UpdateFeatures")
  }

  // -------------------------------------------------------------------------------------------------
  // ACLs

  /** CreateAcls: AccessControlEntryRecords for the new bindings, one result per creation. */
  createAcls(creations: ReadonlyArray<Acl.AclBinding>): Promise<ReadonlyArray<AclControl.CreationResult>> {
    return this.write((state) => AclControl.createAcls(state.acls, creations, Uuid.random), "CreateAcls")
  }

  /** DeleteAcls: RemoveAccessControlEntryRecords for every binding a filter matches, with the matches. */
  deleteAcls(filters: ReadonlyArray<Acl.AclBindingFilter>): Promise<ReadonlyArray<AclControl.FilterResult>> {
    return this.write((state) => AclControl.deleteAcls(state.acls, filters), "DeleteAcls")
  }

  // -------------------------------------------------------------------------------------------------
  // Cluster mirrors (KIP-1279)

  createClusterMirror(request: CreateClusterMirror.Request): Promise<CreateClusterMirror.Response> {
    return this.write((state) =>
      MirrorControl.createClusterMirror(state, request, {
        clusterView: this.clusterView(state),
        newTopicId: Uuid.random,
        ...(this.options.mirrorStateTopicPartitions === undefined
          ? {}
          : { mirrorStateTopicPartitions: this.options.mirrorStateTopicPartitions }),
        ...(this.options.mirrorStateTopicReplicationFactor === undefined
          ? {}
          : { mirrorStateTopicReplicationFactor: this.options.mirrorStateTopicReplicationFactor })
      })
    )
  }

  async startMirrorTopics(request: StartMirrorTopics.Request): Promise<StartMirrorTopics.Response> {
    const response = await this.write(
      (state) =>
        MirrorControl.startMirrorTopics(state, request, {
          nextOffset: this.nextOffset,
          clusterView: this.clusterView(state),
          newTopicId: Uuid.random,
          defaultReplicationFactor: this.options.defaultReplicationFactor ?? 1
        }),
      "StartMirrorTopics"
    )
    // A topic created with fewer replicas than its default asked for (capped at the live brokers).
    for (const t of response.topics)
      if (t.errorCode === 0 && t.errorMessage !== null)
        this.options.log_?.(`mirror ${request.mirrorName}: topic ${t.name}: ${t.errorMessage}`)
    return response
  }

  stopMirrorTopics(request: StopMirrorTopics.Request): Promise<StopMirrorTopics.Response> {
    return this.write(
      (state) => MirrorControl.stopMirrorTopics(state, request, { nextOffset: this.nextOffset }),
      "StopMirrorTopics"
    )
  }

  pauseMirrorTopics(request: PauseMirrorTopics.Request): Promise<PauseMirrorTopics.Response> {
    return this.write(
      (state) => MirrorControl.pauseMirrorTopics(state, request, { nextOffset: this.nextOffset }),
      "PauseMirrorTopics"
    )
  }

  resumeMirrorTopics(request: ResumeMirrorTopics.Request): Promise<ResumeMirrorTopics.Response> {
    return this.write(
      (state) => MirrorControl.resumeMirrorTopics(state, request, { nextOffset: this.nextOffset }),
      "ResumeMirrorTopics"
    )
  }

  deleteClusterMirror(request: DeleteClusterMirror.Request): Promise<DeleteClusterMirror.Response> {
    return this.write((state) => MirrorControl.deleteClusterMirror(state, request), "DeleteClusterMirror")
  }

  /**
   * Fetch of `__cluster_metadata` partition 0, as brokers follow the log (like replicas): the records from
   * the fetch offset, long-polling up to `maxWaitMs` for new ones; the fetch counts as the broker's last
   * (DescribeQuorum's observers). Any other topic gets UNKNOWN_TOPIC_OR_PARTITION.
   */
  async fetchMetadata(request: Fetch.Request, apiVersion: number): Promise<Spec.InputOf<typeof Fetch.Response>> {
    const topic = request.topics[0]
    const p = topic?.partitions[0]
    const isMetadata =
      topic !== undefined &&
      (apiVersion >= 13 ? topic.topicId === MetadataLog.METADATA_TOPIC_ID : topic.topic === MetadataLog.METADATA_TOPIC)
    if (!isMetadata || p === undefined)
      return { throttleTimeMs: 0, errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, sessionId: 0, responses: [] }
    const offset = p.fetchOffset
    const replicaId = apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId
    this.fetches = MetadataQuorum.recordFetch(
      this.fetches,
      replicaId,
      p.replicaDirectoryId,
      offset,
      this.nextOffset,
      this.now()
    )
    await this.waitForOffset(offset, request.maxWaitMs)
    const log = this.options.log
    const end = await Effect.runPromise(log.logEndOffset)
    const read =
      Number(offset) < end ? await Effect.runPromise(log.readFrom(Number(offset), p.partitionMaxBytes)) : undefined
    return MetadataQuorum.metadataFetchResponse({
      errorCode: Number(offset) > end ? Errors.ErrorCode.OFFSET_OUT_OF_RANGE : 0,
      highWatermark: BigInt(end),
      lastStableOffset: BigInt(end),
      logStartOffset: 0n,
      records: read?.records ?? Buffer.alloc(0)
    })
  }

  /**
   * The metadata quorum: a lone controller leads it in its one epoch and is its only voter, with the
   * committed end as high watermark; the active controller of a quorum passes in the voters as its Raft
   * leader sees them. The brokers are observers, with their last fetch.
   */
  describeQuorum(quorum?: MetadataQuorum.VotersInput): MetadataQuorum.QuorumInfo {
    const now = this.now()
    const registered = new Set(this.state.cluster.brokers.keys())
    this.fetches = MetadataQuorum.expire(this.fetches, registered, now)
    return MetadataQuorum.describe({
      leaderId: this.options.nodeId,
      leaderEpoch: this.epoch,
      leaderDirectoryId: this.options.directoryId ?? Uuid.ZERO,
      highWatermark: this.nextOffset,
      registeredBrokers: registered,
      fetches: this.fetches,
      now,
      ...(quorum === undefined ? {} : { quorum })
    })
  }

  /** Resolves once the log end passes `offset`, `timeoutMs` elapsed, or the controller closed (long-polling metadata fetches). */
  waitForOffset(offset: bigint, timeoutMs: number): Promise<void> {
    if (this.nextOffset > offset || timeoutMs <= 0 || this.closed) return Promise.resolve()
    const committed = Effect.async<void>((resume) => {
      const check = () => {
        if (this.nextOffset > offset || this.closed) resume(Effect.void)
      }
      this.commitWaiters.add(check)
      return Effect.sync(() => this.commitWaiters.delete(check))
    })
    return this.run(
      Effect.timeoutTo(committed, {
        duration: Duration.millis(timeoutMs),
        onSuccess: () => undefined,
        onTimeout: () => undefined
      })
    )
  }

  /** Waits for queued operations, writes a snapshot, then stops the writer and the timers. */
  async close(): Promise<void> {
    if (this.closing) return
    this.closing = true
    const drained = Effect.gen(this, function* () {
      if (this.recordsSinceSnapshot > 0) yield* Effect.ignore(this.snapshotEffect)
      this.closed = true
    })
    await this.submit(drained)
    await Effect.runPromise(Scope.close(this.scope, Exit.void))
    // Requests that arrived while closing fail (ControllerClosed), later ones are refused at once.
    const rest = Effect.runSync(Effect.zipLeft(Queue.takeAll(this.jobs), Queue.shutdown(this.jobs)))
    await Effect.runPromise(Effect.forEach(rest, (job) => job, { discard: true }))
    for (const w of [...this.commitWaiters]) w()
  }
}
