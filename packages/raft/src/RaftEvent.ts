/**
 * What goes into the core and what comes out of it. A runtime (the simulation now, the controller's
 * network and log later) feeds `RaftInput`s one at a time and carries out the `RaftOutput`s in order:
 * an output is done before the next one starts (a `PersistQuorumState` is durable before the `Send`
 * after it goes out). Time and randomness arrive with every input, so the core replays exactly.
 */
import type { QuorumStateData } from "./QuorumState.js"
import type {
  FetchResponse,
  FetchSnapshotResponse,
  LogRecord,
  RaftRequest,
  RaftResponse,
  SnapshotId
} from "./RaftMessages.js"

/** The core's timers; setting one replaces the earlier deadline of the same name. */
export type TimerName = "election" | "fetchTimeout" | "fetchNext" | "beginQuorum" | "checkQuorum"

export type RaftEvent<V> =
  /** A request from another voter. */
  | { readonly _tag: "Request"; readonly from: number; readonly request: RaftRequest }
  /** The response to a request this voter sent (`request` is that request, as sent). */
  | {
      readonly _tag: "Response"
      readonly from: number
      readonly request: RaftRequest
      readonly response: RaftResponse<V>
    }
  | { readonly _tag: "TimerFired"; readonly timer: TimerName }
  /** The leader's state machine appends records. */
  | { readonly _tag: "Append"; readonly values: ReadonlyArray<V> }
  /** The log is durable below `endOffset`, as it is now (a truncation since the flush was asked lowers it). */
  | { readonly _tag: "FlushCompleted"; readonly endOffset: number }
  /** The state machine asks for a snapshot of the committed log below `endOffset`. */
  | { readonly _tag: "CreateSnapshot"; readonly endOffset: number }
  /** Graceful shutdown: a leader resigns and names its successors. */
  | { readonly _tag: "Resign" }

export interface RaftInput<V> {
  /** This voter's clock, in ms. */
  readonly now: number
  /** A fresh random 32-bit integer. */
  readonly random: number
  readonly event: RaftEvent<V>
}

export type RaftOutput<V> =
  /** Write the quorum state durably, before any later output. */
  | { readonly _tag: "PersistQuorumState"; readonly state: QuorumStateData }
  | { readonly _tag: "Send"; readonly to: number; readonly message: RaftRequest }
  /** Answer `request` from `to` (responses other than Fetch and FetchSnapshot). */
  | {
      readonly _tag: "Respond"
      readonly to: number
      readonly request: RaftRequest
      readonly response: Exclude<RaftResponse<V>, FetchResponse<V> | FetchSnapshotResponse<V>>
    }
  /** Answer a Fetch; the runtime fills `Records` with the log's records in [readFrom, readTo). */
  | {
      readonly _tag: "RespondFetch"
      readonly to: number
      readonly request: RaftRequest
      readonly response: FetchResponse<V>
      readonly readFrom: number
      readonly readTo: number
    }
  /** Answer a FetchSnapshot; the runtime fills `UnalignedRecords` (and `Size`) from the snapshot `SnapshotId`. */
  | {
      readonly _tag: "RespondFetchSnapshot"
      readonly to: number
      readonly request: RaftRequest
      readonly response: FetchSnapshotResponse<V>
    }
  | { readonly _tag: "AppendLog"; readonly records: ReadonlyArray<LogRecord<V>> }
  | { readonly _tag: "TruncateLog"; readonly endOffset: number }
  /** Make the log durable up to `endOffset`; answer with `FlushCompleted`. */
  | { readonly _tag: "Flush"; readonly endOffset: number }
  /** Write a snapshot of the log below `snapshotId.endOffset` and delete that part of the log. */
  | { readonly _tag: "CreateSnapshot"; readonly snapshotId: SnapshotId }
  /** Replace the whole log by this snapshot fetched from the leader (durably). */
  | { readonly _tag: "InstallSnapshot"; readonly snapshotId: SnapshotId; readonly records: ReadonlyArray<LogRecord<V>> }
  | { readonly _tag: "SetTimer"; readonly timer: TimerName; readonly at: number }
  /** The high watermark moved: records below `offset` are committed. */
  | { readonly _tag: "HighWatermark"; readonly offset: number }
  /** The answer to an `Append`: its records got these offsets in this epoch, or were refused. */
  | { readonly _tag: "Appended"; readonly baseOffset: number; readonly lastOffset: number; readonly epoch: number }
  | { readonly _tag: "AppendRejected"; readonly errorCode: number; readonly leaderId: number }
  /** The voter changed state (for metrics and tests). */
  | {
      readonly _tag: "Transition"
      readonly from: string
      readonly to: string
      readonly epoch: number
      readonly leaderId: number
    }
