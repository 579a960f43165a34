import { describe, expect, it } from "@effect/vitest"
import {
  type CreateClusterMirror,
  Errors,
  MetadataRecords,
  type StartMirrorTopics,
  Uuid
} from "@clustermirror/protocol"
import * as fc from "fast-check"
import * as ConfigurationControl from "../src/ConfigurationControl.js"
import * as ControllerState from "../src/ControllerState.js"
import * as ControllerTest from "../src/ControllerTest.js"
import * as MirrorControl from "../src/MirrorControl.js"
import * as ReplicationControl from "../src/ReplicationControl.js"
import { copiedEntries, uuid } from "./clusterFixtures.js"
import { referenceStart } from "./startMirrorTopicsReference.js"

const E = Errors.ErrorCode
type Rec = MetadataRecords.MetadataRecord

// ---------------------------------------------------------------------------------------------------
// Fixtures

const clusterOf = (live: ReadonlyArray<number>): ReplicationControl.ClusterView => ({
  liveBrokers: live,
  isActive: (b) => live.includes(b),
  isRegistered: (b) => live.includes(b)
})

const CLUSTER = clusterOf([1, 2, 3])

const ids = () => {
  let n = 500
  return () => uuid(n++)
}

const startCtx = (nextOffset: bigint, extra: Partial<MirrorControl.StartMirrorTopicsContext> = {}) => ({
  nextOffset,
  clusterView: CLUSTER,
  newTopicId: ids(),
  ...extra
})

const mirrorConfig = (mirror: string, name: string, value: string | null) =>
  MetadataRecords.make("ConfigRecord", { resourceType: 64, resourceName: mirror, name, value })

/** The records of an existing mirror. */
const mirrorRecords = (mirror: string): ReadonlyArray<Rec> => [
  mirrorConfig(mirror, "bootstrap.servers", "source:9092"),
  mirrorConfig(mirror, "mirror.source.cluster.id", "source-cluster")
]

const topicRecords = (name: string, topicId: string, partitions = 2): ReadonlyArray<Rec> => [
  MetadataRecords.make("TopicRecord", { name, topicId }),
  ...Array.from({ length: partitions }, (_, partitionId) =>
    MetadataRecords.make("PartitionRecord", {
      partitionId,
      topicId,
      replicas: [1, 2],
      isr: [1, 2],
      removingReplicas: [],
      addingReplicas: [],
      leader: 1,
      leaderRecoveryState: 0,
      leaderEpoch: 0,
      partitionEpoch: 0
    })
  )
]

const mstate = MetadataRecords.mirrorTopicStateChange

const T1 = uuid(1)
const T2 = uuid(2)
const T3 = uuid(3)

/** Mirrors m and other; topics t1 (MIRRORING in m), t2 (PAUSED in m), t3 (STOPPED in m), local (no mirror). */
const world: ReadonlyArray<Rec> = [
  ...ControllerTest.bootstrap,
  ...mirrorRecords("m"),
  ...mirrorRecords("other"),
  ...topicRecords("t1", T1),
  ...topicRecords("t2", T2),
  ...topicRecords("t3", T3),
  ...topicRecords("local", uuid(4)),
  mstate(T1, "m", "MIRRORING"),
  mstate(T2, "m", "MIRRORING"),
  mstate(T2, "m", "PAUSED"),
  mstate(T3, "m", "MIRRORING"),
  mstate(T3, "m", "STOPPED")
]

const start = (
  topics: ReadonlyArray<{
    name: string
    id?: string
    partitions?: number
    configs?: ReadonlyArray<{ name: string; value: string | null }>
  }>,
  extra: Partial<StartMirrorTopics.Request> = {}
): StartMirrorTopics.Request => ({
  mirrorName: "m",
  topics: topics.map((t) => ({
    topicName: t.name,
    topicId: t.id ?? Uuid.ZERO,
    numPartitions: t.partitions ?? -1,
    configs: t.configs ?? []
  })),
  includePatterns: [],
  excludePatterns: [],
  stateValidationOffset: -1n,
  defaultReplicationFactor: -1,
  ...extra
})

const names = (mirrorName: string, topics: ReadonlyArray<string>, stateValidationOffset = -1n) => ({
  mirrorName,
  topics: topics.map((topicName) => ({ topicName })),
  stateValidationOffset
})

const ok = { errorCode: E.NONE, errorMessage: null }
const topicsResponse = (
  results: ReadonlyArray<readonly [string, number, (string | null)?]>,
  top: { errorCode: number; errorMessage: string | null } = ok
) => ({
  throttleTimeMs: 0,
  ...top,
  topics: results.map(([name, errorCode, errorMessage]) => ({ name, errorCode, errorMessage: errorMessage ?? null }))
})

const topicOf = (g: ControllerTest.Given, name: string) => ReplicationControl.topicByName(g.state.replication, name)!
const mirrorConfigs = (g: ControllerTest.Given, mirror: string) =>
  ConfigurationControl.configsOf(g.state.configs, 64, mirror)

// ---------------------------------------------------------------------------------------------------
// CreateClusterMirror

const create = (mirrorName: string, config: Record<string, string | null>): CreateClusterMirror.Request => ({
  mirrorName,
  config: Object.entries(config).map(([name, value]) => ({ name, value }))
})

const REQUIRED = { "bootstrap.servers": "source:9092", "mirror.source.cluster.id": "src" }
const createCtx = { clusterView: clusterOf([1, 2]), newTopicId: ids() }
const fail = (errorCode: number, errorMessage: string) => ({ throttleTimeMs: 0, errorCode, errorMessage })

