import { describe, expect, it } from "@effect/vitest"
import { ConfigurationControl } from "@clustermirror/controller"
import * as BrokerConfig from "../src/BrokerConfig.js"
import * as DynamicBrokerConfig from "../src/DynamicBrokerConfig.js"
import * as LogConfigs from "../src/LogConfigs.js"

const { Source } = DynamicBrokerConfig

const props = (entries: Record<string, string>) =>
  BrokerConfig.fromProperties(new Map(Object.entries(entries)), BrokerConfig.defaults)

const layers = (
  config: BrokerConfig.BrokerConfig,
  clusterDefault: Record<string, string> = {},
  perBroker: Record<string, string> = {}
): DynamicBrokerConfig.Layers => ({
  config,
  clusterDefault: new Map(Object.entries(clusterDefault)),
  perBroker: new Map(Object.entries(perBroker))
})

const entry = (configs: ReadonlyArray<DynamicBrokerConfig.DescribedConfig>, name: string) =>
  configs.find((c) => c.name === name)

describe("BrokerConfig properties", () => {
  it("refuses keys that promise behaviour we do not have, naming the key and why", () => {
    expect(() => props({ "log.cleaner.io.buffer.size": "524288" })).toThrow(
      /^broker config "log.cleaner.io.buffer.size" is not supported: the log cleaner reads segments through/
    )
    expect(() => props({ "max.connections": "5" })).toThrow(
      /"max.connections" is not supported: broker-wide and per-listener connection limits/
    )
    expect(() => props({ "log.cleanup.policy": "compact,forever" })).toThrow(
      "log.cleanup.policy=compact,forever: expected a list of delete and compact"
    )
    expect(() => props({ "no.such.key": "1" })).toThrow('unknown broker config "no.such.key"')
  })

  it("parses the log cleaner's settings and the compaction defaults of topics", () => {
    const c = props({
      "log.cleanup.policy": "compact,delete",
      "log.cleaner.enable": "false",
      "log.cleaner.threads": "2",
      "log.cleaner.dedupe.buffer.size": "1048576",
      "log.cleaner.io.max.bytes.per.second": "5000000",
      "log.cleaner.backoff.ms": "100",
      "log.cleaner.delete.retention.ms": "1000",
      "log.cleaner.min.cleanable.ratio": "0.1",
      "log.cleaner.min.compaction.lag.ms": "5",
      "log.cleaner.max.compaction.lag.ms": "9223372036854775807"
    })
    expect(c).toMatchObject({
      logCleanupPolicy: "compact,delete",
      logCleanerEnable: false,
      logCleanerThreads: 2,
      logCleanerDedupeBufferSize: 1048576,
      logCleanerIoMaxBytesPerSecond: 5000000,
      logCleanerBackoffMs: 100,
      logCleanerDeleteRetentionMs: 1000,
      logCleanerMinCleanableRatio: 0.1,
      logCleanerMinCompactionLagMs: 5,
      logCleanerMaxCompactionLagMs: Number.MAX_SAFE_INTEGER
    })
    expect(() => props({ "log.cleaner.min.cleanable.ratio": "1.5" })).toThrow(
      "log.cleaner.min.cleanable.ratio=1.5: expected a number between 0 and 1"
    )
    expect(() => props({ "log.cleaner.dedupe.buffer.size": "10" })).toThrow(/expected an integer >= 48/)
  })

  it("accepts thread counts and socket buffer sizes without effect, and keeps the properties given", () => {
    const c = props({ "num.io.threads": "16", "socket.send.buffer.bytes": "102400", "min.insync.replicas": "2" })
    expect(c.minInsyncReplicas).toBe(2)
    expect(c.properties.get("num.io.threads")).toBe("16")
  })

  it("parses every dynamic broker key that is not a no-op", () => {
    for (const key of ConfigurationControl.BROKER_CONFIG_DEFS.keys())
      expect(BrokerConfig.isParsed(key) || BrokerConfig.NO_OP_PROPERTIES.has(key)).toBe(true)
  })
})

