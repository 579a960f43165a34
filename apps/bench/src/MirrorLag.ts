/**
 * End-to-end lag of a copy under steady load, for the `mirror` suite: a consumer on the destination
 * reads every partition of a topic from given offsets with Fetch (v12) and, for every record, takes the
 * time it arrived minus the record's timestamp (the producer's send time, kept by every setup the suite
 * compares), then the percentiles of those lags.
 *
 * Record timestamps are read from the batch header, not from the records: a record's timestamp is
 * taken as the batch's BaseTimestamp plus its offset's share of the span to MaxTimestamp. A producer
 * batch spans a few milliseconds (`linger.ms`), so the error is that small, and the consumer needs no
 * decompression: on a 2-core machine it must not be what makes the lag.
 *
 * It reads only; it never produces or commits offsets. It is a measuring client: one Fetch loop per
 * partition on the given cluster client.
 */
import type { ClusterClient } from "@clustermirror/client"
import { Fetch, RecordBatch } from "@clustermirror/protocol"

const FETCH_VERSION = 12
const MAX_WAIT_MS = 100
const PARTITION_MAX_BYTES = 8 * 1024 * 1024

/** Lags (ms) of the records read so far, and how many arrived. */
export interface LagSample {
  readonly records: number
  /** Lag of every record in arrival order (ms). */
  readonly lagsMs: Float64Array
}

export interface LagConsumer {
  /** Records read so far. */
  readonly records: () => number
  /** Ends the fetch loops (after their current request) and returns every lag seen. */
  readonly stop: () => Promise<LagSample>
}

/**
 * Starts reading `topic` on the leaders of `client`, partition `i` from `startOffsets[i]`. A fetch error
 * ends the consumer: `stop()` then rejects with it.
 */
export const start = (
  client: ClusterClient.Client,
  topic: string,
  startOffsets: ReadonlyArray<bigint>
): LagConsumer => {
  let lags = new Float64Array(1 << 16)
  let count = 0
  let stopped = false
  const push = (lag: number): void => {
    if (count === lags.length) {
      const bigger = new Float64Array(lags.length * 2)
      bigger.set(lags)
      lags = bigger
    }
    lags[count++] = lag
  }
  const loop = async (partition: number, from: bigint): Promise<void> => {
    let offset = from
    while (!stopped) {
      const res = await client.sendToLeader(
        topic,
        partition,
        Fetch.api,
        () => ({
          replicaId: -1,
          maxWaitMs: MAX_WAIT_MS,
          minBytes: 1,
          maxBytes: PARTITION_MAX_BYTES,
          isolationLevel: 0,
          sessionId: 0,
          sessionEpoch: -1,
          topics: [{ topic, partitions: [{ partition, fetchOffset: offset, partitionMaxBytes: PARTITION_MAX_BYTES }] }],
          forgottenTopicsData: [],
          rackId: ""
        }),
        (r) => (r.errorCode !== 0 ? r.errorCode : (r.responses[0]?.partitions[0]?.errorCode ?? -1)),
        { version: FETCH_VERSION }
      )
      const now = Date.now()
      const data = res.responses[0]?.partitions[0]?.records
      if (data === null || data === undefined || data.length === 0) continue
      const buf = Buffer.from(data.buffer, data.byteOffset, data.length)
      for (const b of RecordBatch.split(buf).batches) {
        const first = RecordBatch.baseOffset(buf, b.position)
        const last = RecordBatch.lastOffset(buf, b.position)
        if (!RecordBatch.isControl(buf, b.position)) {
          const span = RecordBatch.lastOffsetDelta(buf, b.position)
          const base = RecordBatch.baseTimestamp(buf, b.position)
          const spread = RecordBatch.maxTimestamp(buf, b.position) - base
          for (let o = Math.max(first, Number(offset)); o <= last; o++)
            push(now - (span === 0 ? base + spread : base + (spread * (o - first)) / span))
        }
        offset = BigInt(last + 1)
      }
    }
  }
  const loops = startOffsets.map((o, p) => loop(p, o))
  // A failing loop stops the others; its error is reported by `stop()`.
  const all = Promise.all(loops).catch((e: unknown) => {
    stopped = true
    throw e
  })
  all.catch(() => undefined)
  return {
    records: () => count,
    stop: async () => {
      stopped = true
      await all
      return { records: count, lagsMs: lags.slice(0, count) }
    }
  }
}

/** The `q`-quantile (0..1) of `values` by the nearest-rank method; NaN when empty. */
export const quantile = (values: Float64Array, q: number): number => {
  if (values.length === 0) return Number.NaN
  const sorted = Float64Array.from(values).sort()
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)))
  return sorted[rank - 1]!
}
