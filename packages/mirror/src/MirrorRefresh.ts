/**
 * The periodic mirror metadata refresh of KIP-1279 (§5.9, §5.3, §6.5; JR31.1, JR31.3), run on every
 * broker, one loop per mirror, every `mirror.metadata.refresh.interval.ms`: the mirror's own value when
 * set (our per-mirror override), else the broker's dynamic value, else its static config. 0 disables
 * the refresh of that mirror. A changed interval reschedules the loop; a deleted mirror ends it. Ticks of
 * one mirror never overlap.
 *
 * Each mirror's loop is a fiber in a `FiberMap` keyed by mirror, on the runtime the refresh gets from its
 * creator (default: Effect's default runtime; `make` takes the caller's, so a test's `TestClock` drives
 * the ticks): it waits `Schedule.spaced(interval)` after each tick ends. `close()` interrupts the loops.
 *
 * Every broker, each tick: the source cluster-ID check (another cluster behind `bootstrap.servers` →
 * the mirror's partitions led here go FAILED, not retryable, and nothing else runs for the mirror), then
 * the source state of the topics desired MIRRORING (Metadata on the source): a topic the source no
 * longer lists, confirmed by a full listing, goes FAILED "source topic deleted"; a name the source
 * holds under another topic id goes FAILED "source topic recreated with a new topic ID" (both not
 * retryable, so nothing is ever mirrored from the new topic); partitions still UNKNOWN whose source
 * leader is known are evaluated again.
 *
 * The mirror-coordinator broker only (the leader of the `__mirror_state` partition the mirror name
 * hashes to, §3.6; the work moves with that leadership): partition scaling (CreatePartitions on the
 * destination up to the source's count), the periodic epoch bump of §6.5 (when the mirror has a
 * MIRRORING topic), pattern discovery (include ∧ ¬exclude ∧ not yet a topic of the mirror →
 * StartMirrorTopics with the source topic id and partition count, so the controller creates the topic),
 * exclude enforcement (MIRRORING topics the exclude list matches → StopMirrorTopics), then the
 * coordinator tasks given in the options (topic configs, group offsets, ...).
 *
 * Every sync error is logged and reported through `onSyncError` with a short kind (cluster_id,
 * topic_state, topic_deleted, topic_recreated, topic_create, partitions, discovery, exclude,
 * epoch_bump); a lasting condition (a deleted topic, another cluster) is reported once until it clears.
 *
 * It must not change partition states itself: failures go to the MirrorMetadataManager
 * (`sourceFailed`), which persists them; topics and desired states change only through requests to the
 * destination cluster, which the controller decides.
 */
import type { ClusterClient, MetadataCache } from "@clustermirror/client"
import type { MirrorMetadataManager } from "@clustermirror/coordinator"
import type { MirrorFetcherManager } from "@clustermirror/fetcher"
import { MetadataImage } from "@clustermirror/metadata-log"
import {
  CreatePartitions,
  Errors,
  Hashing,
  type MirrorPartitionState,
  StartMirrorTopics,
  StopMirrorTopics
} from "@clustermirror/protocol"
import { Effect, Exit, Fiber, FiberMap, Runtime, RuntimeFlags, Schedule as EffectSchedule, Scope } from "effect"
import * as Plan from "./internal/refreshPlan.js"

/** One of the mirror's topics on the destination (metadata image). */
export interface RefreshTopic {
  readonly name: string
  readonly topicId: string
  readonly partitions: number
  /** The topic's desired state from the image (MIRRORING, PAUSED, STOPPED, ...). */
  readonly desiredState: MirrorPartitionState.State
}

/** What a coordinator task gets on each tick of the mirror-coordinator broker. */
export interface CoordinatorContext {
  readonly mirror: string
  /** The mirror's configs (CLUSTER_MIRROR resource). */
  readonly configs: ReadonlyMap<string, string>
  /** Admin connection to the mirror's source cluster. */
  readonly source: ClusterClient.Client
  /** Admin connection to this (destination) cluster. */
  readonly destination: ClusterClient.Client
  readonly topics: ReadonlyArray<RefreshTopic>
  /** The actual state of a partition, if this broker knows it. */
  readonly partitionState: (topicId: string, partition: number) => MirrorPartitionState.State | undefined
  /** Counts and logs a sync error of this kind. */
  readonly syncError: (kind: string, error: string) => void
}

