/**
 * ListClusterMirrors and DescribeConfigs of a mirror, answered by every broker of a running cluster from
 * its own metadata image: counts follow the topics' desired states, secrets never come back.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Connection } from "@clustermirror/client"
import {
  CreateClusterMirror,
  DeleteClusterMirror,
  DescribeConfigs,
  Errors,
  ListClusterMirrors,
  PauseMirrorTopics,
  StartMirrorTopics,
  CreateTopics,
  StopMirrorTopics
} from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

describe("ListClusterMirrors", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-apis-"))
  let cluster: Node.Embedded
  // The source of mirror "west": pausing needs partitions that really mirror.
  let source: Node.Embedded
  const sourceTopicIds = new Map<string, string>()
  const conns: Array<Connection.Connection> = []

  beforeAll(async () => {
    const base = { ...BrokerConfig.defaults, port: 0, brokerHeartbeatIntervalMs: 200, mirrorStateTopicNumPartitions: 3 }
    ;[cluster, source] = await Promise.all([
      Node.embedded(3, { ...base, dataDir: path.join(dir, "destination") }),
      Node.embedded(1, { ...base, dataDir: path.join(dir, "source"), offsetsTopicReplicationFactor: 1 })
    ])
    for (const b of cluster.brokers) conns.push(await Connection.open({ host: "127.0.0.1", port: b.port }))
    const src = await Connection.open({ host: "127.0.0.1", port: source.brokers[0]!.port })
    const created = await src.call(CreateTopics.api, {
      topics: ["a", "b", "c", "d"].map((name) => ({
        name,
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: []
      })),
      timeoutMs: 10_000,
      validateOnly: false
    })
    for (const t of created.topics) sourceTopicIds.set(t.name, t.topicId)
    await src.close()
  })
  afterAll(async () => {
    for (const c of conns) await c.close()
    await cluster.close()
    await source.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const list = (conn: Connection.Connection, includeTopicNames: boolean) =>
    conn.call(ListClusterMirrors.api, { includeTopicNames })

  /** Polls every broker until its listing satisfies `ok` (brokers follow the metadata log at their own pace). */
  const eventually = async (includeTopicNames: boolean, ok: (res: ListClusterMirrors.Response) => boolean) => {
    const out: Array<ListClusterMirrors.Response> = []
    for (const conn of conns) {
      let res = await list(conn, includeTopicNames)
      for (let i = 0; i < 100 && !ok(res); i++) {
        await new Promise((r) => setTimeout(r, 50))
        res = await list(conn, includeTopicNames)
      }
      out.push(res)
    }
    return out
  }

  it("is empty on a cluster without mirrors", async () => {
    for (const conn of conns) {
      const res = await list(conn, true)
      expect(res.errorCode).toBe(0)
      expect(res.mirrors).toEqual([])
    }
  })

  it("lists every mirror with its source, counting MIRRORING topics and naming MIRRORING and PAUSED ones", async () => {
    const bootstrapOf = (name: string) => (name === "west" ? source.bootstrap : `source-${name}:9092`)
    const create = (name: string, clusterId: string) =>
      conns[0]!.call(CreateClusterMirror.api, {
        mirrorName: name,
        config: [
          { name: "bootstrap.servers", value: bootstrapOf(name) },
          { name: "mirror.source.cluster.id", value: clusterId }
        ]
      })
    expect((await create("west", "west-cluster")).errorCode).toBe(0)
    expect((await create("east", "east-cluster")).errorCode).toBe(0)

    const started = await conns[1]!.call(StartMirrorTopics.api, {
      mirrorName: "west",
      topics: ["a", "b", "c", "d"].map((topicName) => ({
        topicId: sourceTopicIds.get(topicName)!,
        topicName,
        numPartitions: 1
      }))
    })
    expect(started.topics.map((t) => t.errorCode)).toEqual([0, 0, 0, 0])
    // Accepted while the partitions are still on their way to MIRRORING: they pause once they get there.
    const paused = await conns[2]!.call(PauseMirrorTopics.api, { mirrorName: "west", topics: [{ topicName: "b" }] })
    expect(paused.errorCode).toBe(0)
    expect(paused.topics.filter((t) => t.errorCode !== 0)).toEqual([])
    const stopped = await conns[0]!.call(StopMirrorTopics.api, { mirrorName: "west", topics: [{ topicName: "c" }] })
    expect(stopped.topics.map((t) => t.errorCode)).toEqual([0])

    const expected = [
      {
        mirrorName: "east",
        sourceBootstrap: "source-east:9092",
        sourceClusterId: "east-cluster",
        topicCount: 0,
        topicNames: []
      },
      {
        mirrorName: "west",
        sourceBootstrap: source.bootstrap,
        sourceClusterId: "west-cluster",
        topicCount: 2,
        topicNames: ["a", "b", "d"]
      }
    ]
    const same = (res: ListClusterMirrors.Response) => JSON.stringify(res.mirrors) === JSON.stringify(expected)
    for (const res of await eventually(true, same)) {
      expect(res.errorCode).toBe(0)
      expect(res.mirrors).toEqual(expected)
    }
    for (const res of await eventually(false, (r) => r.mirrors.length === 2)) {
      expect(res.mirrors.map((m) => [m.mirrorName, m.topicCount, m.topicNames])).toEqual([
        ["east", 0, []],
        ["west", 2, []]
      ])
    }
  })

  it("refuses a mirror whose security configs cannot connect, naming the setting and not echoing a secret", async () => {
    const refused = await conns[1]!.call(CreateClusterMirror.api, {
      mirrorName: "secure",
      config: [
        { name: "bootstrap.servers", value: source.bootstrap },
        { name: "mirror.source.cluster.id", value: "secure-cluster" },
        { name: "ssl.key.password", value: "s3cret" }
      ]
    })
    expect(refused.errorCode).toBe(Errors.ErrorCode.INVALID_CONFIG)
    expect(refused.errorMessage).toBe(
      "Invalid value [hidden] for configuration ssl.key.password: is a TLS setting, and security.protocol PLAINTEXT does not use TLS (SSL or SASL_SSL do)"
    )
  })

  it("stores a mirror's secrets and describes them as sensitive, with a null value, on every broker", async () => {
    const jaas =
      'org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="s3cret-scram";'
    const created = await conns[0]!.call(CreateClusterMirror.api, {
      mirrorName: "sasl",
      config: [
        { name: "bootstrap.servers", value: source.bootstrap },
        { name: "mirror.source.cluster.id", value: "sasl-cluster" },
        { name: "security.protocol", value: "SASL_PLAINTEXT" },
        { name: "sasl.mechanism", value: "SCRAM-SHA-512" },
        { name: "sasl.jaas.config", value: jaas }
      ]
    })
    expect([created.errorCode, created.errorMessage]).toEqual([0, null])
    const expected = [
      ["bootstrap.servers", source.bootstrap, false],
      ["mirror.source.cluster.id", "sasl-cluster", false],
      ["sasl.jaas.config", null, true],
      ["sasl.mechanism", "SCRAM-SHA-512", false],
      ["security.protocol", "SASL_PLAINTEXT", false]
    ]
    for (const conn of conns) {
      let shown: ReadonlyArray<unknown> = []
      for (let i = 0; i < 100; i++) {
        const res = await conn.call(DescribeConfigs.api, {
          resources: [{ resourceType: 64, resourceName: "sasl", configurationKeys: null }],
          includeSynonyms: true,
          includeDocumentation: false
        })
        shown = res.results[0]!.configs.map((c) => [c.name, c.value, c.isSensitive])
        if (shown.length === expected.length) break
        await new Promise((r) => setTimeout(r, 50))
      }
      expect(shown).toEqual(expected)
      expect(JSON.stringify(shown)).not.toContain("s3cret-scram")
    }
    const deleted = await conns[0]!.call(DeleteClusterMirror.api, { mirrorName: "sasl" })
    expect(deleted.errorCode).toBe(0)
  })

  it("describes a mirror's configs as stored", async () => {
    const res = await conns[2]!.call(DescribeConfigs.api, {
      resources: [
        { resourceType: 64, resourceName: "west", configurationKeys: null },
        { resourceType: 64, resourceName: "nowhere", configurationKeys: null }
      ],
      includeSynonyms: false,
      includeDocumentation: false
    })
    const [west, nowhere] = res.results
    expect(west!.errorCode).toBe(0)
    const shown = west!.configs.filter((c) => c.name !== "mirror.topics.include")
    expect(shown.map((c) => [c.name, c.value, c.isSensitive, c.configSource])).toEqual([
      ["bootstrap.servers", source.bootstrap, false, 2],
      ["mirror.source.cluster.id", "west-cluster", false, 2]
    ])
    expect(nowhere!.errorCode).toBe(Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR)
  })
})
