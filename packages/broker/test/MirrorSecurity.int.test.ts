/**
 * A mirror's connection to its source follows its security configs while it runs: altering them moves
 * the mirror's partitions to connections made anew with the new settings (a trust store the broker
 * cannot read fails them naming the key and the path; SASL credentials are used and never shown), and
 * altering them back resumes mirroring from where it stopped. Nothing the brokers log holds the secret.
 * A source that needs SASL (SCRAM-SHA-512) is mirrored with `security.protocol`, `sasl.mechanism` and
 * `sasl.jaas.config`; a wrong password fails the partitions with SASL_AUTHENTICATION_FAILED, never the password.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  CreateClusterMirror,
  CreateTopics,
  IncrementalAlterConfigs,
  Produce,
  RecordBatch,
  StartMirrorTopics
} from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

const SECRET = "mirror-Pa55word-5ec7"
const SET = 0
const DELETE = 1

describe("a mirror's security configs while it runs", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-security-"))
  const logged: Array<string> = []
  let source: Node.Embedded
  let destination: Node.Embedded
  let src: ClusterClient.Client
  let dst: ClusterClient.Client

  beforeAll(async () => {
    const base = {
      ...BrokerConfig.defaults,
      port: 0,
      brokerHeartbeatIntervalMs: 200,
      offsetsTopicReplicationFactor: 1,
      defaultReplicationFactor: 1,
      mirrorStateTopicNumPartitions: 1,
      mirrorStateTopicReplicationFactor: 1,
      mirrorFailedRetryInitialBackoffMs: 100,
      mirrorFailedRetryMaxBackoffMs: 200
    }
    ;[source, destination] = await Promise.all([
      Node.embedded(1, { ...base, dataDir: path.join(dir, "source") }, (line) => logged.push(line)),
      Node.embedded(1, { ...base, dataDir: path.join(dir, "destination") }, (line) => logged.push(line))
    ])
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 10_000 })
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 10_000 })
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: "orders", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
  })
  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await destination?.close()
    await source?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const produce = async (value: string) => {
    const res = await src.sendToLeader(
      "orders",
      0,
      Produce.api,
      () => ({
        acks: -1,
        timeoutMs: 5000,
        topicData: [
          {
            name: "orders",
            partitionData: [
              { index: 0, records: RecordBatch.build({ records: [{ value: Buffer.from(value) }], timestamp: 1 }) }
            ]
          }
        ]
      }),
      (r) => r.responses[0]!.partitionResponses[0]!.errorCode
    )
    expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
  }

  /** Polls the destination until partition 0 of "orders" satisfies `ok`. */
  const partition = async (ok: (p: MirrorAdmin.PartitionDescription) => boolean, what: string) => {
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    let last: MirrorAdmin.PartitionDescription | undefined
    for (let i = 0; i < 300; i++) {
      const { mirrors } = await admin.describeMirrorPartitions(["m"])
      last = mirrors[0]?.partitions.find((p) => p.topic === "orders" && p.partition === 0)
      if (last !== undefined && ok(last)) return last
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(
      `orders-0 never ${what}; last: ${JSON.stringify(last, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`
    )
  }

  const alter = async (configs: ReadonlyArray<{ name: string; configOperation: number; value: string | null }>) => {
    const res = await dst.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [{ resourceType: 64, resourceName: "m", configs: [...configs] }],
      validateOnly: false
    })
    expect(res.responses.map((r) => [r.errorCode, r.errorMessage])).toEqual([[0, null]])
  }

  it("reconnects with altered settings, fails on ones it cannot use, and mirrors again when they are fixed", async () => {
    const sourceClusterId = (await src.metadata([])).clusterId!
    const created = await dst.sendToAnyBroker(CreateClusterMirror.api, {
      mirrorName: "m",
      config: [
        { name: "bootstrap.servers", value: source.bootstrap },
        { name: "mirror.source.cluster.id", value: sourceClusterId },
        { name: "request.timeout.ms", value: "1000" }
      ]
    })
    expect(created.errorCode).toBe(0)
    await produce("one")
    const topicId = (await src.metadata(["orders"])).topics.get("orders")!.topicId
    const started = await dst.sendToAnyBroker(StartMirrorTopics.api, {
      mirrorName: "m",
      topics: [{ topicName: "orders", topicId, numPartitions: 1 }],
      includePatterns: [],
      excludePatterns: []
    })
    expect(started.topics.map((t) => t.errorCode)).toEqual([0])
    await partition((p) => p.state === "MIRRORING" && p.destinationOffset === 1n, "mirrored the first record")

    // A trust store this broker cannot read: the connection is not made, the reason names key and path.
    const missing = path.join(dir, "no-such-ca.pem")
    await alter([
      { name: "security.protocol", configOperation: SET, value: "SSL" },
      { name: "ssl.truststore.type", configOperation: SET, value: "PEM" },
      { name: "ssl.truststore.location", configOperation: SET, value: missing }
    ])
    const unreadable = await partition(
      (p) => p.state === "FAILED" && (p.errorMessage ?? "").includes("ssl.truststore.location"),
      "failed on the trust store"
    )
    expect(unreadable.errorMessage).toContain(`ssl.truststore.location: cannot read ${missing} (ENOENT)`)

    // SASL credentials: used for the new connections (which this PLAINTEXT source cannot serve), never shown.
    await alter([
      { name: "ssl.truststore.type", configOperation: DELETE, value: null },
      { name: "ssl.truststore.location", configOperation: DELETE, value: null },
      { name: "security.protocol", configOperation: SET, value: "SASL_PLAINTEXT" },
      { name: "sasl.mechanism", configOperation: SET, value: "SCRAM-SHA-256" },
      {
        name: "sasl.jaas.config",
        configOperation: SET,
        value: `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="${SECRET}";`
      }
    ])
    const sasl = await partition(
      (p) => p.state === "FAILED" && !(p.errorMessage ?? "").includes("ssl.truststore.location"),
      "failed with the SASL settings"
    )
    expect(sasl.errorMessage).not.toContain(SECRET)

    // Back to PLAINTEXT: the partition mirrors again, from where it was.
    await alter([
      { name: "security.protocol", configOperation: DELETE, value: null },
      { name: "sasl.mechanism", configOperation: DELETE, value: null },
      { name: "sasl.jaas.config", configOperation: DELETE, value: null }
    ])
    await produce("two")
    await partition((p) => p.state === "MIRRORING" && p.destinationOffset === 2n, "mirrored the second record")

    expect(logged.some((l) => l.includes("mirror m: cannot connect to the source: ssl.truststore.location"))).toBe(true)
    for (const line of logged) expect(line).not.toContain(SECRET)
  })
})

