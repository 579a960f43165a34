/**
 * MetadataImage: the cluster's metadata as of one point of the metadata log, immutable. It holds the
 * finalized features, the broker registrations, the topics and their partitions (with KIP-1279's
 * mirror name and desired mirror state), configs by resource, the next producer-ID block, the
 * ACLs and the users' SCRAM credentials, plus the provenance of the last record it contains.
 *
 * Images change only through `MetadataDelta` (replay records, then apply), so every image is the
 * projection of a prefix of the log. This module owns the shapes and read helpers; it must not decide
 * anything or read the log.
 */
import type { MirrorPartitionState, Uuid } from "@clustermirror/protocol"
import * as MetadataProvenance from "./MetadataProvenance.js"

export type BrokerId = number
export type TopicId = Uuid.Uuid
export type PartitionIndex = number

/** PartitionChangeRecord `Leader`: the partition has no leader. */
export const NO_LEADER = -1
/** PartitionChangeRecord `Leader`: the leader did not change. */
export const NO_LEADER_CHANGE = -2

/** LeaderRecoveryState bytes. */
export const LeaderRecoveryState = { RECOVERED: 0, RECOVERING: 1 } as const

/** Config resource types of ConfigRecord (Kafka's ConfigResource.Type bytes). */
export const ConfigResourceType = { TOPIC: 2, BROKER: 4, CLUSTER_MIRROR: 64 } as const

/** Finalized feature names we know of. */
export const METADATA_VERSION = "metadata.version"
export const MIRROR_VERSION = "mirror.version"

// ---------------------------------------------------------------------------------------------------
// Brokers

export interface Endpoint {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly securityProtocol: number
}

export interface SupportedFeature {
  readonly name: string
  readonly minSupportedVersion: number
  readonly maxSupportedVersion: number
}

export interface BrokerRegistration {
  readonly id: BrokerId
  readonly epoch: bigint
  readonly incarnationId: Uuid.Uuid
  /** In registration order. */
  readonly listeners: ReadonlyArray<Endpoint>
  readonly supportedFeatures: ReadonlyArray<SupportedFeature>
  readonly rack: string | null
  readonly fenced: boolean
  readonly inControlledShutdown: boolean
  readonly isMigratingZkBroker: boolean
  readonly logDirs: ReadonlyArray<Uuid.Uuid>
}

export interface ClusterImage {
  readonly brokers: ReadonlyMap<BrokerId, BrokerRegistration>
}

// ---------------------------------------------------------------------------------------------------
// Topics

export interface PartitionRegistration {
  readonly replicas: ReadonlyArray<BrokerId>
  readonly directories: ReadonlyArray<Uuid.Uuid>
  readonly isr: ReadonlyArray<BrokerId>
  readonly removingReplicas: ReadonlyArray<BrokerId>
  readonly addingReplicas: ReadonlyArray<BrokerId>
  /** -1 when there is no leader. */
  readonly leader: BrokerId
  readonly leaderRecoveryState: number
  readonly leaderEpoch: number
  /** Bumped by every change of the partition. */
  readonly partitionEpoch: number
  readonly eligibleLeaderReplicas: ReadonlyArray<BrokerId>
  readonly lastKnownElr: ReadonlyArray<BrokerId>
}

export interface TopicImage {
  readonly name: string
  readonly id: TopicId
  readonly partitions: ReadonlyMap<PartitionIndex, PartitionRegistration>
  /**
   * KIP-1279: the mirror this topic belongs to. We keep the controller's semantics: a record with a
   * null mirror name disassociates the topic (null here), rather than the prototype broker image's
   * habit of keeping the previous name.
   */
  readonly mirrorName: string | null
  /** KIP-1279: the desired state from the last MirrorTopicStateChangeRecord; UNKNOWN when none. */
  readonly desiredMirrorState: MirrorPartitionState.MirrorPartitionState
}

