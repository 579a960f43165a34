/**
 * Free TCP ports on loopback for test peers. A port is free at the moment it is handed out; the caller
 * binds it soon after. Ports asked for together are distinct, because they are held open until all of
 * them are known.
 *
 * It owns only the short-lived probe sockets it opens.
 */
import { createServer, type Server } from "node:net"

const LOOPBACK = "127.0.0.1"

const listen = (): Promise<{ server: Server; port: number }> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once("error", reject)
    server.listen(0, LOOPBACK, () => {
      const address = server.address()
      if (address === null || typeof address === "string") {
        server.close()
        reject(new Error("no port assigned"))
        return
      }
      resolve({ server, port: address.port })
    })
  })

const close = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()))

/** `count` distinct ports that were free a moment ago on 127.0.0.1. */
export const freePorts = async (count: number): Promise<ReadonlyArray<number>> => {
  const held: Array<{ server: Server; port: number }> = []
  try {
    for (let i = 0; i < count; i++) held.push(await listen())
    return held.map((h) => h.port)
  } finally {
    await Promise.all(held.map((h) => close(h.server)))
  }
}

/** One port that was free a moment ago on 127.0.0.1. */
export const freePort = async (): Promise<number> => (await freePorts(1))[0]!
