import { describe, expect, it } from "vitest"
import * as MirrorLag from "../src/MirrorLag.js"

describe("MirrorLag", () => {
  const part = (partition: number) => ({ mirror: "dr", topic: "orders", partition, state: "MIRRORING" as const })

  it("samples the fetchers' lag, and none for a partition whose source position is not known yet", async () => {
    const fetched = new Map([
      [0, { lag: 3, lagMs: 1500 }],
      [1, { lag: 0, lagMs: 0 }],
      // added, the source not answered yet
      [2, { lag: -1, lagMs: 200 }]
    ])
    const port: MirrorLag.LagPort = {
      fetcherLag: (_mirror, _topic, partition) => fetched.get(partition),
      highWatermark: () => undefined,
      source: () => {
        throw new Error("partitions being fetched never ask the source")
      }
    }
    const lag = new MirrorLag.MirrorLag(port, () => 10_000)
    const samples = await lag.sample([part(0), part(1), part(2)])
    expect(samples).toEqual([
      { ...part(0), lag: { records: 3, seconds: 1.5 } },
      { ...part(1), lag: { records: 0, seconds: 0 } },
      part(2)
    ])
  })
})
