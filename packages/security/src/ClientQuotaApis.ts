/**
 * Client quotas on the request path: DescribeClientQuotas (48) from the broker's metadata image,
 * AlterClientQuotas (49) on the controller (brokers forward it there), and the enforcement of
 * `producer_byte_rate` and `consumer_byte_rate` around Produce and Fetch as Kafka does since KIP-219:
 * the response carries `throttle_time_ms` and the connection is muted for that time, at every request version
 * (clients older than KIP-219 do not wait themselves: the mute holds their next request). A produce over its
 * quota is appended; a fetch over its quota is answered without records. Fetches from follower
 * replicas are not client-quota'd.
 *
 * `request_percentage` (KIP-124) is measured on every request but the exempt ones (Kafka's: replica
 * fetches and inter-broker cluster actions) and throttles the same way. `controller_mutation_rate`
 * (KIP-599) is checked here, on the broker that forwards CreateTopics, CreatePartitions and DeleteTopics
 * to the controller: strictly from CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 (a topic
 * asked while the pair's bucket is in debt gets THROTTLING_QUOTA_EXCEEDED and is not forwarded),
 * permissively before (everything is forwarded, the response is throttled); as in Kafka's controller, a
 * `validateOnly` request counts like a real one. `connection_creation_rate`
 * (KIP-612) is `admitConnection`, the socket servers' admit hook.
 *
 * The decisions are `ClientQuotaControl`'s (validation, records) and `ClientQuotas`' (resolution, rate);
 * this module only wires them to handlers.
 */
import type { BrokerConfig } from "@clustermirror/broker-config/BrokerConfig"
import type { QuorumController } from "@clustermirror/controller"
import { MetadataImage } from "@clustermirror/metadata-log"
import {
  type Handlers,
  NoResponse,
  type NoResponse as NoResponseType,
  type RequestContext
} from "@clustermirror/network/RequestChannel"
import {
  AlterClientQuotas,
  BumpLeaderEpochs,
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  DescribeClientQuotas,
  Errors,
  Fetch,
  Produce,
  ReadMirrorStates,
  type Spec,
  Uuid,
  WriteMirrorStates,
  WriteTxnMarkers
} from "@clustermirror/protocol"
import * as ClientQuotas from "./ClientQuotas.js"

const E = Errors.ErrorCode
const MATCH_TYPE_EXACT = 0
const MATCH_TYPE_DEFAULT = 1
const MATCH_TYPE_SPECIFIED = 2
const ENTITY_TYPES: ReadonlySet<string> = new Set(["user", "client-id", "ip"])

type Filter =
  | { readonly exact: ReadonlyMap<string, string | null>; readonly any: ReadonlySet<string> }
  | { readonly errorCode: number; readonly errorMessage: string }

/** Kafka's reading of the filter components: names matched exactly (null: the default) and types matched by any name. */
const filterOf = (request: DescribeClientQuotas.Request): Filter => {
  const exact = new Map<string, string | null>()
  const any = new Set<string>()
  const invalid = (errorMessage: string) => ({ errorCode: E.INVALID_REQUEST, errorMessage })
  for (const c of request.components) {
    if (c.entityType === "") return invalid("Invalid empty entity type.")
    if (exact.has(c.entityType) || any.has(c.entityType))
      return invalid(`Entity type ${c.entityType} cannot appear more than once in the filter.`)
    if (!ENTITY_TYPES.has(c.entityType))
      return { errorCode: E.UNSUPPORTED_VERSION, errorMessage: `Unsupported entity type ${c.entityType}` }
    if (c.matchType === MATCH_TYPE_EXACT) {
      if (c.match === null) return invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
      exact.set(c.entityType, c.match)
    } else if (c.matchType === MATCH_TYPE_DEFAULT) {
      if (c.match !== null) return invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
      exact.set(c.entityType, null)
    } else if (c.matchType === MATCH_TYPE_SPECIFIED) {
      if (c.match !== null) return invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
      any.add(c.entityType)
    } else return invalid(`Unknown match type ${c.matchType}`)
  }
  const has = (t: string) => exact.has(t) || any.has(t)
  if (has("ip") && (has("user") || has("client-id")))
    return invalid(
      "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
    )
  return { exact, any }
}

/**
 * DescribeClientQuotas (48): the entities whose parts match every component (EXACT: that name, DEFAULT:
 * the default, SPECIFIED: any name, the default included), with all their quotas; `strict` also
 * requires the entity to have no other part. A malformed filter is INVALID_REQUEST (an unknown entity
 * type UNSUPPORTED_VERSION) with Kafka's message and no entries.
 */
