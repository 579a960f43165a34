/** The KRaft runtime: the raft core on real files, clocks and sockets. */
export * as QuorumStateFile from "./QuorumStateFile.js"
export * as RaftLogStore from "./RaftLogStore.js"
export * as RaftRuntimeError from "./RaftRuntimeError.js"
export * as RaftWire from "./RaftWire.js"
export * as RaftHandlers from "./RaftHandlers.js"
export * as RaftRuntime from "./RaftRuntime.js"
export * as RaftTransport from "./RaftTransport.js"
