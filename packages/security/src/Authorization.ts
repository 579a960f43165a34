/**
 * Per-RPC authorization on a broker, as Kafka's KafkaApis does it: each API's check wraps its
 * handler, so the handler only sees what the principal may touch and the refused parts are answered
 * with TOPIC / GROUP / CLUSTER / TRANSACTIONAL_ID / CLUSTER_MIRROR authorization errors (whole-request
 * refusals where Kafka refuses the whole request). Installed only when `authorizer.class.name` is set,
 * so a broker without an authorizer runs its handlers unwrapped. KIP-1279 §8.2's table covers the
 * mirror RPCs. This module decides nothing else: it filters requests and merges answers.
 */
import { Acl, type StandardAuthorizer } from "@clustermirror/authorizer"
import { ConfigurationControl } from "@clustermirror/controller"
import {
  AddOffsetsToTxn,
  AddPartitionsToTxn,
  AllocateProducerIds,
  AlterClientQuotas,
  ApiVersions,
  Apis,
  AlterConfigs,
  AlterPartition,
  AlterReplicaLogDirs,
  AlterUserScramCredentials,
  BrokerHeartbeat,
  BrokerRegistration,
  BumpLeaderEpochs,
  CreateClusterMirror,
  CreatePartitions,
  CreateTopics,
  DeleteClusterMirror,
  ConsumerGroupDescribe,
  ConsumerGroupHeartbeat,
  DeleteGroups,
  DeleteRecords,
  DeleteTopics,
  DescribeClientQuotas,
  UnregisterBroker,
  DescribeCluster,
  DescribeClusterMirrors,
  DescribeConfigs,
  DescribeGroups,
  DescribeLogDirs,
  DescribeProducers,
  DescribeQuorum,
  DescribeTransactions,
  EndTxn,
  DescribeUserScramCredentials,
  ElectLeaders,
  AlterPartitionReassignments,
  ListPartitionReassignments,
  Errors,
  Fetch,
  FindCoordinator,
  Heartbeat,
  IncrementalAlterConfigs,
  InitProducerId,
  JoinGroup,
  LeaveGroup,
  ListClusterMirrors,
  ListConfigResources,
  ListGroups,
  ListOffsets,
  ListTransactions,
  Metadata,
  OffsetCommit,
  OffsetDelete,
  OffsetFetch,
  OffsetForLeaderEpoch,
  PauseMirrorTopics,
  Produce,
  ReadMirrorStates,
  RecordBatch,
  RecoverMirrorTopics,
  ResumeMirrorTopics,
  type Spec,
  StartMirrorTopics,
  StopMirrorTopics,
  SyncGroup,
  TxnOffsetCommit,
  UpdateFeatures,
  WriteMirrorStates,
  WriteTxnMarkers,
  type Api
} from "@clustermirror/protocol"
import { type Handle, type Handlers, NoResponse, type RequestContext } from "@clustermirror/network/RequestChannel"
import type { Connection } from "@clustermirror/network/SocketServer"

const E = Errors.ErrorCode
const { AclOperation: Op, ResourceType: Res } = Acl
const CLUSTER = Acl.CLUSTER_NAME
const UNSET_OPS = -2147483648
const MIRROR_STATE_TOPIC = "__mirror_state"

/** The host an ACL names for a connection: its address, without the IPv4-mapped IPv6 prefix. */
export const hostOf = (remoteHost: string): string =>
  remoteHost.startsWith("::ffff:") && remoteHost.includes(".") ? remoteHost.slice(7) : remoteHost

/** The principal and host of a connection. */
export const identityOf = (connection: Connection): StandardAuthorizer.RequestIdentity => ({
  principal: connection.principal,
  host: hostOf(connection.remoteHost)
})

/** The current authorizer (rebuilt as the metadata image's ACLs change). */
export type AuthorizerSource = () => StandardAuthorizer.StandardAuthorizer

export interface AuthorizationContext {
  readonly authorizer: AuthorizerSource
  /** The name of a topic id, where the metadata knows it. */
  readonly topicNameById: (topicId: string) => string | undefined
  readonly topicExists: (name: string) => boolean
  /** `auto.create.topics.enable` in force. */
  readonly autoCreateTopicsEnable: () => boolean
  /**
   * On a controller: principals with CLUSTER_ACTION on the cluster (the brokers, which forward what
   * they authorized for their clients) pass every check, as Kafka accepts an Envelope from them.
   */
  readonly trustClusterAction?: boolean
  /** The operation DeleteClusterMirror needs on the mirror: DELETE on brokers, ALTER on the controller (§8.2). */
  readonly deleteMirrorOperation?: number
}

/** One request's checks: the authorizer in force when it arrived and who asks. */
class Checks {
  readonly id: StandardAuthorizer.RequestIdentity
  constructor(
    readonly az: StandardAuthorizer.StandardAuthorizer,
    req: RequestContext
  ) {
    this.id = identityOf(req.connection)
  }
  can(operation: number, resourceType: number, name: string): boolean {
    return this.az.authorize(this.id, operation, resourceType, name)
  }
  cluster(operation: number): boolean {
    return this.can(operation, Res.CLUSTER, CLUSTER)
  }
  topic(operation: number, name: string): boolean {
    return this.can(operation, Res.TOPIC, name)
  }
  group(operation: number, name: string): boolean {
    return this.can(operation, Res.GROUP, name)
  }
  mirror(operation: number, name: string): boolean {
    return this.can(operation, Res.CLUSTER_MIRROR, name)
  }
  /** CREATE on the cluster, or on the topic (Kafka's rule for CreateTopics and auto-creation). */
  createTopic(name: string): boolean {
    return this.cluster(Op.CREATE) || this.topic(Op.CREATE, name)
  }
}

type Awaitable<A> = A | Promise<A>
const resolved = async <A>(a: Awaitable<A>): Promise<A> => a

/** Splits items by a predicate, keeping their order. */
const partition = <A>(items: ReadonlyArray<A>, ok: (a: A) => boolean): [Array<A>, Array<A>] => {
  const yes: Array<A> = []
  const no: Array<A> = []
  for (const a of items) (ok(a) ? yes : no).push(a)
  return [yes, no]
}

/** The APIs `guard` wrapped, per handler table (what `failClosed` leaves alone). */
const guardedKeys = new WeakMap<Handlers, Set<number>>()

/**
 * Wraps the handler of `api` with `check`, which gets the request's checks, the request and the
 * handler. No-op for an API this broker does not serve.
 */
