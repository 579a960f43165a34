/**
 * DescribeTopicPartitions (75, KIP-966) on a broker, as Kafka 4.4 answers it: topics' partitions from the
 * broker's metadata view, in pages of at most `responsePartitionLimit` partitions (capped by
 * `max.request.partition.size.limit`), resumed from the request's cursor. Its DESCRIBE check is its own,
 * not a wrapper of `Authorization`: an all-topics request pages over the topics the principal may
 * describe, so the check has to run before the limit cuts. This module reads the view and writes nothing.
 */
import { Acl, StandardAuthorizer } from "@clustermirror/authorizer"
import { DescribeTopicPartitions, Errors, Uuid } from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"
import { identityOf } from "./Authorization.js"

type Response = DescribeTopicPartitions.Response
type ResponseTopic = Response["topics"][number]
type ResponsePartition = ResponseTopic["partitions"][number]

const E = Errors.ErrorCode
const UNSET_OPS = -2147483648

/** What the handler reads of the broker's metadata view (the broker's `MetadataView` has it). */
export interface TopicPartitionsView {
  readonly topicByName: (name: string) => TopicDescription | undefined
  readonly topics: () => Iterable<TopicDescription>
  /** A live broker's endpoint on `listenerName`; undefined when it is not registered, fenced or without it. */
  readonly broker: (id: number, listenerName: string) => unknown
}

export interface TopicDescription {
  readonly name: string
  readonly topicId: string
  readonly partitions: ReadonlyArray<{
    readonly partitionId: number
    readonly leader: number
    readonly leaderEpoch: number
    readonly replicas: ReadonlyArray<number>
    readonly isr: ReadonlyArray<number>
  }>
}

/** Who asks: which topics they may describe, and a topic's authorized-operations bit set. */
export interface TopicAccess {
  readonly mayDescribe: (topic: string) => boolean
  readonly operations: (topic: string) => number
}

/** Every topic operation, as Kafka reports them on a broker without an authorizer. */
export const ALL_TOPIC_OPERATIONS = (StandardAuthorizer.SUPPORTED_OPERATIONS.get(Acl.ResourceType.TOPIC) ?? []).reduce(
  (bits, op) => bits | (1 << op),
  0
)

/** The access of a broker without an authorizer: every topic, every operation. */
export const allowAll: TopicAccess = { mayDescribe: () => true, operations: () => ALL_TOPIC_OPERATIONS }

export interface DescribeContext {
  readonly view: TopicPartitionsView
  /** The listener the request came in on: leaders and replicas without an endpoint there are offline. */
  readonly listenerName: string
  /** `max.request.partition.size.limit`. */
  readonly maxPartitions: number
  readonly internalTopics: ReadonlySet<string>
  readonly access: TopicAccess
}

/** Kafka's legal topic names (`Topic.validate`). */
const legalTopicName = (name: string): boolean =>
  name.length > 0 && name.length <= 249 && name !== "." && name !== ".." && /^[a-zA-Z0-9._-]+$/.test(name)

/** Kafka's answer to a request it cannot serve: each named topic with the error, nothing else. */
const refuseAll = (request: DescribeTopicPartitions.Request, errorCode: number): Response => ({
  throttleTimeMs: 0,
  topics: request.topics.map((t) => ({
    errorCode,
    name: t.name,
    topicId: Uuid.ZERO,
    isInternal: false,
    partitions: [],
    topicAuthorizedOperations: UNSET_OPS
  })),
  nextCursor: null
})

/**
 * The answer to one request. An empty topic list asks for every topic the principal may describe (the
 * others left out); named topics are answered once each, UNKNOWN_TOPIC_OR_PARTITION (or
 * INVALID_TOPIC_EXCEPTION) for one the view does not hold and TOPIC_AUTHORIZATION_FAILED, after the
 * others, for one the principal may not describe. Topics go by name, partitions by index, from the
 * cursor on (a named request must name the cursor's topic: INVALID_REQUEST otherwise, or for a negative
 * cursor partition). When the limit cuts, `nextCursor` names the first partition left out.
 */
