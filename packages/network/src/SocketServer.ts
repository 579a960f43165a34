/**
 * The Kafka API socket server: a TCP or TLS listener, size-prefixed framing, and per-connection ordering.
 *
 * A TLS listener (SSL, and the transport of SASL_SSL) completes the handshake before a connection
 * exists; a failed handshake, or a client speaking plaintext to it, closes only that socket with one
 * rate-limited log line. With a client certificate, the connection's principal is `User:` and the
 * certificate's subject as `principalOf` maps it.
 *
 * Clients may pipeline requests; like Kafka, a connection's requests are processed one at a time in
 * arrival order, so responses leave in request order. Malformed input never crashes the server: a bad
 * frame closes only the offending connection, and the log says so for at most `closeLogLimit.maxLines`
 * connections per interval (then one "suppressed N more" line), so bad input cannot flood the log.
 * Knows nothing about what a request means: it hands frames to a `FrameHandler`. Connection quotas
 * are an `admit` hook's (Kafka's `ConnectionQuotas`): a new connection it throttles is held unread for
 * the throttle time and then closed, never served.
 */
import { Header } from "@clustermirror/protocol"
import { Either } from "effect"
import type * as crypto from "node:crypto"
import * as net from "node:net"
import * as tls from "node:tls"
import * as RateLimitedLog from "./RateLimitedLog.js"

/** Kafka's security protocols (`listener.security.protocol.map` values). */
export type SecurityProtocol = "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL"

/** The principal of a connection that has not authenticated (Kafka's `User:ANONYMOUS`). */
export const ANONYMOUS = "User:ANONYMOUS"

export interface Connection {
  readonly id: number
  readonly remoteHost: string
  readonly remotePort: number
  /** The listener the connection came in on (e.g. `PLAINTEXT`, `SASL_SSL`, `CONTROLLER`). */
  readonly listenerName: string
  readonly securityProtocol: SecurityProtocol
  /**
   * Who the connection acts as, `User:<name>` in Kafka's form: `User:ANONYMOUS` on PLAINTEXT, the mapped
   * certificate subject on SSL with client authentication, the SASL user once SASL has succeeded.
   */
  principal: string
}

/** What the handler asks the server to do with a request frame. */
export type FrameResult =
  | {
      readonly _tag: "Respond"
      readonly chunks: ReadonlyArray<Buffer>
      /** Close the connection once the response is written (e.g. after a failed authentication). */
      readonly closeAfter?: string
      /** Read no further request of the connection for this long once the response is written (a quota's throttle). */
      readonly muteMs?: number
    }
  | { readonly _tag: "NoResponse"; readonly muteMs?: number }
  | { readonly _tag: "Close"; readonly reason: string }

export type FrameHandler = (frame: Buffer, connection: Connection) => FrameResult | Promise<FrameResult>

export interface SocketServerOptions {
  readonly host: string
  readonly port: number
  readonly maxFrameBytes: number
  readonly handle: FrameHandler
  /** The listener's name, reported on each connection (default `PLAINTEXT`). */
  readonly listenerName?: string
  /** The listener's protocol, reported on each connection (default `PLAINTEXT`; SSL and SASL_SSL need `tls`). */
  readonly securityProtocol?: SecurityProtocol
  /** TLS for the listener: Node's server options, and how a client certificate's subject becomes a principal. */
  readonly tls?: {
    readonly options: tls.TlsOptions
    /** The principal name for a subject in RFC 2253 form (`CN=client,OU=test`), or null when no rule applies. */
    readonly principalOf: (subject: string) => string | null
  }
  readonly log?: (line: string) => void
  /** How many "closing connection" lines per interval reach the log (default 10 per 10 s). */
  readonly closeLogLimit?: RateLimitedLog.RateLimitOptions
  /**
   * Asked once for each new connection, by its remote address: 0 admits it; a positive number of
   * milliseconds holds it unread that long and then closes it (a connection over its IP's rate quota).
   */
  readonly admit?: (remoteHost: string) => number
}

export interface SocketServer {
  readonly port: number
  readonly host: string
  readonly connections: () => number
  readonly close: () => Promise<void>
}

/** A certificate's subject in RFC 2253 form, most specific first (`CN=client,OU=test,O=example`), as Java prints it. */
export const rfc2253 = (cert: crypto.X509Certificate): string =>
  cert.subject
    .split("\n")
    .filter((l) => l !== "")
    .reverse()
    .join(",")

/** Frames queued on one connection before it stops reading (backpressure). */
const MAX_QUEUED_FRAMES = 64

