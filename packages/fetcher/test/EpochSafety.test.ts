/**
 * Epoch safety between a mirror's source and the destination's replicas (KIP-1279 §6.4, JR36, KAFKA-18723):
 * a follower of a mirror partition learns the leader's epochs through `MirrorLeaderEpoch` before it appends
 * them, and a fetch answer from the source that was overtaken by an unclean leader election never lands on
 * any destination replica when the mirror knew of the election by the time the answer arrived.
 */
import type { Buffer } from "node:buffer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Fetch, RecordBatch } from "@clustermirror/protocol"
import { type PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { describe, expect, it, onTestFinished } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { MemoryLeader } from "../src/MemoryLeaderEndpoint.js"
import { MemorySourceCluster } from "../src/MemorySourceCluster.js"
import { ignoreEvents, type MirrorPartition } from "../src/MirrorFetcher.js"
import { MirrorFetcherManager } from "../src/MirrorFetcherManager.js"
import { ReplicaFetcher } from "../src/ReplicaFetcher.js"
import type { SourceConnection, SourceConnector } from "../src/SourceCluster.js"
import { batch, batches, runToCompletion, TOPIC, TOPIC_ID, TP, write } from "./Fixtures.js"

/** A file-backed store in a fresh directory, removed when the test ends. */
const fileStore = (): PartitionLogStore.PartitionLogStoreService => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-epoch-"))
  const store = PartitionLogStore.makeFileStore(dir)
  onTestFinished(() => {
    store.closeAll()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return store
}

const hex = (bs: ReadonlyArray<Buffer>): string[] => bs.map((b) => b.toString("hex"))

/** A follower of the destination leader that records the `MirrorLeaderEpoch` of every request it sends. */
const follower = (leader: MemoryLeader, brokerId: number, log: PartitionLog.PartitionLog, leaderEpoch: number) => {
  const inner = leader.endpoint(19)
  const sent: number[] = []
  const fetcher = new ReplicaFetcher({
    brokerId,
    brokerEpoch: 1n,
    endpoint: {
      ...inner,
      fetch: (request, version) => {
        for (const t of request.topics) for (const p of t.partitions) sent.push(p.mirrorLeaderEpoch)
        return inner.fetch(request, version)
      }
    },
    config: { replicaFetchWaitMaxMs: 0, replicaFetchBackoffMs: 1 },
    isMirrorTopic: (topic) => topic === TOPIC
  })
  fetcher.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log, currentLeaderEpoch: leaderEpoch }])
  return { fetcher, log, sent }
}

