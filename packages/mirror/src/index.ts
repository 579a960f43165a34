/**
 * @clustermirror/mirror: the mirror's control logic (KIP-1279) behind ports the broker implements: the
 * periodic refresh, the config / group-offset / ACL sync, lag and metrics state, the two-phase truncation
 * and the runtime's decisions (loop check, last-mirror-epoch lookup and its max-merge, bump batching, the
 * failback check, recover across leaders).
 */
export * as MirrorApis from "./MirrorApis.js"
export * as MirrorLag from "./MirrorLag.js"
export * as MirrorMetrics from "./MirrorMetrics.js"
export * as MirrorRefresh from "./MirrorRefresh.js"
export * as MirrorSync from "./MirrorSync.js"
export * as SyncRequests from "./internal/SyncRequests.js"
export * as TwoPhaseTruncation from "./TwoPhaseTruncation.js"
export * as EpochBumps from "./EpochBumps.js"
export * as LastMirrorEpochs from "./LastMirrorEpochs.js"
export * as Recover from "./Recover.js"
export * as Validation from "./Validation.js"
export * as AclSync from "./AclSync.js"
