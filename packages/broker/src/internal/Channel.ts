/**
 * A lazily (re)opened connection from this broker to another node (controller, leader, coordinator):
 * requests go at the version both sides support; a failed request drops the connection so the next one
 * reconnects. Owns no retry policy: callers decide.
 */
import { Connection } from "@clustermirror/client"
import type { Api, Spec } from "@clustermirror/protocol"
import { Either } from "effect"

/** One lazily (re)opened connection to a node; a failed request drops it so the next one reconnects. */
export class Channel {
  private conn: Promise<Connection.Connection> | undefined
  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly clientId: string
  ) {}
  private get(): Promise<Connection.Connection> {
    this.conn ??= Connection.open({
      host: this.host,
      port: this.port,
      clientId: this.clientId,
      requestTimeoutMs: 30_000
    })
    return this.conn
  }
  async request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    timeoutMs?: number
  ): Promise<Spec.StructType<Res>> {
    const attempt = this.get()
    try {
      const c = await attempt
      const v = Either.getOrThrow(c.versionFor(api))
      return await c.request(api, v, body, timeoutMs === undefined ? undefined : { timeoutMs })
    } catch (e) {
      if (this.conn === attempt) this.conn = undefined
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
