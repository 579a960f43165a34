import { Buffer } from "node:buffer"
import { RecordBatch } from "@clustermirror/protocol"
import { type PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { MemoryLeader } from "../src/MemoryLeaderEndpoint.js"
import { ReplicaFetcher } from "../src/ReplicaFetcher.js"
import { batches, runToCompletion, TOPIC, TOPIC_ID } from "./Fixtures.js"

/**
 * A history of one partition on three replicas: every step elects a leader (cleanly or not) at a new epoch,
 * the leader appends batches, and each other replica is either offline (its log stays as it was, possibly
 * divergent) or catches up part of the way, which in Kafka means keeping the prefix it shares with the
 * leader and copying more of the leader's batches.
 */
interface Step {
  readonly leader: number
  readonly epochGap: number
  readonly writes: ReadonlyArray<number>
  readonly sync: ReadonlyArray<number | null>
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  leader: fc.integer({ min: 0, max: 2 }),
  epochGap: fc.integer({ min: 1, max: 3 }),
  writes: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 4 }),
  // Percent of the leader's batches beyond the shared prefix a replica copies; null: offline.
  sync: fc.array(fc.option(fc.integer({ min: 0, max: 100 }), { freq: 2 }), { minLength: 3, maxLength: 3 })
})

const endOf = (log: ReadonlyArray<Buffer>): number =>
  log.length === 0 ? 0 : RecordBatch.lastOffset(log[log.length - 1]!) + 1

const commonPrefix = (a: ReadonlyArray<Buffer>, b: ReadonlyArray<Buffer>): number => {
  let i = 0
  while (i < a.length && i < b.length && a[i]!.equals(b[i]!)) i++
  return i
}

const simulate = (steps: ReadonlyArray<Step>): { logs: Buffer[][]; leader: number; epoch: number } => {
  const logs: Buffer[][] = [[], [], []]
  let epoch = 0
  let leader = 0
  for (const step of steps) {
    epoch += step.epochGap
    leader = step.leader
    const own = logs[leader]!
    step.writes.forEach((count, i) => {
      own.push(
        RecordBatch.build({
          records: Array.from({ length: count }, (_, r) => ({ value: Buffer.from(`e${epoch}-b${leader}-${i}-${r}`) })),
          baseOffset: endOf(own),
          partitionLeaderEpoch: epoch,
          timestamp: epoch
        })
      )
    })
    for (let r = 0; r < 3; r++) {
      const percent = step.sync[r]
      if (r === leader || percent === null || percent === undefined) continue
      const common = commonPrefix(logs[r]!, own)
      logs[r] = own.slice(0, common + Math.floor((percent * (own.length - common)) / 100))
    }
  }
  return { logs, leader, epoch }
}

const open = (batchesOf: ReadonlyArray<Buffer>): PartitionLog.PartitionLog => {
  const log = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
  for (const b of batchesOf) log.appendAsFollower(Buffer.from(b), 0)
  return log
}

describe("ReplicaFetcher properties", () => {
  it("leaves the follower's log equal to the leader's, batch for batch, after any history", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 0, max: 1 }),
        fc.constantFrom(12, 19),
        fc.constantFrom(1, 200, 1 << 20),
        async (steps, pick, fetchVersion, partitionMaxBytes) => {
          const { logs, leader, epoch } = simulate(steps)
          const followerIndex = [0, 1, 2].filter((r) => r !== leader)[pick]!
          const leaderLog = open(logs[leader]!)
          leaderLog.updateHighWatermark(leaderLog.logEndOffset)
          const followerLog = open(logs[followerIndex]!)
          const memory = new MemoryLeader({ leaderId: leader, now: () => 0 })
          memory.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: leaderLog, leaderEpoch: epoch })
          const fetcher = new ReplicaFetcher({
            brokerId: followerIndex,
            brokerEpoch: 1n,
            endpoint: memory.endpoint(fetchVersion),
            config: { replicaFetchWaitMaxMs: 0, replicaFetchMaxBytes: partitionMaxBytes },
            now: () => 0
          })
          fetcher.addPartitions([
            { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: followerLog, currentLeaderEpoch: epoch }
          ])

          await runToCompletion(fetcher, 500)

          expect(batches(followerLog)).toEqual(batches(leaderLog))
          expect(followerLog.logEndOffset).toBe(leaderLog.logEndOffset)
          expect(followerLog.highWatermark).toBe(leaderLog.logEndOffset)
          expect(followerLog.latestEpoch()).toBe(leaderLog.latestEpoch())
          expect(fetcher.isFailed({ topic: TOPIC, partition: 0 })).toBe(false)
        }
      ),
      { numRuns: 300 }
    )
  })
})