describe("DynamicBrokerConfig", () => {
  it("a per-broker value overrides the cluster default, which overrides the properties", () => {
    const base = props({ "message.max.bytes": "1000", "min.insync.replicas": "2" })
    const l = layers(base, { "message.max.bytes": "2000", "log.retention.ms": "5000" }, { "message.max.bytes": "3000" })
    const c = DynamicBrokerConfig.effective(l)
    expect(c.messageMaxBytes).toBe(3000)
    expect(c.logRetentionMs).toBe(5000)
    expect(c.minInsyncReplicas).toBe(2)
    expect(DynamicBrokerConfig.effective(layers(base, { "message.max.bytes": "2000" })).messageMaxBytes).toBe(2000)
  })

  it("describes a broker with the source in force and the layers beneath as synonyms", () => {
    const base = props({ "message.max.bytes": "1000", "log.retention.hours": "1" })
    const described = DynamicBrokerConfig.describeBroker(
      layers(base, { "message.max.bytes": "2000", "min.insync.replicas": "2" }, { "message.max.bytes": "3000" }),
      "1",
      true
    )
    expect(entry(described, "message.max.bytes")).toMatchObject({
      value: "3000",
      readOnly: false,
      configSource: Source.DYNAMIC_BROKER_CONFIG,
      synonyms: [
        { name: "message.max.bytes", value: "3000", source: Source.DYNAMIC_BROKER_CONFIG },
        { name: "message.max.bytes", value: "2000", source: Source.DYNAMIC_DEFAULT_BROKER_CONFIG },
        { name: "message.max.bytes", value: "1000", source: Source.STATIC_BROKER_CONFIG },
        { name: "message.max.bytes", value: "1048588", source: Source.DEFAULT_CONFIG }
      ]
    })
    expect(entry(described, "min.insync.replicas")).toMatchObject({
      value: "2",
      configSource: Source.DYNAMIC_DEFAULT_BROKER_CONFIG
    })
    expect(entry(described, "log.retention.ms")).toMatchObject({
      value: "3600000",
      configSource: Source.STATIC_BROKER_CONFIG
    })
    expect(entry(described, "log.segment.bytes")).toMatchObject({
      value: "1073741824",
      configSource: Source.DEFAULT_CONFIG,
      isDefault: true
    })
    expect(entry(described, "num.partitions")).toMatchObject({ readOnly: true, configSource: Source.DEFAULT_CONFIG })
  })

  it("reads the client and controller quota windows from the properties, Kafka's 11 samples of 1 s by default", () => {
    expect(props({ "quota.window.num": "5", "controller.quota.window.size.seconds": "2" })).toMatchObject({
      quotaWindowNum: 5,
      quotaWindowSizeSeconds: 1,
      controllerQuotaWindowNum: 11,
      controllerQuotaWindowSizeSeconds: 2
    })
    const described = DynamicBrokerConfig.describeBroker(layers(BrokerConfig.defaults), "1", false)
    for (const key of ["quota.window.num", "controller.quota.window.num"])
      expect(entry(described, key)).toMatchObject({ value: "11", readOnly: true })
    expect(() => props({ "controller.quota.window.num": "0" })).toThrow(/controller.quota.window.num=0/)
  })

  it("takes the replication throttle rates from every layer, unlimited (Long.MAX) by default", () => {
    const base = props({ "leader.replication.throttled.rate": "5000", "replication.quota.window.num": "4" })
    expect(base).toMatchObject({
      leaderReplicationThrottledRate: 5000,
      followerReplicationThrottledRate: Number.MAX_SAFE_INTEGER,
      mirrorReplicationThrottledRate: Number.MAX_SAFE_INTEGER,
      replicationQuotaWindowNum: 4,
      replicationQuotaWindowSizeSeconds: 1
    })
    const c = DynamicBrokerConfig.effective(
      layers(
        base,
        { "follower.replication.throttled.rate": "7000", "mirror.replication.throttled.rate": "9000" },
        { "leader.replication.throttled.rate": "6000" }
      )
    )
    expect(c).toMatchObject({
      leaderReplicationThrottledRate: 6000,
      followerReplicationThrottledRate: 7000,
      mirrorReplicationThrottledRate: 9000
    })
    const described = DynamicBrokerConfig.describeBroker(layers(BrokerConfig.defaults), "1", false)
    expect(entry(described, "follower.replication.throttled.rate")).toMatchObject({
      value: "9223372036854775807",
      readOnly: false,
      isDefault: true
    })
    expect(entry(described, "replication.quota.window.num")).toMatchObject({ value: "11", readOnly: true })
    expect(() => props({ "follower.replication.throttled.rate": "-1" })).toThrow(
      "follower.replication.throttled.rate=-1: expected an integer >= 0"
    )
    expect(() => props({ "replica.alter.log.dirs.io.max.bytes.per.second": "1" })).toThrow(
      /is not supported: a broker has one log directory/
    )
  })

  it("the cluster default resource lists only its dynamic entries", () => {
    const described = DynamicBrokerConfig.describeBroker(
      layers(BrokerConfig.defaults, { "message.max.bytes": "2000" }),
      "",
      false
    )
    expect(described.map((c) => [c.name, c.value, c.configSource])).toEqual([
      ["message.max.bytes", "2000", Source.DYNAMIC_DEFAULT_BROKER_CONFIG]
    ])
  })

  it("never describes a secret's value: password-type entries are null and sensitive, synonyms too", () => {
    const described = DynamicBrokerConfig.describeBroker(
      layers(BrokerConfig.defaults, {
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": 'ScramLoginModule required password="s3cret";',
        "listener.name.internal.ssl.keystore.password": "s3cret",
        "message.max.bytes": "2000"
      }),
      "",
      true
    )
    expect(described.map((c) => [c.name, c.value, c.isSensitive, c.synonyms.map((s) => s.value)])).toEqual([
      ["listener.name.internal.ssl.keystore.password", null, true, [null]],
      ["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config", null, true, [null]],
      ["message.max.bytes", "2000", false, ["2000"]]
    ])
    expect(JSON.stringify(described)).not.toContain("s3cret")
  })
})