describe("a mirror whose source needs SASL", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-sasl-"))
  const ADMIN_SECRET = "source-admin-5ecret-0b71"
  const MIRROR_SECRET = "mirror-scram-5ecret-4e9d"
  const WRONG_SECRET = "not-the-mirror-5ecret-77c3"
  const logged: Array<string> = []
  let source: Node.Embedded
  let destination: Node.Embedded
  let src: ClusterClient.Client
  let dst: ClusterClient.Client

  const scramJaas = (password: string) =>
    `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="${password}";`

  beforeAll(async () => {
    const base = {
      ...BrokerConfig.defaults,
      port: 0,
      brokerHeartbeatIntervalMs: 200,
      offsetsTopicReplicationFactor: 1,
      defaultReplicationFactor: 1,
      mirrorStateTopicNumPartitions: 1,
      mirrorStateTopicReplicationFactor: 1,
      mirrorFailedRetryInitialBackoffMs: 100,
      mirrorFailedRetryMaxBackoffMs: 200
    }
    // The source: a SASL_PLAINTEXT listener with PLAIN (its admin, also the inter-broker user) and
    // SCRAM-SHA-512 (the mirror's user, bootstrapped into the new metadata log).
    const sasl = BrokerConfig.fromProperties(
      new Map([
        ["listeners", "SASL_PLAINTEXT://127.0.0.1:0"],
        ["sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"],
        ["sasl.mechanism.inter.broker.protocol", "PLAIN"],
        [
          "listener.name.sasl_plaintext.plain.sasl.jaas.config",
          `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="${ADMIN_SECRET}" user_admin="${ADMIN_SECRET}";`
        ]
      ]),
      base
    )
    ;[source, destination] = await Promise.all([
      Node.embedded(
        1,
        {
          ...sasl,
          dataDir: path.join(dir, "source"),
          bootstrapScramCredentials: [
            { mechanism: "SCRAM-SHA-512", name: "mirror", password: MIRROR_SECRET, iterations: 4096 }
          ]
        },
        (line) => logged.push(line)
      ),
      Node.embedded(1, { ...base, dataDir: path.join(dir, "destination") }, (line) => logged.push(line))
    ])
    src = new ClusterClient.Client({
      bootstrapServers: [source.bootstrap],
      requestTimeoutMs: 10_000,
      security: { sasl: { mechanism: "PLAIN", username: "admin", password: ADMIN_SECRET } }
    })
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 10_000 })
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: "orders", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
  })
  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await destination?.close()
    await source?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const produce = async (value: string) => {
    const res = await src.sendToLeader(
      "orders",
      0,
      Produce.api,
      () => ({
        acks: -1,
        timeoutMs: 5000,
        topicData: [
          {
            name: "orders",
            partitionData: [
              { index: 0, records: RecordBatch.build({ records: [{ value: Buffer.from(value) }], timestamp: 1 }) }
            ]
          }
        ]
      }),
      (r) => r.responses[0]!.partitionResponses[0]!.errorCode
    )
    expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
  }

  const partition = async (ok: (p: MirrorAdmin.PartitionDescription) => boolean, what: string) => {
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    let last: MirrorAdmin.PartitionDescription | undefined
    for (let i = 0; i < 300; i++) {
      const { mirrors } = await admin.describeMirrorPartitions(["s"])
      last = mirrors[0]?.partitions.find((p) => p.topic === "orders" && p.partition === 0)
      if (last !== undefined && ok(last)) return last
      await new Promise((r) => setTimeout(r, 50))
    }
    throw new Error(
      `orders-0 never ${what}; last: ${JSON.stringify(last, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`
    )
  }

  const setJaas = async (password: string) => {
    const res = await dst.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType: 64,
          resourceName: "s",
          configs: [{ name: "sasl.jaas.config", configOperation: SET, value: scramJaas(password) }]
        }
      ],
      validateOnly: false
    })
    expect(res.responses.map((r) => [r.errorCode, r.errorMessage])).toEqual([[0, null]])
  }

  it("mirrors with security.protocol, sasl.mechanism and sasl.jaas.config; a wrong password fails it with the reason", async () => {
    const sourceClusterId = (await src.metadata([])).clusterId!
    const created = await dst.sendToAnyBroker(CreateClusterMirror.api, {
      mirrorName: "s",
      config: [
        { name: "bootstrap.servers", value: source.bootstrap },
        { name: "mirror.source.cluster.id", value: sourceClusterId },
        { name: "request.timeout.ms", value: "1000" },
        { name: "security.protocol", value: "SASL_PLAINTEXT" },
        { name: "sasl.mechanism", value: "SCRAM-SHA-512" },
        { name: "sasl.jaas.config", value: scramJaas(MIRROR_SECRET) }
      ]
    })
    expect([created.errorCode, created.errorMessage]).toEqual([0, null])
    await produce("one")
    const topicId = (await src.metadata(["orders"])).topics.get("orders")!.topicId
    const started = await dst.sendToAnyBroker(StartMirrorTopics.api, {
      mirrorName: "s",
      topics: [{ topicName: "orders", topicId, numPartitions: 1 }],
      includePatterns: [],
      excludePatterns: []
    })
    expect(started.topics.map((t) => t.errorCode)).toEqual([0])
    await partition((p) => p.state === "MIRRORING" && p.destinationOffset === 1n, "mirrored over SASL")

    // A wrong password: the source refuses the new connections, the partition fails with the reason.
    await setJaas(WRONG_SECRET)
    const failed = await partition(
      (p) => p.state === "FAILED" && (p.errorMessage ?? "").includes("SASL_AUTHENTICATION_FAILED"),
      "failed on authentication"
    )
    for (const secret of [MIRROR_SECRET, WRONG_SECRET, ADMIN_SECRET]) expect(failed.errorMessage).not.toContain(secret)

    // The right password again: it mirrors from where it was.
    await setJaas(MIRROR_SECRET)
    await produce("two")
    await partition((p) => p.state === "MIRRORING" && p.destinationOffset === 2n, "mirrored again over SASL")
    for (const line of logged)
      for (const secret of [MIRROR_SECRET, WRONG_SECRET, ADMIN_SECRET]) expect(line).not.toContain(secret)
  })
})