/** Mirror-level work run by the mirror-coordinator broker after the refresh's own coordinator steps. */
export interface CoordinatorTask {
  readonly name: string
  readonly run: (ctx: CoordinatorContext) => Promise<void>
}

/** What the refresh asks of the broker's MirrorMetadataManager. */
export type ManagerPort = Pick<
  MirrorMetadataManager.MirrorMetadataManager,
  "sourceFailed" | "sourceLeaderKnown" | "stateOf"
>

export interface MirrorRefreshOptions {
  readonly nodeId: number
  readonly image: () => MetadataImage.MetadataImage
  readonly manager: ManagerPort
  /** The admin connection to a mirror's source cluster (it follows the mirror's `bootstrap.servers`). */
  readonly source: (mirror: string) => ClusterClient.Client
  /** The admin connection to this cluster. */
  readonly destination: () => ClusterClient.Client
  /** BumpLeaderEpochs through the controller, resolved once this broker sees the new epochs. */
  readonly bumpLeaderEpochs: MirrorMetadataManager.PartitionPort["bumpLeaderEpochs"]
  /** The broker's static `mirror.metadata.refresh.interval.ms`. */
  readonly intervalMs: number
  readonly coordinatorTasks?: ReadonlyArray<CoordinatorTask>
  readonly onSyncError?: (mirror: string, kind: string, error: string) => void
  /** The source leaders and leader epochs each refresh read (on every broker), for the mirror's fetchers. */
  readonly sourceLeaders?: (mirror: string, leaders: ReadonlyArray<MirrorFetcherManager.SourceLeader>) => void
  readonly log?: (line: string) => void
}

const E = Errors.ErrorCode
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Where a lasting condition was already reported: kind and subject. */
const conditionKey = (kind: string, subject: string) => `${kind}\u0000${subject}`

interface Schedule {
  intervalMs: number
  /** The fiber of the mirror's loop; undefined when none is armed. */
  loop: Fiber.RuntimeFiber<void> | undefined
  running: Promise<void> | undefined
  /** Lasting conditions reported and not yet cleared. */
  reported: Set<string>
}

export class MirrorRefresh {
  private readonly schedules = new Map<string, Schedule>()
  private closed = false
  private readonly log: (line: string) => void
  private readonly runtime: Runtime.Runtime<never>
  private readonly scope: Scope.CloseableScope
  /** The loop fiber of each mirror with an armed loop. */
  private readonly loops: FiberMap.FiberMap<string>
  private readonly runLoop: (key: string, effect: Effect.Effect<void>) => Fiber.RuntimeFiber<void>

  /**
   * A refresh whose loops run in `runtime` (default: Effect's default runtime, with the live clock).
   * `close()` interrupts them.
   */
  constructor(
    private readonly options: MirrorRefreshOptions,
    runtime: Runtime.Runtime<never> = Runtime.defaultRuntime
  ) {
    this.log = options.log ?? (() => {})
    // A runtime captured where interruption is off (an acquire) could not interrupt a loop.
    this.runtime = Runtime.enableRuntimeFlag(runtime, RuntimeFlags.Interruption)
    const r = Runtime.runSync(this.runtime)(
      Effect.gen(function* () {
        const scope = yield* Scope.make()
        const loops = yield* FiberMap.make<string>().pipe(Scope.extend(scope))
        return { scope, loops, runLoop: yield* FiberMap.runtime(loops)<never>() }
      })
    )
    this.scope = r.scope
    this.loops = r.loops
    this.runLoop = r.runLoop
  }

  /**
   * A refresh whose loops run in the caller's runtime (its `Clock`: a test's `TestClock`), closed with
   * the scope (which waits for the running ticks).
   */
  static make(options: MirrorRefreshOptions): Effect.Effect<MirrorRefresh, never, Scope.Scope> {
    return Effect.flatMap(Effect.runtime<never>(), (rt) =>
      Effect.acquireRelease(
        Effect.sync(() => new MirrorRefresh(options, rt)),
        (r) => Effect.promise(() => r.close())
      )
    )
  }

  /** Mirrors whose loop is armed (each holds one fiber). */
  get armedLoops(): number {
    return Runtime.runSync(this.runtime)(FiberMap.size(this.loops))
  }

