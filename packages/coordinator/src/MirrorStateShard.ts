/**
 * The coordinator shard of one `__mirror_state` partition (KIP-1279 §3.4, Kafka's `CoordinatorShard`):
 * the cache of every mirror partition whose key hashes to it (state value and last mirror epoch),
 * rebuilt only by replaying MirrorPartitionState and LastMirrorEpochs records, and the decide functions
 * of ReadMirrorStates (100), WriteMirrorStates (101) and mirror deletion.
 *
 * Decide functions are pure: they return the records to append and the response to send after commit
 * (`CoordinatorResult`) and never change the state; `replay` is the only mutation. Appending, waiting
 * for commit, loading the partition on leadership gain and dropping it on loss belong to the runtime.
 *
 * Fencing (our tagged fields on Read/WriteMirrorStates; -1 skips each check):
 * - LeaderEpoch is the writer's leader epoch of the data partition, compared with the leader epoch in
 *   the coordinator's metadata: older → FENCED_LEADER_EPOCH (a deposed leader), newer →
 *   UNKNOWN_LEADER_EPOCH (the coordinator's metadata is behind; retry).
 * - StateEpoch is the number of state records the writer last saw for the partition; any other value
 *   → FENCED_STATE_EPOCH: someone else persisted a transition since, re-read before writing.
 */
import {
  Errors,
  Hashing,
  MirrorPartitionState,
  MirrorStateRecords,
  type ReadMirrorStates,
  TopicPartitionMap,
  type WriteMirrorStates
} from "@clustermirror/protocol"
import { Either, Option } from "effect"
import * as CoordinatorResult from "./CoordinatorResult.js"
import * as MirrorStateMachine from "./MirrorStateMachine.js"

type Key = MirrorStateRecords.Key
type Value = MirrorStateMachine.MirrorStateValue

/** One cached mirror partition. */
export interface Entry {
  readonly key: Key
  readonly value: Value
}

export interface State {
  /** The `__mirror_state` partition this shard coordinates. */
  readonly partition: number
  /** `mirror.state.topic.num.partitions`: what keys hash over. */
  readonly numPartitions: number
  /** The leader epoch of the `__mirror_state` partition the shard was loaded under; -1: not leading. */
  readonly leaderEpoch: number
  /** Never mutated once a state is returned: replay copies it (once per call) and fills the copy. */
  readonly entries: Entries
}

/** A shard with nothing cached. With leader epoch -1 (leadership lost) it answers NOT_COORDINATOR. */
export const empty = (partition: number, numPartitions: number, leaderEpoch = -1): State => ({
  partition,
  numPartitions,
  leaderEpoch,
  entries: new TopicPartitionMap<Value>()
})

// The topic ID has a fixed length and the partition is decimal, so the string is unambiguous.
/** Entries by (mirror and topic id, partition): no key string per partition. */
type Entries = Pick<TopicPartitionMap<Value>, "get" | "entries" | "size" | "clone">

const topicOf = (key: Key): string => `${key.mirrorName}\u0000${key.topicId}`

/** Whether a mirror partition's records live in this shard's `__mirror_state` partition (KIP-1279 §3.6). */
export const owns = (state: State, key: Key): boolean =>
  Hashing.mirrorStatePartition(key.mirrorName, key.topicId, key.partition, state.numPartitions) === state.partition

/** The cached value of a mirror partition; `initial` (UNKNOWN, no LME) when nothing is stored. */
export const get = (state: State, key: Key): Value =>
  state.entries.get(topicOf(key), key.partition) ?? MirrorStateMachine.initial

/** Every cached partition, ordered by key (mirror name, topic ID, partition). */
export const entries = (state: State): ReadonlyArray<Entry> =>
  Array.from(state.entries.entries(), ([topic, partition, value]) => {
    // The inner key is "<mirror>\0<topic id>": a key object per partition is built only when listed.
    const cut = topic.lastIndexOf("\u0000")
    return { key: MirrorStateRecords.key(topic.slice(0, cut), topic.slice(cut + 1), partition), value }
  }).sort((a, b) => compareKeys(a.key, b.key))

const compareKeys = (a: Key, b: Key): number =>
  a.mirrorName < b.mirrorName
    ? -1
    : a.mirrorName > b.mirrorName
      ? 1
      : a.topicId < b.topicId
        ? -1
        : a.topicId > b.topicId
          ? 1
          : a.partition - b.partition

const isBlank = (v: Value): boolean =>
  v.state === "UNKNOWN" &&
  v.previousState === "UNKNOWN" &&
  v.retryAttempt === 0 &&
  v.errorMessage === null &&
  v.lastMirrorEpoch === -1

/** A state whose entries this module may still fill (a fresh copy, not yet returned). */
type Draft = State & { readonly entries: TopicPartitionMap<Value> }

