/**
 * @clustermirror/broker: a Kafka broker node wired from the packages (network, configs, replication,
 * coordinators, mirror): the cluster broker, the controller server, the Kafka API handlers, a node of any role.
 */
export * as ClusterBroker from "./ClusterBroker.js"
export { ControllerServer } from "@clustermirror/controller-server"
export * as Node from "./Node.js"
export * as GroupApis from "./GroupApis.js"
export * as KafkaApis from "./KafkaApis.js"
export * as MetadataView from "./MetadataView.js"