describe("LogConfigs", () => {
  it("a topic's unset keys show their broker synonym's value and source; set keys are TOPIC_CONFIG", () => {
    const base = props({ "min.insync.replicas": "2" })
    const described = LogConfigs.describeTopic(
      layers(base, { "message.max.bytes": "2000" }),
      new Map([["retention.ms", "1000"]]),
      false
    )
    expect(entry(described, "min.insync.replicas")).toMatchObject({
      value: "2",
      configSource: Source.STATIC_BROKER_CONFIG,
      isDefault: false
    })
    expect(entry(described, "max.message.bytes")).toMatchObject({
      value: "2000",
      configSource: Source.DYNAMIC_DEFAULT_BROKER_CONFIG
    })
    expect(entry(described, "retention.ms")).toMatchObject({ value: "1000", configSource: Source.TOPIC_CONFIG })
    expect(entry(described, "preallocate")).toMatchObject({ value: "false", configSource: Source.DEFAULT_CONFIG })
  })

  it("the log config and min.insync.replicas in force: the topic's, else the broker's in force", () => {
    const c = DynamicBrokerConfig.effective(
      layers(props({ "min.insync.replicas": "2" }), { "message.max.bytes": "2000" })
    )
    expect(LogConfigs.logConfigFor(c, { configs: new Map() }).maxMessageBytes).toBe(2000)
    expect(LogConfigs.logConfigFor(c, { configs: new Map([["max.message.bytes", "500"]]) }).maxMessageBytes).toBe(500)
    expect(LogConfigs.minInsyncReplicasFor(c, { configs: new Map() })).toBe(2)
    expect(LogConfigs.minInsyncReplicasFor(c, { configs: new Map([["min.insync.replicas", "3"]]) })).toBe(3)
  })
})
