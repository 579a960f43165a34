/**
 * @clustermirror/replication: A broker's partitions as leader or follower.
 */
export * as AlterPartitionManager from "./AlterPartitionManager.js"
export * as CoordinatorLogs from "./CoordinatorLogs.js"
export * as DeleteRecords from "./DeleteRecords.js"
export * as ReplicaManager from "./ReplicaManager.js"
export * as TxnMarkers from "./TxnMarkers.js"
export * as ProducerStates from "./ProducerStates.js"
export * as TxnVerification from "./TxnVerification.js"
export * as LogDirs from "./LogDirs.js"
