/**
 * The requests of the mirror-level sync (KIP-1279 §5.9 step c) over a `ClusterClient.Client`: topic
 * configs (DescribeConfigs, IncrementalAlterConfigs), consumer groups (ListGroups on every broker,
 * FindCoordinator, DescribeGroups and ConsumerGroupDescribe, OffsetFetch, OffsetCommit in the admin form) and the bounds of
 * partition logs (ListOffsets, OffsetForLeaderEpoch), and ACLs (DescribeAcls, CreateAcls, DeleteAcls). Each call is written to work with any version the
 * peer negotiates, so a real Apache Kafka source answers as well as ours.
 *
 * Translation only: what to copy, skip or clamp is decided in `MirrorSync`.
 */
import { Acl } from "@clustermirror/authorizer"
import { ClientError, ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  ConsumerGroupDescribe,
  CreateAcls,
  DeleteAcls,
  DescribeAcls,
  DescribeConfigs,
  DescribeGroups,
  Errors,
  FindCoordinator,
  IncrementalAlterConfigs,
  ListGroups,
  OffsetCommit,
  OffsetFetch
} from "@clustermirror/protocol"
import { Cause, Effect, Either, Exit } from "effect"
import * as Clock from "./Clock.js"

type Client = ClusterClient.Client

/** The config resource type of a topic. */
export const TOPIC_RESOURCE = 2

/** A failed request, with the Kafka error and what was asked. */
export class SyncRequestError extends Error {
  constructor(
    readonly errorCode: number,
    what: string,
    errorMessage?: string | null
  ) {
    super(`${what}: ${errorMessage ?? Errors.message(errorCode)}`)
  }
}

export interface ConfigEntry {
  readonly name: string
  readonly value: string | null
  /** Kafka's ConfigSource (1 = DYNAMIC_TOPIC_CONFIG). */
  readonly source: number
}

/** A topic's configs, or why they could not be described. */
export type TopicConfigs =
  | { readonly _tag: "Configs"; readonly entries: ReadonlyArray<ConfigEntry> }
  | { readonly _tag: "Error"; readonly errorCode: number; readonly message: string }

/** The configs of `topics` in one DescribeConfigs to any broker. */
export const describeTopicConfigs = async (
  client: Client,
  topics: ReadonlyArray<string>
): Promise<ReadonlyMap<string, TopicConfigs>> => {
  const out = new Map<string, TopicConfigs>()
  if (topics.length === 0) return out
  const res = await client.sendToAnyBroker(DescribeConfigs.api, {
    resources: topics.map((resourceName) => ({ resourceType: TOPIC_RESOURCE, resourceName, configurationKeys: null })),
    includeSynonyms: false,
    includeDocumentation: false
  })
  for (const r of res.results)
    out.set(
      r.resourceName,
      r.errorCode !== 0
        ? { _tag: "Error", errorCode: r.errorCode, message: r.errorMessage || Errors.message(r.errorCode) }
        : {
            _tag: "Configs",
            entries: r.configs.map((c) => ({ name: c.name, value: c.value, source: c.configSource }))
          }
    )
  return out
}

/** IncrementalAlterConfigs operations. */
export const ConfigOperation = { SET: 0, DELETE: 1 } as const

export interface ConfigChange {
  readonly name: string
  readonly operation: "SET" | "DELETE"
  readonly value: string | null
}

/** Applies changes per topic in one IncrementalAlterConfigs; per topic the error message, or null. */
export const alterTopicConfigs = async (
  client: Client,
  changes: ReadonlyMap<string, ReadonlyArray<ConfigChange>>
): Promise<ReadonlyMap<string, string | null>> => {
  const out = new Map<string, string | null>()
  if (changes.size === 0) return out
  const res = await client.sendToAnyBroker(IncrementalAlterConfigs.api, {
    resources: [...changes].map(([resourceName, configs]) => ({
      resourceType: TOPIC_RESOURCE,
      resourceName,
      configs: configs.map((c) => ({
        name: c.name,
        configOperation: ConfigOperation[c.operation],
        value: c.value
      }))
    })),
    validateOnly: false
  })
  for (const r of res.responses)
    out.set(r.resourceName, r.errorCode === 0 ? null : r.errorMessage || Errors.message(r.errorCode))
  return out
}

