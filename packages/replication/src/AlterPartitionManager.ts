/**
 * ISR changes of the partitions this broker leads, sent to the controller in batches (Kafka's
 * AlterPartitionManager): changes proposed while a request is in flight wait and leave together in the next
 * AlterPartition, one request at a time. After a broker restart thousands of partitions expand their ISR at
 * once; one request (and one controller write) for all of them keeps the controller free for heartbeats.
 * Owns no ISR state: each caller gets the controller's answer for its partition.
 */
import { type AlterPartition, Errors } from "@clustermirror/protocol"
import type { IsrChannel, Registration } from "./ReplicaManager.js"

type Proposal = Parameters<IsrChannel["alterPartition"]>[0]
type Answer = Awaited<ReturnType<IsrChannel["alterPartition"]>>

interface Pending {
  readonly p: Proposal
  readonly newIsr: ReadonlyArray<number>
  readonly resolve: (a: Answer) => void
  readonly reject: (e: unknown) => void
}

export interface AlterPartitionManagerOptions {
  readonly brokerId: number
  readonly brokerEpoch: () => bigint
  /** Sends one AlterPartition to the controller. */
  readonly send: (request: AlterPartition.Request) => Promise<AlterPartition.Response>
}

/** An `IsrChannel` that batches: at most one AlterPartition in flight, carrying every change queued. */
export const make = (options: AlterPartitionManagerOptions): IsrChannel => {
  let queued: Pending[] = []
  let inFlight = false

  const flush = async (): Promise<void> => {
    if (inFlight || queued.length === 0) return
    inFlight = true
    const batch = queued
    queued = []
    try {
      const topics = new Map<string, { topicId: string; topicName: string; partitions: Array<Pending> }>()
      for (const item of batch) {
        let t = topics.get(item.p.topicId)
        if (t === undefined) {
          t = { topicId: item.p.topicId, topicName: item.p.topic, partitions: [] }
          topics.set(item.p.topicId, t)
        }
        t.partitions.push(item)
      }
      let res: AlterPartition.Response
      try {
        res = await options.send({
          brokerId: options.brokerId,
          brokerEpoch: options.brokerEpoch(),
          topics: [...topics.values()].map((t) => ({
            topicId: t.topicId,
            topicName: t.topicName,
            partitions: t.partitions.map(({ p, newIsr }) => ({
              partitionIndex: p.partition,
              leaderEpoch: p.leaderEpoch,
              newIsr,
              newIsrWithEpochs: newIsr.map((id) => ({ brokerId: id, brokerEpoch: -1n })),
              leaderRecoveryState: 0,
              partitionEpoch: p.partitionEpoch
            }))
          }))
        })
      } catch (e) {
        for (const item of batch) item.reject(e)
        return
      }
      const results = new Map<string, AlterPartitionResult>()
      for (const t of res.topics)
        for (const r of t.partitions) {
          results.set(`${t.topicId}:${r.partitionIndex}`, r)
          if (t.topicName !== "") results.set(`${t.topicName}:${r.partitionIndex}`, r)
        }
      for (const item of batch) {
        const { p } = item
        item.resolve(
          answerFor(
            res.errorCode,
            results.get(`${p.topicId}:${p.partition}`) ?? results.get(`${p.topic}:${p.partition}`)
          )
        )
      }
    } finally {
      inFlight = false
      if (queued.length > 0) void flush()
    }
  }

  return {
    alterPartition: (p, newIsr) =>
      new Promise<Answer>((resolve, reject) => {
        queued.push({ p, newIsr, resolve, reject })
        // Changes proposed in the same turn of the event loop go in one request.
        setImmediate(() => void flush())
      })
  }
}

type AlterPartitionResult = AlterPartition.Response["topics"][number]["partitions"][number]

const answerFor = (errorCode: number, r: AlterPartitionResult | undefined): Answer => {
  if (errorCode !== 0) return { errorCode, registration: null }
  if (r === undefined || r.errorCode !== 0)
    return { errorCode: r?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR, registration: null }
  const registration: Registration = {
    replicas: [],
    isr: r.isr,
    leader: r.leaderId,
    leaderEpoch: r.leaderEpoch,
    partitionEpoch: r.partitionEpoch
  }
  return { errorCode: 0, registration }
}
