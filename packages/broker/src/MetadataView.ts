/**
 * What request handlers need to know of the cluster's metadata, and the admin operations they may
 * ask for, whatever the broker runs on: the metadata image followed from the controller, or a single
 * node's own journal. Handlers read through `MetadataView` and change topics only through `TopicAdmin`.
 */

export interface PartitionView {
  readonly partitionId: number
  readonly leader: number
  readonly leaderEpoch: number
  readonly partitionEpoch: number
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
}

export interface TopicView {
  readonly name: string
  readonly topicId: string
  readonly partitions: ReadonlyArray<PartitionView>
  readonly configs: ReadonlyMap<string, string>
  /**
   * KIP-1279: the topic belongs to a cluster mirror, so clients may produce to a partition only once its
   * actual mirror state is STOPPED (the broker's mirror runtime knows; READ_ONLY_TOPIC otherwise).
   */
  readonly readOnly: boolean
}

export interface BrokerEndpoint {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  readonly rack: string | null
}

export interface MetadataView {
  readonly clusterId: string
  /** The broker clients should send controller-bound requests to (any live broker forwards). */
  readonly controllerId: () => number
  readonly topicByName: (name: string) => TopicView | undefined
  readonly topicById: (id: string) => TopicView | undefined
  readonly topics: () => Iterable<TopicView>
  /**
   * Live (unfenced) brokers, at their endpoint on `listenerName` (the listener a request came in on; a
   * broker without it is left out, as Kafka does), else on the inter-broker listener.
   */
  readonly brokers: (listenerName?: string) => ReadonlyArray<BrokerEndpoint>
  /** A live broker's endpoint on `listenerName` (else on the inter-broker listener). */
  readonly broker: (id: number, listenerName?: string) => BrokerEndpoint | undefined
}

export interface CreatableTopic {
  readonly name: string
  readonly numPartitions: number
  readonly replicationFactor: number
  readonly assignments: ReadonlyArray<{ readonly partitionIndex: number; readonly brokerIds: ReadonlyArray<number> }>
  readonly configs: ReadonlyArray<{ readonly name: string; readonly value: string | null }>
  readonly topicId: string | null
}

export interface CreatedTopic {
  readonly name: string
  readonly topicId: string
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly numPartitions: number
  readonly replicationFactor: number
  readonly configs: ReadonlyArray<{ readonly name: string; readonly value: string }>
}

/** Topic changes and producer-id blocks: decided by the controller (or the single node's own control). */
export interface TopicAdmin {
  readonly createTopics: (
    topics: ReadonlyArray<CreatableTopic>,
    validateOnly: boolean
  ) => Promise<ReadonlyArray<CreatedTopic>>
  readonly allocateProducerIds: () => Promise<{ readonly firstProducerId: bigint; readonly size: bigint }>
}
