/**
 * Scenario: a classic group keeps its members when `__consumer_offsets` leadership moves.
 *
 * Three brokers replicate the one `__consumer_offsets` partition. A member joins and syncs (Stable,
 * generation 1), then the broker leading the partition stops. The new leader loads the group from the
 * log with its member, generation and assignment: the member's heartbeat with its old generation
 * succeeds there and the group is Stable, with no rebalance.
 */
import { ClusterClient } from "@clustermirror/client"
import { DescribeGroups, FindCoordinator, Heartbeat, JoinGroup, SyncGroup } from "@clustermirror/protocol"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as ClusterBroker from "../src/ClusterBroker.js"
import { ControllerServer } from "@clustermirror/controller-server"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const until = async <A>(
  what: string,
  f: () => A | undefined | Promise<A | undefined>,
  timeoutMs = 30_000
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const a = await Promise.resolve()
      .then(f)
      .catch(() => undefined)
    if (a !== undefined) return a
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

describe("group coordinator leadership move", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "cm-group-move-"))
  const running = new Set<{ close: () => Promise<void> }>()
  afterAll(async () => {
    for (const r of running) await r.close()
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("after the coordinator's broker stops, the new coordinator keeps the Stable group and its member's generation", async () => {
    const clusterId = "AAAAAAAAAAAAAAAAAAAAAG"
    const controller = await ControllerServer.start({
      nodeId: 1000,
      clusterId,
      host: "127.0.0.1",
      port: 0,
      dataDir: path.join(root, "controller"),
      maxFrameBytes: 1 << 26,
      defaultPartitions: 1,
      defaultReplicationFactor: 3,
      sessionTimeoutMs: 1500
    })
    running.add(controller)
    const brokers = new Map<number, ClusterBroker.ClusterBroker>()
    for (const id of [1, 2, 3]) {
      const b = await ClusterBroker.start({
        ...BrokerConfig.defaults,
        nodeId: id,
        port: 0,
        dataDir: path.join(root, `broker-${id}`),
        processRoles: ["broker"],
        clusterId,
        controllerBootstrap: { host: "127.0.0.1", port: controller.port },
        brokerHeartbeatIntervalMs: 100,
        offsetsTopicNumPartitions: 1,
        offsetsTopicReplicationFactor: 3,
        groupInitialRebalanceDelayMs: 0
      })
      brokers.set(id, b)
      running.add(b)
    }
    const live = () => [...controller.controller.current.cluster.brokers.values()].filter((b) => !b.fenced).length
    await until("3 live brokers", () => (live() === 3 ? true : undefined))
    const client = new ClusterClient.Client({
      bootstrapServers: [...brokers.values()].map((b) => `127.0.0.1:${b.port}`),
      requestTimeoutMs: 10_000
    })
    running.add(client)

    const coordinator = (exclude?: number) =>
      until("a group coordinator", async () => {
        const r = await client.sendToAnyBroker(FindCoordinator.api, {
          key: "g",
          keyType: 0,
          coordinatorKeys: ["g"]
        })
        const c = r.coordinators[0]
        return c !== undefined && c.errorCode === 0 && c.nodeId !== exclude ? c.nodeId : undefined
      })
    const offsetsIsr = () =>
      [...controller.controller.current.replication.topicsById.values()]
        .find((t) => t.name === "__consumer_offsets")
        ?.partitions.get(0)?.isr.length

    const first = await coordinator()
    await until("a full ISR of __consumer_offsets", () => (offsetsIsr() === 3 ? true : undefined))
    const joinRequest = (memberId: string) => ({
      groupId: "g",
      sessionTimeoutMs: 30_000,
      rebalanceTimeoutMs: 30_000,
      memberId,
      groupInstanceId: null,
      protocolType: "consumer",
      protocols: [{ name: "range", metadata: Buffer.from("sub") }],
      reason: null
    })
    let joined = await client.sendToNode(first, JoinGroup.api, joinRequest(""))
    if (joined.errorCode === 79) joined = await client.sendToNode(first, JoinGroup.api, joinRequest(joined.memberId))
    expect(joined).toMatchObject({ errorCode: 0, generationId: 1, leader: joined.memberId })
    const synced = await client.sendToNode(first, SyncGroup.api, {
      groupId: "g",
      generationId: 1,
      memberId: joined.memberId,
      groupInstanceId: null,
      protocolType: "consumer",
      protocolName: "range",
      assignments: [{ memberId: joined.memberId, assignment: Buffer.from("all") }]
    })
    expect(synced.errorCode).toBe(0)
    const heartbeat = (node: number) =>
      client.sendToNode(node, Heartbeat.api, {
        groupId: "g",
        generationId: 1,
        memberId: joined.memberId,
        groupInstanceId: null
      })
    expect((await heartbeat(first)).errorCode).toBe(0)

    running.delete(brokers.get(first)!)
    await brokers.get(first)!.close()
    const second = await coordinator(first)
    expect(second).not.toBe(first)
    // the new coordinator may still be loading: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS are retried
    const code = await until("a heartbeat answered by the new coordinator", async () => {
      const c = (await heartbeat(second)).errorCode
      return c === 16 || c === 14 || c === 15 ? undefined : c
    })
    expect(code).toBe(0)
    const described = await client.sendToNode(second, DescribeGroups.api, {
      groups: ["g"],
      includeAuthorizedOperations: false
    })
    expect(described.groups[0]).toMatchObject({ groupState: "Stable", protocolData: "range" })
    expect(described.groups[0]!.members.map((m) => m.memberId)).toEqual([joined.memberId])
    expect(Buffer.from(described.groups[0]!.members[0]!.memberAssignment).toString()).toBe("all")
  })
})