export interface ListedGroup {
  readonly groupId: string
  readonly protocolType: string
}

/** Every group of the cluster: ListGroups to each broker (each lists the groups it coordinates). */
export const listGroups = (client: Client): Promise<ReadonlyArray<ListedGroup>> =>
  Effect.runPromiseExit(
    ClusterClient.fromClient(client)
      .forEachBroker(
        (b) =>
          Effect.tryPromise({
            try: () => client.sendToNode(b.nodeId, ListGroups.api, { statesFilter: [], typesFilter: [] }),
            catch: (e) => e
          }).pipe(
            Effect.flatMap((res) =>
              res.errorCode !== 0
                ? Effect.fail(new SyncRequestError(res.errorCode, `ListGroups on broker ${b.nodeId}`))
                : Effect.succeed(res.groups.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType })))
            )
          ),
        // Every broker must answer: a broker that fails would hide the groups it coordinates.
        (outcomes) => {
          const byId = new Map<string, ListedGroup>()
          for (const { result } of outcomes) {
            if (Either.isLeft(result)) return Either.left(result.left as unknown)
            for (const g of result.right) byId.set(g.groupId, g)
          }
          return Either.right([...byId.values()])
        }
      )
      .pipe(Effect.flatten)
  ).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  })

const FIND_COORDINATOR_ATTEMPTS = 5
const FIND_COORDINATOR_BACKOFF_MS = 200

/**
 * The node coordinating `group` (FindCoordinator in the single-key or the batched layout), asked again
 * a few times while the answer is retriable (the offsets topic being created or loaded).
 */
export const findGroupCoordinator = async (client: Client, group: string): Promise<number> => {
  for (let attempt = 1; ; attempt++) {
    const res = await client.sendToAnyBroker(FindCoordinator.api, {
      key: group,
      keyType: FindCoordinator.KeyType.GROUP,
      coordinatorKeys: [group]
    })
    const batched = res.coordinators.find((c) => c.key === group)
    const errorCode = batched?.errorCode ?? res.errorCode
    const nodeId = batched?.nodeId ?? res.nodeId
    if (errorCode === 0 && nodeId >= 0) return nodeId
    if (!Errors.isRetriable(errorCode) || attempt >= FIND_COORDINATOR_ATTEMPTS)
      throw new SyncRequestError(errorCode, `FindCoordinator ${group}`, batched?.errorMessage ?? res.errorMessage)
    await Clock.sleep(FIND_COORDINATOR_BACKOFF_MS * attempt)
  }
}

/** The states of `groups` at their coordinator `nodeId` ("Dead" for a group it does not know). */
export const describeGroupStates = async (
  client: Client,
  nodeId: number,
  groups: ReadonlyArray<string>
): Promise<ReadonlyMap<string, string>> => {
  const res = await client.sendToNode(nodeId, DescribeGroups.api, { groups, includeAuthorizedOperations: false })
  const out = new Map<string, string>()
  const notClassic: Array<string> = []
  for (const g of res.groups) {
    if (g.errorCode === Errors.ErrorCode.GROUP_ID_NOT_FOUND) {
      out.set(g.groupId, "Dead")
      notClassic.push(g.groupId)
    } else if (g.errorCode !== 0) throw new SyncRequestError(g.errorCode, `DescribeGroups ${g.groupId}`, g.errorMessage)
    else out.set(g.groupId, g.groupState)
  }
  // DescribeGroups does not describe consumer groups of the KIP-848 protocol: ConsumerGroupDescribe does,
  // where the coordinator serves it (a coordinator without it has no such groups).
  if (notClassic.length === 0) return out
  const consumer = await client
    .sendToNode(nodeId, ConsumerGroupDescribe.api, { groupIds: notClassic, includeAuthorizedOperations: false })
    .catch((e: unknown) => {
      if (e instanceof ClientError.UnsupportedVersion) return undefined
      throw e
    })
  for (const g of consumer?.groups ?? []) {
    if (g.errorCode === Errors.ErrorCode.GROUP_ID_NOT_FOUND) continue
    if (g.errorCode !== 0) throw new SyncRequestError(g.errorCode, `ConsumerGroupDescribe ${g.groupId}`, g.errorMessage)
    out.set(g.groupId, g.groupState)
  }
  return out
}