describe("createClusterMirror", () => {
  it("writes the mirror configs (type 64) and creates __mirror_state, its replication factor capped to live brokers", () => {
    const o = ControllerTest.given(ControllerTest.bootstrap)
      .when((s) => MirrorControl.createClusterMirror(s, create("m", REQUIRED), createCtx))
      .outcome()
    expect(o.response).toEqual({ throttleTimeMs: 0, errorCode: E.NONE, errorMessage: null })
    expect(o.records.slice(0, 2)).toEqual([
      mirrorConfig("m", "bootstrap.servers", "source:9092"),
      mirrorConfig("m", "mirror.source.cluster.id", "src")
    ])
    const topic = topicOf(o.after, "__mirror_state")
    expect(topic.partitions.size).toBe(50)
    expect([...topic.partitions.values()].every((p) => p.replicas.length === 2)).toBe(true)
    expect(topic.mirrorName).toBeNull()
    expect(Object.fromEntries(ConfigurationControl.configsOf(o.after.state.configs, 2, "__mirror_state"))).toEqual({
      "cleanup.policy": "compact",
      "compression.type": "producer",
      "retention.ms": "-1"
    })
    expect(ConfigurationControl.mirrorExists(o.after.state.configs, "m")).toBe(true)
  })

  it("uses the configured partitions and replication factor of __mirror_state", () => {
    const o = ControllerTest.given(ControllerTest.bootstrap)
      .when((s) =>
        MirrorControl.createClusterMirror(s, create("m", REQUIRED), {
          clusterView: CLUSTER,
          newTopicId: ids(),
          mirrorStateTopicPartitions: 3,
          mirrorStateTopicReplicationFactor: 2
        })
      )
      .outcome()
    const topic = topicOf(o.after, "__mirror_state")
    expect(topic.partitions.size).toBe(3)
    expect([...topic.partitions.values()].map((p) => p.replicas.length)).toEqual([2, 2, 2])
  })

  it("writes only the configs when __mirror_state exists", () => {
    ControllerTest.given([...ControllerTest.bootstrap, ...topicRecords("__mirror_state", uuid(9), 1)])
      .when((s) => MirrorControl.createClusterMirror(s, create("m2", REQUIRED), createCtx))
      .then(
        [mirrorConfig("m2", "bootstrap.servers", "source:9092"), mirrorConfig("m2", "mirror.source.cluster.id", "src")],
        { throttleTimeMs: 0, errorCode: E.NONE, errorMessage: null }
      )
  })

  it("refuses an existing mirror with 136", () => {
    ControllerTest.given(world)
      .when((s) => MirrorControl.createClusterMirror(s, create("m", REQUIRED), createCtx))
      .then([], fail(E.CLUSTER_MIRROR_ALREADY_EXISTS, "Mirror 'm' already exists"))
  })

  it("requires bootstrap.servers and mirror.source.cluster.id (INVALID_REQUEST)", () => {
    const g = ControllerTest.given(ControllerTest.bootstrap)
    g.when((s) =>
      MirrorControl.createClusterMirror(s, create("m", { "mirror.source.cluster.id": "src" }), createCtx)
    ).then(
      [],
      fail(E.INVALID_REQUEST, 'Missing required configuration "bootstrap.servers" which has no default value.')
    )
    g.when((s) =>
      MirrorControl.createClusterMirror(
        s,
        create("m", { "bootstrap.servers": "x:1", "mirror.source.cluster.id": " " }),
        createCtx
      )
    ).then(
      [],
      fail(E.INVALID_REQUEST, 'Missing required configuration "mirror.source.cluster.id" which has no default value.')
    )
  })

  it("names a bad security setting before a missing cluster id (a client could not look it up)", () => {
    ControllerTest.given(ControllerTest.bootstrap)
      .when((s) =>
        MirrorControl.createClusterMirror(
          s,
          create("m", { "bootstrap.servers": "x:1", "security.protocol": "SASL_SSL" }),
          createCtx
        )
      )
      .then([], fail(E.INVALID_CONFIG, "Invalid configuration sasl.jaas.config: must be set for SASL PLAIN"))
  })

  it("refuses unknown keys and invalid values with INVALID_CONFIG", () => {
    const g = ControllerTest.given(ControllerTest.bootstrap)
    const unknown = g.when((s) =>
      MirrorControl.createClusterMirror(s, create("m", { ...REQUIRED, "no.such.key": "1" }), createCtx)
    )
    unknown.then([], fail(E.INVALID_CONFIG, "Unknown mirror configuration: no.such.key"))
    const bad = g.when((s) =>
      MirrorControl.createClusterMirror(s, create("m", { ...REQUIRED, "request.timeout.ms": "soon" }), createCtx)
    )
    expect(bad.outcome().response.errorCode).toBe(E.INVALID_CONFIG)
    expect(bad.outcome().records).toEqual([])
  })

  it("enforces the mirror name rules (§2.3)", () => {
    for (const name of ["", ".", "..", "a/b", "a b", "x".repeat(250)]) {
      const o = ControllerTest.given(ControllerTest.bootstrap)
        .when((s) => MirrorControl.createClusterMirror(s, create(name, REQUIRED), createCtx))
        .outcome()
      expect(o.response.errorCode, name).toBe(E.INVALID_REQUEST)
      expect(o.records).toEqual([])
    }
    const o = ControllerTest.given(ControllerTest.bootstrap)
      .when((s) => MirrorControl.createClusterMirror(s, create("A-z_0.9", REQUIRED), createCtx))
      .outcome()
    expect(o.response.errorCode).toBe(E.NONE)
  })

  it("answers UNSUPPORTED_VERSION while mirror.version is 0", () => {
    ControllerTest.given([])
      .when((s) => MirrorControl.createClusterMirror(s, create("m", REQUIRED), createCtx))
      .then([], fail(E.UNSUPPORTED_VERSION, "Cluster mirroring is disabled: the finalized mirror.version is below 1."))
  })

  it("writes nothing when __mirror_state cannot be created (no live broker)", () => {
    const o = ControllerTest.given(ControllerTest.bootstrap)
      .when((s) =>
        MirrorControl.createClusterMirror(s, create("m", REQUIRED), { clusterView: clusterOf([]), newTopicId: ids() })
      )
      .outcome()
    expect(o.records).toEqual([])
    expect(o.response.errorCode).toBe(E.INVALID_REPLICATION_FACTOR)
    expect(o.response.errorMessage).toMatch(/^Unable to create the __mirror_state topic: /)
  })
})

// ---------------------------------------------------------------------------------------------------
// StartMirrorTopics

