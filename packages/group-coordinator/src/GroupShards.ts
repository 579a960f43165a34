/**
 * The group coordinators of one broker: one per `__consumer_offsets` partition it leads, loaded by
 * replaying that partition for the leader epoch it leads it in, reloaded when that epoch changes (a
 * bounce A→B→A seen in one metadata delta arrives as a new epoch: the shard is reloaded from the log,
 * so A sees what B committed) and closed when leadership leaves. Soft state (parked joins and syncs,
 * timers) lives in the shard's coordinator and goes with it.
 */
import { Hashing } from "@clustermirror/protocol"
import type { Runtime } from "effect"
import * as GroupCoordinator from "./GroupCoordinator.js"

export interface Options {
  /** The log of one `__consumer_offsets` partition. */
  readonly logFor: (partition: number) => GroupCoordinator.GroupLog
  /** The number of `__consumer_offsets` partitions (1 while the topic does not exist). */
  readonly partitionCount: () => number
  readonly config?: () => Partial<GroupCoordinator.GroupCoordinatorConfig>
  /** The Effect runtime whose `Clock` the coordinators run their timers on. */
  readonly runtime?: Runtime.Runtime<never>
  readonly randomUuid?: () => string
}

interface Shard {
  readonly leaderEpoch: number
  readonly coordinator: Promise<GroupCoordinator.GroupCoordinator>
}

export class GroupShards {
  private readonly shards = new Map<number, Shard>()
  constructor(private readonly options: Options) {}

  /**
   * Called with every partition of `__consumer_offsets`, whether this broker now leads it and the
   * partition's leader epoch. Leading in a new epoch reloads the shard from the log.
   */
  onLeadership(partition: number, leader: boolean, leaderEpoch: number): void {
    const current = this.shards.get(partition)
    if (leader && current !== undefined && current.leaderEpoch === leaderEpoch) return
    if (current !== undefined) {
      this.shards.delete(partition)
      void current.coordinator.then(
        (g) => g.close(),
        () => undefined
      )
    }
    if (!leader) return
    const coordinator = GroupCoordinator.make({
      log: this.options.logFor(partition),
      config: this.options.config?.() ?? {},
      ...(this.options.runtime === undefined ? {} : { runtime: this.options.runtime }),
      ...(this.options.randomUuid === undefined ? {} : { randomUuid: this.options.randomUuid })
    })
    // A load that fails leaves the partition without a coordinator: requests get NOT_COORDINATOR.
    coordinator.catch(() => {
      if (this.shards.get(partition)?.coordinator === coordinator) this.shards.delete(partition)
    })
    this.shards.set(partition, { leaderEpoch, coordinator })
  }

  /** The leader epoch the shard of a partition was loaded for, if this broker leads it. */
  leaderEpochOf(partition: number): number | undefined {
    return this.shards.get(partition)?.leaderEpoch
  }

  partitionFor(groupId: string): number {
    return Hashing.groupCoordinatorPartition(groupId, Math.max(1, this.options.partitionCount()))
  }

  forGroup(groupId: string): Promise<GroupCoordinator.GroupCoordinator> | undefined {
    return this.shards.get(this.partitionFor(groupId))?.coordinator
  }

  async all(): Promise<GroupCoordinator.GroupCoordinator[]> {
    const loaded = await Promise.allSettled([...this.shards.values()].map((s) => s.coordinator))
    return loaded.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))
  }

  async close(): Promise<void> {
    const all = await this.all()
    this.shards.clear()
    await Promise.all(all.map((g) => g.close()))
  }
}
