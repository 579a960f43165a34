/**
 * @clustermirror/client: the Kafka network client (connections, negotiation, metadata cache, leader
 * routing, retries, fan-out), a Promise core with Effect services on top.
 */
export * as ClientError from "./ClientError.js"
export * as ClusterClient from "./ClusterClient.js"
export * as Connection from "./Connection.js"
export * as FanOut from "./FanOut.js"
export * as MetadataCache from "./MetadataCache.js"
export * as MirrorAdmin from "./MirrorAdmin.js"
export * as NodePool from "./NodePool.js"
export * as Pkcs12 from "./Pkcs12.js"
export * as Retry from "./Retry.js"
export * as Security from "./Security.js"
