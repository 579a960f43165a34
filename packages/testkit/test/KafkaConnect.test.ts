import { describe, expect, it } from "@effect/vitest"
import * as KafkaConnect from "../src/KafkaConnect.js"

describe("KafkaConnect.workerProperties", () => {
  it("configures a distributed worker with exactly-once source support and replicated internal topics", () => {
    const p = KafkaConnect.workerProperties({ bootstrap: "127.0.0.1:9092,127.0.0.1:9093", groupId: "g" }, 8083)
    expect(p["bootstrap.servers"]).toBe("127.0.0.1:9092,127.0.0.1:9093")
    expect(p["group.id"]).toBe("g")
    expect(p["exactly.once.source.support"]).toBe("enabled")
    expect([p["config.storage.topic"], p["offset.storage.topic"], p["status.storage.topic"]]).toEqual([
      "g-configs",
      "g-offsets",
      "g-status"
    ])
    for (const k of ["config", "offset", "status"]) expect(p[`${k}.storage.replication.factor`]).toBe(3)
    expect(p["listeners"]).toBe("http://127.0.0.1:8083")
    expect(p["rest.advertised.port"]).toBe(8083)
  })

  it("lets options and explicit properties win over the generated ones", () => {
    const p = KafkaConnect.workerProperties(
      {
        bootstrap: "b:1",
        exactlyOnceSourceSupport: "disabled",
        replicationFactor: 1,
        offsetTopic: "offs",
        properties: { "consumer.isolation.level": "read_committed", "offset.flush.interval.ms": 200 }
      },
      1
    )
    expect(p["group.id"]).toBe("connect")
    expect(p["exactly.once.source.support"]).toBe("disabled")
    expect(p["offset.storage.topic"]).toBe("offs")
    expect(p["config.storage.topic"]).toBe("connect-configs")
    expect(p["status.storage.replication.factor"]).toBe(1)
    expect(p["consumer.isolation.level"]).toBe("read_committed")
    expect(p["offset.flush.interval.ms"]).toBe(200)
  })
})
