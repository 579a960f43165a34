/**
 * A map keyed by (topic, partition) without a key string per entry: one inner map per topic, keyed by the
 * partition number. Brokers keep several of these for thousands of partitions (mirror states, fetch
 * states, in-flight requests), where a `"<topic>\0<partition>"` string per entry and per map costs more
 * than the value it points to. Pure data structure; iteration is in insertion order per topic.
 */
export class TopicPartitionMap<V> {
  private readonly topics = new Map<string, Map<number, V>>()
  private count = 0

  get size(): number {
    return this.count
  }

  get(topic: string, partition: number): V | undefined {
    return this.topics.get(topic)?.get(partition)
  }

  has(topic: string, partition: number): boolean {
    return this.topics.get(topic)?.has(partition) ?? false
  }

  set(topic: string, partition: number, value: V): this {
    let inner = this.topics.get(topic)
    if (inner === undefined) this.topics.set(topic, (inner = new Map()))
    if (!inner.has(partition)) this.count++
    inner.set(partition, value)
    return this
  }

  delete(topic: string, partition: number): boolean {
    const inner = this.topics.get(topic)
    if (inner === undefined || !inner.delete(partition)) return false
    this.count--
    if (inner.size === 0) this.topics.delete(topic)
    return true
  }

  /** A copy whose changes do not touch this map (values are shared). */
  clone(): TopicPartitionMap<V> {
    const copy = new TopicPartitionMap<V>()
    for (const [topic, inner] of this.topics) copy.topics.set(topic, new Map(inner))
    copy.count = this.count
    return copy
  }

  clear(): void {
    this.topics.clear()
    this.count = 0
  }

  *values(): IterableIterator<V> {
    for (const inner of this.topics.values()) yield* inner.values()
  }

  *entries(): IterableIterator<readonly [string, number, V]> {
    for (const [topic, inner] of this.topics) for (const [partition, v] of inner) yield [topic, partition, v]
  }
}
