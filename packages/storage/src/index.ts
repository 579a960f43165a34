/**
 * @clustermirror/storage: the durable partition log (segments, indexes, leader epochs, producer state,
 * retention, crash recovery) behind the `PartitionLogStore` port, on files or in memory.
 */
export * as LeaderEpochChecks from "./LeaderEpochChecks.js"
export * as LogCleaner from "./LogCleaner.js"
export * as PartitionLog from "./PartitionLog.js"
export * as PartitionLogStore from "./PartitionLogStore.js"
export * as StorageError from "./StorageError.js"
export * as StorageTest from "./StorageTest.js"
