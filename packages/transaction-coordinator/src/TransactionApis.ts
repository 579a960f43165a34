/**
 * The transaction side of a broker's request handlers: FindCoordinator with key type 1 (creating
 * `__transaction_state` on first use, as Kafka does), InitProducerId with a transactional id,
 * AddPartitionsToTxn (v0-3 from clients, v4-5 batched from partition leaders, VerifyOnly for KIP-890),
 * AddOffsetsToTxn, EndTxn, ListTransactions and DescribeTransactions, translating wire ↔
 * `TransactionCoordinator`. Decisions are the coordinator's; this module only maps fields and the
 * PRODUCER_FENCED of old request versions.
 */
import {
  AddOffsetsToTxn,
  AddPartitionsToTxn,
  DescribeTransactions,
  EndTxn,
  Errors,
  FindCoordinator,
  Hashing,
  InitProducerId,
  ListTransactions
} from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"
import { TRANSACTION_STATE_TOPIC } from "./TransactionControl.js"
import {
  TransactionCoordinator,
  type MarkersRequest,
  type MarkersResponse,
  type Options
} from "./TransactionCoordinator.js"
import { TransactionStates } from "./TransactionRecords.js"

const E = Errors.ErrorCode
export const OFFSETS_TOPIC = "__consumer_offsets"

/** What the handlers read of the broker: its metadata, topic creation, producer ids and config. */
export interface BrokerContext {
  readonly config: {
    readonly transactionStateLogNumPartitions: number
    readonly transactionStateLogMinIsr: number
    readonly transactionStateLogSegmentBytes: number
    readonly transactionMaxTimeoutMs: number
    readonly transactionAbortTimedOutTransactionCleanupIntervalMs: number
    readonly transactionalIdExpirationMs: number
  }
  readonly view: {
    readonly topicByName: (
      name: string
    ) => { readonly partitions: ReadonlyArray<{ readonly leader: number }> } | undefined
    readonly broker: (
      id: number,
      listenerName?: string
    ) => { readonly nodeId: number; readonly host: string; readonly port: number } | undefined
  }
  readonly admin: {
    readonly createTopics: (
      topics: ReadonlyArray<{
        readonly name: string
        readonly numPartitions: number
        readonly replicationFactor: number
        readonly assignments: ReadonlyArray<never>
        readonly configs: ReadonlyArray<{ readonly name: string; readonly value: string }>
        readonly topicId: null
      }>,
      validateOnly: boolean
    ) => Promise<ReadonlyArray<{ readonly errorCode: number; readonly errorMessage: string | null }>>
  }
  readonly producerIds: { readonly allocate: () => Promise<bigint> }
}

/** This broker's transaction coordinator over `log`, sending markers with `sendMarkers`. */
export const coordinator = (
  ctx: BrokerContext,
  options: Pick<Options, "log" | "logLine" | "runtime"> & {
    readonly sendMarkers: (brokerId: number, request: MarkersRequest) => Promise<MarkersResponse>
  }
): TransactionCoordinator =>
  new TransactionCoordinator({
    ...options,
    partitionCount: () => ctx.view.topicByName(TRANSACTION_STATE_TOPIC)?.partitions.length ?? 0,
    leaderOf: (topic, partition) => {
      const p = ctx.view.topicByName(topic)?.partitions[partition]
      return p === undefined ? undefined : p.leader
    },
    allocateProducerId: () => ctx.producerIds.allocate(),
    config: () => ({
      transactionMaxTimeoutMs: ctx.config.transactionMaxTimeoutMs,
      abortTimedOutTransactionCleanupIntervalMs: ctx.config.transactionAbortTimedOutTransactionCleanupIntervalMs,
      transactionalIdExpirationMs: ctx.config.transactionalIdExpirationMs
    })
  })

/**
 * Creates `__transaction_state` when it does not exist yet: `transaction.state.log.num.partitions`
 * partitions, `replicationFactor` replicas (the caller caps `transaction.state.log.replication.factor`
 * to the live brokers), compacted, `min.insync.replicas` = `transaction.state.log.min.isr` (at most the
 * replication factor, or no append could ever commit).
 */
