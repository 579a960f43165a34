/**
 * The local metadata journal on a partition log (`__cluster_metadata-0` in the data dir): each
 * write is one record batch of Kafka-framed metadata records, appended and fsynced before the write
 * is acknowledged. Loading replays every batch; a torn tail was already cut by log recovery.
 */
import { MetadataRecords, RecordBatch } from "@clustermirror/protocol"
import type { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import { Either } from "effect"
import type { MetadataJournal } from "./LocalMetadata.js"
import type { TopicsRecord } from "./TopicControl.js"

export const METADATA_TOPIC = "__cluster_metadata"

const toMetadataRecord = (r: TopicsRecord): MetadataRecords.MetadataRecord => {
  switch (r.type) {
    case "TopicRecord":
      return MetadataRecords.make("TopicRecord", r.data)
    case "PartitionRecord":
      return MetadataRecords.make("PartitionRecord", r.data)
    case "ConfigRecord":
      return MetadataRecords.make("ConfigRecord", r.data)
    case "RemoveTopicRecord":
      return MetadataRecords.make("RemoveTopicRecord", r.data)
    case "ProducerIdsRecord":
      return MetadataRecords.make("ProducerIdsRecord", r.data)
  }
}

const fromMetadataRecord = (r: MetadataRecords.MetadataRecord): TopicsRecord | null => {
  switch (r.type) {
    case "TopicRecord":
      return { type: r.type, data: { name: r.data.name, topicId: r.data.topicId } }
    case "PartitionRecord":
      return {
        type: r.type,
        data: {
          partitionId: r.data.partitionId,
          topicId: r.data.topicId,
          replicas: r.data.replicas,
          isr: r.data.isr,
          leader: r.data.leader,
          leaderEpoch: r.data.leaderEpoch,
          partitionEpoch: r.data.partitionEpoch
        }
      }
    case "ConfigRecord":
      return {
        type: r.type,
        data: {
          resourceType: r.data.resourceType,
          resourceName: r.data.resourceName,
          name: r.data.name,
          value: r.data.value
        }
      }
    case "RemoveTopicRecord":
      return { type: r.type, data: { topicId: r.data.topicId } }
    case "ProducerIdsRecord":
      return {
        type: r.type,
        data: { brokerId: r.data.brokerId, brokerEpoch: r.data.brokerEpoch, nextProducerId: r.data.nextProducerId }
      }
    default:
      return null
  }
}

export const fileJournal = (
  store: PartitionLogStore.PartitionLogStoreService,
  config: PartitionLog.LogConfig
): MetadataJournal => {
  const log = store.open(METADATA_TOPIC, 0, config)
  return {
    append: (records) => {
      const batch = RecordBatch.build({
        records: records.map((r) => ({ value: MetadataRecords.encode(toMetadataRecord(r)) })),
        timestamp: Date.now()
      })
      log.appendAsLeader(batch, 0, Date.now())
      log.updateHighWatermark(log.logEndOffset)
      log.flush()
    },
    load: () => {
      const out: TopicsRecord[] = []
      let offset = log.logStartOffset
      while (offset < log.logEndOffset) {
        const { records } = log.read(offset, 1024 * 1024, { minOneMessage: true })
        const { batches } = RecordBatch.split(records)
        if (batches.length === 0) break
        for (const b of batches) {
          const batch = records.subarray(b.position, b.position + b.size)
          const decoded = RecordBatch.records(batch)
          if (Either.isLeft(decoded)) throw new Error(`corrupt metadata batch at ${offset}: ${decoded.left.message}`)
          for (const rec of decoded.right) {
            if (rec.value === null) continue
            const m = MetadataRecords.decode(rec.value)
            if (Either.isLeft(m)) throw new Error(`undecodable metadata record at ${rec.offset}: ${m.left.message}`)
            const t = fromMetadataRecord(m.right)
            if (t !== null) out.push(t)
          }
          offset = RecordBatch.lastOffset(batch) + 1
        }
      }
      return out
    },
    close: () => {}
  }
}
