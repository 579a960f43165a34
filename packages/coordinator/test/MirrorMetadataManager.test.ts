/**
 * Scenario tests of the mirror reconciler with real coordinators (in-memory `__mirror_state` logs) and
 * recording partition ports: given a metadata image, when the desired state or an event changes, then
 * the transitions are persisted in order, before their actions, and the actions run.
 */
import { Errors, type MirrorPartitionState, MirrorStateRecords, Uuid } from "@clustermirror/protocol"
import { it as effectIt } from "@effect/vitest"
import { Clock, Effect, Either, type Runtime, TestClock } from "effect"
import { describe, expect, it } from "vitest"
import { ClusterMirrorCoordinator } from "../src/ClusterMirrorCoordinator.js"
import * as MirrorMetadataManager from "../src/MirrorMetadataManager.js"

type State = MirrorPartitionState.MirrorPartitionState

const TOPIC = "orders"
const TOPIC_ID = Uuid.random()
const MIRROR = "m1"
const SOURCE_ID = "source-cluster-id"

/** Wall-clock polling, only for the scenario about event-loop turns (it runs on the live runtime). */
const eventually = async <A>(what: string, f: () => A | undefined, timeoutMs = 3000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = f()
    if (v !== undefined && v !== false) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** A tiny cluster: one mirror topic, `__mirror_state` with `stateLeaders`, per-broker coordinators. */
class World {
  desired: State = "MIRRORING"
  mirrorName: string | null = MIRROR
  mirrorExists = true
  leaders = new Map<number, { leader: number; leaderEpoch: number }>([
    [0, { leader: 1, leaderEpoch: 0 }],
    [1, { leader: 1, leaderEpoch: 0 }]
  ])
  stateLeaders = [1, 2, 1]
  offset = 100
  /** Committed `__mirror_state` records per partition (shared by all brokers: it is the replicated log). */
  readonly stateLogs = new Map<number, Array<MirrorStateRecords.MirrorStateRecord>>()
  readonly coordinators = new Map<number, ClusterMirrorCoordinator>()
  failWrites = 0
  /** What the source says against starting (a mirror loop, an unstopped mirror there). */
  sourceRefusal: string | null = null
  /** The next this many truncation checks of the source never answer. */
  hangTruncations = 0
  /** The next this many ReadMirrorStates to another broker never answer. */
  hangReads = 0

  coordinator(nodeId: number): ClusterMirrorCoordinator {
    let c = this.coordinators.get(nodeId)
    if (c === undefined) {
      c = new ClusterMirrorCoordinator({
        log: {
          readAll: (p) => [...(this.stateLogs.get(p) ?? [])],
          append: async (p, _epoch, records) => {
            if (this.failWrites > 0) {
              this.failWrites--
              throw Object.assign(new Error("not enough replicas"), { errorCode: Errors.ErrorCode.NOT_ENOUGH_REPLICAS })
            }
            const log = this.stateLogs.get(p) ?? []
            log.push(...records)
            this.stateLogs.set(p, log)
          }
        },
        context: {
          topicId: (name) => (name === TOPIC ? TOPIC_ID : undefined),
          leaderEpoch: (id, p) => (id === TOPIC_ID ? this.leaders.get(p)?.leaderEpoch : undefined)
        }
      })
      this.coordinators.set(nodeId, c)
    }
    return c
  }

  /** Loads the `__mirror_state` partitions each broker leads. */
  loadCoordinators(managers: ReadonlyMap<number, MirrorMetadataManager.MirrorMetadataManager>): void {
    this.stateLeaders.forEach((leader, p) => {
      for (const [id, m] of managers) m.onStatePartition(p, leader === id ? 0 : -1, this.stateLeaders.length)
    })
  }

  metadata(nodeId: number): MirrorMetadataManager.MetadataPort {
    const topic = (): MirrorMetadataManager.MirrorTopic => ({
      name: TOPIC,
      topicId: TOPIC_ID,
      mirrorName: this.mirrorName,
      desired: this.desired,
      partitions: this.leaders
    })
    return {
      nodeId,
      clusterId: "destination",
      offset: () => this.offset,
      topicByName: (name) => (name === TOPIC ? topic() : undefined),
      topicById: (id) => (id === TOPIC_ID ? topic() : undefined),
      mirrorTopics: () => (this.mirrorName === null ? [] : [topic()]),
      mirrorConfigs: (name) =>
        name === MIRROR && this.mirrorExists
          ? new Map([
              ["bootstrap.servers", "source:9092"],
              ["mirror.source.cluster.id", SOURCE_ID]
            ])
          : undefined,
      mirrorNames: () => (this.mirrorExists ? [MIRROR] : []),
      stateTopic: () => ({
        numPartitions: this.stateLeaders.length,
        leader: (p) => this.stateLeaders[p] ?? -1
      })
    }
  }
}

/** Records what a broker's partitions were asked to do. */
class Partitions implements MirrorMetadataManager.PartitionPort {
  readonly calls: Array<string> = []
  readonly fetching = new Set<number>()
  epochs = new Map<number, number>()
  bumpFails = false
  pids = new Map<number, bigint>()
  latestEpoch = (_t: string, p: number) => this.epochs.get(p) ?? -1
  highestProducerId = (_t: string, p: number) => this.pids.get(p) ?? -1n
  truncateToEpoch = async (_t: string, p: number, lme: number) => {
    this.calls.push(`truncate ${p} lme=${lme}`)
  }
  startFetcher = (_m: string, _t: string, _id: string, p: number) => {
    if (!this.fetching.has(p)) this.calls.push(`start ${p}`)
    this.fetching.add(p)
  }
  removeFetcher = (_m: string, _t: string, p: number) => {
    if (this.fetching.delete(p)) this.calls.push(`remove ${p}`)
  }
  lag = (_m: string, _t: string, p: number) =>
    this.fetching.has(p) ? { sourceHighWatermark: 50, highWatermark: 40, lag: 10, lagMs: 7 } : undefined
  sourceLeaderEpoch = () => 4
  bumpLeaderEpochs = async (
    ps: ReadonlyArray<{ topicId: string; partition: number; minLeaderEpoch: number; minProducerId?: bigint }>
  ) => {
    for (const p of ps)
      this.calls.push(
        `bump ${p.partition} min=${p.minLeaderEpoch}${p.minProducerId === undefined ? "" : ` pid>${p.minProducerId}`}`
      )
    if (this.bumpFails) throw new Error("controller unavailable")
  }
  finishStop = async (_t: string, p: number, sourceClusterId: string | null) => {
    this.calls.push(`finish ${p} ${sourceClusterId}`)
  }
  acceptDataLoss = (_m: string, _t: string, p: number) => {
    this.calls.push(`accept data loss ${p}`)
  }
}

const never = new Promise<never>(() => {})

const setup = (
  options: {
    retry?: MirrorStateMachineRetry
    lme?: number
    /** Where the managers' fibers run (a test's runtime: its TestClock). */
    runtime?: Runtime.Runtime<never>
    callTimeoutMs?: number
  } = {}
) => {
  const world = new World()
  const retries: Array<string> = []
  const partitions = new Map<number, Partitions>([
    [1, new Partitions()],
    [2, new Partitions()]
  ])
  const managers = new Map<number, MirrorMetadataManager.MirrorMetadataManager>()
  const lookups: Array<string> = []
  /** ReadMirrorStates requests: the broker sending it, the broker asked, how many partitions. */
  const reads: Array<{ from: number; to: number; partitions: number }> = []
  for (const id of [1, 2]) {
    const m = new MirrorMetadataManager.MirrorMetadataManager(
      {
        metadata: world.metadata(id),
        coordinator: world.coordinator(id),
        channel: {
          read: async (node, request) => {
            reads.push({ from: id, to: node, partitions: request.topics.reduce((n, t) => n + t.partitions.length, 0) })
            if (world.hangReads > 0) {
              world.hangReads--
              return never
            }
            return world.coordinator(node).read(request)
          },
          // Over the wire: the request loses the local-only failure object, like a real encoding would.
          write: async (node, request) =>
            world.coordinator(node).write({
              ...request,
              topics: request.topics.map((t) => ({
                name: t.name,
                partitions: t.partitions.map((p) => {
                  const { failure: _f, ...wire } = p as typeof p & { failure?: unknown }
                  return wire
                })
              }))
            })
        },
        partitions: partitions.get(id)!,
        source: {
          prepareTruncation: async (mirror, topic, topicId, ps) => {
            lookups.push(`${mirror} ${topic} ${topicId === TOPIC_ID} ${ps.join(",")}`)
            if (world.hangTruncations > 0) {
              world.hangTruncations--
              return never
            }
            return {
              lastMirrorEpochs: new Map(ps.map((p) => [p, options.lme ?? -1])),
              refusal: world.sourceRefusal
            }
          }
        },
        retry: options.retry ?? { initialBackoffMs: 20, maxBackoffMs: 200, maxAttempts: 100 },
        random: () => 0.5,
        stoppingWaitMs: 300,
        onRetry: (mirror) => retries.push(mirror),
        ...(options.callTimeoutMs === undefined ? {} : { callTimeoutMs: options.callTimeoutMs })
      },
      options.runtime
    )
    managers.set(id, m)
  }
  world.loadCoordinators(managers)
  const update = () => {
    for (const m of managers.values()) m.onMetadataUpdate()
  }
  const stateOf = (p: number) => managers.get(world.leaders.get(p)!.leader)!.stateOf(TOPIC, p)?.state
  const stored = (p: number) => {
    const key = MirrorStateRecords.key(MIRROR, TOPIC_ID, p)
    for (const c of world.coordinators.values()) {
      const v = c.get(key, world.stateLeaders.length)
      if (v !== undefined) return v
    }
    return undefined
  }
  const close = () => {
    for (const m of managers.values()) m.close()
  }
  return { world, partitions, managers, update, stateOf, stored, lookups, retries, reads, close }
}

/**
 * The managers of `setup` on the test's runtime (TestClock: time moves only by `TestClock.adjust`),
 * closed when the test ends.
 */
const setupOnTestClock = (options: Omit<Parameters<typeof setup>[0] & {}, "runtime"> = {}) =>
  Effect.acquireRelease(
    Effect.map(Effect.runtime<never>(), (runtime) => setup({ ...options, runtime })),
    (s) => Effect.sync(s.close)
  )

/**
 * Lets the managers' promise and fiber work run (macrotask turns, no clock time passes) until `f`
 * holds; fails after many turns. Nothing here waits for time: retries only happen by `TestClock.adjust`.
 */
const until = (what: string, f: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 500; i++) {
      if (f()) return
      yield* Effect.promise(() => new Promise<void>((r) => setImmediate(r)))
    }
    throw new Error(`never reached: ${what}`)
  })

