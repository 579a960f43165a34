/**
 * The periodic mirror refresh (KIP-1279 §5.9) between clusters of ours running in this process over
 * real TCP and real files: a one-broker source, a three-broker destination (controller + brokers, so one
 * broker can die), and a third one-broker cluster with another cluster id. The mirror refreshes every
 * 500 ms. Topics created on the source after the mirror are discovered with their topic id and
 * partition count, added partitions follow, excluded topics are never created and an exclude added
 * later stops a mirrored topic; a deleted or recreated source topic and a source replaced by another
 * cluster fail the partitions (not retryable) where DescribeClusterMirrors, the sync-error hook and the
 * logs show it; the mirror-level work runs on one broker and moves when that broker dies.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BrokerConfig } from "@clustermirror/broker-config"
import { ClusterBroker, Node } from "@clustermirror/broker"
import type { MirrorRefresh } from "@clustermirror/mirror"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  Hashing,
  IncrementalAlterConfigs,
  Uuid
} from "@clustermirror/protocol"
import { Ports, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const MIRROR = "refresh"
const STATE_PARTITIONS = 6
const CLUSTER_MIRROR = 64
const APPEND = 2

describe("the periodic mirror refresh", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-refresh-"))
  const base: BrokerConfig.BrokerConfig = {
    ...BrokerConfig.defaults,
    host: "127.0.0.1",
    advertisedHost: "127.0.0.1",
    port: 0,
    brokerHeartbeatIntervalMs: 200,
    brokerSessionTimeoutMs: 2000,
    numPartitions: 1,
    defaultReplicationFactor: 1,
    offsetsTopicReplicationFactor: 1
  }
  let source: Node.Embedded
  let other: Node.Embedded
  let controller: Node.Node
  const brokers = new Map<number, ClusterBroker.ClusterBroker>()
  /** Runs of the mirror-level work, per broker. */
  const coordinatorRuns = new Map<number, number>()
  /** Sync errors reported by the brokers: kind and message. */
  const syncErrors: Array<{ readonly broker: number; readonly kind: string; readonly error: string }> = []
  const logs: Array<string> = []
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin

  const counting = (nodeId: number): MirrorRefresh.CoordinatorTask => ({
    name: "count",
    run: async (ctx) => {
      if (ctx.mirror === MIRROR) coordinatorRuns.set(nodeId, (coordinatorRuns.get(nodeId) ?? 0) + 1)
    }
  })

  beforeAll(async () => {
    source = await Node.embedded(1, { ...base, dataDir: path.join(dir, "source") })
    other = await Node.embedded(1, { ...base, dataDir: path.join(dir, "other") })
    const clusterId = randomBytes(16).toString("base64url").slice(0, 22)
    const controllerPort = await Ports.freePort()
    controller = await Node.start({
      ...base,
      nodeId: 1000,
      processRoles: ["controller"],
      clusterId,
      controllerHost: "127.0.0.1",
      controllerPort,
      dataDir: path.join(dir, "controller"),
      defaultReplicationFactor: 3,
      mirrorStateTopicNumPartitions: STATE_PARTITIONS
    })
    for (let id = 1; id <= 3; id++)
      brokers.set(
        id,
        await ClusterBroker.start(
          {
            ...base,
            nodeId: id,
            processRoles: ["broker"],
            clusterId,
            controllerBootstrap: { host: "127.0.0.1", port: controllerPort },
            dataDir: path.join(dir, `broker-${id}`),
            defaultReplicationFactor: 3,
            mirrorFailedRetryInitialBackoffMs: 300,
            mirrorFailedRetryMaxBackoffMs: 2000
          },
          (line) => logs.push(`[${id}] ${line}`),
          {
            coordinatorTasks: [counting(id)],
            onSyncError: (mirror, kind, error) => {
              if (mirror === MIRROR) syncErrors.push({ broker: id, kind, error })
            }
          }
        )
      )
    src = new ClusterClient.Client({ bootstrapServers: source.bootstrap.split(",") })
    dst = new ClusterClient.Client({ bootstrapServers: [...brokers.values()].map((b) => `127.0.0.1:${b.port}`) })
    admin = new MirrorAdmin.MirrorAdmin(dst)
    await Wait.eventually("3 live destination brokers", async () =>
      (await dst.metadata([])).brokers.size === 3 ? true : undefined
    )
    await admin.createClusterMirror(
      MIRROR,
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.metadata.refresh.interval.ms", "500"]
      ])
    )
    await admin.startMirrorTopics(MIRROR, [], { include: ["orders-.*"], exclude: ["orders-secret.*"] })
  })

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    for (const b of brokers.values()) await b.close()
    await controller?.close()
    await other?.close()
    await source?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const createSourceTopic = async (name: string, partitions: number) => {
    const res = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(res.topics[0]!.errorCode).toBe(0)
    return res.topics[0]!.topicId
  }

  const deleteSourceTopic = async (name: string) => {
    const res = await src.sendToAnyBroker(DeleteTopics.api, {
      topics: [{ name, topicId: Uuid.ZERO }],
      topicNames: [name],
      timeoutMs: 30_000
    })
    expect(res.responses[0]!.errorCode).toBe(0)
  }

  const alterMirror = async (name: string, value: string, operation = 0) => {
    const res = await dst.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        { resourceType: CLUSTER_MIRROR, resourceName: MIRROR, configs: [{ name, configOperation: operation, value }] }
      ],
      validateOnly: false
    })
    expect(res.responses[0]!.errorCode).toBe(0)
  }

  /** A topic as the destination's metadata shows it, once it has leaders. */
  const destinationTopic = async (name: string) => {
    const snap = await dst.metadata([name])
    const t = snap.topics.get(name)
    return t === undefined || t.errorCode !== 0 ? undefined : t
  }

  /** The partitions of `topic` as the destination brokers describe them. */
  const describeTopic = async (topic: string) => {
    const d = await admin.describeClusterMirrors([MIRROR])
    return (d.mirrors[0]?.partitions ?? []).filter((p) => p.topic === topic)
  }

  const waitStates = (topic: string, partitions: number, state: string, what: string) =>
    Wait.eventually(
      what,
      async () => {
        const parts = await describeTopic(topic)
        return parts.length === partitions && parts.every((p) => p.state === state) ? parts : undefined
      },
      60_000,
      200
    )

  /**
   * Waits until every partition of `topic` is FAILED, not retryable, for `reason` (the fetcher may fail
   * it first with its own words; the refresh's reason replaces them).
   */
  const waitFailedForGood = (topic: string, partitions: number, reason: string) =>
    Wait.eventually(
      `${topic} FAILED for good: ${reason}`,
      async () => {
        const parts = await describeTopic(topic)
        return parts.length === partitions &&
          parts.every((p) => p.state === "FAILED" && p.retryAttempt === -1 && p.errorMessage?.includes(reason))
          ? parts
          : undefined
      },
      60_000,
      200
    )

  /** The broker leading the `__mirror_state` partition the mirror name hashes to. */
  const coordinatorBroker = async () => {
    const state = await Wait.eventually("__mirror_state on the destination", () => destinationTopic("__mirror_state"))
    const p = Hashing.mirrorCoordinatorPartition(MIRROR, state.partitions.size)
    return state.partitions.get(p)!.leaderId
  }

  it("mirrors a new source topic matching the include pattern with its topic id and partition count", async () => {
    const topicId = await createSourceTopic("orders-a", 3)
    const mirrored = await Wait.eventually("orders-a on the destination", () => destinationTopic("orders-a"))
    expect(mirrored.topicId).toBe(topicId)
    expect(mirrored.partitions.size).toBe(3)
    await waitStates("orders-a", 3, "MIRRORING", "orders-a MIRRORING")
    // The periodic bump (§6.5): with no record fetched yet, only the refresh moves the destination epochs
    // to at least the source's + 10.
    const sourceEpochs = (await src.metadata(["orders-a"])).topics.get("orders-a")!.partitions
    await Wait.eventually("destination leader epochs 10 above the source's", async () => {
      const t = await destinationTopic("orders-a")
      return t !== undefined &&
        [...t.partitions].every(([i, p]) => p.leaderEpoch >= sourceEpochs.get(i)!.leaderEpoch + 10)
        ? true
        : undefined
    })
  })

  it("adds the partitions added on the source", async () => {
    const res = await src.sendToAnyBroker(CreatePartitions.api, {
      topics: [{ name: "orders-a", count: 5, assignments: null }],
      timeoutMs: 30_000,
      validateOnly: false
    })
    expect(res.results[0]!.errorCode).toBe(0)
    await Wait.eventually("orders-a with 5 partitions on the destination", async () => {
      const t = await destinationTopic("orders-a")
      return t !== undefined && t.partitions.size === 5 ? t : undefined
    })
    await waitStates("orders-a", 5, "MIRRORING", "the 5 partitions of orders-a MIRRORING")
  })

  it("never creates an excluded topic", async () => {
    await createSourceTopic("orders-secret-1", 1)
    // A topic created after it and mirrored: discovery has looked at the excluded one since.
    const later = await createSourceTopic("orders-b", 2)
    const mirrored = await Wait.eventually("orders-b on the destination", () => destinationTopic("orders-b"))
    expect(mirrored.topicId).toBe(later)
    await waitStates("orders-b", 2, "MIRRORING", "orders-b MIRRORING")
    const snap = await dst.metadata(null)
    expect(snap.topics.has("orders-secret-1")).toBe(false)
  })

  it("stops a mirrored topic once an exclude pattern matches it", async () => {
    await alterMirror("mirror.topics.exclude", "orders-b", APPEND)
    await waitStates("orders-b", 2, "STOPPED", "orders-b STOPPED")
    // Still excluded, still stopped: discovery does not start it again.
    expect((await describeTopic("orders-a")).every((p) => p.state === "MIRRORING")).toBe(true)
  })

  it("fails the partitions of a source topic deleted, not retryable", async () => {
    await createSourceTopic("orders-c", 2)
    await Wait.eventually("orders-c on the destination", () => destinationTopic("orders-c"))
    await waitStates("orders-c", 2, "MIRRORING", "orders-c MIRRORING")
    await deleteSourceTopic("orders-c")
    const failed = await waitFailedForGood("orders-c", 2, "source topic deleted")
    expect(failed.map((p) => p.partition).sort((a, b) => a - b)).toEqual([0, 1])
    expect(syncErrors.some((e) => e.kind === "topic_deleted" && e.error.includes("orders-c"))).toBe(true)
    expect(logs.some((l) => l.includes("source topic deleted") && l.includes("orders-c"))).toBe(true)
  })

  it("fails the partitions of a source topic recreated under the same name, never mirroring the new one", async () => {
    const first = await createSourceTopic("orders-d", 2)
    await Wait.eventually("orders-d on the destination", () => destinationTopic("orders-d"))
    await waitStates("orders-d", 2, "MIRRORING", "orders-d MIRRORING")
    // Refresh off while the topic is replaced, so that it sees the new topic rather than the gap.
    await alterMirror("mirror.metadata.refresh.interval.ms", "0")
    await deleteSourceTopic("orders-d")
    const second = await Wait.eventually("orders-d recreated on the source", async () => {
      try {
        return await createSourceTopic("orders-d", 2)
      } catch {
        return undefined
      }
    })
    expect(second).not.toBe(first)
    await alterMirror("mirror.metadata.refresh.interval.ms", "500")
    const failed = await waitFailedForGood("orders-d", 2, "source topic recreated with a new topic ID")
    expect(failed.map((p) => p.partition).sort((a, b) => a - b)).toEqual([0, 1])
    expect((await destinationTopic("orders-d"))?.topicId).toBe(first)
    expect(syncErrors.some((e) => e.kind === "topic_recreated" && e.error.includes("orders-d"))).toBe(true)
  })

  it("runs the mirror-level work on exactly one broker, and on another once that one dies", async () => {
    const coordinator = await coordinatorBroker()
    const runsOf = (id: number) => coordinatorRuns.get(id) ?? 0
    const before = new Map([...brokers.keys()].map((id) => [id, runsOf(id)]))
    await Wait.eventually("three more runs on the coordinator", () =>
      runsOf(coordinator) >= before.get(coordinator)! + 3 ? true : undefined
    )
    for (const id of brokers.keys()) if (id !== coordinator) expect(runsOf(id)).toBe(before.get(id))

    await brokers.get(coordinator)!.close()
    brokers.delete(coordinator)
    const next = await Wait.eventually("a new leader of the mirror's __mirror_state partition", async () => {
      dst.invalidate("__mirror_state")
      const leader = await coordinatorBroker()
      return leader !== coordinator && leader >= 0 ? leader : undefined
    })
    const moved = runsOf(next)
    await Wait.eventually("three runs on the new coordinator", () => (runsOf(next) >= moved + 3 ? true : undefined))
    const settled = new Map([...brokers.keys()].map((id) => [id, runsOf(id)]))
    await Wait.eventually("three more runs on the new coordinator", () =>
      runsOf(next) >= settled.get(next)! + 3 ? true : undefined
    )
    for (const id of brokers.keys()) if (id !== next) expect(runsOf(id)).toBe(settled.get(id))
  })

  it("fails every mirrored partition, not retryable, when the source is another cluster", async () => {
    await alterMirror("bootstrap.servers", other.bootstrap)
    const failed = await waitFailedForGood("orders-a", 5, `Source cluster ID changed for mirror ${MIRROR}`)
    expect(failed.map((p) => p.partition).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4])
    expect(syncErrors.some((e) => e.kind === "cluster_id" && e.error.includes(other.clusterId))).toBe(true)
    // The stopped topic keeps its state: it no longer depends on the source.
    expect((await describeTopic("orders-b")).every((p) => p.state === "STOPPED")).toBe(true)
  })
})
