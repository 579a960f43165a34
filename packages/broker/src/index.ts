/**
 * @clustermirror/broker: a Kafka broker node (socket server, handlers, partitions, groups).
 */
export * as ClusterBroker from "./ClusterBroker.js"
export * as ControllerServer from "./ControllerServer.js"
export * as Node from "./Node.js"
export * as BrokerConfig from "./BrokerConfig.js"
export * as GroupApis from "./GroupApis.js"
export * as KafkaApis from "./KafkaApis.js"
export * as LogConfigs from "./LogConfigs.js"
export * as MetadataView from "./MetadataView.js"
export * as MirrorApis from "./MirrorApis.js"
export * as ReplicaManager from "./ReplicaManager.js"
export * as RequestChannel from "./RequestChannel.js"
export * as SocketServer from "./SocketServer.js"