export const describeClientQuotas = (
  image: MetadataImage.MetadataImage,
  request: DescribeClientQuotas.Request
): DescribeClientQuotas.Response => {
  const filter = filterOf(request)
  if ("errorCode" in filter) return { throttleTimeMs: 0, ...filter, entries: null }
  const entries: Array<NonNullable<DescribeClientQuotas.Response["entries"]>[number]> = []
  for (const q of image.clientQuotas.values()) {
    const parts = new Map(q.entity.map((e) => [e.entityType, e.entityName]))
    if (request.strict && parts.size !== filter.exact.size + filter.any.size) continue
    let ok = true
    for (const [type, name] of filter.exact) if (!parts.has(type) || parts.get(type) !== name) ok = false
    for (const type of filter.any) if (!parts.has(type)) ok = false
    if (!ok) continue
    entries.push({
      entity: q.entity.map((e) => ({ entityType: e.entityType, entityName: e.entityName })),
      values: [...q.quotas].map(([key, value]) => ({ key, value }))
    })
  }
  return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, entries }
}

const recordsBytes = (records: Spec.RecordsData | null | undefined): number => {
  if (records === null || records === undefined) return 0
  if (records instanceof Uint8Array) return records.length
  let n = 0
  for (const c of records) n += c.length
  return n
}

export interface BrokerQuotaOptions {
  /** The broker's current metadata image: where the quotas are. */
  readonly image: () => MetadataImage.MetadataImage
  /** Milliseconds (default the wall clock). */
  readonly now?: () => number
  /** `quota.window.*`: the byte-rate and request quotas' windows. */
  readonly window?: ClientQuotas.WindowConfig
  /** `controller.quota.window.*`: the controller mutation quota's bucket. */
  readonly controllerWindow?: ClientQuotas.WindowConfig
  /** The clock request handling time is measured on, in milliseconds (default `performance.now`). */
  readonly handlingClock?: () => number
}

/** The quota windows of a broker's config (`quota.window.*`, `controller.quota.window.*`). */
export const windowsOf = (
  config: BrokerConfig
): { readonly window: ClientQuotas.WindowConfig; readonly controllerWindow: ClientQuotas.WindowConfig } => ({
  window: { samples: config.quotaWindowNum, windowMs: config.quotaWindowSizeSeconds * 1000 },
  controllerWindow: {
    samples: config.controllerQuotaWindowNum,
    windowMs: config.controllerQuotaWindowSizeSeconds * 1000
  }
})

/**
 * Requests the request quota never counts (Kafka's `sendResponseExemptThrottle` on a broker: the
 * inter-broker ones; replica fetches are exempted by the Fetch handler).
 */
const REQUEST_QUOTA_EXEMPT: ReadonlySet<number> = new Set([
  WriteTxnMarkers.api.key,
  ReadMirrorStates.api.key,
  WriteMirrorStates.api.key,
  BumpLeaderEpochs.api.key
])

/** The versions from which a request over its controller mutation quota is refused, not only throttled. */
const STRICT_SINCE = { createTopics: 6, createPartitions: 3, deleteTopics: 5 }

const THROTTLED = {
  errorCode: E.THROTTLING_QUOTA_EXCEEDED,
  errorMessage: Errors.message(E.THROTTLING_QUOTA_EXCEEDED)
}

/**
 * On a broker: DescribeClientQuotas from the image, and Produce and Fetch wrapped to throttle the clients
 * over their quotas. Call it after Produce and Fetch are registered and before authorization wraps them.
 */
