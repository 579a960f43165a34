import { describe, expect, it } from "@effect/vitest"
import { Errors, MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import * as ConfigurationControl from "../src/ConfigurationControl.js"
import type * as ControllerState from "../src/ControllerState.js"
import { given } from "../src/ControllerTest.js"
import * as fc from "fast-check"
import { copiedEntries, plain, uuid } from "./clusterFixtures.js"

const { TOPIC, BROKER, CLUSTER_MIRROR } = ConfigurationControl.ResourceType
const { SET, DELETE, APPEND, SUBTRACT } = ConfigurationControl.OpType

const config = (resourceType: number, resourceName: string, name: string, value: string | null) =>
  MetadataRecords.make("ConfigRecord", { resourceType, resourceName, name, value })

const ctx: ConfigurationControl.AlterContext = { topicExists: (name) => name === "orders" || name === "events" }

const ok = (resourceType: number, resourceName: string) => ({
  resourceType,
  resourceName,
  errorCode: 0,
  errorMessage: null
})
const err = (resourceType: number, resourceName: string, errorCode: number, errorMessage: string) => ({
  resourceType,
  resourceName,
  errorCode,
  errorMessage
})

type Op = { readonly name: string; readonly configOperation: number; readonly value: string | null }
const resource = (resourceType: number, resourceName: string, configs: ReadonlyArray<Op>) => ({
  resourceType,
  resourceName,
  configs
})
const op = (name: string, configOperation: number, value: string | null = null): Op => ({
  name,
  configOperation,
  value
})

const mirrorConfigs = [
  config(CLUSTER_MIRROR, "m1", "bootstrap.servers", "src:9092"),
  config(CLUSTER_MIRROR, "m1", "mirror.source.cluster.id", "abc")
]
const start = given([
  MetadataRecords.make("TopicRecord", { name: "orders", topicId: uuid(1) }),
  config(TOPIC, "orders", "retention.ms", "1000"),
  config(TOPIC, "orders", "cleanup.policy", "delete"),
  ...mirrorConfigs
])

const incremental =
  (resources: ReadonlyArray<ReturnType<typeof resource>>, validateOnly = false) =>
  (s: ControllerState.ControllerState) =>
    ConfigurationControl.incrementalAlterConfigs(s.configs, resources, validateOnly, ctx)

describe("ConfigurationControl.incrementalAlterConfigs", () => {
  it("SET and DELETE write a ConfigRecord per changed key", () => {
    const after = start
      .when(
        incremental([
          resource(TOPIC, "orders", [
            op("retention.ms", SET, "2000"),
            op("cleanup.policy", DELETE),
            op("segment.ms", DELETE)
          ])
        ])
      )
      .then(
        [config(TOPIC, "orders", "retention.ms", "2000"), config(TOPIC, "orders", "cleanup.policy", null)],
        [ok(TOPIC, "orders")]
      )
    expect([...ConfigurationControl.configsOf(after.state.configs, TOPIC, "orders")]).toEqual([
      ["retention.ms", "2000"]
    ])
  })

  it("writes nothing for a value that does not change", () => {
    start
      .when(incremental([resource(TOPIC, "orders", [op("retention.ms", SET, "1000")])]))
      .then([], [ok(TOPIC, "orders")])
  })

  it("APPEND and SUBTRACT work on list values, starting from the default", () => {
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("cleanup.policy", APPEND, "compact,delete")]),
          resource(TOPIC, "events", [op("cleanup.policy", SUBTRACT, "delete")])
        ])
      )
      .then(
        [config(TOPIC, "orders", "cleanup.policy", "delete,compact"), config(TOPIC, "events", "cleanup.policy", "")],
        [ok(TOPIC, "orders"), ok(TOPIC, "events")]
      )
  })

  it("accepts the replication throttles kafka-reassign-partitions --throttle sets, and refuses malformed ones", () => {
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("leader.replication.throttled.replicas", SET, "0:1,0:2")]),
          resource(TOPIC, "events", [op("follower.replication.throttled.replicas", SET, "*")]),
          resource(BROKER, "1", [
            op("leader.replication.throttled.rate", SET, "1000"),
            op("follower.replication.throttled.rate", SET, "2000")
          ])
        ])
      )
      .then(
        [
          config(TOPIC, "orders", "leader.replication.throttled.replicas", "0:1,0:2"),
          config(TOPIC, "events", "follower.replication.throttled.replicas", "*"),
          config(BROKER, "1", "leader.replication.throttled.rate", "1000"),
          config(BROKER, "1", "follower.replication.throttled.rate", "2000")
        ],
        [ok(TOPIC, "orders"), ok(TOPIC, "events"), ok(BROKER, "1")]
      )
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("leader.replication.throttled.replicas", SET, "0-1")]),
          resource(BROKER, "1", [op("leader.replication.throttled.rate", SET, "-1")]),
          resource(BROKER, "2", [op("replica.alter.log.dirs.io.max.bytes.per.second", SET, "1000")])
        ])
      )
      .then(
        [],
        [
          err(
            TOPIC,
            "orders",
            Errors.ErrorCode.INVALID_CONFIG,
            "Invalid value 0-1 for configuration leader.replication.throttled.replicas: must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],..."
          ),
          err(
            BROKER,
            "1",
            Errors.ErrorCode.INVALID_CONFIG,
            "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"
          ),
          err(
            BROKER,
            "2",
            Errors.ErrorCode.INVALID_CONFIG,
            "Broker config replica.alter.log.dirs.io.max.bytes.per.second is not supported: a broker has one log directory, so replicas never move between directories"
          )
        ]
      )
    // What the tool's --verify deletes when a reassignment is done: with nothing set, the broker rates are
    // deleted again (a broker resource always gets its records, as in Kafka), the log-dir one changes nothing.
    start
      .when(
        incremental([
          resource(BROKER, "1", [
            op("leader.replication.throttled.rate", DELETE),
            op("follower.replication.throttled.rate", DELETE),
            op("replica.alter.log.dirs.io.max.bytes.per.second", DELETE)
          ]),
          resource(TOPIC, "orders", [
            op("leader.replication.throttled.replicas", DELETE),
            op("follower.replication.throttled.replicas", DELETE)
          ])
        ])
      )
      .then(
        [
          config(BROKER, "1", "leader.replication.throttled.rate", null),
          config(BROKER, "1", "follower.replication.throttled.rate", null)
        ],
        [ok(BROKER, "1"), ok(TOPIC, "orders")]
      )
  })

  it("fails APPEND on a non-list key with INVALID_CONFIG", () => {
    start
      .when(incremental([resource(TOPIC, "orders", [op("retention.ms", APPEND, "5")])]))
      .then(
        [],
        [
          err(
            TOPIC,
            "orders",
            Errors.ErrorCode.INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST."
          )
        ]
      )
  })

  it("reports each resource on its own (partial success)", () => {
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("retention.ms", SET, "x")]),
          resource(TOPIC, "events", [op("retention.ms", SET, "5")]),
          resource(TOPIC, "nope", [op("retention.ms", SET, "5")]),
          resource(TOPIC, "bad name", [op("retention.ms", SET, "5")]),
          resource(TOPIC, "events", [op("bogus", SET, "5")])
        ])
      )
      .then(
        [],
        [
          err(
            TOPIC,
            "orders",
            Errors.ErrorCode.INVALID_CONFIG,
            "Invalid value x for configuration retention.ms: Not a number of type LONG"
          ),
          err(TOPIC, "events", Errors.ErrorCode.INVALID_REQUEST, "Duplicate resource."),
          err(TOPIC, "nope", Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'nope' does not exist."),
          err(
            TOPIC,
            "bad name",
            Errors.ErrorCode.INVALID_TOPIC_EXCEPTION,
            `Topic name "bad name" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`
          ),
          err(TOPIC, "events", Errors.ErrorCode.INVALID_REQUEST, "Duplicate resource.")
        ]
      )
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("retention.ms", SET, "x")]),
          resource(TOPIC, "events", [op("retention.ms", SET, "5")])
        ])
      )
      .then(
        [config(TOPIC, "events", "retention.ms", "5")],
        [
          err(
            TOPIC,
            "orders",
            Errors.ErrorCode.INVALID_CONFIG,
            "Invalid value x for configuration retention.ms: Not a number of type LONG"
          ),
          ok(TOPIC, "events")
        ]
      )
  })

  it("fails unknown keys, null SET values, unknown operations, duplicate keys", () => {
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("bogus", SET, "1")]),
          resource(BROKER, "1", [op("bogus", SET, "1")]),
          resource(CLUSTER_MIRROR, "m1", [op("bogus", SET, "1")]),
          resource(BROKER, "", [op("num.io.threads", SET, null)]),
          resource(BROKER, "2", [op("num.io.threads", 7, "1")]),
          resource(TOPIC, "events", [op("retention.ms", SET, "1"), op("retention.ms", DELETE)])
        ])
      )
      .then(
        [],
        [
          err(TOPIC, "orders", Errors.ErrorCode.INVALID_CONFIG, "Unknown topic config name: bogus"),
          err(BROKER, "1", Errors.ErrorCode.INVALID_CONFIG, "Unknown broker config name: bogus"),
          err(CLUSTER_MIRROR, "m1", Errors.ErrorCode.INVALID_CONFIG, "Unknown mirror configuration: bogus"),
          err(BROKER, "", Errors.ErrorCode.INVALID_REQUEST, "Null value not supported for : num.io.threads"),
          err(BROKER, "2", Errors.ErrorCode.INVALID_REQUEST, "Unknown operation type 7"),
          err(TOPIC, "events", Errors.ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        ]
      )
  })

  it("validates value constraints", () => {
    start
      .when(
        incremental([
          resource(TOPIC, "orders", [op("min.insync.replicas", SET, "0")]),
          resource(TOPIC, "events", [op("cleanup.policy", SET, "compact,forever")]),
          resource(BROKER, "1", [op("unclean.leader.election.enable", SET, "yes")]),
          resource(BROKER, "2", [op("num.io.threads", SET, "99999999999")]),
          resource(CLUSTER_MIRROR, "m1", [op("security.protocol", SET, "TLS")])
        ])
      )
      .then(
        [],
        [
          err(TOPIC, "orders", 40, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
          err(
            TOPIC,
            "events",
            40,
            "Invalid value compact,forever for configuration cleanup.policy: String must be one of: compact, delete"
          ),
          err(
            BROKER,
            "1",
            40,
            "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"
          ),
          err(BROKER, "2", 40, "Invalid value 99999999999 for configuration num.io.threads: Not a number of type INT"),
          err(
            CLUSTER_MIRROR,
            "m1",
            40,
            "Invalid value TLS for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
          )
        ]
      )
  })

  it("broker resources: '' is the cluster default, ids only, a record for every touched key", () => {
    start
      .when(
        incremental([
          resource(BROKER, "", [op("min.insync.replicas", SET, "2")]),
          resource(BROKER, "broker-1", [op("min.insync.replicas", SET, "2")])
        ])
      )
      .then(
        [config(BROKER, "", "min.insync.replicas", "2")],
        [
          ok(BROKER, ""),
          err(
            BROKER,
            "broker-1",
            Errors.ErrorCode.INVALID_REQUEST,
            "Illegal non-integral BROKER resource type name broker-1"
          )
        ]
      )
      .when(incremental([resource(BROKER, "", [op("min.insync.replicas", SET, "2")])]))
      .then([config(BROKER, "", "min.insync.replicas", "2")], [ok(BROKER, "")])
  })

  it("broker configs: dynamic keys stored for a broker and the cluster default, read-only and unsupported keys refused by name", () => {
    start
      .when(
        incremental([
          resource(BROKER, "1", [op("message.max.bytes", SET, "2000000")]),
          resource(BROKER, "", [op("message.max.bytes", SET, "1500000"), op("min.insync.replicas", SET, "2")]),
          resource(BROKER, "2", [op("num.partitions", SET, "3")]),
          resource(BROKER, "3", [op("log.cleaner.io.buffer.size", SET, "2")]),
          resource(BROKER, "4", [op("max.connections", SET, "10")]),
          resource(BROKER, "5", [op("mirror.admin.listener.name", SET, "MIRROR")]),
          resource(BROKER, "6", [op("sasl.mechanism.mirror.admin.protocol", SET, "PLAIN")]),
          resource(BROKER, "7", [op("controller.quota.window.num", SET, "5")]),
          resource(BROKER, "8", [op("quota.window.size.seconds", SET, "2")])
        ])
      )
      .then(
        [
          config(BROKER, "1", "message.max.bytes", "2000000"),
          config(BROKER, "", "message.max.bytes", "1500000"),
          config(BROKER, "", "min.insync.replicas", "2")
        ],
        [
          ok(BROKER, "1"),
          ok(BROKER, ""),
          err(
            BROKER,
            "2",
            Errors.ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [num.partitions]"
          ),
          err(
            BROKER,
            "3",
            Errors.ErrorCode.INVALID_CONFIG,
            "Broker config log.cleaner.io.buffer.size is not supported: the log cleaner reads segments through a shared 64 KiB window, writes in 1 MiB chunks and fills its offset map to 90 %: not configurable"
          ),
          err(
            BROKER,
            "4",
            Errors.ErrorCode.INVALID_CONFIG,
            "Broker config max.connections is not supported: broker-wide and per-listener connection limits are not implemented yet: only per-IP connection_creation_rate quotas (kafka-configs --entity-type ips) are"
          ),
          err(
            BROKER,
            "5",
            Errors.ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [mirror.admin.listener.name]"
          ),
          err(
            BROKER,
            "6",
            Errors.ErrorCode.INVALID_CONFIG,
            "Broker config sasl.mechanism.mirror.admin.protocol is not supported: listener security settings are read from the server properties at start and cannot change dynamically"
          ),
          // The quota windows are read from the server properties at start, as in Kafka.
          err(
            BROKER,
            "7",
            Errors.ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [controller.quota.window.num]"
          ),
          err(
            BROKER,
            "8",
            Errors.ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [quota.window.size.seconds]"
          )
        ]
      )
      .when(incremental([resource(BROKER, "1", [op("message.max.bytes", DELETE)])]))
      .then([config(BROKER, "1", "message.max.bytes", null)], [ok(BROKER, "1")])
  })

  it("unclean.leader.election.enable is a cluster default only; legacy AlterConfigs classifies keys alike", () => {
    start
      .when(
        incremental([
          resource(BROKER, "1", [op("unclean.leader.election.enable", SET, "true")]),
          resource(BROKER, "", [op("unclean.leader.election.enable", SET, "true")])
        ])
      )
      .then(
        [config(BROKER, "", "unclean.leader.election.enable", "true")],
        [
          err(
            BROKER,
            "1",
            Errors.ErrorCode.INVALID_CONFIG,
            "Broker config unclean.leader.election.enable is applied by the controller: set it as the cluster default (an empty broker name) or on the topic"
          ),
          ok(BROKER, "")
        ]
      )
      .when((s) =>
        ConfigurationControl.legacyAlterConfigs(
          s.configs,
          [
            { resourceType: BROKER, resourceName: "1", configs: [{ name: "default.replication.factor", value: "3" }] },
            {
              resourceType: BROKER,
              resourceName: "2",
              configs: [{ name: "log.cleaner.io.buffer.load.factor", value: "0.5" }]
            }
          ],
          false,
          ctx
        )
      )
      .then(
        [],
        [
          err(
            BROKER,
            "1",
            Errors.ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [default.replication.factor]"
          ),
          err(
            BROKER,
            "2",
            Errors.ErrorCode.INVALID_CONFIG,
            "Broker config log.cleaner.io.buffer.load.factor is not supported: the log cleaner reads segments through a shared 64 KiB window, writes in 1 MiB chunks and fills its offset map to 90 %: not configurable"
          )
        ]
      )
  })

  it("mirror configs: only existing mirrors, required keys stay", () => {
    start
      .when(
        incremental([
          resource(CLUSTER_MIRROR, "m1", [
            op("mirror.topics.include", SET, "orders.*"),
            op("mirror.groups.exclude", APPEND, "tmp.*")
          ]),
          resource(CLUSTER_MIRROR, "m2", [op("mirror.topics.include", SET, ".*")]),
          resource(CLUSTER_MIRROR, "", [op("mirror.topics.include", SET, ".*")])
        ])
      )
      .then(
        [
          config(CLUSTER_MIRROR, "m1", "mirror.topics.include", "orders.*"),
          config(CLUSTER_MIRROR, "m1", "mirror.groups.exclude", "tmp.*")
        ],
        [
          ok(CLUSTER_MIRROR, "m1"),
          err(CLUSTER_MIRROR, "m2", Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR, "The cluster mirror 'm2' does not exist."),
          err(CLUSTER_MIRROR, "", Errors.ErrorCode.INVALID_REQUEST, "A cluster mirror name cannot be empty.")
        ]
      )
    start
      .when(incremental([resource(CLUSTER_MIRROR, "m1", [op("bootstrap.servers", DELETE)])]))
      .then(
        [],
        [
          err(
            CLUSTER_MIRROR,
            "m1",
            Errors.ErrorCode.INVALID_REQUEST,
            'Missing required configuration "bootstrap.servers" which has no default value.'
          )
        ]
      )
  })

  it("rejects resource types the controller does not store", () => {
    start
      .when(incremental([resource(8, "x", [op("a", SET, "b")]), resource(16, "x", [])]))
      .then(
        [],
        [
          err(8, "x", Errors.ErrorCode.INVALID_REQUEST, "Unsupported config resource type 8"),
          err(
            16,
            "x",
            Errors.ErrorCode.INVALID_REQUEST,
            "Client metrics subscriptions (resource type CLIENT_METRICS) are not implemented: brokers push no telemetry"
          )
        ]
      )
  })

  it("validateOnly answers the same and writes nothing", () => {
    start
      .when(
        incremental(
          [
            resource(TOPIC, "orders", [op("retention.ms", SET, "2000")]),
            resource(TOPIC, "nope", [op("retention.ms", SET, "1")])
          ],
          true
        )
      )
      .then([], [ok(TOPIC, "orders"), err(TOPIC, "nope", 3, "The topic 'nope' does not exist.")])
  })
})