const guard = <Req extends Spec.Fields, Res extends Spec.Fields>(
  handlers: Handlers,
  ctx: AuthorizationContext,
  api: Api.ApiDef<Req, Res>,
  check: (
    checks: Checks,
    req: RequestContext,
    request: Spec.StructType<Req>,
    next: Handle<Req, Res>
  ) => ReturnType<Handle<Req, Res>>
): void => {
  const trust = ctx.trustClusterAction === true
  if (!handlers.has(api.key)) return
  const keys = guardedKeys.get(handlers) ?? new Set<number>()
  guardedKeys.set(handlers, keys.add(api.key))
  handlers.wrap(api, (next) => (req, request) => {
    const checks = new Checks(ctx.authorizer(), req)
    return trust && checks.cluster(Op.CLUSTER_ACTION) ? next(req, request) : check(checks, req, request, next)
  })
}

/** The name a topic entry refers to: its name, or the name of its id in the metadata. */
const topicName = (ctx: AuthorizationContext, name: string | null | undefined, topicId: string): string | undefined =>
  name !== null && name !== undefined && name !== "" ? name : ctx.topicNameById(topicId)

/** The ACL resource of a config resource (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs). */
const configResource = (
  resourceType: number,
  resourceName: string
): { readonly type: number; readonly name: string; readonly errorCode: number } | undefined => {
  switch (resourceType) {
    case ConfigurationControl.ResourceType.TOPIC:
      return { type: Res.TOPIC, name: resourceName, errorCode: E.TOPIC_AUTHORIZATION_FAILED }
    case ConfigurationControl.ResourceType.BROKER:
    case 8: // BROKER_LOGGER
      return { type: Res.CLUSTER, name: CLUSTER, errorCode: E.CLUSTER_AUTHORIZATION_FAILED }
    case ConfigurationControl.ResourceType.CLUSTER_MIRROR:
      return { type: Res.CLUSTER_MIRROR, name: resourceName, errorCode: E.CLUSTER_MIRROR_AUTHORIZATION_FAILED }
    default:
      return undefined
  }
}

/** The cluster's authorized operations as Kafka reports them: none to a principal that may not describe it. */
const clusterOperations = (c: Checks): number =>
  c.cluster(Op.DESCRIBE) ? c.az.authorizedOperations(c.id, Res.CLUSTER, CLUSTER) : 0

/**
 * APIs without a rule here: ApiVersions and SASL need no permission (a client negotiates and
 * authenticates before any authorization), the ACL APIs and DescribeTopicPartitions check their own
 * (`AclApis`, `DescribeTopicPartitionsApi`).
 */
const NOT_GUARDED_HERE: ReadonlySet<string> = new Set([
  "ApiVersions",
  "SaslHandshake",
  "SaslAuthenticate",
  "CreateAcls",
  "DescribeAcls",
  "DeleteAcls",
  "DescribeTopicPartitions",
  // Refused to everyone: delegation tokens are not implemented (see DelegationTokenApis).
  "CreateDelegationToken",
  "RenewDelegationToken",
  "ExpireDelegationToken",
  "DescribeDelegationToken"
])

/**
 * Fail closed: a served API without a rule here answers nobody but super users; anyone else has the
 * connection closed with the reason logged, so an API added later is never served unauthorized.
 */
const failClosed = (handlers: Handlers, ctx: AuthorizationContext): void => {
  const guarded = guardedKeys.get(handlers) ?? new Set()
  for (const { apiKey } of handlers.versions()) {
    const api = Apis.byKey.get(apiKey)
    if (api === undefined || guarded.has(apiKey) || NOT_GUARDED_HERE.has(api.name) || apiKey === ApiVersions.api.key)
      continue
    handlers.wrap(api, (next) => (req, request) => {
      if (ctx.authorizer().config.superUsers.has(req.connection.principal)) return next(req, request)
      throw new Error(`${api.name} has no authorization rule: refused to ${req.connection.principal}`)
    })
  }
}

/** Installs the checks of every API this broker serves. Call after all handlers are registered. */
export const install = (handlers: Handlers, ctx: AuthorizationContext): void => {
  installChecks(handlers, ctx)
  failClosed(handlers, ctx)
}

