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

  it("never hands out a block that another socket holds a port of, nor one it handed out already", async () => {
    const first = await Ports.freePort()
    const taken = await bind(first + 3)
    try {
      const next = await Ports.freePorts(20)
      expect(next).not.toContain(first)
      for (const p of next) expect(p <= first + 3 && first + 3 < p + Ports.BLOCK).toBe(false)
    } finally {
      await taken()
    }
  })
})