describe("startMirrorTopics", () => {
  it("JR31.1: a topic unknown on the source is persisted in mirror.topics.include, without a state record", () => {
    const after = ControllerTest.given(world)
      .when((s, { nextOffset }) => MirrorControl.startMirrorTopics(s, start([{ name: "later" }]), startCtx(nextOffset)))
      .then([mirrorConfig("m", "mirror.topics.include", "later")], topicsResponse([["later", E.NONE]]))
    expect(ReplicationControl.topicByName(after.state.replication, "later")).toBeUndefined()
    // A source id without a partition count cannot create the topic either: discovery will.
    ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "later", id: uuid(77), partitions: 0 }]),
          startCtx(nextOffset)
        )
      )
      .then([mirrorConfig("m", "mirror.topics.include", "later")], topicsResponse([["later", E.NONE]]))
  })

  it("creates a missing topic with the source topic id and NumPartitions, then MIRRORING", () => {
    const src = uuid(100)
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([{ name: "orders", id: src, partitions: 4 }]), startCtx(nextOffset))
      )
      .outcome()
    expect(o.response).toEqual(topicsResponse([["orders", E.NONE]]))
    expect(o.records[0]).toEqual(mirrorConfig("m", "mirror.topics.include", "orders"))
    expect(o.records[1]).toEqual(MetadataRecords.make("TopicRecord", { name: "orders", topicId: src }))
    expect(o.records.filter((r) => r.type === "PartitionRecord")).toHaveLength(4)
    expect(o.records.at(-1)).toEqual(mstate(src, "m", "MIRRORING"))
    const topic = topicOf(o.after, "orders")
    expect(topic.topicId).toBe(src)
    expect(topic.mirrorName).toBe("m")
    expect(topic.desiredMirrorState).toBe(2)
    expect(topic.lastMirrorStateChangeOffset).toBe(o.after.nextOffset - 1n)
  })

  it("creates a missing topic with the source configs the broker stamped, leaving out the ones it refuses", () => {
    const src = uuid(100)
    const configs = [
      { name: "cleanup.policy", value: "compact" },
      { name: "segment.bytes", value: "1048576" },
      { name: "no.such.config", value: "1" },
      { name: "retention.ms", value: null }
    ]
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "orders", id: src, partitions: 1, configs }]),
          startCtx(nextOffset)
        )
      )
      .outcome()
    expect(o.response).toEqual(topicsResponse([["orders", E.NONE]]))
    const topicConfigs = o.records
      .filter((r) => r.type === "ConfigRecord" && r.data.resourceType === 2)
      .map((r) => (r.type === "ConfigRecord" ? [r.data.resourceName, r.data.name, r.data.value] : []))
    expect(topicConfigs).toEqual([
      ["orders", "cleanup.policy", "compact"],
      ["orders", "segment.bytes", "1048576"]
    ])
    // Created before its MIRRORING record: the topic never exists without the source's configs.
    const firstConfig = o.records.findIndex((r) => r.type === "ConfigRecord" && r.data.resourceType === 2)
    expect(firstConfig).toBeLessThan(o.records.findIndex((r) => r.type === "MirrorTopicStateChangeRecord"))
  })

  it("JR48: NumPartitions is ignored when the topic exists", () => {
    const after = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([{ name: "local", id: uuid(4), partitions: 9 }]), startCtx(nextOffset))
      )
      .then(
        [mirrorConfig("m", "mirror.topics.include", "local"), mstate(uuid(4), "m", "MIRRORING")],
        topicsResponse([["local", E.NONE]])
      )
    expect(topicOf(after, "local").partitions.size).toBe(2)
  })

  it("refuses a topic whose id differs from the source id (INCONSISTENT_TOPIC_ID) and goes no further", () => {
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "local", id: uuid(99), partitions: 2 }]),
          startCtx(nextOffset)
        )
      )
      .outcome()
    expect(o.response.errorCode).toBe(E.INCONSISTENT_TOPIC_ID)
    expect(o.response.topics[0]!.errorCode).toBe(E.INCONSISTENT_TOPIC_ID)
    expect(o.records.some((r) => r.type === "MirrorTopicStateChangeRecord")).toBe(false)
    expect(topicOf(o.after, "local").mirrorName).toBeNull()
  })

  it("refuses a source id another topic already has (TOPIC_ALREADY_EXISTS) and creates nothing", () => {
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([{ name: "copy", id: T1, partitions: 2 }]), startCtx(nextOffset))
      )
      .outcome()
    expect(o.response.topics).toEqual([
      { name: "copy", errorCode: E.TOPIC_ALREADY_EXISTS, errorMessage: `Topic id ${T1} is already used by topic 't1'.` }
    ])
    expect(o.records.filter((r) => r.type !== "ConfigRecord")).toEqual([])
  })

  it("refuses a topic another mirror is mirroring (138), takes one it stopped", () => {
    const g = ControllerTest.given(world)
      .and([...topicRecords("x", uuid(10)), mstate(uuid(10), "other", "MIRRORING")])
      .and([...topicRecords("y", uuid(11)), mstate(uuid(11), "other", "STOPPED")])
    const o = g
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([{ name: "x" }, { name: "y" }]), startCtx(nextOffset))
      )
      .outcome()
    expect(o.response.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ["x", E.TOPIC_ALREADY_IN_CLUSTER_MIRROR],
      ["y", E.NONE]
    ])
    expect(o.response.errorCode).toBe(E.TOPIC_ALREADY_IN_CLUSTER_MIRROR)
    expect(o.records.filter((r) => r.type === "MirrorTopicStateChangeRecord")).toEqual([
      mstate(uuid(11), "m", "MIRRORING")
    ])
  })

  it("JR47: start is valid from STOPPED and UNKNOWN; MIRRORING is a no-op, PAUSED is refused with 146", () => {
    const o = ControllerTest.given(world)
      .and([mirrorConfig("m", "mirror.topics.include", "t1,t2,t3,local")])
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "t1" }, { name: "t2" }, { name: "t3" }, { name: "local" }]),
          startCtx(nextOffset)
        )
      )
    o.then(
      [mstate(T3, "m", "MIRRORING"), mstate(uuid(4), "m", "MIRRORING")],
      topicsResponse(
        [
          ["t1", E.NONE],
          ["t2", E.MIRROR_TOPIC_NOT_STOPPED, "Topic 't2' of mirror 'm' is not stopped."],
          ["t3", E.NONE],
          ["local", E.NONE]
        ],
        { errorCode: E.MIRROR_TOPIC_NOT_STOPPED, errorMessage: "Topic 't2' of mirror 'm' is not stopped." }
      )
    )
  })

  it("JR28: a topic whose mirror state changed after StateValidationOffset rejects the whole request (145)", () => {
    const g = ControllerTest.given(world)
    // t3's last state change is the last record of `world`.
    const changedAt = topicOf(g, "t3").lastMirrorStateChangeOffset
    const stale = g.when((s, { nextOffset }) =>
      MirrorControl.startMirrorTopics(
        s,
        start([{ name: "local" }, { name: "t3" }], { stateValidationOffset: changedAt - 1n }),
        startCtx(nextOffset)
      )
    )
    const message = `The mirror state of topic 't3' changed at offset ${changedAt}, after the validation at offset ${changedAt - 1n}.`
    stale.then(
      [],
      topicsResponse(
        [
          ["local", E.INVALID_CLUSTER_MIRROR_STATES, message],
          ["t3", E.INVALID_CLUSTER_MIRROR_STATES, message]
        ],
        { errorCode: E.INVALID_CLUSTER_MIRROR_STATES, errorMessage: message }
      )
    )
    for (const stamp of [changedAt, changedAt + 5n, -1n]) {
      const o = g
        .when((s, { nextOffset }) =>
          MirrorControl.startMirrorTopics(
            s,
            start([{ name: "t3" }], { stateValidationOffset: stamp }),
            startCtx(nextOffset)
          )
        )
        .outcome()
      expect(o.response.errorCode, String(stamp)).toBe(E.NONE)
    }
  })

  it("refuses an unknown mirror (137) as a whole", () => {
    ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, { ...start([{ name: "a" }]), mirrorName: "nope" }, startCtx(nextOffset))
      )
      .then(
        [],
        topicsResponse([["a", E.UNKNOWN_CLUSTER_MIRROR, "Mirror 'nope' not found"]], {
          errorCode: E.UNKNOWN_CLUSTER_MIRROR,
          errorMessage: "Mirror 'nope' not found"
        })
      )
  })

  it("§5.3: IncludePatterns and ExcludePatterns extend the lists, the default __.* exclude is kept", () => {
    const after = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([], { includePatterns: ["orders.*"], excludePatterns: ["orders\\.tmp.*"] }),
          startCtx(nextOffset)
        )
      )
      .then(
        [
          mirrorConfig("m", "mirror.topics.include", "orders.*"),
          mirrorConfig("m", "mirror.topics.exclude", "__.*,orders\\.tmp.*")
        ],
        topicsResponse([])
      )
    // An IncludePattern equal to an exclude entry moves it out of the exclude list.
    after
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([], { includePatterns: ["orders\\.tmp.*"] }), startCtx(nextOffset))
      )
      .then(
        [
          mirrorConfig("m", "mirror.topics.include", "orders.*,orders\\.tmp.*"),
          mirrorConfig("m", "mirror.topics.exclude", "__.*")
        ],
        topicsResponse([])
      )
  })

  it("§5.3: a topic the exclude list matches is refused with INVALID_REQUEST; exclude wins over include", () => {
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "__internal" }, { name: "tmp1" }, { name: "keep" }], { excludePatterns: ["tmp.*"] }),
          startCtx(nextOffset)
        )
      )
      .outcome()
    expect(o.response.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ["__internal", E.INVALID_REQUEST],
      ["tmp1", E.INVALID_REQUEST],
      ["keep", E.NONE]
    ])
    expect(o.response.topics[1]!.errorMessage).toBe(
      "Unable to start the topic 'tmp1' to mirror because it matches the exclude patterns of mirror 'm'."
    )
    expect(mirrorConfigs(o.after, "m").get("mirror.topics.exclude")).toBe("__.*,tmp.*")
  })

  it("stops the mirror's topics that a new exclude pattern matches", () => {
    ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([], { excludePatterns: ["t[12]"] }), startCtx(nextOffset))
      )
      .then(
        [
          mirrorConfig("m", "mirror.topics.exclude", "__.*,t[12]"),
          mstate(T1, "m", "STOPPED"),
          mstate(T2, "m", "STOPPED")
        ],
        topicsResponse([])
      )
  })

  it("refuses a pattern that does not compile, as a whole", () => {
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, start([{ name: "a" }], { includePatterns: ["(oops"] }), startCtx(nextOffset))
      )
      .outcome()
    expect(o.records).toEqual([])
    expect(o.response.errorCode).toBe(E.INVALID_REQUEST)
    expect(o.response.errorMessage).toBe("Invalid topic pattern '(oops'.")
  })

  it("answers duplicates, illegal names and internal topics per topic", () => {
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start(
            [{ name: "d" }, { name: "d" }, { name: "bad/name" }, { name: "__consumer_offsets" }, { name: "fine" }],
            {
              includePatterns: ["__.*"]
            }
          ),
          startCtx(nextOffset)
        )
      )
      .outcome()
    expect(o.response.topics.map((t) => [t.name, t.errorCode])).toEqual([
      ["d", E.INVALID_REQUEST],
      ["bad/name", E.INVALID_TOPIC_EXCEPTION],
      ["__consumer_offsets", E.INVALID_REQUEST],
      ["fine", E.NONE]
    ])
    expect(mirrorConfigs(o.after, "m").get("mirror.topics.include")).toBe("__.*,fine")
  })

  it("reports CreateTopics' errors for the destination topic: replicas must all be on active brokers", () => {
    // Broker 3 is registered but fenced: a mirror topic may not put a replica on it.
    const fenced: ReplicationControl.ClusterView = {
      liveBrokers: [1, 2],
      isActive: (b) => b === 1 || b === 2,
      isRegistered: (b) => b >= 1 && b <= 3
    }
    const o = ControllerTest.given([...world, mirrorConfig("m", "replication.factor", "3")])
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "big", id: uuid(200), partitions: 1 }]),
          startCtx(nextOffset, { clusterView: fenced })
        )
      )
      .outcome()
    expect(o.response.topics[0]!.errorCode).toBe(E.INVALID_REPLICATION_FACTOR)
    expect(o.response.topics[0]!.errorMessage).toMatch(/^replication\.factor=3 of mirror 'm': /)
    expect(o.records.filter((r) => r.type !== "ConfigRecord")).toEqual([])
  })
})

