/**
 * Topic control for a single node: decide what records a topic request produces, and replay records
 * into the topics image. Decide is pure (ids and defaults passed in); replay is the only way the
 * image changes, at startup (replaying the local metadata log) and for live writes alike.
 *
 * Records are Kafka's metadata records (TopicRecord, PartitionRecord, ConfigRecord, RemoveTopicRecord,
 * ProducerIdsRecord). With the controller of a multi-broker cluster this logic moves there; the records
 * stay the same.
 */
import { Errors } from "@clustermirror/protocol"

export interface TopicRecord {
  readonly type: "TopicRecord"
  readonly data: { readonly name: string; readonly topicId: string }
}
export interface PartitionRecord {
  readonly type: "PartitionRecord"
  readonly data: {
    readonly partitionId: number
    readonly topicId: string
    readonly replicas: ReadonlyArray<number>
    readonly isr: ReadonlyArray<number>
    readonly leader: number
    readonly leaderEpoch: number
    readonly partitionEpoch: number
  }
}
export interface ConfigRecord {
  readonly type: "ConfigRecord"
  readonly data: {
    readonly resourceType: number
    readonly resourceName: string
    readonly name: string
    readonly value: string | null
  }
}
export interface RemoveTopicRecord {
  readonly type: "RemoveTopicRecord"
  readonly data: { readonly topicId: string }
}
export interface ProducerIdsRecord {
  readonly type: "ProducerIdsRecord"
  readonly data: { readonly brokerId: number; readonly brokerEpoch: bigint; readonly nextProducerId: bigint }
}

export type TopicsRecord = TopicRecord | PartitionRecord | ConfigRecord | RemoveTopicRecord | ProducerIdsRecord

/** Config resource type of topics in ConfigRecord / DescribeConfigs. */
export const TOPIC_RESOURCE = 2

export interface Partition {
  readonly partitionId: number
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
  readonly leader: number
  readonly leaderEpoch: number
  readonly partitionEpoch: number
}

export interface Topic {
  readonly name: string
  readonly topicId: string
  readonly partitions: ReadonlyArray<Partition>
  readonly configs: ReadonlyMap<string, string>
}

export interface TopicsImage {
  readonly byId: ReadonlyMap<string, Topic>
  readonly idByName: ReadonlyMap<string, string>
  /** First producer id not yet handed out (the end of the last allocated block). */
  readonly nextProducerId: bigint
}

export const empty: TopicsImage = { byId: new Map(), idByName: new Map(), nextProducerId: 0n }

export const topicByName = (image: TopicsImage, name: string): Topic | undefined => {
  const id = image.idByName.get(name)
  return id === undefined ? undefined : image.byId.get(id)
}

const withTopic = (image: TopicsImage, topic: Topic): TopicsImage => {
  const byId = new Map(image.byId)
  byId.set(topic.topicId, topic)
  return { ...image, byId }
}

/** Applies one record. Dies (throws) on a record that contradicts the image: that is log corruption. */
export const replay = (image: TopicsImage, record: TopicsRecord): TopicsImage => {
  switch (record.type) {
    case "TopicRecord": {
      const { name, topicId } = record.data
      if (image.byId.has(topicId)) throw new Error(`TopicRecord for existing topic id ${topicId}`)
      const idByName = new Map(image.idByName)
      idByName.set(name, topicId)
      return withTopic({ ...image, idByName }, { name, topicId, partitions: [], configs: new Map() })
    }
    case "PartitionRecord": {
      const t = image.byId.get(record.data.topicId)
      if (t === undefined) throw new Error(`PartitionRecord for unknown topic id ${record.data.topicId}`)
      const { topicId: _, ...p } = record.data
      const partitions = t.partitions.filter((x) => x.partitionId !== p.partitionId)
      partitions.push(p)
      partitions.sort((a, b) => a.partitionId - b.partitionId)
      return withTopic(image, { ...t, partitions })
    }
    case "ConfigRecord": {
      if (record.data.resourceType !== TOPIC_RESOURCE) return image
      const t = topicByName(image, record.data.resourceName)
      if (t === undefined) return image
      const configs = new Map(t.configs)
      if (record.data.value === null) configs.delete(record.data.name)
      else configs.set(record.data.name, record.data.value)
      return withTopic(image, { ...t, configs })
    }
    case "RemoveTopicRecord": {
      const t = image.byId.get(record.data.topicId)
      if (t === undefined) throw new Error(`RemoveTopicRecord for unknown topic id ${record.data.topicId}`)
      const byId = new Map(image.byId)
      byId.delete(t.topicId)
      const idByName = new Map(image.idByName)
      idByName.delete(t.name)
      return { ...image, byId, idByName }
    }
    case "ProducerIdsRecord": {
      if (record.data.nextProducerId < image.nextProducerId) throw new Error("ProducerIdsRecord moves backwards")
      return { ...image, nextProducerId: record.data.nextProducerId }
    }
  }
}

