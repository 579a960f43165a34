/**
 * Event sourcing, end to end: whatever requests a controller served (and whichever appends failed on
 * the way), its state equals a replay of its metadata log from scratch.
 */
import { describe, expect, it } from "@effect/vitest"
import { MetadataLog } from "@clustermirror/metadata-log"
import { Effect } from "effect"
import * as fc from "fast-check"
import { QuorumController } from "../src/QuorumController.js"
import { CLUSTER_ID, heartbeat, registration, uuid } from "./clusterFixtures.js"
import { replayOfLog } from "./logReplay.js"

const TOPICS = ["a", "b", "c.d", "c_d"]
const MIRRORED = ["m1", "m2", "m3"]

type Op =
  | { readonly op: "register"; readonly broker: number; readonly incarnation: number }
  | { readonly op: "heartbeat"; readonly broker: number; readonly wantFence: boolean; readonly wantShutDown: boolean }
  | { readonly op: "createTopic"; readonly topic: number; readonly partitions: number; readonly rf: number }
  | { readonly op: "createPartitions"; readonly topic: number; readonly count: number }
  | { readonly op: "deleteTopic"; readonly topic: number }
  | { readonly op: "alterConfig"; readonly topic: number; readonly value: number }
  | { readonly op: "fence" }
  | { readonly op: "rebalance" }
  | { readonly op: "createMirror" }
  | { readonly op: "startMirror"; readonly topic: number; readonly partitions: number }
  | { readonly op: "stopMirror"; readonly topic: number }
  | { readonly op: "pauseMirror"; readonly topic: number }
  | { readonly op: "resumeMirror"; readonly topic: number }
  | { readonly op: "snapshot" }
  | { readonly op: "failNextAppend" }
  /** The next append is written, then reported failed (an fsync error after the write). */
  | { readonly op: "loseNextAppendAck" }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("register" as const), broker: fc.integer({ min: 1, max: 3 }), incarnation: fc.nat(1) }),
  fc.record({
    op: fc.constant("heartbeat" as const),
    broker: fc.integer({ min: 1, max: 3 }),
    wantFence: fc.boolean(),
    wantShutDown: fc.boolean()
  }),
  fc.record({
    op: fc.constant("createTopic" as const),
    topic: fc.nat(TOPICS.length - 1),
    partitions: fc.integer({ min: 1, max: 3 }),
    rf: fc.integer({ min: 1, max: 3 })
  }),
  fc.record({
    op: fc.constant("createPartitions" as const),
    topic: fc.nat(TOPICS.length - 1),
    count: fc.integer({ min: 1, max: 5 })
  }),
  fc.record({ op: fc.constant("deleteTopic" as const), topic: fc.nat(TOPICS.length - 1) }),
  fc.record({ op: fc.constant("alterConfig" as const), topic: fc.nat(TOPICS.length - 1), value: fc.nat(3) }),
  fc.constant({ op: "fence" as const }),
  fc.constant({ op: "rebalance" as const }),
  fc.constant({ op: "createMirror" as const }),
  fc.record({
    op: fc.constant("startMirror" as const),
    topic: fc.nat(MIRRORED.length - 1),
    partitions: fc.integer({ min: 1, max: 3 })
  }),
  fc.record({ op: fc.constant("stopMirror" as const), topic: fc.nat(MIRRORED.length - 1) }),
  fc.record({ op: fc.constant("pauseMirror" as const), topic: fc.nat(MIRRORED.length - 1) }),
  fc.record({ op: fc.constant("resumeMirror" as const), topic: fc.nat(MIRRORED.length - 1) }),
  fc.constant({ op: "snapshot" as const }),
  fc.constant({ op: "failNextAppend" as const }),
  fc.constant({ op: "loseNextAppendAck" as const })
)

