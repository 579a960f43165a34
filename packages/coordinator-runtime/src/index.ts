/**
 * @clustermirror/coordinator-runtime: the shard runtime of every coordinator log (`__mirror_state`,
 * `__consumer_offsets`, `__transaction_state`): load on leadership at an epoch, serialized writes on a
 * candidate state, batched appends answered after commit, per-shard timers; the log port and its
 * in-memory layer.
 */
export * as CoordinatorLog from "./CoordinatorLog.js"
export * as CoordinatorResult from "./CoordinatorResult.js"
export * as CoordinatorRuntime from "./CoordinatorRuntime.js"
export * as CoordinatorRuntimeError from "./CoordinatorRuntimeError.js"
export * as CoordinatorShard from "./CoordinatorShard.js"
