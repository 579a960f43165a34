/**
 * The committed (hard) state of the classic group coordinator: the last persisted metadata of each
 * group and its committed offsets, exactly what replaying `__consumer_offsets` yields. `replay` is the
 * only way it changes, for live writes and startup alike. It holds no membership, timers or requests:
 * those live in the coordinator runtime.
 */
import type { GroupRecords } from "@clustermirror/protocol"
import { HashMap, Option } from "effect"

export interface CommittedOffset {
  readonly topic: string
  readonly partition: number
  readonly offset: bigint
  readonly leaderEpoch: number
  readonly metadata: string
  readonly commitTimestamp: bigint
}

export interface State {
  /** The last persisted metadata of each group that has one. */
  readonly groups: HashMap.HashMap<string, GroupRecords.GroupMetadataValue>
  /** Committed offsets per group, keyed by `partitionKey`. */
  readonly offsets: HashMap.HashMap<string, HashMap.HashMap<string, CommittedOffset>>
}

export const empty: State = { groups: HashMap.empty(), offsets: HashMap.empty() }

/** Topic names cannot contain a NUL, so this key is unambiguous. */
export const partitionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`

export const replay = (state: State, record: GroupRecords.GroupRecord): State => {
  switch (record.type) {
    case "OffsetCommit": {
      const { group, topic, partition } = record.key
      const current = Option.getOrElse(HashMap.get(state.offsets, group), () =>
        HashMap.empty<string, CommittedOffset>()
      )
      const key = partitionKey(topic, partition)
      const value = record.value?.data
      const next =
        value === undefined
          ? HashMap.remove(current, key)
          : HashMap.set(current, key, {
              topic,
              partition,
              offset: value.offset,
              leaderEpoch: value.leaderEpoch,
              metadata: value.metadata,
              commitTimestamp: value.commitTimestamp
            })
      return {
        ...state,
        offsets: HashMap.isEmpty(next) ? HashMap.remove(state.offsets, group) : HashMap.set(state.offsets, group, next)
      }
    }
    case "GroupMetadata": {
      const group = record.key.group
      if (record.value === null) return { ...state, groups: HashMap.remove(state.groups, group) }
      const value = record.value.data
      const previous = HashMap.get(state.groups, group)
      if (Option.isSome(previous) && value.generation < previous.value.generation)
        throw new Error(`group ${group}: generation went back from ${previous.value.generation} to ${value.generation}`)
      return { ...state, groups: HashMap.set(state.groups, group, value) }
    }
    default:
      return absurd(record)
  }
}

const absurd = (record: never): never => {
  throw new Error(`unknown group record ${JSON.stringify(record)}`)
}

/** The committed offsets of a group (empty when it has none). */
export const offsetsOf = (state: State, groupId: string): ReadonlyArray<CommittedOffset> =>
  Option.match(HashMap.get(state.offsets, groupId), {
    onNone: () => [],
    onSome: (m) => Array.from(HashMap.values(m))
  })

export const offsetOf = (
  state: State,
  groupId: string,
  topic: string,
  partition: number
): CommittedOffset | undefined =>
  Option.getOrUndefined(
    Option.flatMap(HashMap.get(state.offsets, groupId), (m) => HashMap.get(m, partitionKey(topic, partition)))
  )

/** Every group id the committed state knows (with metadata, offsets or both). */
export const groupIds = (state: State): ReadonlyArray<string> => {
  const ids = new Set<string>(HashMap.keys(state.groups))
  for (const id of HashMap.keys(state.offsets)) ids.add(id)
  return Array.from(ids)
}
