/**
 * Kafka's error codes: number, name, default message and whether a client may retry.
 *
 * Holds every code of Apache Kafka's `Errors` (-1 to 133) and KIP-1279's cluster-mirroring codes 134-146
 * (135 is unassigned). Names are Kafka's, exactly, so that `ErrorCode.X` reads like Kafka's `Errors.X`.
 * Retriable means the Java client's exception for the code is a `RetriableException`. This module only
 * describes codes; mapping failures to codes happens at each handler boundary.
 */

export interface ErrorInfo {
  readonly code: number
  readonly name: string
  readonly message: string
  readonly retriable: boolean
}

const table = [
  // Apache Kafka
  {
    code: -1,
    name: "UNKNOWN_SERVER_ERROR",
    message: "The server experienced an unexpected error when processing the request.",
    retriable: false
  },
  { code: 0, name: "NONE", message: "", retriable: false },
  {
    code: 1,
    name: "OFFSET_OUT_OF_RANGE",
    message: "The requested offset is not within the range of offsets maintained by the server.",
    retriable: false
  },
  {
    code: 2,
    name: "CORRUPT_MESSAGE",
    message:
      "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.",
    retriable: true
  },
  {
    code: 3,
    name: "UNKNOWN_TOPIC_OR_PARTITION",
    message: "This server does not host this topic-partition.",
    retriable: true
  },
  { code: 4, name: "INVALID_FETCH_SIZE", message: "The requested fetch size is invalid.", retriable: false },
  {
    code: 5,
    name: "LEADER_NOT_AVAILABLE",
    message: "There is no leader for this topic-partition as we are in the middle of a leadership election.",
    retriable: true
  },
  {
    code: 6,
    name: "NOT_LEADER_OR_FOLLOWER",
    message:
      "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.",
    retriable: true
  },
  { code: 7, name: "REQUEST_TIMED_OUT", message: "The request timed out.", retriable: true },
  { code: 8, name: "BROKER_NOT_AVAILABLE", message: "The broker is not available.", retriable: false },
  {
    code: 9,
    name: "REPLICA_NOT_AVAILABLE",
    message:
      "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.",
    retriable: true
  },
  {
    code: 10,
    name: "MESSAGE_TOO_LARGE",
    message: "The request included a message larger than the max message size the server will accept.",
    retriable: false
  },
  { code: 11, name: "STALE_CONTROLLER_EPOCH", message: "The controller moved to another broker.", retriable: false },
  {
    code: 12,
    name: "OFFSET_METADATA_TOO_LARGE",
    message: "The metadata field of the offset request was too large.",
    retriable: false
  },
  {
    code: 13,
    name: "NETWORK_EXCEPTION",
    message: "The server disconnected before a response was received.",
    retriable: true
  },
  {
    code: 14,
    name: "COORDINATOR_LOAD_IN_PROGRESS",
    message: "The coordinator is loading and hence can't process requests.",
    retriable: true
  },
  { code: 15, name: "COORDINATOR_NOT_AVAILABLE", message: "The coordinator is not available.", retriable: true },
  { code: 16, name: "NOT_COORDINATOR", message: "This is not the correct coordinator.", retriable: true },
  {
    code: 17,
    name: "INVALID_TOPIC_EXCEPTION",
    message: "The request attempted to perform an operation on an invalid topic.",
    retriable: false
  },
  {
    code: 18,
    name: "RECORD_LIST_TOO_LARGE",
    message: "The request included message batch larger than the configured segment size on the server.",
    retriable: false
  },
  {
    code: 19,
    name: "NOT_ENOUGH_REPLICAS",
    message: "Messages are rejected since there are fewer in-sync replicas than required.",
    retriable: true
  },
  {
    code: 20,
    name: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    message: "Messages are written to the log, but to fewer in-sync replicas than required.",
    retriable: true
  },
  {
    code: 21,
    name: "INVALID_REQUIRED_ACKS",
    message: "Produce request specified an invalid value for required acks.",
    retriable: false
  },
  { code: 22, name: "ILLEGAL_GENERATION", message: "Specified group generation id is not valid.", retriable: false },
  {
    code: 23,
    name: "INCONSISTENT_GROUP_PROTOCOL",
    message:
      "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.",
    retriable: false
  },
  { code: 24, name: "INVALID_GROUP_ID", message: "The configured groupId is invalid.", retriable: false },
  { code: 25, name: "UNKNOWN_MEMBER_ID", message: "The coordinator is not aware of this member.", retriable: false },
  {
    code: 26,
    name: "INVALID_SESSION_TIMEOUT",
    message:
      "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).",
    retriable: false
  },
  {
    code: 27,
    name: "REBALANCE_IN_PROGRESS",
    message: "The group is rebalancing, so a rejoin is needed.",
    retriable: false
  },
  {
    code: 28,
    name: "INVALID_COMMIT_OFFSET_SIZE",
    message: "The committing offset data size is not valid.",
    retriable: false
  },
  { code: 29, name: "TOPIC_AUTHORIZATION_FAILED", message: "Topic authorization failed.", retriable: false },
  { code: 30, name: "GROUP_AUTHORIZATION_FAILED", message: "Group authorization failed.", retriable: false },
  { code: 31, name: "CLUSTER_AUTHORIZATION_FAILED", message: "Cluster authorization failed.", retriable: false },
  {
    code: 32,
    name: "INVALID_TIMESTAMP",
    message: "The timestamp of the message is out of acceptable range.",
    retriable: false
  },
  {
    code: 33,
    name: "UNSUPPORTED_SASL_MECHANISM",
    message: "The broker does not support the requested SASL mechanism.",
    retriable: false
  },
  {
    code: 34,
    name: "ILLEGAL_SASL_STATE",
    message: "Request is not valid given the current SASL state.",
    retriable: false
  },
  { code: 35, name: "UNSUPPORTED_VERSION", message: "The version of API is not supported.", retriable: false },
  { code: 36, name: "TOPIC_ALREADY_EXISTS", message: "Topic with this name already exists.", retriable: false },
  { code: 37, name: "INVALID_PARTITIONS", message: "Number of partitions is below 1.", retriable: false },
  {
    code: 38,
    name: "INVALID_REPLICATION_FACTOR",
    message: "Replication factor is below 1 or larger than the number of available brokers.",
    retriable: false
  },
  { code: 39, name: "INVALID_REPLICA_ASSIGNMENT", message: "Replica assignment is invalid.", retriable: false },
  { code: 40, name: "INVALID_CONFIG", message: "Configuration is invalid.", retriable: false },
  {
    code: 41,
    name: "NOT_CONTROLLER",
    message: "This is not the correct controller for this cluster.",
    retriable: true
  },
  {
    code: 42,
    name: "INVALID_REQUEST",
    message:
      "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
    retriable: false
  },
  {
    code: 43,
    name: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    message: "The message format version on the broker does not support the request.",
    retriable: false
  },
  {
    code: 44,
    name: "POLICY_VIOLATION",
    message: "Request parameters do not satisfy the configured policy.",
    retriable: false
  },
  {
    code: 45,
    name: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    message: "The broker received an out of order sequence number.",
    retriable: false
  },
  {
    code: 46,
    name: "DUPLICATE_SEQUENCE_NUMBER",
    message: "The broker received a duplicate sequence number.",
    retriable: false
  },
  {
    code: 47,
    name: "INVALID_PRODUCER_EPOCH",
    message: "Producer attempted to produce with an old epoch.",
    retriable: false
  },
  {
    code: 48,
    name: "INVALID_TXN_STATE",
    message: "The producer attempted a transactional operation in an invalid state.",
    retriable: false
  },
  {
    code: 49,
    name: "INVALID_PRODUCER_ID_MAPPING",
    message: "The producer attempted to use a producer id which is not currently assigned to its transactional id.",
    retriable: false
  },
  {
    code: 50,
    name: "INVALID_TRANSACTION_TIMEOUT",
    message:
      "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).",
    retriable: false
  },
  {
    code: 51,
    name: "CONCURRENT_TRANSACTIONS",
    message:
      "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.",
    retriable: true
  },
  {
    code: 52,
    name: "TRANSACTION_COORDINATOR_FENCED",
    message:
      "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.",
    retriable: false
  },
  {
    code: 53,
    name: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    message: "Transactional Id authorization failed.",
    retriable: false
  },
  { code: 54, name: "SECURITY_DISABLED", message: "Security features are disabled.", retriable: false },
  {
    code: 55,
    name: "OPERATION_NOT_ATTEMPTED",
    message:
      "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.",
    retriable: false
  },
  {
    code: 56,
    name: "KAFKA_STORAGE_ERROR",
    message: "Disk error when trying to access log file on the disk.",
    retriable: true
  },
  {
    code: 57,
    name: "LOG_DIR_NOT_FOUND",
    message: "The user-specified log directory is not found in the broker config.",
    retriable: false
  },
  { code: 58, name: "SASL_AUTHENTICATION_FAILED", message: "SASL Authentication failed.", retriable: false },
  {
    code: 59,
    name: "UNKNOWN_PRODUCER_ID",
    message:
      "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception.",
    retriable: false
  },
  { code: 60, name: "REASSIGNMENT_IN_PROGRESS", message: "A partition reassignment is in progress.", retriable: false },
  {
    code: 61,
    name: "DELEGATION_TOKEN_AUTH_DISABLED",
    message: "Delegation Token feature is not enabled.",
    retriable: false
  },
  {
    code: 62,
    name: "DELEGATION_TOKEN_NOT_FOUND",
    message: "Delegation Token is not found on server.",
    retriable: false
  },
  {
    code: 63,
    name: "DELEGATION_TOKEN_OWNER_MISMATCH",
    message: "Specified Principal is not valid Owner/Renewer.",
    retriable: false
  },
  {
    code: 64,
    name: "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    message:
      "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.",
    retriable: false
  },
  {
    code: 65,
    name: "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    message: "Delegation Token authorization failed.",
    retriable: false
  },
  { code: 66, name: "DELEGATION_TOKEN_EXPIRED", message: "Delegation Token is expired.", retriable: false },
  { code: 67, name: "INVALID_PRINCIPAL_TYPE", message: "Supplied principalType is not supported.", retriable: false },
  { code: 68, name: "NON_EMPTY_GROUP", message: "The group is not empty.", retriable: false },
  { code: 69, name: "GROUP_ID_NOT_FOUND", message: "The group id does not exist.", retriable: false },
  { code: 70, name: "FETCH_SESSION_ID_NOT_FOUND", message: "The fetch session ID was not found.", retriable: true },
  { code: 71, name: "INVALID_FETCH_SESSION_EPOCH", message: "The fetch session epoch is invalid.", retriable: true },
  {
    code: 72,
    name: "LISTENER_NOT_FOUND",
    message:
      "There is no listener on the leader broker that matches the listener on which metadata request was processed.",
    retriable: true
  },
  { code: 73, name: "TOPIC_DELETION_DISABLED", message: "Topic deletion is disabled.", retriable: false },
  {
    code: 74,
    name: "FENCED_LEADER_EPOCH",
    message: "The leader epoch in the request is older than the epoch on the broker.",
    retriable: true
  },
  {
    code: 75,
    name: "UNKNOWN_LEADER_EPOCH",
    message: "The leader epoch in the request is newer than the epoch on the broker.",
    retriable: true
  },
  {
    code: 76,
    name: "UNSUPPORTED_COMPRESSION_TYPE",
    message: "The requesting client does not support the compression type of given partition.",
    retriable: false
  },
  { code: 77, name: "STALE_BROKER_EPOCH", message: "Broker epoch has changed.", retriable: false },
  {
    code: 78,
    name: "OFFSET_NOT_AVAILABLE",
    message:
      "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.",
    retriable: true
  },
  {
    code: 79,
    name: "MEMBER_ID_REQUIRED",
    message: "The group member needs to have a valid member id before actually entering a consumer group.",
    retriable: false
  },
  {
    code: 80,
    name: "PREFERRED_LEADER_NOT_AVAILABLE",
    message: "The preferred leader was not available.",
    retriable: true
  },
  {
    code: 81,
    name: "GROUP_MAX_SIZE_REACHED",
    message: "The consumer group has reached its max size.",
    retriable: false
  },
  {
    code: 82,
    name: "FENCED_INSTANCE_ID",
    message:
      "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.",
    retriable: false
  },
  {
    code: 83,
    name: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    message: "Eligible topic partition leaders are not available.",
    retriable: true
  },
  {
    code: 84,
    name: "ELECTION_NOT_NEEDED",
    message: "Leader election not needed for topic partition.",
    retriable: true
  },
  {
    code: 85,
    name: "NO_REASSIGNMENT_IN_PROGRESS",
    message: "No partition reassignment is in progress.",
    retriable: false
  },
  {
    code: 86,
    name: "GROUP_SUBSCRIBED_TO_TOPIC",
    message: "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.",
    retriable: false
  },
  {
    code: 87,
    name: "INVALID_RECORD",
    message: "This record has failed the validation on broker and hence will be rejected.",
    retriable: false
  },
  {
    code: 88,
    name: "UNSTABLE_OFFSET_COMMIT",
    message: "There are unstable offsets that need to be cleared.",
    retriable: true
  },
  { code: 89, name: "THROTTLING_QUOTA_EXCEEDED", message: "The throttling quota has been exceeded.", retriable: true },
  {
    code: 90,
    name: "PRODUCER_FENCED",
    message: "There is a newer producer with the same transactionalId which fences the current one.",
    retriable: false
  },
  {
    code: 91,
    name: "RESOURCE_NOT_FOUND",
    message: "A request illegally referred to a resource that does not exist.",
    retriable: false
  },
  {
    code: 92,
    name: "DUPLICATE_RESOURCE",
    message: "A request illegally referred to the same resource twice.",
    retriable: false
  },
  {
    code: 93,
    name: "UNACCEPTABLE_CREDENTIAL",
    message: "Requested credential would not meet criteria for acceptability.",
    retriable: false
  },
  {
    code: 94,
    name: "INCONSISTENT_VOTER_SET",
    message:
      "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.",
    retriable: false
  },
  { code: 95, name: "INVALID_UPDATE_VERSION", message: "The given update version was invalid.", retriable: false },
  {
    code: 96,
    name: "FEATURE_UPDATE_FAILED",
    message: "Unable to update finalized features due to an unexpected server error.",
    retriable: false
  },
  {
    code: 97,
    name: "PRINCIPAL_DESERIALIZATION_FAILURE",
    message:
      "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.",
    retriable: false
  },
  { code: 98, name: "SNAPSHOT_NOT_FOUND", message: "Requested snapshot was not found.", retriable: false },
  {
    code: 99,
    name: "POSITION_OUT_OF_RANGE",
    message: "Requested position is not greater than or equal to zero, and less than the size of the snapshot.",
    retriable: false
  },
  { code: 100, name: "UNKNOWN_TOPIC_ID", message: "This server does not host this topic ID.", retriable: true },
  { code: 101, name: "DUPLICATE_BROKER_REGISTRATION", message: "This broker ID is already in use.", retriable: false },
  { code: 102, name: "BROKER_ID_NOT_REGISTERED", message: "The given broker ID was not registered.", retriable: false },
  {
    code: 103,
    name: "INCONSISTENT_TOPIC_ID",
    message: "The log's topic ID did not match the topic ID in the request.",
    retriable: true
  },
  {
    code: 104,
    name: "INCONSISTENT_CLUSTER_ID",
    message: "The clusterId in the request does not match that found on the server.",
    retriable: false
  },
  {
    code: 105,
    name: "TRANSACTIONAL_ID_NOT_FOUND",
    message: "The transactionalId could not be found.",
    retriable: false
  },
  {
    code: 106,
    name: "FETCH_SESSION_TOPIC_ID_ERROR",
    message: "The fetch session encountered inconsistent topic ID usage.",
    retriable: true
  },
  {
    code: 107,
    name: "INELIGIBLE_REPLICA",
    message: "The new ISR contains at least one ineligible replica.",
    retriable: false
  },
  {
    code: 108,
    name: "NEW_LEADER_ELECTED",
    message: "The AlterPartition request successfully updated the partition state but the leader has changed.",
    retriable: false
  },
  {
    code: 109,
    name: "OFFSET_MOVED_TO_TIERED_STORAGE",
    message: "The requested offset is moved to tiered storage.",
    retriable: false
  },
  {
    code: 110,
    name: "FENCED_MEMBER_EPOCH",
    message:
      "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.",
    retriable: false
  },
  {
    code: 111,
    name: "UNRELEASED_INSTANCE_ID",
    message: "The instance ID is still used by another member in the consumer group. That member must leave first.",
    retriable: false
  },
  {
    code: 112,
    name: "UNSUPPORTED_ASSIGNOR",
    message: "The assignor or its version range is not supported by the consumer group.",
    retriable: false
  },
  {
    code: 113,
    name: "STALE_MEMBER_EPOCH",
    message:
      "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.",
    retriable: false
  },
  {
    code: 114,
    name: "MISMATCHED_ENDPOINT_TYPE",
    message: "The request was sent to an endpoint of the wrong type.",
    retriable: false
  },
  {
    code: 115,
    name: "UNSUPPORTED_ENDPOINT_TYPE",
    message: "This endpoint type is not supported yet.",
    retriable: false
  },
  { code: 116, name: "UNKNOWN_CONTROLLER_ID", message: "This controller ID is not known.", retriable: false },
  {
    code: 117,
    name: "UNKNOWN_SUBSCRIPTION_ID",
    message: "Client sent a push telemetry request with an invalid or outdated subscription ID.",
    retriable: false
  },
  {
    code: 118,
    name: "TELEMETRY_TOO_LARGE",
    message: "Client sent a push telemetry request larger than the maximum size the broker will accept.",
    retriable: false
  },
  {
    code: 119,
    name: "INVALID_REGISTRATION",
    message: "The controller has considered the broker registration to be invalid.",
    retriable: false
  },
  {
    code: 120,
    name: "TRANSACTION_ABORTABLE",
    message:
      "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.",
    retriable: false
  },
  {
    code: 121,
    name: "INVALID_RECORD_STATE",
    message: "The record state is invalid. The acknowledgement of delivery could not be completed.",
    retriable: false
  },
  { code: 122, name: "SHARE_SESSION_NOT_FOUND", message: "The share session was not found.", retriable: true },
  { code: 123, name: "INVALID_SHARE_SESSION_EPOCH", message: "The share session epoch is invalid.", retriable: true },
  {
    code: 124,
    name: "FENCED_STATE_EPOCH",
    message: "The share coordinator rejected the request because the share-group state epoch did not match.",
    retriable: false
  },
  {
    code: 125,
    name: "INVALID_VOTER_KEY",
    message: "The voter key doesn't match the receiving replica's key.",
    retriable: false
  },
  { code: 126, name: "DUPLICATE_VOTER", message: "The voter is already part of the set of voters.", retriable: false },
  { code: 127, name: "VOTER_NOT_FOUND", message: "The voter is not part of the set of voters.", retriable: false },
  { code: 128, name: "INVALID_REGULAR_EXPRESSION", message: "The regular expression is not valid.", retriable: false },
  {
    code: 129,
    name: "REBOOTSTRAP_REQUIRED",
    message: "Client metadata is stale. The client should rebootstrap to obtain new metadata.",
    retriable: false
  },
  { code: 130, name: "STREAMS_INVALID_TOPOLOGY", message: "The supplied topology is invalid.", retriable: false },
  {
    code: 131,
    name: "STREAMS_INVALID_TOPOLOGY_EPOCH",
    message: "The supplied topology epoch is invalid.",
    retriable: false
  },
  { code: 132, name: "STREAMS_TOPOLOGY_FENCED", message: "The supplied topology epoch is outdated.", retriable: false },
  {
    code: 133,
    name: "SHARE_SESSION_LIMIT_REACHED",
    message: "The limit of share sessions has been reached.",
    retriable: true
  },
  // KIP-1279 cluster mirroring (135 is unassigned)
  { code: 134, name: "READ_ONLY_TOPIC", message: "The topic is read-only.", retriable: false },
  { code: 136, name: "CLUSTER_MIRROR_ALREADY_EXISTS", message: "The cluster mirror already exists.", retriable: false },
  { code: 137, name: "UNKNOWN_CLUSTER_MIRROR", message: "The cluster mirror does not exist.", retriable: false },
  {
    code: 138,
    name: "TOPIC_ALREADY_IN_CLUSTER_MIRROR",
    message: "The topic is already assigned to a cluster mirror.",
    retriable: false
  },
  {
    code: 139,
    name: "TOPIC_NOT_IN_CLUSTER_MIRROR",
    message: "The topic does not belong to the specified cluster mirror.",
    retriable: false
  },
  { code: 140, name: "MIRROR_TOPIC_ALREADY_PAUSED", message: "The mirror topic is already paused.", retriable: false },
  { code: 141, name: "MIRROR_TOPIC_NOT_PAUSED", message: "The mirror topic is not paused.", retriable: false },
  { code: 142, name: "MIRROR_TOPIC_BEING_STOPPED", message: "The mirror topic is being stopped.", retriable: false },
  {
    code: 143,
    name: "CLUSTER_MIRROR_NOT_EMPTY",
    message: "The cluster mirror still has active or non-stopped topics.",
    retriable: false
  },
  {
    code: 144,
    name: "CLUSTER_MIRROR_AUTHORIZATION_FAILED",
    message: "Cluster mirror authorization failed.",
    retriable: false
  },
  {
    code: 145,
    name: "INVALID_CLUSTER_MIRROR_STATES",
    message: "Cluster mirror partition states are not in the expected states.",
    retriable: false
  },
  {
    code: 146,
    name: "MIRROR_TOPIC_NOT_STOPPED",
    message: "The mirror topic is not in stopped state.",
    retriable: false
  }
] as const satisfies ReadonlyArray<ErrorInfo>

