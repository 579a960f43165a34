import { ApiVersions, Metadata } from "@clustermirror/protocol"
import { Ports } from "@clustermirror/testkit"
import { describe, expect, it } from "@effect/vitest"
import { ConnectionError } from "../src/ClientError.js"
import { NodePool } from "../src/NodePool.js"
import { SecurityConfigError } from "../src/Security.js"
import * as Fake from "./FakeBroker.js"

describe("NodePool", () => {
  it("opens lazily, shares one connection per address, and reopens after a disconnect", async () => {
    const fake = await Fake.start((req) => {
      if (req.apiKey === ApiVersions.api.key) Fake.answerApiVersions(req)
    })
    const pool = new NodePool({ reconnectBackoffMs: 10 })
    try {
      pool.setNode(7, { host: "127.0.0.1", port: fake.port })
      expect(fake.seen.length).toBe(0)
      const [a, b] = await Promise.all([pool.getNode(7), pool.get({ host: "127.0.0.1", port: fake.port })])
      expect(a).toBe(b)
      expect(fake.seen.filter((s) => s.apiKey === ApiVersions.api.key).length).toBe(1)
      const closed = new Promise<void>((resolve) => a.onClose(() => resolve()))
      fake.dropClients()
      await closed
      const c = await pool.getNode(7)
      expect(c).not.toBe(a)
      expect(c.isOpen).toBe(true)
      expect(pool.load({ host: "127.0.0.1", port: fake.port }).inFlight).toBe(0)
      const pending = c.call(Metadata.api, { topics: [] }, { timeoutMs: 5000 }).catch(() => undefined)
      expect(pool.load({ host: "127.0.0.1", port: fake.port }).inFlight).toBe(1)
      void pending
    } finally {
      await pool.close()
      await fake.close()
    }
  })

  it("backs off exponentially between failed connects", async () => {
    const port = await Ports.freePort()
    const pool = new NodePool({ reconnectBackoffMs: 200, reconnectBackoffMaxMs: 1000 })
    try {
      const address = { host: "127.0.0.1", port }
      await expect(pool.get(address)).rejects.toBeInstanceOf(ConnectionError)
      expect(pool.load(address).backingOff).toBe(true)
      const started = Date.now()
      await expect(pool.get(address)).rejects.toBeInstanceOf(ConnectionError)
      // The second attempt waited out the first backoff (200 ms, jitter 20%).
      expect(Date.now() - started).toBeGreaterThanOrEqual(150)
    } finally {
      await pool.close()
    }
  })

  it("asks a security function at each connect; when it throws, the connect fails with its message and nothing is sent", async () => {
    const fake = await Fake.start((req) => {
      if (req.apiKey === ApiVersions.api.key) Fake.answerApiVersions(req)
    })
    let usable = false
    const pool = new NodePool({
      reconnectBackoffMs: 1,
      security: () => {
        if (!usable)
          throw new SecurityConfigError({
            key: "ssl.truststore.location",
            reason: "cannot read /nowhere/ca.pem (ENOENT)"
          })
        return {}
      }
    })
    try {
      const address = { host: "127.0.0.1", port: fake.port }
      const failed = await pool.get(address).catch((e: unknown) => e)
      expect(failed).toBeInstanceOf(ConnectionError)
      expect(failed instanceof ConnectionError && failed.message).toBe(
        `connect to 127.0.0.1:${fake.port}: ssl.truststore.location: cannot read /nowhere/ca.pem (ENOENT)`
      )
      expect(fake.seen.length).toBe(0)
      usable = true
      expect((await pool.get(address)).isOpen).toBe(true)
    } finally {
      await pool.close()
      await fake.close()
    }
  })
})
