/**
 * Whole-request failures of controller decisions, one class per Kafka error code, each carrying that
 * code. Per-item failures (a topic, a config resource) are not errors: they go into the response.
 * The handler boundary maps these to the response's `ErrorCode` with `errorCode` / `ErrorMessage`
 * with `message`; nothing inside the controller catches them.
 */
import { Errors } from "@clustermirror/protocol"
import { Data } from "effect"

interface Fields {
  readonly message: string
}

/** The request reached a node that is not the active controller. */
export class NotController extends Data.TaggedError("NotController")<Fields> {
  readonly errorCode = Errors.ErrorCode.NOT_CONTROLLER
}

/** The request is malformed or asks for something the controller never does. */
export class InvalidRequest extends Data.TaggedError("InvalidRequest")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_REQUEST
}

/** The broker epoch in the request is not the broker's current registration. */
export class StaleBrokerEpoch extends Data.TaggedError("StaleBrokerEpoch")<Fields> {
  readonly errorCode = Errors.ErrorCode.STALE_BROKER_EPOCH
}

/** The broker id has no registration. */
export class BrokerIdNotRegistered extends Data.TaggedError("BrokerIdNotRegistered")<Fields> {
  readonly errorCode = Errors.ErrorCode.BROKER_ID_NOT_REGISTERED
}

/** Another live incarnation holds the broker id. */
export class DuplicateBrokerRegistration extends Data.TaggedError("DuplicateBrokerRegistration")<Fields> {
  readonly errorCode = Errors.ErrorCode.DUPLICATE_BROKER_REGISTRATION
}

/** The request names another cluster. */
export class InconsistentClusterId extends Data.TaggedError("InconsistentClusterId")<Fields> {
  readonly errorCode = Errors.ErrorCode.INCONSISTENT_CLUSTER_ID
}

/** A version or feature level the other side cannot work with. */
export class UnsupportedVersion extends Data.TaggedError("UnsupportedVersion")<Fields> {
  readonly errorCode = Errors.ErrorCode.UNSUPPORTED_VERSION
}

/** A feature update names a level that cannot be set. */
export class InvalidUpdateVersion extends Data.TaggedError("InvalidUpdateVersion")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_UPDATE_VERSION
}

/** A configuration name or value is invalid. */
export class InvalidConfig extends Data.TaggedError("InvalidConfig")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_CONFIG
}

/** More replicas were asked for than there are usable brokers, or a non-positive count. */
export class InvalidReplicationFactor extends Data.TaggedError("InvalidReplicationFactor")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_REPLICATION_FACTOR
}

/** A manual replica assignment is invalid. */
export class InvalidReplicaAssignment extends Data.TaggedError("InvalidReplicaAssignment")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_REPLICA_ASSIGNMENT
}

/** A partition count is invalid. */
export class InvalidPartitions extends Data.TaggedError("InvalidPartitions")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_PARTITIONS
}

/** A topic name is invalid. */
export class InvalidTopic extends Data.TaggedError("InvalidTopic")<Fields> {
  readonly errorCode = Errors.ErrorCode.INVALID_TOPIC_EXCEPTION
}

/** A topic of that name (or id) already exists. */
export class TopicAlreadyExists extends Data.TaggedError("TopicAlreadyExists")<Fields> {
  readonly errorCode = Errors.ErrorCode.TOPIC_ALREADY_EXISTS
}

/** The topic or partition does not exist. */
export class UnknownTopicOrPartition extends Data.TaggedError("UnknownTopicOrPartition")<Fields> {
  readonly errorCode = Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
}

/** No topic has that id. */
export class UnknownTopicId extends Data.TaggedError("UnknownTopicId")<Fields> {
  readonly errorCode = Errors.ErrorCode.UNKNOWN_TOPIC_ID
}

/** The cluster mirror does not exist (KIP-1279). */
export class UnknownClusterMirror extends Data.TaggedError("UnknownClusterMirror")<Fields> {
  readonly errorCode = Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR
}

/** The controller cannot serve the request for a reason the client cannot fix. */
export class UnknownServerError extends Data.TaggedError("UnknownServerError")<Fields> {
  readonly errorCode = Errors.ErrorCode.UNKNOWN_SERVER_ERROR
}

/** Every controller error. */
export type ControllerError =
  | NotController
  | InvalidRequest
  | StaleBrokerEpoch
  | BrokerIdNotRegistered
  | DuplicateBrokerRegistration
  | InconsistentClusterId
  | UnsupportedVersion
  | InvalidUpdateVersion
  | InvalidConfig
  | InvalidReplicationFactor
  | InvalidReplicaAssignment
  | InvalidPartitions
  | InvalidTopic
  | TopicAlreadyExists
  | UnknownTopicOrPartition
  | UnknownTopicId
  | UnknownClusterMirror
  | UnknownServerError

/** A per-item outcome as responses carry it: an error code and an optional message. */
export interface ApiError {
  readonly errorCode: number
  readonly errorMessage: string | null
}

/** Success, as a per-item outcome. */
export const NONE: ApiError = { errorCode: Errors.ErrorCode.NONE, errorMessage: null }

/** A controller error as a per-item outcome. */
export const toApiError = (e: ControllerError): ApiError => ({ errorCode: e.errorCode, errorMessage: e.message })

// ---------------------------------------------------------------------------------------------------
// Runtime failures of the controller itself (not of a request). `retriable`: the same request may
// succeed later against this controller; fatal: it never will.

/**
 * The metadata log did not take an append. Fatal for the controller's in-memory state: it no longer
 * knows what the log holds, so it reopens its state from the log (snapshot + tail) before its next
 * write, and never carries on with a state the log may not have. The request may be retried.
 */
export class MetadataAppendFailed extends Data.TaggedError("MetadataAppendFailed")<
  Fields & { readonly cause: unknown }
> {
  readonly errorCode = Errors.ErrorCode.NOT_CONTROLLER
  readonly retriable = true
}

/**
 * The controller could not reopen its state from the metadata log after a failed append: every write
 * fails with this until a reload succeeds (each later write tries again first).
 */
export class MetadataLogUnavailable extends Data.TaggedError("MetadataLogUnavailable")<
  Fields & { readonly cause: unknown }
> {
  readonly errorCode = Errors.ErrorCode.NOT_CONTROLLER
  readonly retriable = true
}

/** The metadata log holds a batch that does not decode: the controller cannot start from it. */
export class CorruptMetadataLog extends Data.TaggedError("CorruptMetadataLog")<Fields> {
  readonly errorCode = Errors.ErrorCode.UNKNOWN_SERVER_ERROR
  readonly retriable = false
}

/** The controller was closed; it takes no more requests. */
export class ControllerClosed extends Data.TaggedError("ControllerClosed")<Fields> {
  readonly errorCode = Errors.ErrorCode.NOT_CONTROLLER
  readonly retriable = false
}

/**
 * This controller no longer leads its quorum's metadata log (another controller was elected): it
 * refuses every write; the request goes to the new active controller.
 */
export class ControllerDeposed extends Data.TaggedError("ControllerDeposed")<Fields> {
  readonly errorCode = Errors.ErrorCode.NOT_CONTROLLER
  readonly retriable = true
}

/** Every failure of the controller runtime. */
export type RuntimeError =
  | MetadataAppendFailed
  | MetadataLogUnavailable
  | CorruptMetadataLog
  | ControllerClosed
  | ControllerDeposed

/** Whether a runtime failure may go away when the request is sent again. */
export const isRetriable = (e: RuntimeError): boolean => e.retriable
