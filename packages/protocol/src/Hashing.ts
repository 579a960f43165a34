/**
 * The hash functions Kafka clients and brokers agree on: Java's `String.hashCode`, Kafka's
 * `Utils.abs` and `Utils.toPositive`, murmur2 (the default partitioner), and the coordinator
 * partition choices built on them (`__consumer_offsets` for groups, `__mirror_state` for mirrors).
 * All results are 32-bit signed integers exactly as the JVM computes them. Pure functions only.
 */
const utf8 = new TextEncoder()

/** Java's `String.hashCode`: h = 31·h + c over UTF-16 code units, wrapping at 32 bits. */
export const javaStringHashCode = (s: string): number => {
  let h = 0
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0
  return h
}

/** Kafka's `Utils.abs`: the absolute value, except that `Integer.MIN_VALUE` (which has none) is 0. */
export const kafkaAbs = (n: number): number => (n === -2147483648 ? 0 : Math.abs(n | 0))

/** Kafka's `Utils.toPositive`: clears the sign bit (so negative values do not map to their absolute value). */
export const toPositive = (n: number): number => n & 0x7fffffff

const M = 0x5bd1e995
const SEED = 0x9747b28c

/** Kafka's `Utils.murmur2` (MurmurHash2, seed 0x9747b28c) as a signed 32-bit integer. */
export const murmur2 = (data: Uint8Array): number => {
  const length = data.length
  let h = (SEED ^ length) | 0
  const whole = length & ~3
  for (let i = 0; i < whole; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)
    k = Math.imul(k, M)
    k ^= k >>> 24
    k = Math.imul(k, M)
    h = Math.imul(h, M) ^ k
  }
  // The last 1-3 bytes, highest first, then one more mixing step, as in the reference.
  const tail = length & 3
  if (tail > 0) {
    if (tail === 3) h ^= data[whole + 2]! << 16
    if (tail >= 2) h ^= data[whole + 1]! << 8
    h ^= data[whole]!
    h = Math.imul(h, M)
  }
  h ^= h >>> 13
  h = Math.imul(h, M)
  h ^= h >>> 15
  return h | 0
}

/** The default partitioner's choice for a keyed record: `toPositive(murmur2(key)) % numPartitions`. */
export const partitionForKey = (key: Uint8Array, numPartitions: number): number =>
  toPositive(murmur2(key)) % numPartitions

/** The `__consumer_offsets` partition coordinating a group: `abs(groupId.hashCode) % n`. */
export const groupCoordinatorPartition = (groupId: string, numPartitions: number): number =>
  kafkaAbs(javaStringHashCode(groupId)) % numPartitions

/**
 * The `__mirror_state` partition holding one mirror partition's state and last mirror epoch: the hash
 * of `"<mirrorName>:<topicId>:<partition>"`, with the topic ID in Kafka's 22-character base64 form.
 */
export const mirrorStatePartition = (
  mirrorName: string,
  topicId: string,
  partition: number,
  numPartitions: number
): number => kafkaAbs(javaStringHashCode(`${mirrorName}:${topicId}:${partition}`)) % numPartitions

/** The `__mirror_state` partition whose leader runs a mirror's mirror-level work (topic creation, syncs). */
export const mirrorCoordinatorPartition = (mirrorName: string, numPartitions: number): number =>
  kafkaAbs(javaStringHashCode(mirrorName)) % numPartitions

/** murmur2 of a string's UTF-8 bytes (how Java clients hash string keys). */
export const murmur2String = (s: string): number => murmur2(utf8.encode(s))