export interface CommittedOffset {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly leaderEpoch: number
  readonly metadata: string | null
}

/** Every offset `group` committed, from its coordinator `nodeId` (partitions without a commit left out). */
export const fetchCommittedOffsets = async (
  client: Client,
  nodeId: number,
  group: string
): Promise<ReadonlyArray<CommittedOffset>> => {
  const res = await client.sendToNode(nodeId, OffsetFetch.api, {
    groupId: group,
    topics: null,
    groups: [{ groupId: group, topics: null }],
    requireStable: false
  })
  const batched = res.groups.find((g) => g.groupId === group)
  const errorCode = batched?.errorCode ?? res.errorCode
  if (errorCode !== 0) throw new SyncRequestError(errorCode, `OffsetFetch ${group}`)
  const out: Array<CommittedOffset> = []
  for (const t of batched?.topics ?? res.topics)
    for (const p of t.partitions) {
      if (p.errorCode !== 0)
        throw new SyncRequestError(p.errorCode, `OffsetFetch ${group} ${t.name}-${p.partitionIndex}`)
      if (p.committedOffset < 0n) continue
      out.push({
        topic: t.name,
        partition: p.partitionIndex,
        offset: p.committedOffset,
        leaderEpoch: p.committedLeaderEpoch,
        metadata: p.metadata
      })
    }
  return out
}

export interface OffsetToCommit {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly leaderEpoch: number
  readonly metadata: string | null
}

/**
 * Commits offsets for `group` at its coordinator `nodeId` as an admin does (generation -1, no member):
 * a coordinator refuses that for a group with members. Returns the partitions that failed.
 */
export const commitOffsets = async (
  client: Client,
  nodeId: number,
  group: string,
  offsets: ReadonlyArray<OffsetToCommit>
): Promise<ReadonlyArray<{ readonly topic: string; readonly partition: number; readonly error: string }>> => {
  const byTopic = new Map<string, Array<OffsetToCommit>>()
  for (const o of offsets) {
    let list = byTopic.get(o.topic)
    if (list === undefined) byTopic.set(o.topic, (list = []))
    list.push(o)
  }
  const res = await client.sendToNode(nodeId, OffsetCommit.api, {
    groupId: group,
    generationIdOrMemberEpoch: -1,
    memberId: "",
    groupInstanceId: null,
    retentionTimeMs: -1n,
    topics: [...byTopic].map(([name, list]) => ({
      name,
      partitions: list.map((o) => ({
        partitionIndex: o.partition,
        committedOffset: o.offset,
        committedLeaderEpoch: o.leaderEpoch,
        committedMetadata: o.metadata
      }))
    }))
  })
  return res.topics.flatMap((t) =>
    t.partitions
      .filter((p) => p.errorCode !== 0)
      .map((p) => ({ topic: t.name, partition: p.partitionIndex, error: Errors.message(p.errorCode) }))
  )
}

export interface LogBounds {
  readonly logStartOffset: bigint
  /** The high watermark: what a consumer can read up to. */
  readonly logEndOffset: bigint
  /** The epoch of the last batch; -1 when the log has none. */
  readonly latestEpoch: number
}

const boundsKey = (topic: string, partition: number) => `${topic}\u0000${partition}`

/** Log start, end and latest epoch of each partition, from its leader. */
export const logBounds = async (
  client: Client,
  partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>
): Promise<ReadonlyMap<string, LogBounds>> => {
  const out = new Map<string, LogBounds>()
  // not a fan-out: one ListOffsets pair per partition, each routed to its leader by the client
  await Promise.all(
    partitions.map(async ({ topic, partition }) => {
      // not a fan-out: the earliest and the latest offset of one partition
      const [earliest, latest] = await Promise.all([
        MirrorAdmin.listOffset(client, topic, partition, MirrorAdmin.EARLIEST),
        MirrorAdmin.listOffset(client, topic, partition, MirrorAdmin.LATEST)
      ])
      out.set(boundsKey(topic, partition), {
        logStartOffset: earliest.offset,
        logEndOffset: latest.offset,
        latestEpoch: latest.leaderEpoch
      })
    })
  )
  return out
}

