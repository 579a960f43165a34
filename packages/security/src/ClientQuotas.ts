/**
 * Client quota enforcement (Kafka's `ClientQuotaManager` with its default callback): which quota applies
 * to a (user principal, client-id) pair, the windowed rate of what each pair sent or fetched or of the
 * request handling time it took (`request_percentage`, KIP-124), and how long a pair that went over its
 * quota is throttled; the token bucket of `controller_mutation_rate` (KIP-599); and the per-IP
 * connection creation rate of `connection_creation_rate` (KIP-612, Kafka's `ConnectionQuotas`).
 *
 * Pure arithmetic over times passed in; it never reads a clock and never touches a socket (muting is the
 * network package's, the request path's wiring is `ClientQuotaApis`).
 */
import type { MetadataImage } from "@clustermirror/metadata-log"

/** The quotas of (user, client-id) pairs. */
export type QuotaKey = "producer_byte_rate" | "consumer_byte_rate" | "request_percentage" | "controller_mutation_rate"

/**
 * Kafka's `quota.window.num` and `quota.window.size.seconds` (defaults 11 and 1), and for the controller
 * mutation quota `controller.quota.window.num` and `controller.quota.window.size.seconds` (the same defaults).
 */
export interface WindowConfig {
  readonly samples: number
  readonly windowMs: number
}

export const DEFAULT_WINDOW: WindowConfig = { samples: 11, windowMs: 1000 }

type Part = MetadataImage.ClientQuotaEntityPart

/** The quota that applies to a pair, and the pair's share of it: who is measured together. */
export interface ResolvedQuota {
  /** Per second: bytes, percent of one request handler's time, or partition mutations. */
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

/**
 * The share of one request handler's time that `ms` milliseconds of handling are, as Kafka records
 * request time (percent-seconds: a rate of them per second is the percentage `request_percentage` bounds).
 */
export const requestTimePercent = (ms: number): number => ms / 10

/** The rates of the pairs throttled on one quota key, with what they recorded. */
export class ClientQuotaManager {
  private readonly rates = new Map<string, WindowedRate>()
  private recorded = 0