describe("MirrorLeaderEpoch (JR36)", () => {
  it("a follower starting at 0 rejects the leader's epoch-2 batches, learns 2, and appends them on the next fetch", async () => {
    const store = fileStore()
    const leaderLog = store.open(TOPIC, 0, {}, TOPIC_ID)
    // Offsets 0-1 mirrored at source batch epoch 2, while the destination leader epoch is 21.
    leaderLog.appendAsFollower(batch("mirrored", 2, 2), 0)
    leaderLog.updateHighWatermark(2)
    const leader = new MemoryLeader({ leaderId: 1 })
    leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: leaderLog, leaderEpoch: 21, mirror: true })
    const f = follower(leader, 2, store.open("replica-of-orders", 0, {}, TOPIC_ID), 21)

    await f.fetcher.runOnce()
    expect(f.log.logEndOffset).toBe(0)
    expect(f.fetcher.partitionState(TP)?.mirrorLeaderEpoch).toBe(2)

    await f.fetcher.runOnce()
    expect(f.sent).toEqual([0, 2])
    expect(f.log.logEndOffset).toBe(2)
    expect(f.log.highWatermark).toBe(2)
    expect(hex(batches(f.log))).toEqual(hex(batches(leaderLog)))
    expect(f.log.endOffsetForEpoch(2)).toEqual({ epoch: 2, endOffset: 2 })
  })

  it("appends the batches before the first one of an unseen epoch and stops there", async () => {
    const leaderLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
    write(leaderLog, 2, 2, "two")
    const leader = new MemoryLeader({ leaderId: 1 })
    leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: leaderLog, leaderEpoch: 30, mirror: true })
    const f = follower(leader, 2, PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID), 30)

    await f.fetcher.runOnce() // rejects everything (0 held), learns 2 (the leader log's latest epoch)
    expect(f.log.logEndOffset).toBe(0)
    write(leaderLog, 5, 1, "five") // a new epoch shows up before the next fetch
    await f.fetcher.runOnce() // appends the two epoch-2 batches, stops before epoch 5, learns 5
    expect(f.log.logEndOffset).toBe(4)
    expect(f.fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 4, lastFetchedEpoch: 2, mirrorLeaderEpoch: 5 })
    await f.fetcher.runOnce()
    expect(f.log.logEndOffset).toBe(6)
    expect(hex(batches(f.log))).toEqual(hex(batches(leaderLog)))
    expect(f.sent).toEqual([0, 2, 5])
  })

  it("property: a follower appends only epochs it sent as MirrorLeaderEpoch, and ends equal to the leader", async () => {
    // Rounds of mirrored appends (nondecreasing source epochs, as a mirror leader takes them) interleaved
    // with follower fetches.
    const roundArb = fc.record({
      epochGap: fc.integer({ min: 0, max: 3 }),
      batches: fc.integer({ min: 0, max: 3 }),
      fetches: fc.integer({ min: 0, max: 2 })
    })
    await fc.assert(
      fc.asyncProperty(fc.array(roundArb, { minLength: 1, maxLength: 8 }), async (rounds) => {
        const leaderLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
        const leader = new MemoryLeader({ leaderId: 1 })
        leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: leaderLog, leaderEpoch: 50, mirror: true })
        const f = follower(leader, 2, PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID), 50)
        const fetchChecked = async () => {
          const before = f.log.logEndOffset
          await f.fetcher.runOnce()
          const held = f.sent[f.sent.length - 1]!
          for (const b of batches(f.log))
            if (RecordBatch.baseOffset(b) >= before)
              expect(RecordBatch.partitionLeaderEpoch(b)).toBeLessThanOrEqual(held)
        }
        let epoch = 0
        for (const r of rounds) {
          epoch += r.epochGap
          write(leaderLog, epoch, r.batches, `e${epoch}`)
          for (let i = 0; i < r.fetches; i++) await fetchChecked()
        }
        for (let i = 0; i < 3 * rounds.length + 3 && f.log.logEndOffset < leaderLog.logEndOffset; i++)
          await fetchChecked()
        expect(hex(batches(f.log))).toEqual(hex(batches(leaderLog)))
        expect(f.fetcher.partitionState(TP)?.mirrorLeaderEpoch).toBe(Math.max(0, leaderLog.latestEpoch()))
      }),
      { numRuns: 60 }
    )
  })

  it("a topic that stops mirroring falls back to the current leader epoch, and one that starts mirroring starts at 0", async () => {
    const leaderLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
    write(leaderLog, 7, 1, "seven")
    const leader = new MemoryLeader({ leaderId: 1 })
    const hosted = leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: leaderLog, leaderEpoch: 7 })
    let mirrored = false
    const followerLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
    const fetcher = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      endpoint: leader.endpoint(19),
      config: { replicaFetchWaitMaxMs: 0, replicaFetchBackoffMs: 1 },
      isMirrorTopic: () => mirrored
    })
    fetcher.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: followerLog, currentLeaderEpoch: 7 }])
    expect(fetcher.partitionState(TP)?.mirrorLeaderEpoch).toBe(-1)
    await fetcher.runOnce()
    expect(followerLog.logEndOffset).toBe(2) // epoch 7 <= current leader epoch 7

    mirrored = true
    hosted.mirror = true
    write(leaderLog, 7, 1, "mirrored-seven")
    fetcher.mirrorTopicsChanged()
    await fetcher.runOnce()
    expect(followerLog.logEndOffset).toBe(2)
    expect(fetcher.partitionState(TP)?.mirrorLeaderEpoch).toBe(7)
    await fetcher.runOnce()
    expect(followerLog.logEndOffset).toBe(4)

    mirrored = false
    hosted.mirror = false
    fetcher.mirrorTopicsChanged()
    await fetcher.runOnce()
    expect(fetcher.partitionState(TP)?.mirrorLeaderEpoch).toBe(-1)
  })

  it("without a mirror name, a batch above the follower's current leader epoch is not appended (KAFKA-18723)", async () => {
    const leaderLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
    write(leaderLog, 3, 1, "three")
    write(leaderLog, 4, 1, "four")
    const leader = new MemoryLeader({ leaderId: 1 })
    // A leader answering at epoch 3 with a log that already holds an epoch-4 batch (a late answer of a
    // deposed leader): the follower at epoch 3 takes the epoch-3 batch only.
    const hosted = leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: leaderLog, leaderEpoch: 3 })
    const followerLog = PartitionLogStore.makeMemoryStore().open(TOPIC, 0, {}, TOPIC_ID)
    const fetcher = new ReplicaFetcher({
      brokerId: 2,
      brokerEpoch: 1n,
      endpoint: leader.endpoint(19),
      config: { replicaFetchWaitMaxMs: 0, replicaFetchBackoffMs: 1_000_000 },
      now: () => 0
    })
    fetcher.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: followerLog, currentLeaderEpoch: 3 }])
    await fetcher.runOnce()
    expect(followerLog.logEndOffset).toBe(2)
    expect(fetcher.partitionState(TP)).toMatchObject({ fetchOffset: 2, delayedUntil: 1_000_000 })
    hosted.leaderEpoch = 4
    fetcher.addPartitions([{ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: followerLog, currentLeaderEpoch: 4 }])
    await runToCompletion(fetcher)
    expect(hex(batches(followerLog))).toEqual(hex(batches(leaderLog)))
  })
})

