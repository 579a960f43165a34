/**
 * Server properties: the listener model (names, protocols, advertised endpoints, the inter-broker and
 * controller listeners) as Kafka 4 builds it, and the refusals of what is not implemented (SASL).
 */
import { describe, expect, it } from "vitest"
import * as BrokerConfig from "../src/BrokerConfig.js"

const parse = (entries: Record<string, string>) => () => BrokerConfig.fromProperties(new Map(Object.entries(entries)))

describe("BrokerConfig listeners", () => {
  it("keeps the one-listener configs meaning what they meant", () => {
    const c = parse({ listeners: "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093" })()
    expect([c.host, c.port, c.advertisedHost, c.controllerHost, c.controllerPort]).toEqual([
      "127.0.0.1",
      9092,
      "127.0.0.1",
      "127.0.0.1",
      9093
    ])
    expect(c.interBrokerListenerName).toBe("PLAINTEXT")
    expect(c.listeners.map((l) => `${l.name}:${l.securityProtocol}`)).toEqual([
      "PLAINTEXT:PLAINTEXT",
      "CONTROLLER:PLAINTEXT"
    ])
    const bare = parse({ listeners: "0.0.0.0:9092" })()
    expect([bare.listeners[0]?.name, bare.host, bare.advertisedHost]).toEqual(["PLAINTEXT", "0.0.0.0", "127.0.0.1"])
  })

  it("maps any listener name through listener.security.protocol.map, names upper-cased", () => {
    const c = parse({
      listeners: "internal://127.0.0.1:9092,EXTERNAL://0.0.0.0:9094,CONTROLLER://127.0.0.1:9093",
      "advertised.listeners": "INTERNAL://broker-1:9092,EXTERNAL://kafka.example.com:19094",
      "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
      "inter.broker.listener.name": "internal"
    })()
    expect(c.listeners.map((l) => l.name)).toEqual(["INTERNAL", "EXTERNAL", "CONTROLLER"])
    expect(c.interBrokerListenerName).toBe("INTERNAL")
    expect([c.host, c.port, c.advertisedHost]).toEqual(["127.0.0.1", 9092, "broker-1"])
    expect(BrokerConfig.advertisedOf(c).map((l) => `${l.name}://${l.host}:${l.port}`)).toEqual([
      "INTERNAL://broker-1:9092",
      "EXTERNAL://kafka.example.com:19094"
    ])
  })

  it("uses Kafka's default map, and maps the controller listeners to PLAINTEXT only while nothing uses TLS or SASL", () => {
    expect(parse({ listeners: "SSL://127.0.0.1:9093" })().listeners[0]?.securityProtocol).toBe("SSL")
    // Kafka 4: with the map left at its default, CONTROLLER gets PLAINTEXT unless an SSL or SASL listener is in use.
    expect(parse({ "process.roles": "controller", listeners: "CONTROLLER://127.0.0.1:9093" })().controllerPort).toBe(
      9093
    )
    expect(
      parse({
        "process.roles": "broker",
        listeners: "SSL://127.0.0.1:9092",
        "ssl.keystore.location": "/k.pem"
      })
    ).toThrow("controller.listener.names: listener CONTROLLER is not in listener.security.protocol.map")
    expect(parse({ listeners: "EXTERNAL://127.0.0.1:9092" })).toThrow(
      "listeners: no security protocol defined for listener EXTERNAL in listener.security.protocol.map"
    )
    expect(parse({ "listener.security.protocol.map": "CONTROLLER:TLS" })).toThrow("expected NAME:PROTOCOL entries")
  })

  it("picks the inter-broker listener by name or by security.inter.broker.protocol, and refuses both or a missing one", () => {
    const two = { listeners: "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093", "ssl.keystore.location": "/k.pem" }
    expect(parse(two)().interBrokerListenerName).toBe("PLAINTEXT")
    const ssl = parse({ ...two, "security.inter.broker.protocol": "SSL" })()
    expect([ssl.interBrokerListenerName, ssl.port]).toEqual(["SSL", 9093])
    expect(parse({ ...two, "inter.broker.listener.name": "SSL", "security.inter.broker.protocol": "SSL" })).toThrow(
      "only one of inter.broker.listener.name and security.inter.broker.protocol may be set"
    )
    expect(parse({ ...two, "inter.broker.listener.name": "OTHER" })).toThrow(
      "inter.broker.listener.name=OTHER: no such listener"
    )
    expect(
      parse({ listeners: "SSL://127.0.0.1:9093", "ssl.keystore.location": "/k.pem" })().interBrokerListenerName
    ).toBe("SSL")
  })

  it("refuses advertised listeners that are not listeners, and duplicate names", () => {
    expect(parse({ listeners: "PLAINTEXT://a:1", "advertised.listeners": "SSL://a:2" })).toThrow(
      "advertised.listeners: listener SSL is not in listeners"
    )
    expect(parse({ listeners: "PLAINTEXT://a:1,PLAINTEXT://a:2" })).toThrow("listener PLAINTEXT is named twice")
  })

  it("refuses SASL listeners and sasl. keys in one place, with one reason", () => {
    for (const name of ["SASL_SSL", "SASL_PLAINTEXT"])
      expect(parse({ listeners: `${name}://127.0.0.1:9093` })).toThrow(
        `listener ${name} is ${name}, which is not supported: ${BrokerConfig.SASL_NOT_IMPLEMENTED}`
      )
    expect(
      parse({
        "process.roles": "broker",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
        "controller.listener.names": "CONTROLLER"
      })
    ).toThrow(
      `controller.listener.names: listener CONTROLLER is SASL_SSL, which is not supported: ${BrokerConfig.SASL_NOT_IMPLEMENTED}`
    )
    for (const key of [
      "sasl.enabled.mechanisms",
      "listener.name.external.sasl.enabled.mechanisms",
      "listener.name.x.plain.sasl.jaas.config"
    ])
      expect(parse({ [key]: "x" })).toThrow(
        `broker config "${key}" is not supported: ${BrokerConfig.SASL_NOT_IMPLEMENTED}`
      )
    expect(parse({ "no.such.key": "x" })).toThrow('unknown broker config "no.such.key"')
    expect(parse({ "listener.name.internal.max.connections": "5" })).toThrow(
      "only ssl.* settings take a listener.name.<listener>. prefix"
    )
  })
})

