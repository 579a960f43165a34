/**
 * @clustermirror/controller-server: a controller node's network face (the controller listener's Kafka
 * APIs) and the controller quorum on KRaft: the Raft leader is the active controller, the other
 * voters replay every commit as hot standbys and answer NOT_CONTROLLER.
 */
export * as ControllerQuorum from "./ControllerQuorum.js"
export * as ControllerServer from "./ControllerServer.js"
export * as NotController from "./NotController.js"
export * as RaftMetadataLog from "./RaftMetadataLog.js"
