/**
 * Server properties: the listener model (names, protocols, advertised endpoints, the inter-broker and
 * controller listeners) as Kafka 4 builds it, SASL_PLAINTEXT and SASL_SSL listeners with PLAIN and SCRAM,
 * and the refusals of what is not implemented, naming the key.
 */
import { describe, expect, it } from "vitest"
import * as BrokerConfig from "../src/BrokerConfig.js"
import * as SaslConfig from "../src/SaslConfig.js"

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

  it("refuses unknown keys and listener.name. prefixes on other settings", () => {
    expect(parse({ "no.such.key": "x" })).toThrow('unknown broker config "no.such.key"')
    expect(parse({ "listener.name.internal.max.connections": "5" })).toThrow(
      "only ssl.* and SASL settings take a listener.name.<listener>. prefix"
    )
  })
})

const PLAIN_JAAS =
  'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
const SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="b" password="b-pw";'

describe("BrokerConfig SASL settings", () => {
  it("serves a SASL_PLAINTEXT listener, by name or through the protocol map, with its mechanisms and users", () => {
    const cfg = parse({
      listeners: "SASL_PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
      "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
      "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
      "connections.max.reauth.ms": "60000"
    })()
    expect(cfg.listeners.map((l) => `${l.name}:${l.securityProtocol}`)).toEqual([
      "SASL_PLAINTEXT:SASL_PLAINTEXT",
      "CONTROLLER:PLAINTEXT"
    ])
    expect(cfg.interBrokerListenerName).toBe("SASL_PLAINTEXT")
    const sasl = SaslConfig.forListener(cfg, "SASL_PLAINTEXT")
    expect(sasl.enabledMechanisms).toEqual(["SCRAM-SHA-512", "PLAIN"])
    expect([...sasl.plainUsers.keys()]).toEqual(["admin", "alice"])
    expect(sasl.maxReauthMs).toBe(60000)
    expect(SaslConfig.clientCredentials(cfg, "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol")).toEqual({
      mechanism: "PLAIN",
      username: "admin",
      password: "admin-secret"
    })
    const mapped = parse({
      "process.roles": "broker,controller",
      listeners: "BROKER://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
      "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
      "inter.broker.listener.name": "BROKER",
      "listener.name.broker.sasl.enabled.mechanisms": "SCRAM-SHA-256",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
      "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
      "listener.name.broker.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
      "listener.name.controller.scram-sha-512.sasl.jaas.config": SCRAM_JAAS
    })()
    expect(mapped.listeners.map((l) => l.securityProtocol)).toEqual(["SASL_PLAINTEXT", "SASL_PLAINTEXT"])
    expect(BrokerConfig.controllerProtocol(mapped)).toEqual({ name: "CONTROLLER", protocol: "SASL_PLAINTEXT" })
    expect(SaslConfig.forListener(mapped, "BROKER").enabledMechanisms).toEqual(["SCRAM-SHA-256"])
  })

  it("serves SASL_SSL listeners with their TLS settings and SASL mechanisms together", () => {
    const cfg = parse({
      "process.roles": "broker,controller",
      listeners: "SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
      "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL",
      "ssl.keystore.location": "/k.pem",
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
      "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
      "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
      "listener.name.controller.scram-sha-512.sasl.jaas.config": SCRAM_JAAS
    })()
    expect(cfg.listeners.map((l) => `${l.name}:${l.securityProtocol}`)).toEqual([
      "SASL_SSL:SASL_SSL",
      "CONTROLLER:SASL_SSL"
    ])
    expect([...cfg.ssl.keys()]).toEqual(["SASL_SSL", "CONTROLLER"])
    expect(cfg.interBrokerListenerName).toBe("SASL_SSL")
    expect(SaslConfig.forListener(cfg, "SASL_SSL").enabledMechanisms).toEqual(["SCRAM-SHA-512"])
    expect(SaslConfig.clientCredentials(cfg, "CONTROLLER", "sasl.mechanism.controller.protocol").username).toBe("b")
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
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.mechanism.controller.protocol": "PLAIN"
      })
    ).toThrow(
      "listener.name.controller.plain.sasl.jaas.config: sasl.mechanism.controller.protocol=PLAIN needs username"
    )
  })

  it("refuses SASL keys we do not implement with the reason", () => {
    for (const key of [
      "sasl.kerberos.service.name",
      "sasl.server.callback.handler.class",
      "listener.name.external.gssapi.sasl.jaas.config"
    ])
      expect(parse({ [key]: "x" })).toThrow(
        `broker config "${key}" is not supported: SASL is PLAIN and SCRAM-SHA-256/512`
      )
    expect(parse({ "sasl.jaas.config": "x" })).toThrow("listener.name.<listener>.<mechanism>.sasl.jaas.config")
  })
})

