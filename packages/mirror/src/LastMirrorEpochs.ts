/**
 * The source side of LOG_TRUNCATION (KIP-1279 §5.5 steps 1-5), batched per mirror: the loop check (a
 * mirror on the source that mirrors one of these topics from this cluster), the failback check (the
 * source's own mirror of a topic has not stopped) and the last mirror epochs the source holds for these
 * partitions, asked of every source broker (DescribeClusterMirrors with this cluster's id) through one
 * fan-out and merged by max per partition.
 *
 * Lookups asked in the same turn for one mirror go out as one request per source broker. A source
 * without KIP-1279 (Apache Kafka) answers UNSUPPORTED_VERSION: no loop is possible and no epoch is known,
 * so mirroring is one way. Any other failure of the listing or of a broker fails every lookup of the
 * batch; the manager retries them (the partitions go FAILED with backoff).
 */
import { ClientError, ClusterClient } from "@clustermirror/client"
import type { MirrorMetadataManager } from "@clustermirror/coordinator"
import { DescribeClusterMirrors, Errors, ListClusterMirrors } from "@clustermirror/protocol"
import { Data, Duration, Effect, Either } from "effect"

/** The lookup of one topic's partitions. */
export interface Lookup {
  readonly topic: string
  readonly topicId: string
  readonly partitions: ReadonlyArray<number>
}

/** A partition of a source mirror that has not stopped (it blocks failback). */
export interface NotStopped {
  readonly mirror: string
  readonly partition: number
  readonly state: string
}

/** What the source told about a batch of lookups. */
export interface Found {
  /** Max last mirror epoch per topic id and partition over every source broker. */
  readonly lastMirrorEpochs: ReadonlyMap<string, ReadonlyMap<number, number>>
  /** Topic name → the source mirror that mirrors it from this cluster. */
  readonly loops: ReadonlyMap<string, string>
  /** Topic name → partitions of the source's mirrors of it (from this cluster) not yet STOPPED. */
  readonly notStopped: ReadonlyMap<string, ReadonlyArray<NotStopped>>
  /** Whether any source broker speaks DescribeClusterMirrors. */
  readonly supported: boolean
  /** The number of source brokers asked. */
  readonly brokers: number
}

/** The lookup failed; retriable (the partitions go FAILED and are retried with backoff). */
export class LookupFailed extends Data.TaggedError("LookupFailed")<{
  readonly message: string
  readonly cause?: unknown
}> {
  get retriable(): boolean {
    return true
  }
}

/** Time the source gets for its mirror listing and each broker for its DescribeClusterMirrors answer. */
export const REQUEST_TIMEOUT_MS = 15_000

const E = Errors.ErrorCode
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** The source does not speak the API (an Apache Kafka source has no KIP-1279 APIs). */
export const unsupported = (e: unknown): boolean =>
  e instanceof ClientError.UnsupportedVersion ||
  (typeof e === "object" && e !== null && "errorCode" in e && e.errorCode === E.UNSUPPORTED_VERSION)

/** Where the listed source mirrors that mirror from `clusterId` hold one of `topics`: the loop check. */
export const loopsOf = (
  listed: ListClusterMirrors.Response,
  clusterId: string,
  topics: ReadonlySet<string>
): { readonly back: ReadonlySet<string>; readonly loops: ReadonlyMap<string, string> } => {
  const back = new Set<string>()
  const loops = new Map<string, string>()
  for (const m of listed.mirrors) {
    if (m.sourceClusterId !== clusterId) continue
    back.add(m.mirrorName)
    for (const t of m.topicNames) if (topics.has(t)) loops.set(t, m.mirrorName)
  }
  return { back, loops }
}

/** The DescribeClusterMirrors request of a batch: every topic id with the union of its partitions. */
export const requestOf = (clusterId: string, list: ReadonlyArray<Lookup>): DescribeClusterMirrors.Request => {
  const byTopic = new Map<string, Set<number>>()
  for (const l of list) {
    let s = byTopic.get(l.topicId)
    if (s === undefined) byTopic.set(l.topicId, (s = new Set()))
    for (const p of l.partitions) s.add(p)
  }
  return {
    mirrorNames: [],
    includeAuthorizedOperations: false,
    clusterId,
    lastMirrorEpochLookups: [...byTopic].map(([topicId, ps]) => ({ topicId, partitions: [...ps] }))
  }
}

/**
 * Merges the source brokers' answers (in broker order): the max last mirror epoch per partition, and the
 * partitions not STOPPED of the source mirrors in `back` for `topics`. Brokers that do not speak the API
 * are skipped; any other failure is the merge's.
 */
export const merge = (
  answers: ReadonlyArray<Either.Either<DescribeClusterMirrors.Response, unknown>>,
  back: ReadonlySet<string>,
  topics: ReadonlySet<string>,
  loops: ReadonlyMap<string, string>
): Either.Either<Found, LookupFailed> => {
  const result = new Map<string, Map<number, number>>()
  const notStopped = new Map<string, Array<NotStopped>>()
  let supported = false
  for (const answer of answers) {
    if (Either.isLeft(answer)) {
      // A source without KIP-1279 cannot hold last mirror epochs: mirroring is one way (§5.5 step 5).
      if (unsupported(answer.left)) continue
      return Either.left(new LookupFailed({ message: messageOf(answer.left), cause: answer.left }))
    }
    const res = answer.right
    supported = true
    if (res.errorCode !== 0)
      return Either.left(
        new LookupFailed({ message: `DescribeClusterMirrors on the source: ${Errors.message(res.errorCode)}` })
      )
    for (const t of res.lookupResults ?? []) {
      let m = result.get(t.topicId)
      if (m === undefined) result.set(t.topicId, (m = new Map()))
      for (const p of t.partitions) m.set(p.partitionIndex, Math.max(m.get(p.partitionIndex) ?? -1, p.lastMirrorEpoch))
    }
    for (const m of res.mirrors) {
      if (!back.has(m.mirrorName)) continue
      for (const t of m.topics) {
        if (!topics.has(t.topicName)) continue
        for (const p of t.partitions)
          if (p.stateValue !== "STOPPED") {
            let l = notStopped.get(t.topicName)
            if (l === undefined) notStopped.set(t.topicName, (l = []))
            l.push({ mirror: m.mirrorName, partition: p.partitionIndex, state: p.stateValue })
          }
      }
    }
  }
  return Either.right({ lastMirrorEpochs: result, loops, notStopped, supported, brokers: answers.length })
}