export const ensureTransactionStateTopic = async (ctx: BrokerContext, replicationFactor: number): Promise<void> => {
  if (ctx.view.topicByName(TRANSACTION_STATE_TOPIC) !== undefined) return
  const [result] = await ctx.admin.createTopics(
    [
      {
        name: TRANSACTION_STATE_TOPIC,
        numPartitions: ctx.config.transactionStateLogNumPartitions,
        replicationFactor,
        assignments: [],
        configs: [
          { name: "cleanup.policy", value: "compact" },
          { name: "compression.type", value: "uncompressed" },
          { name: "segment.bytes", value: String(ctx.config.transactionStateLogSegmentBytes) },
          {
            name: "min.insync.replicas",
            value: String(Math.max(1, Math.min(ctx.config.transactionStateLogMinIsr, replicationFactor)))
          }
        ],
        topicId: null
      }
    ],
    false
  )
  if (result !== undefined && result.errorCode !== 0 && result.errorCode !== E.TOPIC_ALREADY_EXISTS)
    throw new Error(
      `cannot create ${TRANSACTION_STATE_TOPIC}: ${result.errorMessage ?? Errors.message(result.errorCode)}`
    )
}

/** PRODUCER_FENCED exists from these versions on (KIP-588); older ones get INVALID_PRODUCER_EPOCH. */
const fenced = (errorCode: number, apiVersion: number, firstVersion: number): number =>
  errorCode === E.PRODUCER_FENCED && apiVersion < firstVersion ? E.INVALID_PRODUCER_EPOCH : errorCode

/**
 * Registers the transaction APIs. FindCoordinator and InitProducerId wrap the handlers registered
 * before (the group coordinator's and the idempotent producer's), answering only key type 1 and
 * transactional ids.
 */
