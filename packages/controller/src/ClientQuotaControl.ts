/**
 * Client quotas (Kafka's `ClientQuotaControlManager`): AlterClientQuotas validates each entry (entity
 * types and combinations, IP names, keys per entity, values) and turns the changes it accepts into
 * ClientQuotaRecord, one per key set or removed. Owns the client quota slice of the controller state.
 *
 * Decide is pure and returns the records with one result per entry; `replay` is the only way the state
 * changes. Every key Kafka knows is stored and enforced by the brokers: `producer_byte_rate`,
 * `consumer_byte_rate`, `request_percentage` and `controller_mutation_rate` for users and client-ids,
 * `connection_creation_rate` for IPs.
 */
import { MetadataImage } from "@clustermirror/metadata-log"
import { type AlterClientQuotas, Errors, MetadataRecords } from "@clustermirror/protocol"
import { isIP } from "node:net"
import * as ControllerResult from "./ControllerResult.js"

export interface State {
  /** By `MetadataImage.clientQuotaEntityKey`; an entity without quotas is absent. */
  readonly entities: MetadataImage.ClientQuotasImage
}

export const empty: State = { entities: new Map() }

export type ClientQuotaRecord = MetadataRecords.MetadataRecordOf<"ClientQuotaRecord">

/** Kafka's quota keys, by the entity types that take them. */
export const CLIENT_QUOTA_KEYS: ReadonlySet<string> = new Set([
  "producer_byte_rate",
  "consumer_byte_rate",
  "request_percentage",
  "controller_mutation_rate"
])
export const IP_QUOTA_KEYS: ReadonlySet<string> = new Set(["connection_creation_rate"])
/** Keys whose value is a whole number of bytes per second (Kafka's LONG quota configs). */
const LONG_KEYS: ReadonlySet<string> = new Set(["producer_byte_rate", "consumer_byte_rate"])
/** Keys whose value is a whole number of connections per second (Kafka's INT quota configs). */
const INT_KEYS: ReadonlySet<string> = new Set(["connection_creation_rate"])
const INT_MAX = 2_147_483_647
const ENTITY_TYPES: ReadonlySet<string> = new Set(["user", "client-id", "ip"])

/** The quotas of an entity, if it has any. */
export const quotasOf = (
  state: State,
  entity: ReadonlyArray<MetadataImage.ClientQuotaEntityPart>
): ReadonlyMap<string, number> => state.entities.get(MetadataImage.clientQuotaEntityKey(entity))?.quotas ?? new Map()

/** Applies a quota record: sets the key's value, or removes the key (an absent key stays absent). */
export const replay = (state: State, record: ClientQuotaRecord): State => {
  const key = MetadataImage.clientQuotaEntityKey(record.data.entity)
  const current = state.entities.get(key)
  const quotas = new Map(current?.quotas ?? [])
  if (record.data.remove) quotas.delete(record.data.key)
  else {
    if (!Number.isFinite(record.data.value) || record.data.value <= 0)
      throw new Error(`ClientQuotaRecord: quota ${record.data.key} of ${key} is ${record.data.value}`)
    quotas.set(record.data.key, record.data.value)
  }
  const entities = new Map(state.entities)
  if (quotas.size === 0) entities.delete(key)
  else entities.set(key, { entity: current?.entity ?? MetadataImage.canonicalEntity(record.data.entity), quotas })
  return { entities }
}

type Entry = AlterClientQuotas.Request["entries"][number]
export type EntryResult = AlterClientQuotas.Response["entries"][number]

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

/** Why an operation is refused, or null when it may be applied. */
const opProblem = (ip: boolean, op: Entry["ops"][number]): string | null => {
  const known = ip ? IP_QUOTA_KEYS : CLIENT_QUOTA_KEYS
  if (!known.has(op.key)) return `Invalid configuration key ${op.key}`
  if (op.remove) return null
  if (!(op.value > 0)) return `Quota ${op.key} must be greater than 0`
  if (LONG_KEYS.has(op.key) && !Number.isInteger(op.value)) return `Configuration ${op.key} must be a Long value`
  if (INT_KEYS.has(op.key)) {
    if (op.value > INT_MAX) return `Proposed value for ${op.key} is too large for an INT.`
    if (Math.abs(op.value % 1) > 1e-6) return `${op.key} cannot be a fractional value.`
  }
  // request_percentage and controller_mutation_rate are doubles: any value above 0.
  return null
}

/**
 * AlterClientQuotas (49): one result per entry, in request order. An entry with an invalid entity or
 * any invalid operation gets INVALID_REQUEST with the first problem and none of its changes apply.
 * Otherwise each set that changes a value emits a ClientQuotaRecord with the value, and each removal of
 * a key the entity has one with `remove`. `validateOnly` answers the same and emits nothing.
 */
export const alterClientQuotas = (
  state: State,
  request: AlterClientQuotas.Request
): ControllerResult.ControllerResult<ReadonlyArray<EntryResult>> => {
  let working = state
  const records: Array<ClientQuotaRecord> = []
  const results = request.entries.map((entry): EntryResult => {
    const ip = entry.entity.some((e) => e.entityType === "ip")
    const keys = new Set<string>()
    let problem = entityProblem(entry.entity)
    for (const op of entry.ops) {
      if (problem !== null) break
      problem = keys.has(op.key) ? `Duplicate quota key ${op.key} in a client quota entry` : opProblem(ip, op)
      keys.add(op.key)
    }
    if (problem !== null)
      return { errorCode: Errors.ErrorCode.INVALID_REQUEST, errorMessage: problem, entity: entry.entity }
    const entity = MetadataImage.canonicalEntity(entry.entity)
    for (const op of entry.ops) {
      const current = quotasOf(working, entity).get(op.key)
      if (op.remove ? current === undefined : current === op.value) continue
      const record = MetadataRecords.make("ClientQuotaRecord", {
        entity: [...entity],
        key: op.key,
        value: op.remove ? 0 : op.value,
        remove: op.remove
      })
      working = replay(working, record)
      records.push(record)
    }
    return { errorCode: 0, errorMessage: null, entity: entry.entity }
  })
  return ControllerResult.of(request.validateOnly ? [] : records, results)
}
