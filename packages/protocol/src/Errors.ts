/**
 * Kafka's error codes: number, name, default message and whether a client may retry.
 *
 * Includes every standard code this implementation returns and KIP-1279's codes 134-146.
 */

export interface ErrorInfo {
  readonly code: number
  readonly name: string
  readonly message: string
  readonly retriable: boolean
}

const table: ReadonlyArray<ErrorInfo> = [
  { code: -1, name: "UNKNOWN_SERVER_ERROR", message: "The server experienced an unexpected error when processing the request.", retriable: false },
  { code: 0, name: "NONE", message: "", retriable: false },
  { code: 1, name: "OFFSET_OUT_OF_RANGE", message: "The requested offset is not within the range of offsets maintained by the server.", retriable: false },
  { code: 2, name: "CORRUPT_MESSAGE", message: "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.", retriable: true },
  { code: 3, name: "UNKNOWN_TOPIC_OR_PARTITION", message: "This server does not host this topic-partition.", retriable: true },
  { code: 6, name: "NOT_LEADER_OR_FOLLOWER", message: "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.", retriable: true },
  { code: 7, name: "REQUEST_TIMED_OUT", message: "The request timed out.", retriable: true },
  { code: 10, name: "MESSAGE_TOO_LARGE", message: "The request included a message larger than the max message size the server will accept.", retriable: false },
  { code: 15, name: "COORDINATOR_NOT_AVAILABLE", message: "The coordinator is not available.", retriable: true },
  { code: 16, name: "NOT_COORDINATOR", message: "This is not the correct coordinator.", retriable: true },
  { code: 17, name: "INVALID_TOPIC_EXCEPTION", message: "The request attempted to perform an operation on an invalid topic.", retriable: false },
  { code: 22, name: "ILLEGAL_GENERATION", message: "Specified group generation id is not valid.", retriable: false },
  { code: 25, name: "UNKNOWN_MEMBER_ID", message: "The coordinator is not aware of this member.", retriable: false },
  { code: 27, name: "REBALANCE_IN_PROGRESS", message: "The group is rebalancing, so a rejoin is needed.", retriable: false },
  { code: 35, name: "UNSUPPORTED_VERSION", message: "The version of API is not supported.", retriable: false },
  { code: 36, name: "TOPIC_ALREADY_EXISTS", message: "Topic with this name already exists.", retriable: false },
  { code: 37, name: "INVALID_PARTITIONS", message: "Number of partitions is below 1.", retriable: false },
  { code: 38, name: "INVALID_REPLICATION_FACTOR", message: "Replication factor is below 1 or larger than the number of available brokers.", retriable: false },
  { code: 42, name: "INVALID_REQUEST", message: "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.", retriable: false },
  { code: 45, name: "OUT_OF_ORDER_SEQUENCE_NUMBER", message: "The broker received an out of order sequence number.", retriable: false },
  { code: 46, name: "DUPLICATE_SEQUENCE_NUMBER", message: "The broker received a duplicate sequence number.", retriable: false },
  { code: 47, name: "INVALID_PRODUCER_EPOCH", message: "Producer attempted to produce with an old epoch.", retriable: false },
  { code: 74, name: "FENCED_LEADER_EPOCH", message: "The leader epoch in the request is older than the epoch on the broker.", retriable: true },
  { code: 75, name: "UNKNOWN_LEADER_EPOCH", message: "The leader epoch in the request is newer than the epoch on the broker.", retriable: true },
  { code: 79, name: "MEMBER_ID_REQUIRED", message: "The group member needs to have a valid member id before actually entering a consumer group.", retriable: false },
  { code: 134, name: "READ_ONLY_TOPIC", message: "The topic is read-only.", retriable: false }
]

export const byCode: ReadonlyMap<number, ErrorInfo> = new Map(table.map((e) => [e.code, e]))
export const byName: ReadonlyMap<string, ErrorInfo> = new Map(table.map((e) => [e.name, e]))
export const all: ReadonlyArray<ErrorInfo> = table

/** Error codes by name, e.g. `ErrorCode.NOT_LEADER_OR_FOLLOWER`. */
export const ErrorCode = Object.fromEntries(table.map((e) => [e.name, e.code])) as { readonly [name: string]: number }

export const message = (code: number): string => byCode.get(code)?.message ?? `error ${code}`
export const isRetriable = (code: number): boolean => byCode.get(code)?.retriable ?? false
