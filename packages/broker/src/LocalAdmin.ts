/**
 * A single node's metadata: the view and admin of `MetadataView` over the node's own journal
 * (`LocalMetadata` + `TopicControl`), and the handlers of the topic admin APIs that decide locally.
 * A broker in a cluster follows the controller's metadata instead and forwards these requests.
 */
import {
  CreatePartitions,
  CreateTopics,
  DeleteTopics,
  Errors,
  IncrementalAlterConfigs,
  Uuid
} from "@clustermirror/protocol"
import type { BrokerConfig } from "./BrokerConfig.js"
import type { LocalMetadata } from "./LocalMetadata.js"
import type * as MetadataView from "./MetadataView.js"
import type { Handlers } from "./RequestChannel.js"
import * as TopicControl from "./TopicControl.js"

export const clusterView = (config: BrokerConfig): TopicControl.ClusterView => ({
  liveBrokers: [config.nodeId],
  defaultPartitions: config.numPartitions,
  defaultReplicationFactor: config.defaultReplicationFactor
})

export const view = (metadata: LocalMetadata, config: BrokerConfig, clusterId: string): MetadataView.MetadataView => {
  const self: MetadataView.BrokerEndpoint = {
    nodeId: config.nodeId,
    host: config.advertisedHost,
    port: config.port,
    rack: null
  }
  return {
    clusterId,
    controllerId: () => config.nodeId,
    topicByName: (name) => TopicControl.topicByName(metadata.image, name),
    topicById: (id) => metadata.image.byId.get(id),
    topics: () => metadata.image.byId.values(),
    brokers: () => [self],
    broker: (id) => (id === config.nodeId ? self : undefined)
  }
}

export const admin = (metadata: LocalMetadata, config: BrokerConfig): MetadataView.TopicAdmin => ({
  createTopics: async (topics, validateOnly) =>
    metadata.write((image) => TopicControl.createTopics(image, topics, clusterView(config), Uuid.random, validateOnly)),
  allocateProducerIds: async () => metadata.write((image) => TopicControl.allocateProducerIds(image, config.nodeId))
})

export const register = (handlers: Handlers, metadata: LocalMetadata, config: BrokerConfig): Handlers =>
  handlers
    .register(CreateTopics.api, (_req, request) => {
      const results = metadata.write((image) =>
        TopicControl.createTopics(
          image,
          request.topics.map((t) => ({
            name: t.name,
            numPartitions: t.numPartitions,
            replicationFactor: t.replicationFactor,
            assignments: t.assignments,
            configs: t.configs,
            topicId: t.mirrorInfo?.topicId ?? null
          })),
          clusterView(config),
          Uuid.random,
          request.validateOnly
        )
      )
      return {
        throttleTimeMs: 0,
        topics: results.map((r) => ({
          name: r.name,
          topicId: r.topicId,
          errorCode: r.errorCode,
          errorMessage: r.errorMessage,
          numPartitions: r.numPartitions,
          replicationFactor: r.replicationFactor,
          configs:
            r.errorCode === 0
              ? r.configs.map((c) => ({
                  name: c.name,
                  value: c.value,
                  readOnly: false,
                  configSource: 1,
                  isSensitive: false
                }))
              : null
        }))
      }
    })
    .register(DeleteTopics.api, (req, request) => {
      const targets =
        req.apiVersion >= 6
          ? request.topics.map((t) => ({ name: t.name, topicId: t.name === null ? t.topicId : null }))
          : request.topicNames.map((name) => ({ name, topicId: null }))
      const results = metadata.write((image) => TopicControl.deleteTopics(image, targets))
      return { throttleTimeMs: 0, responses: results.map((r) => ({ ...r })) }
    })
    .register(CreatePartitions.api, (_req, request) => ({
      throttleTimeMs: 0,
      results: metadata.write((image) =>
        TopicControl.createPartitions(
          image,
          request.topics.map((t) => ({ name: t.name, count: t.count })),
          clusterView(config),
          request.validateOnly
        )
      )
    }))
    .register(IncrementalAlterConfigs.api, (_req, request) => ({
      throttleTimeMs: 0,
      responses: request.resources.map((r) => {
        if (r.resourceType !== TopicControl.TOPIC_RESOURCE)
          return {
            errorCode: Errors.ErrorCode.INVALID_REQUEST,
            errorMessage: `Altering configs of resource type ${r.resourceType} is not supported`,
            resourceType: r.resourceType,
            resourceName: r.resourceName
          }
        const res = metadata.write((image) =>
          TopicControl.alterTopicConfigs(
            image,
            r.resourceName,
            r.configs.map((c) => ({ name: c.name, op: c.configOperation, value: c.value })),
            request.validateOnly
          )
        )
        return { ...res, resourceType: r.resourceType, resourceName: r.resourceName }
      })
    }))