const installChecks = (handlers: Handlers, ctx: AuthorizationContext): void => {
  const src = ctx

  // -------------------------------------------------------------------------------------------------
  // Metadata: DESCRIBE per topic; an all-topics request omits what the principal may not describe,
  // a named one answers TOPIC_AUTHORIZATION_FAILED; auto-creation needs CREATE on the cluster or topic.

  guard(handlers, src, Metadata.api, async (c, req, request, next) => {
    const all = request.topics === null || (req.apiVersion === 0 && request.topics.length === 0)
    const autoCreate = ctx.autoCreateTopicsEnable() && request.allowAutoTopicCreation
    const refused: Array<{ errorCode: number; name: string | null; topicId: string; isInternal: boolean }> = []
    let forwarded = request.topics
    if (!all && request.topics !== null) {
      forwarded = request.topics.filter((t) => {
        const name = topicName(ctx, t.name, t.topicId)
        if (name === undefined) return true
        if (!c.topic(Op.DESCRIBE, name)) {
          refused.push({ errorCode: E.TOPIC_AUTHORIZATION_FAILED, name: t.name, topicId: t.topicId, isInternal: false })
          return false
        }
        if (autoCreate && !ctx.topicExists(name) && !c.createTopic(name)) {
          refused.push({ errorCode: E.TOPIC_AUTHORIZATION_FAILED, name, topicId: t.topicId, isInternal: false })
          return false
        }
        return true
      })
    }
    // v0 reads an empty list as "all topics": with nothing left to ask for, ask for all and keep none.
    const none = !all && forwarded !== null && forwarded.length === 0
    const out = await resolved(
      next(req, { ...request, topics: none && req.apiVersion === 0 ? null : (forwarded ?? null) })
    )
    if (out === NoResponse) return out
    const topics = (none ? [] : (out.topics ?? []))
      .filter((t) => !all || (t.name !== null && t.name !== undefined && c.topic(Op.DESCRIBE, t.name)))
      .map((t) =>
        request.includeTopicAuthorizedOperations && (t.errorCode ?? 0) === 0 && typeof t.name === "string"
          ? { ...t, topicAuthorizedOperations: c.az.authorizedOperations(c.id, Res.TOPIC, t.name) }
          : t
      )
    return {
      ...out,
      topics: [...topics, ...refused.map((r) => ({ ...r, partitions: [], topicAuthorizedOperations: UNSET_OPS }))],
      clusterAuthorizedOperations: request.includeClusterAuthorizedOperations ? clusterOperations(c) : UNSET_OPS
    }
  })

  guard(handlers, src, DescribeCluster.api, async (c, req, request, next) => {
    // Kafka authorizes nothing beyond authentication here; only the authorized operations depend on ACLs.
    const out = await resolved(next(req, request))
    if (out === NoResponse || !request.includeClusterAuthorizedOperations) return out
    return { ...out, clusterAuthorizedOperations: clusterOperations(c) }
  })

  // DescribeQuorum needs DESCRIBE on the cluster, on a broker (which forwards it) as on the controller.
  guard(handlers, src, DescribeQuorum.api, (c, req, request, next) =>
    c.cluster(Op.DESCRIBE)
      ? next(req, request)
      : { errorCode: E.CLUSTER_AUTHORIZATION_FAILED, errorMessage: "Cluster authorization failed.", topics: [] }
  )

  // -------------------------------------------------------------------------------------------------
  // Produce, Fetch, ListOffsets, OffsetForLeaderEpoch

  guard(handlers, src, Produce.api, async (c, req, request, next) => {
    // Transactional records need WRITE on the request's transactional id (refused without one), as in Kafka.
    const transactional = request.topicData.some((t) =>
      t.partitionData.some((p) => RecordBatch.hasTransactionalBatch(p.records))
    )
    const txnRefused =
      transactional &&
      (request.transactionalId === null || !c.can(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactionalId))
    const [allowed, refused] = partition(request.topicData, (t) => {
      if (txnRefused) return false
      const name = topicName(ctx, t.name, t.topicId)
      return name === undefined || c.topic(Op.WRITE, name)
    })
    if (request.acks === 0) return allowed.length === 0 ? NoResponse : next(req, { ...request, topicData: allowed })
    const code = txnRefused ? E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED : E.TOPIC_AUTHORIZATION_FAILED
    const refusedResponses = refused.map((t) => ({
      name: t.name,
      topicId: t.topicId,
      partitionResponses: t.partitionData.map((p) => ({ index: p.index, errorCode: code, baseOffset: -1n }))
    }))
    if (allowed.length === 0) return { responses: refusedResponses, throttleTimeMs: 0 }
    const out = await resolved(next(req, { ...request, topicData: allowed }))
    if (out === NoResponse) return out
    return { ...out, responses: [...(out.responses ?? []), ...refusedResponses] }
  })

  guard(handlers, src, Fetch.api, async (c, req, request, next) => {
    const replicaId = req.apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId
    const follower = replicaId >= 0
    const followerRefused = follower && !c.cluster(Op.CLUSTER_ACTION)
    const [allowed, refused] = partition(request.topics, (t) => {
      if (follower) return !followerRefused
      const name = topicName(ctx, req.apiVersion >= 13 ? null : t.topic, t.topicId)
      return name === undefined || c.topic(Op.READ, name)
    })
    const refusedResponses = refused.map((t) => ({
      topic: t.topic,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partition,
        errorCode: E.TOPIC_AUTHORIZATION_FAILED,
        highWatermark: -1n,
        lastStableOffset: -1n,
        logStartOffset: -1n,
        records: Buffer.alloc(0)
      }))
    }))
    if (refused.length === 0) return next(req, request)
    if (allowed.length === 0) return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses: refusedResponses }
    // What the principal may read is answered without waiting: a refusal is news for the client.
    const out = await resolved(next(req, { ...request, topics: allowed, maxWaitMs: 0 }))
    if (out === NoResponse) return out
    return { ...out, responses: [...(out.responses ?? []), ...refusedResponses] }
  })

  guard(handlers, src, ListOffsets.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.topics, (t) => c.topic(Op.DESCRIBE, t.name))
    if (refused.length === 0) return next(req, request)
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: E.TOPIC_AUTHORIZATION_FAILED,
        timestamp: -1n,
        offset: -1n,
        leaderEpoch: -1
      }))
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []), ...refusedTopics] }
  })

  guard(handlers, src, OffsetForLeaderEpoch.api, async (c, req, request, next) => {
    // Replicas (CLUSTER_ACTION) may ask for any topic; consumers (KIP-320) for the topics they may describe.
    if (c.cluster(Op.CLUSTER_ACTION)) return next(req, request)
    const [allowed, refused] = partition(request.topics, (t) => c.topic(Op.DESCRIBE, t.topic))
    if (refused.length === 0) return next(req, request)
    const refusedTopics = refused.map((t) => ({
      topic: t.topic,
      partitions: t.partitions.map((p) => ({
        errorCode: E.TOPIC_AUTHORIZATION_FAILED,
        partition: p.partition,
        leaderEpoch: -1,
        endOffset: -1n
      }))
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []), ...refusedTopics] }
  })

  guard(handlers, src, DescribeProducers.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.topics, (t) => c.topic(Op.READ, t.name))
    if (refused.length === 0) return next(req, request)
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((partitionIndex) => ({
        partitionIndex,
        errorCode: E.TOPIC_AUTHORIZATION_FAILED,
        errorMessage: Errors.message(E.TOPIC_AUTHORIZATION_FAILED),
        activeProducers: []
      }))
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []), ...refusedTopics] }
  })

  // -------------------------------------------------------------------------------------------------
  // Configs

  guard(handlers, src, DescribeConfigs.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.resources, (r) => {
      const res = configResource(r.resourceType, r.resourceName)
      return res === undefined || c.can(Op.DESCRIBE_CONFIGS, res.type, res.name)
    })
    if (refused.length === 0) return next(req, request)
    const refusedResults = refused.map((r) => {
      const errorCode = configResource(r.resourceType, r.resourceName)?.errorCode ?? E.UNKNOWN_SERVER_ERROR
      return {
        errorCode,
        errorMessage: Errors.message(errorCode),
        resourceType: r.resourceType,
        resourceName: r.resourceName,
        configs: []
      }
    })
    const out = allowed.length === 0 ? { results: [] } : await resolved(next(req, { ...request, resources: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, results: [...(out.results ?? []), ...refusedResults] }
  })

  const alterConfigs = <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    resourcesOf: (request: Spec.StructType<Req>) => ReadonlyArray<{ resourceType: number; resourceName: string }>,
    withResources: (
      request: Spec.StructType<Req>,
      keep: ReadonlyArray<{ resourceType: number; resourceName: string }>
    ) => Spec.StructType<Req>,
    responsesOf: (out: Spec.StructInput<Res>) => ReadonlyArray<unknown>,
    respond: (out: Spec.StructInput<Res> | undefined, responses: ReadonlyArray<unknown>) => Spec.StructInput<Res>
  ) =>
    guard(handlers, src, api, async (c, req, request, next) => {
      const [allowed, refused] = partition(resourcesOf(request), (r) => {
        const res = configResource(r.resourceType, r.resourceName)
        return res === undefined || c.can(Op.ALTER_CONFIGS, res.type, res.name)
      })
      if (refused.length === 0) return next(req, request)
      const refusedResponses = refused.map((r) => {
        const errorCode = configResource(r.resourceType, r.resourceName)?.errorCode ?? E.UNKNOWN_SERVER_ERROR
        return {
          errorCode,
          errorMessage: Errors.message(errorCode),
          resourceType: r.resourceType,
          resourceName: r.resourceName
        }
      })
      if (allowed.length === 0) return respond(undefined, refusedResponses)
      const out = await resolved(next(req, withResources(request, allowed)))
      if (out === NoResponse) return out
      return respond(out, [...responsesOf(out), ...refusedResponses])
    })
  alterConfigs(
    AlterConfigs.api,
    (r) => r.resources,
    (r, keep) => ({ ...r, resources: r.resources.filter((x) => keep.includes(x)) }),
    (out) => out.responses ?? [],
    (out, responses) => ({ throttleTimeMs: 0, ...out, responses: responses as AlterConfigs.Response["responses"] })
  )
  alterConfigs(
    IncrementalAlterConfigs.api,
    (r) => r.resources,
    (r, keep) => ({ ...r, resources: r.resources.filter((x) => keep.includes(x)) }),
    (out) => out.responses ?? [],
    (out, responses) => ({
      throttleTimeMs: 0,
      ...out,
      responses: responses as IncrementalAlterConfigs.Response["responses"]
    })
  )

  // -------------------------------------------------------------------------------------------------
  // Topic administration

  guard(handlers, src, CreateTopics.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.topics, (t) => c.createTopic(t.name))
    // The created topics' configs only for a principal that may describe them, as Kafka answers.
    const withConfigs = <T extends { readonly name?: string; readonly errorCode?: number }>(t: T) =>
      (t.errorCode ?? 0) !== 0 || c.topic(Op.DESCRIBE_CONFIGS, t.name ?? "")
        ? t
        : { ...t, configs: [], topicConfigErrorCode: E.TOPIC_AUTHORIZATION_FAILED }
    if (refused.length === 0) {
      const out = await resolved(next(req, request))
      return out === NoResponse ? out : { ...out, topics: (out.topics ?? []).map(withConfigs) }
    }
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      errorCode: E.TOPIC_AUTHORIZATION_FAILED,
      errorMessage: "Authorization failed.",
      numPartitions: -1,
      replicationFactor: -1
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []).map(withConfigs), ...refusedTopics] }
  })

  // DeleteRecords: DELETE on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions (Kafka's rule).
  guard(handlers, src, DeleteRecords.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.topics, (t) => c.topic(Op.DELETE, t.name))
    if (refused.length === 0) return next(req, request)
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        lowWatermark: -1n,
        errorCode: E.TOPIC_AUTHORIZATION_FAILED
      }))
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []), ...refusedTopics] }
  })

  guard(handlers, src, DeleteTopics.api, async (c, req, request, next) => {
    const byName = req.apiVersion < 6
    const refusedResponses: Array<{ name: string | null; topicId: string; errorCode: number; errorMessage: string }> =
      []
    const ok = (name: string | undefined) => name === undefined || c.topic(Op.DELETE, name)
    const topicNames = byName
      ? request.topicNames.filter((n) => {
          if (ok(n)) return true
          refusedResponses.push({ name: n, topicId: "", errorCode: E.TOPIC_AUTHORIZATION_FAILED, errorMessage: "" })
          return false
        })
      : request.topicNames
    const topics = byName
      ? request.topics
      : request.topics.filter((t) => {
          const name = topicName(ctx, t.name, t.topicId)
          if (ok(name)) return true
          // A topic named by id that the principal may not describe is not revealed.
          const revealed = name !== undefined && c.topic(Op.DESCRIBE, name)
          refusedResponses.push({
            name: t.name,
            topicId: t.topicId,
            errorCode: revealed || t.name !== null ? E.TOPIC_AUTHORIZATION_FAILED : E.UNKNOWN_TOPIC_ID,
            errorMessage: Errors.message(E.TOPIC_AUTHORIZATION_FAILED)
          })
          return false
        })
    if (refusedResponses.length === 0) return next(req, request)
    const empty = byName ? topicNames.length === 0 : topics.length === 0
    const out = empty ? { responses: [] } : await resolved(next(req, { ...request, topics, topicNames }))
    if (out === NoResponse) return out
    return {
      throttleTimeMs: 0,
      ...out,
      responses: [...(out.responses ?? []), ...refusedResponses.map((r) => ({ ...r, name: r.name ?? "" }))]
    }
  })

  guard(handlers, src, CreatePartitions.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.topics, (t) => c.topic(Op.ALTER, t.name))
    if (refused.length === 0) return next(req, request)
    const refusedResults = refused.map((t) => ({
      name: t.name,
      errorCode: E.TOPIC_AUTHORIZATION_FAILED,
      errorMessage: Errors.message(E.TOPIC_AUTHORIZATION_FAILED)
    }))
    const out = allowed.length === 0 ? { results: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, results: [...(out.results ?? []), ...refusedResults] }
  })

  guard(handlers, src, ElectLeaders.api, (c, req, request, next) => {
    if (c.cluster(Op.ALTER)) return next(req, request)
    return {
      throttleTimeMs: 0,
      errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
      replicaElectionResults: (request.topicPartitions ?? []).map((t) => ({
        topic: t.topic,
        partitionResult: t.partitions.map((p) => ({
          partitionId: p,
          errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
          errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED)
        }))
      }))
    }
  })

  // Partition reassignments: ALTER / DESCRIBE on the cluster, as Kafka's controller checks them.
  guard(handlers, src, AlterPartitionReassignments.api, (c, req, request, next) => {
    if (c.cluster(Op.ALTER)) return next(req, request)
    const error = {
      errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
      errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED)
    }
    return {
      throttleTimeMs: 0,
      allowReplicationFactorChange: request.allowReplicationFactorChange,
      ...error,
      responses: request.topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, ...error }))
      }))
    }
  })
  guard(handlers, src, ListPartitionReassignments.api, (c, req, request, next) =>
    c.cluster(Op.DESCRIBE)
      ? next(req, request)
      : {
          throttleTimeMs: 0,
          errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
          errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED),
          topics: []
        }
  )

  // -------------------------------------------------------------------------------------------------
  // Producer ids

  guard(handlers, src, InitProducerId.api, (c, req, request, next) => {
    const refuse = (errorCode: number) => ({ throttleTimeMs: 0, errorCode, producerId: -1n, producerEpoch: -1 })
    if (request.transactionalId !== null)
      return c.can(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactionalId)
        ? next(req, request)
        : refuse(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    // Idempotence: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679).
    return c.cluster(Op.IDEMPOTENT_WRITE) || c.az.authorizeByResourceType(c.id, Op.WRITE, Res.TOPIC)
      ? next(req, request)
      : refuse(E.CLUSTER_AUTHORIZATION_FAILED)
  })

  // -------------------------------------------------------------------------------------------------
  // Transactions (the coordinator side)

  guard(handlers, src, AddPartitionsToTxn.api, async (c, req, request, next) => {
    const results = (
      code: (topic: string) => number,
      topics: ReadonlyArray<{ name: string; partitions: ReadonlyArray<number> }>
    ) =>
      topics.map((t) => ({
        name: t.name,
        resultsByPartition: t.partitions.map((p) => ({ partitionIndex: p, partitionErrorCode: code(t.name) }))
      }))
    // From v4 only partition leaders send it (KIP-890 verification): CLUSTER_ACTION, as in Kafka.
    if (req.apiVersion >= 4)
      return c.cluster(Op.CLUSTER_ACTION)
        ? next(req, request)
        : { throttleTimeMs: 0, errorCode: E.CLUSTER_AUTHORIZATION_FAILED, resultsByTransaction: [] }
    const topics = request.v3AndBelowTopics
    if (!c.can(Op.WRITE, Res.TRANSACTIONAL_ID, request.v3AndBelowTransactionalId))
      return {
        throttleTimeMs: 0,
        resultsByTopicV3AndBelow: results(() => E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, topics)
      }
    const refused = new Set(topics.filter((t) => !c.topic(Op.WRITE, t.name)).map((t) => t.name))
    if (refused.size === 0) return next(req, request)
    // Like Kafka: nothing is added when a topic is refused; the others are "not attempted".
    return {
      throttleTimeMs: 0,
      resultsByTopicV3AndBelow: results(
        (t) => (refused.has(t) ? E.TOPIC_AUTHORIZATION_FAILED : E.OPERATION_NOT_ATTEMPTED),
        topics
      )
    }
  })
  guard(handlers, src, AddOffsetsToTxn.api, (c, req, request, next) =>
    !c.can(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactionalId)
      ? { throttleTimeMs: 0, errorCode: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED }
      : !c.group(Op.READ, request.groupId)
        ? { throttleTimeMs: 0, errorCode: E.GROUP_AUTHORIZATION_FAILED }
        : next(req, request)
  )
  guard(handlers, src, EndTxn.api, (c, req, request, next) =>
    c.can(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactionalId)
      ? next(req, request)
      : { throttleTimeMs: 0, errorCode: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED }
  )
  guard(handlers, src, ListTransactions.api, async (c, req, request, next) => {
    const out = await resolved(next(req, request))
    if (out === NoResponse) return out
    return {
      ...out,
      transactionStates: (out.transactionStates ?? []).filter((t) =>
        c.can(Op.DESCRIBE, Res.TRANSACTIONAL_ID, t.transactionalId ?? "")
      )
    }
  })
  guard(handlers, src, DescribeTransactions.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.transactionalIds, (id) => c.can(Op.DESCRIBE, Res.TRANSACTIONAL_ID, id))
    const refusedStates = refused.map((transactionalId) => ({
      errorCode: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
      transactionalId,
      transactionState: "",
      transactionTimeoutMs: 0,
      transactionStartTimeMs: -1n,
      producerId: -1n,
      producerEpoch: -1,
      topics: []
    }))
    const out =
      allowed.length === 0
        ? { transactionStates: [] }
        : await resolved(next(req, { ...request, transactionalIds: allowed }))
    if (out === NoResponse) return out
    // The partitions of topics the principal may not describe are left out, as Kafka does.
    const states = (out.transactionStates ?? []).map((t) => ({
      ...t,
      topics: (t.topics ?? []).filter((x) => c.topic(Op.DESCRIBE, x.topic ?? ""))
    }))
    return { throttleTimeMs: 0, ...out, transactionStates: [...states, ...refusedStates] }
  })

  // -------------------------------------------------------------------------------------------------
  // Groups

  guard(handlers, src, FindCoordinator.api, async (c, req, request, next) => {
    const allowedKey = (keyType: number, key: string) =>
      keyType === 1 ? c.can(Op.DESCRIBE, Res.TRANSACTIONAL_ID, key) : c.group(Op.DESCRIBE, key)
    const codeOf = (keyType: number) =>
      keyType === 1 ? E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED : E.GROUP_AUTHORIZATION_FAILED
    if (req.apiVersion < 4) {
      if (allowedKey(request.keyType, request.key)) return next(req, request)
      const errorCode = codeOf(request.keyType)
      return { throttleTimeMs: 0, errorCode, errorMessage: Errors.message(errorCode), nodeId: -1, host: "", port: -1 }
    }
    const [allowed, refused] = partition(request.coordinatorKeys, (k) => allowedKey(request.keyType, k))
    if (refused.length === 0) return next(req, request)
    const errorCode = codeOf(request.keyType)
    const refusedKeys = refused.map((key) => ({
      key,
      nodeId: -1,
      host: "",
      port: -1,
      errorCode,
      errorMessage: Errors.message(errorCode)
    }))
    const out =
      allowed.length === 0 ? { coordinators: [] } : await resolved(next(req, { ...request, coordinatorKeys: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, coordinators: [...(out.coordinators ?? []), ...refusedKeys] }
  })

  const groupRead = { errorCode: E.GROUP_AUTHORIZATION_FAILED, throttleTimeMs: 0 }
  guard(handlers, src, JoinGroup.api, (c, req, request, next) =>
    c.group(Op.READ, request.groupId)
      ? next(req, request)
      : {
          ...groupRead,
          generationId: -1,
          protocolName: req.apiVersion >= 7 ? null : "",
          leader: "",
          memberId: "",
          members: []
        }
  )
  guard(handlers, src, SyncGroup.api, (c, req, request, next) =>
    c.group(Op.READ, request.groupId) ? next(req, request) : { ...groupRead, assignment: Buffer.alloc(0) }
  )
  guard(handlers, src, Heartbeat.api, (c, req, request, next) =>
    c.group(Op.READ, request.groupId) ? next(req, request) : groupRead
  )
  guard(handlers, src, LeaveGroup.api, (c, req, request, next) =>
    c.group(Op.READ, request.groupId) ? next(req, request) : { ...groupRead, members: [] }
  )

  guard(handlers, src, OffsetCommit.api, async (c, req, request, next) => {
    const groupOk = c.group(Op.READ, request.groupId)
    const [allowed, refused] = partition(request.topics, (t) => {
      if (!groupOk) return false
      const name = topicName(ctx, t.name, t.topicId)
      return name === undefined || c.topic(Op.READ, name)
    })
    if (refused.length === 0) return next(req, request)
    const code = groupOk ? E.TOPIC_AUTHORIZATION_FAILED : E.GROUP_AUTHORIZATION_FAILED
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code }))
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []), ...refusedTopics] }
  })

  // Kafka's order: WRITE on the transactional id, READ on the group (whole-request refusals), READ per topic.
  guard(handlers, src, TxnOffsetCommit.api, async (c, req, request, next) => {
    const whole = !c.can(Op.WRITE, Res.TRANSACTIONAL_ID, request.transactionalId)
      ? E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
      : !c.group(Op.READ, request.groupId)
        ? E.GROUP_AUTHORIZATION_FAILED
        : 0
    const [allowed, refused] = partition(request.topics, (t) => whole === 0 && c.topic(Op.READ, t.name))
    if (refused.length === 0) return next(req, request)
    const code = whole !== 0 ? whole : E.TOPIC_AUTHORIZATION_FAILED
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code }))
    }))
    const out = allowed.length === 0 ? { topics: [] } : await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse) return out
    return { throttleTimeMs: 0, ...out, topics: [...(out.topics ?? []), ...refusedTopics] }
  })

  guard(handlers, src, OffsetFetch.api, async (c, req, request, next) => {
    const describable = (name: string | null | undefined) =>
      name === null || name === undefined || c.topic(Op.DESCRIBE, name)
    if (req.apiVersion < 8) {
      if (!c.group(Op.DESCRIBE, request.groupId))
        return { throttleTimeMs: 0, errorCode: E.GROUP_AUTHORIZATION_FAILED, topics: [] }
      const asked = request.topics
      const [allowed, refused] = asked === null ? [null, []] : partition(asked, (t) => describable(t.name))
      const out =
        allowed !== null && allowed.length === 0
          ? { topics: [] }
          : await resolved(next(req, { ...request, topics: allowed }))
      if (out === NoResponse) return out
      const kept = (out.topics ?? []).filter((t) => describable(t.name))
      return {
        throttleTimeMs: 0,
        ...out,
        topics: [
          ...kept,
          ...refused.map((t) => ({
            name: t.name,
            partitions: t.partitionIndexes.map((p) => ({
              partitionIndex: p,
              committedOffset: -1n,
              metadata: "",
              errorCode: E.TOPIC_AUTHORIZATION_FAILED
            }))
          }))
        ]
      }
    }
    const [groupsOk, groupsRefused] = partition(request.groups, (g) => c.group(Op.DESCRIBE, g.groupId))
    const nameOf = (t: { name: string; topicId: string }) =>
      topicName(ctx, req.apiVersion >= 10 ? null : t.name, t.topicId)
    const refusedTopics = new Map<
      string,
      Array<{ name: string; topicId: string; partitionIndexes: ReadonlyArray<number> }>
    >()
    const forwarded = groupsOk.map((g) => {
      if (g.topics === null) return g
      const [ok, no] = partition(g.topics, (t) => describable(nameOf(t)))
      if (no.length > 0) refusedTopics.set(g.groupId, no)
      return { ...g, topics: ok }
    })
    const out = forwarded.length === 0 ? { groups: [] } : await resolved(next(req, { ...request, groups: forwarded }))
    if (out === NoResponse) return out
    const groups = (out.groups ?? []).map((g) => ({
      ...g,
      topics: [
        ...(g.topics ?? []).filter((t) => describable(topicName(ctx, t.name, t.topicId ?? ""))),
        ...(refusedTopics.get(g.groupId ?? "") ?? []).map((t) => ({
          name: t.name,
          topicId: t.topicId,
          partitions: t.partitionIndexes.map((p) => ({
            partitionIndex: p,
            committedOffset: -1n,
            metadata: "",
            errorCode: E.TOPIC_AUTHORIZATION_FAILED
          }))
        }))
      ]
    }))
    return {
      throttleTimeMs: 0,
      ...out,
      groups: [
        ...groups,
        ...groupsRefused.map((g) => ({ groupId: g.groupId, topics: [], errorCode: E.GROUP_AUTHORIZATION_FAILED }))
      ]
    }
  })

  guard(handlers, src, ListGroups.api, async (c, req, request, next) => {
    const out = await resolved(next(req, request))
    if (out === NoResponse || c.cluster(Op.DESCRIBE)) return out
    return { ...out, groups: (out.groups ?? []).filter((g) => c.group(Op.DESCRIBE, g.groupId ?? "")) }
  })

  guard(handlers, src, DescribeGroups.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.groups, (g) => c.group(Op.DESCRIBE, g))
    const refusedGroups = refused.map((groupId) => ({
      errorCode: E.GROUP_AUTHORIZATION_FAILED,
      errorMessage: Errors.message(E.GROUP_AUTHORIZATION_FAILED),
      groupId,
      groupState: "",
      protocolType: "",
      protocolData: "",
      members: [],
      authorizedOperations: UNSET_OPS
    }))
    const out = allowed.length === 0 ? { groups: [] } : await resolved(next(req, { ...request, groups: allowed }))
    if (out === NoResponse) return out
    const groups = (out.groups ?? []).map((g) =>
      request.includeAuthorizedOperations && (g.errorCode ?? 0) === 0
        ? { ...g, authorizedOperations: c.az.authorizedOperations(c.id, Res.GROUP, g.groupId ?? "") }
        : g
    )
    return { throttleTimeMs: 0, ...out, groups: [...groups, ...refusedGroups] }
  })

  // KIP-848, as KafkaApis: READ on the group to heartbeat; DESCRIBE on each group to describe it.
  guard(handlers, src, ConsumerGroupHeartbeat.api, (c, req, request, next) =>
    c.group(Op.READ, request.groupId)
      ? next(req, request)
      : {
          throttleTimeMs: 0,
          errorCode: E.GROUP_AUTHORIZATION_FAILED,
          errorMessage: Errors.message(E.GROUP_AUTHORIZATION_FAILED),
          memberId: null,
          memberEpoch: -1,
          heartbeatIntervalMs: 0,
          assignment: null
        }
  )
  guard(handlers, src, ConsumerGroupDescribe.api, async (c, req, request, next) => {
    const [allowed, refused] = partition(request.groupIds, (g) => c.group(Op.DESCRIBE, g))
    if (refused.length === 0) return next(req, request)
    const out = allowed.length === 0 ? { groups: [] } : await resolved(next(req, { ...request, groupIds: allowed }))
    if (out === NoResponse) return out
    const refusedGroups = refused.map((groupId) => ({
      errorCode: E.GROUP_AUTHORIZATION_FAILED,
      errorMessage: Errors.message(E.GROUP_AUTHORIZATION_FAILED),
      groupId,
      groupState: "",
      groupEpoch: 0,
      assignmentEpoch: 0,
      assignorName: "",
      members: [],
      authorizedOperations: UNSET_OPS
    }))
    return { throttleTimeMs: 0, ...out, groups: [...(out.groups ?? []), ...refusedGroups] }
  })

  // KafkaApis: DELETE on each group; the refused ones answer GROUP_AUTHORIZATION_FAILED.
  guard(handlers, src, DeleteGroups.api, async (c, req, request, next) => {
    const names = [...new Set(request.groupsNames)]
    const [allowed, refused] = partition(names, (g) => c.group(Op.DELETE, g))
    if (refused.length === 0) return next(req, request)
    const out = allowed.length === 0 ? { results: [] } : await resolved(next(req, { ...request, groupsNames: allowed }))
    if (out === NoResponse) return out
    const refusedResults = refused.map((groupId) => ({ groupId, errorCode: E.GROUP_AUTHORIZATION_FAILED }))
    return { throttleTimeMs: 0, ...out, results: [...(out.results ?? []), ...refusedResults] }
  })

  // KafkaApis: DELETE on the group (else the whole request is refused), READ on each topic.
  guard(handlers, src, OffsetDelete.api, async (c, req, request, next) => {
    if (!c.group(Op.DELETE, request.groupId))
      return { errorCode: E.GROUP_AUTHORIZATION_FAILED, throttleTimeMs: 0, topics: [] }
    const [allowed, refused] = partition(request.topics, (t) => c.topic(Op.READ, t.name))
    if (refused.length === 0) return next(req, request)
    const out = await resolved(next(req, { ...request, topics: allowed }))
    if (out === NoResponse || (out.errorCode ?? 0) !== 0) return out
    const refusedTopics = refused.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: E.TOPIC_AUTHORIZATION_FAILED
      }))
    }))
    return { throttleTimeMs: 0, errorCode: 0, ...out, topics: [...refusedTopics, ...(out.topics ?? [])] }
  })

  // -------------------------------------------------------------------------------------------------
  // Inter-broker RPCs: CLUSTER_ACTION on the cluster

  const clusterAction = <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    refuse: (request: Spec.StructType<Req>) => Spec.StructInput<Res>
  ) =>
    guard(handlers, src, api, (c, req, request, next) =>
      c.cluster(Op.CLUSTER_ACTION) ? next(req, request) : refuse(request)
    )
  const clusterRefusal = {
    throttleTimeMs: 0,
    errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
    errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED)
  }
  // -------------------------------------------------------------------------------------------------
  // SCRAM credentials and client quotas, as KafkaApis: DESCRIBE / ALTER / DESCRIBE_CONFIGS on the cluster

  guard(handlers, src, DescribeUserScramCredentials.api, (c, req, request, next) =>
    c.cluster(Op.DESCRIBE) ? next(req, request) : { ...clusterRefusal, results: [] }
  )
  guard(handlers, src, AlterUserScramCredentials.api, (c, req, request, next) => {
    if (c.cluster(Op.ALTER)) return next(req, request)
    // Every user named in the request gets the error, once.
    const users = new Set([...request.deletions.map((d) => d.name), ...request.upsertions.map((u) => u.name)])
    return {
      throttleTimeMs: 0,
      results: [...users].map((user) => ({
        user,
        errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
        errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED)
      }))
    }
  })
  guard(handlers, src, DescribeClientQuotas.api, (c, req, request, next) =>
    c.cluster(Op.DESCRIBE_CONFIGS) ? next(req, request) : { ...clusterRefusal, entries: null }
  )
  guard(handlers, src, AlterClientQuotas.api, (c, req, request, next) =>
    c.cluster(Op.ALTER_CONFIGS)
      ? next(req, request)
      : {
          throttleTimeMs: 0,
          entries: request.entries.map((e) => ({
            errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
            errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED),
            entity: e.entity
          }))
        }
  )
  // Listing config resources needs DESCRIBE_CONFIGS on the cluster, removing a registration ALTER.
  guard(handlers, src, ListConfigResources.api, (c, req, request, next) =>
    c.cluster(Op.DESCRIBE_CONFIGS)
      ? next(req, request)
      : { throttleTimeMs: 0, errorCode: E.CLUSTER_AUTHORIZATION_FAILED, configResources: [] }
  )
  guard(handlers, src, UnregisterBroker.api, (c, req, request, next) =>
    c.cluster(Op.ALTER) ? next(req, request) : clusterRefusal
  )

  // -------------------------------------------------------------------------------------------------
  // Log dirs and features: DESCRIBE / ALTER on the cluster, as KafkaApis and ControllerApis check them

  guard(handlers, src, DescribeLogDirs.api, (c, req, request, next) =>
    c.cluster(Op.DESCRIBE)
      ? next(req, request)
      : { throttleTimeMs: 0, errorCode: E.CLUSTER_AUTHORIZATION_FAILED, results: [] }
  )
  guard(handlers, src, AlterReplicaLogDirs.api, (c, req, request, next) => {
    if (c.cluster(Op.ALTER)) return next(req, request)
    const results = new Map<string, Array<{ partitionIndex: number; errorCode: number }>>()
    for (const d of request.dirs)
      for (const t of d.topics) {
        const list = results.get(t.name) ?? []
        results.set(t.name, list)
        for (const partitionIndex of t.partitions)
          list.push({ partitionIndex, errorCode: E.CLUSTER_AUTHORIZATION_FAILED })
      }
    return { throttleTimeMs: 0, results: [...results].map(([topicName, partitions]) => ({ topicName, partitions })) }
  })
  guard(handlers, src, UpdateFeatures.api, (c, req, request, next) => {
    if (c.cluster(Op.ALTER)) return next(req, request)
    const refused = {
      errorCode: E.CLUSTER_AUTHORIZATION_FAILED,
      errorMessage: Errors.message(E.CLUSTER_AUTHORIZATION_FAILED)
    }
    return {
      throttleTimeMs: 0,
      ...refused,
      results: request.featureUpdates.map((u) => ({ feature: u.feature, ...refused }))
    }
  })

  clusterAction(ReadMirrorStates.api, () => ({ ...clusterRefusal, topics: [] }))
  clusterAction(WriteMirrorStates.api, () => ({ ...clusterRefusal, topics: [] }))
  clusterAction(BumpLeaderEpochs.api, () => ({ ...clusterRefusal, topics: [] }))
  // From transaction coordinators only: every partition of every marker is refused.
  clusterAction(WriteTxnMarkers.api, (request) => ({
    markers: request.markers.map((m) => ({
      producerId: m.producerId,
      topics: m.topics.map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex) => ({
          partitionIndex,
          errorCode: E.CLUSTER_AUTHORIZATION_FAILED
        }))
      }))
    }))
  }))

  // -------------------------------------------------------------------------------------------------
  // KIP-1279 §8.2: the mirror RPCs

  const mirrorRefusal = (errorCode: number = E.CLUSTER_MIRROR_AUTHORIZATION_FAILED) => ({
    throttleTimeMs: 0,
    errorCode,
    errorMessage: Errors.message(errorCode)
  })

  guard(handlers, src, CreateClusterMirror.api, (c, req, request, next) => {
    if (!c.mirror(Op.CREATE, request.mirrorName)) return mirrorRefusal()
    // The first mirror creates __mirror_state: CREATE on the cluster or on that topic.
    if (!ctx.topicExists(MIRROR_STATE_TOPIC) && !c.createTopic(MIRROR_STATE_TOPIC))
      return mirrorRefusal(E.TOPIC_AUTHORIZATION_FAILED)
    return next(req, request)
  })

  guard(handlers, src, DeleteClusterMirror.api, (c, req, request, next) =>
    c.mirror(ctx.deleteMirrorOperation ?? Op.DELETE, request.mirrorName) ? next(req, request) : mirrorRefusal()
  )

  /** Start, Stop, Pause, Resume (and Recover): ALTER on the mirror and ALTER_CONFIGS on each topic. */
  const topicOperation = <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    trustBrokers: boolean
  ) =>
    guard(handlers, src, api, async (c, req, request, next) => {
      if (trustBrokers && c.cluster(Op.CLUSTER_ACTION)) return next(req, request)
      const r = request as unknown as {
        readonly mirrorName: string
        readonly topics: ReadonlyArray<{ readonly topicName: string }>
      }
      const respond = (
        errorCode: number,
        topics: ReadonlyArray<{ name: string; errorCode: number; errorMessage: string | null }>
      ) => ({ ...mirrorRefusal(errorCode), ...(errorCode === 0 ? { errorMessage: null } : {}), topics })
      if (!c.mirror(Op.ALTER, r.mirrorName)) {
        const errorCode = E.CLUSTER_MIRROR_AUTHORIZATION_FAILED
        return respond(
          errorCode,
          r.topics.map((t) => ({ name: t.topicName, errorCode, errorMessage: Errors.message(errorCode) }))
        ) as unknown as Spec.StructInput<Res>
      }
      const [allowed, refused] = partition(r.topics, (t) => c.topic(Op.ALTER_CONFIGS, t.topicName))
      if (refused.length === 0) return next(req, request)
      const refusedTopics = refused.map((t) => ({
        name: t.topicName,
        topicName: t.topicName,
        errorCode: E.TOPIC_AUTHORIZATION_FAILED,
        errorMessage: Errors.message(E.TOPIC_AUTHORIZATION_FAILED)
      }))
      if (allowed.length === 0)
        return respond(E.TOPIC_AUTHORIZATION_FAILED, refusedTopics) as unknown as Spec.StructInput<Res>
      const out = await resolved(next(req, { ...request, topics: allowed }))
      if (out === NoResponse) return out
      const topics = (out as { readonly topics?: ReadonlyArray<unknown> }).topics ?? []
      return { ...out, topics: [...topics, ...refusedTopics] } as Spec.StructInput<Res>
    })
  topicOperation(StartMirrorTopics.api, false)
  topicOperation(StopMirrorTopics.api, false)
  topicOperation(PauseMirrorTopics.api, false)
  topicOperation(ResumeMirrorTopics.api, false)
  // Brokers fan a recovery out to the other leaders with their own identity.
  topicOperation(RecoverMirrorTopics.api, true)

  guard(handlers, src, ListClusterMirrors.api, async (c, req, request, next) => {
    const out = await resolved(next(req, request))
    if (out === NoResponse) return out
    return { ...out, mirrors: (out.mirrors ?? []).filter((m) => c.mirror(Op.DESCRIBE, m.mirrorName ?? "")) }
  })

  guard(handlers, src, DescribeClusterMirrors.api, async (c, req, request, next) => {
    const named = request.mirrorNames !== null && request.mirrorNames.length > 0
    const [allowed, refused] = named
      ? partition(request.mirrorNames ?? [], (m) => c.mirror(Op.DESCRIBE, m))
      : [null, []]
    const refusedMirrors = refused.map((mirrorName) => ({
      errorCode: E.CLUSTER_MIRROR_AUTHORIZATION_FAILED,
      mirrorName,
      topics: []
    }))
    if (allowed !== null && allowed.length === 0) return { throttleTimeMs: 0, errorCode: 0, mirrors: refusedMirrors }
    const out = await resolved(next(req, allowed === null ? request : { ...request, mirrorNames: allowed }))
    if (out === NoResponse) return out
    const mirrors = (out.mirrors ?? [])
      .filter((m) => named || c.mirror(Op.DESCRIBE, m.mirrorName ?? ""))
      .map((m) =>
        request.includeAuthorizedOperations && (m.errorCode ?? 0) === 0
          ? { ...m, authorizedOperations: c.az.authorizedOperations(c.id, Res.CLUSTER_MIRROR, m.mirrorName ?? "") }
          : m
      )
    return { ...out, mirrors: [...mirrors, ...refusedMirrors] }
  })
}

