/**
 * Snapshots as records: `imageToRecords` writes an image as the records that rebuild it from the
 * empty image, `recordsToImage` replays them. Kafka's order: features (metadata.version first), then
 * brokers, topics (each TopicRecord followed by its PartitionRecords and, for a topic with mirror
 * state, its MirrorTopicStateChangeRecord), configs, producer IDs, ACLs. Pure; where snapshots are
 * stored belongs to `MetadataLog`.
 */
import { MetadataRecords, MirrorPartitionState } from "@clustermirror/protocol"
import * as MetadataDelta from "./MetadataDelta.js"
import * as MetadataImage from "./MetadataImage.js"
import * as MetadataProvenance from "./MetadataProvenance.js"

type MetadataRecord = MetadataRecords.MetadataRecord

/** The records that rebuild `image` (its provenance aside) when replayed onto the empty image. */
export const imageToRecords = (image: MetadataImage.MetadataImage): Array<MetadataRecord> => {
  const out: MetadataRecord[] = []
  const features = [...image.features].sort(([a], [b]) =>
    a === MetadataImage.METADATA_VERSION ? -1 : b === MetadataImage.METADATA_VERSION ? 1 : 0
  )
  for (const [name, featureLevel] of features)
    out.push(MetadataRecords.make("FeatureLevelRecord", { name, featureLevel }))
  for (const b of image.cluster.brokers.values())
    out.push(
      MetadataRecords.make("RegisterBrokerRecord", {
        brokerId: b.id,
        isMigratingZkBroker: b.isMigratingZkBroker,
        incarnationId: b.incarnationId,
        brokerEpoch: b.epoch,
        endPoints: b.listeners,
        features: b.supportedFeatures,
        rack: b.rack,
        fenced: b.fenced,
        inControlledShutdown: b.inControlledShutdown,
        logDirs: b.logDirs
      })
    )
  for (const t of image.topics.byId.values()) {
    out.push(MetadataRecords.make("TopicRecord", { name: t.name, topicId: t.id }))
    for (const [partitionId, p] of t.partitions)
      out.push(
        MetadataRecords.make("PartitionRecord", {
          partitionId,
          topicId: t.id,
          replicas: p.replicas,
          isr: p.isr,
          removingReplicas: p.removingReplicas,
          addingReplicas: p.addingReplicas,
          leader: p.leader,
          leaderRecoveryState: p.leaderRecoveryState,
          leaderEpoch: p.leaderEpoch,
          partitionEpoch: p.partitionEpoch,
          directories: p.directories,
          eligibleLeaderReplicas: p.eligibleLeaderReplicas,
          lastKnownElr: p.lastKnownElr
        })
      )
    // A topic that never had mirror state needs no record; any other state must survive the snapshot.
    if (t.mirrorName !== null || t.desiredMirrorState !== MirrorPartitionState.UNKNOWN)
      out.push(MetadataRecords.mirrorTopicStateChange(t.id, t.mirrorName, t.desiredMirrorState))
  }
  for (const c of image.configs.values())
    for (const [name, value] of c.values)
      out.push(MetadataRecords.make("ConfigRecord", { resourceType: c.type, resourceName: c.name, name, value }))
  const { floor, nextProducerId } = image.producerIds
  if (floor >= 0n)
    out.push(
      MetadataRecords.make("ProducerIdsRecord", {
        brokerId: MetadataImage.PRODUCER_ID_FLOOR_BROKER,
        brokerEpoch: -1n,
        nextProducerId: floor
      })
    )
  if (nextProducerId >= 0n && nextProducerId > floor)
    out.push(
      MetadataRecords.make("ProducerIdsRecord", {
        brokerId: MetadataImage.PRODUCER_ID_SNAPSHOT_BROKER,
        brokerEpoch: -1n,
        nextProducerId
      })
    )
  for (const a of image.acls.values()) out.push(MetadataRecords.make("AccessControlEntryRecord", a))
  for (const [name, creds] of image.scram)
    for (const [mechanism, c] of creds)
      out.push(MetadataRecords.make("UserScramCredentialRecord", { name, mechanism, ...c }))
  for (const q of image.clientQuotas.values())
    for (const [key, value] of q.quotas)
      out.push(MetadataRecords.make("ClientQuotaRecord", { entity: [...q.entity], key, value, remove: false }))
  return out
}

/** The image the records build from the empty image, stamped with `provenance`. */
export const recordsToImage = (
  records: Iterable<MetadataRecord>,
  provenance: MetadataProvenance.MetadataProvenance = MetadataProvenance.empty
): MetadataImage.MetadataImage => MetadataDelta.make(MetadataImage.empty, records).apply(provenance)
