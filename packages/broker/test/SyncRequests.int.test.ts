/**
 * The requests of the mirror sync against a running broker of ours: log bounds and the leader epoch of an
 * offset across two epochs of one log (the epoch bumped through the controller between two produces),
 * and the admin form of the group calls (find, describe, commit, fetch, list).
 */
import { ClusterClient } from "@clustermirror/client"
import {
  BumpLeaderEpochs,
  ConsumerGroupHeartbeat,
  CreateTopics,
  Produce,
  RecordBatch,
  Uuid
} from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import { MirrorSync, SyncRequests } from "@clustermirror/mirror"
import * as Node from "../src/Node.js"

const TOPIC = "epochs"

describe("mirror sync requests", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-sync-requests-"))
  let cluster: Node.Embedded
  let client: ClusterClient.Client

  const produce = async (n: number) => {
    const res = await client.sendToLeader(
      TOPIC,
      0,
      Produce.api,
      () => ({
        acks: -1,
        timeoutMs: 5000,
        topicData: [
          {
            name: TOPIC,
            partitionData: [
              {
                index: 0,
                records: RecordBatch.build({
                  records: Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${i}`) })),
                  timestamp: Date.now()
                })
              }
            ]
          }
        ]
      }),
      (r) => r.responses[0]!.partitionResponses[0]!.errorCode
    )
    expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
  }

  const leaderEpoch = async () => {
    client.invalidate(TOPIC)
    return (await client.leaderFor(TOPIC, 0)).leaderEpoch
  }

  beforeAll(async () => {
    cluster = await Node.embedded(1, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200,
      offsetsTopicReplicationFactor: 1,
      defaultReplicationFactor: 1,
      groupInitialRebalanceDelayMs: 0
    })
    client = new ClusterClient.Client({ bootstrapServers: [cluster.bootstrap], requestTimeoutMs: 10_000 })
    const created = await client.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics[0]!.errorCode).toBe(0)
  })

  afterAll(async () => {
    await client.close()
    await cluster.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("finds the log bounds and the leader epoch of each offset across two epochs", async () => {
    await produce(10)
    const first = await leaderEpoch()
    const topicId = (await client.metadata([TOPIC])).topics.get(TOPIC)!.topicId
    const bumped = await client.sendToAddress(
      { host: "127.0.0.1", port: cluster.controllerPort },
      BumpLeaderEpochs.api,
      {
        topics: [{ topicId, partitions: [{ partitionIndex: 0, minLeaderEpoch: first }] }]
      }
    )
    expect(bumped.errorCode).toBe(0)
    let second = first
    for (let i = 0; i < 200 && second <= first; i++) {
      await new Promise((r) => setTimeout(r, 50))
      second = await leaderEpoch()
    }
    expect(second).toBeGreaterThan(first)
    await produce(5)

    const bounds = await SyncRequests.logBounds(client, [{ topic: TOPIC, partition: 0 }])
    expect(SyncRequests.boundsOf(bounds, TOPIC, 0)).toEqual({
      logStartOffset: 0n,
      logEndOffset: 15n,
      latestEpoch: second
    })
    const epochAt = (offset: bigint) => SyncRequests.epochForOffset(client, TOPIC, 0, offset, second)
    expect(await epochAt(0n)).toBe(first)
    expect(await epochAt(9n)).toBe(first)
    expect(await epochAt(10n)).toBe(second)
    expect(await epochAt(14n)).toBe(second)
    expect(await epochAt(15n)).toBe(-1)
  })

  it("commits, fetches, describes and lists a group in the admin form", async () => {
    const node = await SyncRequests.findGroupCoordinator(client, "g")
    expect(await SyncRequests.describeGroupStates(client, node, ["g"])).toEqual(new Map([["g", "Dead"]]))
    const failed = await SyncRequests.commitOffsets(client, node, "g", [
      { topic: TOPIC, partition: 0, offset: 7n, leaderEpoch: 3, metadata: "m" }
    ])
    expect(failed).toEqual([])
    expect(await SyncRequests.fetchCommittedOffsets(client, node, "g")).toEqual([
      { topic: TOPIC, partition: 0, offset: 7n, leaderEpoch: 3, metadata: "m" }
    ])
    expect((await SyncRequests.describeGroupStates(client, node, ["g"])).get("g")).toBe("Empty")
    expect(await SyncRequests.listGroups(client)).toEqual([{ groupId: "g", protocolType: "" }])
  })

  it("describes a consumer group of the KIP-848 protocol with a member as active, so the offset sync skips it", async () => {
    const node = await SyncRequests.findGroupCoordinator(client, "cg")
    const joined = await client.sendToNode(node, ConsumerGroupHeartbeat.api, {
      groupId: "cg",
      memberId: Uuid.random(),
      memberEpoch: 0,
      instanceId: null,
      rackId: null,
      rebalanceTimeoutMs: 30_000,
      subscribedTopicNames: [TOPIC],
      subscribedTopicRegex: null,
      serverAssignor: null,
      topicPartitions: []
    })
    expect(joined.errorCode).toBe(0)
    // Classic DescribeGroups does not know it; the sync must still see it as a group with members.
    const states = await SyncRequests.describeGroupStates(client, node, ["cg", "unknown"])
    expect(states.get("unknown")).toBe("Dead")
    expect(states.get("cg")).not.toBe("Dead")
    expect(MirrorSync.isActiveGroupState(states.get("cg")!)).toBe(true)
  })
})