export const register = (handlers: Handlers, options: BrokerQuotaOptions): Handlers => {
  const now = options.now ?? (() => Date.now())
  const window = options.window ?? ClientQuotas.DEFAULT_WINDOW
  const produce = new ClientQuotas.ClientQuotaManager("producer_byte_rate", window)
  const fetch = new ClientQuotas.ClientQuotaManager("consumer_byte_rate", window)
  const requestTime = new ClientQuotas.ClientQuotaManager("request_percentage", window, window.windowMs)
  const mutations = new ClientQuotas.ControllerMutationQuotaManager(options.controllerWindow)
  const quotaOf = (key: ClientQuotas.QuotaKey, principal: string, clientId: string | null) => {
    const image = options.image()
    if (image.clientQuotas.size === 0) return undefined
    return ClientQuotas.resolve(
      (entity) => MetadataImage.clientQuotasOf(image, entity),
      key,
      ClientQuotas.userOf(principal),
      clientId ?? ""
    )
  }
  handlers.measureRequestTime((ctx, ms) => {
    if (REQUEST_QUOTA_EXEMPT.has(ctx.apiKey)) return 0
    const quota = quotaOf("request_percentage", ctx.connection.principal, ctx.clientId)
    return quota === undefined
      ? 0
      : requestTime.recordAndGetThrottleTimeMs(quota, ClientQuotas.requestTimePercent(ms), now())
  }, options.handlingClock)
  handlers.register(DescribeClientQuotas.api, (_ctx, request) => describeClientQuotas(options.image(), request))
  handlers.wrap(Produce.api, (next) => async (ctx, request) => {
    const response = await next(ctx, request)
    const quota = quotaOf("producer_byte_rate", ctx.connection.principal, ctx.clientId)
    if (quota === undefined) return response
    const ms = produce.recordAndGetThrottleTimeMs(quota, ctx.requestBytes, now())
    if (ms <= 0) return response
    ctx.throttle(ms)
    return response === NoResponse ? response : { ...response, throttleTimeMs: ms }
  })
  handlers.wrap(Fetch.api, (next) => async (ctx, request) => {
    const replicaId = ctx.apiVersion >= 15 ? request.replicaState.replicaId : request.replicaId
    if (replicaId >= 0) ctx.exemptFromRequestQuota()
    const quota = replicaId >= 0 ? undefined : quotaOf("consumer_byte_rate", ctx.connection.principal, ctx.clientId)
    if (quota === undefined) return next(ctx, request)
    const cap = fetch.maxValueInQuotaWindow(quota)
    const response: Spec.StructInput<typeof Fetch.Response.fields> | NoResponseType = await next(
      ctx,
      cap < request.maxBytes ? { ...request, maxBytes: Math.max(1, cap) } : request
    )
    if (response === NoResponse) return response
    let bytes = 0
    for (const t of response.responses ?? []) for (const p of t.partitions ?? []) bytes += recordsBytes(p.records)
    const at = now()
    const ms = fetch.recordAndGetThrottleTimeMs(quota, bytes, at)
    if (ms <= 0) return response
    // The client gets none of these bytes, so they do not count against it.
    fetch.unrecord(quota, bytes, at)
    ctx.throttle(ms)
    return { throttleTimeMs: ms, errorCode: 0, sessionId: response.sessionId ?? 0, responses: [] }
  })
  const mutationQuota = (ctx: RequestContext, strictSince: number) =>
    mutations.newQuotaFor(
      quotaOf("controller_mutation_rate", ctx.connection.principal, ctx.clientId),
      ctx.apiVersion >= strictSince
    )
  /** The throttle of a request's mutations: on the response (the longest throttle wins) and on the connection. */
  const throttled = (ctx: RequestContext, quota: ClientQuotas.ControllerMutationQuota, controllerMs: number) => {
    const ms = Math.max(controllerMs, quota.throttleTimeMs(now()))
    if (ms > 0) ctx.throttle(ms)
    return ms
  }
  handlers.wrap(CreateTopics.api, (next) => async (ctx, request) => {
    const quota = mutationQuota(ctx, STRICT_SINCE.createTopics)
    if (quota === ClientQuotas.UNBOUNDED_MUTATION_QUOTA) return next(ctx, request)
    // The partitions each topic creates; with the controller's default count (-1), one until the answer says.
    const asked = (t: (typeof request.topics)[number]) =>
      t.numPartitions >= 0 ? t.numPartitions : t.assignments.length > 0 ? t.assignments.length : 1
    const image = options.image()
    const at = now()
    // A topic that exists is refused by the controller before any quota, as Kafka refuses it.
    const counted = new Set(request.topics.filter((t) => MetadataImage.topicByName(image, t.name) === undefined))
    const accepted = request.topics.filter((t) => !counted.has(t) || quota.record(asked(t), at))
    const response = accepted.length === 0 ? undefined : await next(ctx, { ...request, topics: accepted })
    if (response === NoResponse) return response
    const results = new Map((response?.topics ?? []).map((t) => [t.name, t]))
    for (const t of accepted) {
      if (!counted.has(t)) continue
      const r = results.get(t.name)
      const created = r === undefined || (r.errorCode ?? 0) !== 0 ? 0 : (r.numPartitions ?? asked(t))
      if (created !== asked(t)) quota.unrecord(asked(t) - Math.max(0, created), now())
    }
    const throttleTimeMs = throttled(ctx, quota, response?.throttleTimeMs ?? 0)
    return {
      throttleTimeMs,
      topics: request.topics.map(
        (t) =>
          results.get(t.name) ?? {
            name: t.name,
            topicId: Uuid.ZERO,
            ...THROTTLED,
            numPartitions: -1,
            replicationFactor: -1,
            configs: null
          }
      )
    }
  })
  handlers.wrap(CreatePartitions.api, (next) => async (ctx, request) => {
    const quota = mutationQuota(ctx, STRICT_SINCE.createPartitions)
    if (quota === ClientQuotas.UNBOUNDED_MUTATION_QUOTA) return next(ctx, request)
    const image = options.image()
    // An unknown topic, or one that would not grow, is refused by the controller before any quota.
    const added = (t: (typeof request.topics)[number]) =>
      Math.max(0, t.count - (MetadataImage.topicByName(image, t.name)?.partitions.size ?? t.count))
    const at = now()
    const accepted = request.topics.filter((t) => added(t) === 0 || quota.record(added(t), at))
    const response = accepted.length === 0 ? undefined : await next(ctx, { ...request, topics: accepted })
    if (response === NoResponse) return response
    const results = new Map((response?.results ?? []).map((r) => [r.name, r]))
    for (const t of accepted)
      if (added(t) > 0 && (results.get(t.name)?.errorCode ?? 0) !== 0) quota.unrecord(added(t), now())
    return {
      throttleTimeMs: throttled(ctx, quota, response?.throttleTimeMs ?? 0),
      results: request.topics.map((t) => results.get(t.name) ?? { name: t.name, ...THROTTLED })
    }
  })
  handlers.wrap(DeleteTopics.api, (next) => async (ctx, request) => {
    const quota = mutationQuota(ctx, STRICT_SINCE.deleteTopics)
    if (quota === ClientQuotas.UNBOUNDED_MUTATION_QUOTA) return next(ctx, request)
    const image = options.image()
    // Before v6 topics come by name only; from v6 by name or id.
    const asked = [
      ...request.topicNames.map((name) => ({ name, topicId: Uuid.ZERO })),
      ...request.topics.map((t) => ({ name: t.name, topicId: t.topicId }))
    ]
    const topicOf = (t: (typeof asked)[number]) =>
      t.name !== null ? MetadataImage.topicByName(image, t.name) : MetadataImage.topicById(image, t.topicId)
    const deleted = (t: (typeof asked)[number]) => topicOf(t)?.partitions.size ?? 0
    const at = now()
    // An unknown topic is refused by the controller before any quota.
    const accepted = new Set(asked.filter((t) => deleted(t) === 0 || quota.record(deleted(t), at)))
    const response =
      accepted.size === 0
        ? undefined
        : await next(ctx, {
            ...request,
            topicNames: request.topicNames.filter((name) =>
              [...accepted].some((t) => t.name === name && t.topicId === Uuid.ZERO)
            ),
            topics: request.topics.filter((t) =>
              [...accepted].some((a) => a.name === t.name && a.topicId === t.topicId)
            )
          })
    if (response === NoResponse) return response
    const responses = response?.responses ?? []
    const resultOf = (t: (typeof asked)[number]) =>
      responses.find(
        (r) => (t.name !== null && r.name === t.name) || (t.topicId !== Uuid.ZERO && r.topicId === t.topicId)
      )
    for (const t of accepted)
      if (deleted(t) > 0 && (resultOf(t)?.errorCode ?? 0) !== 0) quota.unrecord(deleted(t), now())
    return {
      throttleTimeMs: throttled(ctx, quota, response?.throttleTimeMs ?? 0),
      responses: asked.map((t) =>
        accepted.has(t)
          ? (resultOf(t) ?? { name: t.name, topicId: t.topicId, errorCode: 0, errorMessage: null })
          : { name: t.name, topicId: t.topicId, ...THROTTLED }
      )
    }
  })
  return handlers
}

