/**
 * A broker's producer ids (Kafka's `ProducerIdManager`): it hands them out one by one, to idempotent
 * producers and to the transaction coordinator, from blocks the controller allocates (AllocateProducerIds),
 * and never one below the producer id floor of its metadata image: a KIP-1279 failover raises the floor
 * above the ids its stopped partitions saw mirrored, and a block held from before is dropped for a new one.
 * It does no I/O itself: the block comes through `allocateBlock`, the floor through `floor`.
 */

/** A block of producer ids, `[firstProducerId, firstProducerId + size)`. */
export interface Block {
  readonly firstProducerId: bigint
  readonly size: bigint
}

export interface Options {
  /** AllocateProducerIds through the controller channel; rejects with the controller's error. */
  readonly allocateBlock: () => Promise<Block>
  /** The producer id floor of this broker's metadata image (-1 when none): no id below it goes out. */
  readonly floor: () => bigint
}

export class ProducerIdManager {
  private next = 0n
  private end = 0n
  private refill: Promise<void> | undefined
  constructor(private readonly options: Options) {}

  /**
   * InitProducerId of an idempotent producer (no transactional id): one re-initialising with its id keeps
   * it with the next epoch (KIP-360); any other gets the next id at epoch 0.
   */
  async initIdempotent(
    producerId: bigint,
    producerEpoch: number
  ): Promise<{ readonly producerId: bigint; readonly producerEpoch: number }> {
    if (producerId >= 0n && producerEpoch >= 0 && producerEpoch < 32767)
      return { producerId, producerEpoch: producerEpoch + 1 }
    return { producerId: await this.allocate(), producerEpoch: 0 }
  }

  /** The next producer id: at or above the floor, from the current block or a new one. */
  async allocate(): Promise<bigint> {
    for (;;) {
      const floor = this.options.floor()
      // Ids of the block below the floor may be in use by producers of another cluster whose batches
      // were mirrored here: they are skipped, and a block wholly below is given up.
      if (this.next < floor) this.next = floor
      if (this.next < this.end) return this.next++
      this.refill ??= this.options.allocateBlock().then(
        (block) => {
          this.next = block.firstProducerId
          this.end = block.firstProducerId + block.size
          this.refill = undefined
        },
        (e) => {
          this.refill = undefined
          throw e
        }
      )
      await this.refill
    }
  }
}
