/**
 * When each broker last reached the active controller: soft state the controller runtime holds next
 * to the hard state (Kafka keeps it in a separate heartbeat manager). It is never written to the
 * metadata log and never replayed; a new active controller starts it afresh with `seed`, which gives
 * every registered broker a full session from activation.
 *
 * An immutable value with pure updates, so that decide functions can take it as an input.
 */

export interface BrokerHeartbeats {
  /** Last contact time in milliseconds, by broker id. */
  readonly lastContactMs: ReadonlyMap<number, number>
}

/** Kafka's `broker.session.timeout.ms` default. */
export const DEFAULT_SESSION_TIMEOUT_MS = 9000

export const empty: BrokerHeartbeats = { lastContactMs: new Map() }

/** Every given broker was heard from at `now`: what a freshly activated controller assumes. */
export const seed = (brokerIds: Iterable<number>, now: number): BrokerHeartbeats => ({
  lastContactMs: new Map([...brokerIds].map((id) => [id, now]))
})

/** The broker was heard from at `now` (a registration or an accepted heartbeat). */
export const touch = (heartbeats: BrokerHeartbeats, brokerId: number, now: number): BrokerHeartbeats => {
  const lastContactMs = new Map(heartbeats.lastContactMs)
  lastContactMs.set(brokerId, Math.max(now, heartbeats.lastContactMs.get(brokerId) ?? now))
  return { lastContactMs }
}

/** Forgets a broker (it unregistered, or a new incarnation replaced it). */
export const remove = (heartbeats: BrokerHeartbeats, brokerId: number): BrokerHeartbeats => {
  if (!heartbeats.lastContactMs.has(brokerId)) return heartbeats
  const lastContactMs = new Map(heartbeats.lastContactMs)
  lastContactMs.delete(brokerId)
  return { lastContactMs }
}

/** Whether the broker was heard from within the session timeout; never, for a broker not tracked. */
export const isWithinSession = (
  heartbeats: BrokerHeartbeats,
  brokerId: number,
  now: number,
  sessionTimeoutMs: number = DEFAULT_SESSION_TIMEOUT_MS
): boolean => {
  const last = heartbeats.lastContactMs.get(brokerId)
  return last !== undefined && now - last <= sessionTimeoutMs
}
