/**
 * Every error the testkit raises. They are plain `Data.TaggedError`s (also real `Error`s), so Promise-based
 * tests see a readable message and Effect-based tests can match on `_tag`.
 *
 * Errors carry the tail of the peer's output: a peer that fails to start is diagnosed from its own words.
 */
import { Data } from "effect"

/** Resolving Apache Kafka's jars (Maven) failed. */
export class KafkaLibsError extends Data.TaggedError("KafkaLibsError")<{
  readonly message: string
  readonly version: string
}> {}

/** A peer process (Apache Kafka node, our server) did not become ready, or exited early. */
export class PeerStartError extends Data.TaggedError("PeerStartError")<{
  readonly message: string
  readonly peer: string
  readonly output: string
}> {}

/** A peer process ignored SIGTERM/SIGKILL for longer than the stop timeout. */
export class PeerStopError extends Data.TaggedError("PeerStopError")<{
  readonly message: string
  readonly peer: string
  readonly output: string
}> {}

/** A command-line tool (a Java tool, kcat) exited with a failure or ran past its timeout. */
export class ToolError extends Data.TaggedError("ToolError")<{
  readonly message: string
  readonly tool: string
  readonly code: number | null
  readonly timedOut: boolean
  readonly stderr: string
}> {}