export const replayAll = (image: TopicsImage, records: ReadonlyArray<TopicsRecord>): TopicsImage =>
  records.reduce(replay, image)

// ---------------------------------------------------------------------------------------------------
// Decide

export interface ControlResult<R> {
  readonly records: ReadonlyArray<TopicsRecord>
  readonly response: R
}

/** Kafka's legal topic names: 1-249 of [a-zA-Z0-9._-], not "." or "..". */
export const validateTopicName = (name: string): string | null => {
  if (name.length === 0) return "Topic name is illegal, it can't be empty"
  if (name === "." || name === "..") return 'Topic name cannot be "." or ".."'
  if (name.length > 249) return `Topic name is illegal, it can't be longer than 249 characters, topic name: ${name}`
  if (!/^[a-zA-Z0-9._-]+$/.test(name))
    return `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`
  return null
}

/** Topic config names accepted on create and alter. */
export const TOPIC_CONFIGS: ReadonlyMap<string, string> = new Map([
  ["cleanup.policy", "delete"],
  ["compression.type", "producer"],
  ["delete.retention.ms", "86400000"],
  ["file.delete.delay.ms", "60000"],
  ["flush.messages", "9223372036854775807"],
  ["flush.ms", "9223372036854775807"],
  ["follower.replication.throttled.replicas", ""],
  ["index.interval.bytes", "4096"],
  ["leader.replication.throttled.replicas", ""],
  ["local.retention.bytes", "-2"],
  ["local.retention.ms", "-2"],
  ["max.compaction.lag.ms", "9223372036854775807"],
  ["max.message.bytes", "1048588"],
  ["message.timestamp.after.max.ms", "3600000"],
  ["message.timestamp.before.max.ms", "9223372036854775807"],
  ["message.timestamp.type", "CreateTime"],
  ["min.cleanable.dirty.ratio", "0.5"],
  ["min.compaction.lag.ms", "0"],
  ["min.insync.replicas", "1"],
  ["preallocate", "false"],
  ["remote.storage.enable", "false"],
  ["retention.bytes", "-1"],
  ["retention.ms", "604800000"],
  ["segment.bytes", "1073741824"],
  ["segment.index.bytes", "10485760"],
  ["segment.jitter.ms", "0"],
  ["segment.ms", "604800000"],
  ["unclean.leader.election.enable", "false"]
])

/** Validates a topic config value; returns an error message or null. */
export const validateTopicConfig = (name: string, value: string | null): string | null => {
  if (!TOPIC_CONFIGS.has(name)) return `Unknown topic config name: ${name}`
  if (value === null) return null
  const numeric = /(\.ms|\.bytes|\.messages|\.replicas)$/.test(name) && !name.endsWith("throttled.replicas")
  if (numeric && !/^-?\d+$/.test(value))
    return `Invalid value ${value} for configuration ${name}: Not a number of type LONG`
  if (name === "cleanup.policy" && !value.split(",").every((v) => ["delete", "compact"].includes(v.trim())))
    return `Invalid value ${value} for configuration cleanup.policy: String must be one of: compact, delete`
  if (name === "compression.type" && !["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"].includes(value))
    return `Invalid value ${value} for configuration compression.type`
  if (name === "message.timestamp.type" && value !== "CreateTime" && value !== "LogAppendTime")
    return `Invalid value ${value} for configuration message.timestamp.type`
  return null
}

