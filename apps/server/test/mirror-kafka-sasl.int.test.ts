/**
 * A mirror from a secured Apache Kafka 4.4 source (KIP-1279 §8.4): Kafka serves a SASL_SSL listener with
 * SCRAM-SHA-512 users bootstrapped at format time (`kafka-storage format --add-scram`), TLS from a PEM
 * keystore, and the StandardAuthorizer. The mirror's principal holds only what its calls need, granted
 * with Kafka's own kafka-acls: READ, DESCRIBE and DESCRIBE_CONFIGS on the mirrored topics, DESCRIBE on the
 * synced group, DESCRIBE on CLUSTER. Over that listener the mirror copies idempotent, compressed batches
 * byte for byte, syncs a group's offsets committed on Kafka and an ACL created on Kafka, and fails over to
 * a writable topic whose offsets continue. A mirror with a wrong password fails its partitions with
 * SASL_AUTHENTICATION_FAILED, and no password appears in describe output or the servers' logs. A principal
 * with READ alone mirrors a topic (READ implies DESCRIBE), while its topic configs (DESCRIBE_CONFIGS) and
 * the ACLs (DESCRIBE on CLUSTER) do not sync, each failure naming the missing permission.
 *
 * Kafka's PLAINTEXT listener is its inter-broker and controller listener, so its principal (ANONYMOUS) is
 * a super user; the test reads the source's logs through it for the byte comparison. The test's admin
 * work on Kafka (producing, ACLs, group offsets) goes over SASL_SSL as the super user `admin`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as MirrorsCommand from "@clustermirror/cli"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { DescribeAcls, FindCoordinator, OffsetFetch } from "@clustermirror/protocol"
import {
  ApacheKafka,
  Certificates,
  JavaTools,
  Kcat,
  KafkaPeer,
  MirrorCheck,
  Ports,
  ServerProcess,
  Wait
} from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
const ADMIN_PASSWORD = "admin-scram-secret-7c31"
const MIRROR_PASSWORD = "mirror-scram-secret-5e1f"
const WRONG_PASSWORD = "wrong-scram-secret-0b9d"
const READER_PASSWORD = "reader-scram-secret-a64e"
const SECRETS = [ADMIN_PASSWORD, MIRROR_PASSWORD, WRONG_PASSWORD, READER_PASSWORD]
const TOPICS = ["orders", "events"] as const
const PARTITIONS = 2
const RECORDS = 3_000
const GROUP = "billing"
const COMMITTED: ReadonlyArray<readonly [string, number, number]> = [
  ["orders", 0, 11],
  ["orders", 1, 23],
  ["events", 0, 5]
]

const scramJaas = (user: string, password: string) =>
  `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`

const lines = (prefix: string, n: number): string =>
  `${Array.from({ length: n }, (_, i) => `${prefix}-${i}-${(i * 2654435761) % 1000003}-${"sasl".repeat(8)}`).join("\n")}\n`

/** `key:value` lines for Kafka's console producer, so that the keys spread the records over the partitions. */
const keyed = (prefix: string, n: number): string =>
  `${Array.from({ length: n }, (_, i) => `k${i}:${prefix}-${i}-${"sasl".repeat(8)}`).join("\n")}\n`

/** The committed offset per `topic:partition` of `group`, asked of its coordinator. */
const committedOffsets = async (client: ClusterClient.Client, group: string): Promise<ReadonlyMap<string, number>> => {
  const found = await client.sendToAnyBroker(FindCoordinator.api, {
    key: group,
    keyType: 0,
    coordinatorKeys: [group]
  })
  const coordinator = found.coordinators.find((c) => c.key === group)?.nodeId ?? found.nodeId
  const res = await client.sendToNode(coordinator, OffsetFetch.api, {
    groupId: group,
    topics: null,
    groups: [{ groupId: group, topics: null }],
    requireStable: false
  })
  const topics = res.groups.length > 0 ? res.groups[0]!.topics : res.topics
  const out = new Map<string, number>()
  for (const t of topics)
    for (const p of t.partitions)
      if (p.committedOffset >= 0n) out.set(`${t.name}:${p.partitionIndex}`, Number(p.committedOffset))
  return out
}

