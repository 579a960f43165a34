/**
 * Scenario: followers follow every leader change, including a leader that restarted.
 *
 * Three brokers replicate one partition (RF=3, min.insync.replicas=2). The leader is stopped and started
 * again on the same port within the session timeout (a new incarnation). A preferred election then gives
 * it back the leadership, and a BumpLeaderEpochs raises its epoch without moving it. The followers must
 * fetch from the restarted broker (their old connections to it are gone) at every new epoch, the ISR must
 * be full again within replica.lag.time.max.ms, acks=all appends must succeed, and the three logs must end
 * identical.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { RecordBatch } from "@clustermirror/protocol"
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
    const a = await f()
    if (a !== undefined) return a
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

const batch = (values: ReadonlyArray<string>) =>
  RecordBatch.build({ records: values.map((v) => ({ value: Buffer.from(v) })), timestamp: Date.now() })

const LAG_MS = 2000

describe("leader changes", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "cm-leader-change-"))
  const running = new Set<{ close: () => Promise<void> }>()
  afterAll(async () => {
    for (const r of running) await r.close()
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("followers fetch from a restarted leader after a preferred election and the ISR is full again", async () => {
    const clusterId = "AAAAAAAAAAAAAAAAAAAAAC"
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
    const ports = new Map<number, number>()
    const start = async (id: number) => {
      const b = await ClusterBroker.start({
        ...BrokerConfig.defaults,
        nodeId: id,
        port: ports.get(id) ?? 0,
        dataDir: path.join(root, `broker-${id}`),
        processRoles: ["broker"],
        clusterId,
        controllerBootstrap: { host: "127.0.0.1", port: controller.port },
        brokerHeartbeatIntervalMs: 100,
        replicaLagTimeMaxMs: LAG_MS,
        minInsyncReplicas: 2
      })
      ports.set(id, b.port)
      running.add(b)
      return b
    }
    const registration = () => {
      const t = [...controller.controller.current.replication.topicsById.values()].find((x) => x.name === "t")
      return t?.partitions.get(0)
    }
    const live = () => [...controller.controller.current.cluster.brokers.values()].filter((b) => !b.fenced).length

    const brokers = new Map<number, ClusterBroker.ClusterBroker>()
    for (const id of [1, 2, 3]) brokers.set(id, await start(id))
    await until("3 live brokers", () => (live() === 3 ? true : undefined))
    const created = await controller.controller.createTopics({
      topics: [{ name: "t", numPartitions: 1, replicationFactor: 3, assignments: [], configs: [], mirrorInfo: null }],
      timeoutMs: 5000,
      validateOnly: false
    })
    expect(created[0]!.errorCode).toBe(0)
    const preferred = registration()!.replicas[0]!
    const on = (id: number) => brokers.get(id)!
    await until("the preferred replica leads with a full ISR", () =>
      on(preferred).replicas.get("t", 0)?.leader === preferred && registration()!.isr.length === 3 ? true : undefined
    )
    const appendTo = async (id: number, values: ReadonlyArray<string>) => {
      const r = await on(id).replicas.appendAsLeader("t", 0, batch(values), true, -1, 20_000)
      expect(r.errorCode).toBe(0)
    }
    await appendTo(preferred, ["a0", "a1", "a2"])

    // The leader goes away and comes back as a new incarnation on the same port.
    running.delete(on(preferred))
    await on(preferred).close()
    brokers.set(preferred, await start(preferred))
    await until("another leader, then the restarted broker back in the ISR", () => {
      const r = registration()!
      return r.leader !== preferred && r.leader >= 0 && r.isr.length === 3 && live() === 3 ? true : undefined
    })
    const interim = registration()!.leader
    await until("the interim leader serves", () =>
      on(interim).replicas.get("t", 0)?.leader === interim ? true : undefined
    )
    await appendTo(interim, ["b3", "b4"])

    const elected = await controller.controller.electLeaders({
      electionType: 0,
      topicPartitions: [{ topic: "t", partitions: [0] }],
      timeoutMs: 5000
    })
    expect(elected._tag).toBe("Right")
    await until("the preferred replica leads again", () =>
      on(preferred).replicas.get("t", 0)?.leader === preferred ? true : undefined
    )
    const epoch = registration()!.leaderEpoch
    // Longer than replica.lag.time.max.ms: a follower that does not fetch has left the ISR by now.
    await sleep(3 * LAG_MS)
    await until(
      "a full ISR at the preferred leader",
      () => {
        const r = registration()!
        return r.leader === preferred && r.leaderEpoch === epoch && r.isr.length === 3 ? true : undefined
      },
      4 * LAG_MS
    )
    await appendTo(preferred, ["c5", "c6"])

    // A leader epoch bump without a leader move (KIP-1279's BumpLeaderEpochs): followers fetch at the new epoch.
    const topicId = [...controller.controller.current.replication.topicsById.values()].find(
      (x) => x.name === "t"
    )!.topicId
    await controller.controller.bumpLeaderEpochs({
      topics: [{ topicId, partitions: [{ partitionIndex: 0, minLeaderEpoch: epoch }] }]
    })
    await until("the bumped epoch at the leader", () =>
      on(preferred).replicas.get("t", 0)!.leaderEpoch > epoch ? true : undefined
    )
    await sleep(3 * LAG_MS)
    await until(
      "a full ISR after the bump",
      () => {
        const r = registration()!
        return r.leader === preferred && r.leaderEpoch > epoch && r.isr.length === 3 ? true : undefined
      },
      4 * LAG_MS
    )
    await appendTo(preferred, ["d7"])
    const leaderLog = on(preferred).replicas.get("t", 0)!.log
    expect(leaderLog.logEndOffset).toBe(8)
    const bytes = (id: number) => {
      const log = on(id).replicas.get("t", 0)!.log
      return Buffer.from(log.read(0, 1 << 24, { minOneMessage: true }).records).toString("hex")
    }
    for (const id of [1, 2, 3])
      await until(`broker ${id} has the leader's log`, () =>
        on(id).replicas.get("t", 0)!.log.logEndOffset === 8 ? true : undefined
      )
    expect(bytes(1)).toBe(bytes(preferred))
    expect(bytes(2)).toBe(bytes(preferred))
    expect(bytes(3)).toBe(bytes(preferred))
  })
})