/**
 * The controller's checks: the brokers' RPCs (registration, heartbeats, AlterPartition, producer-id
 * blocks, the metadata log fetch, BumpLeaderEpochs) need CLUSTER_ACTION on the cluster; the admin
 * requests need what they need on a broker, unless a broker forwards them (`trustClusterAction`).
 */
export const installController = (handlers: Handlers, ctx: AuthorizationContext): void => {
  installChecks(handlers, ctx)
  const refusal = { throttleTimeMs: 0, errorCode: E.CLUSTER_AUTHORIZATION_FAILED }
  const clusterAction = <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    refuse: Spec.StructInput<Res>
  ) =>
    guard(handlers, ctx, api, (c, req, request, next) => (c.cluster(Op.CLUSTER_ACTION) ? next(req, request) : refuse))
  clusterAction(BrokerRegistration.api, { ...refusal, brokerEpoch: -1n })
  clusterAction(BrokerHeartbeat.api, { ...refusal, isCaughtUp: false, isFenced: true, shouldShutDown: false })
  clusterAction(AlterPartition.api, { ...refusal, topics: [] })
  clusterAction(AllocateProducerIds.api, { ...refusal, producerIdStart: -1n, producerIdLen: 0 })
  // Unlike a broker's, the controller's DescribeCluster (its controllers, KIP-919) needs ALTER on the cluster.
  guard(handlers, ctx, DescribeCluster.api, (c, req, request, next) =>
    c.cluster(Op.ALTER)
      ? next(req, request)
      : { ...refusal, errorMessage: "Cluster authorization failed.", clusterId: "", brokers: [] }
  )
  failClosed(handlers, ctx)
}