  /** Follows the metadata: starts, reschedules and ends the loops of the mirrors. */
  onMetadataUpdate(): void {
    if (this.closed) return
    const image = this.options.image()
    const names = mirrorNames(image)
    for (const [mirror, s] of this.schedules)
      if (!names.has(mirror)) {
        this.disarm(s)
        this.schedules.delete(mirror)
      }
    for (const mirror of names) {
      const intervalMs = this.intervalOf(image, mirror)
      const s = this.schedules.get(mirror)
      if (s === undefined) {
        const created: Schedule = { intervalMs, loop: undefined, running: undefined, reported: new Set() }
        this.schedules.set(mirror, created)
        this.arm(mirror, created)
      } else if (s.intervalMs !== intervalMs) {
        s.intervalMs = intervalMs
        this.disarm(s)
        // The new loop first waits for a running tick, then spaces the next one from its end.
        this.arm(mirror, s)
      }
    }
  }

  /** The interval in effect for a mirror (0: disabled); undefined for a mirror that does not exist. */
  intervalMs(mirror: string): number | undefined {
    return this.schedules.get(mirror)?.intervalMs
  }

  /** Whether this broker runs the mirror-level work of `mirror` (§3.6). */
  isCoordinator(mirror: string): boolean {
    const st = MetadataImage.topicByName(this.options.image(), MIRROR_STATE_TOPIC)
    if (st === undefined || st.partitions.size === 0) return false
    const p = Hashing.mirrorCoordinatorPartition(mirror, st.partitions.size)
    return st.partitions.get(p)?.leader === this.options.nodeId
  }

  /** Runs one refresh of `mirror` now (or joins the one running); the loop then restarts from its end. */
  refresh(mirror: string): Promise<void> {
    const s = this.schedules.get(mirror)
    if (s === undefined || this.closed) return Promise.resolve()
    if (s.running !== undefined) return s.running
    this.disarm(s)
    const run = this.runOnce(mirror, s)
    void run.then(() => {
      if (this.schedules.get(mirror) === s) this.arm(mirror, s)
    })
    return run
  }