const run = (c: QuorumController, o: Op): Promise<unknown> => {
  switch (o.op) {
    case "register":
      return c.registerBroker(registration(o.broker, { incarnationId: uuid(o.broker + 10 * o.incarnation) }))
    case "heartbeat": {
      const b = c.current.cluster.brokers.get(o.broker)
      return c.brokerHeartbeat(
        heartbeat(o.broker, b?.epoch ?? -1n, {
          currentMetadataOffset: c.committedOffset,
          wantFence: o.wantFence,
          wantShutDown: o.wantShutDown
        })
      )
    }
    case "createTopic":
      return c.createTopics({
        topics: [
          {
            name: TOPICS[o.topic]!,
            numPartitions: o.partitions,
            replicationFactor: o.rf,
            assignments: [],
            configs: [],
            mirrorInfo: null
          }
        ],
        timeoutMs: 1000,
        validateOnly: false
      })
    case "createPartitions":
      return c.createPartitions({
        topics: [{ name: TOPICS[o.topic]!, count: o.count, assignments: null }],
        timeoutMs: 1000,
        validateOnly: false
      })
    case "deleteTopic":
      return c.deleteTopics({ topics: [], topicNames: [TOPICS[o.topic]!], timeoutMs: 1000 })
    case "alterConfig":
      return c.incrementalAlterConfigs({
        resources: [
          {
            resourceType: 2,
            resourceName: TOPICS[o.topic]!,
            configs: [{ name: "retention.ms", configOperation: 0, value: String(1000 * (o.value + 1)) }]
          }
        ],
        validateOnly: false
      })
    case "fence":
      return c.fenceStaleBrokers()
    case "rebalance":
      return c.rebalanceLeaders()
    case "createMirror":
      return c.createClusterMirror({
        mirrorName: "m",
        config: [
          { name: "bootstrap.servers", value: "source:9092" },
          { name: "mirror.source.cluster.id", value: "source-cluster" }
        ]
      })
    case "startMirror":
      return c.startMirrorTopics({
        mirrorName: "m",
        topics: [
          { topicName: MIRRORED[o.topic]!, topicId: uuid(100 + o.topic), numPartitions: o.partitions, configs: [] }
        ],
        includePatterns: [],
        excludePatterns: [],
        stateValidationOffset: -1n,
        defaultReplicationFactor: -1
      })
    case "stopMirror":
      return c.stopMirrorTopics({
        mirrorName: "m",
        topics: [{ topicName: MIRRORED[o.topic]! }],
        patterns: [],
        stateValidationOffset: c.committedOffset
      })
    case "pauseMirror":
      return c.pauseMirrorTopics({
        mirrorName: "m",
        topics: [{ topicName: MIRRORED[o.topic]! }],
        stateValidationOffset: c.committedOffset
      })
    case "resumeMirror":
      return c.resumeMirrorTopics({
        mirrorName: "m",
        topics: [{ topicName: MIRRORED[o.topic]! }],
        stateValidationOffset: c.committedOffset
      })
    case "snapshot":
      return c.snapshot()
    case "failNextAppend":
    case "loseNextAppendAck":
      return Promise.resolve()
  }
}

describe("QuorumController properties", () => {
  it("the state after live writes equals the replay of the metadata log from scratch, appends failing or not", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 30 }),
        fc.integer({ min: 1, max: 4 }),
        async (ops, maxRecordsPerBatch) => {
          const inner = MetadataLog.makeMemory()
          let fail: "no" | "before" | "after" = "no"
          const log: MetadataLog.MetadataLogService = {
            ...inner,
            append: (records, epoch) =>
              Effect.suspend(() => {
                const how = fail
                fail = "no"
                if (how === "no") return inner.append(records, epoch)
                if (how === "after")
                  return Effect.flatMap(inner.append(records, epoch), () => Effect.die(new Error("fsync failed")))
                return Effect.die(new Error("disk full"))
              })
          }
          const c = await QuorumController.open({
            nodeId: 1000,
            clusterId: CLUSTER_ID,
            log,
            maxRecordsPerBatch,
            sessionTimeoutMs: 600_000,
            autoLeaderRebalanceEnable: false
          })
          try {
            for (const o of ops) {
              if (o.op === "failNextAppend") fail = "before"
              if (o.op === "loseNextAppendAck") fail = "after"
              // A request may fail (an append that failed); the state must match the log either way.
              await run(c, o).catch(() => undefined)
              expect(c.current).toEqual(await Effect.runPromise(replayOfLog(inner)))
            }
            expect(c.committedOffset).toBe(BigInt((await Effect.runPromise(inner.logEndOffset)) - 1))
          } finally {
            await c.close()
          }
        }
      ),
      { numRuns: 40 }
    )
  }, 120_000)
})