// ---------------------------------------------------------------------------------------------------
// KAFKA-18723: a late source answer after an unclean leader election

interface HeldFetch {
  readonly nodeId: number
  readonly records: ReadonlyArray<{ readonly partition: number; readonly bytes: number }>
  readonly release: () => void
  /** `delivered` once released to the fetcher; `failed` when its connection closed first. */
  readonly outcome: { value: "held" | "delivered" | "failed" }
}

/**
 * A source connector whose Fetch answers wait until the test releases them (the source computed them when
 * the request arrived); other requests pass. A closed connection fails the answers it still holds.
 */
class GatedSource implements SourceConnector {
  readonly held: HeldFetch[] = []

  constructor(readonly source: MemorySourceCluster) {}

  connect = async (host: string, port: number): Promise<SourceConnection> => {
    const inner = await this.source.connect(host, port)
    const nodeId = this.source.brokerIds.find((id) => this.source.address(id).host === host) ?? -1
    const failOnClose = new Set<(e: Error) => void>()
    const connection: SourceConnection = {
      versionFor: inner.versionFor,
      request: async (api, body, version) => {
        const response = await inner.request(api, body, version)
        if (api.key !== Fetch.api.key) return response
        const fetched = response as unknown as Fetch.Response
        const records = fetched.responses.flatMap((t) =>
          t.partitions.map((p) => ({ partition: p.partitionIndex, bytes: p.records?.length ?? 0 }))
        )
        const outcome: HeldFetch["outcome"] = { value: "held" }
        await new Promise<void>((resolve, reject) => {
          failOnClose.add((e) => {
            if (outcome.value === "held") outcome.value = "failed"
            reject(e)
          })
          const release = () => {
            if (outcome.value === "held") outcome.value = "delivered"
            resolve()
          }
          this.held.push({ nodeId, records, release, outcome })
        })
        return response
      },
      close: async () => {
        for (const fail of failOnClose) fail(new Error("connection closed"))
        await inner.close()
      }
    }
    return connection
  }