describe("startMirrorTopics over many topics", () => {
  const NAMES = ["a", "b", "a.b", "a_b", "c", "t1", "t2", "t3", "local", "x", "__x", "__mirror_state", "bad name", ""]
  const IDS = [Uuid.ZERO, Uuid.ZERO, T1, uuid(4), uuid(10), uuid(300), uuid(301), uuid(500), uuid(501)]
  const requestArb = fc.record({
    topics: fc.array(
      fc.record({
        topicName: fc.constantFrom(...NAMES),
        topicId: fc.constantFrom(...IDS),
        numPartitions: fc.integer({ min: -1, max: 3 }),
        configs: fc.constant([])
      }),
      { maxLength: 10 }
    ),
    includePatterns: fc.subarray(["a.*", "c", "z"]),
    excludePatterns: fc.subarray(["a_b", "b", "t.*", "(bad"], { maxLength: 2 }),
    defaultReplicationFactor: fc.integer({ min: -1, max: 4 }),
    controllerDefault: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    mirrorReplicationFactor: fc.constantFrom(null, "-1", "2", "5"),
    live: fc.constantFrom([1, 2, 3], [1, 2], [2], []),
    stamp: fc.constantFrom(-1n, 0n, 1000n)
  })

  it("gives the records and response of deciding each topic against the state the topics before it leave", () => {
    fc.assert(
      fc.property(requestArb, (r) => {
        const g = ControllerTest.given(world).and([
          ...topicRecords("x", uuid(10)),
          mstate(uuid(10), "other", "MIRRORING"),
          ...(r.mirrorReplicationFactor === null
            ? []
            : [mirrorConfig("m", MirrorControl.REPLICATION_FACTOR_CONFIG, r.mirrorReplicationFactor)])
        ])
        const request: StartMirrorTopics.Request = {
          mirrorName: "m",
          topics: r.topics,
          includePatterns: r.includePatterns,
          excludePatterns: r.excludePatterns,
          stateValidationOffset: r.stamp,
          defaultReplicationFactor: r.defaultReplicationFactor
        }
        const ctx = () =>
          startCtx(g.nextOffset, {
            clusterView: clusterOf(r.live),
            ...(r.controllerDefault === undefined ? {} : { defaultReplicationFactor: r.controllerDefault })
          })
        const decided = MirrorControl.startMirrorTopics(g.state, request, ctx())
        const expected = referenceStart(g.state, request, ctx())
        expect(decided.records).toEqual(expected.records)
        expect(decided.response).toEqual(expected.response)
      }),
      { numRuns: 400 }
    )
  })

  it("decides and replays a start of thousands of topics copying entries linear in the topics", () => {
    const n = 2000
    const g = ControllerTest.given(world)
    const request = start(Array.from({ length: n }, (_, i) => ({ name: `s${i}`, id: uuid(5000 + i), partitions: 1 })))
    const { result, copied } = copiedEntries(() => {
      const decided = MirrorControl.startMirrorTopics(g.state, request, startCtx(g.nextOffset))
      // The runtime replays the records into a candidate state before it appends them.
      return { decided, after: ControllerState.replayAll(g.state, decided.records, g.nextOffset) }
    })
    expect(result.decided.response.topics.filter((t) => t.errorCode !== E.NONE)).toEqual([])
    expect(MirrorControl.topicsOf(result.after, "m").filter((t) => t.desiredMirrorState === 2)).toHaveLength(n + 1)
    // Replaying each topic's records into a copy of the state before it copied the topic maps per topic (n² entries).
    expect(copied).toBeLessThan(20 * n)
  })
})

