/**
 * @clustermirror/metadata-log: the metadata image and its deltas, snapshots, the loader that
 * publishes deltas to a node's components, and the metadata log on storage.
 */
export * as MetadataDelta from "./MetadataDelta.js"
export * as MetadataImage from "./MetadataImage.js"
export * as MetadataLog from "./MetadataLog.js"
export * as MetadataLogError from "./MetadataLogError.js"
export * as MetadataProvenance from "./MetadataProvenance.js"
export * as MetadataPublisher from "./MetadataPublisher.js"
export * as MetadataTransaction from "./MetadataTransaction.js"
export * as Snapshot from "./Snapshot.js"
export * as MetaProperties from "./MetaProperties.js"