const draftOf = (state: State): Draft => ({ ...state, entries: state.entries.clone() })

const put = (draft: Draft, key: Key, value: Value): void => {
  if (isBlank(value)) draft.entries.delete(topicOf(key), key.partition)
  else draft.entries.set(topicOf(key), key.partition, value)
}

/** Applies one record to a draft (see `replay`). */
const replayInto = (draft: Draft, record: MirrorStateRecords.MirrorStateRecord): void => {
  const key = record.key
  if (!owns(draft, key))
    throw new Error(
      `${record.type} record for ${key.mirrorName}:${key.topicId}:${key.partition} does not belong to __mirror_state partition ${draft.partition}`
    )
  const current = get(draft, key)
  switch (record.type) {
    case "LastMirrorEpochs":
      return put(draft, key, { ...current, lastMirrorEpoch: record.value === null ? -1 : record.value.lastMirrorEpoch })
    case "MirrorPartitionState": {
      if (record.value === null)
        return put(draft, key, {
          ...MirrorStateMachine.initial,
          lastMirrorEpoch: current.lastMirrorEpoch,
          stateEpoch: current.stateEpoch
        })
      const v = record.value
      const next = MirrorPartitionState.fromByte(v.state)
      if (Option.isNone(next))
        throw new Error(
          `MirrorPartitionState record for ${key.mirrorName}:${key.topicId}:${key.partition} has unknown state ${v.state}`
        )
      return put(draft, key, {
        state: next.value,
        // The prototype's schema default (16) is no state: it means "none", like -1.
        previousState: Option.getOrElse(MirrorPartitionState.fromByte(v.previousState), () => "UNKNOWN" as const),
        retryAttempt: v.retryAttempt,
        errorMessage: v.errorMessage,
        lastMirrorEpoch: current.lastMirrorEpoch,
        stateEpoch: current.stateEpoch + 1
      })
    }
  }
}

/**
 * Applies one `__mirror_state` record. A state record replaces the state and failure info and adds one
 * to the state epoch; an LME record sets the last mirror epoch; tombstones clear what their type holds,
 * and a partition with nothing left is dropped. Dies on a key that hashes to another partition or an
 * unknown state byte: either means the log is not what this shard thinks it is.
 */
export const replay = (state: State, record: MirrorStateRecords.MirrorStateRecord): State => {
  const draft = draftOf(state)
  replayInto(draft, record)
  return draft
}

/** Replays records in log order (one copy of the entries for the whole sequence). */
export const replayAll = (state: State, records: Iterable<MirrorStateRecords.MirrorStateRecord>): State => {
  const draft = draftOf(state)
  for (const record of records) replayInto(draft, record)
  return draft
}

/** Leadership gained: the shard rebuilt from its `__mirror_state` partition, read from the start. */
export const loadFrom = (
  partition: number,
  numPartitions: number,
  leaderEpoch: number,
  records: Iterable<MirrorStateRecords.MirrorStateRecord>
): State => replayAll(empty(partition, numPartitions, leaderEpoch), records)

/** What the coordinator needs from its broker's metadata image. */
export interface Context {
  /** The topic ID of a topic name; undefined when the topic is unknown. */
  readonly topicId: (name: string) => string | undefined
  /** The current leader epoch of a data partition; undefined when the partition is unknown. */
  readonly leaderEpoch: (topicId: string, partition: number) => number | undefined
}

/** The failure info a writer computed: set by local writers, or carried by WriteMirrorStates' tagged fields. */
export interface FailureInfo {
  readonly previousState: MirrorPartitionState.MirrorPartitionState
  readonly retryAttempt: number
  readonly errorMessage: string | null
}

type WireFailureFields = "previousState" | "retryAttempt" | "errorMessage"
type WirePartition = Omit<WriteMirrorStates.Request["topics"][number]["partitions"][number], WireFailureFields> & {
  readonly [K in WireFailureFields]?: WriteMirrorStates.Request["topics"][number]["partitions"][number][K] | undefined
}

/** A WriteMirrorStates partition, optionally with the failure info of a local writer. */
export type WritePartition = WirePartition & { readonly failure?: FailureInfo }

/** WriteMirrorStates as decoded from the wire, or built by a local writer with failure info. */
export interface WriteRequest {
  readonly mirrorName: string
  readonly topics: ReadonlyArray<{ readonly name: string; readonly partitions: ReadonlyArray<WritePartition> }>
  readonly stoppedTopics: ReadonlyArray<string>
}

interface Refusal {
  readonly errorCode: number
  readonly errorMessage: string
}

const refusal = (errorCode: number, errorMessage: string): Refusal => ({ errorCode, errorMessage })