describe("BrokerConfig mirror admin (mirror.admin.listener.name, sasl.mechanism.mirror.admin.protocol)", () => {
  const MIRROR_JAAS =
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror-admin" password="m-5ecret";'
  const twoListeners = {
    listeners: "INTERNAL://127.0.0.1:9092,MIRROR://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093",
    "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,MIRROR:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.inter.broker.protocol": "PLAIN",
    "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.mirror.sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "listener.name.mirror.scram-sha-512.sasl.jaas.config": MIRROR_JAAS
  }

  it("defaults to the inter-broker listener and mechanism", () => {
    const cfg = parse({
      listeners: "SASL_PLAINTEXT://127.0.0.1:9092",
      "sasl.enabled.mechanisms": "PLAIN",
      "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS
    })()
    expect([cfg.mirrorAdminListenerName, cfg.saslMechanismMirrorAdminProtocol]).toEqual([null, null])
    expect(BrokerConfig.mirrorAdminListener(cfg)).toEqual({ name: "SASL_PLAINTEXT", protocol: "SASL_PLAINTEXT" })
    expect(SaslConfig.clientCredentials(cfg, "SASL_PLAINTEXT", "sasl.mechanism.mirror.admin.protocol")).toEqual({
      mechanism: "PLAIN",
      username: "admin",
      password: "admin-secret"
    })
  })

  it("names its own listener and mechanism, with the credentials of that listener's JAAS entry", () => {
    const cfg = parse({
      ...twoListeners,
      "mirror.admin.listener.name": "mirror",
      "sasl.mechanism.mirror.admin.protocol": "SCRAM-SHA-512"
    })()
    expect(cfg.mirrorAdminListenerName).toBe("MIRROR")
    expect(BrokerConfig.mirrorAdminListener(cfg)).toEqual({ name: "MIRROR", protocol: "SASL_PLAINTEXT" })
    expect(SaslConfig.clientCredentials(cfg, "MIRROR", "sasl.mechanism.mirror.admin.protocol")).toEqual({
      mechanism: "SCRAM-SHA-512",
      username: "mirror-admin",
      password: "m-5ecret"
    })
  })

  it("refuses a listener that is not this broker's, and a mechanism the listener cannot use, naming the key", () => {
    const refusal = (entries: Record<string, string>) => {
      try {
        parse({ ...twoListeners, ...entries })()
      } catch (e) {
        return (e as Error).message
      }
      return "accepted"
    }
    expect(refusal({ "mirror.admin.listener.name": "EXTERNAL" })).toBe(
      "mirror.admin.listener.name=EXTERNAL: no such listener in listeners (controller listeners excluded): INTERNAL, MIRROR"
    )
    expect(refusal({ "mirror.admin.listener.name": "CONTROLLER" })).toContain("mirror.admin.listener.name=CONTROLLER")
    // Unset, the mechanism is the inter-broker one (PLAIN), which MIRROR does not enable.
    expect(refusal({ "mirror.admin.listener.name": "MIRROR" })).toBe(
      "sasl.mechanism.mirror.admin.protocol (unset: sasl.mechanism.inter.broker.protocol)=PLAIN must be one of the enabled mechanisms of listener MIRROR (SCRAM-SHA-512)"
    )
    expect(
      refusal({
        "mirror.admin.listener.name": "MIRROR",
        "sasl.mechanism.mirror.admin.protocol": "SCRAM-SHA-256",
        "listener.name.mirror.scram-sha-256.sasl.jaas.config": MIRROR_JAAS
      })
    ).toBe(
      "sasl.mechanism.mirror.admin.protocol=SCRAM-SHA-256 must be one of the enabled mechanisms of listener MIRROR (SCRAM-SHA-512)"
    )
    expect(refusal({ "mirror.admin.listener.name": "MIRROR", "sasl.mechanism.mirror.admin.protocol": "GSSAPI" })).toBe(
      "sasl.mechanism.mirror.admin.protocol: SASL mechanism GSSAPI is not supported (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); GSSAPI is Kafka's default, set the key to the mechanisms you use"
    )
    expect(refusal({ "sasl.mechanism.mirror.admin.protocol": "SCRAM-SHA-512" })).toBe(
      "sasl.mechanism.mirror.admin.protocol=SCRAM-SHA-512 must be one of the enabled mechanisms of listener INTERNAL (PLAIN)"
    )
    expect(
      refusal({
        "sasl.mechanism.mirror.admin.protocol": "SCRAM-SHA-512",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512"
      })
    ).toBe(
      "listener.name.internal.scram-sha-512.sasl.jaas.config: sasl.mechanism.mirror.admin.protocol=SCRAM-SHA-512 needs username and password in the listener's JAAS entry"
    )
    const plaintext = parse({ "sasl.mechanism.mirror.admin.protocol": "PLAIN" })
    expect(plaintext).toThrow(
      "sasl.mechanism.mirror.admin.protocol=PLAIN: listener PLAINTEXT of the mirror admin speaks PLAINTEXT, without SASL"
    )
    for (const entries of [{ "mirror.admin.listener.name": "EXTERNAL" }, { "mirror.admin.listener.name": "MIRROR" }])
      expect(refusal(entries)).not.toContain("5ecret")
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
  it("takes one log directory from log.dirs or log.dir and refuses several (JBOD), naming the key", () => {
    expect(parse({ "log.dirs": " /var/k1 " })().dataDir).toBe("/var/k1")
    expect(parse({ "log.dir": "/var/k2," })().dataDir).toBe("/var/k2")
    expect(parse({ "log.dirs": "/a,/b" })).toThrow(
      "log.dirs=/a,/b: expected one log directory (several log directories, JBOD, are not supported)"
    )
    expect(parse({ "log.dirs": " , " })).toThrow("log.dirs= , : expected one log directory")
  })

  it("caps DescribeTopicPartitions at max.request.partition.size.limit, 2000 by default, at least 1", () => {
    expect(BrokerConfig.defaults.maxRequestPartitionSizeLimit).toBe(2000)
    expect(parse({ "max.request.partition.size.limit": "3" })().maxRequestPartitionSizeLimit).toBe(3)
    expect(parse({ "max.request.partition.size.limit": "0" })).toThrow(
      "max.request.partition.size.limit=0: expected an integer >= 1"
    )
  })

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

describe("BrokerConfig controller quorum", () => {
  it("takes one controller from controller.quorum.voters or controller.quorum.bootstrap.servers", () => {
    expect(parse({ "controller.quorum.voters": "1@10.0.0.1:9093" })().controllerBootstrap).toEqual({
      host: "10.0.0.1",
      port: 9093
    })
    expect(parse({ "controller.quorum.bootstrap.servers": " ctl:19093 " })().controllerBootstrap).toEqual({
      host: "ctl",
      port: 19093
    })
  })

  it("takes a quorum of several voters, and brokers try every controller", () => {
    const c = parse({ "controller.quorum.voters": "1@a:9093,2@b:9094, 3@c:9095" })()
    expect(c.controllerQuorumVoters).toEqual([
      { id: 1, host: "a", port: 9093 },
      { id: 2, host: "b", port: 9094 },
      { id: 3, host: "c", port: 9095 }
    ])
    expect(c.controllerBootstrapServers).toEqual([
      { host: "a", port: 9093 },
      { host: "b", port: 9094 },
      { host: "c", port: 9095 }
    ])
    // controller.quorum.bootstrap.servers, when set, is where brokers look.
    const b = parse({
      "controller.quorum.voters": "1@a:9093,2@b:9094",
      "controller.quorum.bootstrap.servers": "x:1,y:2"
    })()
    expect(b.controllerBootstrapServers).toEqual([
      { host: "x", port: 1 },
      { host: "y", port: 2 }
    ])
    expect(b.controllerBootstrap).toEqual({ host: "x", port: 1 })
    expect(b.controllerQuorumVoters.map((v) => v.id)).toEqual([1, 2])
  })

  it("takes the quorum's timeouts", () => {
    const c = parse({
      "controller.quorum.election.timeout.ms": "500",
      "controller.quorum.fetch.timeout.ms": "900",
      "controller.quorum.election.backoff.max.ms": "300",
      "controller.quorum.request.timeout.ms": "800"
    })()
    expect([
      c.controllerQuorumElectionTimeoutMs,
      c.controllerQuorumFetchTimeoutMs,
      c.controllerQuorumElectionBackoffMaxMs,
      c.controllerQuorumRequestTimeoutMs
    ]).toEqual([500, 900, 300, 800])
    expect(parse({ "controller.quorum.fetch.timeout.ms": "0" })).toThrow()
  })

  it("refuses a malformed entry or a voter named twice", () => {
    expect(parse({ "controller.quorum.bootstrap.servers": "a:9093x" })).toThrow('"a:9093x" is not host:port')
    expect(parse({ "controller.quorum.voters": "1@a" })).toThrow('"1@a" is not id@host:port')
    expect(parse({ "controller.quorum.voters": "1@a:1,2@b:0" })).toThrow('"2@b:0" is not id@host:port')
    expect(parse({ "controller.quorum.voters": "1@a:1,1@b:2" })).toThrow("node id 1 appears twice")
  })
})

describe("BrokerConfig group.consumer.migration.policy", () => {
  it("defaults to bidirectional, takes Kafka's four policies in any case and refuses others", () => {
    expect(parse({})().groupConsumerMigrationPolicy).toBe("bidirectional")
    for (const p of ["disabled", "upgrade", "downgrade", "bidirectional"])
      expect(parse({ "group.consumer.migration.policy": p.toUpperCase() })().groupConsumerMigrationPolicy).toBe(p)
    expect(parse({ "group.consumer.migration.policy": "both" })).toThrow(
      "group.consumer.migration.policy=both: expected one of disabled, upgrade, downgrade, bidirectional"
    )
  })
})
