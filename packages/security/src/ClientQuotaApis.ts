/**
 * Client quotas on the request path: DescribeClientQuotas (48) from the broker's metadata image,
 * AlterClientQuotas (49) on the controller (brokers forward it there), and the enforcement of
 * `producer_byte_rate` and `consumer_byte_rate` around Produce and Fetch as Kafka does since KIP-219:
 * the response carries `throttle_time_ms` and the connection is muted for that time, at every request version
 * (clients older than KIP-219 do not wait themselves: the mute holds their next request). A produce over its
 * quota is appended; a fetch over its quota is answered without records. Fetches from follower
 * replicas are not client-quota'd.
 *
 * The decisions are `ClientQuotaControl`'s (validation, records) and `ClientQuotas`' (resolution, rate);
 * this module only wires them to handlers.
 */
import type { QuorumController } from "@clustermirror/controller"
import { MetadataImage } from "@clustermirror/metadata-log"
import { type NoResponse as NoResponseType, type Handlers, NoResponse } from "@clustermirror/network/RequestChannel"
import { AlterClientQuotas, DescribeClientQuotas, Errors, Fetch, Produce, type Spec } from "@clustermirror/protocol"
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
  readonly window?: ClientQuotas.WindowConfig
}

/**
 * On a broker: DescribeClientQuotas from the image, and Produce and Fetch wrapped to throttle the clients
 * over their quotas. Call it after Produce and Fetch are registered and before authorization wraps them.
 */
export const register = (handlers: Handlers, options: BrokerQuotaOptions): Handlers => {
  const now = options.now ?? (() => Date.now())
  const produce = new ClientQuotas.ClientQuotaManager("producer_byte_rate", options.window)
  const fetch = new ClientQuotas.ClientQuotaManager("consumer_byte_rate", options.window)
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
  return handlers
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
