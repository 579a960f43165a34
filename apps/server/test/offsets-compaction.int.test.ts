/**
 * `__consumer_offsets` is a compacted topic, and the cleaner keeps it small: a standalone committer commits
 * the offsets of 4 partitions thousands of times (every commit a record per partition, each replacing the
 * last one of its key), with `offsets.topic.segment.bytes` small enough that the log rolls many segments.
 * The cleaner leaves about one record per key in the cleaned segments, and after a restart the group
 * coordinator, replaying the compacted log (offset gaps included), answers the latest offsets.
 */
import { ClusterClient } from "@clustermirror/client"
import { OffsetCommit } from "@clustermirror/protocol"
import { Wait } from "@clustermirror/testkit"
import type { Admin } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ServerHandle, startServer } from "./harness.js"

const TOPIC = "committed-often"
const GROUP = "committer"
const PARTITIONS = 4
const COMMITS = 2_500

/** `offset` of every record in partition 0 of `__consumer_offsets` (the only one here). */
const offsetsTopicOffsets = async (server: ServerHandle): Promise<ReadonlyArray<number>> => {
  const r = await server.kcat([
    "-C",
    "-t",
    "__consumer_offsets",
    "-p",
    "0",
    "-e",
    "-q",
    "-o",
    "beginning",
    "-f",
    "%o\\n"
  ])
  return r.stdout
    .split("\n")
    .filter((l) => l !== "")
    .map(Number)
}

describe("__consumer_offsets under a committing consumer", () => {
  let server: ServerHandle
  let admin: Admin

  beforeAll(async () => {
    server = await startServer({
      config: {
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.segment.bytes": 16_384,
        "log.cleaner.backoff.ms": 200,
        "group.initial.rebalance.delay.ms": 0
      }
    })
    admin = server.kafka().admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] })
  })

  afterAll(async () => {
    await admin?.disconnect()
    await server?.stop()
  })

  it("stays compacted to about a record per key, and the latest offsets survive a restart", async () => {
    // A standalone committer (generation -1, no member id, as Kafka's tools and assign()-consumers
    // commit): one OffsetCommit per round, every partition's offset moved on.
    const client = new ClusterClient.Client({ bootstrapServers: [server.bootstrap], requestTimeoutMs: 30_000 })
    try {
      const [broker] = await client.brokers()
      const commit = async (i: number): Promise<ReadonlyArray<number>> => {
        const res = await client.sendToNode(
          broker!.nodeId,
          OffsetCommit.api,
          {
            groupId: GROUP,
            generationIdOrMemberEpoch: -1,
            memberId: "",
            topics: [
              {
                name: TOPIC,
                partitions: Array.from({ length: PARTITIONS }, (_, p) => ({
                  partitionIndex: p,
                  committedOffset: BigInt(i * 10 + p),
                  committedMetadata: null
                }))
              }
            ]
          },
          { version: 8 }
        )
        return res.topics.flatMap((t) => t.partitions.map((p) => p.errorCode)).filter((e) => e !== 0)
      }
      // The first lookup of the group's coordinator creates __consumer_offsets; commits work once it leads.
      await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] }).catch(() => undefined)
      await Wait.eventually("the group coordinator is ready", async () =>
        (await commit(0)).length === 0 ? true : undefined
      )
      for (let i = 1; i <= COMMITS; i++) expect(await commit(i)).toEqual([])
    } finally {
      await client.close()
    }

    const written = COMMITS * PARTITIONS
    // The cleaner runs in the background: wait until it has cleaned the rolled segments.
    const remaining = await Wait.eventually(
      "the cleaner compacted __consumer_offsets",
      async () => {
        const offsets = await offsetsTopicOffsets(server)
        return offsets.length > 0 && offsets.length < written / 10 ? offsets : undefined
      },
      120_000
    )
    console.log(`__consumer_offsets: ${written} offset records written, ${remaining.length} left after cleaning`)
    // Offsets are kept as written (gaps where records were removed), strictly increasing.
    for (let i = 1; i < remaining.length; i++) expect(remaining[i]!).toBeGreaterThan(remaining[i - 1]!)
    expect(remaining[remaining.length - 1]!).toBeGreaterThanOrEqual(written - 1)

    const latest = async () => {
      const [t] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
      return (t?.partitions ?? []).map((p) => [p.partition, p.offset] as const).sort((a, b) => a[0] - b[0])
    }
    const expected = Array.from({ length: PARTITIONS }, (_, p) => [p, String(COMMITS * 10 + p)] as const)
    expect(await latest()).toEqual(expected)

    await admin.disconnect()
    await server.restart()
    admin = server.kafka().admin()
    await admin.connect()
    // The coordinator loads the group from the compacted log: the same latest offsets.
    expect(
      await Wait.eventually(
        "the group's offsets after the restart",
        async () => {
          const l = await latest().catch(() => undefined)
          return l !== undefined && l.length === PARTITIONS ? l : undefined
        },
        60_000
      )
    ).toEqual(expected)
    // And nothing was compacted away that a replay needs: the log after the restart is the cleaned log.
    const afterRestart = await offsetsTopicOffsets(server)
    expect(afterRestart.length).toBeLessThan(written / 10)
  })
})