describe("startMirrorTopics: the replication factor of the destination topics it creates", () => {
  const replicasOf = (records: ReadonlyArray<Rec>) =>
    records.flatMap((r) => (r.type === "PartitionRecord" ? [r.data.replicas.length] : []))
  const startOrders = (
    given: ReadonlyArray<Rec>,
    request: Partial<StartMirrorTopics.Request>,
    ctx: Partial<MirrorControl.StartMirrorTopicsContext>
  ) =>
    ControllerTest.given(given)
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(
          s,
          start([{ name: "orders", id: uuid(300), partitions: 2 }], request),
          startCtx(nextOffset, ctx)
        )
      )
      .outcome()

  it("takes the forwarding broker's default.replication.factor over the controller's", () => {
    const o = startOrders(world, { defaultReplicationFactor: 3 }, { defaultReplicationFactor: 1 })
    expect(o.response).toEqual(topicsResponse([["orders", E.NONE]]))
    expect(replicasOf(o.records)).toEqual([3, 3])
  })

  it("takes the controller's default.replication.factor when the request carries none (-1)", () => {
    const o = startOrders(world, { defaultReplicationFactor: -1 }, { defaultReplicationFactor: 2 })
    expect(o.response).toEqual(topicsResponse([["orders", E.NONE]]))
    expect(replicasOf(o.records)).toEqual([2, 2])
  })

  it("takes the mirror's replication.factor over both defaults; -1 there means the defaults", () => {
    const explicit = startOrders(
      [...world, mirrorConfig("m", "replication.factor", "2")],
      { defaultReplicationFactor: 3 },
      { defaultReplicationFactor: 1 }
    )
    expect(replicasOf(explicit.records)).toEqual([2, 2])
    const unset = startOrders(
      [...world, mirrorConfig("m", "replication.factor", "-1")],
      { defaultReplicationFactor: 3 },
      { defaultReplicationFactor: 1 }
    )
    expect(replicasOf(unset.records)).toEqual([3, 3])
  })

  it("caps a default above the live brokers at their number and says so in the topic's result", () => {
    const o = startOrders(world, { defaultReplicationFactor: 3 }, { clusterView: clusterOf([1, 2]) })
    expect(o.response).toEqual(
      topicsResponse([
        [
          "orders",
          E.NONE,
          "Created with replication factor 2, the number of live brokers: the default.replication.factor of the broker that forwarded the request is 3."
        ]
      ])
    )
    expect(replicasOf(o.records)).toEqual([2, 2])
    expect(o.records.at(-1)).toEqual(mstate(uuid(300), "m", "MIRRORING"))
    const controllers = startOrders(world, {}, { defaultReplicationFactor: 4 })
    expect(controllers.response.topics[0]!.errorMessage).toBe(
      "Created with replication factor 3, the number of live brokers: the controller's default.replication.factor is 4."
    )
    expect(replicasOf(controllers.records)).toEqual([3, 3])
  })

  it("never caps the mirror's replication.factor: more than the live brokers is INVALID_REPLICATION_FACTOR", () => {
    const o = startOrders([...world, mirrorConfig("m", "replication.factor", "4")], { defaultReplicationFactor: 3 }, {})
    expect(o.response.errorCode).toBe(E.INVALID_REPLICATION_FACTOR)
    expect(o.response.topics[0]!.errorCode).toBe(E.INVALID_REPLICATION_FACTOR)
    expect(o.response.topics[0]!.errorMessage).toMatch(/^replication\.factor=4 of mirror 'm': Unable to replicate/)
    expect(o.records.filter((r) => r.type !== "ConfigRecord")).toEqual([])
  })

  it("accepts replication.factor -1 or at least 1 as a mirror config, and refuses other values", () => {
    const g = ControllerTest.given(ControllerTest.bootstrap)
    for (const ok of ["-1", "1", "3"])
      expect(
        g
          .when((s) =>
            MirrorControl.createClusterMirror(s, create("m", { ...REQUIRED, "replication.factor": ok }), createCtx)
          )
          .outcome().response.errorCode,
        ok
      ).toBe(E.NONE)
    for (const bad of ["0", "-2", "three", "40000"])
      expect(
        g
          .when((s) =>
            MirrorControl.createClusterMirror(s, create("m", { ...REQUIRED, "replication.factor": bad }), createCtx)
          )
          .outcome().response.errorCode,
        bad
      ).toBe(E.INVALID_CONFIG)
  })
})

