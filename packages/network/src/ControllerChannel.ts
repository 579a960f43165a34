/**
 * A broker's connection to "the controller" of a quorum: one `Channel` per controller of
 * `controller.quorum.bootstrap.servers`, and the one in use until it fails. A request that cannot be
 * sent or answered (the controller is down, restarting, unreachable), or whose answer says the node is
 * not the active controller (NOT_CONTROLLER anywhere in it, or NOT_LEADER_OR_FOLLOWER for the metadata
 * log), moves the channel on to the next controller, so the caller's next attempt goes there; the answer
 * or the failure is still the caller's, who owns the retry policy as with a `Channel`. With one
 * controller it is a `Channel`.
 */
import type { Security } from "@clustermirror/client"
import { type Api, Errors, type Spec } from "@clustermirror/protocol"
import { Channel } from "./Channel.js"

const NOT_CONTROLLER = Errors.ErrorCode.NOT_CONTROLLER
const NOT_LEADER_OR_FOLLOWER = Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER

/** Whether an answer says "not the active controller" (any `errorCode` in it, or a metadata fetch's partition). */
export const refusesAsNotController = (apiKey: number, response: unknown): boolean => {
  if (apiKey === FETCH_KEY) {
    const partition = (response as { responses?: Array<{ partitions?: Array<{ errorCode?: number }> }> }).responses?.[0]
      ?.partitions?.[0]
    return partition?.errorCode === NOT_LEADER_OR_FOLLOWER || partition?.errorCode === NOT_CONTROLLER
  }
  return hasNotController(response, 0)
}

const FETCH_KEY = 1

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
    private readonly moved: (to: Endpoint, why: string) => void = () => {}
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

  private moveOn(from: number, why: string): void {
    // Only the first failure of a controller moves the channel: concurrent requests failing alike keep it.
    if (this.channels.length === 1 || this.current !== from) return
    this.current = (from + 1) % this.channels.length
    this.moved(this.endpoint, why)
  }

  /** As `Channel.request`, then moves on when the controller failed or is not the active one. */
  async request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    timeoutMs?: number,
    maxVersion?: number
  ): Promise<Spec.StructType<Res>> {
    const at = this.current
    let response: Spec.StructType<Res>
    try {
      response = await this.channels[at]!.request(api, body, timeoutMs, maxVersion)
    } catch (e) {
      this.moveOn(at, e instanceof Error ? e.message : String(e))
      throw e
    }
    if (refusesAsNotController(api.key, response)) this.moveOn(at, `${api.name}: not the active controller`)
    return response
  }

  close(): void {
    for (const c of this.channels) c.close()
  }
}
