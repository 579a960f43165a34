/**
 * The consumer-group side of the broker: the `__consumer_offsets` topic as the log of the group
 * coordinators (`@clustermirror/group-coordinator`), and the handlers of FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
 * OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups, DeleteGroups: wire ↔ coordinator.
 */
import {
  DeleteGroups,
  ConsumerGroupDescribe,
  ConsumerGroupHeartbeat,
  DescribeGroups,
  Errors,
  FindCoordinator,
  GroupRecords,
  Heartbeat,
  JoinGroup,
  LeaveGroup,
  ListGroups,
  OffsetCommit,
  OffsetDelete,
  OffsetFetch,
  SyncGroup,
  TxnOffsetCommit,
  Uuid
} from "@clustermirror/protocol"
import { ConsumerGroupWire as Wire, GroupShards } from "@clustermirror/group-coordinator"
import type { BrokerContext } from "./KafkaApis.js"
import type { Handlers } from "@clustermirror/network/RequestChannel"
import * as CoordinatorLogs from "@clustermirror/replication/CoordinatorLogs"

export const OFFSETS_TOPIC = "__consumer_offsets"

/**
 * The group coordinators of this broker, one shard per `__consumer_offsets` partition it leads
 * (reloaded per leader epoch), on this broker's partition logs.
 */
export const shards = (ctx: BrokerContext, log: (line: string) => void): GroupShards.GroupShards =>
  new GroupShards.GroupShards({
    log: CoordinatorLogs.makeTransactional({
      replicas: ctx.replicas,
      nodeId: ctx.config.nodeId,
      topic: OFFSETS_TOPIC,
      codec: GroupRecords
    }),
    partitionCount: () => ctx.view.topicByName(OFFSETS_TOPIC)?.partitions.length ?? 1,
    config: () => ({
      groupInitialRebalanceDelayMs: ctx.config.groupInitialRebalanceDelayMs,
      groupMinSessionTimeoutMs: ctx.config.groupMinSessionTimeoutMs,
      groupMaxSessionTimeoutMs: ctx.config.groupMaxSessionTimeoutMs
    }),
    consumer: {
      config: {
        sessionTimeoutMs: ctx.config.groupConsumerSessionTimeoutMs,
        heartbeatIntervalMs: ctx.config.groupConsumerHeartbeatIntervalMs,
        assignors: ctx.config.groupConsumerAssignors,
        maxSize: ctx.config.groupConsumerMaxSize,
        migrationPolicy: ctx.config.groupConsumerMigrationPolicy
      },
      topics: () =>
        [...ctx.view.topics()].map((t) => ({ name: t.name, topicId: t.topicId, partitions: t.partitions.length }))
    },
    onLoadFailed: (partition, message) =>
      log(`${OFFSETS_TOPIC}-${partition} not loaded, its groups have no coordinator here: ${message}`)
  })

/** Creates `__consumer_offsets` through the topic admin when it does not exist yet. */
export const ensureOffsetsTopic = async (ctx: BrokerContext, replicationFactor: number): Promise<void> => {
  if (ctx.view.topicByName(OFFSETS_TOPIC) !== undefined) return
  const [result] = await ctx.admin.createTopics(
    [
      {
        name: OFFSETS_TOPIC,
        numPartitions: ctx.config.offsetsTopicNumPartitions,
        replicationFactor,
        assignments: [],
        configs: [
          { name: "cleanup.policy", value: "compact" },
          { name: "compression.type", value: "producer" },
          { name: "segment.bytes", value: String(ctx.config.offsetsTopicSegmentBytes) }
        ],
        topicId: null
      }
    ],
    false
  )
  if (result !== undefined && result.errorCode !== 0 && result.errorCode !== Errors.ErrorCode.TOPIC_ALREADY_EXISTS)
    throw new Error(`cannot create ${OFFSETS_TOPIC}: ${result.errorMessage ?? Errors.message(result.errorCode)}`)
}

const E = Errors.ErrorCode

/**
 * `ensureOffsetsTopic` is called when a client looks for a coordinator before `__consumer_offsets`
 * exists (a cluster creates it lazily, as Kafka does); meanwhile the answer is COORDINATOR_NOT_AVAILABLE.
 */
