import { describe, expect, it } from "@effect/vitest"
import * as ApacheKafka from "../src/ApacheKafka.js"

const combined: ApacheKafka.NodeSpec = {
  nodeId: 1,
  roles: "broker,controller",
  port: 9092,
  controllerPort: 9093,
  quorum: "127.0.0.1:9093",
  logDir: "/data"
}

describe("ApacheKafka.nodeProperties", () => {
  it("given a combined node, then it listens on loopback for clients and the controller quorum", () => {
    const props = ApacheKafka.nodeProperties(combined, 1)
    expect(props).toMatchObject({
      "process.roles": "broker,controller",
      "node.id": 1,
      listeners: "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
      "controller.listener.names": "CONTROLLER",
      "controller.quorum.bootstrap.servers": "127.0.0.1:9093",
      "inter.broker.listener.name": "PLAINTEXT",
      "log.dirs": "/data",
      "offsets.topic.replication.factor": 1,
      "transaction.state.log.replication.factor": 1,
      "transaction.state.log.min.isr": 1,
      "group.initial.rebalance.delay.ms": 0
    })
  })

  it("given a controller-only node, then it has no client listener and no broker settings", () => {
    const props = ApacheKafka.nodeProperties({ ...combined, nodeId: 0, roles: "controller", port: undefined }, 3)
    expect(props["listeners"]).toBe("CONTROLLER://127.0.0.1:9093")
    expect(props["inter.broker.listener.name"]).toBeUndefined()
    expect(props["offsets.topic.replication.factor"]).toBeUndefined()
  })

  it("given a broker of a 3-node cluster, then internal topics are replicated 3 ways with min ISR 2", () => {
    const props = ApacheKafka.nodeProperties({ ...combined, roles: "broker", controllerPort: undefined }, 3)
    expect(props["listeners"]).toBe("PLAINTEXT://127.0.0.1:9092")
    expect(props["offsets.topic.replication.factor"]).toBe(3)
    expect(props["transaction.state.log.min.isr"]).toBe(2)
  })

  it("given extra properties, then they override the generated ones", () => {
    const props = ApacheKafka.nodeProperties(combined, 1, { "num.partitions": 6, "log.dirs": "/elsewhere" })
    expect(props["num.partitions"]).toBe(6)
    expect(props["log.dirs"]).toBe("/elsewhere")
  })
})

describe("ApacheKafka.nodeProperties with extra listeners", () => {
  it("given an SSL listener, then it is listened on, advertised and mapped to SSL, and PLAINTEXT stays inter-broker", () => {
    const props = ApacheKafka.nodeProperties(
      { ...combined, extraListeners: [{ name: "SSL", protocol: "SSL", port: 9094 }] },
      1
    )
    expect(props).toMatchObject({
      listeners: "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
      "advertised.listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
      "inter.broker.listener.name": "PLAINTEXT"
    })
  })
})