export interface TopicsImage {
  readonly byId: ReadonlyMap<TopicId, TopicImage>
  readonly byName: ReadonlyMap<string, TopicImage>
}

// ---------------------------------------------------------------------------------------------------
// Configs, producer IDs, ACLs

export interface ConfigResource {
  readonly type: number
  readonly name: string
}

/** The non-empty config values of one resource. */
export interface ConfigResourceImage extends ConfigResource {
  readonly values: ReadonlyMap<string, string>
}

/** By `resourceKey(type, name)`; resources without any value are absent. */
export type ConfigsImage = ReadonlyMap<string, ConfigResourceImage>

export interface ProducerIdsImage {
  /** The first producer ID of the next block to hand out; -1 before any block. */
  readonly nextProducerId: bigint
  /**
   * No broker hands out a producer id below this one (KIP-1279 failover: the ids a stopped mirror partition
   * saw mirrored are below it), even from a block it holds; -1 when no floor was set.
   */
  readonly floor: bigint
}

/**
 * The broker id of a ProducerIdsRecord that sets a floor: no block for a broker, but every id below its
 * next producer id is out of use. Kafka writes -1 in snapshots, so a snapshot of an older version reads as a
 * floor at its next producer id: below it only blocks handed out before, so nothing usable is lost.
 */
export const PRODUCER_ID_FLOOR_BROKER = -1
/** The broker id of a snapshot's ProducerIdsRecord that only restores where the next block starts. */
export const PRODUCER_ID_SNAPSHOT_BROKER = -2

/**
 * Replays a ProducerIdsRecord: a block moves the next producer id strictly forward; a floor may leave it
 * where it is but must raise the floor. Left with the reason when the record breaks that order.
 */
export const replayProducerIds = (
  image: ProducerIdsImage,
  record: { readonly brokerId: number; readonly nextProducerId: bigint }
): ProducerIdsImage | string => {
  const next = record.nextProducerId
  if (record.brokerId === PRODUCER_ID_FLOOR_BROKER) {
    if (next < image.nextProducerId || next <= image.floor || next < 0n)
      return `producer ID floor ${next} is below the next producer ID ${image.nextProducerId} or does not exceed the floor ${image.floor}`
    return { nextProducerId: next, floor: next }
  }
  if (next <= image.nextProducerId) return `next producer ID ${next} does not exceed ${image.nextProducerId}`
  return { nextProducerId: next, floor: image.floor }
}

export interface AclEntry {
  readonly id: Uuid.Uuid
  readonly resourceType: number
  readonly resourceName: string
  readonly patternType: number
  readonly principal: string
  readonly host: string
  readonly operation: number
  readonly permissionType: number
}

/** A user's SCRAM credential for one mechanism: what the server needs to check a proof, never the password. */
export interface ScramCredential {
  readonly salt: Uint8Array
  readonly storedKey: Uint8Array
  readonly serverKey: Uint8Array
  readonly iterations: number
}

/** SCRAM credentials by user name, then by mechanism id (1 SCRAM-SHA-256, 2 SCRAM-SHA-512). */
export type ScramImage = ReadonlyMap<string, ReadonlyMap<number, ScramCredential>>

/** One component of a client quota entity: `user`, `client-id` or `ip`, with a null name for the type's default. */
export interface ClientQuotaEntityPart {
  readonly entityType: string
  readonly entityName: string | null
}

/** An entity's client quotas (`producer_byte_rate`, `consumer_byte_rate`, ...), its parts in entity type order. */
export interface ClientQuotaImage {
  readonly entity: ReadonlyArray<ClientQuotaEntityPart>
  readonly quotas: ReadonlyMap<string, number>
}

/** Client quotas by `clientQuotaEntityKey`; an entity without quotas is absent. */
export type ClientQuotasImage = ReadonlyMap<string, ClientQuotaImage>

