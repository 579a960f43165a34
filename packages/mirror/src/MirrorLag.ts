/**
 * Mirror lag per partition for the metrics, in records and seconds, whether or not the partition is being
 * fetched. A fetched partition reports its fetcher's lag. A partition without a fetcher (paused, failed)
 * keeps falling behind while its source grows: its source high watermark is read at scrape time
 * (ListOffsets LATEST, READ_UNCOMMITTED, on the source leaders) and its lag in time counts from the last
 * moment it was caught up, as the fetcher counts it.
 *
 * It owns only the caught-up times of partitions and the sampling. It must not change partitions, fetchers
 * or states; it reads them through `LagPort`.
 */
import { type ClusterClient, FanOut } from "@clustermirror/client"
import {
  type DescribeClusterMirrors,
  Errors,
  ListOffsets,
  type MirrorPartitionState,
  TopicPartitionMap
} from "@clustermirror/protocol"
import { Duration, Effect, Either } from "effect"
import * as Clock from "./internal/Clock.js"
import type { PartitionSample } from "./MirrorMetrics.js"

const LATEST_TIMESTAMP = -1n
/** A scrape waits this long for a source; partitions it did not answer for have no lag sample. */
export const SOURCE_TIMEOUT_MS = 2000

/** What the lag sampling reads from the broker. */
export interface LagPort {
  /** The fetcher's lag of a partition it fetches (`lag` -1 while unknown); undefined when it does not fetch it. */
  readonly fetcherLag: (
    mirror: string,
    topic: string,
    partition: number
  ) => { readonly lag: number; readonly lagMs: number } | undefined
  /** The local high watermark of a partition this broker leads. */
  readonly highWatermark: (topic: string, partition: number) => number | undefined
  /** A client of the mirror's source cluster. */
  readonly source: (mirror: string) => ClusterClient.Client
}

interface Part {
  readonly mirror: string
  readonly topic: string
  readonly partition: number
  readonly state: MirrorPartitionState.MirrorPartitionState
}

export class MirrorLag {
  /** When each partition was last known caught up (or first seen). */
  private readonly caughtUpAt = new TopicPartitionMap<number>()

  constructor(
    private readonly port: LagPort,
    private readonly now: () => number = Clock.now
  ) {}

  /** A fetcher answer: the partition is caught up when its log end reached the source high watermark. */
  fetched(topic: string, partition: number, sourceHighWatermark: number, logEndOffset: number): void {
    if (sourceHighWatermark >= 0 && logEndOffset >= sourceHighWatermark)
      this.caughtUpAt.set(topic, partition, this.now())
  }

  /** The samples of `parts` (the mirror partitions this broker leads), with lag where it is known. */
  async sample(parts: Iterable<Part>): Promise<ReadonlyArray<PartitionSample>> {
    const now = this.now()
    const out: Array<PartitionSample> = []
    const unfetched = new Map<string, Array<Part>>()
    const seen = new TopicPartitionMap<true>()
    for (const p of parts) {
      seen.set(p.topic, p.partition, true)
      if (!this.caughtUpAt.has(p.topic, p.partition)) this.caughtUpAt.set(p.topic, p.partition, now)
      const l = this.port.fetcherLag(p.mirror, p.topic, p.partition)
      if (l !== undefined) {
        if (l.lagMs === 0) this.caughtUpAt.set(p.topic, p.partition, now)
        // Before the source's first answer the lag is unknown: no sample rather than a made-up one.
        out.push(l.lag < 0 ? p : { ...p, lag: { records: l.lag, seconds: l.lagMs / 1000 } })
        continue
      }
      // Only partitions that stay without a fetcher; the others are between two steps.
      if (p.state !== "PAUSED" && p.state !== "PAUSING" && p.state !== "FAILED") {
        out.push(p)
        continue
      }
      let list = unfetched.get(p.mirror)
      if (list === undefined) unfetched.set(p.mirror, (list = []))
      list.push(p)
    }
    for (const [topic, partition] of [...this.caughtUpAt.entries()])
      if (!seen.has(topic, partition)) this.caughtUpAt.delete(topic, partition)
    out.push(...(await this.withoutFetcher(unfetched, now)))
    return out
  }

  /**
   * The lag of partitions without a fetcher (paused, failed), from their source high watermarks: for
   * DescribeClusterMirrors, which otherwise only knows the lag of partitions being fetched. Partitions the
   * source did not answer for within the timeout have no lag.
   */
  async unfetched(parts: Iterable<Part>): Promise<ReadonlyArray<PartitionSample>> {
    const now = this.now()
    const byMirror = new Map<string, Array<Part>>()
    for (const p of parts) {
      if (!this.caughtUpAt.has(p.topic, p.partition)) this.caughtUpAt.set(p.topic, p.partition, now)
      let list = byMirror.get(p.mirror)
      if (list === undefined) byMirror.set(p.mirror, (list = []))
      list.push(p)
    }
    return this.withoutFetcher(byMirror, now)
  }

