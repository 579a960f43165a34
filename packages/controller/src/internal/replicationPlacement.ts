/**
 * Replica placement and topic-name rules for the replication control: where the replicas of new
 * partitions go (rack-unaware round robin with a start offset, as Kafka's classic assignment does),
 * and which topic names Kafka accepts. Pure functions over plain values; no state, no records.
 */
import { Hashing } from "@clustermirror/protocol"
import { validateTopicName } from "./topicName.js"

/** Why a topic name is illegal, in Kafka's words, or null when it is legal. */
export const topicNameError = validateTopicName

/**
 * Metric names cannot tell '.' from '_', so Kafka refuses a topic whose name differs from an existing
 * one only in those characters. The key under which such names collide; null for names without them.
 */
export const collisionKey = (name: string): string | null =>
  name.includes(".") || name.includes("_") ? name.replaceAll(".", "_") : null

/** Why placement failed, with Kafka's message (without the "Unable to replicate" prefix). */
export interface PlacementFailure {
  readonly _tag: "PlacementFailure"
  readonly message: string
}

/**
 * Replica lists for `count` partitions numbered from `startPartition`, each `replicationFactor` long,
 * over the usable brokers. The first replica walks the brokers round robin from a start offset; the
 * followers are shifted by an amount that changes every full turn, so that follower sets spread as
 * well as leaders do. `seed` picks the start offset and the first shift: callers pass something
 * stable (the topic name's hash) so that a decision is a function of its inputs.
 */
export const place = (
  usableBrokers: ReadonlyArray<number>,
  startPartition: number,
  count: number,
  replicationFactor: number,
  seed: number
): ReadonlyArray<ReadonlyArray<number>> | PlacementFailure => {
  const brokers = [...new Set(usableBrokers)].sort((a, b) => a - b)
  const n = brokers.length
  if (n === 0) return { _tag: "PlacementFailure", message: "All brokers are currently fenced." }
  if (replicationFactor > n)
    return {
      _tag: "PlacementFailure",
      message: `The target replication factor of ${replicationFactor} cannot be reached because only ${n} broker(s) are registered.`
    }
  const start = Hashing.toPositive(seed) % n
  const firstShift = Hashing.toPositive(Hashing.javaStringHashCode(String(seed))) % n
  const out: Array<ReadonlyArray<number>> = []
  for (let i = 0; i < count; i++) {
    const p = startPartition + i
    const shift = firstShift + Math.floor(p / n)
    const first = (p + start) % n
    const replicas = [brokers[first]!]
    for (let j = 0; j < replicationFactor - 1; j++) {
      // Followers skip the first replica's slot: offsets 1..n-1 from it, never 0.
      const offset = 1 + ((shift + j) % (n - 1))
      replicas.push(brokers[(first + offset) % n]!)
    }
    out.push(replicas)
  }
  return out
}

export const isPlacementFailure = (p: ReadonlyArray<ReadonlyArray<number>> | PlacementFailure): p is PlacementFailure =>
  "_tag" in p