/** The bounds `logBounds` found for a partition. */
export const boundsOf = (
  bounds: ReadonlyMap<string, LogBounds>,
  topic: string,
  partition: number
): LogBounds | undefined => bounds.get(boundsKey(topic, partition))

/**
 * The leader epoch of the batch holding `offset`: the smallest epoch whose end lies after it, found by a
 * binary search over 0..`latestEpoch` with OffsetForLeaderEpoch (the end offsets grow with the epoch).
 * -1 when the leader knows no such epoch.
 */
export const epochForOffset = async (
  client: Client,
  topic: string,
  partition: number,
  offset: bigint,
  latestEpoch: number
): Promise<number> => {
  let found = -1
  let lo = 0
  let hi = latestEpoch
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2)
    const end = await MirrorAdmin.endOfEpoch(client, topic, partition, mid)
    if (end.epoch >= 0 && end.endOffset > offset) {
      found = end.epoch
      hi = mid - 1
    } else lo = mid + 1
  }
  return found
}

// ---------------------------------------------------------------------------------------------------
// ACLs

/** Every ACL binding of a cluster: DescribeAcls with the ANY filter to any broker; a refusal throws its error. */
export const describeAcls = async (client: Client): Promise<ReadonlyArray<Acl.AclBinding>> => {
  const f = Acl.ANY_FILTER
  const res = await client.sendToAnyBroker(DescribeAcls.api, {
    resourceTypeFilter: f.resourceType,
    resourceNameFilter: f.resourceName,
    patternTypeFilter: f.patternType,
    principalFilter: f.principal,
    hostFilter: f.host,
    operation: f.operation,
    permissionType: f.permissionType
  })
  if (res.errorCode !== 0) throw new SyncRequestError(res.errorCode, "DescribeAcls", res.errorMessage)
  return res.resources.flatMap((r) =>
    r.acls.map((a) => ({
      resourceType: r.resourceType,
      resourceName: r.resourceName,
      patternType: r.patternType,
      principal: a.principal,
      host: a.host,
      operation: a.operation,
      permissionType: a.permissionType
    }))
  )
}

/** Creates bindings in one CreateAcls; the error message of each that failed (with its binding). */
export const createAcls = async (
  client: Client,
  bindings: ReadonlyArray<Acl.AclBinding>
): Promise<ReadonlyArray<string>> => {
  if (bindings.length === 0) return []
  const res = await client.sendToAnyBroker(CreateAcls.api, {
    creations: bindings.map((b) => ({
      resourceType: b.resourceType,
      resourceName: b.resourceName,
      resourcePatternType: b.patternType,
      principal: b.principal,
      host: b.host,
      operation: b.operation,
      permissionType: b.permissionType
    }))
  })
  return res.results.flatMap((r, i) =>
    r.errorCode === 0 ? [] : [`creating ${Acl.format(bindings[i]!)}: ${r.errorMessage || Errors.message(r.errorCode)}`]
  )
}

/**
 * Deletes bindings in one DeleteAcls, each by its exact filter (its own pattern type, name, principal,
 * host, operation and permission type, so that nothing else matches); the error message of each that failed.
 */
export const deleteAcls = async (
  client: Client,
  bindings: ReadonlyArray<Acl.AclBinding>
): Promise<ReadonlyArray<string>> => {
  if (bindings.length === 0) return []
  const res = await client.sendToAnyBroker(DeleteAcls.api, {
    filters: bindings.map((b) => ({
      resourceTypeFilter: b.resourceType,
      resourceNameFilter: b.resourceName,
      patternTypeFilter: b.patternType,
      principalFilter: b.principal,
      hostFilter: b.host,
      operation: b.operation,
      permissionType: b.permissionType
    }))
  })
  return res.filterResults.flatMap((r, i) => {
    const errors = [
      ...(r.errorCode === 0 ? [] : [r.errorMessage || Errors.message(r.errorCode)]),
      ...r.matchingAcls.filter((m) => m.errorCode !== 0).map((m) => m.errorMessage || Errors.message(m.errorCode))
    ]
    return errors.length === 0 ? [] : [`deleting ${Acl.format(bindings[i]!)}: ${errors.join(", ")}`]
  })
}
