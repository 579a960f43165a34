/**
 * Client quota enforcement (Kafka's `ClientQuotaManager` with its default callback): which quota applies
 * to a (user principal, client-id) pair, the windowed rate of what each pair sent or fetched, and how
 * long a pair that went over its quota is throttled.
 *
 * Pure arithmetic over times passed in; it never reads a clock and never touches a socket (muting is the
 * network package's, the request path's wiring is `ClientQuotaApis`).
 */
import type { MetadataImage } from "@clustermirror/metadata-log"

/** The byte-rate quotas brokers enforce. */
export type QuotaKey = "producer_byte_rate" | "consumer_byte_rate"

/** Kafka's `quota.window.num` and `quota.window.size.seconds` (defaults 11 and 1). */
export interface WindowConfig {
  readonly samples: number
  readonly windowMs: number
}

export const DEFAULT_WINDOW: WindowConfig = { samples: 11, windowMs: 1000 }

type Part = MetadataImage.ClientQuotaEntityPart

/** The quota that applies to a pair, and the pair's share of it: who is measured together. */
export interface ResolvedQuota {
  /** Bytes per second. */
  readonly bound: number
  /** The user measured ("" when the quota is a client-id's alone). */
  readonly user: string
  /** The client-id measured ("" when the quota is a user's alone). */
  readonly clientId: string
}

const user = (name: string | null): Part => ({ entityType: "user", entityName: name })
const client = (name: string | null): Part => ({ entityType: "client-id", entityName: name })

/**
 * The first entity, in Kafka's order, that has a value for `key`: user + client-id, user + default
 * client-id, user, default user + client-id, default user + default client-id, default user,
 * client-id, default client-id. A quota of a user (or default user) alone is shared by all the user's
 * client-ids, one of a client-id alone by all users of that client-id; a default entity's quota is each
 * user's (or client-id's) own. Undefined when no entity has the key: the pair is not limited.
 */
export const resolve = (
  quotasOf: (entity: ReadonlyArray<Part>) => ReadonlyMap<string, number>,
  key: QuotaKey,
  userName: string,
  clientId: string
): ResolvedQuota | undefined => {
  const levels: ReadonlyArray<readonly [ReadonlyArray<Part>, boolean, boolean]> = [
    [[user(userName), client(clientId)], true, true],
    [[user(userName), client(null)], true, true],
    [[user(userName)], true, false],
    [[user(null), client(clientId)], true, true],
    [[user(null), client(null)], true, true],
    [[user(null)], true, false],
    [[client(clientId)], false, true],
    [[client(null)], false, true]
  ]
  for (const [entity, byUser, byClient] of levels) {
    const bound = quotasOf(entity).get(key)
    if (bound !== undefined) return { bound, user: byUser ? userName : "", clientId: byClient ? clientId : "" }
  }
  return undefined
}

/** The user a connection's principal names (`User:alice` → `alice`), as quota entities name users. */
export const userOf = (principal: string): string =>
  principal.startsWith("User:") ? principal.slice("User:".length) : principal

interface Sample {
  readonly start: number
  value: number
}

/**
 * A rate over `samples` windows of `windowMs` (Kafka's `Rate` over a `SampledStat`): a new window starts
 * when a value arrives `windowMs` or more after the current one started; windows older than
 * `samples x windowMs` are dropped; the rate divides the windows' sum by the time they span, counted as
 * at least `samples - 1` whole windows so that a first burst is not measured over a few milliseconds.
 */
export class WindowedRate {
  private readonly samples: Sample[] = []
  constructor(private readonly config: WindowConfig) {}

  private purge(now: number): void {
    const maxAge = this.config.samples * this.config.windowMs
    while (this.samples.length > 0 && now - this.samples[0]!.start >= maxAge) this.samples.shift()
  }

  /** Adds `value` at `now` (which never goes back). */
  record(value: number, now: number): void {
    this.purge(now)
    const last = this.samples[this.samples.length - 1]
    if (last === undefined || now - last.start >= this.config.windowMs) {
      this.samples.push({ start: now, value })
      if (this.samples.length > this.config.samples) this.samples.shift()
    } else last.value += value
  }

  /** The time the rate is measured over at `now`, in milliseconds. */
  windowSizeMs(now: number): number {
    this.purge(now)
    const { samples, windowMs } = this.config
    let elapsed = now - (this.samples[0]?.start ?? now)
    const full = Math.floor(elapsed / windowMs)
    if (full < samples - 1) elapsed += (samples - 1 - full) * windowMs
    return Math.max(1, elapsed)
  }

  /** The sum of the windows kept at `now`. */
  total(now: number): number {
    this.purge(now)
    let sum = 0
    for (const s of this.samples) sum += s.value
    return sum
  }

  /** Per second, at `now`. */
  rate(now: number): number {
    return (this.total(now) * 1000) / this.windowSizeMs(now)
  }

  /** Whether nothing recorded is kept any more. */
  idle(now: number): boolean {
    this.purge(now)
    return this.samples.length === 0
  }
}

/**
 * How long a client whose rate is `rate` against a quota of `bound` waits for its rate to come back to
 * the quota, if it sends nothing more meanwhile: the excess as a share of the quota, times the window
 * the rate is measured over. 0 within the quota.
 */
export const throttleTimeMs = (rate: number, bound: number, windowSizeMs: number): number =>
  rate > bound ? Math.round(((rate - bound) / bound) * windowSizeMs) : 0

/** The rates of the pairs throttled on one quota key, with what they recorded. */
export class ClientQuotaManager {
  private readonly rates = new Map<string, WindowedRate>()
  private recorded = 0

  constructor(
    readonly key: QuotaKey,
    private readonly config: WindowConfig = DEFAULT_WINDOW
  ) {}

  private rateOf(q: ResolvedQuota, now: number): WindowedRate {
    const id = `${q.user}\u0000${q.clientId}`
    let r = this.rates.get(id)
    if (r === undefined) {
      // Pairs that sent nothing for a whole window span are forgotten, so the map follows live clients.
      if (++this.recorded % 1024 === 0) for (const [k, v] of this.rates) if (v.idle(now)) this.rates.delete(k)
      r = new WindowedRate(this.config)
      this.rates.set(id, r)
    }
    return r
  }

  /**
   * Records `bytes` for the pair at `now` and returns how long it is throttled (0 within its quota).
   * As Kafka since KIP-219, what was sent counts, and the time to wait follows.
   */
  recordAndGetThrottleTimeMs(q: ResolvedQuota, bytes: number, now: number): number {
    const r = this.rateOf(q, now)
    r.record(bytes, now)
    return throttleTimeMs(r.rate(now), q.bound, r.windowSizeMs(now))
  }

  /** Takes back bytes recorded at `now` that the client will not get (a throttled fetch answers empty). */
  unrecord(q: ResolvedQuota, bytes: number, now: number): void {
    this.rateOf(q, now).record(-bytes, now)
  }

  /** The most a pair may take in one go: its quota over the windows but one (Kafka caps a fetch so). */
  maxValueInQuotaWindow(q: ResolvedQuota): number {
    return Math.floor(q.bound * (this.config.samples - 1) * (this.config.windowMs / 1000))
  }
}