/** Resolves and routes one requested partition: its key, or why this shard does not answer for it. */
const route = (
  state: State,
  ctx: Context,
  mirrorName: string,
  topicName: string,
  partition: number,
  leaderEpoch: number
): { readonly key: Key } | Refusal => {
  const topicId = ctx.topicId(topicName)
  if (topicId === undefined) return refusal(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Unknown topic ${topicName}`)
  const current = ctx.leaderEpoch(topicId, partition)
  if (current === undefined)
    return refusal(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Unknown partition ${topicName}-${partition}`)
  const key = MirrorStateRecords.key(mirrorName, topicId, partition)
  if (state.leaderEpoch < 0 || !owns(state, key))
    return refusal(
      Errors.ErrorCode.NOT_COORDINATOR,
      `This broker does not coordinate the mirror state of ${mirrorName}:${topicName}-${partition}`
    )
  if (leaderEpoch !== -1 && leaderEpoch < current)
    return refusal(
      Errors.ErrorCode.FENCED_LEADER_EPOCH,
      `Leader epoch ${leaderEpoch} of ${topicName}-${partition} is older than the current leader epoch ${current}`
    )
  if (leaderEpoch !== -1 && leaderEpoch > current)
    return refusal(
      Errors.ErrorCode.UNKNOWN_LEADER_EPOCH,
      `Leader epoch ${leaderEpoch} of ${topicName}-${partition} is newer than the coordinator's ${current}`
    )
  return { key }
}

/**
 * The value a state write stores. A local writer's failure info is stored as given; a FAILED arriving
 * over the wire (which has no reason fields) counts as one more failure of the current state, or keeps
 * the failure info when the partition is already FAILED; other targets follow the state machine.
 */
const stateWrite = (
  current: Value,
  target: MirrorPartitionState.MirrorPartitionState,
  failure: FailureInfo | undefined
): Value | Refusal => {
  if (!MirrorPartitionState.isValidTransition(current.state, target) || target === "UNKNOWN")
    return refusal(
      Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES,
      `Invalid mirror partition state transition from ${current.state} to ${target}`
    )
  if (failure !== undefined) return { ...current, ...failure, state: target, stateEpoch: current.stateEpoch + 1 }
  // A write of the current (non-FAILED) state without failure info over the wire: the partition works
  // again and its failure count starts over (the reset a local writer sends as cleared failure info).
  if (target === current.state && target !== "FAILED")
    return {
      ...current,
      previousState: "UNKNOWN",
      retryAttempt: 0,
      errorMessage: null,
      stateEpoch: current.stateEpoch + 1
    }
  if (target === "FAILED") {
    if (current.state === "FAILED") return { ...current, stateEpoch: current.stateEpoch + 1 }
    const retryAttempt =
      current.retryAttempt === MirrorStateMachine.NON_RETRYABLE
        ? MirrorStateMachine.NON_RETRYABLE
        : Math.max(current.retryAttempt, 0) + 1
    return {
      ...current,
      state: "FAILED",
      previousState: current.state,
      retryAttempt,
      stateEpoch: current.stateEpoch + 1
    }
  }
  const next = MirrorStateMachine.transition(current, target, "WriteMirrorStates")
  return Either.isRight(next) ? next.right : refusal(Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES, next.left.message)
}

const isRefusal = (x: object): x is Refusal => "errorCode" in x

/** The failure info a wire request carries in its tagged fields; undefined when they are all absent. */
const wireFailure = (p: WirePartition): FailureInfo | undefined => {
  const previousState = p.previousState ?? -1
  const retryAttempt = p.retryAttempt ?? 0
  const errorMessage = p.errorMessage ?? null
  if (previousState === -1 && retryAttempt === 0 && errorMessage === null) return undefined
  return {
    previousState: Option.getOrElse(MirrorPartitionState.fromByte(previousState), () => "UNKNOWN" as const),
    retryAttempt,
    errorMessage
  }
}

/**
 * WriteMirrorStates (101). Per partition, after routing and fencing: an LastMirrorEpochs record when
 * LastMirrorEpoch ≠ -1, then a MirrorPartitionState record when State ≠ UNKNOWN (so a reader of the
 * new state also sees its LME). A refused partition writes nothing; the others still do. Each answer
 * carries the partition's state epoch after the write.
 */
