/**
 * @clustermirror/transaction-coordinator: Kafka's transaction coordinator on the coordinator runtime:
 * the `__transaction_state` records, the per-partition state machine (decide + replay), the runtime
 * that sends transaction markers and sweeps timed-out transactions, and the broker's request handlers.
 */
export * as ProducerIdManager from "./ProducerIdManager.js"
export * as TransactionApis from "./TransactionApis.js"
export * as TransactionControl from "./TransactionControl.js"
export * as TransactionCoordinator from "./TransactionCoordinator.js"
export * as TransactionCoordinatorError from "./TransactionCoordinatorError.js"
export * as TransactionRecords from "./TransactionRecords.js"