  /**
   * Ends every loop. Resolves once the running ticks ended: close the admin connections they use after
   * calling this and before awaiting it, so that they end promptly.
   */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true
      for (const s of this.schedules.values()) s.loop = undefined
      // Interrupts every loop.
      Runtime.runFork(this.runtime)(Scope.close(this.scope, Exit.void))
    }
    const running: Array<Promise<void>> = []
    for (const s of this.schedules.values()) if (s.running !== undefined) running.push(s.running)
    this.schedules.clear()
    // not a fan-out: waits for this broker's own refresh loops to end
    return Promise.all(running).then(() => {})
  }

  // ------------------------------------------------------------------------------------------ schedule

  /** One tick of `mirror`, or the one running; never rejects. */
  private runOnce(mirror: string, s: Schedule): Promise<void> {
    if (s.running !== undefined) return s.running
    const run = this.tick(mirror, s)
      .catch((e) => this.log(`mirror ${mirror}: refresh failed: ${messageOf(e)}`))
      .finally(() => {
        s.running = undefined
      })
    s.running = run
    return run
  }

  /** Starts the mirror's loop: after a running tick, a tick every `intervalMs` after the last one ended. */
  private arm(mirror: string, s: Schedule): void {
    if (this.closed || s.intervalMs <= 0 || s.loop !== undefined) return
    const running = s.running
    const tick = Effect.promise(() => this.runOnce(mirror, s))
    const loop = Effect.schedule(tick, EffectSchedule.spaced(s.intervalMs)).pipe(Effect.asVoid)
    s.loop = this.runLoop(
      mirror,
      running === undefined
        ? loop
        : Effect.zipRight(
            Effect.promise(() => running),
            loop
          )
    )
  }

  /** Interrupts the mirror's loop, if armed (a running tick goes on). */
  private disarm(s: Schedule): void {
    const fiber = s.loop
    if (fiber === undefined) return
    s.loop = undefined
    Runtime.runFork(this.runtime)(Fiber.interrupt(fiber))
  }

  private intervalOf(image: MetadataImage.MetadataImage, mirror: string): number {
    const broker = MetadataImage.ConfigResourceType.BROKER
    return Plan.refreshIntervalMs(
      MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.CLUSTER_MIRROR, mirror),
      [MetadataImage.configsOf(image, broker, String(this.options.nodeId)), MetadataImage.configsOf(image, broker, "")],
      this.options.intervalMs
    )
  }

  // ------------------------------------------------------------------------------------------ one tick

  private async tick(mirror: string, s: Schedule): Promise<void> {
    const image = this.options.image()
    const configs = MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.CLUSTER_MIRROR, mirror)
    if (configs.size === 0) return
    const seen = new Set<string>()
    const syncError = (kind: string, error: string) => {
      // Requests cut short by shutting down are not sync errors.
      if (this.closed) return
      this.log(`mirror ${mirror}: ${kind} sync error: ${error}`)
      this.options.onSyncError?.(mirror, kind, error)
    }
    /** A lasting condition: reported when it appears, not again while it lasts. */
    const condition = (kind: string, subject: string, error: string) => {
      const k = conditionKey(kind, subject)
      seen.add(k)
      if (s.reported.has(k)) return
      s.reported.add(k)
      syncError(kind, error)
    }
    try {
      await this.refreshMirror(mirror, image, configs, syncError, condition)
    } finally {
      for (const k of [...s.reported]) if (!seen.has(k)) s.reported.delete(k)
    }
  }

  private async refreshMirror(
    mirror: string,
    image: MetadataImage.MetadataImage,
    configs: ReadonlyMap<string, string>,
    syncError: (kind: string, error: string) => void,
    condition: (kind: string, subject: string, error: string) => void
  ): Promise<void> {
    const source = this.options.source(mirror)
    const topics = mirrorTopics(image, mirror)
    const active = topics.filter((t) => t.desiredState === "MIRRORING")

    // §5.9 2a: the source must still be the cluster the mirror was created for.
    let cluster: MetadataCache.Snapshot
    try {
      cluster = await source.metadata([])
    } catch (e) {
      syncError("cluster_id", `describing the source cluster: ${messageOf(e)}`)
      return
    }
    const expected = configs.get("mirror.source.cluster.id")
    if (expected !== undefined && cluster.clusterId !== null && cluster.clusterId !== expected) {
      const reason = `Source cluster ID changed for mirror ${mirror}: expected ${expected}, got ${cluster.clusterId}`
      this.failTopics(active, reason)
      condition("cluster_id", cluster.clusterId, reason)
      return
    }

    // §5.9 2b: the source state of the active topics.
    const described = new Map<string, Plan.SourceTopic>()
    let listing: ReadonlyArray<Plan.SourceTopic> | undefined
    const listAll = async () => {
      if (listing === undefined) listing = sourceTopics((await source.metadata(null)).topics.values())
      return listing
    }
    const present: Array<{ readonly topic: RefreshTopic; readonly grow: number | null }> = []
    const leaders: Array<MirrorFetcherManager.SourceLeader> = []
    if (active.length > 0) {
      let snap: MetadataCache.Snapshot
      try {
        snap = await source.metadata(active.map((t) => t.name))
      } catch (e) {
        syncError("topic_state", `describing the source topics: ${messageOf(e)}`)
        return
      }
      const missing: Array<RefreshTopic> = []
      for (const t of active) {
        const info = snap.topics.get(t.name)
        if (info !== undefined && info.errorCode !== E.NONE && info.errorCode !== E.UNKNOWN_TOPIC_OR_PARTITION) {
          syncError("topic_state", `source topic ${t.name}: ${Errors.message(info.errorCode)}`)
          continue
        }
        const found = info === undefined || info.errorCode !== E.NONE ? undefined : sourceTopic(info)
        if (found === undefined) missing.push(t)
        else described.set(t.name, found)
      }
      if (missing.length > 0) {
        // Old clusters may answer from stale metadata: a full listing confirms the deletion.
        try {
          const all = new Map((await listAll()).map((t) => [t.name, t]))
          for (const t of missing) {
            const again = all.get(t.name)
            if (again !== undefined) {
              described.set(t.name, again)
              continue
            }
            const reason = `source topic deleted: ${t.name} is no longer on the source cluster of mirror ${mirror}`
            this.failTopics([t], reason)
            condition("topic_deleted", t.topicId, reason)
          }
        } catch (e) {
          syncError("topic_state", `listing the source topics: ${messageOf(e)}`)
        }
      }
      for (const t of active) {
        const found = described.get(t.name)
        if (found === undefined) continue
        const verdict = Plan.topicVerdict(t, found)
        if (verdict._tag === "Recreated") {
          const reason = `source topic recreated with a new topic ID: ${t.name} was ${t.topicId} when mirrored, the source now has ${verdict.sourceTopicId}`
          this.failTopics([t], reason)
          condition("topic_recreated", t.topicId, reason)
          continue
        }
        if (verdict._tag !== "Present") continue
        present.push({ topic: t, grow: verdict.grow })
        for (const [partition, p] of found.partitions)
          if (partition < t.partitions && p.leader >= 0) {
            this.options.manager.sourceLeaderKnown(t.name, partition)
            const node = cluster.brokers.get(p.leader)
            leaders.push({
              topic: t.name,
              partition,
              leaderId: p.leader,
              leaderEpoch: p.leaderEpoch,
              address: node === undefined ? undefined : { host: node.host, port: node.port }
            })
          }
      }
      // The mirror's fetchers learn source elections from here too, not only from their own lookups.
      if (leaders.length > 0) this.options.sourceLeaders?.(mirror, leaders)
    }

    if (this.closed || !this.isCoordinator(mirror)) return
    const destination = this.options.destination()

    // Partition scaling: the destination follows partitions added on the source.
    const grown = present.flatMap((p) => (p.grow === null ? [] : [{ name: p.topic.name, count: p.grow }]))
    if (grown.length > 0) await this.createPartitions(destination, grown, syncError)

    // §6.5 periodic bump: the destination epoch stays ahead of the source's.
    if (active.length > 0) {
      const bumps = Plan.epochBumps(
        present.flatMap(({ topic }) => {
          const here = MetadataImage.topicByName(image, topic.name)
          const there = described.get(topic.name)
          if (here === undefined || there === undefined) return []
          return [...here.partitions].flatMap(([partition, reg]) => {
            const sourceEpoch = there.partitions.get(partition)?.leaderEpoch
            return sourceEpoch === undefined
              ? []
              : [{ topicId: topic.topicId, partition, destinationEpoch: reg.leaderEpoch, sourceEpoch }]
          })
        })
      )
      if (bumps.length > 0)
        try {
          await this.options.bumpLeaderEpochs(bumps)
          this.log(`mirror ${mirror}: periodic leader epoch bump of ${bumps.length} partition(s)`)
        } catch (e) {
          syncError("epoch_bump", messageOf(e))
        }
    }

    // Pattern discovery (JR31.1): new source topics the lists select.
    const patterns = Plan.topicPatterns(configs)
    if (patterns.hasInclude) {
      try {
        const found = Plan.discover(mirror, patterns, await listAll(), (name) => {
          const t = MetadataImage.topicByName(image, name)
          return t === undefined ? undefined : { topicId: t.id, mirrorName: t.mirrorName }
        })
        for (const c of found.conflicts)
          condition(
            "topic_create",
            c.topicName,
            `topic ${c.topicName} exists here with id ${c.destinationTopicId}, the source's has ${c.sourceTopicId}; delete it to mirror it`
          )
        if (found.start.length > 0) await this.start(destination, mirror, found.start, syncError)
      } catch (e) {
        syncError("discovery", messageOf(e))
      }
    }

    // Exclude enforcement (§5.3): active topics the exclude list now matches stop.
    const stop = Plan.excluded(patterns, topics)
    if (stop.length > 0) await this.stop(destination, mirror, stop, syncError)

    const tasks = this.options.coordinatorTasks ?? []
    if (tasks.length === 0) return
    const ctx: CoordinatorContext = {
      mirror,
      configs,
      source,
      destination,
      topics,
      partitionState: (topicId, partition) => {
        const t = MetadataImage.topicById(this.options.image(), topicId)
        return t === undefined ? undefined : this.options.manager.stateOf(t.name, partition)?.state
      },
      syncError
    }
    for (const task of tasks)
      try {
        await task.run(ctx)
      } catch (e) {
        syncError(task.name, messageOf(e))
      }
  }

  /** Every partition of `topics` this broker leads → FAILED, not retryable. */
  private failTopics(topics: ReadonlyArray<RefreshTopic>, reason: string): void {
    for (const t of topics)
      for (let p = 0; p < t.partitions; p++) this.options.manager.sourceFailed(t.name, p, reason, false)
  }

  private async createPartitions(
    destination: ClusterClient.Client,
    topics: ReadonlyArray<{ readonly name: string; readonly count: number }>,
    syncError: (kind: string, error: string) => void
  ): Promise<void> {
    try {
      const res = await destination.sendToAnyBroker(CreatePartitions.api, {
        topics: topics.map((t) => ({ name: t.name, count: t.count, assignments: null })),
        timeoutMs: 3000,
        validateOnly: false
      })
      for (const r of res.results)
        if (r.errorCode !== E.NONE)
          syncError("partitions", `growing ${r.name}: ${r.errorMessage ?? Errors.message(r.errorCode)}`)
        else this.log(`grew mirror topic ${r.name} to ${topics.find((t) => t.name === r.name)?.count} partitions`)
    } catch (e) {
      syncError("partitions", messageOf(e))
    }
  }

  private async start(
    destination: ClusterClient.Client,
    mirror: string,
    topics: ReadonlyArray<Plan.Discovered>,
    syncError: (kind: string, error: string) => void
  ): Promise<void> {
    const res = await destination.sendToAnyBroker(StartMirrorTopics.api, {
      mirrorName: mirror,
      topics: topics.map((t) => ({ topicName: t.topicName, topicId: t.topicId, numPartitions: t.numPartitions })),
      includePatterns: [],
      excludePatterns: []
    })
    const failed = new Set<string>()
    // A success may carry a note: the topic got fewer replicas than its default (the live brokers).
    const notes = new Map<string, string>()
    for (const t of res.topics)
      if (t.errorCode !== E.NONE) {
        failed.add(t.name)
        syncError("topic_create", `starting ${t.name}: ${t.errorMessage ?? Errors.message(t.errorCode)}`)
      } else if (t.errorMessage !== null) notes.set(t.name, t.errorMessage)
    // A top-level error without a per-topic one refused the whole request (validation, the lock).
    if (res.errorCode !== E.NONE && failed.size === 0) {
      syncError("discovery", `StartMirrorTopics: ${res.errorMessage ?? Errors.message(res.errorCode)}`)
      return
    }
    for (const t of topics)
      if (!failed.has(t.topicName))
        this.log(
          `mirror ${mirror}: discovered ${t.topicName} (${t.topicId}, ${t.numPartitions} partitions)${notes.has(t.topicName) ? `: ${notes.get(t.topicName)}` : ""}`
        )
  }

  private async stop(
    destination: ClusterClient.Client,
    mirror: string,
    names: ReadonlyArray<string>,
    syncError: (kind: string, error: string) => void
  ): Promise<void> {
    try {
      const res = await destination.sendToAnyBroker(StopMirrorTopics.api, {
        mirrorName: mirror,
        topics: names.map((topicName) => ({ topicName })),
        patterns: []
      })
      for (const t of res.topics)
        if (t.errorCode !== E.NONE)
          syncError("exclude", `stopping excluded ${t.name}: ${t.errorMessage ?? Errors.message(t.errorCode)}`)
      if (res.errorCode !== E.NONE && res.topics.every((t) => t.errorCode === E.NONE))
        syncError("exclude", `StopMirrorTopics: ${res.errorMessage ?? Errors.message(res.errorCode)}`)
      else this.log(`mirror ${mirror}: stopped excluded topic(s) ${names.join(", ")}`)
    } catch (e) {
      syncError("exclude", messageOf(e))
    }
  }
}