export const describe = (ctx: DescribeContext, request: DescribeTopicPartitions.Request): Response => {
  const all = request.topics.length === 0
  const { cursor } = request
  const from = cursor?.topicName ?? ""
  const asked = new Set(
    (all ? [...ctx.view.topics()].map((t) => t.name) : request.topics.map((t) => t.name)).filter((n) => n >= from)
  )
  if (cursor !== null && ((!all && !asked.has(cursor.topicName)) || cursor.partitionIndex < 0))
    return refuseAll(request, E.INVALID_REQUEST)
  const refused: Array<ResponseTopic> = []
  const names = [...asked].sort().filter((name) => {
    const ok = ctx.access.mayDescribe(name)
    if (!ok && !all)
      refused.push({
        errorCode: E.TOPIC_AUTHORIZATION_FAILED,
        name,
        topicId: Uuid.ZERO,
        isInternal: false,
        partitions: [],
        topicAuthorizedOperations: UNSET_OPS
      })
    return ok
  })
  const online = (id: number) => ctx.view.broker(id, ctx.listenerName) !== undefined
  let remaining = Math.max(Math.min(ctx.maxPartitions, request.responsePartitionLimit), 1)
  const topics: Array<ResponseTopic> = []
  let nextCursor: Response["nextCursor"] = null
  for (const name of names) {
    if (remaining === 0) {
      nextCursor = { topicName: name, partitionIndex: 0 }
      break
    }
    const topic = ctx.view.topicByName(name)
    if (topic === undefined) {
      if (!all)
        topics.push({
          errorCode: legalTopicName(name) ? E.UNKNOWN_TOPIC_OR_PARTITION : E.INVALID_TOPIC_EXCEPTION,
          name,
          topicId: Uuid.ZERO,
          isInternal: ctx.internalTopics.has(name),
          partitions: [],
          topicAuthorizedOperations: ctx.access.operations(name)
        })
      continue
    }
    const byIndex = new Map(topic.partitions.map((p) => [p.partitionId, p]))
    const start = cursor !== null && name === cursor.topicName ? cursor.partitionIndex : 0
    const upper = Math.min(topic.partitions.length, start + remaining)
    const partitions: Array<ResponsePartition> = []
    for (let i = start; i < upper; i++) {
      const p = byIndex.get(i)
      if (p === undefined) continue
      partitions.push({
        errorCode: 0,
        partitionIndex: i,
        leaderId: online(p.leader) ? p.leader : -1,
        leaderEpoch: p.leaderEpoch,
        replicaNodes: p.replicas,
        isrNodes: p.isr,
        // No eligible leader replicas (KIP-966's ELR is not enabled): empty lists, as Kafka sends then.
        eligibleLeaderReplicas: [],
        lastKnownElr: [],
        offlineReplicas: p.replicas.filter((r) => !online(r))
      })
    }
    topics.push({
      errorCode: 0,
      name,
      topicId: topic.topicId,
      isInternal: ctx.internalTopics.has(name),
      partitions,
      topicAuthorizedOperations: ctx.access.operations(name)
    })
    if (upper < topic.partitions.length) {
      nextCursor = { topicName: name, partitionIndex: upper }
      break
    }
    remaining -= partitions.length
  }
  return { throttleTimeMs: 0, topics: [...topics, ...refused], nextCursor }
}

export interface ApiContext {
  readonly view: TopicPartitionsView
  /** The config in force (read per request). */
  readonly config: { readonly maxRequestPartitionSizeLimit: number }
}

/** Registers DescribeTopicPartitions on a broker; `authorizer` undefined without `authorizer.class.name`. */
export const register = (
  handlers: Handlers,
  ctx: ApiContext,
  options: {
    readonly internalTopics: ReadonlySet<string>
    readonly authorizer: (() => StandardAuthorizer.StandardAuthorizer) | undefined
  }
): Handlers =>
  handlers.register(DescribeTopicPartitions.api, (req, request) => {
    const az = options.authorizer?.()
    const id = identityOf(req.connection)
    const access: TopicAccess =
      az === undefined
        ? allowAll
        : {
            mayDescribe: (topic) => az.authorize(id, Acl.AclOperation.DESCRIBE, Acl.ResourceType.TOPIC, topic),
            operations: (topic) => az.authorizedOperations(id, Acl.ResourceType.TOPIC, topic)
          }
    return describe(
      {
        view: ctx.view,
        listenerName: req.connection.listenerName,
        maxPartitions: ctx.config.maxRequestPartitionSizeLimit,
        internalTopics: options.internalTopics,
        access
      },
      request
    )
  })