// ---------------------------------------------------------------------------------------------------
// StopMirrorTopics, PauseMirrorTopics, ResumeMirrorTopics

const withX = ControllerTest.given(world).and([...topicRecords("x", uuid(10)), mstate(uuid(10), "other", "MIRRORING")])

describe("stopMirrorTopics", () => {
  const stop = (topics: ReadonlyArray<string>, patterns: ReadonlyArray<string> = [], stamp = -1n) => ({
    ...names("m", topics, stamp),
    patterns
  })

  it("JR47: stops MIRRORING topics; STOPPED is a no-op; PAUSED is refused with 140; membership errors per topic", () => {
    withX
      .when((s, { nextOffset }) =>
        MirrorControl.stopMirrorTopics(s, stop(["t1", "t2", "t3", "local", "x", "ghost"]), { nextOffset })
      )
      .then(
        [mstate(T1, "m", "STOPPED")],
        topicsResponse([
          ["t1", E.NONE],
          ["t2", E.MIRROR_TOPIC_ALREADY_PAUSED, "Topic 't2' is paused; resume it before stopping it."],
          ["t3", E.NONE],
          ["local", E.UNKNOWN_CLUSTER_MIRROR, "Topic 'local' does not belong to any cluster mirror."],
          ["x", E.TOPIC_NOT_IN_CLUSTER_MIRROR, "Topic 'x' belongs to mirror 'other', not to mirror 'm'."],
          ["ghost", E.UNKNOWN_TOPIC_OR_PARTITION, "Topic 'ghost' does not exist."]
        ])
      )
  })

  it("stops thousands of topics (by name, by pattern) deciding and replaying as the runtime does in time linear in the topics", () => {
    const n = 2000
    const records: Array<Rec> = [...ControllerTest.bootstrap, ...mirrorRecords("m")]
    for (let i = 0; i < n; i++)
      records.push(...topicRecords(`s${i}`, uuid(5000 + i), 1), mstate(uuid(5000 + i), "m", "MIRRORING"))
    const state = ControllerState.replayAll(ControllerState.empty, records, 0n)
    const nextOffset = BigInt(records.length)
    const all = Array.from({ length: n }, (_, i) => `s${i}`)
    for (const request of [stop(all), stop(all, ["s.*"])]) {
      const { result, copied } = copiedEntries(() => {
        const decided = MirrorControl.stopMirrorTopics(state, request, { nextOffset })
        // The runtime replays the records into a candidate state before it appends them.
        return { decided, after: ControllerState.replayAll(state, decided.records, nextOffset) }
      })
      expect(result.decided.response.topics.filter((t) => t.errorCode !== E.NONE)).toEqual([])
      expect(MirrorControl.topicsOf(result.after, "m").every((t) => t.desiredMirrorState === 6)).toBe(true)
      // A record at a time, each of the n stop records copied the map of all n topics (n² entries).
      expect(copied).toBeLessThan(10 * n)
    }
  })

  it("JR28: the optimistic lock rejects the whole request", () => {
    const g = ControllerTest.given(world)
    const at = topicOf(g, "t1").lastMirrorStateChangeOffset
    const o = g
      .when((s, { nextOffset }) => MirrorControl.stopMirrorTopics(s, stop(["t1"], [], at - 1n), { nextOffset }))
      .outcome()
    expect(o.records).toEqual([])
    expect(o.response.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
    expect(o.response.topics[0]!.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
  })

  it("refuses an unknown mirror (137)", () => {
    const o = ControllerTest.given(world)
      .when((s, { nextOffset }) =>
        MirrorControl.stopMirrorTopics(s, { ...stop(["t1"]), mirrorName: "nope" }, { nextOffset })
      )
      .outcome()
    expect(o.response.errorCode).toBe(E.UNKNOWN_CLUSTER_MIRROR)
    expect(o.records).toEqual([])
  })

  it("§2.5 Patterns: removed from include when there, else added to exclude (keeping __.*); matching topics stop", () => {
    ControllerTest.given(world)
      .and([mirrorConfig("m", "mirror.topics.include", "t.*,orders")])
      .when((s, { nextOffset }) => MirrorControl.stopMirrorTopics(s, stop([], ["orders", "t2"]), { nextOffset }))
      .then(
        [
          mirrorConfig("m", "mirror.topics.include", "t.*"),
          mirrorConfig("m", "mirror.topics.exclude", "__.*,t2"),
          mstate(T2, "m", "STOPPED")
        ],
        topicsResponse([])
      )
  })
})

describe("pauseMirrorTopics", () => {
  it("JR47: pauses MIRRORING topics; PAUSED is a no-op; STOPPED is refused with 142", () => {
    withX
      .when((s, { nextOffset }) =>
        MirrorControl.pauseMirrorTopics(s, names("m", ["t1", "t2", "t3", "local", "x", "ghost"]), { nextOffset })
      )
      .then(
        [mstate(T1, "m", "PAUSED")],
        topicsResponse([
          ["t1", E.NONE],
          ["t2", E.NONE],
          ["t3", E.MIRROR_TOPIC_BEING_STOPPED, "Topic 't3' is stopped or being stopped."],
          ["local", E.UNKNOWN_CLUSTER_MIRROR, "Topic 'local' does not belong to any cluster mirror."],
          ["x", E.TOPIC_NOT_IN_CLUSTER_MIRROR, "Topic 'x' belongs to mirror 'other', not to mirror 'm'."],
          ["ghost", E.UNKNOWN_TOPIC_OR_PARTITION, "Topic 'ghost' does not exist."]
        ])
      )
  })

  it("JR28: the optimistic lock rejects the whole request", () => {
    const g = ControllerTest.given(world)
    const at = topicOf(g, "t1").lastMirrorStateChangeOffset
    const o = g
      .when((s, { nextOffset }) =>
        MirrorControl.pauseMirrorTopics(s, names("m", ["t1", "t2"], at - 1n), { nextOffset })
      )
      .outcome()
    expect(o.records).toEqual([])
    expect(o.response.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
  })
})

describe("resumeMirrorTopics", () => {
  it("JR47: resumes PAUSED topics; MIRRORING is a no-op; STOPPED is refused with 141", () => {
    withX
      .when((s, { nextOffset }) =>
        MirrorControl.resumeMirrorTopics(s, names("m", ["t1", "t2", "t3", "local", "x", "ghost", "t2"]), { nextOffset })
      )
      .then(
        [],
        topicsResponse([
          ["t1", E.NONE],
          ["t2", E.INVALID_REQUEST, "Duplicate topic name."],
          ["t3", E.MIRROR_TOPIC_NOT_PAUSED, "Topic 't3' is not paused."],
          ["local", E.UNKNOWN_CLUSTER_MIRROR, "Topic 'local' does not belong to any cluster mirror."],
          ["x", E.TOPIC_NOT_IN_CLUSTER_MIRROR, "Topic 'x' belongs to mirror 'other', not to mirror 'm'."],
          ["ghost", E.UNKNOWN_TOPIC_OR_PARTITION, "Topic 'ghost' does not exist."]
        ])
      )
    withX
      .when((s, { nextOffset }) => MirrorControl.resumeMirrorTopics(s, names("m", ["t2"]), { nextOffset }))
      .then([mstate(T2, "m", "MIRRORING")], topicsResponse([["t2", E.NONE]]))
  })

  it("JR28: the optimistic lock rejects the whole request", () => {
    const g = ControllerTest.given(world)
    const at = topicOf(g, "t2").lastMirrorStateChangeOffset
    const o = g
      .when((s, { nextOffset }) => MirrorControl.resumeMirrorTopics(s, names("m", ["t2"], at - 1n), { nextOffset }))
      .outcome()
    expect(o.records).toEqual([])
    expect(o.response.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
    const fine = g
      .when((s, { nextOffset }) => MirrorControl.resumeMirrorTopics(s, names("m", ["t2"], at), { nextOffset }))
      .outcome()
    expect(fine.records).toEqual([mstate(T2, "m", "MIRRORING")])
  })
})

// ---------------------------------------------------------------------------------------------------
// DeleteClusterMirror

describe("deleteClusterMirror", () => {
  const del = (mirrorName: string, stateValidationOffset = -1n) => ({ mirrorName, stateValidationOffset })

  it("refuses an unknown mirror (137)", () => {
    ControllerTest.given(world)
      .when((s) => MirrorControl.deleteClusterMirror(s, del("nope")))
      .then([], fail(E.UNKNOWN_CLUSTER_MIRROR, "Mirror 'nope' not found"))
  })

  it("refuses a mirror with a MIRRORING or PAUSED topic (143)", () => {
    ControllerTest.given(world)
      .and([mstate(T1, "m", "STOPPED")])
      .when((s) => MirrorControl.deleteClusterMirror(s, del("m")))
      .then([], fail(E.CLUSTER_MIRROR_NOT_EMPTY, "Mirror 'm' still has active or paused topic 't2'"))
  })

  it("JR49: writes a null mirror name for every topic and tombstones every config, in one batch", () => {
    const g = ControllerTest.given(world).and([
      mstate(T1, "m", "STOPPED"),
      mstate(T2, "m", "STOPPED"),
      mirrorConfig("m", "mirror.topics.include", "t.*")
    ])
    const after = g
      .when((s) => MirrorControl.deleteClusterMirror(s, del("m", g.nextOffset - 1n)))
      .then(
        [
          mstate(T1, null, "UNKNOWN"),
          mstate(T2, null, "UNKNOWN"),
          mstate(T3, null, "UNKNOWN"),
          mirrorConfig("m", "bootstrap.servers", null),
          mirrorConfig("m", "mirror.source.cluster.id", null),
          mirrorConfig("m", "mirror.topics.include", null)
        ],
        { throttleTimeMs: 0, errorCode: E.NONE, errorMessage: null }
      )
    expect(ConfigurationControl.mirrorExists(after.state.configs, "m")).toBe(false)
    expect(topicOf(after, "t1").mirrorName).toBeNull()
    expect(topicOf(after, "t1").desiredMirrorState).toBe(-1)
    expect(MirrorControl.topicsOf(after.state, "m")).toEqual([])
    // The topics are free: another mirror can take them.
    after
      .when((s, { nextOffset }) =>
        MirrorControl.startMirrorTopics(s, { ...start([{ name: "t1" }]), mirrorName: "other" }, startCtx(nextOffset))
      )
      .then(
        [mirrorConfig("other", "mirror.topics.include", "t1"), mstate(T1, "other", "MIRRORING")],
        topicsResponse([["t1", E.NONE]])
      )
  })

  it("JR28: a topic of the mirror changed after the validation rejects the delete (145)", () => {
    const g = ControllerTest.given(world).and([mstate(T1, "m", "STOPPED"), mstate(T2, "m", "STOPPED")])
    const o = g.when((s) => MirrorControl.deleteClusterMirror(s, del("m", g.nextOffset - 2n))).outcome()
    expect(o.records).toEqual([])
    expect(o.response.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
  })
})

// ---------------------------------------------------------------------------------------------------
// Queries

describe("queries", () => {
  it("mirrorOf and topicsOf follow the replayed state", () => {
    const g = ControllerTest.given(world)
    expect(MirrorControl.mirrorOf(g.state, "t1")).toBe("m")
    expect(MirrorControl.mirrorOf(g.state, "local")).toBeNull()
    expect(MirrorControl.mirrorOf(g.state, "ghost")).toBeNull()
    expect(MirrorControl.topicsOf(g.state, "m").map((t) => t.name)).toEqual(["t1", "t2", "t3"])
    expect(MirrorControl.topicsOf(g.state, "other")).toEqual([])
    expect(MirrorControl.topicPatterns(g.state, "m")).toEqual({ include: [], exclude: ["__.*"] })
  })
})

// ---------------------------------------------------------------------------------------------------
// Property: random operation sequences

const MIRRORS = ["m", "n"] as const
const TOPICS = ["a", "b", "c", "__d"] as const
const SOURCE_IDS = [uuid(300), uuid(301), uuid(302), uuid(303), Uuid.ZERO]

const opArb = fc.record({
  kind: fc.constantFrom("create", "start", "stop", "pause", "resume", "delete"),
  mirror: fc.constantFrom(...MIRRORS),
  topics: fc.subarray([...TOPICS]),
  sourceId: fc.constantFrom(...SOURCE_IDS),
  partitions: fc.integer({ min: -1, max: 3 }),
  patterns: fc.subarray(["a", "b.*", "x", "(bad"]),
  // How far behind the log end the broker validated; null: not validated (-1).
  lag: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null })
})

type Op = typeof opArb extends fc.Arbitrary<infer A> ? A : never

describe("properties", () => {
  it("random mirror operations never make replay die, and the lock never lets a stale request through", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), (ops) => {
        let g = ControllerTest.given(ControllerTest.bootstrap)
        for (const op of ops) {
          const stamp = op.lag === null ? -1n : g.nextOffset - 1n - BigInt(op.lag)
          const named = op.kind === "delete" ? MirrorControl.topicsOf(g.state, op.mirror).map((t) => t.name) : op.topics
          const stale =
            stamp >= 0n &&
            named.some((n) => {
              const t = ReplicationControl.topicByName(g.state.replication, n)
              return t !== undefined && t.lastMirrorStateChangeOffset > stamp
            })
          const result = decide(g, op, stamp)
          if (stale && op.kind !== "create") {
            expect(result.records).toEqual([])
            if (ConfigurationControl.mirrorExists(g.state.configs, op.mirror))
              expect(result.errorCode).toBe(E.INVALID_CLUSTER_MIRROR_STATES)
          }
          g = result.after
          // Every topic in a mirror belongs to a mirror that exists.
          for (const t of g.state.replication.topicsById.values())
            if (t.mirrorName !== null)
              expect(ConfigurationControl.mirrorExists(g.state.configs, t.mirrorName)).toBe(true)
          // The default exclude is never dropped: __d is never mirrored.
          expect(MirrorControl.mirrorOf(g.state, "__d")).toBeNull()
        }
      }),
      { numRuns: 300 }
    )
  })
})

