/**
 * The campaign's producer: a steady, modest load of records with unique values, acks=all, one request
 * in flight per partition (one record per batch, uncompressed), over our own client, which follows
 * leader changes and retries. Every acknowledged record (topic, partition, offset, value) is kept in
 * memory and appended to a file; a refused or timed-out send is counted and not kept (a retried send
 * may leave a duplicate at another offset: only the acknowledged offset counts).
 *
 * It owns its client and timers; `stop()` ends the load and waits for the requests in flight.
 */
import { appendFileSync, writeFileSync } from "node:fs"
import { ClientError, ClusterClient } from "@clustermirror/client"
import { Errors, Produce, RecordBatch } from "@clustermirror/protocol"
import type { Acked } from "./LossCheck.js"

export interface Options {
  readonly bootstrap: string
  readonly topics: ReadonlyArray<string>
  readonly partitions: number
  /** Records per second over all partitions. */
  readonly rate: number
  /** Prefix of every value (e.g. the seed), so values are unique across campaigns. */
  readonly valuePrefix: string
  /** File the acknowledged records are appended to, one `topic partition offset value` line each. */
  readonly ackFile: string
  readonly requestTimeoutMs?: number
}

export interface Stats {
  readonly sent: number
  readonly acked: number
  readonly failed: number
  /** Failures by reason (error name or client error tag). */
  readonly failures: ReadonlyMap<string, number>
}

export interface Producer {
  readonly acked: () => ReadonlyArray<Acked>
  readonly stats: () => Stats
  stop(): Promise<void>
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** A failure in words for a report: the Kafka error's name and the broker's message, or the error's message. */
export const explain = (e: unknown): string => {
  if (ClientError.isClientError(e) && e._tag === "KafkaError")
    return `${reasonOf(e)}${e.errorMessage ? ` (${e.errorMessage})` : ""}`
  return e instanceof Error ? e.message.split("\n")[0]! : String(e)
}

/** A failure's reason for the counts: the Kafka error's name, or the client error's tag. */
export const reasonOf = (e: unknown): string => {
  if (!ClientError.isClientError(e)) return e instanceof Error ? e.message.slice(0, 60) : String(e)
  if (e._tag === "KafkaError") return Errors.byCode.get(e.errorCode)?.name ?? `error ${e.errorCode}`
  return e._tag
}

export const start = (o: Options): Producer => {
  const timeoutMs = o.requestTimeoutMs ?? 15_000
  const client = new ClusterClient.Client({
    bootstrapServers: o.bootstrap.split(","),
    clientId: "clustermirror-chaos-producer",
    requestTimeoutMs: timeoutMs,
    connectTimeoutMs: 5_000,
    retry: { attempts: 4, baseMs: 200, maxMs: 2_000, jitter: 0.2 },
    metadataMaxAgeMs: 10_000
  })
  writeFileSync(o.ackFile, "")
  const acked: Acked[] = []
  const failures = new Map<string, number>()
  let sent = 0
  let failed = 0
  let stopping = false
  const partitionCount = o.topics.length * o.partitions
  const intervalMs = Math.max(1, Math.round((1000 * partitionCount) / o.rate))

  const sendOne = async (topic: string, partition: number, value: string): Promise<void> => {
    const records = RecordBatch.build({ records: [{ key: null, value: Buffer.from(value) }], timestamp: Date.now() })
    sent++
    try {
      const res = await client.sendToLeader(
        topic,
        partition,
        Produce.api,
        () => ({
          transactionalId: null,
          acks: -1,
          timeoutMs,
          topicData: [{ name: topic, partitionData: [{ index: partition, records }] }]
        }),
        (r) => r.responses[0]?.partitionResponses[0]?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR
      )
      const offset = Number(res.responses[0]!.partitionResponses[0]!.baseOffset)
      const a = { topic, partition, offset, value }
      acked.push(a)
      appendFileSync(o.ackFile, `${topic} ${partition} ${offset} ${value}\n`)
    } catch (e) {
      failed++
      const reason = reasonOf(e)
      failures.set(reason, (failures.get(reason) ?? 0) + 1)
    }
  }

  const loop = async (topic: string, partition: number, phase: number): Promise<void> => {
    await sleep(phase)
    for (let n = 0; !stopping; n++) {
      const began = Date.now()
      await sendOne(topic, partition, `${o.valuePrefix}-${topic}-${partition}-${n}`)
      const wait = intervalMs - (Date.now() - began)
      if (wait > 0 && !stopping) await sleep(wait)
    }
  }

  const loops = o.topics.flatMap((topic, t) =>
    Array.from({ length: o.partitions }, (_, p) =>
      loop(topic, p, Math.floor(((t * o.partitions + p) * intervalMs) / partitionCount))
    )
  )

  return {
    acked: () => acked,
    stats: () => ({ sent, acked: acked.length, failed, failures }),
    stop: async () => {
      stopping = true
      await Promise.all(loops)
      await client.close()
    }
  }
}
