/**
 * Replication quotas (KIP-73): a bytes-per-second cap on the replication traffic of throttled replicas,
 * one quota per direction on each broker. The leader quota counts what a leader sends to followers of its
 * throttled partitions (`leader.replication.throttled.rate`, `leader.replication.throttled.replicas`), the
 * follower quota what a follower receives for its throttled partitions (`follower.replication.throttled.rate`,
 * `follower.replication.throttled.replicas`), and the mirror quota what a KIP-1279 mirror leader receives
 * from the source cluster (`mirror.replication.throttled.rate`, `mirror.replication.throttled.replicas`).
 *
 * The rate is Kafka's windowed measure: `replication.quota.window.num` samples of
 * `replication.quota.window.size.seconds` each; a sample starts with the first bytes recorded after the
 * previous one is complete, and a sample older than all the windows together no longer counts. The rate is
 * the retained bytes over the time since the oldest retained sample started, but never over less than one
 * window (so the first bytes do not read as an unbounded rate). The quota is exceeded when that rate is
 * above the bound. Only the functions on `WindowedRate` and `ThrottledReplicas` decide; `ReplicationQuota`
 * holds the samples and reads the clock and the configs it is given. Who is throttled (in-sync replicas are
 * not, mirror partitions always are) is decided by the callers.
 */

/** Kafka's `Long.MAX_VALUE` default: no limit. */
export const UNLIMITED = Number.MAX_SAFE_INTEGER

/** `replication.quota.window.num` and `replication.quota.window.size.seconds` (in ms here). */
export interface QuotaWindow {
  readonly samples: number
  readonly windowMs: number
}

/** Kafka's defaults: 11 windows of 1 s. */
export const DEFAULT_WINDOW: QuotaWindow = { samples: 11, windowMs: 1000 }

/** Bytes recorded in one sample, which started at `start` (ms). */
export interface Sample {
  readonly start: number
  readonly bytes: number
}

/** The retained samples, oldest first: an immutable value. */
export interface WindowedRate {
  readonly samples: ReadonlyArray<Sample>
}

export const empty: WindowedRate = { samples: [] }

/** The samples that still count at `now`: those that started less than all the windows together ago. */
const retained = (rate: WindowedRate, window: QuotaWindow, now: number): ReadonlyArray<Sample> => {
  const horizon = window.samples * window.windowMs
  return rate.samples.filter((s) => now - s.start < horizon)
}

/** Adds bytes at `now`: to the current sample while it is younger than a window, else to a new one. */
export const record = (rate: WindowedRate, window: QuotaWindow, bytes: number, now: number): WindowedRate => {
  const kept = retained(rate, window, now)
  const current = kept[kept.length - 1]
  if (current !== undefined && now - current.start < window.windowMs)
    return { samples: [...kept.slice(0, -1), { start: current.start, bytes: current.bytes + bytes }] }
  return { samples: [...kept, { start: now, bytes }].slice(-window.samples) }
}

/** Bytes per second at `now`: the retained bytes over the time since the oldest sample, at least one window. */
export const rate = (rate: WindowedRate, window: QuotaWindow, now: number): number => {
  const kept = retained(rate, window, now)
  const first = kept[0]
  if (first === undefined) return 0
  const total = kept.reduce((n, s) => n + s.bytes, 0)
  return total / (Math.max(now - first.start, window.windowMs) / 1000)
}

/** Whether the rate at `now` is above `bound` bytes/s. */
export const isExceeded = (r: WindowedRate, window: QuotaWindow, bound: number, now: number): boolean =>
  bound < UNLIMITED && rate(r, window, now) > bound

// ---------------------------------------------------------------------------------------------------
// Throttled replicas

/** The partitions a broker throttles in a topic: every one (`*`), or those listed for its broker id. */
export type ThrottledReplicas = "all" | ReadonlySet<number>

const NONE: ThrottledReplicas = new Set<number>()

/**
 * Reads a `*.replication.throttled.replicas` value for broker `brokerId`: `*`, or `partition:broker` pairs of
 * which those naming this broker count. Entries not of that form (the controller refuses them) are skipped.
 */