describe("BrokerConfig authorizer settings", () => {
  const STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
  const parse = (entries: Record<string, string>) => BrokerConfig.fromProperties(new Map(Object.entries(entries)))

  it("has no authorizer by default and enables the StandardAuthorizer by its class name", () => {
    expect(parse({}).authorizer).toBeNull()
    const cfg = parse({
      "authorizer.class.name": STANDARD,
      "super.users": "User:admin;User:broker",
      "allow.everyone.if.no.acl.found": "true"
    })
    expect(cfg.authorizer).toEqual({
      superUsers: new Set(["User:admin", "User:broker"]),
      allowEveryoneIfNoAclFound: true
    })
    expect(parse({ "authorizer.class.name": STANDARD }).authorizer).toEqual({
      superUsers: new Set(),
      allowEveryoneIfNoAclFound: false
    })
  })

  it("refuses other authorizers, bad principals, and authorizer settings without an authorizer, naming the key", () => {
    expect(() => parse({ "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer" })).toThrow(
      /authorizer.class.name=kafka.security.authorizer.AclAuthorizer: only org.apache.kafka.metadata.authorizer.StandardAuthorizer/
    )
    expect(() => parse({ "authorizer.class.name": STANDARD, "super.users": "admin" })).toThrow(/super.users=admin/)
    expect(() => parse({ "super.users": "User:admin" })).toThrow(/"super.users" needs authorizer.class.name/)
    expect(() => parse({ "allow.everyone.if.no.acl.found": "true" })).toThrow(
      /"allow.everyone.if.no.acl.found" needs authorizer.class.name/
    )
  })
})

describe("BrokerConfig", () => {
  it("has Kafka's leader rebalance defaults", () => {
    expect(BrokerConfig.defaults).toMatchObject({
      autoLeaderRebalanceEnable: true,
      leaderImbalanceCheckIntervalSeconds: 300,
      leaderImbalancePerBrokerPercentage: 10
    })
  })

  it("parses the leader rebalance settings and refuses bad values", () => {
    const c = BrokerConfig.fromProperties(
      new Map([
        ["auto.leader.rebalance.enable", "false"],
        ["leader.imbalance.check.interval.seconds", "5"],
        ["leader.imbalance.per.broker.percentage", "0"]
      ])
    )
    expect(c).toMatchObject({
      autoLeaderRebalanceEnable: false,
      leaderImbalanceCheckIntervalSeconds: 5,
      leaderImbalancePerBrokerPercentage: 0
    })
    expect(() => BrokerConfig.fromProperties(new Map([["leader.imbalance.check.interval.seconds", "0"]]))).toThrow(
      /leader.imbalance.check.interval.seconds/
    )
    expect(() => BrokerConfig.fromProperties(new Map([["leader.imbalance.per.broker.percentage", "101"]]))).toThrow(
      /leader.imbalance.per.broker.percentage/
    )
    expect(() => BrokerConfig.fromProperties(new Map([["auto.leader.rebalance.enable", "yes"]]))).toThrow(
      /auto.leader.rebalance.enable/
    )
  })
})