  /**
   * `maxThrottleMs` bounds the throttle (Kafka bounds the request quota's to one window, the byte rates'
   * not at all).
   */
  constructor(
    readonly key: QuotaKey,
    private readonly config: WindowConfig = DEFAULT_WINDOW,
    private readonly maxThrottleMs: number = Number.POSITIVE_INFINITY
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
    return Math.min(this.maxThrottleMs, throttleTimeMs(r.rate(now), q.bound, r.windowSizeMs(now)))
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

/**
 * Kafka's `TokenBucket`: starts full at `burst` (the rate over all the windows), refills at the rate per
 * second up to the burst, and a recorded value takes that many tokens, below zero if need be (a debt).
 */
export class TokenBucket {
  private tokens: number | undefined
  private last = 0

  constructor(private readonly config: WindowConfig = DEFAULT_WINDOW) {}

  /** The most tokens the bucket holds at `rate`. */
  burst(rate: number): number {
    return rate * this.config.samples * (this.config.windowMs / 1000)
  }

  /** The tokens at `now` for a quota of `rate` per second (negative: in debt). */
  tokensAt(rate: number, now: number): number {
    const burst = this.burst(rate)
    const refilled = this.tokens === undefined ? burst : this.tokens + (Math.max(0, now - this.last) * rate) / 1000
    this.tokens = Math.min(burst, refilled)
    this.last = Math.max(this.last, now)
    return this.tokens
  }

  /** Takes `value` tokens at `now` (a negative value gives them back). */
  record(value: number, rate: number, now: number): void {
    this.tokens = this.tokensAt(rate, now) - value
  }

  /** Whether the bucket is full again, so forgetting it changes nothing. */
  full(rate: number, now: number): boolean {
    return this.tokensAt(rate, now) >= this.burst(rate)
  }
}

/** How long a bucket in debt takes to come back to zero: Kafka's controller mutation throttle. */
export const debtThrottleTimeMs = (tokens: number, rate: number): number =>
  tokens < 0 ? Math.round((-tokens / rate) * 1000) : 0

/**
 * What one request did to a pair's controller mutation quota (Kafka's `ControllerMutationQuota`, made per
 * request): `record` says whether a topic's mutations are accepted, `throttleTimeMs` how long the request
 * is throttled.
 */
export interface ControllerMutationQuota {
  /**
   * Strict (the versions that know THROTTLING_QUOTA_EXCEEDED): refused while the bucket is in debt,
   * otherwise accepted even if they put it in debt. Permissive (older versions): always accepted, the
   * request throttled once the bucket is in debt.
   */
  readonly record: (permits: number, now: number) => boolean
  /** Gives back the permits of a mutation that did not happen (the controller refused the topic). */
  readonly unrecord: (permits: number, now: number) => void
  /** The throttle time of the last debt seen, less the time gone since (0 when none). */
  readonly throttleTimeMs: (now: number) => number
}

/** Kafka's `UnboundedControllerMutationQuota`: the pair has no quota. */
export const UNBOUNDED_MUTATION_QUOTA: ControllerMutationQuota = {
  record: () => true,
  unrecord: () => {},
  throttleTimeMs: () => 0
}

/** The token buckets of the pairs with a `controller_mutation_rate` (Kafka's `ControllerMutationQuotaManager`). */
export class ControllerMutationQuotaManager {
  private readonly buckets = new Map<string, TokenBucket>()
  private created = 0

  constructor(private readonly config: WindowConfig = DEFAULT_WINDOW) {}

  private bucketOf(q: ResolvedQuota, now: number): TokenBucket {
    const id = `${q.user}\u0000${q.clientId}`
    let b = this.buckets.get(id)
    if (b === undefined) {
      // A full bucket is what a new one would be: forgetting the full ones keeps the map to active pairs.
      if (++this.created % 1024 === 0)
        for (const [k, v] of this.buckets) if (v.full(q.bound, now)) this.buckets.delete(k)
      b = new TokenBucket(this.config)
      this.buckets.set(id, b)
    }
    return b
  }

  /** The quota of one request from the pair (`undefined`: no quota applies). */
  newQuotaFor(q: ResolvedQuota | undefined, strict: boolean): ControllerMutationQuota {
    if (q === undefined) return UNBOUNDED_MUTATION_QUOTA
    let lastThrottleMs = 0
    let lastAt = 0
    const seen = (tokens: number, now: number) => {
      lastThrottleMs = debtThrottleTimeMs(tokens, q.bound)
      lastAt = now
    }
    return {
      record: (permits, now) => {
        const bucket = this.bucketOf(q, now)
        if (strict) {
          const tokens = bucket.tokensAt(q.bound, now)
          if (tokens < 0) {
            seen(tokens, now)
            return false
          }
          bucket.record(permits, q.bound, now)
          return true
        }
        bucket.record(permits, q.bound, now)
        const tokens = bucket.tokensAt(q.bound, now)
        if (tokens < 0) seen(tokens, now)
        return true
      },
      unrecord: (permits, now) => this.bucketOf(q, now).record(-permits, q.bound, now),
      throttleTimeMs: (now) => Math.max(0, lastThrottleMs - (now - lastAt))
    }
  }
}

/** An IP as Kafka's `InetAddress` sees it: an IPv4-mapped IPv6 address is its IPv4 address. */
export const normalizeIp = (host: string): string =>
  host.startsWith("::ffff:") && host.includes(".") ? host.slice(7) : host

/**
 * The `connection_creation_rate` that applies to an IP: its own `ip` entity's, else the default IP
 * entity's (`ip` with no name), else none.
 */
export const connectionRateOf = (
  quotasOf: (entity: ReadonlyArray<Part>) => ReadonlyMap<string, number>,
  ip: string
): number | undefined =>
  quotasOf([{ entityType: "ip", entityName: normalizeIp(ip) }]).get("connection_creation_rate") ??
  quotasOf([{ entityType: "ip", entityName: null }]).get("connection_creation_rate")

/**
 * The connection creation rate of each IP with a quota (Kafka's `ConnectionQuotas` for IP entities): a
 * new connection is recorded; one that takes the IP's rate over its quota is taken back out of the rate
 * (it will not be accepted) and throttled for the time the excess takes to pass, at most one window.
 */
export class ConnectionQuotas {
  private readonly rates = new Map<string, WindowedRate>()
  private recorded = 0

  constructor(private readonly config: WindowConfig = DEFAULT_WINDOW) {}

  /** Records a new connection from `ip` at `now`: 0 accepts it, otherwise the milliseconds to hold it before closing it. */
  recordAndGetThrottleTimeMs(ip: string, quota: number | undefined, now: number): number {
    if (quota === undefined) return 0
    const key = normalizeIp(ip)
    let r = this.rates.get(key)
    if (r === undefined) {
      if (++this.recorded % 1024 === 0) for (const [k, v] of this.rates) if (v.idle(now)) this.rates.delete(k)
      r = new WindowedRate(this.config)
      this.rates.set(key, r)
    }
    r.record(1, now)
    const ms = Math.min(this.config.windowMs, throttleTimeMs(r.rate(now), quota, r.windowSizeMs(now)))
    if (ms > 0) r.record(-1, now)
    return ms
  }
}
