/**
 * A lazily (re)opened connection from this broker to another node (controller, leader, coordinator):
 * requests go at the version both sides support; a failed request drops the connection so the next one
 * reconnects. Owns no retry policy: callers decide.
 */
import { Connection, type Security } from "@clustermirror/client"
import type { Api, Spec } from "@clustermirror/protocol"
import { Either } from "effect"

/** One lazily (re)opened connection to a node; a failed request drops it so the next one reconnects. */
export class Channel {
  private conn: Promise<Connection.Connection> | undefined
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly clientId: string,
    /** TLS and SASL of the listener connected to (the broker's own inter-broker or controller credentials); absent: PLAINTEXT. */
    private readonly security?: Security.ClientSecurity
  ) {}
  /** The open connection, or a new one when there is none or the last one closed (the peer restarted). */
  private async get(): Promise<Connection.Connection> {
    const current = this.conn
    if (current !== undefined) {
      const c = await current.catch(() => undefined)
      if (c?.isOpen === true) return c
      if (this.conn === current) this.conn = undefined
    }
    this.conn ??= Connection.open({
      host: this.host,
      port: this.port,
      clientId: this.clientId,
      requestTimeoutMs: 30_000,
      ...(this.security === undefined ? {} : { security: this.security })
    })
    return this.conn
  }
  /**
   * Sends a request at the highest version both sides support, capped at `maxVersion` when given. A failed
   * request drops the connection, so the next one reconnects.
   */
  async request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    timeoutMs?: number,
    maxVersion?: number
  ): Promise<Spec.StructType<Res>> {
    const attempt = this.get()
    try {
      const c = await attempt
      const negotiated = Either.getOrThrow(c.versionFor(api))
      const v = maxVersion === undefined ? negotiated : Math.min(negotiated, maxVersion)
      return await c.request(api, v, body, timeoutMs === undefined ? undefined : { timeoutMs })
    } catch (e) {
      // The next request finds the connection closed and opens another.
      void attempt.then((c) => c.close()).catch(() => {})
      throw e
    }
  }
  async connection(): Promise<Connection.Connection> {
    return this.get()
  }
  close(): void {
    const c = this.conn
    this.conn = undefined
    void c?.then((x) => x.close()).catch(() => {})
  }
}