const decide = (g: ControllerTest.Given, op: Op, stamp: bigint) => {
  const when = (() => {
    switch (op.kind) {
      case "create":
        return g.when((s) =>
          MirrorControl.createClusterMirror(s, create(op.mirror, REQUIRED), {
            clusterView: CLUSTER,
            newTopicId: ids(),
            mirrorStateTopicPartitions: 2
          })
        )
      case "start":
        return g.when((s, { nextOffset }) =>
          MirrorControl.startMirrorTopics(
            s,
            {
              ...start(
                op.topics.map((name) => ({ name, id: op.sourceId, partitions: op.partitions })),
                {
                  includePatterns: op.patterns.slice(0, 1),
                  excludePatterns: op.patterns.slice(1, 2),
                  stateValidationOffset: stamp
                }
              ),
              mirrorName: op.mirror
            },
            startCtx(nextOffset)
          )
        )
      case "stop":
        return g.when((s, { nextOffset }) =>
          MirrorControl.stopMirrorTopics(
            s,
            { ...names(op.mirror, op.topics, stamp), patterns: op.patterns },
            { nextOffset }
          )
        )
      case "pause":
        return g.when((s, { nextOffset }) =>
          MirrorControl.pauseMirrorTopics(s, names(op.mirror, op.topics, stamp), { nextOffset })
        )
      case "resume":
        return g.when((s, { nextOffset }) =>
          MirrorControl.resumeMirrorTopics(s, names(op.mirror, op.topics, stamp), { nextOffset })
        )
      case "delete":
        return g.when((s) =>
          MirrorControl.deleteClusterMirror(s, { mirrorName: op.mirror, stateValidationOffset: stamp })
        )
    }
  })()
  const o = when.outcome()
  return { records: o.records, errorCode: o.response.errorCode, after: o.after }
}
