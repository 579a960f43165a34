/**
 * A scripted Kafka peer for integration tests: a TCP server that decodes request headers and lets
 * each test answer (or not) as it likes, to provoke what a real broker does rarely (leader moves,
 * unsupported versions, silence, disconnects).
 */
import { Api, Apis, ApiVersions, Header, type Spec } from "@clustermirror/protocol"
import { Either } from "effect"
import * as net from "node:net"

export interface Incoming {
  readonly apiKey: number
  readonly apiVersion: number
  readonly correlationId: number
  readonly frame: Buffer
  readonly socket: net.Socket
}

export interface FakeBroker {
  readonly port: number
  readonly seen: Array<{ apiKey: number; apiVersion: number }>
  /** Destroys every client socket. */
  readonly dropClients: () => void
  readonly close: () => Promise<void>
}

/** Writes a response frame for `api` at `version`. */
export const respond = <Req extends Spec.Fields, Res extends Spec.Fields>(
  req: Incoming,
  api: Api.ApiDef<Req, Res>,
  version: number,
  body: Spec.StructInput<Res>
): void => {
  const chunks = Either.getOrThrow(Api.encodeResponseChunks(api, version, req.correlationId, body))
  req.socket.write(Buffer.concat(chunks))
}

/** Decodes the body of a request whose API the test knows. */
export const decode = <Req extends Spec.Fields, Res extends Spec.Fields>(req: Incoming, api: Api.ApiDef<Req, Res>) =>
  Either.getOrThrow(Api.decodeRequest(api, req.frame)).body

export type VersionTable = ReadonlyArray<{ apiKey: number; minVersion: number; maxVersion: number }>

/** Every API we define, at our full ranges. */
export const fullTable: VersionTable = Apis.all.map((a) => ({
  apiKey: a.key,
  minVersion: a.minVersion,
  maxVersion: a.maxVersion
}))

/** Answers ApiVersions with `table` at the version asked. */
export const answerApiVersions = (req: Incoming, table: VersionTable = fullTable): void =>
  respond(req, ApiVersions.api, req.apiVersion, { errorCode: 0, apiKeys: table })

/** Starts a fake broker on a free loopback port; `handle` sees every request frame. */
export const start = (handle: (req: Incoming) => void): Promise<FakeBroker> => {
  const sockets = new Set<net.Socket>()
  const seen: Array<{ apiKey: number; apiVersion: number }> = []
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.on("error", () => {})
    const frames = new Header.FrameDecoder()
    socket.on("data", (chunk) => {
      const r = frames.push(chunk)
      if (Either.isLeft(r)) return socket.destroy()
      for (const frame of r.right) {
        const h = Either.getOrThrow(Header.peekRequestHeader(frame))
        seen.push({ apiKey: h.apiKey, apiVersion: h.apiVersion })
        handle({ ...h, frame, socket })
      }
    })
  })
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address === null || typeof address === "string") throw new Error("no port")
      resolve({
        port: address.port,
        seen,
        dropClients: () => {
          for (const s of sockets) s.destroy()
        },
        close: () =>
          new Promise<void>((res) => {
            for (const s of sockets) s.destroy()
            server.close(() => res())
          })
      })
    })
  )
}
