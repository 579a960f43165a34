/**
 * The mirror's destination admin as its own principal (KIP-1279 §7.2, §8.3, JR45), between two of our
 * clusters in this process over real TCP. The destination serves SASL only: INTERNAL (PLAIN, the
 * inter-broker user `broker`, a super user) and MIRROR (SCRAM-SHA-512), the listener of
 * `mirror.admin.listener.name`, where the admin authenticates as `mirror-admin` with
 * `sasl.mechanism.mirror.admin.protocol`, and which is not a super user. Its MIRROR endpoint is advertised
 * at a TCP proxy of this test, which reads every request header going through: the admin connects to
 * that advertised endpoint, authenticates as `mirror-admin`, and sends client id `mirror-dst-admin-1`.
 *
 * With the ACLs the README lists for it, the group offsets sync, discovered topics start and the ACL
 * sync runs (keeping the admin's own ACLs). With one of them removed, the matching sync reports the
 * authorization error (DescribeClusterMirrors status, sync-error metric) and the others go on. No secret
 * appears in the logs. A config naming a listener the broker does not have, or a mechanism its listener
 * does not take, is refused at start, naming the key. On a mutual-TLS listener the admin connects with the
 * listener's key and trust stores and is authorized as its certificate's principal.
 */
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { BrokerConfig } from "@clustermirror/broker-config"
import { Node } from "@clustermirror/broker"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateAcls, DeleteAcls, DescribeAcls, Errors, Metadata } from "@clustermirror/protocol"
import { Certificates, Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { Kafka, logLevel } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const BROKER_SECRET = "broker-pl41n-5ecret-19ad"
const ADMIN_SECRET = "mirror-admin-5cram-5ecret-7c21"
const ADMIN = "User:mirror-admin"
const CLIENT_ID = "mirror-dst-admin-1"

// Kafka's ACL codes.
const TOPIC = 2
const GROUP = 3
const CLUSTER = 4
const CLUSTER_MIRROR = 8
const LITERAL = 3
const READ = 3
const ALTER = 7
const ALTER_CONFIGS = 11
const ALLOW = 3

interface Binding {
  readonly resourceType: number
  readonly resourceName: string
  readonly principal: string
  readonly operation: number
}
const creation = (b: Binding) => ({ ...b, resourcePatternType: LITERAL, host: "*", permissionType: ALLOW })
const filter = (b: Binding) => ({
  resourceTypeFilter: b.resourceType,
  resourceNameFilter: b.resourceName,
  patternTypeFilter: LITERAL,
  principalFilter: b.principal,
  hostFilter: "*",
  operation: b.operation,
  permissionType: ALLOW
})

// The destination admin's ACLs (README, "Permissions"): each call of the mirror's syncs needs one of them.
const groupRead: Binding = { resourceType: GROUP, resourceName: "*", principal: ADMIN, operation: READ }
const topicRead: Binding = { resourceType: TOPIC, resourceName: "*", principal: ADMIN, operation: READ }
const topicAlterConfigs: Binding = {
  resourceType: TOPIC,
  resourceName: "*",
  principal: ADMIN,
  operation: ALTER_CONFIGS
}
const topicAlter: Binding = { resourceType: TOPIC, resourceName: "*", principal: ADMIN, operation: ALTER }
const mirrorAlter: Binding = { resourceType: CLUSTER_MIRROR, resourceName: "dr", principal: ADMIN, operation: ALTER }
const clusterAlter: Binding = {
  resourceType: CLUSTER,
  resourceName: "kafka-cluster",
  principal: ADMIN,
  operation: ALTER
}
const ADMIN_ACLS = [groupRead, topicRead, topicAlterConfigs, topicAlter, mirrorAlter, clusterAlter]
// A source ACL the ACL sync copies.
const appRead: Binding = { resourceType: TOPIC, resourceName: "orders", principal: "User:app", operation: READ }

const keyOf = (b: { resourceType: number; resourceName: string; principal: string; operation: number }) =>
  `${b.resourceType}/${b.resourceName}/${b.principal}/${b.operation}`

/**
 * A TCP proxy to `targetPort` that reads the requests going through it: the api key and client id of each
 * request header (size, api key, api version, correlation id, client id), and the raw client bytes.
 */
const requestProxy = async (listenPort: number, targetPort: number) => {
  const requests: Array<{ readonly apiKey: number; readonly clientId: string | null }> = []
  const clientBytes: Array<Buffer> = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, "127.0.0.1")
    sockets.add(client)
    sockets.add(upstream)
    let pending = Buffer.alloc(0)
    client.on("data", (chunk: Buffer) => {
      clientBytes.push(chunk)
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0))
        pending = pending.subarray(4 + frame.length)
        const length = frame.readInt16BE(8)
        requests.push({
          apiKey: frame.readInt16BE(0),
          clientId: length < 0 ? null : frame.toString("utf8", 10, 10 + length)
        })
      }
      upstream.write(chunk)
    })
    upstream.on("data", (chunk: Buffer) => client.write(chunk))
    const end = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    for (const s of [client, upstream]) {
      s.on("error", end)
      s.on("close", end)
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(listenPort, "127.0.0.1", () => resolve())
  })
  return {
    requests,
    clientBytes: () => Buffer.concat(clientBytes),
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

const base = (dataDir: string): BrokerConfig.BrokerConfig => ({
  ...BrokerConfig.defaults,
  port: 0,
  dataDir,
  numPartitions: 1,
  defaultReplicationFactor: 1,
  offsetsTopicReplicationFactor: 1,
  mirrorStateTopicNumPartitions: 1,
  mirrorStateTopicReplicationFactor: 1,
  groupInitialRebalanceDelayMs: 0,
  brokerHeartbeatIntervalMs: 200,
  mirrorFailedRetryInitialBackoffMs: 200,
  mirrorFailedRetryMaxBackoffMs: 1000
})

describe("the mirror's destination admin principal (mirror.admin.listener.name)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-admin-principal-"))
  const logged: Array<string> = []
  let source: Node.Embedded
  let destination: Node.Embedded
  let proxy: Awaited<ReturnType<typeof requestProxy>>
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let metricsPort: number
  const kafka = () =>
    new Kafka({ clientId: "app", brokers: [source.bootstrap], logLevel: logLevel.NOTHING, requestTimeout: 30_000 })

  const createAcls = async (client: ClusterClient.Client, bindings: ReadonlyArray<Binding>) => {
    const res = await client.sendToAnyBroker(CreateAcls.api, { creations: bindings.map(creation) })
    expect(res.results.map((r) => r.errorCode)).toEqual(bindings.map(() => 0))
  }
  const deleteAcls = async (client: ClusterClient.Client, bindings: ReadonlyArray<Binding>) => {
    const res = await client.sendToAnyBroker(DeleteAcls.api, { filters: bindings.map(filter) })
    expect(res.filterResults.map((r) => r.errorCode)).toEqual(bindings.map(() => 0))
  }
  const listAcls = async (client: ClusterClient.Client): Promise<ReadonlyArray<string>> => {
    const res = await client.sendToAnyBroker(DescribeAcls.api, {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1
    })
    expect(res.errorCode).toBe(0)
    return res.resources.flatMap((r) => r.acls.map((a) => keyOf({ ...r, ...a }))).sort()
  }
  /** Sync errors counted by the destination broker's metric, by kind. */
  const syncErrors = async (kind: string): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    const line = text
      .split("\n")
      .find((l) => l.startsWith(`clustermirror_mirror_sync_errors_total{mirror="dr",kind="${kind}"}`))
    return line === undefined ? 0 : Number(line.split(" ").pop())
  }
  const groupStatus = async () =>
    (await new MirrorAdmin.MirrorAdmin(dst).describeGroupSync("dr")).find((g) => g.group === "app")
  const aclStatus = () => new MirrorAdmin.MirrorAdmin(dst).describeAclSync("dr")
  /** Waits for a status of the group recorded after `since` that satisfies `ok`. */
  const groupAfter = (since: number, what: string, ok: (g: MirrorAdmin.GroupSyncStatus) => boolean) =>
    Wait.eventually(what, async () => {
      const g = await groupStatus()
      return g !== undefined && g.timeMs > since && ok(g) ? g : undefined
    })
  const aclAfter = (since: number, what: string, ok: (s: MirrorAdmin.AclSyncStatus) => boolean) =>
    Wait.eventually(what, async () => {
      const s = await aclStatus()
      return s !== undefined && s.timeMs > since && ok(s) ? s : undefined
    })
  const mirroring = (topic: string) =>
    Wait.eventually(`${topic} mirrored on the destination`, async () => {
      const { mirrors } = await new MirrorAdmin.MirrorAdmin(dst).describeMirrorPartitions(["dr"])
      const p = mirrors[0]?.partitions.find((x) => x.topic === topic && x.partition === 0)
      return p?.state === "MIRRORING" && p.destinationOffset === 5n ? p : undefined
    })
  const produce = async (topic: string) => {
    const producer = kafka().producer({ allowAutoTopicCreation: true })
    await producer.connect()
    await producer.send({ topic, messages: [1, 2, 3, 4, 5].map((i) => ({ value: `${topic}-${i}` })) })
    await producer.disconnect()
  }
  /** The group "app" on the source: its offset of orders-0 committed (by an admin: the group is empty). */
  const commitOnSource = async (offset: number) => {
    const admin = kafka().admin()
    await admin.connect()
    await admin.setOffsets({ groupId: "app", topic: "orders", partitions: [{ partition: 0, offset: String(offset) }] })
    await admin.disconnect()
  }

  beforeAll(async () => {
    const [mirrorPort, proxyPort, metrics] = await Ports.freePorts(3)
    metricsPort = metrics!
    // The source: PLAINTEXT, StandardAuthorizer with its clients (all User:ANONYMOUS) as super user.
    source = await Node.embedded(
      1,
      {
        ...base(path.join(dir, "source")),
        authorizer: { superUsers: new Set(["User:ANONYMOUS"]), allowEveryoneIfNoAclFound: false }
      },
      (line) => logged.push(line)
    )
    const properties = new Map([
      ["listeners", `INTERNAL://127.0.0.1:0,MIRROR://127.0.0.1:${mirrorPort}`],
      ["advertised.listeners", `MIRROR://127.0.0.1:${proxyPort}`],
      ["listener.security.protocol.map", "INTERNAL:SASL_PLAINTEXT,MIRROR:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"],
      ["inter.broker.listener.name", "INTERNAL"],
      ["sasl.enabled.mechanisms", "PLAIN"],
      ["sasl.mechanism.inter.broker.protocol", "PLAIN"],
      [
        "listener.name.internal.plain.sasl.jaas.config",
        `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="${BROKER_SECRET}" user_broker="${BROKER_SECRET}";`
      ],
      ["listener.name.mirror.sasl.enabled.mechanisms", "SCRAM-SHA-512"],
      [
        "listener.name.mirror.scram-sha-512.sasl.jaas.config",
        `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror-admin" password="${ADMIN_SECRET}";`
      ],
      ["mirror.admin.listener.name", "MIRROR"],
      ["sasl.mechanism.mirror.admin.protocol", "SCRAM-SHA-512"],
      ["authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"],
      // User:ANONYMOUS is the brokers on the (PLAINTEXT) controller listener; no broker listener is PLAINTEXT.
      ["super.users", "User:broker;User:ANONYMOUS"]
    ])
    const config = BrokerConfig.fromProperties(properties, base(path.join(dir, "destination")))
    proxy = await requestProxy(proxyPort!, mirrorPort!)
    destination = await Node.embedded(
      1,
      {
        ...config,
        metricsPort,
        bootstrapScramCredentials: [
          { mechanism: "SCRAM-SHA-512", name: "mirror-admin", password: ADMIN_SECRET, iterations: 4096 }
        ]
      },
      (line) => logged.push(line)
    )
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({
      bootstrapServers: [destination.bootstrap],
      requestTimeoutMs: 30_000,
      security: { sasl: { mechanism: "PLAIN", username: "broker", password: BROKER_SECRET } }
    })
    await produce("orders")
    const consumer = kafka().consumer({ groupId: "app" })
    await consumer.connect()
    await consumer.subscribe({ topic: "orders", fromBeginning: true })
    let read = 0
    await consumer.run({ autoCommit: false, eachMessage: async () => void read++ })
    await Wait.eventually("the source consumer read orders", () => (read === 5 ? true : undefined))
    await consumer.commitOffsets([{ topic: "orders", partition: 0, offset: "3" }])
    await consumer.disconnect()
    await createAcls(src, [appRead])
    await createAcls(dst, ADMIN_ACLS)
  }, 120_000)

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await destination?.close()
    await source?.close()
    await proxy?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("syncs with the ACLs it is granted, reports the sync whose ACL is removed, and keeps the others going", async () => {
    const sourceClusterId = (await src.metadata([])).clusterId!
    await new MirrorAdmin.MirrorAdmin(dst).createClusterMirror(
      "dr",
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.source.cluster.id", sourceClusterId],
        ["mirror.topics.include", "orders.*"],
        ["mirror.metadata.refresh.interval.ms", "300"]
      ])
    )

    // All granted: the topic is discovered and started, the group's offset synced, the source ACL copied
    // while the admin's own ACLs stay.
    await mirroring("orders")
    const synced = await groupAfter(0, "the group synced", (g) => g.state === "SYNCED")
    expect(synced.offsets.map((o) => [o.topic, o.partition, o.offset])).toEqual([["orders", 0, 3n]])
    await aclAfter(0, "the ACL sync", (s) => s.state === "SYNCED" && s.synced === 1)
    expect(await listAcls(dst)).toEqual([...ADMIN_ACLS, appRead].map(keyOf).sort())

    // Every request through the MIRROR endpoint is the admin's, authenticated with its SCRAM user.
    expect(new Set(proxy.requests.map((r) => r.clientId))).toEqual(new Set([CLIENT_ID]))
    const apiKeys = new Set(proxy.requests.map((r) => r.apiKey))
    // SaslHandshake, SaslAuthenticate, FindCoordinator, DescribeGroups, OffsetCommit, DescribeAcls, StartMirrorTopics
    for (const key of [17, 36, 10, 15, 8, 29, 95]) expect(apiKeys).toContain(key)
    expect(proxy.clientBytes().includes("n=mirror-admin,r=")).toBe(true)

    // Without READ on groups: the group sync fails with GROUP_AUTHORIZATION_FAILED; discovery goes on.
    const groupErrors = await syncErrors("group_offsets")
    await deleteAcls(dst, [groupRead])
    const withoutGroup = Date.now()
    const refused = await groupAfter(withoutGroup, "the group sync refused", (g) => g.state === "FAILED")
    expect(refused.detail).toContain(Errors.message(Errors.ErrorCode.GROUP_AUTHORIZATION_FAILED))
    expect(await syncErrors("group_offsets")).toBeGreaterThan(groupErrors)
    await produce("orders-new")
    await mirroring("orders-new")
    await aclAfter(withoutGroup, "the ACL sync without group READ", (s) => s.state === "SYNCED")

    // Without ALTER on the mirror: a newly discovered topic is refused; the group sync works again.
    await createAcls(dst, [groupRead])
    await deleteAcls(dst, [mirrorAlter])
    await commitOnSource(4)
    const withoutMirror = Date.now()
    const resynced = await groupAfter(
      withoutMirror,
      "the group synced again",
      (g) => g.state === "SYNCED" && g.offsets[0]?.offset === 4n
    )
    expect(resynced.offsets.map((o) => [o.topic, o.partition, o.offset])).toEqual([["orders", 0, 4n]])
    await produce("orders-late")
    const mirrorRefused = Errors.message(Errors.ErrorCode.CLUSTER_MIRROR_AUTHORIZATION_FAILED)
    await Wait.eventually("the start of orders-late refused", () =>
      logged.some((l) => l.includes("starting orders-late") && l.includes(mirrorRefused)) ? true : undefined
    )
    expect(await syncErrors("topic_create")).toBeGreaterThan(0)
    const late = await dst.sendToAnyBroker(Metadata.api, {
      topics: [{ name: "orders-late", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false
    })
    expect(late.topics.map((t) => t.errorCode)).toEqual([Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])

    // Without ALTER on the cluster: the ACL sync fails with CLUSTER_AUTHORIZATION_FAILED, changing nothing.
    await createAcls(dst, [mirrorAlter])
    await mirroring("orders-late")
    await deleteAcls(dst, [clusterAlter])
    const withoutCluster = Date.now()
    const aclRefused = await aclAfter(withoutCluster, "the ACL sync refused", (s) => s.state === "FAILED")
    expect(aclRefused.detail).toContain(Errors.message(Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    expect(await syncErrors("acls")).toBeGreaterThan(0)
    await groupAfter(withoutCluster, "the group sync without cluster ALTER", (g) => g.state === "SYNCED")
    expect(await listAcls(dst)).toEqual([...ADMIN_ACLS.filter((b) => b !== clusterAlter), appRead].map(keyOf).sort())

    expect(new Set(proxy.requests.map((r) => r.clientId))).toEqual(new Set([CLIENT_ID]))
    for (const line of logged) {
      expect(line).not.toContain(ADMIN_SECRET)
      expect(line).not.toContain(BROKER_SECRET)
    }
  }, 180_000)
})

