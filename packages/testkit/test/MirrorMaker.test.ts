import { describe, expect, it } from "@effect/vitest"
import * as MirrorMaker from "../src/MirrorMaker.js"

describe("MirrorMaker.mm2Properties", () => {
  const base = { source: "127.0.0.1:9092", target: "127.0.0.1:9093", topics: "bench-.*" }

  it("configures a one-way copy with identity names and every side feature off", () => {
    const p = MirrorMaker.mm2Properties(base)
    expect(p["clusters"]).toBe("source,target")
    expect(p["source.bootstrap.servers"]).toBe("127.0.0.1:9092")
    expect(p["target.bootstrap.servers"]).toBe("127.0.0.1:9093")
    expect(p["source->target.enabled"]).toBe(true)
    expect(p["source->target.topics"]).toBe("bench-.*")
    expect(p["target->source.enabled"]).toBe(false)
    expect(p["replication.policy.class"]).toBe(MirrorMaker.IDENTITY_REPLICATION_POLICY)
    for (const k of ["emit.heartbeats.enabled", "emit.checkpoints.enabled", "sync.topic.configs.enabled"])
      expect(p[k]).toBe(false)
    expect(p["tasks.max"]).toBe(2)
  })

  it("prefixes client settings with their cluster alias and lets explicit properties win", () => {
    const p = MirrorMaker.mm2Properties({
      ...base,
      sourceAlias: "A",
      targetAlias: "B",
      tasksMax: 4,
      targetProducer: { "compression.type": "lz4" },
      sourceConsumer: { "max.poll.records": 2000 },
      properties: { "replication.factor": 3 }
    })
    expect(p["A->B.topics"]).toBe("bench-.*")
    expect(p["B.producer.compression.type"]).toBe("lz4")
    expect(p["A.consumer.max.poll.records"]).toBe(2000)
    expect(p["tasks.max"]).toBe(4)
    expect(p["replication.factor"]).toBe(3)
    expect(p["target.producer.compression.type"]).toBeUndefined()
  })

  it("runs the dedicated MirrorMaker main class with the properties file last", () => {
    const args = MirrorMaker.commandLine("/libs", "/x/mm2.properties", { heap: "256m", jvmFlags: ["-Dx=1"] })
    expect(args.slice(-4)).toEqual(["-cp", "/libs/*", MirrorMaker.MAIN_CLASS, "/x/mm2.properties"])
    expect(args).toContain("-Xmx256m")
    expect(args).toContain("-Dx=1")
  })
})