export const writeMirrorStates = (
  state: State,
  request: WriteRequest,
  ctx: Context
): CoordinatorResult.CoordinatorResult<WriteMirrorStates.Response> => {
  const records: Array<MirrorStateRecords.MirrorStateRecord> = []
  // One copy of the entries for the whole request: each partition's records go into it before the next
  // partition is decided, so later partitions see earlier ones.
  const candidate = draftOf(state)
  const topics = request.topics.map((topic) => ({
    name: topic.name,
    partitions: topic.partitions.map((p) => {
      const answer = (r: Refusal) => ({ partitionIndex: p.partitionIndex, ...r, stateEpoch: -1 })
      const routed = route(candidate, ctx, request.mirrorName, topic.name, p.partitionIndex, p.leaderEpoch)
      if (isRefusal(routed)) return answer(routed)
      const { key } = routed
      const current = get(candidate, key)
      if (p.stateEpoch !== -1 && p.stateEpoch !== current.stateEpoch)
        return answer(
          refusal(
            Errors.ErrorCode.FENCED_STATE_EPOCH,
            `State epoch ${p.stateEpoch} of ${request.mirrorName}:${topic.name}-${p.partitionIndex} is stale: the coordinator is at ${current.stateEpoch}; read the state again`
          )
        )
      if (p.lastMirrorEpoch < -1)
        return answer(refusal(Errors.ErrorCode.INVALID_REQUEST, `Invalid last mirror epoch ${p.lastMirrorEpoch}`))
      const partitionRecords: Array<MirrorStateRecords.MirrorStateRecord> = []
      if (p.lastMirrorEpoch !== -1) partitionRecords.push(MirrorStateRecords.lastMirrorEpochs(key, p.lastMirrorEpoch))
      if (p.state !== MirrorPartitionState.toByte("UNKNOWN")) {
        const target = MirrorPartitionState.fromByte(p.state)
        if (Option.isNone(target))
          return answer(refusal(Errors.ErrorCode.INVALID_REQUEST, `Unknown mirror partition state ${p.state}`))
        const next = stateWrite(current, target.value, p.failure ?? wireFailure(p))
        if (isRefusal(next)) return answer(next)
        partitionRecords.push(
          MirrorStateRecords.mirrorPartitionState(key, next.state, {
            previousState: next.previousState,
            retryAttempt: next.retryAttempt,
            errorMessage: next.errorMessage
          })
        )
      }
      for (const r of partitionRecords) replayInto(candidate, r)
      records.push(...partitionRecords)
      return {
        partitionIndex: p.partitionIndex,
        errorCode: Errors.ErrorCode.NONE,
        errorMessage: null,
        stateEpoch: get(candidate, key).stateEpoch
      }
    })
  }))
  return CoordinatorResult.of(records, {
    throttleTimeMs: 0,
    errorCode: Errors.ErrorCode.NONE,
    errorMessage: null,
    topics
  })
}

/**
 * ReadMirrorStates (100): the cached state, LME, failure info and state epoch of each partition; a
 * partition with nothing stored reads as UNKNOWN, LME -1, PreviousState -1. Partitions this shard does
 * not coordinate answer NOT_COORDINATOR with their index filled. The request's StateEpoch is not a
 * condition for reading; its LeaderEpoch fences like a write.
 */
export const readMirrorStates = (
  state: State,
  request: ReadMirrorStates.Request,
  ctx: Context
): ReadMirrorStates.Response => ({
  throttleTimeMs: 0,
  errorCode: Errors.ErrorCode.NONE,
  errorMessage: null,
  topics: request.topics.map((topic) => ({
    name: topic.name,
    partitions: topic.partitions.map((p) => {
      const routed = route(state, ctx, request.mirrorName, topic.name, p.partitionIndex, p.leaderEpoch)
      if (isRefusal(routed))
        return {
          partitionIndex: p.partitionIndex,
          lastMirrorEpoch: -1,
          state: MirrorPartitionState.toByte("UNKNOWN"),
          errorCode: routed.errorCode,
          previousState: MirrorPartitionState.toByte("UNKNOWN"),
          retryAttempt: 0,
          errorMessage: routed.errorMessage,
          stateEpoch: -1
        }
      const v = get(state, routed.key)
      return {
        partitionIndex: p.partitionIndex,
        lastMirrorEpoch: v.lastMirrorEpoch,
        state: MirrorPartitionState.toByte(v.state),
        errorCode: Errors.ErrorCode.NONE,
        previousState: MirrorPartitionState.toByte(v.previousState),
        retryAttempt: v.retryAttempt,
        errorMessage: v.errorMessage,
        stateEpoch: v.stateEpoch
      }
    })
  }))
})

/**
 * A mirror's config is gone (§3.4, §5.7): tombstones of both record types for every partition of the
 * mirror this shard holds, in key order. The response lists the keys deleted. Nothing to delete, no
 * records.
 */
export const deleteMirror = (
  state: State,
  mirrorName: string
): CoordinatorResult.CoordinatorResult<ReadonlyArray<Key>> => {
  const keys = entries(state)
    .filter((e) => e.key.mirrorName === mirrorName)
    .map((e) => e.key)
  return CoordinatorResult.of(keys.flatMap(MirrorStateRecords.tombstones), keys)
}