/** The topic holding the coordinator partitions (§3.4). */
const MIRROR_STATE_TOPIC = "__mirror_state"

const mirrorNames = (image: MetadataImage.MetadataImage): ReadonlySet<string> => {
  const names = new Set<string>()
  for (const c of image.configs.values())
    if (c.type === MetadataImage.ConfigResourceType.CLUSTER_MIRROR && c.values.size > 0) names.add(c.name)
  return names
}

/** The topics of a mirror in the image, by name. */
const mirrorTopics = (image: MetadataImage.MetadataImage, mirror: string): ReadonlyArray<RefreshTopic> => {
  const out: Array<RefreshTopic> = []
  for (const t of image.topics.byId.values())
    if (t.mirrorName === mirror)
      out.push({ name: t.name, topicId: t.id, partitions: t.partitions.size, desiredState: t.desiredMirrorState })
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

const sourceTopic = (t: MetadataCache.TopicInfo): Plan.SourceTopic => ({
  name: t.name,
  topicId: t.topicId,
  isInternal: t.isInternal,
  partitions: new Map([...t.partitions].map(([i, p]) => [i, { leader: p.leaderId, leaderEpoch: p.leaderEpoch }]))
})

const sourceTopics = (topics: Iterable<MetadataCache.TopicInfo>): ReadonlyArray<Plan.SourceTopic> => {
  const out: Array<Plan.SourceTopic> = []
  for (const t of topics) if (t.errorCode === E.NONE) out.push(sourceTopic(t))
  return out
}