const turn = Effect.promise(() => new Promise<void>((r) => setImmediate(r)))

/**
 * `eventually` on the TestClock: lets the managers' work run, moving the clock 10 ms at a time, until `f`
 * holds (a retry, a write backoff are due only once the clock passed them).
 */
const eventuallyOnClock = <A>(what: string, f: () => A | undefined, maxMs = 60_000) =>
  Effect.gen(function* () {
    for (let t = 0; t <= maxMs; t += 10) {
      for (let i = 0; i < 3; i++) {
        const v = f()
        if (v !== undefined && v !== false) return v
        yield* turn
      }
      yield* TestClock.adjust("10 millis")
    }
    throw new Error(`timed out waiting for ${what}`)
  })

/** Moves the clock by `ms` in 10 ms steps, letting the work due meanwhile run. */
const pause = (ms: number) =>
  Effect.gen(function* () {
    for (let t = 0; t < ms; t += 10) {
      yield* turn
      yield* TestClock.adjust("10 millis")
    }
    yield* turn
  })

/** Awaits a promise of the managers while the clock moves on (a validate waiting for partitions to stop). */
const onClock = <A>(promise: Promise<A>) =>
  Effect.gen(function* () {
    let result: Either.Either<A, unknown> | undefined
    promise.then(
      (value) => {
        result = Either.right(value)
      },
      (e: unknown) => {
        result = Either.left(e)
      }
    )
    yield* eventuallyOnClock("the answer", () => result !== undefined)
    if (Either.isLeft(result!)) throw result.left
    return result!.right
  })