/** An entity's parts in a canonical order (by entity type), whatever order a request named them in. */
export const canonicalEntity = (entity: ReadonlyArray<ClientQuotaEntityPart>): ReadonlyArray<ClientQuotaEntityPart> =>
  [...entity]
    .map((e) => ({ entityType: e.entityType, entityName: e.entityName }))
    .sort((a, b) => (a.entityType < b.entityType ? -1 : a.entityType > b.entityType ? 1 : 0))

/** The key of an entity in `MetadataImage.clientQuotas`: the same for any order of its parts. */
export const clientQuotaEntityKey = (entity: ReadonlyArray<ClientQuotaEntityPart>): string =>
  JSON.stringify(canonicalEntity(entity).map((e) => [e.entityType, e.entityName]))

// ---------------------------------------------------------------------------------------------------
// The image

export interface MetadataImage {
  readonly provenance: MetadataProvenance.MetadataProvenance
  /** Finalized feature levels by name (e.g. `metadata.version`, `mirror.version`). */
  readonly features: ReadonlyMap<string, number>
  readonly cluster: ClusterImage
  readonly topics: TopicsImage
  readonly configs: ConfigsImage
  readonly producerIds: ProducerIdsImage
  readonly acls: ReadonlyMap<Uuid.Uuid, AclEntry>
  readonly scram: ScramImage
  readonly clientQuotas: ClientQuotasImage
}

export const emptyTopics: TopicsImage = { byId: new Map(), byName: new Map() }

export const empty: MetadataImage = {
  provenance: MetadataProvenance.empty,
  features: new Map(),
  cluster: { brokers: new Map() },
  topics: emptyTopics,
  configs: new Map(),
  producerIds: { nextProducerId: -1n, floor: -1n },
  acls: new Map(),
  scram: new Map(),
  clientQuotas: new Map()
}

/** Whether the image holds no metadata at all (its provenance aside). */
export const isEmpty = (image: MetadataImage): boolean =>
  image.features.size === 0 &&
  image.cluster.brokers.size === 0 &&
  image.topics.byId.size === 0 &&
  image.configs.size === 0 &&
  image.producerIds.nextProducerId < 0n &&
  image.acls.size === 0 &&
  image.scram.size === 0 &&
  image.clientQuotas.size === 0

/** The key of a config resource in `MetadataImage.configs`. */
export const resourceKey = (type: number, name: string): string => `${type}:${name}`

/** The config values of a resource; empty when it has none. */
export const configsOf = (image: MetadataImage, type: number, name: string): ReadonlyMap<string, string> =>
  image.configs.get(resourceKey(type, name))?.values ?? new Map()

export const topicByName = (image: MetadataImage, name: string): TopicImage | undefined => image.topics.byName.get(name)

export const topicById = (image: MetadataImage, id: TopicId): TopicImage | undefined => image.topics.byId.get(id)

export const partition = (
  image: MetadataImage,
  topicId: TopicId,
  partitionId: PartitionIndex
): PartitionRegistration | undefined => image.topics.byId.get(topicId)?.partitions.get(partitionId)

/** Registered brokers that are not fenced. */
export const activeBrokers = (image: MetadataImage): ReadonlyArray<BrokerRegistration> =>
  [...image.cluster.brokers.values()].filter((b) => !b.fenced)

/** A finalized feature level; 0 when the feature is not finalized. */
export const featureLevel = (image: MetadataImage, name: string): number => image.features.get(name) ?? 0

/** A user's SCRAM credential for a mechanism id, if set. */
export const scramCredential = (image: MetadataImage, user: string, mechanism: number): ScramCredential | undefined =>
  image.scram.get(user)?.get(mechanism)

/** The quotas of an entity given by its parts (a null name: the default of that type); empty when it has none. */
export const clientQuotasOf = (
  image: MetadataImage,
  entity: ReadonlyArray<ClientQuotaEntityPart>
): ReadonlyMap<string, number> => image.clientQuotas.get(clientQuotaEntityKey(entity))?.quotas ?? new Map()
