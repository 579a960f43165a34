/**
 * Settings of the replica fetcher, under Kafka's broker-config names. Owns the defaults and the `Config`
 * descriptor that reads them; must not hold runtime state.
 */
import { Config } from "effect"

export interface FetcherConfig {
  /** replica.fetch.wait.max.ms: how long the leader may hold a follower fetch without data. */
  readonly replicaFetchWaitMaxMs: number
  /** replica.fetch.min.bytes: bytes the leader waits for before answering. */
  readonly replicaFetchMinBytes: number
  /** replica.fetch.max.bytes: per-partition byte limit of one fetch. */
  readonly replicaFetchMaxBytes: number
  /** replica.fetch.response.max.bytes: byte limit of a whole fetch response. */
  readonly replicaFetchResponseMaxBytes: number
  /** replica.fetch.backoff.ms: delay of a partition after an error, and of an idle or failed round. */
  readonly replicaFetchBackoffMs: number
}

export const defaults: FetcherConfig = {
  replicaFetchWaitMaxMs: 500,
  replicaFetchMinBytes: 1,
  replicaFetchMaxBytes: 1024 * 1024,
  replicaFetchResponseMaxBytes: 10 * 1024 * 1024,
  replicaFetchBackoffMs: 1000
}

/** Reads the settings from the environment/config provider under their Kafka names, with Kafka's defaults. */
export const config: Config.Config<FetcherConfig> = Config.all({
  replicaFetchWaitMaxMs: Config.integer("replica.fetch.wait.max.ms").pipe(
    Config.withDefault(defaults.replicaFetchWaitMaxMs),
    Config.withDescription("Maximum wait of a follower fetch at the leader")
  ),
  replicaFetchMinBytes: Config.integer("replica.fetch.min.bytes").pipe(
    Config.withDefault(defaults.replicaFetchMinBytes),
    Config.withDescription("Minimum bytes a follower fetch waits for")
  ),
  replicaFetchMaxBytes: Config.integer("replica.fetch.max.bytes").pipe(
    Config.withDefault(defaults.replicaFetchMaxBytes),
    Config.withDescription("Bytes fetched per partition (at least one batch)")
  ),
  replicaFetchResponseMaxBytes: Config.integer("replica.fetch.response.max.bytes").pipe(
    Config.withDefault(defaults.replicaFetchResponseMaxBytes),
    Config.withDescription("Bytes of a whole follower fetch response (at least one batch)")
  ),
  replicaFetchBackoffMs: Config.integer("replica.fetch.backoff.ms").pipe(
    Config.withDefault(defaults.replicaFetchBackoffMs),
    Config.withDescription("Backoff after a fetch error")
  )
})

/** Defaults overridden by whatever is given. */
export const make = (overrides: Partial<FetcherConfig> = {}): FetcherConfig => ({ ...defaults, ...overrides })