export interface CreatableTopic {
  readonly name: string
  readonly numPartitions: number
  readonly replicationFactor: number
  readonly assignments: ReadonlyArray<{ readonly partitionIndex: number; readonly brokerIds: ReadonlyArray<number> }>
  readonly configs: ReadonlyArray<{ readonly name: string; readonly value: string | null }>
  /** Topic id requested by the caller (CreateTopics v8 MirrorInfo); null when the controller picks one. */
  readonly topicId: string | null
}

export interface CreateTopicResult {
  readonly name: string
  readonly topicId: string
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly numPartitions: number
  readonly replicationFactor: number
  readonly configs: ReadonlyArray<{ readonly name: string; readonly value: string }>
}

export interface ClusterView {
  readonly liveBrokers: ReadonlyArray<number>
  readonly defaultPartitions: number
  readonly defaultReplicationFactor: number
}

const ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

/**
 * createTopics: for each valid topic a TopicRecord, one PartitionRecord per partition and a
 * ConfigRecord per config; invalid topics get their error in the response (partial success).
 */
export const createTopics = (
  image: TopicsImage,
  topics: ReadonlyArray<CreatableTopic>,
  cluster: ClusterView,
  newTopicId: () => string,
  validateOnly: boolean
): ControlResult<ReadonlyArray<CreateTopicResult>> => {
  const records: TopicsRecord[] = []
  const seen = new Map<string, number>()
  for (const t of topics) seen.set(t.name, (seen.get(t.name) ?? 0) + 1)
  const usedIds = new Set(image.byId.keys())
  const results = topics.map((t): CreateTopicResult => {
    const fail = (errorCode: number, errorMessage: string): CreateTopicResult => ({
      name: t.name,
      topicId: ZERO_UUID,
      errorCode,
      errorMessage,
      numPartitions: -1,
      replicationFactor: -1,
      configs: []
    })
    if ((seen.get(t.name) ?? 0) > 1)
      return fail(
        Errors.ErrorCode.INVALID_REQUEST,
        `Create topics request from client contains duplicate topic ${t.name}`
      )
    const nameError = validateTopicName(t.name)
    if (nameError !== null) return fail(Errors.ErrorCode.INVALID_TOPIC_EXCEPTION, nameError)
    if (image.idByName.has(t.name))
      return fail(Errors.ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${t.name}' already exists.`)
    for (const c of t.configs) {
      const err = validateTopicConfig(c.name, c.value)
      if (err !== null) return fail(Errors.ErrorCode.INVALID_CONFIG, err)
    }
    let replicaSets: number[][]
    if (t.assignments.length > 0) {
      if (t.numPartitions !== -1 || t.replicationFactor !== -1)
        return fail(
          Errors.ErrorCode.INVALID_REQUEST,
          "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
        )
      const sorted = [...t.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex)
      if (sorted.some((a, i) => a.partitionIndex !== i))
        return fail(
          Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
          "Partitions should be a consecutive 0-based integer sequence"
        )
      for (const a of sorted) {
        if (a.brokerIds.length === 0 || new Set(a.brokerIds).size !== a.brokerIds.length)
          return fail(
            Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            `Invalid replica assignment for partition ${a.partitionIndex}`
          )
        const unknown = a.brokerIds.find((b) => !cluster.liveBrokers.includes(b))
        if (unknown !== undefined)
          return fail(Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Broker ${unknown} is not a live broker`)
      }
      replicaSets = sorted.map((a) => [...a.brokerIds])
    } else {
      const numPartitions = t.numPartitions === -1 ? cluster.defaultPartitions : t.numPartitions
      const rf = t.replicationFactor === -1 ? cluster.defaultReplicationFactor : t.replicationFactor
      if (numPartitions <= 0)
        return fail(
          Errors.ErrorCode.INVALID_PARTITIONS,
          "Number of partitions was set to an invalid non-positive value."
        )
      if (rf <= 0) return fail(Errors.ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
      if (rf > cluster.liveBrokers.length)
        return fail(
          Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
          `Unable to replicate the partition ${rf} time(s): The target replication factor of ${rf} cannot be reached because only ${cluster.liveBrokers.length} broker(s) are registered.`
        )
      const brokers = [...cluster.liveBrokers].sort((a, b) => a - b)
      replicaSets = Array.from({ length: numPartitions }, (_, p) =>
        Array.from({ length: rf }, (_, r) => brokers[(p + r) % brokers.length]!)
      )
    }
    let topicId: string
    if (t.topicId !== null && t.topicId !== ZERO_UUID) {
      if (usedIds.has(t.topicId))
        return fail(Errors.ErrorCode.TOPIC_ALREADY_EXISTS, `Topic id ${t.topicId} is already used by another topic.`)
      topicId = t.topicId
    } else {
      do topicId = newTopicId()
      while (usedIds.has(topicId))
    }
    usedIds.add(topicId)
    if (!validateOnly) {
      records.push({ type: "TopicRecord", data: { name: t.name, topicId } })
      for (const [partitionId, replicas] of replicaSets.entries())
        records.push({
          type: "PartitionRecord",
          data: {
            partitionId,
            topicId,
            replicas,
            isr: replicas,
            leader: replicas[0]!,
            leaderEpoch: 0,
            partitionEpoch: 0
          }
        })
      for (const c of t.configs)
        if (c.value !== null)
          records.push({
            type: "ConfigRecord",
            data: { resourceType: TOPIC_RESOURCE, resourceName: t.name, name: c.name, value: c.value }
          })
    }
    return {
      name: t.name,
      topicId,
      errorCode: 0,
      errorMessage: null,
      numPartitions: replicaSets.length,
      replicationFactor: replicaSets[0]!.length,
      configs: t.configs.flatMap((c) => (c.value === null ? [] : [{ name: c.name, value: c.value }]))
    }
  })
  return { records, response: results }
}

/** deleteTopics: one RemoveTopicRecord per existing topic. */
export const deleteTopics = (
  image: TopicsImage,
  topics: ReadonlyArray<{ readonly name: string | null; readonly topicId: string | null }>
): ControlResult<
  ReadonlyArray<{ name: string | null; topicId: string; errorCode: number; errorMessage: string | null }>
> => {
  const records: TopicsRecord[] = []
  const removed = new Set<string>()
  const response = topics.map((t) => {
    const topic =
      t.name !== null ? topicByName(image, t.name) : t.topicId !== null ? image.byId.get(t.topicId) : undefined
    if (topic === undefined)
      return {
        name: t.name,
        topicId: t.topicId ?? ZERO_UUID,
        errorCode: t.name !== null ? Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : Errors.ErrorCode.UNKNOWN_TOPIC_ID,
        errorMessage: null
      }
    if (!removed.has(topic.topicId)) {
      removed.add(topic.topicId)
      records.push({ type: "RemoveTopicRecord", data: { topicId: topic.topicId } })
    }
    return { name: topic.name, topicId: topic.topicId, errorCode: 0, errorMessage: null }
  })
  return { records, response }
}

/** createPartitions: PartitionRecords for the new partitions of each topic. */
export const createPartitions = (
  image: TopicsImage,
  topics: ReadonlyArray<{ readonly name: string; readonly count: number }>,
  cluster: ClusterView,
  validateOnly: boolean
): ControlResult<ReadonlyArray<{ name: string; errorCode: number; errorMessage: string | null }>> => {
  const records: TopicsRecord[] = []
  const response = topics.map((t) => {
    const topic = topicByName(image, t.name)
    if (topic === undefined)
      return {
        name: t.name,
        errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        errorMessage: `The topic '${t.name}' does not exist.`
      }
    const current = topic.partitions.length
    if (t.count <= current)
      return {
        name: t.name,
        errorCode: Errors.ErrorCode.INVALID_PARTITIONS,
        errorMessage:
          t.count === current
            ? `Topic already has ${current} partitions.`
            : `The topic ${t.name} currently has ${current} partition(s); ${t.count} would not be an increase.`
      }
    const rf = topic.partitions[0]?.replicas.length ?? 1
    if (rf > cluster.liveBrokers.length)
      return {
        name: t.name,
        errorCode: Errors.ErrorCode.INVALID_REPLICATION_FACTOR,
        errorMessage: "Not enough live brokers"
      }
    if (!validateOnly) {
      const brokers = [...cluster.liveBrokers].sort((a, b) => a - b)
      for (let p = current; p < t.count; p++) {
        const replicas = Array.from({ length: rf }, (_, r) => brokers[(p + r) % brokers.length]!)
        records.push({
          type: "PartitionRecord",
          data: {
            partitionId: p,
            topicId: topic.topicId,
            replicas,
            isr: replicas,
            leader: replicas[0]!,
            leaderEpoch: 0,
            partitionEpoch: 0
          }
        })
      }
    }
    return { name: t.name, errorCode: 0, errorMessage: null }
  })
  return { records, response }
}

/** Producer ids are handed out in blocks; each block is one ProducerIdsRecord. */
export const PRODUCER_ID_BLOCK = 1000n

export const allocateProducerIds = (
  image: TopicsImage,
  brokerId: number
): ControlResult<{ firstProducerId: bigint; size: bigint }> => ({
  records: [
    {
      type: "ProducerIdsRecord",
      data: { brokerId, brokerEpoch: 0n, nextProducerId: image.nextProducerId + PRODUCER_ID_BLOCK }
    }
  ],
  response: { firstProducerId: image.nextProducerId, size: PRODUCER_ID_BLOCK }
})

/** Topic config changes (IncrementalAlterConfigs operations: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT). */
export const alterTopicConfigs = (
  image: TopicsImage,
  topic: string,
  ops: ReadonlyArray<{ readonly name: string; readonly op: number; readonly value: string | null }>,
  validateOnly: boolean
): ControlResult<{ errorCode: number; errorMessage: string | null }> => {
  const t = topicByName(image, topic)
  if (t === undefined)
    return {
      records: [],
      response: {
        errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        errorMessage: `Topic ${topic} does not exist`
      }
    }
  const records: TopicsRecord[] = []
  for (const o of ops) {
    let value: string | null
    const current = t.configs.get(o.name) ?? TOPIC_CONFIGS.get(o.name) ?? ""
    const list = current === "" ? [] : current.split(",")
    switch (o.op) {
      case 0:
        value = o.value
        break
      case 1:
        value = null
        break
      case 2:
        value = [...list, ...(o.value ?? "").split(",").filter((v) => v !== "" && !list.includes(v))].join(",")
        break
      case 3: {
        const remove = new Set((o.value ?? "").split(","))
        value = list.filter((v) => !remove.has(v)).join(",")
        break
      }
      default:
        return {
          records: [],
          response: { errorCode: Errors.ErrorCode.INVALID_REQUEST, errorMessage: `Unknown operation ${o.op}` }
        }
    }
    const err = validateTopicConfig(o.name, value)
    if (err !== null)
      return { records: [], response: { errorCode: Errors.ErrorCode.INVALID_CONFIG, errorMessage: err } }
    records.push({
      type: "ConfigRecord",
      data: { resourceType: TOPIC_RESOURCE, resourceName: topic, name: o.name, value }
    })
  }
  return { records: validateOnly ? [] : records, response: { errorCode: 0, errorMessage: null } }
}
