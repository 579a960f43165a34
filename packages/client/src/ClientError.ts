/**
 * Every failure of the network client, as `Data.TaggedError`s (they never cross the wire).
 *
 * They extend `Error`, so the Promise core rejects with them and the Effect wrappers fail with them
 * unchanged: one set of errors for both layers. Kafka error codes in responses become `KafkaError`
 * only where the client itself interprets a response (metadata, leader routing); raw `request` calls
 * return the response with its codes untouched.
 */
import { Errors } from "@clustermirror/protocol"
import { Data } from "effect"

/** Connecting failed, or the connection broke (or was closed) while the request was in flight. */
export class ConnectionError extends Data.TaggedError("ConnectionError")<{
  readonly host: string
  readonly port: number
  readonly reason: "connect" | "timeout" | "closed" | "protocol"
  readonly message: string
  readonly cause?: unknown
}> {}

/** No response within the request timeout. The connection stays usable; a late answer is dropped. */
export class RequestTimeout extends Data.TaggedError("RequestTimeout")<{
  readonly api: string
  readonly version: number
  readonly correlationId: number
  readonly timeoutMs: number
}> {
  override get message(): string {
    return `${this.api} v${this.version} (correlation ${this.correlationId}) timed out after ${this.timeoutMs} ms`
  }
}

/** The broker and this client share no version of an API. */
export class UnsupportedVersion extends Data.TaggedError("UnsupportedVersion")<{
  readonly api: string
  readonly apiKey: number
  readonly ours: { readonly min: number; readonly max: number }
  /** The broker's range, or null when the broker does not serve the API at all. */
  readonly theirs: { readonly min: number; readonly max: number } | null
}> {
  override get message(): string {
    const theirs = this.theirs === null ? "none" : `${this.theirs.min}-${this.theirs.max}`
    return `${this.api} (key ${this.apiKey}): we speak ${this.ours.min}-${this.ours.max}, the broker ${theirs}`
  }
}

/** A request could not be encoded or its response could not be decoded. */
export class ProtocolFailure extends Data.TaggedError("ProtocolFailure")<{
  readonly api: string
  readonly version: number
  readonly message: string
}> {}

/**
 * A request body that does not fit its message's schema (an int32 out of range, a null where the field is
 * not nullable, a malformed UUID), refused before anything is encoded or sent. Not retriable.
 */
export class InvalidRequest extends Data.TaggedError("InvalidRequest")<{
  readonly api: string
  /** The field's path in the body, e.g. "config[0].name". */
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `${this.api}: invalid ${this.field === "" ? "request" : `field ${this.field}`}: ${this.reason}`
  }
}

/** A Kafka error code the client could not resolve (after any retries it is allowed). */
export class KafkaError extends Data.TaggedError("KafkaError")<{
  readonly errorCode: number
  readonly errorMessage: string | null
  /** What was being done, e.g. "Metadata", "Produce t-0". */
  readonly context: string
}> {
  get errorName(): string {
    return Errors.byCode.get(this.errorCode)?.name ?? `UNKNOWN(${this.errorCode})`
  }
  get retriable(): boolean {
    return Errors.isRetriable(this.errorCode)
  }
  override get message(): string {
    return `${this.context}: ${this.errorName}${this.errorMessage ? ` (${this.errorMessage})` : ""}`
  }
}

/** No broker could be reached (bootstrap or every known broker failed). */
export class NoBrokerAvailable extends Data.TaggedError("NoBrokerAvailable")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/**
 * A mirror's source cluster could not be reached at `bootstrap` (connection refused, timed out, no
 * broker answering): the mirror admin says so instead of acting on what it could not learn.
 */
export class SourceUnreachable extends Data.TaggedError("SourceUnreachable")<{
  readonly bootstrap: string
  /** The underlying failure, e.g. "connect ECONNREFUSED 127.0.0.1:9092". */
  readonly reason: string
  readonly cause?: unknown
}> {
  override get message(): string {
    return `cannot reach the source at ${this.bootstrap}: ${this.reason}`
  }
}

/** The client was closed. */
export class ClientClosed extends Data.TaggedError("ClientClosed")<{ readonly message: string }> {}

export type ClientError =
  | ConnectionError
  | RequestTimeout
  | UnsupportedVersion
  | ProtocolFailure
  | InvalidRequest
  | KafkaError
  | NoBrokerAvailable
  | SourceUnreachable
  | ClientClosed

const TAGS: ReadonlySet<string> = new Set([
  "ConnectionError",
  "RequestTimeout",
  "UnsupportedVersion",
  "ProtocolFailure",
  "InvalidRequest",
  "KafkaError",
  "NoBrokerAvailable",
  "SourceUnreachable",
  "ClientClosed"
])

export const isClientError = (u: unknown): u is ClientError =>
  u instanceof Error && "_tag" in u && typeof u._tag === "string" && TAGS.has(u._tag)

/** Whether trying again (possibly elsewhere, after a metadata refresh) may succeed. */
export const isRetriable = (e: ClientError): boolean => {
  switch (e._tag) {
    case "ConnectionError":
    case "RequestTimeout":
    case "NoBrokerAvailable":
      return true
    case "KafkaError":
      return e.retriable
    default:
      return false
  }
}