/** What one lookup of a batch learns: its partitions' last mirror epochs (-1 where none) and a refusal. */
export const truncationInfo = (found: Found, l: Lookup): MirrorMetadataManager.TruncationInfo => {
  const byPartition = found.lastMirrorEpochs.get(l.topicId)
  const notStopped = found.notStopped.get(l.topic)
  const loop = found.loops.get(l.topic)
  return {
    lastMirrorEpochs: new Map(l.partitions.map((p) => [p, byPartition?.get(p) ?? -1])),
    refusal:
      loop !== undefined
        ? `Detected mirror loop for mirror:${loop}`
        : notStopped !== undefined
          ? `Source mirror(s) ${[...new Set(notStopped.map((n) => n.mirror))].join(", ")} have not stopped for partition(s) ${notStopped.map((n) => `${l.topic}-${n.partition} (${n.state})`).join(", ")}`
          : null
  }
}

const fromPromise = <A>(what: string, f: () => Promise<A>): Effect.Effect<A, unknown> =>
  Effect.tryPromise({ try: f, catch: (e) => e }).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(REQUEST_TIMEOUT_MS),
      onTimeout: () => new LookupFailed({ message: `${what} on the source did not answer in ${REQUEST_TIMEOUT_MS} ms` })
    })
  )

/** §5.5 steps 1-5 for a batch of lookups of one mirror, against its source cluster. */
export const lookup = (
  client: ClusterClient.Client,
  clusterId: string,
  list: ReadonlyArray<Lookup>
): Effect.Effect<Found, LookupFailed> =>
  Effect.gen(function* () {
    const topics = new Set(list.map((l) => l.topic))
    // Mirrors on the source that mirror from this cluster: a loop if they still mirror one of these topics.
    const listed = yield* fromPromise("ListClusterMirrors", () =>
      client.sendToAnyBroker(ListClusterMirrors.api, { includeTopicNames: true })
    ).pipe(
      Effect.map((res) => loopsOf(res, clusterId, topics)),
      // A source without KIP-1279 has no mirrors: no loop possible (§5.5 step 1).
      Effect.catchAll((e) =>
        unsupported(e)
          ? Effect.succeed({ back: new Set<string>(), loops: new Map<string, string>() })
          : Effect.fail(e instanceof LookupFailed ? e : new LookupFailed({ message: messageOf(e), cause: e }))
      )
    )
    const request = requestOf(clusterId, list)
    const merged = yield* ClusterClient.fromClient(client)
      .forEachBroker(
        (b) =>
          fromPromise("DescribeClusterMirrors", () => client.sendToNode(b.nodeId, DescribeClusterMirrors.api, request)),
        (outcomes) =>
          merge(
            outcomes.map((o) => o.result),
            listed.back,
            topics,
            listed.loops
          ),
        { timeoutMs: REQUEST_TIMEOUT_MS }
      )
      .pipe(Effect.mapError((e) => new LookupFailed({ message: messageOf(e), cause: e })))
    return yield* merged
  })

/** What the batched lookup needs of its broker. */
export interface Options {
  readonly clusterId: string
  /** The admin client of the mirror's source cluster. */
  readonly client: (mirror: string) => ClusterClient.Client
  /** Runs `f` once the current turn's lookups are in (the broker's `setImmediate`). */
  readonly defer: (f: () => void) => void
  readonly log: (line: string) => void
}

/** The manager's `SourcePort` over the source clusters, batching lookups per mirror per turn. */
export const make = (options: Options): MirrorMetadataManager.SourcePort => {
  type Pending = Lookup & {
    readonly resolve: (info: MirrorMetadataManager.TruncationInfo) => void
    readonly reject: (e: unknown) => void
  }
  let pending = new Map<string, Array<Pending>>()
  let scheduled = false
  const flush = () => {
    scheduled = false
    const batch = pending
    pending = new Map()
    for (const [mirror, list] of batch)
      void Effect.runPromise(
        lookup(options.client(mirror), options.clusterId, list).pipe(
          Effect.tap((found) =>
            Effect.sync(() => {
              if (!found.supported && found.brokers > 0)
                options.log(
                  `mirror ${mirror}: the source does not support last mirror epoch lookups; mirroring is one way`
                )
            })
          ),
          Effect.either
        )
      ).then((r) => {
        for (const l of list) Either.isRight(r) ? l.resolve(truncationInfo(r.right, l)) : l.reject(r.left)
      })
  }
  return {
    prepareTruncation: (mirror, topic, topicId, partitions) =>
      new Promise((resolve, reject) => {
        let list = pending.get(mirror)
        if (list === undefined) pending.set(mirror, (list = []))
        list.push({ topic, topicId, partitions, resolve, reject })
        if (!scheduled) {
          scheduled = true
          options.defer(flush)
        }
      })
  }
}
