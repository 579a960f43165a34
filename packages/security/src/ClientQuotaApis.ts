/**
 * Client quotas (AlterClientQuotas 49, DescribeClientQuotas 48) on brokers that do not throttle clients.
 * AlterClientQuotas validates each entry as Apache Kafka does (entity types and combinations, IP names,
 * keys per entity, values) and then refuses every quota it would set with INVALID_REQUEST naming the key:
 * a quota that is not enforced is never stored. Removing a quota succeeds (none is stored). So
 * DescribeClientQuotas matches nothing.
 */
import { AlterClientQuotas, DescribeClientQuotas, Errors } from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"
import { isIP } from "node:net"

/** Kafka's quota keys, by the entity types that take them. */
export const CLIENT_QUOTA_KEYS: ReadonlySet<string> = new Set([
  "producer_byte_rate",
  "consumer_byte_rate",
  "request_percentage",
  "controller_mutation_rate"
])
export const IP_QUOTA_KEYS: ReadonlySet<string> = new Set(["connection_creation_rate"])
/** Keys whose value is a whole number of bytes per second. */
const LONG_KEYS: ReadonlySet<string> = new Set(["producer_byte_rate", "consumer_byte_rate"])

const ENTITY_TYPES: ReadonlySet<string> = new Set(["user", "client-id", "ip"])

type Entry = AlterClientQuotas.Request["entries"][number]

/** Why an entity cannot carry quotas, or null. */
const entityProblem = (entity: Entry["entity"]): string | null => {
  if (entity.length === 0) return "Invalid empty client quota entity"
  const seen = new Set<string>()
  for (const e of entity) {
    if (!ENTITY_TYPES.has(e.entityType)) return `Unhandled client quota entity type: ${e.entityType}`
    if (seen.has(e.entityType)) return `Duplicate ${e.entityType} entity in client quota entity`
    seen.add(e.entityType)
    if (e.entityName === "") return `Empty ${e.entityType} is not supported in client quota entity`
    if (e.entityType === "ip" && e.entityName !== null && isIP(e.entityName) === 0)
      return `${e.entityName} is not a valid IP or resolvable host.`
  }
  if (seen.has("ip") && seen.size > 1)
    return "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
  return null
}

/** Why an operation is refused, or null when it may be applied (only a removal). */
const opProblem = (ip: boolean, op: Entry["ops"][number]): string | null => {
  const known = ip ? IP_QUOTA_KEYS : CLIENT_QUOTA_KEYS
  if (!known.has(op.key)) return `Invalid configuration key ${op.key}`
  if (op.remove) return null
  if (!(op.value > 0)) return `Quota ${op.key} must be greater than 0`
  if (LONG_KEYS.has(op.key) && !Number.isInteger(op.value)) return `Configuration ${op.key} must be a Long value`
  return `Quota ${op.key} is not enforced by this cluster (its brokers do not throttle clients), so it is not stored`
}

/** AlterClientQuotas (49): per entry, INVALID_REQUEST with the first problem, else success (removals only). */
export const alterClientQuotas = (request: AlterClientQuotas.Request): AlterClientQuotas.Response => ({
  throttleTimeMs: 0,
  entries: request.entries.map((entry) => {
    const ip = entry.entity.some((e) => e.entityType === "ip")
    const keys = new Set<string>()
    let problem = entityProblem(entry.entity)
    for (const op of entry.ops) {
      if (problem !== null) break
      problem = keys.has(op.key) ? `Duplicate quota key ${op.key} in a client quota entry` : opProblem(ip, op)
      keys.add(op.key)
    }
    return {
      errorCode: problem === null ? 0 : Errors.ErrorCode.INVALID_REQUEST,
      errorMessage: problem,
      entity: entry.entity
    }
  })
})

/** DescribeClientQuotas (48): nothing is stored, so no entity matches. */
export const describeClientQuotas = (_request: DescribeClientQuotas.Request): DescribeClientQuotas.Response => ({
  throttleTimeMs: 0,
  errorCode: 0,
  errorMessage: null,
  entries: []
})

export const register = (handlers: Handlers): Handlers =>
  handlers
    .register(AlterClientQuotas.api, (_ctx, request) => alterClientQuotas(request))
    .register(DescribeClientQuotas.api, (_ctx, request) => describeClientQuotas(request))