describe("a mirror admin listener with mutual TLS", () => {
  // The admin presents the broker's own keystore certificate there: it acts as User:CN=localhost.
  const PRINCIPAL = "User:CN=localhost"
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-admin-tls-"))
  const certs = Certificates.make(path.join(dir, "certs"))
  let source: Node.Embedded
  let destination: Node.Embedded
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  const kafka = () =>
    new Kafka({ clientId: "app", brokers: [source.bootstrap], logLevel: logLevel.NOTHING, requestTimeout: 30_000 })
  const grants: ReadonlyArray<Binding> = [
    { resourceType: GROUP, resourceName: "*", principal: PRINCIPAL, operation: READ },
    { resourceType: TOPIC, resourceName: "*", principal: PRINCIPAL, operation: READ },
    { resourceType: TOPIC, resourceName: "*", principal: PRINCIPAL, operation: ALTER_CONFIGS },
    { resourceType: CLUSTER_MIRROR, resourceName: "dr", principal: PRINCIPAL, operation: ALTER }
  ]

  beforeAll(async () => {
    source = await Node.embedded(1, base(path.join(dir, "source")))
    // INTERNAL is PLAINTEXT (User:ANONYMOUS, the super user); MIRROR, bound on a free port, asks for a certificate.
    const config = BrokerConfig.fromProperties(
      new Map([
        ["listeners", "INTERNAL://127.0.0.1:0,MIRROR://127.0.0.1:0"],
        ["listener.security.protocol.map", "INTERNAL:PLAINTEXT,MIRROR:SSL,CONTROLLER:PLAINTEXT"],
        ["inter.broker.listener.name", "INTERNAL"],
        ["listener.name.mirror.ssl.keystore.location", certs.server.pemKeystore],
        ["listener.name.mirror.ssl.truststore.location", certs.caFile],
        ["listener.name.mirror.ssl.client.auth", "required"],
        ["mirror.admin.listener.name", "MIRROR"],
        ["authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"],
        ["super.users", "User:ANONYMOUS"]
      ]),
      base(path.join(dir, "destination"))
    )
    destination = await Node.embedded(1, config)
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 30_000 })
    const producer = kafka().producer({ allowAutoTopicCreation: true })
    await producer.connect()
    await producer.send({ topic: "orders", messages: [1, 2, 3, 4, 5].map((i) => ({ value: `v${i}` })) })
    await producer.disconnect()
    const admin = kafka().admin()
    await admin.connect()
    await admin.setOffsets({ groupId: "app", topic: "orders", partitions: [{ partition: 0, offset: "2" }] })
    await admin.disconnect()
    const res = await dst.sendToAnyBroker(CreateAcls.api, { creations: grants.map(creation) })
    expect(res.results.map((r) => r.errorCode)).toEqual(grants.map(() => 0))
  }, 120_000)

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await destination?.close()
    await source?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("connects with the listener's TLS material and is authorized as its certificate's principal", async () => {
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    await admin.createClusterMirror(
      "dr",
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.source.cluster.id", (await src.metadata([])).clusterId!],
        ["mirror.topics.include", "orders"],
        // Off: the ACL sync would make the destination's ACLs the source's (none), this principal's included.
        ["mirror.acls.include", ""],
        ["mirror.metadata.refresh.interval.ms", "300"]
      ])
    )
    const synced = await Wait.eventually("the group synced over the TLS listener", async () => {
      const g = (await admin.describeGroupSync("dr")).find((x) => x.group === "app")
      return g?.state === "SYNCED" ? g : undefined
    })
    expect(synced.offsets.map((o) => [o.topic, o.partition, o.offset])).toEqual([["orders", 0, 2n]])

    // The certificate's principal, not the super user: without its group READ the group sync is refused.
    const removed = await dst.sendToAnyBroker(DeleteAcls.api, { filters: [filter(grants[0]!)] })
    expect(removed.filterResults.map((r) => r.errorCode)).toEqual([0])
    const since = Date.now()
    const refused = await Wait.eventually("the group sync refused", async () => {
      const g = (await admin.describeGroupSync("dr")).find((x) => x.group === "app")
      return g?.state === "FAILED" && g.timeMs > since ? g : undefined
    })
    expect(refused.detail).toContain(Errors.message(Errors.ErrorCode.GROUP_AUTHORIZATION_FAILED))
  }, 120_000)
})

describe("mirror admin configs refused at start", () => {
  const refusal = async (config: Record<string, string>) => {
    try {
      const server = await ServerProcess.start({ config, tempPrefix: "cm-mirror-admin-config-" })
      await server.stop()
      return "started"
    } catch (e) {
      return String(e instanceof Error ? e.message : e)
    }
  }

  it("a listener the broker does not have, or a mechanism for a listener without SASL, names the key", async () => {
    expect(await refusal({ "mirror.admin.listener.name": "EXTERNAL" })).toContain(
      "mirror.admin.listener.name=EXTERNAL: no such listener in listeners (controller listeners excluded): PLAINTEXT"
    )
    expect(await refusal({ "sasl.mechanism.mirror.admin.protocol": "SCRAM-SHA-512" })).toContain(
      "sasl.mechanism.mirror.admin.protocol=SCRAM-SHA-512: listener PLAINTEXT of the mirror admin speaks PLAINTEXT, without SASL"
    )
  }, 120_000)
})
