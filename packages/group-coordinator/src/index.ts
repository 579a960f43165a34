/**
 * @clustermirror/group-coordinator: the classic consumer-group coordinator, one per
 * `__consumer_offsets` partition, its committed state replayed from that partition, and the shards of
 * the partitions a broker leads, reloaded per leader epoch. The broker implements the log port.
 */
export * as GroupCoordinator from "./GroupCoordinator.js"
export * as GroupShards from "./GroupShards.js"
export * as Assignors from "./Assignors.js"
export * as ConsumerGroupCoordinator from "./ConsumerGroupCoordinator.js"
export * as ConsumerGroups from "./ConsumerGroups.js"
export * as TopicRegex from "./TopicRegex.js"
export * as ConsumerGroupWire from "./ConsumerGroupWire.js"