export const register = (
  handlers: Handlers,
  ctx: BrokerContext,
  shards: GroupShards.GroupShards,
  ensureOffsetsTopic?: () => Promise<void>
): Handlers => {
  let creating: Promise<void> | undefined
  const topicName = (name: string, topicId: string) => (name !== "" ? name : (ctx.view.topicById(topicId)?.name ?? ""))
  const topicIdOf = (name: string) => ctx.view.topicByName(name)?.topicId ?? Uuid.ZERO
  /** The coordinator of a group, or one that answers NOT_COORDINATOR so the client looks it up again. */
  const coordinatorOf = async (groupId: string): Promise<GroupShards.GroupRequests> => {
    const c = shards.forGroup(groupId)
    return c === undefined ? GroupShards.notCoordinatorAnswers : await c
  }

  handlers
    .register(FindCoordinator.api, (req, request) => {
      const answer = (key: string, keyType: number) => {
        if (keyType === 0) {
          const topic = ctx.view.topicByName(OFFSETS_TOPIC)
          if (topic === undefined && ensureOffsetsTopic !== undefined && creating === undefined)
            creating = ensureOffsetsTopic()
              .catch(() => {})
              .finally(() => {
                creating = undefined
              })
          const leader = topic?.partitions[shards.partitionFor(key)]?.leader ?? -1
          const node = leader >= 0 ? ctx.view.broker(leader, req.connection.listenerName) : undefined
          if (node !== undefined)
            return { key, nodeId: node.nodeId, host: node.host, port: node.port, errorCode: 0, errorMessage: null }
        }
        return keyType === 0
          ? { key, nodeId: -1, host: "", port: -1, errorCode: E.COORDINATOR_NOT_AVAILABLE, errorMessage: null }
          : {
              key,
              nodeId: -1,
              host: "",
              port: -1,
              errorCode: E.COORDINATOR_NOT_AVAILABLE,
              errorMessage: "Transactions are not supported by this broker yet"
            }
      }
      if (req.apiVersion >= 4) {
        return { throttleTimeMs: 0, coordinators: request.coordinatorKeys.map((k) => answer(k, request.keyType)) }
      }
      const a = answer(request.key, request.keyType)
      return {
        throttleTimeMs: 0,
        errorCode: a.errorCode,
        errorMessage: a.errorMessage,
        nodeId: a.nodeId,
        host: a.host,
        port: a.port
      }
    })
    .register(
      JoinGroup.api,
      async (req, request) => {
        const r = await (await coordinatorOf(request.groupId)).joinGroup({
          groupId: request.groupId,
          memberId: request.memberId,
          groupInstanceId: request.groupInstanceId,
          protocolType: request.protocolType,
          protocols: request.protocols.map((p) => ({ name: p.name, metadata: p.metadata })),
          sessionTimeoutMs: request.sessionTimeoutMs,
          rebalanceTimeoutMs: req.apiVersion >= 1 ? request.rebalanceTimeoutMs : request.sessionTimeoutMs,
          clientId: req.clientId ?? "",
          clientHost: `/${req.connection.remoteHost}`,
          requireKnownMemberId: req.apiVersion >= 4,
          reason: request.reason
        })
        return {
          throttleTimeMs: 0,
          errorCode: r.errorCode,
          generationId: r.generationId,
          protocolType: r.protocolType,
          protocolName: req.apiVersion >= 7 ? r.protocolName : (r.protocolName ?? ""),
          leader: r.leader,
          skipAssignment: r.skipAssignment,
          memberId: r.memberId,
          members: r.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            metadata: m.metadata
          }))
        }
      },
      { min: 0, max: JoinGroup.api.maxVersion }
    )
    .register(SyncGroup.api, async (req, request) => {
      const r = await (await coordinatorOf(request.groupId)).syncGroup({
        groupId: request.groupId,
        generationId: request.generationId,
        memberId: request.memberId,
        groupInstanceId: request.groupInstanceId,
        protocolType: req.apiVersion >= 5 ? request.protocolType : null,
        protocolName: req.apiVersion >= 5 ? request.protocolName : null,
        assignments: request.assignments.map((a) => ({ memberId: a.memberId, assignment: a.assignment }))
      })
      return {
        throttleTimeMs: 0,
        errorCode: r.errorCode,
        protocolType: r.protocolType,
        protocolName: r.protocolName,
        assignment: r.assignment
      }
    })
    .register(Heartbeat.api, async (_req, request) => ({
      throttleTimeMs: 0,
      errorCode: (
        await (
          await coordinatorOf(request.groupId)
        ).heartbeat({
          groupId: request.groupId,
          generationId: request.generationId,
          memberId: request.memberId,
          groupInstanceId: request.groupInstanceId
        })
      ).errorCode
    }))
    .register(LeaveGroup.api, async (req, request) => {
      const members =
        req.apiVersion >= 3
          ? request.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, reason: m.reason }))
          : [{ memberId: request.memberId, groupInstanceId: null }]
      const r = await (await coordinatorOf(request.groupId)).leaveGroup({ groupId: request.groupId, members })
      const single = r.members[0]?.errorCode ?? 0
      return {
        throttleTimeMs: 0,
        errorCode: req.apiVersion >= 3 || r.errorCode !== 0 ? r.errorCode : single,
        members: r.members.map((m) => ({
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          errorCode: m.errorCode
        }))
      }
    })
    .register(
      OffsetCommit.api,
      async (req, request) => {
        const topics = request.topics.map((t) => ({ ...t, resolved: topicName(t.name, t.topicId) }))
        const r = await (await coordinatorOf(request.groupId)).commitOffsets({
          apiVersion: req.apiVersion,
          groupId: request.groupId,
          generationId: request.generationIdOrMemberEpoch,
          memberId: request.memberId,
          groupInstanceId: request.groupInstanceId,
          topics: topics.map((t) => ({
            name: t.resolved,
            partitions: t.partitions.map((p) => ({
              partitionIndex: p.partitionIndex,
              committedOffset: p.committedOffset,
              committedLeaderEpoch: p.committedLeaderEpoch,
              committedMetadata: p.committedMetadata
            }))
          }))
        })
        return {
          throttleTimeMs: 0,
          topics: r.topics.map((t, i) => ({
            name: topics[i]?.name ?? t.name,
            topicId: topics[i]?.topicId ?? Uuid.ZERO,
            partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: p.errorCode }))
          }))
        }
      },
      { min: 0, max: OffsetCommit.api.maxVersion }
    )
    .register(TxnOffsetCommit.api, async (_req, request) => ({
      throttleTimeMs: 0,
      topics: (await (await coordinatorOf(request.groupId)).commitTransactionalOffsets(request)).topics
    }))
    .register(
      OffsetFetch.api,
      async (req, request) => {
        const fetchOne = async (
          groupId: string,
          topics: ReadonlyArray<{ name: string; topicId: string; partitionIndexes: ReadonlyArray<number> }> | null
        ) => {
          const r = await (await coordinatorOf(groupId)).fetchOffsets({
            groupId,
            requireStable: request.requireStable,
            topics:
              topics === null
                ? null
                : topics.map((t) => ({ name: topicName(t.name, t.topicId), partitionIndexes: t.partitionIndexes }))
          })
          return {
            errorCode: r.errorCode,
            topics: r.topics.map((t) => ({
              name: t.name,
              topicId: topicIdOf(t.name),
              partitions: t.partitions.map((p) => ({
                partitionIndex: p.partitionIndex,
                committedOffset: p.committedOffset,
                committedLeaderEpoch: p.committedLeaderEpoch,
                metadata: p.metadata,
                errorCode: p.errorCode
              }))
            }))
          }
        }
        if (req.apiVersion >= 8) {
          const groups = await Promise.all(
            request.groups.map(async (g) => ({ groupId: g.groupId, ...(await fetchOne(g.groupId, g.topics)) }))
          )
          return { throttleTimeMs: 0, groups }
        }
        const one = await fetchOne(
          request.groupId,
          request.topics === null
            ? null
            : request.topics.map((t) => ({ name: t.name, topicId: Uuid.ZERO, partitionIndexes: t.partitionIndexes }))
        )
        return { throttleTimeMs: 0, errorCode: one.errorCode, topics: one.topics }
      },
      { min: 0, max: OffsetFetch.api.maxVersion }
    )
    .register(ConsumerGroupHeartbeat.api, async (req, r) =>
      Wire.heartbeatResponse(
        await (await coordinatorOf(r.groupId)).consumerGroupHeartbeat(
          Wire.heartbeatRequest(req.apiVersion, r, req.clientId ?? "", `/${req.connection.remoteHost}`)
        )
      )
    )
    .register(ConsumerGroupDescribe.api, async (_req, r) =>
      Wire.describeResponse(await shards.describeConsumerGroups(r.groupIds))
    )
    .register(ListGroups.api, async (_req, request) => ({
      throttleTimeMs: 0,
      errorCode: 0,
      groups: await shards.listGroups({ statesFilter: request.statesFilter, typesFilter: request.typesFilter })
    }))
    .register(DescribeGroups.api, async (req, request) => {
      const groups = await shards.describeGroups(request.groups)
      return {
        throttleTimeMs: 0,
        groups: groups.map((g) => ({
          errorCode: req.apiVersion < 6 && g.errorCode === E.GROUP_ID_NOT_FOUND ? 0 : g.errorCode,
          errorMessage: g.errorCode === E.GROUP_ID_NOT_FOUND ? `Group ${g.groupId} not found.` : null,
          groupId: g.groupId,
          groupState: g.groupState,
          protocolType: g.protocolType,
          protocolData: g.protocolData,
          members: g.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.groupInstanceId,
            clientId: m.clientId,
            clientHost: m.clientHost,
            memberMetadata: m.memberMetadata,
            memberAssignment: m.memberAssignment
          })),
          authorizedOperations: -2147483648
        }))
      }
    })
    .register(DeleteGroups.api, async (_req, r) => ({
      throttleTimeMs: 0,
      results: await shards.deleteGroups(r.groupsNames)
    }))
    // Partitions the metadata does not know answer UNKNOWN_TOPIC_OR_PARTITION beside the coordinator's answer.
    .register(OffsetDelete.api, async (_req, request) => {
      const split = (known: boolean) =>
        request.topics
          .map((t) => ({
            name: t.name,
            partitions: t.partitions.filter(
              (p) => (ctx.view.topicByName(t.name)?.partitions[p.partitionIndex] !== undefined) === known
            )
          }))
          .filter((t) => t.partitions.length > 0)
      const r = await shards.deleteOffsets({ groupId: request.groupId, topics: split(true) })
      const unknown = split(false).map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ ...p, errorCode: E.UNKNOWN_TOPIC_OR_PARTITION }))
      }))
      return { throttleTimeMs: 0, errorCode: r.errorCode, topics: r.errorCode !== 0 ? [] : [...unknown, ...r.topics] }
    })
  return handlers
}
