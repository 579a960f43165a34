/**
 * Scenario: unclean leader election and the divergent suffix of the returning replicas.
 *
 * Three brokers replicate one partition (unclean.leader.election.enable=true): leader L, followers F and
 * S. S stops after 5 records. L and F take 10 more (offsets 5..14, epoch 0), then both are lost. S returns
 * and, out of sync, becomes leader by unclean election; it takes 5 records at offsets 5..9 in a newer
 * epoch. When L and F return they must cut offsets 5..14 (their divergent suffix, found by leader epoch)
 * and end with S's log, batch for batch.
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
  timeoutMs = 20_000
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

/** Every batch of a broker's copy of the partition: [baseOffset, epoch, values]. */
const contents = (b: ClusterBroker.ClusterBroker) => {
  const log = b.replicas.get("t", 0)!.log
  const { records } = log.read(log.logStartOffset, 1 << 24, { minOneMessage: true })
  return RecordBatch.split(records).batches.map((ref) => {
    const bytes = records.subarray(ref.position, ref.position + ref.size)
    const rs = RecordBatch.records(bytes)
    return [
      RecordBatch.baseOffset(bytes),
      RecordBatch.partitionLeaderEpoch(bytes),
      rs._tag === "Right" ? rs.right.map((r) => Buffer.from(r.value!).toString()) : []
    ] as const
  })
}

describe("unclean leader election", () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "cm-unclean-"))
  const running = new Set<{ close: () => Promise<void> }>()
  afterAll(async () => {
    for (const r of running) await r.close()
    fs.rmSync(root, { recursive: true, force: true })
  })

  it("elects an out-of-sync replica and truncates the others' divergent suffix by leader epoch", async () => {
    const clusterId = "AAAAAAAAAAAAAAAAAAAAAB"
    const controller = await ControllerServer.start({
      nodeId: 1000,
      clusterId,
      host: "127.0.0.1",
      port: 0,
      dataDir: path.join(root, "controller"),
      maxFrameBytes: 1 << 26,
      defaultPartitions: 1,
      defaultReplicationFactor: 3,
      sessionTimeoutMs: 1000,
      uncleanLeaderElectionEnable: true
    })
    running.add(controller)
    const start = async (id: number) => {
      const b = await ClusterBroker.start({
        ...BrokerConfig.defaults,
        nodeId: id,
        port: 0,
        dataDir: path.join(root, `broker-${id}`),
        processRoles: ["broker"],
        clusterId,
        controllerBootstrap: { host: "127.0.0.1", port: controller.port },
        brokerHeartbeatIntervalMs: 100,
        replicaLagTimeMaxMs: 1000
      })
      running.add(b)
      return b
    }
    const stop = async (b: ClusterBroker.ClusterBroker) => {
      running.delete(b)
      await b.close()
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
    // L leads; S falls behind and will be elected uncleanly; F stays with L.
    const [L, F, S] = [
      registration()!.leader,
      ...registration()!.replicas.filter((r) => r !== registration()!.leader)
    ] as [number, number, number]
    const on = (id: number) => brokers.get(id)!
    await until("L leads", () => (on(L).replicas.get("t", 0)?.leader === L ? true : undefined))

    const appendTo = async (id: number, values: ReadonlyArray<string>, acks = 1) => {
      const r = await on(id).replicas.appendAsLeader("t", 0, batch(values), true, acks, 10_000)
      expect(r.errorCode).toBe(0)
      return Number(r.baseOffset)
    }
    const restart = async (id: number) => brokers.set(id, await start(id))

    expect(await appendTo(L, ["a0", "a1", "a2", "a3", "a4"], -1)).toBe(0)
    await until("S has offsets 0..4", () => (on(S).replicas.get("t", 0)!.log.logEndOffset === 5 ? true : undefined))
    await stop(on(S))
    await until("S out of the ISR", () => (registration()!.isr.includes(S) ? undefined : true))
    expect(await appendTo(L, ["b5", "b6", "b7", "b8", "b9"])).toBe(5)
    expect(await appendTo(L, ["c10", "c11", "c12", "c13", "c14"])).toBe(10)
    await until("F has offsets 0..14", () => (on(F).replicas.get("t", 0)!.log.logEndOffset === 15 ? true : undefined))
    await stop(on(L))
    await stop(on(F))
    await until("L and F fenced", () => (live() === 0 ? true : undefined))

    await restart(S)
    const uncleanEpoch = await until("S elected uncleanly", () => {
      const r = registration()
      return r?.leader === S ? r.leaderEpoch : undefined
    })
    expect(registration()!.isr).toEqual([S])
    await until("S leads", () => (on(S).replicas.get("t", 0)?.leader === S ? true : undefined))
    expect(await appendTo(S, ["d5", "d6", "d7", "d8", "d9"])).toBe(5)

    await restart(L)
    await restart(F)
    const expected = contents(on(S))
    expect(expected).toEqual([
      [0, 0, ["a0", "a1", "a2", "a3", "a4"]],
      [5, uncleanEpoch, ["d5", "d6", "d7", "d8", "d9"]]
    ])
    for (const id of [L, F])
      await until(`broker ${id} converged`, () => {
        const log = on(id).replicas.get("t", 0)?.log
        return log !== undefined &&
          log.logEndOffset === 10 &&
          JSON.stringify(contents(on(id))) === JSON.stringify(expected)
          ? true
          : undefined
      })
    expect(contents(on(L))).toEqual(expected)
    expect(contents(on(F))).toEqual(expected)
  })
})
