/**
 * The log cleaner's key → last offset map, in a fixed amount of memory (`log.cleaner.dedupe.buffer.size`),
 * as Kafka's: each slot holds a 16-byte MD5 of the key and the offset of its latest record (24 bytes), open
 * addressing with linear probing, filled to at most 90 % of its slots. Hash collisions between different
 * keys are as unlikely as in Kafka's map and resolved the same way (the later offset wins).
 */
import { createHash } from "node:crypto"

const HASH_BYTES = 16
/** Bytes per slot: the hash and an 8-byte offset. */
export const SLOT_BYTES = HASH_BYTES + 8
const LOAD_FACTOR = 0.9

export class OffsetMap {
  private readonly hashes: Buffer
  private readonly offsets: Float64Array
  private readonly used: Uint8Array
  readonly slots: number
  /** How many keys fit before the map counts as full. */
  readonly maxEntries: number
  private entries = 0
  /** The largest offset put since the last clear, -1 when none. */
  latestOffset = -1

  /** A map in at most `bytes` bytes (at least one slot). */
  constructor(bytes: number) {
    this.slots = Math.max(2, Math.floor(bytes / SLOT_BYTES))
    this.maxEntries = Math.max(1, Math.floor(this.slots * LOAD_FACTOR))
    this.hashes = Buffer.alloc(this.slots * HASH_BYTES)
    this.offsets = new Float64Array(this.slots)
    this.used = new Uint8Array(this.slots)
  }

  get size(): number {
    return this.entries
  }

  get isFull(): boolean {
    return this.entries >= this.maxEntries
  }

  clear(): void {
    this.used.fill(0)
    this.entries = 0
    this.latestOffset = -1
  }

  /** The slot holding `hash`, or the free slot where it would go. */
  private slotOf(hash: Buffer): number {
    let slot = hash.readUInt32BE(0) % this.slots
    for (;;) {
      if (this.used[slot] === 0) return slot
      if (this.hashes.compare(hash, 0, HASH_BYTES, slot * HASH_BYTES, (slot + 1) * HASH_BYTES) === 0) return slot
      slot = slot + 1 === this.slots ? 0 : slot + 1
    }
  }

  /** Whether `key` can be put: it is present, or the map is not full. */
  canPut(key: Uint8Array): boolean {
    if (!this.isFull) return true
    return this.used[this.slotOf(digest(key))] === 1
  }

  /** Records `offset` as the latest of `key`; the caller checks `canPut` first. */
  put(key: Uint8Array, offset: number): void {
    const hash = digest(key)
    const slot = this.slotOf(hash)
    if (this.used[slot] === 0) {
      if (this.isFull) throw new Error("offset map is full")
      this.used[slot] = 1
      hash.copy(this.hashes, slot * HASH_BYTES)
      this.entries++
    }
    this.offsets[slot] = offset
    if (offset > this.latestOffset) this.latestOffset = offset
  }

  /** The latest offset of `key`, -1 when absent. */
  get(key: Uint8Array): number {
    const slot = this.slotOf(digest(key))
    return this.used[slot] === 1 ? this.offsets[slot]! : -1
  }
}

const digest = (key: Uint8Array): Buffer => createHash("md5").update(key).digest()