describe("a mirror from Apache Kafka over SASL_SSL with SCRAM-SHA-512 and ACLs", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-kafka-sasl-"))
  const logFile = path.join(dir, "destination.log")
  let certs: Certificates.Certificates
  let kafka: ApacheKafka.KafkaNode
  let destination: ServerProcess.ServerHandle
  let destinationBootstrap: string
  let saslBootstrap: string
  let adminConfig: string
  let source: ClusterClient.Client
  let client: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin

  /** kafka-acls on Kafka's SASL_SSL listener as `admin`. */
  const kafkaAcls = async (args: ReadonlyArray<string>) =>
    JavaTools.expectSuccess(
      "kafka-acls",
      await JavaTools.acls(["--bootstrap-server", saslBootstrap, "--command-config", adminConfig, ...args])
    )

  const mirrorConfig = (password: string, user = "mirror"): Map<string, string> =>
    new Map([
      ["bootstrap.servers", saslBootstrap],
      ["security.protocol", "SASL_SSL"],
      ["sasl.mechanism", "SCRAM-SHA-512"],
      ["sasl.jaas.config", scramJaas(user, password)],
      ["ssl.truststore.type", "PEM"],
      ["ssl.truststore.location", certs.caFile]
    ])

  const partitionsOf = async (mirror: string) =>
    (await admin.describeClusterMirrors([mirror])).mirrors[0]?.partitions ?? []

  /** The whole output of `clustermirror-mirrors` run in this process. */
  const mirrorsCommand = async (args: ReadonlyArray<string>) => {
    const out: Array<string> = []
    const code = await MirrorsCommand.main(["--bootstrap-server", destinationBootstrap, ...args], {
      out: (l) => out.push(l),
      err: (l) => out.push(`ERR ${l}`)
    })
    expect(code, out.join("\n")).toBe(0)
    return out.join("\n")
  }

  beforeAll(async () => {
    certs = Certificates.make(path.join(dir, "certs"))
    await KafkaPeer.libs()
    const port = await Ports.freePort()
    ;[kafka, destination] = await Promise.all([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        extraListeners: [{ name: "SASL_SSL", protocol: "SASL_SSL" }],
        scramUsers: [
          { mechanism: "SCRAM-SHA-512", name: "admin", password: ADMIN_PASSWORD },
          { mechanism: "SCRAM-SHA-512", name: "mirror", password: MIRROR_PASSWORD },
          { mechanism: "SCRAM-SHA-512", name: "reader", password: READER_PASSWORD }
        ],
        properties: {
          ...ApacheKafka.QUICK_SESSION_PROPERTIES,
          "num.partitions": PARTITIONS,
          "sasl.enabled.mechanisms": "SCRAM-SHA-512",
          "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
          "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
          "listener.name.sasl_ssl.ssl.keystore.key": fs.readFileSync(certs.server.keyFile, "utf8"),
          "listener.name.sasl_ssl.ssl.keystore.certificate.chain":
            fs.readFileSync(certs.server.certFile, "utf8") + fs.readFileSync(certs.caFile, "utf8"),
          "authorizer.class.name": STANDARD_AUTHORIZER,
          "super.users": "User:ANONYMOUS;User:admin"
        }
      }),
      ServerProcess.start({
        tempPrefix: "cm-kafka-sasl-dst-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        logFile,
        config: {
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "broker.heartbeat.interval.ms": 300,
          "mirror.state.topic.num.partitions": 3,
          // The ACL sync needs an authorizer on both sides; the destination's own clients are its super user.
          "authorizer.class.name": STANDARD_AUTHORIZER,
          "super.users": "User:ANONYMOUS"
        }
      })
    ])
    saslBootstrap = `127.0.0.1:${kafka.listenerPorts["SASL_SSL"]!}`
    destinationBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
    adminConfig = path.join(dir, "admin.properties")
    fs.writeFileSync(
      adminConfig,
      [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        `sasl.jaas.config=${scramJaas("admin", ADMIN_PASSWORD)}`,
        "ssl.truststore.type=PEM",
        `ssl.truststore.location=${certs.caFile}`,
        ""
      ].join("\n")
    )
    source = new ClusterClient.Client({ bootstrapServers: [kafka.bootstrap], requestTimeoutMs: 30_000 })
    client = new ClusterClient.Client({ bootstrapServers: destinationBootstrap.split(","), requestTimeoutMs: 30_000 })
    admin = new MirrorAdmin.MirrorAdmin(client)
    await Wait.eventually("3 destination brokers", async () =>
      (await client.metadata([])).brokers.size === 3 ? true : undefined
    )
  }, 240_000)

  afterAll(async () => {
    await source?.close()
    await client?.close()
    await destination?.stop()
    await kafka?.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("mirrors byte-identically with only the §8.4 permissions, syncs group offsets and ACLs, and fails over", async () => {
    // Idempotent and compressed, several batches per partition: Kafka's producer over SASL_SSL as `admin`,
    // and kcat over the PLAINTEXT listener: Kafka 4 refuses librdkafka 2.0's SCRAM (its final nonce repeats
    // the client nonce, which Kafka now checks strictly; librdkafka fixed it in 2.6.1).
    const produced = Promise.all([
      JavaTools.consoleProducer(
        [
          ...["--bootstrap-server", saslBootstrap, "--command-config", adminConfig, "--topic", "orders"],
          ...["--property", "parse.key=true", "--property", "key.separator=:"],
          ...["--producer-property", "compression.type=lz4", "--producer-property", "enable.idempotence=true"],
          ...["--producer-property", "acks=all", "--producer-property", "linger.ms=5"],
          ...["--producer-property", "batch.size=16384"]
        ],
        keyed("orders", RECORDS)
      ).then((r) => JavaTools.expectSuccess("console producer", r)),
      Kcat.forBootstrap(kafka.bootstrap)(
        [
          ...["-P", "-t", "events", "-K", ":", "-z", "zstd", "-X", "enable.idempotence=true", "-X", "acks=all"],
          ...["-X", "linger.ms=5", "-X", "batch.num.messages=250"]
        ],
        { input: keyed("events", RECORDS) }
      )
    ])
    const offsetsFile = path.join(dir, "offsets.csv")
    fs.writeFileSync(offsetsFile, `${COMMITTED.map((c) => c.join(",")).join("\n")}\n`)
    await produced
    await Promise.all([
      // The mirror's principal: exactly KIP-1279 §8.4.
      kafkaAcls([
        ...["--add", "--allow-principal", "User:mirror"],
        ...["--operation", "Read", "--operation", "DescribeConfigs"],
        ...TOPICS.flatMap((t) => ["--topic", t])
      ]),
      kafkaAcls([
        "--add",
        "--allow-principal",
        "User:mirror",
        "--operation",
        "Describe",
        "--group",
        GROUP,
        "--cluster"
      ]),
      // The ACL the sync copies.
      kafkaAcls(["--add", "--allow-principal", "User:app", "--operation", "Read", "--topic", "orders"]),
      JavaTools.consumerGroups([
        ...["--bootstrap-server", saslBootstrap, "--command-config", adminConfig],
        ...["--reset-offsets", "--group", GROUP, "--from-file", offsetsFile, "--execute"]
      ]).then((r) => JavaTools.expectSuccess("kafka-consumer-groups", r))
    ])
    expect(await committedOffsets(source, GROUP)).toEqual(new Map(COMMITTED.map(([t, p, o]) => [`${t}:${p}`, o])))

    await admin.createClusterMirror(
      "secured",
      new Map([
        ...mirrorConfig(MIRROR_PASSWORD),
        ["mirror.acls.include", "TOPIC;.*;*;*;User:app"],
        ["mirror.metadata.refresh.interval.ms", "500"]
      ])
    )
    // The cluster resolves the topics on the source itself, over SASL_SSL as `mirror`.
    const started = await admin.startMirrorTopics("secured", [...TOPICS])
    expect(started.map((t) => t.error)).toEqual(TOPICS.map(() => null))
    await Wait.eventually(
      "every partition mirrored with lag 0",
      async () => {
        const ps = await partitionsOf("secured")
        if (
          ps.length === TOPICS.length * PARTITIONS &&
          ps.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset > 0n)
        )
          return ps
        throw new Error(
          ps
            .map(
              (p) =>
                `${p.topic}-${p.partition} ${p.state} ${p.destinationOffset}/${p.sourceOffset} ${p.errorMessage ?? ""}`
            )
            .join("; ")
        )
      },
      120_000,
      250
    )
    const compared = await MirrorCheck.compareClusters({
      source: kafka.bootstrap,
      destination: destinationBootstrap,
      topics: [...TOPICS],
      upTo: "sourceHighWatermark"
    })
    expect(
      compared.partitions.filter((p) => p.firstMismatch !== null).map((p) => JSON.stringify(p.firstMismatch))
    ).toEqual([])
    expect(compared.identical).toBe(true)
    expect(compared.partitions.reduce((n, p) => n + p.records, 0)).toBe(RECORDS * TOPICS.length)
    // Several batches per partition, and the source's topic ids.
    for (const p of compared.partitions) {
      expect(p.batches).toBeGreaterThan(1)
      expect(p.destinationTopicId).toBe(p.sourceTopicId)
    }

    // The group's offsets committed on Kafka, and the ACL created on Kafka, on the destination.
    await Wait.eventually(
      "the group's offsets and the app's ACL synced",
      async () => {
        const billing = (await admin.describeGroupSync("secured")).find((g) => g.group === GROUP)
        const acls = await admin.describeAclSync("secured")
        return billing?.state === "SYNCED" && acls?.state === "SYNCED" && acls.synced === 1 ? true : undefined
      },
      60_000,
      250
    )
    expect(await committedOffsets(client, GROUP)).toEqual(await committedOffsets(source, GROUP))
    const listed = await client.sendToAnyBroker(DescribeAcls.api, {
      resourceTypeFilter: 1,
      resourceNameFilter: null,
      patternTypeFilter: 1,
      principalFilter: null,
      hostFilter: null,
      operation: 1,
      permissionType: 1
    })
    expect(
      listed.resources.flatMap((r) =>
        r.acls.map(
          (a) =>
            `${r.resourceType}/${r.resourceName}/${r.patternType}/${a.principal}/${a.host}/${a.operation}/${a.permissionType}`
        )
      )
    ).toEqual(["2/orders/3/User:app/*/3/3"])

    // Failover: the stop makes the topics writable, and their offsets continue from the mirrored ends.
    const ends = new Map(compared.partitions.map((p) => [`${p.topic}:${p.partition}`, BigInt(p.sourceEnd)]))
    await admin.stopMirrorTopics("secured", [...TOPICS])
    await Wait.eventually(
      "every partition stopped",
      async () => {
        const ps = await partitionsOf("secured")
        return ps.length === TOPICS.length * PARTITIONS && ps.every((p) => p.state === "STOPPED") ? true : undefined
      },
      60_000,
      250
    )
    const local = Kcat.forBootstrap(destinationBootstrap)
    await local(["-P", "-t", "orders", "-p", "0", "-X", "acks=all", "-X", "enable.idempotence=true"], {
      input: lines("local", 50)
    })
    const latest = await MirrorAdmin.listOffset(client, "orders", 0, MirrorAdmin.LATEST)
    const mirroredEnd = ends.get("orders:0")!
    // The stop's MIRROR_PID_RESET control batch takes one offset, then the local records follow.
    expect(latest.offset).toBe(mirroredEnd + 1n + 50n)
    const after = await local(
      ["-C", "-t", "orders", "-p", "0", "-o", String(mirroredEnd), "-e", "-q", "-f", "%o %s\\n"],
      { timeoutMs: 60_000 }
    )
    const consumed = after.stdout.split("\n").filter((l) => l !== "")
    expect(consumed).toHaveLength(50)
    expect(consumed[0]).toBe(`${mirroredEnd + 1n} local-0-0-${"sasl".repeat(8)}`)
    expect(consumed[49]).toMatch(new RegExp(`^${mirroredEnd + 50n} local-49-`))
  }, 240_000)

  it("a wrong password fails the mirror's partitions with SASL_AUTHENTICATION_FAILED, and no password is shown or logged", async () => {
    await Kcat.forBootstrap(kafka.bootstrap)(["-P", "-t", "payments", "-X", "acks=all"], {
      input: lines("payments", 10)
    })
    const clusterId = (await source.metadata([])).clusterId!
    await admin.createClusterMirror(
      "wrong",
      new Map([...mirrorConfig(WRONG_PASSWORD), ["mirror.source.cluster.id", clusterId]])
    )
    // The topic's id and partitions come from Kafka's PLAINTEXT listener; the mirror itself connects over SASL_SSL.
    const started = await admin.startMirrorTopics("wrong", ["payments"], { sourceBootstrap: kafka.bootstrap })
    expect(started.map((t) => [t.error, t.source])).toEqual([[null, "present"]])
    const failed = await Wait.eventually(
      "the partitions failed on authentication",
      async () => {
        const ps = await partitionsOf("wrong")
        return ps.length === PARTITIONS &&
          ps.every((p) => p.state === "FAILED" && (p.errorMessage ?? "").includes("SASL_AUTHENTICATION_FAILED"))
          ? ps
          : undefined
      },
      90_000,
      250
    )
    for (const p of failed) for (const secret of SECRETS) expect(p.errorMessage).not.toContain(secret)

    const configs = await admin.mirrorConfigEntries("wrong")
    expect(configs.find((c) => c.name === "sasl.jaas.config")).toMatchObject({ value: null, isSensitive: true })
    // Retries pass through other states: describe until a snapshot shows both partitions FAILED.
    const outputs = await Wait.eventually(
      "the CLI describing both partitions FAILED",
      async () => {
        const described = [
          await mirrorsCommand(["--describe", "--failed", "--mirror", "wrong"]),
          await mirrorsCommand(["--describe", "--mirror", "wrong", "--json"]),
          await mirrorsCommand(["--describe", "--configs", "--mirror", "wrong"]),
          await mirrorsCommand(["--describe", "--configs", "--mirror", "wrong", "--json"])
        ]
        const rows = JSON.parse(described[1]!) as ReadonlyArray<{ readonly state: string }>
        return rows.length === PARTITIONS && rows.every((r) => r.state === "FAILED") ? described : undefined
      },
      60_000,
      250
    )
    for (const partition of [0, 1])
      expect(outputs[0]).toMatch(
        new RegExp(
          `payments +${partition} +\\d+/100 +Last mirror epoch lookup failed: SaslAuthenticate SCRAM-SHA-512 as mirror`
        )
      )
    expect(JSON.parse(outputs[1]!)).toEqual(
      [0, 1].map((partition) =>
        expect.objectContaining({
          mirror: "wrong",
          topic: "payments",
          partition,
          state: "FAILED",
          errorMessage: expect.stringContaining("SASL_AUTHENTICATION_FAILED")
        })
      )
    )
    expect(outputs[2]).toContain("sasl.jaas.config=null sensitive=true")
    for (const out of outputs) for (const secret of SECRETS) expect(out).not.toContain(secret)
    const log = fs.readFileSync(logFile, "utf8")
    expect(log).toContain("listening on")
    for (const secret of SECRETS) expect(log).not.toContain(secret)
    for (const secret of SECRETS) expect(kafka.logs()).not.toContain(secret)
  }, 180_000)

  it("READ alone mirrors a topic; without DESCRIBE_CONFIGS its configs, and without DESCRIBE on CLUSTER the ACLs, do not sync", async () => {
    await Kcat.forBootstrap(kafka.bootstrap)(
      ["-P", "-t", "audit", "-K", ":", "-z", "gzip", "-X", "enable.idempotence=true", "-X", "batch.num.messages=100"],
      { input: keyed("audit", 400) }
    )
    await kafkaAcls(["--add", "--allow-principal", "User:reader", "--operation", "Read", "--topic", "audit"])
    await admin.createClusterMirror(
      "partial",
      new Map([...mirrorConfig(READER_PASSWORD, "reader"), ["mirror.metadata.refresh.interval.ms", "500"]])
    )
    expect((await admin.startMirrorTopics("partial", ["audit"])).map((t) => t.error)).toEqual([null])
    await Wait.eventually(
      "audit mirrored with lag 0",
      async () => {
        const ps = await partitionsOf("partial")
        if (ps.length === PARTITIONS && ps.every((p) => p.state === "MIRRORING" && p.lag === 0n && p.sourceOffset > 0n))
          return ps
        throw new Error(
          ps
            .map(
              (p) =>
                `${p.topic}-${p.partition} ${p.state} ${p.destinationOffset}/${p.sourceOffset} ${p.errorMessage ?? ""}`
            )
            .join("; ")
        )
      },
      120_000,
      250
    )
    const compared = await MirrorCheck.compareClusters({
      source: kafka.bootstrap,
      destination: destinationBootstrap,
      topics: ["audit"],
      upTo: "sourceHighWatermark"
    })
    expect(compared.identical).toBe(true)
    expect(compared.partitions.reduce((n, p) => n + p.records, 0)).toBe(400)

    const acls = await Wait.eventually(
      "the ACL sync failed",
      async () => {
        const status = await admin.describeAclSync("partial")
        return status?.state === "FAILED" ? status : undefined
      },
      60_000,
      250
    )
    // DescribeAcls needs DESCRIBE on CLUSTER; Kafka answers CLUSTER_AUTHORIZATION_FAILED with this message.
    expect(acls.detail).toMatch(/^describing the source ACLs: DescribeAcls: .*needs DESCRIBE permission\.$/)
    expect(acls.lastSyncedMs).toBe(-1)
    const configsError = await Wait.eventually(
      "the topic config sync error logged",
      () =>
        fs
          .readFileSync(logFile, "utf8")
          .split("\n")
          .find((l) => l.includes("mirror partial: topic_configs sync error")),
      60_000,
      250
    )
    // DescribeConfigs needs DESCRIBE_CONFIGS on the topic: TOPIC_AUTHORIZATION_FAILED.
    expect(configsError).toContain("mirror partial: topic audit on the source: Topic authorization failed.")
  }, 180_000)
})
