/**
 * The controller's hard state: one slice per control module, changed only by replaying metadata
 * records. `replay` sends each record type to the module that owns it (a record may concern two
 * slices: a topic's records also tell configuration which names exist). What it replays is what the
 * metadata log holds, so live writes, restarts and snapshots all give the same state.
 *
 * Soft state (broker heartbeat times, pending responses) lives in the runtime, never here.
 */
import type { MetadataRecords } from "@clustermirror/protocol"
import * as AclControl from "./AclControl.js"
import * as ClientQuotaControl from "./ClientQuotaControl.js"
import * as ClusterControl from "./ClusterControl.js"
import * as ConfigurationControl from "./ConfigurationControl.js"
import * as FeatureControl from "./FeatureControl.js"
import * as ProducerIdControl from "./ProducerIdControl.js"
import * as ReplicationControl from "./ReplicationControl.js"
import * as ScramControl from "./ScramControl.js"

export interface ControllerState {
  readonly acls: AclControl.State
  readonly clientQuotas: ClientQuotaControl.State
  readonly cluster: ClusterControl.State
  readonly configs: ConfigurationControl.State
  readonly features: FeatureControl.State
  readonly producerIds: ProducerIdControl.State
  readonly replication: ReplicationControl.State
  readonly scram: ScramControl.State
}

export const empty: ControllerState = {
  acls: AclControl.empty,
  clientQuotas: ClientQuotaControl.empty,
  cluster: ClusterControl.empty,
  configs: ConfigurationControl.empty,
  features: FeatureControl.empty,
  producerIds: ProducerIdControl.empty,
  replication: ReplicationControl.empty,
  scram: ScramControl.empty
}

/**
 * Applies one record found (or about to be written) at `offset` of the metadata log; replication
 * keeps offsets for KIP-1279's optimistic locking. Dies (throws) where the owning module's
 * invariants do; that means a corrupt log or a defect in a decide function, and the runtime appends
 * nothing whose replay died.
 */
export const replay = (
  state: ControllerState,
  record: MetadataRecords.MetadataRecord,
  offset: bigint
): ControllerState => ({
  ...replaySlices(state, record),
  replication: ReplicationControl.replay(state.replication, record, offset)
})

/**
 * Applies records in order, the i-th at `offsetOf(i)`. Each module only reads its own slice, so
 * replication and configuration take the whole batch at once (in time linear in the batch, where a
 * record at a time copies their topic maps per record) and the other slices go record by record.
 */
const replayBatch = (
  state: ControllerState,
  records: ReadonlyArray<MetadataRecords.MetadataRecord>,
  offsetOf: (index: number) => bigint
): ControllerState => {
  let s = state
  const configs: Array<ConfigurationControl.ConfigurationRecord> = []
  for (const r of records)
    switch (r.type) {
      case "ConfigRecord":
      case "TopicRecord":
      case "RemoveTopicRecord":
        configs.push(r)
        break
      default:
        s = replaySlices(s, r)
    }
  return {
    ...s,
    configs: ConfigurationControl.replayAll(state.configs, configs),
    replication: ReplicationControl.replayAll(state.replication, records, offsetOf)
  }
}

/** The slices other than replication (which a record of a topic concerns too: configs know topic names). */
const replaySlices = (state: ControllerState, record: MetadataRecords.MetadataRecord): ControllerState => {
  switch (record.type) {
    case "RegisterBrokerRecord":
    case "UnregisterBrokerRecord":
    case "FenceBrokerRecord":
    case "UnfenceBrokerRecord":
    case "BrokerRegistrationChangeRecord":
      return { ...state, cluster: ClusterControl.replay(state.cluster, record) }
    case "TopicRecord":
    case "RemoveTopicRecord":
    case "ConfigRecord":
      return { ...state, configs: ConfigurationControl.replay(state.configs, record) }
    case "FeatureLevelRecord":
      return { ...state, features: FeatureControl.replay(state.features, record) }
    case "ProducerIdsRecord":
      return { ...state, producerIds: ProducerIdControl.replay(state.producerIds, record) }
    case "UserScramCredentialRecord":
    case "RemoveUserScramCredentialRecord":
      return { ...state, scram: ScramControl.replay(state.scram, record) }
    case "AccessControlEntryRecord":
    case "RemoveAccessControlEntryRecord":
      return { ...state, acls: AclControl.replay(state.acls, record) }
    case "ClientQuotaRecord":
      return { ...state, clientQuotas: ClientQuotaControl.replay(state.clientQuotas, record) }
    // Replication's alone.
    case "PartitionRecord":
    case "PartitionChangeRecord":
    case "MirrorTopicStateChangeRecord":
    // Markers: transactions group records for the log reader, they carry no state of their own.
    case "NoOpRecord":
    case "BeginTransactionRecord":
    case "EndTransactionRecord":
    case "AbortTransactionRecord":
      return state
    default:
      return absurd(record)
  }
}

const absurd = (record: never): never => {
  throw new Error(`unhandled metadata record ${JSON.stringify(record)}`)
}

/**
 * Applies the records of a snapshot that ends after `lastOffset`. A snapshot keeps the state, not the
 * offset each record was first written at, so every record counts as written at the snapshot's last
 * offset: a broker that loaded the same snapshot (or any later point of the log) validates at that
 * offset or after it, and the optimistic lock compares offsets of the same log.
 */
export const replaySnapshot = (
  state: ControllerState,
  records: ReadonlyArray<MetadataRecords.MetadataRecord>,
  lastOffset: bigint
): ControllerState => replayBatch(state, records, () => lastOffset)

/** Applies records written one after another from `firstOffset` on. */
export const replayAll = (
  state: ControllerState,
  records: ReadonlyArray<MetadataRecords.MetadataRecord>,
  firstOffset: bigint
): ControllerState => replayBatch(state, records, (i) => firstOffset + BigInt(i))
