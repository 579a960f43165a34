/**
 * @clustermirror/coordinator: the KIP-1279 partition state machine and the `__mirror_state`
 * coordinator shard, pure (decide/replay); the runtime that appends and loads is wired by the broker.
 */
export * as CoordinatorError from "./CoordinatorError.js"
export * as CoordinatorResult from "./CoordinatorResult.js"
export * as MirrorStateMachine from "./MirrorStateMachine.js"
export * as MirrorStateShard from "./MirrorStateShard.js"
export * as ClusterMirrorCoordinator from "./ClusterMirrorCoordinator.js"
export * as MirrorMetadataManager from "./MirrorMetadataManager.js"
