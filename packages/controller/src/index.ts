/**
 * @clustermirror/controller: the KRaft-style controller's control modules as pure decide/replay
 * functions over one immutable state, and the harness to test them.
 */
export * as AclControl from "./AclControl.js"
export * as ClientQuotaControl from "./ClientQuotaControl.js"
export * as BrokerHeartbeats from "./BrokerHeartbeats.js"
export * as ClusterControl from "./ClusterControl.js"
export * as ConfigurationControl from "./ConfigurationControl.js"
export * as ControllerError from "./ControllerError.js"
export * as ControllerResult from "./ControllerResult.js"
export * as ControllerState from "./ControllerState.js"
export * as ControllerTest from "./ControllerTest.js"
export * as FeatureControl from "./FeatureControl.js"
export * as MetadataQuorum from "./MetadataQuorum.js"
export * as MirrorControl from "./MirrorControl.js"
export * as MirrorPatterns from "./internal/mirrorPatterns.js"
export * as ProducerIdControl from "./ProducerIdControl.js"
export * as QuorumController from "./QuorumController.js"
export * as ReplicationControl from "./ReplicationControl.js"
export * as ScramControl from "./ScramControl.js"