export interface ConnectionQuotaOptions {
  /** The broker's current metadata image: where the `ip` quotas are. */
  readonly image: () => MetadataImage.MetadataImage
  /** Milliseconds (default the wall clock). */
  readonly now?: () => number
  /** `quota.window.*`: the connection rate's window (a throttle lasts at most one window). */
  readonly window?: ClientQuotas.WindowConfig
}

/**
 * The socket servers' admit hook for `connection_creation_rate` (Kafka's `ConnectionQuotas` of IP
 * entities, the default IP entity for every IP without its own): 0 accepts a new connection from that
 * address, otherwise how long to hold it before closing it.
 */
export const admitConnection = (options: ConnectionQuotaOptions): ((remoteHost: string) => number) => {
  const now = options.now ?? (() => Date.now())
  const quotas = new ClientQuotas.ConnectionQuotas(options.window)
  return (remoteHost) => {
    const image = options.image()
    if (image.clientQuotas.size === 0) return 0
    const rate = ClientQuotas.connectionRateOf((entity) => MetadataImage.clientQuotasOf(image, entity), remoteHost)
    return quotas.recordAndGetThrottleTimeMs(remoteHost, rate, now())
  }
}

/** On a controller: AlterClientQuotas decided by the quorum controller (`ClientQuotaControl.alterClientQuotas`). */
export const registerController = (
  handlers: Handlers,
  controller: Pick<QuorumController.QuorumController, "alterClientQuotas">
): Handlers =>
  handlers.register(AlterClientQuotas.api, async (_ctx, request) => ({
    throttleTimeMs: 0,
    entries: [...(await controller.alterClientQuotas(request))]
  }))