export const register = (
  handlers: Handlers,
  ctx: BrokerContext,
  txn: TransactionCoordinator,
  ensureTopic?: () => Promise<void>
): Handlers => {
  let creating: Promise<void> | undefined
  const offsetsPartition = (groupId: string) =>
    Hashing.groupCoordinatorPartition(groupId, Math.max(1, ctx.view.topicByName(OFFSETS_TOPIC)?.partitions.length ?? 1))
  const partitionExists = (topic: string, partition: number) =>
    (ctx.view.topicByName(topic)?.partitions.length ?? 0) > partition && partition >= 0

  const findTxnCoordinator = (key: string, listenerName: string) => {
    const topic = ctx.view.topicByName(TRANSACTION_STATE_TOPIC)
    if (topic === undefined && ensureTopic !== undefined && creating === undefined)
      creating = ensureTopic()
        .catch(() => {})
        .finally(() => {
          creating = undefined
        })
    const leader = topic?.partitions[txn.partitionFor(key)]?.leader ?? -1
    const node = leader >= 0 ? ctx.view.broker(leader, listenerName) : undefined
    return node === undefined
      ? { key, nodeId: -1, host: "", port: -1, errorCode: E.COORDINATOR_NOT_AVAILABLE, errorMessage: null }
      : { key, nodeId: node.nodeId, host: node.host, port: node.port, errorCode: 0, errorMessage: null }
  }

  handlers.wrap(FindCoordinator.api, (next) => (req, request) => {
    if (request.keyType !== 1) return next(req, request)
    const listener = req.connection.listenerName
    if (req.apiVersion >= 4)
      return { throttleTimeMs: 0, coordinators: request.coordinatorKeys.map((k) => findTxnCoordinator(k, listener)) }
    const a = findTxnCoordinator(request.key, listener)
    return {
      throttleTimeMs: 0,
      errorCode: a.errorCode,
      errorMessage: a.errorMessage,
      nodeId: a.nodeId,
      host: a.host,
      port: a.port
    }
  })

  handlers.wrap(InitProducerId.api, (next) => async (req, request) => {
    if (request.transactionalId === null) return next(req, request)
    if (request.transactionalId === "")
      return { throttleTimeMs: 0, errorCode: E.INVALID_REQUEST, producerId: -1n, producerEpoch: -1 }
    const r = await txn.initProducerId({
      transactionalId: request.transactionalId,
      transactionTimeoutMs: request.transactionTimeoutMs,
      producerId: req.apiVersion >= 3 ? request.producerId : -1n,
      producerEpoch: req.apiVersion >= 3 ? request.producerEpoch : -1
    })
    return {
      throttleTimeMs: 0,
      errorCode: fenced(r.errorCode, req.apiVersion, 4),
      producerId: r.producerId,
      producerEpoch: r.producerEpoch
    }
  })

  handlers
    .register(AddPartitionsToTxn.api, async (req, request) => {
      /** One transaction's partitions: unknown ones refused, the others added (or verified) together. */
      const one = async (t: {
        readonly transactionalId: string
        readonly producerId: bigint
        readonly producerEpoch: number
        readonly verifyOnly: boolean
        readonly topics: ReadonlyArray<{ readonly name: string; readonly partitions: ReadonlyArray<number> }>
      }) => {
        const input = {
          transactionalId: t.transactionalId,
          producerId: t.producerId,
          producerEpoch: t.producerEpoch,
          partitions: t.topics.map((x) => ({ topic: x.name, partitions: x.partitions }))
        }
        const unknown = t.topics.some((x) => x.partitions.some((p) => !partitionExists(x.name, p)))
        const codes = new Map<string, number>()
        const key = (topic: string, p: number) => `${topic}\u0000${p}`
        if (t.verifyOnly) for (const v of txn.verifyPartitions(input)) codes.set(key(v.topic, v.partition), v.errorCode)
        else {
          const code = unknown ? E.OPERATION_NOT_ATTEMPTED : fenced(await txn.addPartitions(input), req.apiVersion, 2)
          for (const x of t.topics)
            for (const p of x.partitions)
              codes.set(key(x.name, p), partitionExists(x.name, p) ? code : E.UNKNOWN_TOPIC_OR_PARTITION)
        }
        return t.topics.map((x) => ({
          name: x.name,
          resultsByPartition: x.partitions.map((p) => ({
            partitionIndex: p,
            partitionErrorCode: codes.get(key(x.name, p)) ?? E.UNKNOWN_SERVER_ERROR
          }))
        }))
      }
      if (req.apiVersion <= 3)
        return {
          throttleTimeMs: 0,
          resultsByTopicV3AndBelow: await one({
            transactionalId: request.v3AndBelowTransactionalId,
            producerId: request.v3AndBelowProducerId,
            producerEpoch: request.v3AndBelowProducerEpoch,
            verifyOnly: false,
            topics: request.v3AndBelowTopics
          })
        }
      // not a fan-out: the transactions of one request, each decided on this broker's own shards
      const results = await Promise.all(
        request.transactions.map(async (t) => ({ transactionalId: t.transactionalId, topicResults: await one(t) }))
      )
      return { throttleTimeMs: 0, errorCode: 0, resultsByTransaction: results }
    })
    .register(AddOffsetsToTxn.api, async (req, request) => ({
      throttleTimeMs: 0,
      errorCode: fenced(
        await txn.addPartitions({
          transactionalId: request.transactionalId,
          producerId: request.producerId,
          producerEpoch: request.producerEpoch,
          partitions: [{ topic: OFFSETS_TOPIC, partitions: [offsetsPartition(request.groupId)] }]
        }),
        req.apiVersion,
        2
      )
    }))
    .register(EndTxn.api, async (req, request) => {
      const r = await txn.endTxn({
        transactionalId: request.transactionalId,
        producerId: request.producerId,
        producerEpoch: request.producerEpoch,
        committed: request.committed,
        transactionsV2: req.apiVersion >= 5
      })
      return {
        throttleTimeMs: 0,
        errorCode: fenced(r.errorCode, req.apiVersion, 2),
        producerId: r.producerId,
        producerEpoch: r.producerEpoch
      }
    })
    .register(ListTransactions.api, (_req, request) => {
      const known = new Set<string>(TransactionStates)
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        unknownStateFilters: request.stateFilters.filter((s) => !known.has(s)),
        transactionStates: txn
          .listTransactions({
            states: request.stateFilters,
            producerIds: request.producerIdFilters,
            durationMs: Number(request.durationFilter)
          })
          .map((t) => ({ transactionalId: t.transactionalId, producerId: t.producerId, transactionState: t.state }))
      }
    })
    .register(DescribeTransactions.api, (_req, request) => ({
      throttleTimeMs: 0,
      transactionStates: request.transactionalIds.map((id) => {
        const { errorCode, metadata: m } = txn.describe(id)
        return {
          errorCode,
          transactionalId: id,
          transactionState: m?.state ?? "",
          transactionTimeoutMs: m?.timeoutMs ?? -1,
          transactionStartTimeMs: BigInt(m?.startTimestampMs ?? -1),
          producerId: m?.producerId ?? -1n,
          producerEpoch: m?.producerEpoch ?? -1,
          topics: (m?.partitions ?? []).map((t) => ({ topic: t.topic, partitions: [...t.partitions] }))
        }
      })
    }))
  return handlers
}
