/** KRaft consensus for `__cluster_metadata`: the voter state machine, its messages and its simulation. */
export * as QuorumState from "./QuorumState.js"
export * as RaftConfig from "./RaftConfig.js"
export * as RaftError from "./RaftError.js"
export * as RaftEvent from "./RaftEvent.js"
export * as RaftLog from "./RaftLog.js"
export * as RaftMessages from "./RaftMessages.js"
export * as RaftNode from "./RaftNode.js"
