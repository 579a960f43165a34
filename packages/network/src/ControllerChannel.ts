/**
 * A broker's connection to "the controller" of a quorum: one `Channel` per controller of
 * `controller.quorum.bootstrap.servers`, and the one in use until it fails.
 * - An answer saying the node is not the active controller (NOT_CONTROLLER anywhere in it, or
 *   NOT_LEADER_OR_FOLLOWER for the metadata log and DescribeQuorum), or a controller that cannot be
 *   connected to, moves the channel on to the next controller and the request is sent there: such a
 *   request was not decided, so sending it again is safe. This goes on, a pause after each round of
 *   every controller, for up to `retryMs` (an election), then the last answer or failure is the caller's.
 * - A request that fails once sent (the connection dropped, no answer in time) moves the channel on
 *   too, but fails to the caller: the controller may have decided it, and only the caller knows whether
 *   sending it again is safe.
 * With one controller it is a `Channel` that waits out a restart of its controller for up to `retryMs`.
 */
import type { Security } from "@clustermirror/client"
import { type Api, Errors, type Spec } from "@clustermirror/protocol"
import { Channel } from "./Channel.js"

const NOT_CONTROLLER = Errors.ErrorCode.NOT_CONTROLLER
const NOT_LEADER_OR_FOLLOWER = Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER

/** Whether an answer says "not the active controller" (any `errorCode` in it, or a metadata fetch's partition). */
export const refusesAsNotController = (apiKey: number, response: unknown): boolean => {
  type Partitions = { partitions?: Array<{ errorCode?: number }> }
  const partition =
    apiKey === FETCH_KEY
      ? (response as { responses?: Array<Partitions> }).responses?.[0]?.partitions?.[0]
      : apiKey === DESCRIBE_QUORUM_KEY
        ? (response as { topics?: Array<Partitions> }).topics?.[0]?.partitions?.[0]
        : undefined
  if (partition?.errorCode === NOT_LEADER_OR_FOLLOWER) return true
  return hasNotController(response, 0)
}

const FETCH_KEY = 1
const DESCRIBE_QUORUM_KEY = 55

const hasNotController = (value: unknown, depth: number): boolean => {
  if (depth > 4 || value === null || typeof value !== "object" || value instanceof Uint8Array) return false
  if (Array.isArray(value)) return value.some((v) => hasNotController(v, depth + 1))
  const o = value as Record<string, unknown>
  if (o.errorCode === NOT_CONTROLLER) return true
  return Object.values(o).some((v) => typeof v === "object" && hasNotController(v, depth + 1))
}

export interface Endpoint {
  readonly host: string
  readonly port: number
}

export class ControllerChannel {
  private readonly channels: ReadonlyArray<Channel>
  private current = 0
  constructor(
    endpoints: ReadonlyArray<Endpoint>,
    clientId: string,
    security?: Security.ClientSecurity,
    /** Told when the channel moves on to another controller (for the log). */
    private readonly moved: (to: Endpoint, why: string) => void = () => {},
    /** How long a request goes on looking for the active controller. */
    private readonly retryMs = 10_000,
    /** The timeout of a request sent without one (a paused controller answers nothing). */
    private readonly defaultTimeoutMs?: number
  ) {
    if (endpoints.length === 0) throw new Error("a controller channel needs at least one controller")
    this.endpoints = endpoints
    this.channels = endpoints.map((e) => new Channel(e.host, e.port, clientId, security))
  }
  private readonly endpoints: ReadonlyArray<Endpoint>

  /** The controller requests go to now. */
  get endpoint(): Endpoint {
    return this.endpoints[this.current]!
  }

  /** Whether the last request was answered by an active controller (a search told once, not at every step). */
  private settled = true

  private moveOn(from: number, why: string): void {
    // Only the first failure of a controller moves the channel: concurrent requests failing alike keep it.
    if (this.channels.length === 1 || this.current !== from) return
    this.current = (from + 1) % this.channels.length
    if (this.settled) this.moved(this.endpoint, why)
    this.settled = false
  }

  /** As `Channel.request`, to the active controller (see above). */
  async request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    timeoutMs?: number,
    maxVersion?: number
  ): Promise<Spec.StructType<Res>> {
    const deadline = Date.now() + this.retryMs
    for (let attempt = 1; ; attempt++) {
      const at = this.current
      const channel = this.channels[at]!
      const last = Date.now() >= deadline
      try {
        await channel.connection()
      } catch (e) {
        this.moveOn(at, e instanceof Error ? e.message : String(e))
        if (last) throw e
        await this.pause(attempt)
        continue
      }
      let response: Spec.StructType<Res>
      try {
        response = await channel.request(api, body, timeoutMs ?? this.defaultTimeoutMs, maxVersion)
      } catch (e) {
        this.moveOn(at, e instanceof Error ? e.message : String(e))
        throw e
      }
      if (!refusesAsNotController(api.key, response)) {
        this.settled = true
        return response
      }
      this.moveOn(at, `${api.name}: not the active controller`)
      if (last) return response
      await this.pause(attempt)
    }
  }

  /** After a round of every controller, a pause: the quorum may be electing. */
  private pause(attempt: number): Promise<void> {
    const ms = attempt % this.channels.length === 0 ? 100 : 0
    return new Promise((resolve) => setTimeout(resolve, ms))
  }

  close(): void {
    for (const c of this.channels) c.close()
  }
}