/** A few turns of the event loop with no clock time passing: what is not due stays undone. */
const settle = Effect.gen(function* () {
  for (let i = 0; i < 50; i++) yield* Effect.promise(() => new Promise<void>((r) => setImmediate(r)))
})
type MirrorStateMachineRetry = { initialBackoffMs: number; maxBackoffMs: number; maxAttempts: number }

describe("MirrorMetadataManager", () => {
  effectIt.scoped(
    "given a topic desired MIRRORING, when its leader sees it, then LOG_TRUNCATION and MIRRORING are persisted before truncation and the fetcher",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, stored, partitions, lookups, managers } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock(
          "both partitions mirroring",
          () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING"
        )
        expect(partitions.get(1)!.calls).toEqual(
          expect.arrayContaining(["truncate 0 lme=-1", "start 0", "truncate 1 lme=-1", "start 1"])
        )
        expect(partitions.get(1)!.calls.indexOf("truncate 0 lme=-1")).toBeLessThan(
          partitions.get(1)!.calls.indexOf("start 0")
        )
        // Two persisted transitions per partition: the coordinator counted them.
        expect(stored(0)).toMatchObject({ state: "MIRRORING", stateEpoch: 2 })
        expect(stored(1)).toMatchObject({ state: "MIRRORING", stateEpoch: 2 })
        expect(lookups.length).toBeGreaterThan(0)
        expect(managers.get(1)!.produceState(TOPIC, 0)).toBe("readOnly")
        expect(managers.get(2)!.partitionCount).toBe(0)
      })
  )

  effectIt.scoped(
    "given mirroring, when paused and resumed, then the fetcher goes and comes back without truncation, read-only throughout",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, partitions, managers } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        const p = partitions.get(1)!
        world.desired = "PAUSED"
        update()
        yield* eventuallyOnClock("paused", () => stateOf(0) === "PAUSED" && stateOf(1) === "PAUSED")
        expect(p.fetching.size).toBe(0)
        expect(managers.get(1)!.produceState(TOPIC, 0)).toBe("readOnly")
        const truncations = p.calls.filter((c) => c.startsWith("truncate")).length
        world.desired = "MIRRORING"
        update()
        yield* eventuallyOnClock("mirroring again", () => stateOf(0) === "MIRRORING" && p.fetching.size === 2)
        expect(p.calls.filter((c) => c.startsWith("truncate")).length).toBe(truncations)
      })
  )

  effectIt.scoped(
    "given mirroring, when stopped, then the LME is written, the epoch bumped above it, producers reset, and the partition is writable",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, stored, partitions, managers } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        const p = partitions.get(1)!
        p.epochs.set(0, 7)
        p.pids.set(0, 4321n)
        expect(managers.get(1)!.produceState(TOPIC, 0)).toBe("readOnly")
        world.desired = "STOPPED"
        update()
        // Failover under way: producers get a retriable answer until the partition is stopped.
        expect(managers.get(1)!.produceState(TOPIC, 0)).toBe("stopping")
        yield* eventuallyOnClock("stopped", () => stateOf(0) === "STOPPED" && stateOf(1) === "STOPPED")
        const calls = p.calls.slice(p.calls.indexOf("remove 0"))
        // The producer id floor rides on the epoch bump, before the reset.
        const bump = "bump 0 min=7 pid>4321"
        expect(calls).toEqual(expect.arrayContaining(["remove 0", bump, `finish 0 ${SOURCE_ID}`]))
        expect(calls.indexOf(bump)).toBeLessThan(calls.indexOf(`finish 0 ${SOURCE_ID}`))
        expect(stored(0)).toMatchObject({ state: "STOPPED", lastMirrorEpoch: 7 })
        // No epoch and no producer in the log: no LME, no bump.
        expect(stored(1)).toMatchObject({ state: "STOPPED", lastMirrorEpoch: -1 })
        expect(p.calls.filter((c) => c.startsWith("bump 1"))).toEqual([])
        expect(managers.get(1)!.produceState(TOPIC, 0)).toBe("writable")
      })
  )

  effectIt.scoped(
    "given mirroring, when the fetcher fails, then FAILED with the reason and attempt, retried with growing delay, and back to MIRRORING",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, stored, managers, partitions } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 30, maxBackoffMs: 1000, maxAttempts: 100 }
        })
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        const m = managers.get(1)!
        const p = partitions.get(1)!
        m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: connection refused", retryable: true })
        yield* eventuallyOnClock("failed", () => stateOf(0) === "FAILED")
        // The coordinator holds the reason too (it is the local one here, or a remote one by tagged fields).
        expect(stored(0)).toMatchObject({ state: "FAILED", retryAttempt: 1, previousState: "MIRRORING" })
        expect(stored(0)?.errorMessage).toContain("connection refused")
        yield* eventuallyOnClock("retried", () => stateOf(0) === "MIRRORING" && p.fetching.has(0))
        const t0 = yield* Clock.currentTimeMillis
        m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: again", retryable: true })
        yield* eventuallyOnClock("failed again", () => stateOf(0) === "FAILED")
        expect(m.stateOf(TOPIC, 0)).toMatchObject({ retryAttempt: 2, errorMessage: "Fetch IO error: again" })
        yield* eventuallyOnClock("retried again", () => stateOf(0) === "MIRRORING")
        // Second delay is 2 × 30 ms (jitter fixed at 0): at least 60 ms.
        expect((yield* Clock.currentTimeMillis) - t0).toBeGreaterThanOrEqual(55)
        // A fetch that works again starts the count over.
        m.fetched(TOPIC, 0)
        yield* eventuallyOnClock("count reset", () => m.stateOf(TOPIC, 0)?.retryAttempt === 0)
        expect(stored(0)).toMatchObject({ state: "MIRRORING", retryAttempt: 0, errorMessage: null })
      })
  )

  for (const coordinators of ["local", "remote"] as const)
    effectIt.scoped(
      `given a partition mirroring again after a retry, when its fetch works, then the fresh failure count is in __mirror_state: a reload holds the state the leader holds (${coordinators} coordinator)`,
      () =>
        Effect.gen(function* () {
          const { world, update, stateOf, stored, managers } = yield* setupOnTestClock({
            retry: { initialBackoffMs: 10, maxBackoffMs: 100, maxAttempts: 100 }
          })
          if (coordinators === "remote") {
            world.stateLeaders = [2, 2, 2]
            world.loadCoordinators(managers)
          }
          update()
          yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
          const m = managers.get(1)!
          m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: connection refused", retryable: true })
          yield* eventuallyOnClock("failed", () => stateOf(0) === "FAILED")
          yield* eventuallyOnClock("retried", () => stateOf(0) === "MIRRORING")
          expect(stored(0)).toMatchObject({ state: "MIRRORING", retryAttempt: 1 })
          m.fetched(TOPIC, 0)
          m.fetched(TOPIC, 0)
          yield* eventuallyOnClock("reset persisted", () => stored(0)?.retryAttempt === 0)
          yield* eventuallyOnClock("cache agrees", () => m.stateOf(TOPIC, 0)?.stateEpoch === stored(0)?.stateEpoch)
          // Every `__mirror_state` partition moves to the other broker, which replays the log from scratch.
          world.stateLeaders = world.stateLeaders.map((l) => (l === 1 ? 2 : 1))
          world.loadCoordinators(managers)
          expect(stored(0)).toEqual(m.stateOf(TOPIC, 0))
          // The next failure is attempt 1 again, in the cache and in the log.
          m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: again", retryable: true })
          yield* eventuallyOnClock("failed again", () => stored(0)?.state === "FAILED")
          expect(stored(0)).toMatchObject({ retryAttempt: 1, previousState: "MIRRORING" })
        })
    )

  effectIt.scoped(
    "given a remote coordinator, when a partition fails, then the reason, attempt and previous state reach it over WriteMirrorStates",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, stored, managers } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 5000, maxBackoffMs: 5000, maxAttempts: 100 }
        })
        world.stateLeaders = [2, 2, 2]
        world.loadCoordinators(managers)
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        expect(world.coordinator(1).loadedPartitions()).toEqual([])
        managers.get(1)!.fetchFailed(TOPIC, 0, { message: "Failed to get source metadata: timeout", retryable: true })
        yield* eventuallyOnClock("failed", () => stored(0)?.state === "FAILED")
        expect(stored(0)).toMatchObject({
          retryAttempt: 1,
          previousState: "MIRRORING",
          errorMessage: "Failed to get source metadata: timeout"
        })
      })
  )

  effectIt.scoped(
    "given the source refuses (a mirror loop), then LOG_TRUNCATION fails with its reason and retries until the source allows it",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, stored, partitions, lookups, retries } = yield* setupOnTestClock({ lme: 3 })
        world.sourceRefusal = "Detected mirror loop for mirror:back"
        update()
        yield* eventuallyOnClock(
          "failed",
          () => stored(0)?.state === "FAILED" && stored(0)?.errorMessage === world.sourceRefusal
        )
        expect(stored(0)).toMatchObject({ previousState: "LOG_TRUNCATION", retryAttempt: 1 })
        expect(partitions.get(1)!.calls.some((c) => c.startsWith("truncate"))).toBe(false)
        world.sourceRefusal = null
        yield* eventuallyOnClock(
          "mirroring after the retry",
          () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING"
        )
        // The truncation used the source's last mirror epoch.
        expect(partitions.get(1)!.calls).toContain("truncate 0 lme=3")
        expect(lookups).toContain(`${MIRROR} ${TOPIC} true 0`)
        // Every automatic retry was reported, for the mirror it belongs to.
        expect(retries.length).toBeGreaterThanOrEqual(1)
        expect(new Set(retries)).toEqual(new Set([MIRROR]))
      })
  )

  effectIt.scoped(
    "given a FAILED partition, when the operator stops the topic, then it stops without waiting for a retry",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, managers, stored } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 60_000, maxBackoffMs: 60_000, maxAttempts: 100 }
        })
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        managers.get(1)!.fetchFailed(TOPIC, 0, { message: "Fetch IO error: gone", retryable: true })
        yield* eventuallyOnClock("failed", () => stateOf(0) === "FAILED")
        expect(yield* onClock(managers.get(2)!.validate("stop", MIRROR, [TOPIC]))).toMatchObject({ _tag: "Valid" })
        world.desired = "STOPPED"
        update()
        yield* eventuallyOnClock("stopped", () => stateOf(0) === "STOPPED" && stateOf(1) === "STOPPED")
        expect(stored(0)).toMatchObject({ state: "STOPPED", retryAttempt: 0, errorMessage: null })
      })
  )

  effectIt.scoped("given a non-retryable failure, then it stays FAILED until RecoverMirrorTopics", () =>
    Effect.gen(function* () {
      const { update, stateOf, managers } = yield* setupOnTestClock()
      update()
      yield* eventuallyOnClock("mirroring", () => stateOf(1) === "MIRRORING")
      const m = managers.get(1)!
      m.fetchFailed(TOPIC, 1, { message: "The source topic is deleted.", retryable: false })
      yield* eventuallyOnClock("failed", () => stateOf(1) === "FAILED")
      yield* pause(100)
      expect(m.stateOf(TOPIC, 1)).toMatchObject({ state: "FAILED", retryAttempt: -1 })
      expect(m.recover(MIRROR, [TOPIC])).toEqual([{ topicName: TOPIC, errorCode: 0, errorMessage: null }])
      yield* eventuallyOnClock("recovered", () => stateOf(1) === "MIRRORING")
      expect(m.stateOf(TOPIC, 1)?.retryAttempt).toBe(0)
      expect(m.recover(MIRROR, ["nope"])[0]!.errorCode).toBe(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    })
  )

  effectIt.scoped(
    "given the refresh finds the source lost, then FAILED non-retryable with its reason, over a retryable fetch failure; a stopped topic stays STOPPED",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, stored, managers } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 30, maxBackoffMs: 30, maxAttempts: 100 }
        })
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
        const leaderOf = (p: number) => managers.get(world.leaders.get(p)!.leader)!
        leaderOf(0).fetchFailed(TOPIC, 0, { message: "Fetch IO error: unknown topic id", retryable: true })
        yield* eventuallyOnClock("failed", () => stored(0)?.state === "FAILED")
        const recreated = "source topic recreated with a new topic ID: orders"
        leaderOf(0).sourceFailed(TOPIC, 0, recreated, false)
        leaderOf(1).sourceFailed(TOPIC, 1, "Source cluster ID changed for mirror m", false)
        yield* eventuallyOnClock(
          "failed for good",
          () => stored(0)?.retryAttempt === -1 && stored(1)?.retryAttempt === -1
        )
        expect(stored(0)).toMatchObject({ state: "FAILED", previousState: "MIRRORING", errorMessage: recreated })
        expect(stored(1)).toMatchObject({ state: "FAILED", previousState: "MIRRORING" })
        // Well past the 30 ms retry delay: no retry any more.
        yield* pause(200)
        expect([stateOf(0), stateOf(1)]).toEqual(["FAILED", "FAILED"])
        world.desired = "STOPPED"
        update()
        yield* eventuallyOnClock("stopped", () => stateOf(0) === "STOPPED" && stateOf(1) === "STOPPED")
        leaderOf(0).sourceFailed(TOPIC, 0, "source topic deleted: orders", false)
        yield* pause(100)
        expect(stored(0)).toMatchObject({ state: "STOPPED", retryAttempt: 0 })
      })
  )

  effectIt.scoped(
    "given a data-loss failure, then recovery needs AcceptDataLoss, which restarts the partition at the source log start",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, managers, partitions } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(1) === "MIRRORING")
        const m = managers.get(1)!
        const reason =
          "Data loss: the source log start 1200 passed the mirror position 1000 (200 records were deleted on the source before they were mirrored)"
        m.fetchFailed(TOPIC, 1, { message: reason, retryable: false })
        yield* eventuallyOnClock("failed", () => stateOf(1) === "FAILED")

        const refused = m.recover(MIRROR, [TOPIC])
        expect(refused).toHaveLength(1)
        expect(refused[0]!.errorCode).toBe(Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES)
        expect(refused[0]!.errorMessage).toContain(reason)
        expect(refused[0]!.errorMessage).toContain("--accept-data-loss")
        yield* pause(100)
        expect(m.stateOf(TOPIC, 1)).toMatchObject({ state: "FAILED", retryAttempt: -1, errorMessage: reason })
        expect(partitions.get(1)!.calls).not.toContain("accept data loss 1")

        expect(m.recover(MIRROR, [TOPIC], { acceptDataLoss: true })).toEqual([
          { topicName: TOPIC, errorCode: 0, errorMessage: null }
        ])
        yield* eventuallyOnClock("recovered", () => stateOf(1) === "MIRRORING")
        const calls = partitions.get(1)!.calls
        // The acceptance is handed over before the fetcher starts again.
        expect(calls.lastIndexOf("accept data loss 1")).toBeGreaterThanOrEqual(0)
        expect(calls.lastIndexOf("accept data loss 1")).toBeLessThan(calls.lastIndexOf("start 1"))
        expect(m.stateOf(TOPIC, 1)).toMatchObject({ retryAttempt: 0, errorMessage: null })
      })
  )

  effectIt.scoped("lists the partitions it leads with their states", () =>
    Effect.gen(function* () {
      const { update, stateOf, managers } = yield* setupOnTestClock()
      update()
      yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
      expect([...managers.get(1)!.partitionStates()]).toEqual([
        { mirror: MIRROR, topic: TOPIC, partition: 0, state: "MIRRORING" },
        { mirror: MIRROR, topic: TOPIC, partition: 1, state: "MIRRORING" }
      ])
      expect([...managers.get(2)!.partitionStates()]).toEqual([])
    })
  )

  effectIt.scoped(
    "given a source batch epoch above the local epoch, then EPOCH_FENCING bumps to source + 10 and mirroring resumes",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, managers, partitions, stored } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        managers.get(1)!.epochAhead(TOPIC, 0, 12)
        yield* eventuallyOnClock("bumped", () => partitions.get(1)!.calls.includes("bump 0 min=22"))
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stored(0)!.stateEpoch === 4)
      })
  )

  effectIt.scoped("given a write the coordinator cannot commit, then it is retried before the action runs", () =>
    Effect.gen(function* () {
      const { world, update, stateOf, partitions } = yield* setupOnTestClock()
      world.failWrites = 3
      update()
      yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
      expect(partitions.get(1)!.calls.filter((c) => c.startsWith("start")).length).toBe(2)
    })
  )

  effectIt.scoped(
    "given leadership moves to another broker, then the old leader drops the fetcher and the new one resumes from the coordinator's state",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, partitions } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
        world.leaders.set(0, { leader: 2, leaderEpoch: 1 })
        update()
        yield* eventuallyOnClock("moved", () => stateOf(0) === "MIRRORING" && partitions.get(2)!.fetching.has(0))
        expect(partitions.get(1)!.fetching.has(0)).toBe(false)
        // The new leader resumed MIRRORING: no second truncation.
        expect(partitions.get(2)!.calls).toEqual(["start 0"])
      })
  )

  effectIt.scoped(
    "given a coordinator that lost its state partition, then a new coordinator replays the log and keeps every state",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, managers, stored } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
        const before = [stored(0), stored(1)]
        // Broker 1 loses every `__mirror_state` partition to broker 2, which replays them.
        world.stateLeaders = world.stateLeaders.map(() => 2)
        world.loadCoordinators(managers)
        expect(world.coordinator(1).loadedPartitions()).toEqual([])
        expect([stored(0), stored(1)]).toEqual(before)
      })
  )

  effectIt.scoped("validates operations against desired and actual states and stamps the metadata offset (§5.8)", () =>
    Effect.gen(function* () {
      const { world, update, stateOf, managers } = yield* setupOnTestClock()
      const m = managers.get(2)!
      world.desired = "PAUSED"
      expect(yield* onClock(m.validate("start", MIRROR, [TOPIC]))).toMatchObject({
        _tag: "Invalid",
        errorCode: Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES
      })
      // Starting a topic this mirror already mirrors is the controller's no-op: not refused here either.
      world.desired = "MIRRORING"
      expect(yield* onClock(m.validate("start", MIRROR, [TOPIC]))).toEqual({
        _tag: "Valid",
        stateValidationOffset: 100
      })
      world.desired = "STOPPED"
      expect(yield* onClock(m.validate("start", MIRROR, [TOPIC]))).toEqual({
        _tag: "Valid",
        stateValidationOffset: 100
      })
      world.desired = "MIRRORING"
      update()
      yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
      expect(yield* onClock(m.validate("pause", MIRROR, [TOPIC]))).toEqual({
        _tag: "Valid",
        stateValidationOffset: 100
      })
      // Resuming a MIRRORING topic is the controller's no-op (JR47): not refused here either.
      expect(yield* onClock(m.validate("resume", MIRROR, [TOPIC]))).toEqual({
        _tag: "Valid",
        stateValidationOffset: 100
      })
      world.desired = "STOPPED"
      const refused = yield* onClock(m.validate("resume", MIRROR, [TOPIC]))
      expect(refused).toMatchObject({ _tag: "Invalid", errorCode: Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES })
      world.desired = "MIRRORING"
      // Unknown topics are the controller's to refuse, per topic.
      expect(yield* onClock(m.validate("stop", MIRROR, ["unknown"]))).toMatchObject({ _tag: "Valid" })
      // Topics still mirroring: the controller's CLUSTER_MIRROR_NOT_EMPTY says it best, so it goes through.
      expect(yield* onClock(m.validate("delete", MIRROR, null))).toMatchObject({ _tag: "Valid" })
      world.desired = "STOPPED"
      // Desired STOPPED but the leader has not acted on it (no metadata update): refused once the wait ends.
      expect(yield* onClock(m.validate("delete", MIRROR, null))).toMatchObject({
        _tag: "Invalid",
        errorCode: Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES
      })
      // Right after the stop reaches the leader: the delete waits for the partitions to be STOPPED.
      update()
      expect(stateOf(0)).not.toBe("STOPPED")
      expect(yield* onClock(m.validate("delete", MIRROR, null))).toMatchObject({ _tag: "Valid" })
      expect([stateOf(0), stateOf(1)]).toEqual(["STOPPED", "STOPPED"])
    })
  )

  effectIt.scoped(
    "given a start, stop or pause under way, when it is sent again (a client retrying after a timeout), then it is valid: the controller answers it as a no-op",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, managers } = yield* setupOnTestClock()
        const m = managers.get(2)!
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
        expect(yield* onClock(m.validate("start", MIRROR, [TOPIC]))).toEqual({
          _tag: "Valid",
          stateValidationOffset: 100
        })
        world.desired = "PAUSED"
        world.offset = 101
        // Before the leader acted on it (actual MIRRORING) and once it did (PAUSING, PAUSED).
        expect(yield* onClock(m.validate("pause", MIRROR, [TOPIC]))).toEqual({
          _tag: "Valid",
          stateValidationOffset: 101
        })
        update()
        yield* eventuallyOnClock("paused", () => stateOf(0) === "PAUSED" && stateOf(1) === "PAUSED")
        expect(yield* onClock(m.validate("pause", MIRROR, [TOPIC]))).toEqual({
          _tag: "Valid",
          stateValidationOffset: 101
        })
        world.desired = "STOPPED"
        world.offset = 102
        update()
        // Right after the stop reached the leader: partitions STOPPING, then STOPPED.
        expect(stateOf(0)).not.toBe("STOPPED")
        expect(yield* onClock(m.validate("stop", MIRROR, [TOPIC]))).toEqual({
          _tag: "Valid",
          stateValidationOffset: 102
        })
        yield* eventuallyOnClock("stopped", () => stateOf(0) === "STOPPED" && stateOf(1) === "STOPPED")
        expect(yield* onClock(m.validate("stop", MIRROR, [TOPIC]))).toEqual({
          _tag: "Valid",
          stateValidationOffset: 102
        })
        // What the topic's desired state refuses still is: pausing a stopped topic.
        expect(yield* onClock(m.validate("pause", MIRROR, [TOPIC]))).toMatchObject({
          _tag: "Invalid",
          errorCode: Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES
        })
      })
  )

  it("given thousands of partitions reaching their log work at once (start, stop of everything), then it runs a few per event-loop turn: timers, sockets and signals are served in between", async () => {
    const n = 2000
    const { world, update, stateOf, partitions, managers, reads } = setup()
    world.leaders = new Map(Array.from({ length: n }, (_, p) => [p, { leader: 1, leaderEpoch: 0 }]))
    const p = partitions.get(1)!
    // The first call of each kind arms a macrotask; how many calls ran before it tells whether the
    // event loop got a turn while the work was under way (all n in one go: it did not).
    const paced = (onCall: () => void) => {
      let calls = 0
      let beforeMacrotask: number | undefined
      return {
        call: () => {
          if (calls++ === 0) setImmediate(() => (beforeMacrotask = calls))
          onCall()
        },
        calls: () => calls,
        beforeMacrotask: () => beforeMacrotask
      }
    }
    const truncations = paced(() => {})
    p.truncateToEpoch = async () => truncations.call()
    const stops = paced(() => {})
    p.finishStop = async () => stops.call()
    const all = (state: State) => Array.from({ length: n }, (_, i) => i).every((i) => stateOf(i) === state)

    update()
    await eventually("all mirroring", () => all("MIRRORING"), 60_000)
    expect(truncations.calls()).toBe(n)
    expect(truncations.beforeMacrotask()).toBeLessThan(n)

    // Validating a stop of all of them on the other broker: one ReadMirrorStates per coordinator broker
    // (the states on broker 2 itself are read locally), not one per partition.
    reads.length = 0
    expect(await managers.get(2)!.validate("stop", MIRROR, [TOPIC])).toMatchObject({ _tag: "Valid" })
    expect(reads.map((r) => r.to)).toEqual([1])
    expect(reads[0]!.partitions).toBeGreaterThan(n / 2)

    world.desired = "STOPPED"
    update()
    await eventually("all stopped", () => all("STOPPED"), 60_000)
    expect(stops.calls()).toBe(n)
    expect(stops.beforeMacrotask()).toBeLessThan(n)
  }, 120_000)

  effectIt.scoped(
    "describes the partitions it leads with state and lag, and answers LME lookups for the keys it coordinates",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, managers, partitions } = yield* setupOnTestClock()
        update()
        yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
        const d = managers.get(1)!.describe({
          mirrorNames: [],
          includeAuthorizedOperations: false,
          clusterId: null,
          lastMirrorEpochLookups: []
        })
        expect(d.mirrors).toHaveLength(1)
        expect(d.mirrors[0]!.topics[0]!.partitions.map((p) => [p.partitionIndex, p.stateValue, p.lag])).toEqual([
          [0, "MIRRORING", 10n],
          [1, "MIRRORING", 10n]
        ])
        expect(
          managers.get(1)!.describe({
            mirrorNames: ["nope"],
            includeAuthorizedOperations: false,
            clusterId: null,
            lastMirrorEpochLookups: []
          }).mirrors[0]!.errorCode
        ).toBe(Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR)
        partitions.get(1)!.epochs.set(0, 5)
        partitions.get(1)!.epochs.set(1, 6)
        world.desired = "STOPPED"
        update()
        yield* eventuallyOnClock("stopped", () => stateOf(0) === "STOPPED" && stateOf(1) === "STOPPED")
        const lookup = (id: number) =>
          managers
            .get(id)!
            .describe({
              mirrorNames: [],
              includeAuthorizedOperations: false,
              clusterId: SOURCE_ID,
              lastMirrorEpochLookups: [{ topicId: TOPIC_ID, partitions: [0, 1] }]
            })
            .lookupResults[0]!.partitions.map((p) => p.lastMirrorEpoch)
        // Each broker answers only for the keys it coordinates; the max over brokers is the answer.
        const merged = [0, 1].map((i) => Math.max(lookup(1)[i]!, lookup(2)[i]!))
        expect(merged).toEqual([5, 6])
      })
  )

  effectIt.scoped("when the mirror is deleted, then the coordinators tombstone its state", () =>
    Effect.gen(function* () {
      const { world, update, stateOf, stored } = yield* setupOnTestClock()
      update()
      yield* eventuallyOnClock("mirroring", () => stateOf(0) === "MIRRORING")
      world.mirrorExists = false
      world.mirrorName = null
      update()
      yield* eventuallyOnClock("tombstoned", () => stored(0)?.state === "UNKNOWN" && stored(1)?.state === "UNKNOWN")
      const tombstones = [...world.stateLogs.values()].flat().filter((r) => r.value === null)
      expect(tombstones.length).toBe(4)
    })
  )
})