  /** Delivers every held answer except `keep`. */
  releaseAllBut(keep?: HeldFetch): void {
    for (const h of this.held.splice(0)) {
      if (h === keep) this.held.push(h)
      else h.release()
    }
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `step` until `done` holds (10 s at most). */
const until = async (what: string, done: () => boolean, step: () => void | Promise<void> = () => {}) => {
  const deadline = Date.now() + 10_000
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await step()
    await pause(2)
  }
}

const DESTINATION_EPOCH = 20

const scenario = (newLeader: number, watchAppends: boolean) => {
  const source = new MemorySourceCluster({ brokers: [1, 2] })
  // Partitions 0 and 1 on broker 1, partition 2 on broker 2, all at source epoch 3.
  source.addTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: 3, leaders: [1, 1, 2], leaderEpoch: 3 })
  const gate = new GatedSource(source)
  const store = fileStore()
  const leader = new MemoryLeader({ leaderId: 1 })
  const destination = (partition: number, log: PartitionLog.PartitionLog): MirrorPartition => ({
    topic: TOPIC,
    topicId: TOPIC_ID,
    partition,
    log,
    destinationLeaderEpoch: () => DESTINATION_EPOCH,
    onAppend: () => {
      log.updateHighWatermark(log.logEndOffset)
      // Looked at right after every append of the mirror fetcher, before anything could cut it again.
      if (watchAppends && holdsDivergentBatch(log)) appendedDivergent.push(log.logEndOffset)
    }
  })
  const leaderLog = store.open(TOPIC, 0, {}, TOPIC_ID)
  leader.host({
    topic: TOPIC,
    topicId: TOPIC_ID,
    partition: 0,
    log: leaderLog,
    leaderEpoch: DESTINATION_EPOCH,
    mirror: true
  })
  const followers = [2, 3].map((id) => follower(leader, id, store.open(`replica-${id}`, 0, {}, TOPIC_ID), 20))
  const manager = new MirrorFetcherManager({
    mirrorName: "m1",
    bootstrapServers: source.bootstrapServers,
    connector: gate,
    config: { mirrorFetchWaitMaxMs: 5, mirrorFetchBackoffMs: 2 },
    events: ignoreEvents
  })
  onTestFinished(async () => {
    gate.releaseAllBut()
    await manager.close()
  })
  const replicas = [leaderLog, ...followers.map((f) => f.log)]
  let divergent: Buffer[] = []
  const appendedDivergent: number[] = []
  const holdsDivergentBatch = (log: PartitionLog.PartitionLog): boolean =>
    batches(log).some((b) => divergent.some((d) => d.equals(b)))
  /** No destination replica holds a batch the source's unclean election truncated, nor ever appended one. */
  const assertNoDivergentBatch = () => {
    expect(appendedDivergent, "divergent batch appended by the mirror fetcher").toEqual([])
    for (const log of replicas) expect(holdsDivergentBatch(log), `divergent batch on ${log.topic}`).toBe(false)
  }
  const runFollowers = async (check = true) => {
    for (const f of followers) {
      await runToCompletion(f.fetcher)
      if (check) assertNoDivergentBatch()
    }
  }
  const sourceLog = source.log(TOPIC, 0)
  return {
    source,
    gate,
    manager,
    leaderLog,
    followers,
    sourceLog,
    destination,
    assertNoDivergentBatch,
    runFollowers,
    /** Steps 1-3: mirror offsets 0-3 at epoch 3 everywhere; then the source appends 4-5 and the answer carrying
     * them is held. Returns the held answer. */
    prepare: async (): Promise<HeldFetch> => {
      source.produce(TOPIC, 0, [batch("old-0"), batch("old-2")])
      manager.addPartitions([destination(0, leaderLog), destination(1, store.open(TOPIC, 1, {}, TOPIC_ID))])
      await until(
        "the mirror to copy offsets 0-3",
        () => leaderLog.logEndOffset === 4,
        () => gate.releaseAllBut()
      )
      await runFollowers()
      for (const f of followers) {
        expect(f.sent.slice(0, 2)).toEqual([0, 3])
        expect(hex(batches(f.log))).toEqual(hex(batches(leaderLog)))
      }
      source.produce(TOPIC, 0, [batch("old-4")])
      divergent = batches(sourceLog).filter((b) => RecordBatch.baseOffset(b) >= 4)
      expect(divergent).toHaveLength(1)
      let late: HeldFetch | undefined
      await until(
        "the answer with offsets 4-5",
        () => late !== undefined,
        () => {
          late = gate.held.find((h) => h.nodeId === 1 && h.records.some((r) => r.partition === 0 && r.bytes > 0))
          gate.releaseAllBut(late)
        }
      )
      assertNoDivergentBatch()
      return late!
    },
    /** The unclean election: the new leader (at epoch 4) kept offsets 0-3 only, then takes two batches. */
    uncleanElection: () => {
      const p = source.partition(TOPIC, 0)
      p.log.truncateTo(4)
      p.leaderId = newLeader
      p.leaderEpoch = 4
      source.produce(TOPIC, 0, [batch("new-4"), batch("new-6")])
    },
    /** Every answer flows until the destination leader and both followers hold the source's new history. */
    converge: async (check: boolean) => {
      const expected = hex(batches(sourceLog))
      await until(
        "the destination leader to match the source",
        () => JSON.stringify(hex(batches(leaderLog))) === JSON.stringify(expected),
        () => {
          gate.releaseAllBut()
          if (check) assertNoDivergentBatch()
        }
      )
      await runFollowers(check)
      expect(leaderLog.logEndOffset).toBe(8)
      expect(hex(batches(leaderLog))).toEqual(expected)
      for (const f of followers) {
        expect(f.log.logEndOffset).toBe(8)
        expect(hex(batches(f.log))).toEqual(expected)
      }
      expect(leaderLog.endOffsetForEpoch(3)).toEqual({ epoch: 3, endOffset: 4 })
    }
  }
}

