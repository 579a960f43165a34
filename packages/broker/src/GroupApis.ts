/**
 * The consumer-group side of the broker: the `__consumer_offsets` topic as the group coordinator's
 * log, and the handlers of FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
 * OffsetCommit, OffsetFetch, ListGroups and DescribeGroups, translating wire ↔ coordinator.
 */
import {
  DescribeGroups,
  Errors,
  FindCoordinator,
  Hashing,
  Heartbeat,
  JoinGroup,
  LeaveGroup,
  ListGroups,
  OffsetCommit,
  OffsetFetch,
  RecordBatch,
  SyncGroup,
  Uuid
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as GroupCoordinator from "./GroupCoordinator.js"
import type { BrokerContext } from "./KafkaApis.js"
import type { Handlers } from "./RequestChannel.js"
import * as TopicControl from "./TopicControl.js"

export const OFFSETS_TOPIC = "__consumer_offsets"

/** The group id of a `__consumer_offsets` key: both key types start with it as an int16-length string. */
const groupOfKey = (key: Buffer): string => {
  const len = key.readInt16BE(2)
  return key.toString("utf8", 4, 4 + len)
}

/** The coordinator's log: each group's records go to its `__consumer_offsets` partition. */
const offsetsLog = (ctx: BrokerContext, partitions: number): GroupCoordinator.GroupLog => ({
  append: async (records) => {
    const byPartition = new Map<number, Array<{ key: Buffer; value: Buffer | null }>>()
    for (const r of records) {
      const p = Hashing.groupCoordinatorPartition(groupOfKey(r.key), partitions)
      let list = byPartition.get(p)
      if (list === undefined) byPartition.set(p, (list = []))
      list.push(r)
    }
    for (const [p, rs] of byPartition) {
      const batch = RecordBatch.build({ records: rs, timestamp: Date.now() })
      const result = await ctx.replicas.appendAsLeader(OFFSETS_TOPIC, p, batch, false)
      if (result.errorCode !== 0)
        throw new Error(`append to ${OFFSETS_TOPIC}-${p} failed: ${Errors.message(result.errorCode)}`)
    }
  },
  readAll: function* () {
    for (let p = 0; p < partitions; p++) {
      const state = ctx.replicas.get(OFFSETS_TOPIC, p)
      if (state === undefined) continue
      const log = state.log
      let offset = log.logStartOffset
      while (offset < log.logEndOffset) {
        const { records } = log.read(offset, 4 * 1024 * 1024, { minOneMessage: true })
        const { batches } = RecordBatch.split(records)
        if (batches.length === 0) break
        for (const b of batches) {
          const batch = records.subarray(b.position, b.position + b.size)
          offset = RecordBatch.lastOffset(batch) + 1
          if (RecordBatch.isControl(batch)) continue
          const decoded = RecordBatch.records(batch)
          if (Either.isLeft(decoded)) throw new Error(`corrupt batch in ${OFFSETS_TOPIC}-${p}: ${decoded.left.message}`)
          for (const r of decoded.right)
            if (r.key !== null) yield { key: Buffer.from(r.key), value: r.value === null ? null : Buffer.from(r.value) }
        }
      }
    }
  }
})

const ensureOffsetsTopic = (ctx: BrokerContext): void => {
  if (TopicControl.topicByName(ctx.metadata.image, OFFSETS_TOPIC) !== undefined) return
  const [result] = ctx.metadata.write((image) =>
    TopicControl.createTopics(
      image,
      [
        {
          name: OFFSETS_TOPIC,
          numPartitions: ctx.config.offsetsTopicNumPartitions,
          replicationFactor: 1,
          assignments: [],
          configs: [
            { name: "cleanup.policy", value: "compact" },
            { name: "compression.type", value: "producer" },
            { name: "segment.bytes", value: "104857600" }
          ],
          topicId: null
        }
      ],
      { liveBrokers: [ctx.config.nodeId], defaultPartitions: 1, defaultReplicationFactor: 1 },
      Uuid.random,
      false
    )
  )
  if (result === undefined || result.errorCode !== 0)
    throw new Error(`cannot create ${OFFSETS_TOPIC}: ${result?.errorMessage ?? "unknown error"}`)
}

const E = Errors.ErrorCode

export const register = async (
  handlers: Handlers,
  ctx: BrokerContext
): Promise<{ readonly coordinator: GroupCoordinator.GroupCoordinator; readonly close: () => Promise<void> }> => {
  ensureOffsetsTopic(ctx)
  const partitions = TopicControl.topicByName(ctx.metadata.image, OFFSETS_TOPIC)!.partitions.length
  const coordinator = await GroupCoordinator.make({
    log: offsetsLog(ctx, partitions),
    config: {
      groupInitialRebalanceDelayMs: ctx.config.groupInitialRebalanceDelayMs,
      groupMinSessionTimeoutMs: ctx.config.groupMinSessionTimeoutMs,
      groupMaxSessionTimeoutMs: ctx.config.groupMaxSessionTimeoutMs
    }
  })
  const self = { nodeId: ctx.config.nodeId, host: ctx.config.advertisedHost, port: ctx.config.port }
  const topicName = (name: string, topicId: string) =>
    name !== "" ? name : (ctx.metadata.image.byId.get(topicId)?.name ?? "")
  const topicIdOf = (name: string) => TopicControl.topicByName(ctx.metadata.image, name)?.topicId ?? Uuid.ZERO

  handlers
    .register(FindCoordinator.api, (req, request) => {
      const answer = (key: string, keyType: number) =>
        keyType === 0
          ? { key, ...self, errorCode: 0, errorMessage: null }
          : {
              key,
              nodeId: -1,
              host: "",
              port: -1,
              errorCode: E.COORDINATOR_NOT_AVAILABLE,
              errorMessage: "Transactions are not supported by this broker yet"
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
        const r = await coordinator.joinGroup({
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
      const r = await coordinator.syncGroup({
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
        await coordinator.heartbeat({
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
      const r = await coordinator.leaveGroup({ groupId: request.groupId, members })
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
      async (_req, request) => {
        const topics = request.topics.map((t) => ({ ...t, resolved: topicName(t.name, t.topicId) }))
        const r = await coordinator.commitOffsets({
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
    .register(
      OffsetFetch.api,
      async (req, request) => {
        const fetchOne = async (
          groupId: string,
          topics: ReadonlyArray<{ name: string; topicId: string; partitionIndexes: ReadonlyArray<number> }> | null
        ) => {
          const r = await coordinator.fetchOffsets({
            groupId,
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
    .register(ListGroups.api, async (_req, request) => {
      const groups = await coordinator.listGroups({
        statesFilter: request.statesFilter,
        typesFilter: request.typesFilter
      })
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        groups: groups.map((g) => ({
          groupId: g.groupId,
          protocolType: g.protocolType,
          groupState: g.groupState,
          groupType: g.groupType
        }))
      }
    })
    .register(DescribeGroups.api, async (req, request) => {
      const groups = await coordinator.describeGroups(request.groups)
      return {
        throttleTimeMs: 0,
        groups: groups.map((g) => ({
          errorCode: req.apiVersion < 6 && g.errorCode === E.GROUP_ID_NOT_FOUND ? 0 : g.errorCode,
          errorMessage: null,
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
  return { coordinator, close: () => coordinator.close() }
}