export const byCode: ReadonlyMap<number, ErrorInfo> = new Map(table.map((e) => [e.code, e]))
export const byName: ReadonlyMap<string, ErrorInfo> = new Map(table.map((e) => [e.name, e]))
export const all: ReadonlyArray<ErrorInfo> = table

/** A Kafka error name, e.g. `"NOT_LEADER_OR_FOLLOWER"`. */
export type ErrorName = (typeof table)[number]["name"]

type CodesByName<T extends ReadonlyArray<ErrorInfo>> = { readonly [E in T[number] as E["name"]]: E["code"] }

const codesByName = <const T extends ReadonlyArray<ErrorInfo>>(entries: T): CodesByName<T> => {
  const out: Record<string, number> = {}
  for (const e of entries) out[e.name] = e.code
  // Object construction cannot follow a mapped type key by key; the loop above fills every name of `T`.
  return out as CodesByName<T>
}

/** Error codes by name, each typed as its literal code: `ErrorCode.NOT_LEADER_OR_FOLLOWER` is `6`. */
export const ErrorCode: CodesByName<typeof table> = codesByName(table)

export const message = (code: number): string => byCode.get(code)?.message ?? `error ${code}`
export const isRetriable = (code: number): boolean => byCode.get(code)?.retriable ?? false