  private async withoutFetcher(
    byMirror: ReadonlyMap<string, ReadonlyArray<Part>>,
    now: number
  ): Promise<ReadonlyArray<PartitionSample>> {
    const out: Array<PartitionSample> = []
    // not a fan-out: one ListOffsets scrape per mirror (each a different source cluster), fanned out per leader inside
    const answers = await Promise.all(
      [...byMirror].map(([mirror, list]) => this.sourceHighWatermarks(mirror, list).catch(() => undefined))
    )
    ;[...byMirror.values()].forEach((list, i) => {
      const hws = answers[i]
      for (const p of list) {
        const sourceHw = hws?.get(p.topic, p.partition)
        const localHw = this.port.highWatermark(p.topic, p.partition)
        if (sourceHw === undefined || localHw === undefined) {
          out.push(p)
          continue
        }
        const records = Math.max(0, sourceHw - localHw)
        if (records === 0) this.caughtUpAt.set(p.topic, p.partition, now)
        const since = this.caughtUpAt.get(p.topic, p.partition) ?? now
        out.push({ ...p, lag: { records, seconds: records === 0 ? 0 : Math.max(0, now - since) / 1000 } })
      }
    })
    return out
  }

  /** The source high watermarks of `parts`, asked of their source leaders within the scrape's timeout. */
  private async sourceHighWatermarks(mirror: string, parts: ReadonlyArray<Part>): Promise<TopicPartitionMap<number>> {
    const client = this.port.source(mirror)
    const found = new TopicPartitionMap<number>()
    const ask = Effect.gen(function* () {
      const byLeader = yield* Effect.tryPromise(() =>
        client.leadersFor(parts.map((p) => ({ topic: p.topic, partition: p.partition })))
      )
      // One ListOffsets per source leader; a leader that fails or does not answer in time has no samples.
      yield* FanOut.forEachBroker(
        byLeader,
        ([node, tps]) => {
          const byTopic = new Map<string, Array<number>>()
          for (const tp of tps) {
            let ps = byTopic.get(tp.topic)
            if (ps === undefined) byTopic.set(tp.topic, (ps = []))
            ps.push(tp.partition)
          }
          return Effect.tryPromise(() =>
            client.sendToNode(node, ListOffsets.api, {
              replicaId: -1,
              isolationLevel: 0,
              topics: [...byTopic].map(([name, ps]) => ({
                name,
                partitions: ps.map((partitionIndex) => ({
                  partitionIndex,
                  currentLeaderEpoch: -1,
                  timestamp: LATEST_TIMESTAMP
                }))
              })),
              timeoutMs: SOURCE_TIMEOUT_MS
            })
          )
        },
        (outcomes) => {
          for (const { result } of outcomes)
            if (Either.isRight(result))
              for (const t of result.right.topics)
                for (const p of t.partitions)
                  if (p.errorCode === Errors.ErrorCode.NONE) found.set(t.name, p.partitionIndex, Number(p.offset))
        },
        { timeoutMs: SOURCE_TIMEOUT_MS, describe: ([node]) => `source broker ${node}` }
      )
    })
    // The scrape waits at most SOURCE_TIMEOUT_MS in all; what arrived by then counts.
    await Effect.runPromise(ask.pipe(Effect.timeout(Duration.millis(SOURCE_TIMEOUT_MS)), Effect.ignore))
    return found
  }
}

/** States in which a partition has no fetcher for a while, so its lag comes from asking the source. */
const UNFETCHED: ReadonlySet<string> = new Set(["PAUSED", "PAUSING", "FAILED"])

/**
 * A DescribeClusterMirrors answer with the lag of its paused and failed partitions: they have no fetcher to
 * tell it, so the source is asked (within a short timeout) so that a describe shows how far behind they
 * fall; partitions it does not answer for keep -1.
 */
export const withUnfetchedLag = async (
  res: DescribeClusterMirrors.Response,
  lag: MirrorLag,
  highWatermark: (topic: string, partition: number) => number | undefined
): Promise<DescribeClusterMirrors.Response> => {
  const parts: Array<Part> = []
  for (const m of res.mirrors)
    for (const t of m.topics)
      for (const p of t.partitions)
        if (p.lag < 0n && UNFETCHED.has(p.stateValue))
          parts.push({
            mirror: m.mirrorName,
            topic: t.topicName,
            partition: p.partitionIndex,
            state: p.stateValue as MirrorPartitionState.MirrorPartitionState
          })
  if (parts.length === 0) return res
  const found = new TopicPartitionMap<{ readonly records: number; readonly seconds: number }>()
  for (const sample of await lag.unfetched(parts))
    if (sample.lag !== undefined) found.set(sample.topic, sample.partition, sample.lag)
  return {
    ...res,
    mirrors: res.mirrors.map((m) => ({
      ...m,
      topics: m.topics.map((t) => ({
        ...t,
        partitions: t.partitions.map((p) => {
          const l = p.lag < 0n ? found.get(t.topicName, p.partitionIndex) : undefined
          const hw = highWatermark(t.topicName, p.partitionIndex)
          if (l === undefined || hw === undefined) return p
          return {
            ...p,
            sourceOffset: BigInt(hw + l.records),
            destinationOffset: BigInt(hw),
            lag: BigInt(l.records),
            lagTimeMs: BigInt(Math.round(l.seconds * 1000))
          }
        })
      }))
    }))
  }
}
