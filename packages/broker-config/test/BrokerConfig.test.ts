/**
 * Server properties: SASL_PLAINTEXT listeners with PLAIN and SCRAM are served; TLS is not implemented, so
 * every setting that asks for it (and every SASL setting we do not implement) is refused with a message
 * naming it, instead of being accepted while the listener does something else.
 */
import { describe, expect, it } from "vitest"
import * as BrokerConfig from "../src/BrokerConfig.js"
import * as SaslConfig from "../src/SaslConfig.js"

const parse = (entries: Record<string, string>) => () => BrokerConfig.fromProperties(new Map(Object.entries(entries)))

const NO_TLS = "TLS is not implemented yet: listeners are PLAINTEXT or SASL_PLAINTEXT"
const PLAIN_JAAS =
  'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'

describe("BrokerConfig security settings", () => {
  it("refuses SSL and SASL_SSL listeners", () => {
    for (const name of ["SSL", "SASL_SSL"]) {
      expect(parse({ listeners: `${name}://127.0.0.1:9093` })).toThrow(
        `listeners: listener ${name} (${name}) is not supported: ${NO_TLS}`
      )
      expect(parse({ "listener.security.protocol.map": `EXTERNAL:${name}` })).toThrow(
        `${name} for listener EXTERNAL is not supported: ${NO_TLS}`
      )
    }
    expect(parse({ "listener.security.protocol.map": "CONTROLLER:TLS" })).toThrow("expected NAME:PROTOCOL entries")
  })

  it("serves a SASL_PLAINTEXT listener, by name or through the protocol map, with its mechanisms and users", () => {
    const cfg = parse({
      listeners: "SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
      "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
      "connections.max.reauth.ms": "60000"
    })()
    expect([cfg.listenerName, cfg.listenerSecurityProtocol, cfg.controllerSecurityProtocol]).toEqual([
      "SASL_PLAINTEXT",
      "SASL_PLAINTEXT",
      "PLAINTEXT"
    ])
    const sasl = SaslConfig.forListener(cfg, cfg.listenerName)
    expect(sasl.enabledMechanisms).toEqual(["SCRAM-SHA-512", "PLAIN"])
    expect([...sasl.plainUsers.keys()]).toEqual(["admin", "alice"])
    expect(sasl.maxReauthMs).toBe(60000)
    expect(SaslConfig.clientCredentials(cfg, cfg.listenerName, "sasl.mechanism.inter.broker.protocol")).toEqual({
      mechanism: "PLAIN",
      username: "admin",
      password: "admin-secret"
    })
    const scramJaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="b" password="b-pw";'
    const mapped = parse({
      "process.roles": "broker,controller",
      listeners: "BROKER://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
      "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
      "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-256",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
      "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
      "listener.name.broker.scram-sha-256.sasl.jaas.config": scramJaas,
      "listener.name.controller.scram-sha-512.sasl.jaas.config": scramJaas
    })()
    expect([mapped.listenerSecurityProtocol, mapped.controllerSecurityProtocol]).toEqual([
      "SASL_PLAINTEXT",
      "SASL_PLAINTEXT"
    ])
    expect(SaslConfig.forListener(mapped, "BROKER").enabledMechanisms).toEqual(["SCRAM-SHA-256"])
  })

  it("refuses a SASL listener without usable settings, naming the key and never a password", () => {
    expect(parse({ listeners: "SASL_PLAINTEXT://127.0.0.1:9092" })).toThrow(
      "sasl.enabled.mechanisms: SASL mechanism GSSAPI is not supported (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); GSSAPI is Kafka's default"
    )
    expect(parse({ listeners: "SASL_PLAINTEXT://127.0.0.1:9092", "sasl.enabled.mechanisms": "OAUTHBEARER" })).toThrow(
      "sasl.enabled.mechanisms: SASL mechanism OAUTHBEARER is not supported"
    )
    expect(parse({ listeners: "SASL_PLAINTEXT://127.0.0.1:9092", "sasl.enabled.mechanisms": "PLAIN" })).toThrow(
      "listener.name.sasl_plaintext.plain.sasl.jaas.config: PLAIN on listener SASL_PLAINTEXT needs its JAAS entry"
    )
    const wrongModule = parse({
      listeners: "SASL_PLAINTEXT://127.0.0.1:9092",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="a" password="top-secret";'
    })
    expect(wrongModule).toThrow("PLAIN takes org.apache.kafka.common.security.plain.PlainLoginModule")
    let message = ""
    try {
      wrongModule()
    } catch (e) {
      message = (e as Error).message
    }
    expect(message).not.toContain("top-secret")
    expect(
      parse({
        listeners: "SASL_PLAINTEXT://127.0.0.1:9092",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512"
      })
    ).toThrow(
      "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config: sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512 needs username and password in the listener's JAAS entry"
    )
    expect(parse({ listeners: "SASL_PLAINTEXT://127.0.0.1:9092", "sasl.enabled.mechanisms": "SCRAM-SHA-512" })).toThrow(
      "sasl.mechanism.inter.broker.protocol: SASL mechanism GSSAPI is not supported"
    )
    expect(
      parse({
        listeners: "SASL_PLAINTEXT://127.0.0.1:9092",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS
      })
    ).toThrow(
      "sasl.mechanism.inter.broker.protocol=PLAIN must be one of the enabled mechanisms of listener SASL_PLAINTEXT (SCRAM-SHA-512)"
    )
    expect(
      parse({
        "process.roles": "broker",
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT",
        "sasl.mechanism.controller.protocol": "PLAIN"
      })
    ).toThrow(
      "listener.name.controller.plain.sasl.jaas.config: sasl.mechanism.controller.protocol=PLAIN needs username"
    )
  })

  it("refuses ssl. and security. keys as TLS, SASL keys we do not implement with the reason, and unknown keys", () => {
    for (const key of [
      "ssl.keystore.location",
      "security.inter.broker.protocol",
      "listener.name.external.ssl.keystore.location"
    ])
      expect(parse({ [key]: "x" })).toThrow(`broker config "${key}" is not supported: ${NO_TLS}`)
    for (const key of [
      "sasl.kerberos.service.name",
      "sasl.server.callback.handler.class",
      "listener.name.external.gssapi.sasl.jaas.config"
    ])
      expect(parse({ [key]: "x" })).toThrow(
        `broker config "${key}" is not supported: SASL is PLAIN and SCRAM-SHA-256/512`
      )
    expect(parse({ "sasl.jaas.config": "x" })).toThrow("listener.name.<listener>.<mechanism>.sasl.jaas.config")
    expect(parse({ "no.such.key": "x" })).toThrow('unknown broker config "no.such.key"')
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

describe("SaslConfig.parseAddScram", () => {
  it("reads Kafka's --add-scram syntax", () => {
    expect(SaslConfig.parseAddScram("SCRAM-SHA-512=[name=admin,password=admin-secret]")).toEqual({
      mechanism: "SCRAM-SHA-512",
      name: "admin",
      password: "admin-secret",
      iterations: 4096
    })
    expect(SaslConfig.parseAddScram('SCRAM-SHA-256=[name="bob",iterations=8192,password="b-pw"]')).toEqual({
      mechanism: "SCRAM-SHA-256",
      name: "bob",
      password: "b-pw",
      iterations: 8192
    })
  })

  it("refuses malformed entries without quoting the password", () => {
    for (const text of [
      "PLAIN=[name=a,password=top-secret]",
      "SCRAM-SHA-512=[name=a]",
      "SCRAM-SHA-512=[password=top-secret]",
      "SCRAM-SHA-512=[name=a,password=top-secret,iterations=100]",
      "SCRAM-SHA-512=[name=a,password=top-secret,salt=abc]"
    ]) {
      let message = ""
      try {
        SaslConfig.parseAddScram(text)
      } catch (e) {
        message = (e as Error).message
      }
      expect(message, text).toMatch(/^--add-scram/)
      expect(message).not.toContain("top-secret")
    }
  })
})
