/**
 * A channel to a peer that restarts: the connection it hands out is always an open one, so a replica
 * fetcher or any other user talks to the restarted peer instead of failing on the old socket forever.
 */
import { describe, expect, it } from "@effect/vitest"
import { ApiVersions } from "@clustermirror/protocol"
import { Channel } from "../src/Channel.js"
import { Handlers } from "../src/RequestChannel.js"
import * as SocketServer from "../src/SocketServer.js"

const serve = (port = 0) => {
  const handlers = new Handlers()
  handlers.register(ApiVersions.api, () => ({ errorCode: 0, apiKeys: handlers.versions() }))
  return SocketServer.start({
    host: "127.0.0.1",
    port,
    maxFrameBytes: 1 << 20,
    handle: handlers.frameHandler(() => {})
  })
}

describe("Channel", () => {
  it("reconnects to a peer that restarted on the same address", async () => {
    let server = await serve()
    const port = server.port
    const channel = new Channel("127.0.0.1", port, "test")
    try {
      const before = await channel.connection()
      expect(
        (await channel.request(ApiVersions.api, { clientSoftwareName: "t", clientSoftwareVersion: "1" })).errorCode
      ).toBe(0)
      await server.close()
      await new Promise<void>((resolve) => before.onClose(() => resolve()))
      server = await serve(port)
      const after = await channel.connection()
      expect(after).not.toBe(before)
      expect(after.isOpen).toBe(true)
      const res = await channel.request(ApiVersions.api, { clientSoftwareName: "t", clientSoftwareVersion: "1" })
      expect(res.errorCode).toBe(0)
    } finally {
      channel.close()
      await server.close()
    }
  })
})
