/**
 * Readiness probe: one ApiVersions round trip over a fresh TCP connection. A Kafka listener that answers
 * it with error code 0 is accepting requests, which is what a test needs before it points a client at it.
 *
 * It owns only the probe connection, which it always closes.
 */
import { connect } from "node:net"
import { Api, ApiVersions, Header } from "@clustermirror/protocol"
import { Either } from "effect"

/** v3 is the first flexible version; every Kafka since 2.4 and our broker answer it. */
const PROBE_VERSION = 3

/** Whether `host:port` answered an ApiVersions request with error code 0 within `timeoutMs`. */
export const probe = (host: string, port: number, timeoutMs: number): Promise<boolean> =>
  new Promise((resolve) => {
    const request = Api.encodeRequest(ApiVersions.api, PROBE_VERSION, 1, "clustermirror-testkit-probe", {
      clientSoftwareName: "clustermirror-testkit",
      clientSoftwareVersion: "0"
    })
    if (Either.isLeft(request)) {
      resolve(false)
      return
    }
    const socket = connect({ host, port })
    const frames = new Header.FrameDecoder()
    let done = false
    const finish = (ok: boolean): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => finish(false), timeoutMs)
    socket.once("error", () => finish(false))
    socket.once("close", () => finish(false))
    socket.once("connect", () => socket.write(request.right))
    socket.on("data", (chunk: Buffer) => {
      const decoded = frames.push(chunk)
      if (Either.isLeft(decoded)) return finish(false)
      const frame = decoded.right[0]
      if (frame === undefined) return
      const response = Api.decodeResponse(ApiVersions.api, PROBE_VERSION, frame)
      finish(Either.isRight(response) && response.right.body.errorCode === 0)
    })
  })

/**
 * Probes until the listener answers or `isDead()` says the process behind it is gone; resolves with
 * whether it answered before `deadline` (epoch ms).
 */
export const awaitListener = async (
  host: string,
  port: number,
  deadline: number,
  isDead: () => boolean
): Promise<boolean> => {
  for (;;) {
    if (isDead()) return false
    if (await probe(host, port, 2_000)) return true
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 200))
  }
}
