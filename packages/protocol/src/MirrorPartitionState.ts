/**
 * MirrorPartitionState: the states of a mirror partition (KIP-1279) with their wire bytes, as carried
 * by MirrorTopicStateChangeRecord (desired state), `__mirror_state` records and Read/WriteMirrorStates
 * (actual state), and the table of allowed transitions. Pure data: running the state machine belongs
 * to the coordinator.
 */
import { Option } from "effect"

export type MirrorPartitionState =
  | "LOG_TRUNCATION"
  | "EPOCH_FENCING"
  | "MIRRORING"
  | "PAUSING"
  | "PAUSED"
  | "STOPPING"
  | "STOPPED"
  | "FAILED"
  | "UNKNOWN"

/** A state, by its short name (`MirrorPartitionState.State`). */
export type State = MirrorPartitionState

const BYTES = {
  LOG_TRUNCATION: 0,
  EPOCH_FENCING: 1,
  MIRRORING: 2,
  PAUSING: 3,
  PAUSED: 4,
  STOPPING: 5,
  STOPPED: 6,
  FAILED: 7,
  // The absence of a state; never written as a transition target.
  UNKNOWN: -1
} as const satisfies Record<MirrorPartitionState, number>

export const LOG_TRUNCATION = "LOG_TRUNCATION" satisfies MirrorPartitionState
export const EPOCH_FENCING = "EPOCH_FENCING" satisfies MirrorPartitionState
export const MIRRORING = "MIRRORING" satisfies MirrorPartitionState
export const PAUSING = "PAUSING" satisfies MirrorPartitionState
export const PAUSED = "PAUSED" satisfies MirrorPartitionState
export const STOPPING = "STOPPING" satisfies MirrorPartitionState
export const STOPPED = "STOPPED" satisfies MirrorPartitionState
export const FAILED = "FAILED" satisfies MirrorPartitionState
export const UNKNOWN = "UNKNOWN" satisfies MirrorPartitionState

/** Every state, ordered by byte value (UNKNOWN last). */
export const all: ReadonlyArray<MirrorPartitionState> = [
  "LOG_TRUNCATION",
  "EPOCH_FENCING",
  "MIRRORING",
  "PAUSING",
  "PAUSED",
  "STOPPING",
  "STOPPED",
  "FAILED",
  "UNKNOWN"
]

const byByte: ReadonlyMap<number, MirrorPartitionState> = new Map(all.map((s) => [BYTES[s], s]))

/** The wire byte of a state. */
export const toByte = (state: MirrorPartitionState): number => BYTES[state]

/** The state of a wire byte; none for a byte no state uses. */
export const fromByte = (byte: number): Option.Option<MirrorPartitionState> => Option.fromNullable(byByte.get(byte))

/** The state's name as shown to operators (DescribeClusterMirrors `StateValue`). */
export const name = (state: MirrorPartitionState): string => state

/** The state of a name; none for an unknown name. */
export const fromName = (s: string): Option.Option<MirrorPartitionState> =>
  Option.fromNullable(all.find((state) => state === s))

/**
 * The states a transition to `target` may start from. `null` stands for a partition with no tracked
 * state at all. FAILED is reachable from anywhere and is handled separately.
 */
const ALLOWED_FROM: Readonly<
  Record<Exclude<MirrorPartitionState, "FAILED">, ReadonlyArray<MirrorPartitionState | null>>
> = {
  LOG_TRUNCATION: [null, "UNKNOWN", "STOPPED", "FAILED"],
  EPOCH_FENCING: ["MIRRORING"],
  MIRRORING: ["LOG_TRUNCATION", "EPOCH_FENCING", "PAUSED", "FAILED", "MIRRORING"],
  PAUSING: ["MIRRORING"],
  PAUSED: ["PAUSING"],
  STOPPING: ["LOG_TRUNCATION", "EPOCH_FENCING", "MIRRORING", "PAUSING", "PAUSED", "FAILED"],
  STOPPED: ["STOPPING"],
  UNKNOWN: []
}

/**
 * Whether a partition in `source` (null: untracked) may move to `target`. Staying in the same state
 * is always allowed (re-applying a state is how actions are retried); every state may fail.
 */
export const isValidTransition = (source: MirrorPartitionState | null, target: MirrorPartitionState): boolean => {
  if (source === target) return true
  if (target === "FAILED") return true
  return ALLOWED_FROM[target].includes(source)
}
