/**
 * The demo's producers, built on our own client: an idempotent producer (one InitProducerId, then
 * producer id, epoch and a per-partition base sequence on every batch, the sequence advancing by the
 * record count) that sends lz4 record batches with `RecordBatch.build` to partition leaders, and a
 * steady background load at a fixed rate over many partitions on top of it.
 *
 * One request in flight per partition keeps the sequences in order; a retried batch the broker already
 * has is answered as a duplicate, never written twice. It owns its timers and no connections (the
 * client is the caller's). It must not retry a batch under a new sequence: a failure stops the load and
 * is reported.
 */
import { Buffer } from "node:buffer"
import { randomBytes } from "node:crypto"
import type { ClusterClient } from "@clustermirror/client"
import { Errors, InitProducerId, Produce, RecordBatch } from "@clustermirror/protocol"

export interface TopicPartition {
  readonly topic: string
  readonly partition: number
}

const E = Errors.ErrorCode
const TEXT = Buffer.from("clustermirror demo record, mirrored byte for byte to the destination cluster. ")

/** A record value: half random (what lz4 cannot shrink), half a repeated sentence (what it can). */
export const recordValue = (size: number): Buffer => {
  const half = Math.floor(size / 2)
  const text = Buffer.alloc(size - half)
  for (let i = 0; i < text.length; i += TEXT.length) TEXT.copy(text, i, 0, Math.min(TEXT.length, text.length - i))
  return Buffer.concat([randomBytes(half), text])
}

const partitionErrorCode = (res: Produce.Response): number =>
  res.responses[0]?.partitionResponses[0]?.errorCode ?? E.UNKNOWN_SERVER_ERROR

/** The Produce body for one batch to one partition, acks=all. */
const produceBody = (tp: TopicPartition, records: Buffer) => ({
  transactionalId: null,
  acks: -1,
  timeoutMs: 30_000,
  topicData: [{ name: tp.topic, partitionData: [{ index: tp.partition, records }] }]
})

/**
 * Sends one plain (not idempotent) batch of `values` to a partition's leader and returns the error
 * code it was answered with: 0 when written, a Kafka code when refused. Failures that are not Kafka
 * error codes (no connection) reject.
 */
export const produceOnce = async (
  client: ClusterClient.Client,
  tp: TopicPartition,
  values: ReadonlyArray<Buffer>
): Promise<number> => {
  const records = RecordBatch.build({
    records: values.map((value) => ({ value })),
    timestamp: Date.now(),
    compression: RecordBatch.Compression.lz4
  })
  let code: number = E.NONE
  await client.sendToLeader(
    tp.topic,
    tp.partition,
    Produce.api,
    () => produceBody(tp, records),
    (res) => {
      code = partitionErrorCode(res)
      // The refusal is the answer wanted here; only retriable codes go back to the client's retries.
      return Errors.isRetriable(code) ? code : E.NONE
    }
  )
  return code
}

/** An idempotent producer: one producer id and epoch, a sequence per partition. */
export class IdempotentProducer {
  private readonly sequences = new Map<string, number>()
  private readonly acked = new Map<string, number>()
  private ackedRecords = 0
  private ackedBytes = 0

  private constructor(
    private readonly client: ClusterClient.Client,
    readonly producerId: bigint,
    readonly producerEpoch: number,
    private readonly valueBytes: number
  ) {}

  /** Asks the cluster for a producer id (InitProducerId without a transactional id). */
  static async init(client: ClusterClient.Client, valueBytes: number): Promise<IdempotentProducer> {
    const res = await client.sendToAnyBroker(InitProducerId.api, {
      transactionalId: null,
      transactionTimeoutMs: 60_000
    })
    if (res.errorCode !== E.NONE)
      throw new Error(`InitProducerId failed: ${Errors.byCode.get(res.errorCode)?.name ?? res.errorCode}`)
    return new IdempotentProducer(client, res.producerId, res.producerEpoch, valueBytes)
  }

  /** Records acknowledged so far, in all partitions. */
  get records(): number {
    return this.ackedRecords
  }

  /** Batch bytes acknowledged so far. */
  get bytes(): number {
    return this.ackedBytes
  }

  /** Records acknowledged in one partition: its log end, when this producer is its only writer. */
  recordsOf(tp: TopicPartition): number {
    return this.acked.get(`${tp.topic}-${tp.partition}`) ?? 0
  }

  /**
   * Sends `n` new records to a partition as one batch and resolves once all replicas have it. Calls for
   * the same partition must not overlap (the sequence is taken when the batch is built).
   */
  async send(tp: TopicPartition, n: number): Promise<void> {
    const key = `${tp.topic}-${tp.partition}`
    const baseSequence = this.sequences.get(key) ?? 0
    const now = Date.now()
    const records = RecordBatch.build({
      records: Array.from({ length: n }, (_, i) => ({
        key: Buffer.from(`${key}-${baseSequence + i}`),
        value: recordValue(this.valueBytes)
      })),
      timestamp: now,
      compression: RecordBatch.Compression.lz4,
      producerId: this.producerId,
      producerEpoch: this.producerEpoch,
      baseSequence
    })
    await this.client.sendToLeader(
      tp.topic,
      tp.partition,
      Produce.api,
      () => produceBody(tp, records),
      partitionErrorCode
    )
    this.sequences.set(key, (baseSequence + n) % 2 ** 31)
    this.acked.set(key, (this.acked.get(key) ?? 0) + n)
    this.ackedRecords += n
    this.ackedBytes += records.length
  }
}

export interface SteadyOptions {
  readonly partitions: ReadonlyArray<TopicPartition>
  /** Records per second over all partitions. */
  readonly recordsPerSecond: number
  /** How often each partition sends what has come due. */
  readonly tickMs?: number
  /** The largest batch, when a partition fell behind. */
  readonly maxBatchRecords?: number
}

/** A producer writing at a steady rate to every partition until stopped; the first failure ends it. */
export class SteadyProducer {
  private stopping = false
  private failure: Error | undefined
  private readonly workers: ReadonlyArray<Promise<void>>

  constructor(
    readonly producer: IdempotentProducer,
    options: SteadyOptions
  ) {
    const started = Date.now()
    const perPartition = options.recordsPerSecond / Math.max(1, options.partitions.length)
    const tickMs = options.tickMs ?? 100
    const maxBatch = options.maxBatchRecords ?? 2_000
    const worker = async (tp: TopicPartition, index: number): Promise<void> => {
      let sent = 0
      // Partitions start a little apart, so their requests spread over the tick.
      await sleep((tickMs * index) / options.partitions.length)
      while (!this.stopping && this.failure === undefined) {
        const due = Math.floor(((Date.now() - started) / 1000) * perPartition) - sent
        const n = Math.min(due, maxBatch)
        if (n > 0) {
          try {
            await producer.send(tp, n)
            sent += n
          } catch (e) {
            this.failure ??= new Error(
              `producing to ${tp.topic}-${tp.partition} failed: ${e instanceof Error ? e.message : String(e)}`
            )
            return
          }
        }
        if (n < maxBatch) await sleep(tickMs)
      }
    }
    this.workers = options.partitions.map(worker)
  }

  /** Why the load stopped on its own, if it did. */
  get error(): Error | undefined {
    return this.failure
  }

  /** Stops sending and waits for the requests in flight; rejects with the load's failure, if any. */
  async stop(): Promise<void> {
    this.stopping = true
    await Promise.all(this.workers)
    if (this.failure !== undefined) throw this.failure
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