export const start = (options: SocketServerOptions): Promise<SocketServer> =>
  new Promise((resolve, reject) => {
    const log = options.log ?? (() => {})
    const closeLog = RateLimitedLog.make(log, { what: "closed connections", ...options.closeLogLimit })
    const sockets = new Set<net.Socket>()
    // A TLS listener's TCP sockets, from before their handshake: close() ends these too.
    const raw = new Set<net.Socket>()
    let nextId = 0
    const securityProtocol = options.securityProtocol ?? "PLAINTEXT"
    const secured = securityProtocol === "SSL" || securityProtocol === "SASL_SSL"
    if (secured !== (options.tls !== undefined))
      return reject(
        new Error(
          `listener ${options.listenerName ?? "PLAINTEXT"}: ${securityProtocol} ${secured ? "needs" : "takes no"} TLS options`
        )
      )
    const onConnection = (socket: net.Socket) => {
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
      const delayMs = options.admit?.(socket.remoteAddress ?? "unknown") ?? 0
      if (delayMs > 0) {
        // Kafka's throttled connection: never read, closed once the throttle time is over.
        socket.pause()
        socket.on("error", () => {})
        const timer = setTimeout(() => {
          closeLog.log(
            `closing connection ${socket.remoteAddress}:${socket.remotePort}: connection creation rate quota exceeded, held ${delayMs} ms`
          )
          socket.destroy()
        }, delayMs)
        socket.once("close", () => clearTimeout(timer))
        return
      }
      let principal = ANONYMOUS
      if (socket instanceof tls.TLSSocket) {
        const cert = socket.getPeerX509Certificate()
        if (cert !== undefined) {
          const subject = rfc2253(cert)
          if (!socket.authorized) {
            closeLog.log(
              `closing connection ${socket.remoteAddress}:${socket.remotePort}: client certificate ${subject} not trusted (${String(socket.authorizationError)})`
            )
            socket.destroy()
            return
          }
          const name = options.tls!.principalOf(subject)
          if (name === null) {
            closeLog.log(
              `closing connection ${socket.remoteAddress}:${socket.remotePort}: no ssl.principal.mapping.rules rule applies to ${subject}`
            )
            socket.destroy()
            return
          }
          principal = `User:${name}`
        }
      }
      const connection: Connection = {
        id: nextId++,
        remoteHost: socket.remoteAddress ?? "unknown",
        remotePort: socket.remotePort ?? 0,
        listenerName: options.listenerName ?? "PLAINTEXT",
        securityProtocol,
        principal
      }
      const decoder = new Header.FrameDecoder(options.maxFrameBytes)
      const queue: Buffer[] = []
      let busy = false
      let closed = false
      let muted = false

      const close = (reason: string) => {
        if (closed) return
        closed = true
        closeLog.log(`closing connection ${connection.remoteHost}:${connection.remotePort}: ${reason}`)
        socket.destroy()
      }

      const write = (chunks: ReadonlyArray<Buffer>) => {
        socket.cork()
        for (const c of chunks) socket.write(c)
        socket.uncork()
      }

      const pump = async () => {
        busy = true
        try {
          while (queue.length > 0 && !closed) {
            const frame = queue.shift()!
            let result: FrameResult
            try {
              const r = options.handle(frame, connection)
              result = r instanceof Promise ? await r : r
            } catch (e) {
              result = {
                _tag: "Close",
                reason: `handler failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`
              }
            }
            if (closed) return
            if (result._tag === "Close") return close(result.reason)
            if (result._tag === "Respond") {
              write(result.chunks)
              if (result.closeAfter !== undefined) {
                closed = true
                closeLog.log(
                  `closing connection ${connection.remoteHost}:${connection.remotePort}: ${result.closeAfter}`
                )
                socket.end(() => socket.destroy())
                return
              }
              if (socket.writableNeedDrain)
                await new Promise<void>((resolve) => {
                  const done = () => {
                    socket.off("drain", done).off("close", done)
                    resolve()
                  }
                  socket.once("drain", done).once("close", done)
                })
            }
            if (result.muteMs !== undefined && result.muteMs > 0) {
              // Muted as Kafka mutes a throttled channel: nothing more is read until the time is up.
              muted = true
              socket.pause()
              await new Promise<void>((resolve) => {
                const done = () => {
                  clearTimeout(timer)
                  socket.off("close", done)
                  resolve()
                }
                const timer = setTimeout(done, result.muteMs)
                socket.once("close", done)
              })
              muted = false
              if (closed) return
            }
            if (socket.isPaused() && queue.length < MAX_QUEUED_FRAMES / 2) socket.resume()
          }
        } finally {
          busy = false
        }
      }

      socket.on("data", (chunk: Buffer) => {
        const frames = decoder.push(chunk)
        if (Either.isLeft(frames)) return close(frames.left.message)
        if (frames.right.length === 0) return
        for (const f of frames.right) queue.push(f)
        if (queue.length >= MAX_QUEUED_FRAMES || muted) socket.pause()
        if (!busy) void pump()
      })
      socket.on("error", () => close("socket error"))
      socket.on("close", () => {
        closed = true
        sockets.delete(socket)
      })
    }
    let server: net.Server
    if (options.tls === undefined) server = net.createServer({ noDelay: true }, onConnection)
    else {
      const tlsServer = tls.createServer({ ...options.tls.options, noDelay: true }, onConnection)
      tlsServer.on("connection", (socket: net.Socket) => {
        raw.add(socket)
        socket.once("close", () => raw.delete(socket))
      })
      tlsServer.on("tlsClientError", (err, socket) => {
        closeLog.log(
          `closing connection ${socket.remoteAddress ?? "unknown"}:${socket.remotePort ?? 0}: TLS handshake failed: ${err.message}`
        )
        socket.destroy()
      })
      server = tlsServer
    }
    server.on("error", reject)
    server.listen(options.port, options.host, () => {
      const addr = server.address() as net.AddressInfo
      server.off("error", reject)
      server.on("error", (e) => log(`server error: ${e.message}`))
      resolve({
        port: addr.port,
        host: options.host,
        connections: () => sockets.size,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy()
            for (const s of raw) s.destroy()
            closeLog.flush()
            server.close(() => done())
          })
      })
    })
  })
