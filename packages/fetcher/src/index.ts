/**
 * @clustermirror/fetcher: fetchers that copy record batches from partition leaders into local logs
 * (the replica fetcher of followers, and the mirror fetchers that copy from a source cluster), reporting
 * outcomes as events.
 */
export * as FetcherConfig from "./FetcherConfig.js"
export * as FetcherError from "./FetcherError.js"
export * as FetcherEvents from "./FetcherEvents.js"
export * as LeaderEndpoint from "./LeaderEndpoint.js"
export * as MemoryLeaderEndpoint from "./MemoryLeaderEndpoint.js"
export * as MemorySourceCluster from "./MemorySourceCluster.js"
export * as MirrorFetcher from "./MirrorFetcher.js"
export * as MirrorFetcherManager from "./MirrorFetcherManager.js"
export * as NetworkLeaderEndpoint from "./NetworkLeaderEndpoint.js"
export * as ReplicaFetcher from "./ReplicaFetcher.js"
export * as SourceCluster from "./SourceCluster.js"
