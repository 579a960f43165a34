/**
 * Server properties: TLS and SASL are not implemented, so every setting that asks for them is refused
 * with a message naming it, instead of being accepted while the listener speaks plaintext.
 */
import { describe, expect, it } from "vitest"
import * as BrokerConfig from "../src/BrokerConfig.js"

const parse = (entries: Record<string, string>) => () => BrokerConfig.fromProperties(new Map(Object.entries(entries)))

const REFUSED = "TLS and SASL are not implemented yet: listeners are PLAINTEXT only"

describe("BrokerConfig security settings", () => {
  it("refuses SSL and SASL listeners", () => {
    for (const name of ["SSL", "SASL_SSL", "SASL_PLAINTEXT"]) {
      expect(parse({ listeners: `${name}://127.0.0.1:9093` })).toThrow(
        `listeners=${name}://127.0.0.1:9093: listener ${name} is not supported: ${REFUSED}`
      )
      expect(parse({ "advertised.listeners": `PLAINTEXT://a:9092,${name}://a:9093` })).toThrow(
        `listener ${name} is not supported`
      )
    }
  })

  it("refuses a protocol map with anything but PLAINTEXT, and accepts one that maps every listener to it", () => {
    expect(parse({ "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,EXTERNAL:SASL_SSL" })).toThrow(
      `SASL_SSL for listener EXTERNAL is not supported: ${REFUSED}`
    )
    expect(parse({ "listener.security.protocol.map": "CONTROLLER:TLS" })).toThrow("expected NAME:PROTOCOL entries")
    const cfg = parse({
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
      listeners: "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    })()
    expect([cfg.port, cfg.controllerPort]).toEqual([9092, 9093])
  })

  it("refuses ssl., sasl. and security. keys with that reason, and other unknown keys as unknown", () => {
    for (const key of [
      "ssl.keystore.location",
      "sasl.enabled.mechanisms",
      "security.inter.broker.protocol",
      "listener.name.external.ssl.keystore.location",
      "listener.name.external.sasl.enabled.mechanisms"
    ])
      expect(parse({ [key]: "x" })).toThrow(`broker config "${key}" is not supported: ${REFUSED}`)
    expect(parse({ "no.such.key": "x" })).toThrow('unknown broker config "no.such.key"')
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