describe("a late source answer after an unclean leader election (KAFKA-18723)", () => {
  for (const newLeader of [1, 2])
    it(`is dropped once the mirror learned the new source epoch (new leader: broker ${newLeader})`, async () => {
      const s = scenario(newLeader, true)
      const late = await s.prepare()

      s.uncleanElection()
      s.assertNoDivergentBatch()

      // The mirror learns epoch 4 from a metadata answer (asked for partition 2, which it starts now).
      s.manager.addPartitions([s.destination(2, PartitionLogStore.makeMemoryStore().open(TOPIC, 2, {}, TOPIC_ID))])
      await until(
        "the mirror to learn source epoch 4",
        () => s.manager.sourceLeaderEpoch(TP) === 4,
        () => s.gate.releaseAllBut(late)
      )
      s.assertNoDivergentBatch()

      // Now the answer computed before the election arrives (on a connection still open).
      late.release()
      expect(late.outcome.value).toBe("delivered")
      await pause(20)
      s.assertNoDivergentBatch()
      expect(s.leaderLog.logEndOffset).toBeLessThanOrEqual(4)
      await s.runFollowers()

      await s.converge(true)
      s.assertNoDivergentBatch()
    })

  for (const newLeader of [1, 2])
    it(`converges through the diverging-epoch path when it arrives before any sign of the election (new leader: broker ${newLeader})`, async () => {
      // The answer is processed before the mirror could know of the election: its batches are then
      // indistinguishable from valid ones, so the destination takes them, and every replica must converge to
      // the source's new history through OffsetForLeaderEpoch (leader) and DivergingEpoch (followers).
      const s = scenario(newLeader, false)
      const late = await s.prepare()
      s.uncleanElection()
      late.release()
      expect(late.outcome.value).toBe("delivered")
      await until("the late batches on the destination leader", () => s.leaderLog.logEndOffset >= 6)
      for (const f of s.followers) await runToCompletion(f.fetcher)
      for (const f of s.followers) expect(f.log.logEndOffset).toBe(s.leaderLog.logEndOffset)

      await s.converge(false)
      s.assertNoDivergentBatch()
    })
})