describe("ConfigurationControl.legacyAlterConfigs", () => {
  const legacy =
    (resources: ReadonlyArray<ConfigurationControl.LegacyResource>, validateOnly = false) =>
    (s: ControllerState.ControllerState) =>
      ConfigurationControl.legacyAlterConfigs(s.configs, resources, validateOnly, ctx)

  it("replaces the whole set: keys not given are deleted", () => {
    const after = start
      .when(
        legacy([
          {
            resourceType: TOPIC,
            resourceName: "orders",
            configs: [
              { name: "retention.ms", value: "1000" },
              { name: "segment.ms", value: "60000" },
              { name: "preallocate", value: null }
            ]
          }
        ])
      )
      .then(
        [config(TOPIC, "orders", "segment.ms", "60000"), config(TOPIC, "orders", "cleanup.policy", null)],
        [ok(TOPIC, "orders")]
      )
    expect(Object.fromEntries(ConfigurationControl.configsOf(after.state.configs, TOPIC, "orders"))).toEqual({
      "retention.ms": "1000",
      "segment.ms": "60000"
    })
  })

  it("fails per resource: unknown keys, bad values, unknown topics, mirrors losing required keys", () => {
    start
      .when(
        legacy([
          { resourceType: TOPIC, resourceName: "orders", configs: [{ name: "nope", value: "1" }] },
          { resourceType: TOPIC, resourceName: "events", configs: [{ name: "segment.ms", value: "0" }] },
          { resourceType: TOPIC, resourceName: "gone", configs: [] },
          { resourceType: CLUSTER_MIRROR, resourceName: "m1", configs: [{ name: "bootstrap.servers", value: "x:1" }] },
          { resourceType: BROKER, resourceName: "1", configs: [{ name: "num.io.threads", value: "4" }] }
        ])
      )
      .then(
        [config(BROKER, "1", "num.io.threads", "4")],
        [
          err(TOPIC, "orders", 40, "Unknown topic config name: nope"),
          err(TOPIC, "events", 40, "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
          err(TOPIC, "gone", 3, "The topic 'gone' does not exist."),
          err(
            CLUSTER_MIRROR,
            "m1",
            42,
            'Missing required configuration "mirror.source.cluster.id" which has no default value.'
          ),
          ok(BROKER, "1")
        ]
      )
  })
})

describe("ConfigurationControl.createTopicConfigRecords / createMirrorConfigRecords", () => {
  it("validates and builds ConfigRecords", () => {
    expect(
      ConfigurationControl.createTopicConfigRecords("t", [
        { name: "retention.ms", value: "5" },
        { name: "cleanup.policy", value: "compact" }
      ])
    ).toEqual(Either.right([config(TOPIC, "t", "retention.ms", "5"), config(TOPIC, "t", "cleanup.policy", "compact")]))
  })

  it("fails with INVALID_CONFIG or INVALID_REQUEST", () => {
    const tags = (e: Either.Either<unknown, { _tag: string; message: string }>) =>
      Either.isLeft(e) ? [e.left._tag, e.left.message] : ["right"]
    expect(tags(ConfigurationControl.createTopicConfigRecords("t", [{ name: "x", value: "1" }]))).toEqual([
      "InvalidConfig",
      "Unknown topic config name: x"
    ])
    expect(tags(ConfigurationControl.createTopicConfigRecords("t", [{ name: "retention.ms", value: null }]))).toEqual([
      "InvalidConfig",
      "Null value not supported for topic configs: retention.ms"
    ])
    expect(
      tags(
        ConfigurationControl.createTopicConfigRecords("t", [
          { name: "retention.ms", value: "1" },
          { name: "retention.ms", value: "2" }
        ])
      )
    ).toEqual(["InvalidRequest", "Error due to duplicate config keys"])
    expect(
      tags(ConfigurationControl.createMirrorConfigRecords("m", [{ name: "bootstrap.servers", value: "a:1" }]))
    ).toEqual([
      "InvalidRequest",
      'Missing required configuration "mirror.source.cluster.id" which has no default value.'
    ])
    expect(tags(ConfigurationControl.createMirrorConfigRecords("m", [{ name: "topics", value: "a" }]))).toEqual([
      "InvalidConfig",
      "Unknown mirror configuration: topics"
    ])
  })

  it("accepts a mirror's security configs as the brokers will connect with them, the files left to the brokers", () => {
    const base = [
      { name: "bootstrap.servers", value: "a:1" },
      { name: "mirror.source.cluster.id", value: "c" }
    ]
    const secured = [
      ...base,
      { name: "security.protocol", value: "sasl_ssl" },
      { name: "sasl.mechanism", value: "SCRAM-SHA-512" },
      {
        name: "sasl.jaas.config",
        value: 'org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="s3cret";'
      },
      { name: "ssl.truststore.type", value: "PEM" },
      { name: "ssl.truststore.location", value: "/etc/clustermirror/source-ca.pem" },
      { name: "ssl.endpoint.identification.algorithm", value: "" }
    ]
    const records = ConfigurationControl.createMirrorConfigRecords("m", secured)
    expect(Either.getOrThrow(records).map((r) => [r.data.name, r.data.value])).toEqual(
      secured.map((c) => [c.name, c.value])
    )
  })

  it("refuses a mirror's security configs that cannot connect, naming the key and never a secret", () => {
    const tags = (e: Either.Either<unknown, { _tag: string; message: string }>) =>
      Either.isLeft(e) ? [e.left._tag, e.left.message] : ["right"]
    const base = [
      { name: "bootstrap.servers", value: "a:1" },
      { name: "mirror.source.cluster.id", value: "c" }
    ]
    const create = (...extra: ReadonlyArray<readonly [string, string]>) =>
      tags(
        ConfigurationControl.createMirrorConfigRecords("m", [
          ...base,
          ...extra.map(([name, value]) => ({ name, value }))
        ])
      )
    const scram = (password: string) =>
      `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="${password}";`
    expect(create(["security.protocol", "TLS"])).toEqual([
      "InvalidConfig",
      "Invalid value TLS for configuration security.protocol: String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
    ])
    expect(create(["security.protocol", "SASL_SSL"])).toEqual([
      "InvalidConfig",
      "Invalid configuration sasl.jaas.config: must be set for SASL PLAIN"
    ])
    expect(create(["security.protocol", "SASL_SSL"], ["sasl.mechanism", "GSSAPI"])).toEqual([
      "InvalidConfig",
      "Invalid value GSSAPI for configuration sasl.mechanism: GSSAPI (Kerberos) is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
    ])
    // The login module must serve the mechanism; the JAAS text (with its password) is never shown.
    const wrongModule = create(
      ["security.protocol", "SASL_PLAINTEXT"],
      ["sasl.mechanism", "PLAIN"],
      ["sasl.jaas.config", scram("s3cret-one")]
    )
    expect(wrongModule).toEqual([
      "InvalidConfig",
      "Invalid value [hidden] for configuration sasl.jaas.config: the login module org.apache.kafka.common.security.scram.ScramLoginModule does not serve sasl.mechanism PLAIN: use org.apache.kafka.common.security.plain.PlainLoginModule"
    ])
    const unterminated = create(
      ["security.protocol", "SASL_SSL"],
      ["sasl.mechanism", "SCRAM-SHA-256"],
      ["sasl.jaas.config", 'org.apache.kafka.common.security.scram.ScramLoginModule required password="s3cret-two']
    )
    expect(unterminated).toEqual([
      "InvalidConfig",
      "Invalid value [hidden] for configuration sasl.jaas.config: unterminated quoted value"
    ])
    expect(create(["security.protocol", "SSL"], ["ssl.truststore.location", "/ca.jks"])).toEqual([
      "InvalidConfig",
      "Invalid configuration ssl.truststore.type: is not set, so Kafka's default JKS applies, which is not supported: set ssl.truststore.type=PEM or PKCS12"
    ])
    expect(
      create(["security.protocol", "SSL"], ["ssl.keystore.type", "JKS"], ["ssl.keystore.location", "/k.jks"])
    ).toEqual([
      "InvalidConfig",
      "Invalid value JKS for configuration ssl.keystore.type: JKS key stores are not supported: use PEM or PKCS12"
    ])
    expect(
      create(
        ["security.protocol", "SSL"],
        ["ssl.keystore.type", "PKCS12"],
        ["ssl.keystore.location", "/k.p12"],
        ["ssl.keystore.password", "s3cret-three"],
        ["ssl.key.password", "s3cret-four"]
      )
    ).toEqual([
      "InvalidConfig",
      "Invalid value [hidden] for configuration ssl.key.password: must equal ssl.keystore.password for a PKCS12 key store (one passphrase opens both)"
    ])
    // TLS settings on a connection without TLS are refused, not kept and ignored.
    expect(create(["ssl.truststore.location", "/etc/ca.pem"])).toEqual([
      "InvalidConfig",
      "Invalid value /etc/ca.pem for configuration ssl.truststore.location: is a TLS setting, and security.protocol PLAINTEXT does not use TLS (SSL or SASL_SSL do)"
    ])
    expect(create(["security.protocol", "SSL"], ["sasl.jaas.config", scram("s3cret-five")])).toEqual([
      "InvalidConfig",
      "Invalid value [hidden] for configuration sasl.jaas.config: is a SASL setting, and security.protocol SSL does not use SASL (SASL_PLAINTEXT or SASL_SSL do)"
    ])
    expect(create(["security.protocol", "SSL"], ["ssl.cipher.suites", "TLS_AES_128_GCM_SHA256"])).toEqual([
      "InvalidConfig",
      "Invalid value TLS_AES_128_GCM_SHA256 for configuration ssl.cipher.suites: cipher suites are not configurable: Node's TLS defaults apply"
    ])
    expect(create(["security.protocol", "PLAINTEXT"])[0]).toBe("right")
  })

  it("checks the security configs a mirror is left with when they are altered", () => {
    start
      .when(incremental([resource(CLUSTER_MIRROR, "m1", [op("security.protocol", SET, "SASL_SSL")])]))
      .then([], [err(CLUSTER_MIRROR, "m1", 40, "Invalid configuration sasl.jaas.config: must be set for SASL PLAIN")])
    start
      .when(incremental([resource(CLUSTER_MIRROR, "m1", [op("ssl.keystore.location", SET, "/k.pem")])]))
      .then(
        [],
        [
          err(
            CLUSTER_MIRROR,
            "m1",
            40,
            "Invalid value /k.pem for configuration ssl.keystore.location: is a TLS setting, and security.protocol PLAINTEXT does not use TLS (SSL or SASL_SSL do)"
          )
        ]
      )
    const jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="s3cret";'
    start
      .when(
        incremental([
          resource(CLUSTER_MIRROR, "m1", [
            op("security.protocol", SET, "SASL_PLAINTEXT"),
            op("sasl.mechanism", SET, "PLAIN"),
            op("sasl.jaas.config", SET, jaas)
          ])
        ])
      )
      .then(
        [
          config(CLUSTER_MIRROR, "m1", "security.protocol", "SASL_PLAINTEXT"),
          config(CLUSTER_MIRROR, "m1", "sasl.mechanism", "PLAIN"),
          config(CLUSTER_MIRROR, "m1", "sasl.jaas.config", jaas)
        ],
        [ok(CLUSTER_MIRROR, "m1")]
      )
  })

  it("a created mirror exists until its configs are tombstoned", () => {
    const records = Either.getOrThrow(
      ConfigurationControl.createMirrorConfigRecords("m2", [
        { name: "bootstrap.servers", value: "a:1" },
        { name: "mirror.source.cluster.id", value: "c" }
      ])
    )
    const s = start.and(records).state.configs
    expect(ConfigurationControl.mirrorNames(s)).toEqual(["m1", "m2"])
    const gone = start.and(records).and(ConfigurationControl.deleteMirrorConfigRecords(s, "m2")).state.configs
    expect(ConfigurationControl.mirrorExists(gone, "m2")).toBe(false)
    expect(ConfigurationControl.mirrorNames(gone)).toEqual(["m1"])
  })
})

describe("ConfigurationControl.replay", () => {
  it("drops a topic's configs with its RemoveTopicRecord", () => {
    const s = start.and([MetadataRecords.make("RemoveTopicRecord", { topicId: uuid(1) })]).state.configs
    expect(ConfigurationControl.configsOf(s, TOPIC, "orders").size).toBe(0)
    expect(s.topicNames.size).toBe(0)
  })

  it("replays a batch as it replays its records one at a time, without changing the state it starts from", () => {
    const record: fc.Arbitrary<ConfigurationControl.ConfigurationRecord> = fc.oneof(
      fc
        .record({ t: fc.nat(2), name: fc.constantFrom("a", "b", "c") })
        .map(({ t, name }) => MetadataRecords.make("TopicRecord", { name, topicId: uuid(t) })),
      fc.nat(2).map((t) => MetadataRecords.make("RemoveTopicRecord", { topicId: uuid(t) })),
      fc
        .record({
          type: fc.constantFrom(TOPIC, BROKER, CLUSTER_MIRROR),
          name: fc.constantFrom("a", "b", "m"),
          key: fc.constantFrom("retention.ms", "x"),
          value: fc.constantFrom("1", "2", null)
        })
        .map(({ type, name, key, value }) => config(type, name, key, value))
    )
    fc.assert(
      fc.property(fc.array(record, { maxLength: 40 }), fc.nat(40), (records, cut) => {
        const valid: Array<ConfigurationControl.ConfigurationRecord> = []
        let one = ConfigurationControl.empty
        for (const r of records) {
          try {
            one = ConfigurationControl.replay(one, r)
            valid.push(r)
          } catch {}
        }
        const k = Math.min(cut, valid.length)
        const base = valid.slice(0, k).reduce(ConfigurationControl.replay, ConfigurationControl.empty)
        const frozen = plain(base)
        expect(ConfigurationControl.replayAll(base, valid.slice(k))).toEqual(one)
        expect(plain(base)).toEqual(frozen)
      })
    )
  })

  it("replays a batch of thousands of topics with their configs copying each map once, not once per record", () => {
    const n = 2000
    const records = Array.from({ length: n }, (_, i) => [
      MetadataRecords.make("TopicRecord", { name: `t${i}`, topicId: uuid(1000 + i) }),
      config(TOPIC, `t${i}`, "retention.ms", "1")
    ]).flat()
    const { result, copied } = copiedEntries(() => ConfigurationControl.replayAll(ConfigurationControl.empty, records))
    expect(result.topicNames.size).toBe(n)
    expect(ConfigurationControl.configsOf(result, TOPIC, `t${n - 1}`).get("retention.ms")).toBe("1")
    expect(copied).toBeLessThan(5 * n)
  })

  it("replays one config record into a state of 10,000 topic configs copying no map but the resource's own entries", () => {
    const n = 10_000
    const records = Array.from({ length: n }, (_, i) => [
      MetadataRecords.make("TopicRecord", { name: `t${i}`, topicId: uuid(1000 + i) }),
      config(TOPIC, `t${i}`, "retention.ms", "1")
    ]).flat()
    const base = ConfigurationControl.replayAll(ConfigurationControl.empty, records)
    const one = copiedEntries(() => ConfigurationControl.replay(base, config(TOPIC, "t42", "retention.ms", "2")))
    // The one resource's entries (one key) are copied; no map of topics is.
    expect(one.copied).toBeLessThanOrEqual(1)
    expect(ConfigurationControl.configsOf(one.result, TOPIC, "t42").get("retention.ms")).toBe("2")
    expect(ConfigurationControl.configsOf(base, TOPIC, "t42").get("retention.ms")).toBe("1")
    expect(ConfigurationControl.configsOf(one.result, TOPIC, "t41")).toBe(
      ConfigurationControl.configsOf(base, TOPIC, "t41")
    )
    expect(one.result.topicNames).toBe(base.topicNames)
  })

  it("dies on a RemoveTopicRecord for an unknown topic", () => {
    expect(() =>
      ConfigurationControl.replay(
        ConfigurationControl.empty,
        MetadataRecords.make("RemoveTopicRecord", { topicId: uuid(9) })
      )
    ).toThrow(/unknown topic id/)
  })
})

describe("ConfigurationControl tables", () => {
  it("broker keys are in exactly one class: dynamic, read-only or unsupported", () => {
    for (const key of ConfigurationControl.BROKER_CONFIG_DEFS.keys()) {
      expect(ConfigurationControl.BROKER_READ_ONLY_CONFIGS.has(key)).toBe(false)
      expect(ConfigurationControl.unsupportedBrokerConfig(key)).toBeNull()
    }
    for (const key of ConfigurationControl.BROKER_READ_ONLY_CONFIGS)
      expect(ConfigurationControl.unsupportedBrokerConfig(key)).toBeNull()
    for (const key of ConfigurationControl.BROKER_NO_OP_CONFIGS)
      expect(ConfigurationControl.BROKER_CONFIG_DEFS.has(key)).toBe(true)
    expect(ConfigurationControl.unsupportedBrokerConfig("log.cleaner.io.max.bytes.per.second")).toBeNull()
    expect(ConfigurationControl.unsupportedBrokerConfig("log.cleaner.io.buffer.size")).toMatch(/not configurable$/)
  })

  it("every default is a valid value of its own definition", () => {
    for (const defs of [
      ConfigurationControl.TOPIC_CONFIG_DEFS,
      ConfigurationControl.BROKER_CONFIG_DEFS,
      ConfigurationControl.MIRROR_CONFIG_DEFS
    ])
      for (const d of defs.values())
        if (d.default !== null && d.default !== "") expect(ConfigurationControl.validateValue(d, d.default)).toBeNull()
  })

  it("TOPIC_CONFIGS lists every topic key with its default", () => {
    expect(ConfigurationControl.TOPIC_CONFIGS.get("retention.ms")).toBe("604800000")
    expect(ConfigurationControl.TOPIC_CONFIGS.get("unclean.leader.election.enable")).toBe("false")
    expect(ConfigurationControl.TOPIC_CONFIGS.get("mirror.support.unclean.leader.election")).toBe("false")
    expect(ConfigurationControl.validateTopicConfig("retention.ms", null)).toBeNull()
    expect(ConfigurationControl.validateTopicConfig("nope", "1")).toBe("Unknown topic config name: nope")
  })

  it("mirror configs are KIP-1279's keys with their defaults", () => {
    const m = ConfigurationControl.MIRROR_CONFIG_DEFS
    expect(m.get("mirror.topics.exclude")!.default).toBe("__.*")
    expect(m.get("sasl.mechanism")!.default).toBe("PLAIN")
    expect(m.get("ssl.endpoint.identification.algorithm")!.default).toBe("https")
    expect(m.get("mirror.fetch.response.max.bytes")!.default).toBe("10485760")
    expect(m.get("sasl.jaas.config")!.type).toBe("password")
    expect(ConfigurationControl.MIRROR_FILTER_CONFIGS.has("mirror.acls.include")).toBe(true)
  })

  it("password-type configs are sensitive for every resource type, including prefixed broker keys", () => {
    const { CLUSTER_MIRROR: M, BROKER: B, TOPIC: T } = ConfigurationControl.ResourceType
    const sensitive = (type: number, key: string) => ConfigurationControl.isSensitive(type, key)
    for (const key of [...ConfigurationControl.MIRROR_CONFIG_DEFS.values()].filter((d) => d.type === "password"))
      expect([key.name, sensitive(M, key.name)]).toEqual([key.name, true])
    expect(sensitive(B, "listener.name.sasl_ssl.plain.sasl.jaas.config")).toBe(true)
    expect(sensitive(B, "listener.name.ssl.ssl.truststore.password")).toBe(true)
    expect(sensitive(M, "bootstrap.servers")).toBe(false)
    expect(sensitive(M, "sasl.mechanism")).toBe(false)
    expect(sensitive(T, "retention.ms")).toBe(false)
  })
})
