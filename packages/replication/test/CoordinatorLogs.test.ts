/**
 * The coordinator log port over the replica manager: a load reads the decoded records from the log
 * start, an append as leader at the shard's epoch commits (acks=all), another epoch is NOT_COORDINATOR,
 * and a record that does not decode fails the load naming the partition.
 */
import { describe, expect, it } from "@effect/vitest"
import { CoordinatorLog } from "@clustermirror/coordinator-runtime"
import { Errors, GroupRecords, MirrorStateRecords, RecordBatch, Uuid } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { Effect } from "effect"
import * as CoordinatorLogs from "../src/CoordinatorLogs.js"
import { ReplicaManager } from "@clustermirror/replication/ReplicaManager"

const TOPIC = "__mirror_state"
const TOPIC_ID = Uuid.random()

const setup = () => {
  const rm = new ReplicaManager({
    store: PartitionLogStore.makeMemoryStore(),
    nodeId: 1,
    now: () => 1_000,
    replicaLagTimeMaxMs: 10_000
  })
  rm.applyRegistration(
    TOPIC,
    0,
    "q83vEjRWeJCrze8SNFZ4kA",
    { replicas: [1], isr: [1], leader: 1, leaderEpoch: 5, partitionEpoch: 0 },
    PartitionLog.defaultConfig,
    true,
    1
  )
  const log = CoordinatorLogs.make({ replicas: rm, nodeId: 1, topic: TOPIC, codec: MirrorStateRecords })
  return { rm, log }
}

const state = (partition: number) =>
  MirrorStateRecords.mirrorPartitionState(MirrorStateRecords.key("m", TOPIC_ID, partition), "LOG_TRUNCATION")

describe("CoordinatorLogs", () => {
  it.effect("reads what it appended as leader, from the log start", () =>
    Effect.gen(function* () {
      const { log } = setup()
      expect([...(yield* log.read(0))]).toEqual([])
      expect([...(yield* log.read(7))]).toEqual([])
      yield* log.append(0, 5, [state(0), state(1)])
      yield* log.append(0, 5, [state(2)])
      expect([...(yield* log.read(0))]).toEqual([state(0), state(1), state(2)])
    })
  )

  it.effect("refuses an append at another leader epoch, or for a partition it does not lead, as NOT_COORDINATOR", () =>
    Effect.gen(function* () {
      const { log } = setup()
      expect((yield* Effect.flip(log.append(0, 4, [state(0)])))._tag).toBe("NotCoordinator")
      expect((yield* Effect.flip(log.append(3, 5, [state(0)])))._tag).toBe("NotCoordinator")
      expect([...(yield* log.read(0))]).toEqual([])
    })
  )

  it.effect("fails a load on a record that does not decode, naming the partition", () =>
    Effect.gen(function* () {
      const { rm, log } = setup()
      yield* Effect.promise(async () =>
        rm.appendAsLeader(
          TOPIC,
          0,
          RecordBatch.build({ records: [{ key: Buffer.from([0, 42]), value: Buffer.from([1]) }], timestamp: 1 }),
          false
        )
      )
      const error = yield* Effect.flip(log.read(0))
      expect(error._tag).toBe("CoordinatorLogError")
      expect(error.message).toContain(`${TOPIC}-0`)
    })
  )

  it.effect(
    "keeps transactions: transactional batches per producer, markers as control batches, read back as appended",
    () =>
      Effect.gen(function* () {
        const { rm } = setup()
        const log = CoordinatorLogs.makeTransactional({ replicas: rm, nodeId: 1, topic: TOPIC, codec: GroupRecords })
        const commit = (group: string, offset: bigint) =>
          GroupRecords.offsetCommit(
            { group, topic: "t", partition: 0 },
            { offset, leaderEpoch: -1, metadata: "", commitTimestamp: 1n }
          )
        const p1 = { producerId: 11n, producerEpoch: 2 }
        const p2 = { producerId: 12n, producerEpoch: 0 }
        const entries = [
          CoordinatorLog.plain(commit("g", 1n)),
          CoordinatorLog.inTransaction(p1, commit("g", 2n)),
          CoordinatorLog.inTransaction(p1, commit("h", 3n)),
          CoordinatorLog.inTransaction(p2, commit("g", 4n)),
          CoordinatorLog.txnMarker<GroupRecords.GroupRecord>(p1, true, 7),
          CoordinatorLog.plain(commit("g", 5n))
        ]
        yield* log.append(0, 5, entries)
        expect([...(yield* log.read(0))]).toEqual(entries)
        const { records } = rm.get(TOPIC, 0)!.log.read(0, 1 << 20)
        const shape = RecordBatch.split(records).batches.map((b) => [
          RecordBatch.producerId(records, b.position),
          RecordBatch.isTransactional(records, b.position),
          RecordBatch.isControl(records, b.position),
          RecordBatch.recordCount(records, b.position)
        ])
        expect(shape).toEqual([
          [-1n, false, false, 1],
          [11n, true, false, 2],
          [12n, true, false, 1],
          [11n, true, true, 1],
          [-1n, false, false, 1]
        ])
        // The plain reader skips the markers and sees every record.
        const plain = CoordinatorLogs.make({ replicas: rm, nodeId: 1, topic: TOPIC, codec: GroupRecords })
        expect([...(yield* plain.read(0))].length).toBe(5)
        // The log fences a marker of an older producer epoch, like any append.
        const fenced = yield* Effect.flip(
          log.append(0, 5, [CoordinatorLog.txnMarker({ producerId: 11n, producerEpoch: 1 }, false, 7)])
        )
        expect(fenced).toMatchObject({ _tag: "AppendFailed", errorCode: Errors.ErrorCode.INVALID_PRODUCER_EPOCH })
      })
  )
})
