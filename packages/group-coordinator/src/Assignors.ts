/**
 * The server-side assignors of consumer groups (KIP-848), pure functions from the members'
 * subscriptions and the subscribed topics' partition counts to a target assignment:
 *
 * - `uniform`: every subscribed partition to exactly one member subscribed to its topic, balanced by
 *   partition count (with the same subscriptions the counts differ by at most one) and sticky: a member
 *   keeps what it had in the previous target as long as that keeps the balance.
 * - `range`: per topic, the members subscribed to it in member id order each get a contiguous range;
 *   the first `partitions % members` get one more.
 *
 * They know nothing of epochs, records or time.
 */

/** Partitions per topic id, each list sorted. */
export type Assignment = ReadonlyMap<string, ReadonlyArray<number>>

export interface AssignmentMember {
  readonly memberId: string
  /** The topic ids the member subscribes to that exist. */
  readonly subscribedTopicIds: ReadonlySet<string>
  /** Its assignment in the previous target (for stickiness). */
  readonly previous: Assignment
}

export interface AssignmentSpec {
  readonly members: ReadonlyArray<AssignmentMember>
  /** Partition count of each subscribed topic, by topic id. */
  readonly partitions: ReadonlyMap<string, number>
}

export type Assignor = (spec: AssignmentSpec) => ReadonlyMap<string, Assignment>

export const NAMES = ["uniform", "range"] as const
export type Name = (typeof NAMES)[number]

const key = (topicId: string, partition: number) => `${topicId}:${partition}`

const toAssignment = (keys: Iterable<readonly [string, number]>): Assignment => {
  const m = new Map<string, Array<number>>()
  for (const [t, p] of keys) {
    const list = m.get(t) ?? []
    list.push(p)
    m.set(t, list)
  }
  for (const list of m.values()) list.sort((a, b) => a - b)
  return m
}

const byId = (a: AssignmentMember, b: AssignmentMember) =>
  a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0

export const range: Assignor = (spec) => {
  const out = new Map<string, Array<readonly [string, number]>>(spec.members.map((m) => [m.memberId, []]))
  const members = [...spec.members].sort(byId)
  for (const topicId of [...spec.partitions.keys()].sort()) {
    const count = spec.partitions.get(topicId)!
    const subscribed = members.filter((m) => m.subscribedTopicIds.has(topicId))
    if (subscribed.length === 0) continue
    const base = Math.floor(count / subscribed.length)
    const extra = count % subscribed.length
    let next = 0
    subscribed.forEach((m, i) => {
      const n = base + (i < extra ? 1 : 0)
      for (let p = next; p < next + n; p++) out.get(m.memberId)!.push([topicId, p])
      next += n
    })
  }
  return new Map([...out].map(([id, keys]) => [id, toAssignment(keys)]))
}

export const uniform: Assignor = (spec) => {
  const members = [...spec.members].sort(byId)
  const owner = new Map<string, string>()
  const owned = new Map<string, Set<string>>(members.map((m) => [m.memberId, new Set()]))
  const eligible = new Map<string, ReadonlyArray<AssignmentMember>>()
  const all: Array<readonly [string, number]> = []
  for (const topicId of [...spec.partitions.keys()].sort()) {
    const subscribed = members.filter((m) => m.subscribedTopicIds.has(topicId))
    eligible.set(topicId, subscribed)
    if (subscribed.length === 0) continue
    for (let p = 0; p < spec.partitions.get(topicId)!; p++) all.push([topicId, p])
  }
  const give = (k: string, memberId: string) => {
    const prev = owner.get(k)
    if (prev !== undefined) owned.get(prev)!.delete(k)
    owner.set(k, memberId)
    owned.get(memberId)!.add(k)
  }
  const load = (memberId: string) => owned.get(memberId)!.size
  const least = (candidates: ReadonlyArray<AssignmentMember>) => {
    let best = candidates[0]!
    for (const c of candidates) if (load(c.memberId) < load(best.memberId)) best = c
    return best
  }
  // Stickiness: previous owners keep what they still subscribe to.
  const valid = new Set(all.map(([t, p]) => key(t, p)))
  for (const m of members)
    for (const [t, ps] of m.previous)
      if (m.subscribedTopicIds.has(t))
        for (const p of ps) {
          const k = key(t, p)
          if (valid.has(k) && !owner.has(k)) give(k, m.memberId)
        }
  for (const [t, p] of all) if (!owner.has(key(t, p))) give(key(t, p), least(eligible.get(t)!).memberId)
  // Balance: move a partition from a member with at least two more than another eligible member, until
  // none can move; each move lowers the sum of squared loads, so this ends.
  let moved = true
  while (moved) {
    moved = false
    for (const [t, p] of all) {
      const k = key(t, p)
      const from = owner.get(k)!
      const to = least(eligible.get(t)!)
      if (load(from) > load(to.memberId) + 1) {
        give(k, to.memberId)
        moved = true
      }
    }
  }
  return new Map(
    members.map((m) => [
      m.memberId,
      toAssignment(
        [...owned.get(m.memberId)!].map((k) => {
          const i = k.lastIndexOf(":")
          return [k.slice(0, i), Number(k.slice(i + 1))] as const
        })
      )
    ])
  )
}

export const byName = (name: string): Assignor | undefined =>
  name === "uniform" ? uniform : name === "range" ? range : undefined
