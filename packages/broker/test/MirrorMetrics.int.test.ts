import { describe, expect, it } from "vitest"
import { MirrorMetrics } from "@clustermirror/mirror"

describe("MirrorMetrics endpoint", () => {
  it("serves the exposition over HTTP at /metrics and nothing else", async () => {
    const m = new MirrorMetrics.MirrorMetrics()
    m.mirrorKnown("dr")
    m.fetched("dr", 7, 1)
    const server = await MirrorMetrics.serve(m, { host: "127.0.0.1", port: 0 })
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toBe(MirrorMetrics.CONTENT_TYPE)
      expect(await res.text()).toContain('clustermirror_mirror_fetched_bytes_total{mirror="dr"} 7\n')
      expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404)
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: "POST" })).status).toBe(405)
    } finally {
      await server.close()
    }
  })
})
