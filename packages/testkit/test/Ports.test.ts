import { createServer } from "node:net"
import { describe, expect, it } from "vitest"
import * as Ports from "../src/Ports.js"

const bind = (port: number): Promise<() => Promise<void>> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve(() => new Promise((done) => server.close(() => done()))))
  })

describe("Ports", () => {
  it("hands out distinct ports below the ephemeral range, each with its whole block bindable", async () => {
    const ports = await Ports.freePorts(6)
    expect(new Set(ports).size).toBe(6)
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(20_000)
      expect(p).toBeLessThan(32_768)
      expect(p % Ports.BLOCK).toBe(0)
    }
    // Every port of every block binds (an embedded cluster's brokers and metrics ports use them).
    const closers = []
    for (const p of ports) for (let i = 0; i < Ports.BLOCK; i++) closers.push(await bind(p + i))
    await Promise.all(closers.map((c) => c()))
  })

  it("passes over a block one of whose ports another socket holds, and a block it handed out already", async () => {
    const first = await Ports.freePort()
    // Three blocks after `first`: the next one has a port taken in its middle, so it must be passed over.
    const busyBlock = first + Ports.BLOCK
    const freeBlock = first + 2 * Ports.BLOCK
    const taken = await bind(busyBlock + 3)
    try {
      const proposals = [first, busyBlock, freeBlock]
      const [port] = await Ports.freePorts(1, () => proposals.shift() ?? freeBlock)
      expect(port).toBe(freeBlock)
    } finally {
      await taken()
    }
  })
})
