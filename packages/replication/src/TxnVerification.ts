/**
 * KIP-890 part 1 on partition leaders: before the first transactional batch of a producer's transaction
 * goes into a partition, the leader asks the transaction coordinator of its transactional id whether the
 * partition was added to that transaction (AddPartitionsToTxn v4 with VerifyOnly), so that a late or
 * stray batch cannot open a transaction nobody will end (a hanging transaction). The coordinator is the
 * leader of the transactional id's `__transaction_state` partition (Kafka's hash of the id).
 *
 * Answers the partition's error code: 0 when verified; the coordinator's refusal (INVALID_TXN_STATE,
 * INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, ...) as is; a coordinator that is missing, moving, loading or
 * unreachable as NOT_ENOUGH_REPLICAS, which every producer retries (Kafka's mapping for produce). Owns
 * no state: the leader keeps the verification guard (`ReplicaManager`).
 */
import { type AddPartitionsToTxn, Errors, Hashing } from "@clustermirror/protocol"

export const TRANSACTION_STATE_TOPIC = "__transaction_state"

/** One partition to verify for a producer's transaction. */
export interface VerifyRequest {
  readonly transactionalId: string
  readonly producerId: bigint
  readonly producerEpoch: number
  readonly topic: string
  readonly partition: number
}

/** Verifies a partition with the transaction coordinator; resolves its error code (never rejects). */
export type Verifier = (request: VerifyRequest) => Promise<number>

/** A connection to a coordinator broker: sends AddPartitionsToTxn at the highest version both serve. */
export interface CoordinatorChannel {
  readonly addPartitionsToTxn: (body: AddPartitionsToTxn.Request) => Promise<AddPartitionsToTxn.Response>
}

export interface Options {
  /** The leader of each `__transaction_state` partition, by partition (-1: none); undefined without the topic. */
  readonly transactionStateLeaders: () => ReadonlyArray<number> | undefined
  /** The channel to a broker, if it is known. */
  readonly channelTo: (brokerId: number) => CoordinatorChannel | undefined
}

const E = Errors.ErrorCode

/** Coordinator errors a producer cannot act on: it is told to retry. */
const RETRIED = new Set<number>([
  E.COORDINATOR_NOT_AVAILABLE,
  E.COORDINATOR_LOAD_IN_PROGRESS,
  E.NOT_COORDINATOR,
  E.CONCURRENT_TRANSACTIONS,
  E.REQUEST_TIMED_OUT,
  E.NETWORK_EXCEPTION
])

const produceError = (code: number): number => (RETRIED.has(code) ? E.NOT_ENOUGH_REPLICAS : code)

/** A verifier sending AddPartitionsToTxn VerifyOnly to the coordinator of each transactional id. */
export const make =
  (options: Options): Verifier =>
  async (r) => {
    const leaders = options.transactionStateLeaders()
    const leader =
      leaders === undefined || leaders.length === 0
        ? undefined
        : leaders[Hashing.groupCoordinatorPartition(r.transactionalId, leaders.length)]
    const channel = leader === undefined || leader < 0 ? undefined : options.channelTo(leader)
    if (channel === undefined) return produceError(E.COORDINATOR_NOT_AVAILABLE)
    let response: AddPartitionsToTxn.Response
    try {
      response = await channel.addPartitionsToTxn({
        transactions: [
          {
            transactionalId: r.transactionalId,
            producerId: r.producerId,
            producerEpoch: r.producerEpoch,
            verifyOnly: true,
            topics: [{ name: r.topic, partitions: [r.partition] }]
          }
        ],
        v3AndBelowTransactionalId: "",
        v3AndBelowProducerId: -1n,
        v3AndBelowProducerEpoch: -1,
        v3AndBelowTopics: []
      })
    } catch {
      // The connection failed or the coordinator does not serve v4: as a coordinator that is not there.
      return produceError(E.COORDINATOR_NOT_AVAILABLE)
    }
    if (response.errorCode !== 0) return produceError(response.errorCode)
    const code = response.resultsByTransaction
      .find((t) => t.transactionalId === r.transactionalId)
      ?.topicResults.find((t) => t.name === r.topic)
      ?.resultsByPartition.find((p) => p.partitionIndex === r.partition)?.partitionErrorCode
    return produceError(code ?? E.INVALID_TXN_STATE)
  }
