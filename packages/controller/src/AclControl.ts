/**
 * ACLs (Kafka's `AclControlManager`): the controller's slice of ACL bindings by id, CreateAcls (30)
 * and DeleteAcls (31). Decide is pure (ids are passed in) and returns AccessControlEntryRecord /
 * RemoveAccessControlEntryRecord; `replay` is the only way the state changes. Access decisions are the
 * authorizer's, not this module's.
 */
import { Acl } from "@clustermirror/authorizer"
import { Errors, MetadataRecords, type Uuid } from "@clustermirror/protocol"
import * as ControllerResult from "./ControllerResult.js"

export interface AclEntry extends Acl.AclBinding {
  readonly id: Uuid.Uuid
}

export interface State {
  readonly acls: ReadonlyMap<Uuid.Uuid, AclEntry>
}

export const empty: State = { acls: new Map() }

export type AclRecord =
  | MetadataRecords.MetadataRecordOf<"AccessControlEntryRecord">
  | MetadataRecords.MetadataRecordOf<"RemoveAccessControlEntryRecord">

/** Applies an ACL record. Dies on an id added twice or removed while unknown. */
export const replay = (state: State, record: AclRecord): State => {
  const acls = new Map(state.acls)
  if (record.type === "AccessControlEntryRecord") {
    if (acls.has(record.data.id)) throw new Error(`AccessControlEntryRecord: ACL ${record.data.id} exists already`)
    acls.set(record.data.id, { ...record.data })
  } else {
    if (!acls.delete(record.data.id)) throw new Error(`RemoveAccessControlEntryRecord: unknown ACL ${record.data.id}`)
  }
  return { acls }
}

const sameBinding = (a: Acl.AclBinding, b: Acl.AclBinding): boolean =>
  a.resourceType === b.resourceType &&
  a.resourceName === b.resourceName &&
  a.patternType === b.patternType &&
  a.principal === b.principal &&
  a.host === b.host &&
  a.operation === b.operation &&
  a.permissionType === b.permissionType

export interface CreationResult {
  readonly errorCode: number
  readonly errorMessage: string | null
}

/**
 * CreateAcls: one result per creation, in order. An invalid binding gets INVALID_REQUEST with Kafka's
 * message; a binding that exists already (or earlier in the request) succeeds without a record; each
 * new one is an AccessControlEntryRecord with an id from `newId`.
 */
export const createAcls = (
  state: State,
  creations: ReadonlyArray<Acl.AclBinding>,
  newId: () => Uuid.Uuid
): ControllerResult.ControllerResult<ReadonlyArray<CreationResult>> => {
  const records: Array<MetadataRecords.MetadataRecord> = []
  const added: Array<Acl.AclBinding> = []
  const results = creations.map((c): CreationResult => {
    const invalid = Acl.invalidBinding(c)
    if (invalid !== null) return { errorCode: Errors.ErrorCode.INVALID_REQUEST, errorMessage: invalid }
    const binding: Acl.AclBinding = {
      resourceType: c.resourceType,
      resourceName: c.resourceName,
      patternType: c.patternType,
      principal: c.principal,
      host: c.host,
      operation: c.operation,
      permissionType: c.permissionType
    }
    const exists =
      [...state.acls.values()].some((a) => sameBinding(a, binding)) || added.some((a) => sameBinding(a, binding))
    if (!exists) {
      added.push(binding)
      records.push(MetadataRecords.make("AccessControlEntryRecord", { id: newId(), ...binding }))
    }
    return { errorCode: 0, errorMessage: null }
  })
  return ControllerResult.of(records, results)
}

export interface FilterResult {
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly matchingAcls: ReadonlyArray<Acl.AclBinding>
}

/**
 * DeleteAcls: for each filter, the bindings it matches (each removed once, with a
 * RemoveAccessControlEntryRecord, even when several filters match it); an invalid filter gets
 * INVALID_REQUEST with Kafka's message and removes nothing.
 */
export const deleteAcls = (
  state: State,
  filters: ReadonlyArray<Acl.AclBindingFilter>
): ControllerResult.ControllerResult<ReadonlyArray<FilterResult>> => {
  const removed = new Set<Uuid.Uuid>()
  const records: Array<MetadataRecords.MetadataRecord> = []
  const results = filters.map((f): FilterResult => {
    const invalid = Acl.invalidFilter(f)
    if (invalid !== null)
      return { errorCode: Errors.ErrorCode.INVALID_REQUEST, errorMessage: invalid, matchingAcls: [] }
    const matching: Array<Acl.AclBinding> = []
    for (const acl of state.acls.values()) {
      if (!Acl.matches(f, acl)) continue
      const { id, ...binding } = acl
      matching.push(binding)
      if (!removed.has(id)) {
        removed.add(id)
        records.push(MetadataRecords.make("RemoveAccessControlEntryRecord", { id }))
      }
    }
    return { errorCode: 0, errorMessage: null, matchingAcls: matching }
  })
  return ControllerResult.of(records, results)
}

/** The bindings a filter matches (DescribeAcls), in a stable order. */
export const describeAcls = (
  acls: Iterable<Acl.AclBinding>,
  filter: Acl.AclBindingFilter
): ReadonlyArray<Acl.AclBinding> => [...acls].filter((a) => Acl.matches(filter, a))