describe("MirrorMetadataManager on the TestClock", () => {
  effectIt.scoped(
    "given a fetch failure, then the retry waits the schedule's delay at each attempt (initial, then doubled) and not a millisecond less",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, stored, managers } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 1000, maxBackoffMs: 10_000, maxAttempts: 100 }
        })
        update()
        yield* until("mirroring", () => stateOf(0) === "MIRRORING")
        const m = managers.get(1)!
        m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: connection refused", retryable: true })
        yield* until("failed", () => stateOf(0) === "FAILED" && m.pendingTimers === 1)
        expect(stored(0)).toMatchObject({ state: "FAILED", retryAttempt: 1 })
        // Jitter fixed at the middle (random 0.5): the first delay is exactly 1000 ms.
        yield* TestClock.adjust("999 millis")
        yield* settle
        expect(stateOf(0)).toBe("FAILED")
        yield* TestClock.adjust("1 millis")
        yield* until("retried", () => stateOf(0) === "MIRRORING")
        m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: again", retryable: true })
        yield* until("failed again", () => stateOf(0) === "FAILED" && m.pendingTimers === 1)
        expect(stored(0)).toMatchObject({ state: "FAILED", retryAttempt: 2 })
        yield* TestClock.adjust("1999 millis")
        yield* settle
        expect(stateOf(0)).toBe("FAILED")
        yield* TestClock.adjust("1 millis")
        yield* until("retried again", () => stateOf(0) === "MIRRORING")
      })
  )

  effectIt.scoped(
    "given a source that never answers the truncation check, then the call times out, the partition FAILS with the timeout and its retry goes on",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, stored, managers, partitions } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 1000, maxBackoffMs: 10_000, maxAttempts: 100 },
          callTimeoutMs: 5000
        })
        world.hangTruncations = 1
        world.leaders.delete(1)
        update()
        yield* until("truncating", () => stateOf(0) === "LOG_TRUNCATION")
        yield* settle
        expect(stateOf(0)).toBe("LOG_TRUNCATION")
        yield* TestClock.adjust("5 seconds")
        yield* until("failed", () => stateOf(0) === "FAILED")
        expect(stored(0)?.errorMessage).toContain("timed out after 5000 ms")
        expect(stored(0)).toMatchObject({ retryAttempt: 1, previousState: "LOG_TRUNCATION" })
        yield* TestClock.adjust("1 second")
        yield* until("mirroring", () => stateOf(0) === "MIRRORING" && partitions.get(1)!.fetching.has(0))
        expect(managers.get(1)!.stateOf(TOPIC, 0)?.state).toBe("MIRRORING")
      })
  )

  effectIt.scoped(
    "given a remote coordinator that never answers a ReadMirrorStates, then the read times out and the partition reads again",
    () =>
      Effect.gen(function* () {
        const { world, update, stateOf, managers, reads } = yield* setupOnTestClock({ callTimeoutMs: 5000 })
        world.stateLeaders = [2, 2, 2]
        world.loadCoordinators(managers)
        world.leaders.delete(1)
        world.hangReads = 1
        update()
        yield* until("read sent", () => reads.length === 1)
        yield* settle
        expect(stateOf(0)).toBeUndefined()
        yield* TestClock.adjust("5 seconds")
        // The timed-out read answers the partition's step, which reads again 300 ms later.
        yield* settle
        yield* TestClock.adjust("300 millis")
        yield* until("mirroring", () => stateOf(0) === "MIRRORING")
        expect(reads.length).toBeGreaterThanOrEqual(2)
      })
  )

  effectIt.scoped(
    "given partitions that reached their state, then none holds a fiber; a FAILED one holds only its retry timer",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, managers } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 1000, maxBackoffMs: 10_000, maxAttempts: 100 }
        })
        const m = managers.get(1)!
        update()
        expect(m.runningPartitions).toBe(2)
        yield* until("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
        yield* until("idle", () => m.runningPartitions === 0)
        expect(m.partitionCount).toBe(2)
        expect(m.pendingTimers).toBe(0)
        m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: connection refused", retryable: true })
        yield* until("failed", () => stateOf(0) === "FAILED" && m.pendingTimers === 1)
        yield* until("idle while waiting", () => m.runningPartitions === 0)
        yield* TestClock.adjust("1 second")
        yield* until("retried and idle", () => stateOf(0) === "MIRRORING" && m.runningPartitions === 0)
        expect(m.pendingTimers).toBe(0)
      })
  )

  effectIt.scoped(
    "when closed, then every partition's work and timer is interrupted and no trigger starts new work",
    () =>
      Effect.gen(function* () {
        const { update, stateOf, managers } = yield* setupOnTestClock({
          retry: { initialBackoffMs: 1000, maxBackoffMs: 10_000, maxAttempts: 100 }
        })
        const m = managers.get(1)!
        update()
        yield* until("mirroring", () => stateOf(0) === "MIRRORING" && stateOf(1) === "MIRRORING")
        m.fetchFailed(TOPIC, 0, { message: "Fetch IO error: connection refused", retryable: true })
        yield* until("failed", () => stateOf(0) === "FAILED" && m.pendingTimers === 1)
        m.close()
        yield* until("interrupted", () => m.pendingTimers === 0 && m.runningPartitions === 0)
        m.onMetadataUpdate()
        m.fetchFailed(TOPIC, 1, { message: "Fetch IO error: again", retryable: true })
        expect(m.runningPartitions).toBe(0)
        expect(m.partitionCount).toBe(0)
      })
  )
})
