/**
 * Connections to brokers, one per address, opened lazily and shared. A failed connect backs off
 * exponentially (per address) before the next attempt; a closed connection is replaced on next use.
 * Also picks the least loaded of several brokers for requests that any broker can answer.
 *
 * It knows addresses and node ids only; which node leads what is `ClusterClient`'s concern.
 */
import { ClientClosed, ConnectionError } from "./ClientError.js"
import * as Connection from "./Connection.js"
import * as Retry from "./Retry.js"
import type { ClientSecurity } from "./Security.js"

export interface Address {
  readonly host: string
  readonly port: number
}

export interface Options {
  readonly clientId?: string | null
  readonly connectTimeoutMs?: number
  readonly requestTimeoutMs?: number
  /** First reconnect delay after a failed connect; default 50 ms. */
  readonly reconnectBackoffMs?: number
  /** Cap on the reconnect delay; default 1 s. */
  readonly reconnectBackoffMaxMs?: number
  readonly negotiate?: boolean
  /**
   * TLS and SASL for every connection of the pool; absent: PLAINTEXT. A function is asked at each
   * connect; when it throws (a security config that cannot be used), the connect fails with its message.
   */
  readonly security?: ClientSecurity | (() => ClientSecurity)
}

export const addressKey = (a: Address): string => `${a.host}:${a.port}`

/** Parses "host:port" (IPv6 as "[::1]:9092"). */
export const parseAddress = (s: string): Address => {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(s.trim())
  if (!m) throw new Error(`invalid address "${s}", expected host:port`)
  return { host: m[1]!, port: Number(m[2]) }
}

/** What `leastLoaded` needs to know of a candidate. */
export interface Load {
  /** Requests in flight on an open connection; null when not connected. */
  readonly inFlight: number | null
  /** True while a failed connect's backoff runs. */
  readonly backingOff: boolean
}

/**
 * The index of the least loaded candidate: among connected ones the fewest in flight, else one not
 * backing off (a fresh connect), else the first. -1 for no candidates.
 */
export const leastLoaded = (loads: ReadonlyArray<Load>): number => {
  let best = -1
  let bestScore = Number.POSITIVE_INFINITY
  for (let i = 0; i < loads.length; i++) {
    const l = loads[i]!
    // Connected beats connectable beats backing off; ties keep the earliest, so callers may shuffle.
    const score = l.inFlight !== null ? l.inFlight : l.backingOff ? 2e9 : 1e9
    if (score < bestScore) {
      best = i
      bestScore = score
    }
  }
  return best
}

interface Entry {
  readonly address: Address
  conn: Connection.Connection | null
  opening: Promise<Connection.Connection> | null
  failures: number
  retryAt: number
}

export class NodePool {
  private readonly entries = new Map<string, Entry>()
  private readonly nodes = new Map<number, Address>()
  private readonly policy: Retry.Policy
  private closed = false

  constructor(private readonly options: Options = {}) {
    this.policy = {
      attempts: Number.POSITIVE_INFINITY,
      baseMs: options.reconnectBackoffMs ?? 50,
      maxMs: options.reconnectBackoffMaxMs ?? 1000,
      jitter: 0.2
    }
  }

  private security(address: Address): ClientSecurity | undefined {
    const s = this.options.security
    if (typeof s !== "function") return s
    try {
      return s()
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e)
      throw new ConnectionError({
        host: address.host,
        port: address.port,
        reason: "connect",
        message: `connect to ${addressKey(address)}: ${message}`,
        cause: e
      })
    }
  }

  /** Records (or updates) the address of a node id. */
  setNode(nodeId: number, address: Address): void {
    this.nodes.set(nodeId, address)
  }

  nodeAddress(nodeId: number): Address | undefined {
    return this.nodes.get(nodeId)
  }

  /** The open connection to `address`, connecting (after any pending backoff) if needed. */
  get(address: Address): Promise<Connection.Connection> {
    if (this.closed) return Promise.reject(new ClientClosed({ message: "node pool closed" }))
    const key = addressKey(address)
    let entry = this.entries.get(key)
    if (entry === undefined) {
      entry = { address, conn: null, opening: null, failures: 0, retryAt: 0 }
      this.entries.set(key, entry)
    }
    if (entry.conn?.isOpen) return Promise.resolve(entry.conn)
    if (entry.opening !== null) return entry.opening
    const e = entry
    const wait = e.retryAt - Date.now()
    const opening = (wait > 0 ? Retry.sleep(wait) : Promise.resolve())
      .then(() => {
        if (this.closed) throw new ClientClosed({ message: "node pool closed" })
        const security = this.security(address)
        return Connection.open({
          host: address.host,
          port: address.port,
          ...(this.options.clientId === undefined ? {} : { clientId: this.options.clientId }),
          ...(this.options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: this.options.connectTimeoutMs }),
          ...(this.options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: this.options.requestTimeoutMs }),
          ...(this.options.negotiate === undefined ? {} : { negotiate: this.options.negotiate }),
          ...(security === undefined ? {} : { security })
        })
      })
      .then(
        (conn) => {
          e.opening = null
          if (this.closed) {
            void conn.close()
            throw new ClientClosed({ message: "node pool closed" })
          }
          e.conn = conn
          e.failures = 0
          e.retryAt = 0
          conn.onClose(() => {
            if (e.conn === conn) e.conn = null
          })
          return conn
        },
        (err: unknown) => {
          e.opening = null
          e.failures++
          e.retryAt = Date.now() + Retry.delay(this.policy, e.failures)
          throw err
        }
      )
    e.opening = opening
    return opening
  }

  /** The connection to a node id registered with `setNode`. */
  getNode(nodeId: number): Promise<Connection.Connection> {
    const address = this.nodes.get(nodeId)
    if (address === undefined)
      return Promise.reject(
        new ConnectionError({ host: "", port: -1, reason: "connect", message: `unknown node id ${nodeId}` })
      )
    return this.get(address)
  }

  /** The load of an address, for `leastLoaded`. */
  load(address: Address): Load {
    const e = this.entries.get(addressKey(address))
    if (e === undefined) return { inFlight: null, backingOff: false }
    return { inFlight: e.conn?.isOpen ? e.conn.inFlight : null, backingOff: e.retryAt > Date.now() }
  }

  /** Closes every connection; later `get`s fail with `ClientClosed`. */
  async close(): Promise<void> {
    this.closed = true
    const conns = [...this.entries.values()].flatMap((e) => (e.conn === null ? [] : [e.conn]))
    this.entries.clear()
    // Every close starts at once (a close only destroys its socket and never rejects); then wait for each.
    const closing = conns.map((c) => c.close())
    for (const c of closing) await c
  }
}
