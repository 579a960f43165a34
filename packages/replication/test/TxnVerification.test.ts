/**
 * KIP-890 part 1 on the leader: the first transactional batch of a producer's transaction in a partition
 * is appended only once the transaction coordinator (here a stand-in answering AddPartitionsToTxn v4
 * VerifyOnly from the partitions it was told about) verified the partition; later batches of the open
 * transaction go straight in; a refusal, a missing coordinator or a marker during the verification keep
 * the batch out.
 */
import { describe, expect, it } from "@effect/vitest"
import { Errors, RecordBatch, type AddPartitionsToTxn } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { ReplicaManager } from "../src/ReplicaManager.js"
import * as TxnMarkers from "../src/TxnMarkers.js"
import * as TxnVerification from "../src/TxnVerification.js"

const E = Errors.ErrorCode

/** A coordinator stand-in: the partitions of each (transactional id, producer id, epoch) added to a transaction. */
const coordinator = () => {
  const added = new Set<string>()
  const requests: AddPartitionsToTxn.Request[] = []
  let hold: Promise<void> | undefined
  const channel: TxnVerification.CoordinatorChannel = {
    addPartitionsToTxn: async (body) => {
      requests.push(body)
      await hold
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        resultsByTransaction: body.transactions.map((t) => ({
          transactionalId: t.transactionalId,
          topicResults: t.topics.map((x) => ({
            name: x.name,
            resultsByPartition: x.partitions.map((p) => ({
              partitionIndex: p,
              partitionErrorCode: added.has(`${t.transactionalId}/${t.producerId}/${t.producerEpoch}/${x.name}-${p}`)
                ? 0
                : E.INVALID_TXN_STATE
            }))
          }))
        })),
        resultsByTopicV3AndBelow: []
      }
    }
  }
  return {
    channel,
    requests,
    add: (id: string, producerId: bigint, epoch: number, tp: string) => added.add(`${id}/${producerId}/${epoch}/${tp}`),
    holdAnswers: () => {
      let release = () => {}
      hold = new Promise((r) => {
        release = r
      })
      return () => {
        hold = undefined
        release()
      }
    }
  }
}

/** `leaders`: of `__transaction_state`'s partitions, "none" without the topic. */
const setup = (leaders: ReadonlyArray<number> | "none" = [2, 2, 2]) => {
  const c = coordinator()
  const rm = new ReplicaManager({
    store: PartitionLogStore.makeMemoryStore(),
    nodeId: 1,
    verifier: TxnVerification.make({
      transactionStateLeaders: () => (leaders === "none" ? undefined : leaders),
      channelTo: (id) => (id === 2 ? c.channel : undefined)
    })
  })
  rm.applyRegistration(
    "t",
    0,
    "q83vEjRWeJCrze8SNFZ4kA",
    { replicas: [1], isr: [1], leader: 1, leaderEpoch: 0, partitionEpoch: 0 },
    PartitionLog.defaultConfig,
    false
  )
  return { rm, c, log: rm.get("t", 0)!.log }
}

const txn = (baseSequence: number, producerEpoch = 0) =>
  RecordBatch.build({
    records: [{ value: Buffer.from(`v${baseSequence}`) }],
    producerId: 5n,
    producerEpoch,
    baseSequence,
    isTransactional: true,
    timestamp: 1
  })

const produce = async (rm: ReplicaManager, records: Buffer, transactionalId: string | null = "tx") =>
  (await rm.appendAsLeader("t", 0, records, true, 1, 30_000, transactionalId)).errorCode

describe("KIP-890 verification on the partition leader", () => {
  it("appends a transaction's first batch once the coordinator verified the partition, later ones directly", async () => {
    const { rm, c, log } = setup()
    c.add("tx", 5n, 0, "t-0")
    expect(await produce(rm, txn(0))).toBe(0)
    expect(await produce(rm, txn(1))).toBe(0)
    expect(c.requests.length).toBe(1)
    expect(c.requests[0]!.transactions).toEqual([
      {
        transactionalId: "tx",
        producerId: 5n,
        producerEpoch: 0,
        verifyOnly: true,
        topics: [{ name: "t", partitions: [0] }]
      }
    ])
    expect(log.logEndOffset).toBe(2)
    // Once the transaction ended, the next one is verified again.
    const ended = await TxnMarkers.appendMarker(
      rm,
      "t",
      0,
      { producerId: 5n, producerEpoch: 0, commit: true, coordinatorEpoch: 0 },
      1000,
      1
    )
    expect(ended).toBe(0)
    expect(await produce(rm, txn(2))).toBe(0)
    expect(c.requests.length).toBe(2)
  })

  it("refuses a batch the coordinator does not know in the transaction, and appends nothing", async () => {
    const { rm, log } = setup()
    expect(await produce(rm, txn(0))).toBe(E.INVALID_TXN_STATE)
    expect(log.logEndOffset).toBe(0)
  })

  it("answers NOT_ENOUGH_REPLICAS (retried) while there is no coordinator to ask", async () => {
    expect(await produce(setup("none").rm, txn(0))).toBe(E.NOT_ENOUGH_REPLICAS)
    expect(await produce(setup([-1, -1, -1]).rm, txn(0))).toBe(E.NOT_ENOUGH_REPLICAS)
    expect(await produce(setup([3, 3, 3]).rm, txn(0))).toBe(E.NOT_ENOUGH_REPLICAS)
  })

  it("refuses a verified batch when the producer's marker came while it was verified (no hanging transaction)", async () => {
    const { rm, c, log } = setup()
    c.add("tx", 5n, 0, "t-0")
    const release = c.holdAnswers()
    const pending = produce(rm, txn(0))
    await new Promise((r) => setImmediate(r))
    expect(c.requests.length).toBe(1)
    await TxnMarkers.appendMarker(
      rm,
      "t",
      0,
      { producerId: 5n, producerEpoch: 0, commit: false, coordinatorEpoch: 0 },
      1000,
      1
    )
    release()
    expect(await pending).toBe(E.INVALID_TXN_STATE)
    expect(log.logEndOffset).toBe(1)
    expect(log.openTransactions()).toEqual([])
  })

  it("does not verify idempotent batches", async () => {
    const { rm, c } = setup()
    const idempotent = RecordBatch.build({
      records: [{ value: Buffer.from("x") }],
      producerId: 6n,
      producerEpoch: 0,
      baseSequence: 0,
      timestamp: 1
    })
    expect(await produce(rm, idempotent, null)).toBe(0)
    expect(c.requests.length).toBe(0)
  })
})