export const throttledReplicas = (value: string | undefined, brokerId: number): ThrottledReplicas => {
  if (value === undefined) return NONE
  const entries = value
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "")
  if (entries.length === 1 && entries[0] === "*") return "all"
  const partitions = new Set<number>()
  for (const e of entries) {
    const m = /^(\d+):(\d+)$/.exec(e)
    if (m !== null && Number(m[2]) === brokerId) partitions.add(Number(m[1]))
  }
  return partitions
}

export const isThrottledPartition = (replicas: ThrottledReplicas, partition: number): boolean =>
  replicas === "all" || replicas.has(partition)

// ---------------------------------------------------------------------------------------------------
// The runtime quota

/** The broker settings a quota reads (a `BrokerConfig` has them), read again at every use. */
export interface QuotaConfig {
  readonly leaderReplicationThrottledRate: number
  readonly followerReplicationThrottledRate: number
  readonly mirrorReplicationThrottledRate: number
  readonly replicationQuotaWindowNum: number
  readonly replicationQuotaWindowSizeSeconds: number
}

export type QuotaType = "leader" | "follower" | "mirror"

/** The topic config naming a quota's throttled replicas, and the broker config of its rate. */
export const KEYS: Readonly<Record<QuotaType, { readonly replicas: string; readonly rate: string }>> = {
  leader: { replicas: "leader.replication.throttled.replicas", rate: "leader.replication.throttled.rate" },
  follower: { replicas: "follower.replication.throttled.replicas", rate: "follower.replication.throttled.rate" },
  mirror: { replicas: "mirror.replication.throttled.replicas", rate: "mirror.replication.throttled.rate" }
}

export const unlimitedConfig: QuotaConfig = {
  leaderReplicationThrottledRate: UNLIMITED,
  followerReplicationThrottledRate: UNLIMITED,
  mirrorReplicationThrottledRate: UNLIMITED,
  replicationQuotaWindowNum: DEFAULT_WINDOW.samples,
  replicationQuotaWindowSizeSeconds: DEFAULT_WINDOW.windowMs / 1000
}

export interface ReplicationQuotaOptions {
  readonly type: QuotaType
  readonly brokerId: number
  readonly config: () => QuotaConfig
  /** A topic's dynamic configs (where its throttled replicas are listed). */
  readonly topicConfigs: (topic: string) => ReadonlyMap<string, string>
  readonly now: () => number
}

const boundOf = (type: QuotaType, c: QuotaConfig): number =>
  type === "leader"
    ? c.leaderReplicationThrottledRate
    : type === "follower"
      ? c.followerReplicationThrottledRate
      : c.mirrorReplicationThrottledRate

/** One of a broker's replication quotas: its samples, over the configs and the clock it is given. */
export class ReplicationQuota {
  private samples: WindowedRate = empty
  /** The last parsed replicas list per topic, reused while the topic's value stays the same. */
  private readonly parsed = new Map<
    string,
    { readonly value: string | undefined; readonly replicas: ThrottledReplicas }
  >()

  constructor(private readonly options: ReplicationQuotaOptions) {}

  private window(): QuotaWindow {
    const c = this.options.config()
    return { samples: c.replicationQuotaWindowNum, windowMs: c.replicationQuotaWindowSizeSeconds * 1000 }
  }

  /** The bound in force, bytes/s (`UNLIMITED` when not set). */
  get bound(): number {
    return boundOf(this.options.type, this.options.config())
  }

  /** Whether this broker's entry of the topic's throttled-replicas config names the partition (or is `*`). */
  isThrottled(topic: string, partition: number): boolean {
    const value = this.options.topicConfigs(topic).get(KEYS[this.options.type].replicas)
    let cached = this.parsed.get(topic)
    if (cached === undefined || cached.value !== value) {
      cached = { value, replicas: throttledReplicas(value, this.options.brokerId) }
      this.parsed.set(topic, cached)
    }
    return isThrottledPartition(cached.replicas, partition)
  }

  /** Whether the measured rate is above the bound now. */
  isQuotaExceeded(): boolean {
    return isExceeded(this.samples, this.window(), this.bound, this.options.now())
  }

  /** Counts bytes of throttled partitions sent or received now. */
  record(bytes: number): void {
    if (bytes > 0) this.samples = record(this.samples, this.window(), bytes, this.options.now())
  }

  /** The measured rate now, bytes/s. */
  rate(): number {
    return rate(this.samples, this.window(), this.options.now())
  }
}
