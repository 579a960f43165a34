/**
 * A minimal pipelined Kafka connection for load generation: one socket, requests matched to responses
 * by correlation id, responses decoded with the protocol package.
 *
 * It is a measuring tool, not a client: no retries, no metadata, no version negotiation beyond what a
 * bench asks for. A protocol or socket failure rejects every pending request.
 */
import { Buffer } from "node:buffer"
import { connect, type Socket } from "node:net"
import { Api, Header, type Spec } from "@clustermirror/protocol"

interface Pending {
  readonly resolve: (frame: Buffer) => void
  readonly reject: (e: Error) => void
}

/** Bytes before the body that a pre-encoded request carries: size, apiKey, apiVersion, correlationId. */
const PREFIX = 12

export class KafkaConnection {
  private nextCorrelationId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly frames = new Header.FrameDecoder(1024 * 1024 * 1024)
  private failure: Error | undefined

  private constructor(
    private readonly socket: Socket,
    readonly clientId: string
  ) {
    socket.on("data", (chunk: Buffer) => {
      const r = this.frames.push(chunk)
      if (r._tag === "Left") return this.fail(new Error(`bad response framing: ${r.left.message}`))
      for (const frame of r.right) {
        const correlationId = frame.readInt32BE(0)
        const p = this.pending.get(correlationId)
        if (p === undefined) return this.fail(new Error(`response for unknown correlation id ${correlationId}`))
        this.pending.delete(correlationId)
        p.resolve(frame)
      }
    })
    socket.on("error", (e) => this.fail(e))
    socket.on("close", () => this.fail(new Error("connection closed")))
  }

  static open(port: number, clientId: string, host = "127.0.0.1"): Promise<KafkaConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host, noDelay: true })
      socket.once("error", reject)
      socket.once("connect", () => {
        socket.off("error", reject)
        resolve(new KafkaConnection(socket, clientId))
      })
    })
  }

  get inFlight(): number {
    return this.pending.size
  }

  private fail(e: Error): void {
    if (this.failure !== undefined) return
    this.failure = e
    for (const p of this.pending.values()) p.reject(e)
    this.pending.clear()
    this.socket.destroy()
  }

  private await(correlationId: number): Promise<Buffer> {
    return new Promise((resolve, reject) => this.pending.set(correlationId, { resolve, reject }))
  }

  /** Encodes and sends one request; resolves with the decoded response body. */
  async request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> {
    if (this.failure !== undefined) throw this.failure
    const correlationId = this.nextCorrelationId++
    const frame = Api.encodeRequest(api, version, correlationId, this.clientId, body)
    if (frame._tag === "Left") throw new Error(frame.left.message)
    const response = this.await(correlationId)
    this.socket.write(frame.right)
    return decode(api, version, await response)
  }

  /**
   * Sends a request frame encoded earlier (by `Api.encodeRequest`, size prefix included) under a fresh
   * correlation id. Only the 12-byte prefix is copied, so the same frame can be in flight many times.
   * Resolves with the raw response frame.
   */
  sendEncoded(frame: Buffer): Promise<Buffer> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    const correlationId = this.nextCorrelationId++
    const head = Buffer.allocUnsafe(PREFIX)
    frame.copy(head, 0, 0, 8)
    head.writeInt32BE(correlationId, 8)
    const response = this.await(correlationId)
    this.socket.cork()
    this.socket.write(head)
    this.socket.write(frame.subarray(PREFIX))
    this.socket.uncork()
    return response
  }

  close(): void {
    this.failure ??= new Error("connection closed by the bench")
    this.socket.end()
  }
}

/** Decodes a response frame (no size prefix) of `api` at `version`, throwing on malformed bytes. */
export const decode = <Req extends Spec.Fields, Res extends Spec.Fields>(
  api: Api.ApiDef<Req, Res>,
  version: number,
  frame: Buffer
): Spec.StructType<Res> => {
  const r = Api.decodeResponse(api, version, frame)
  if (r._tag === "Left") throw new Error(`${r.left.what}: ${r.left.message}`)
  return r.right.body
}
