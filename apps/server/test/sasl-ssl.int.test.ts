/**
 * SASL_SSL end to end: a controller and three brokers as processes whose client, inter-broker and
 * controller listeners are all SASL_SSL with SCRAM-SHA-512 (TLS with the brokers' PEM keystore, then
 * SCRAM), the users bootstrapped with the controller's `--add-scram`, and the StandardAuthorizer on
 * (`super.users=User:broker`). kcat, kafkajs and Kafka's console producer and consumer produce and
 * consume over SASL_SSL; a wrong password gets SASL_AUTHENTICATION_FAILED; a principal without READ
 * gets TOPIC_AUTHORIZATION_FAILED, and one without DESCRIBE does not see the topic in kcat's Metadata.
 * Every broker also has a second listener, MTLS (SSL with `ssl.client.auth=required`): kcat, kafkajs and
 * Kafka's console clients produce and consume there as the certificate's principal, with acks=all
 * replicated over the SASL_SSL inter-broker listener.
 */
import { type ClientError, Connection } from "@clustermirror/client"
import { CreateAcls, DescribeAcls, Errors, Fetch, Metadata } from "@clustermirror/protocol"
import { Certificates, JavaTools, Kcat, Wait } from "@clustermirror/testkit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, startCluster } from "./harness.js"

const BROKER_PASSWORD = "broker-ssl-secret-c41e"
const ALICE_PASSWORD = "alice-ssl-secret-8f02"
const BOB_PASSWORD = "bob-ssl-secret-27d9"
const CAROL_PASSWORD = "carol-ssl-secret-e5b3"
const WRONG_PASSWORD = "not-the-password-90aa"
const SECRETS = [BROKER_PASSWORD, ALICE_PASSWORD, BOB_PASSWORD, CAROL_PASSWORD, WRONG_PASSWORD]
const MTLS_PRINCIPAL = "User:CN=client,OU=test"
const STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

/** Kafka's ACL codes (resource types, pattern types, operations, permission types) this test uses. */
const Acl = {
  ResourceType: { ANY: 1, TOPIC: 2, GROUP: 3 },
  PatternType: { ANY: 1, LITERAL: 3, PREFIXED: 4 },
  AclOperation: { ANY: 1, ALL: 2, WRITE: 4, DESCRIBE: 8 },
  AclPermissionType: { ANY: 1, ALLOW: 3 }
} as const

const scramJaas = (user: string, password: string) =>
  `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`

const lines = (stdout: string) => stdout.split("\n").filter((l) => l !== "")

interface KcatMetadata {
  readonly brokers: ReadonlyArray<{ readonly id: number; readonly name: string }>
  readonly topics: ReadonlyArray<{ readonly topic: string }>
}

describe("a 3-broker cluster with SASL_SSL (SCRAM-SHA-512) on every listener and the StandardAuthorizer", () => {
  let certs: Certificates.Certificates
  let cluster: Cluster
  let bootstrap: string
  let mtlsBootstrap: string
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clustermirror-sasl-ssl-"))

  const kcatSaslSsl = (user: string, password: string) => [
    "-X",
    "security.protocol=sasl_ssl",
    "-X",
    `ssl.ca.location=${certs.caFile}`,
    "-X",
    "sasl.mechanisms=SCRAM-SHA-512",
    "-X",
    `sasl.username=${user}`,
    "-X",
    `sasl.password=${password}`
  ]
  const kcat = (args: ReadonlyArray<string>, input?: string) =>
    Kcat.kcat(["-b", bootstrap, ...args], input === undefined ? { timeoutMs: 60_000 } : { input, timeoutMs: 60_000 })

  /** Our client over SASL_SSL: TLS with the CA, then SCRAM-SHA-512. */
  const open = (user: string, password: string) =>
    Connection.open({
      host: "127.0.0.1",
      port: cluster.brokers[0]!.port,
      requestTimeoutMs: 60_000,
      security: {
        tls: { ca: [fs.readFileSync(certs.caFile)] },
        sasl: { mechanism: "SCRAM-SHA-512", username: user, password }
      }
    })

  const allow = (principal: string, resourceType: number, resourceName: string, operation: number) => ({
    resourceType,
    resourceName,
    resourcePatternType: Acl.PatternType.LITERAL,
    principal,
    host: "*",
    operation,
    permissionType: Acl.AclPermissionType.ALLOW
  })

  beforeAll(async () => {
    certs = Certificates.make(path.join(dir, "certs"))
    const security = {
      "listener.security.protocol.map": "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL,MTLS:SSL",
      "listener.name.mtls.ssl.client.auth": "required",
      "controller.listener.names": "CONTROLLER",
      "ssl.keystore.type": "PEM",
      "ssl.keystore.location": certs.server.pemKeystore,
      "ssl.truststore.type": "PEM",
      "ssl.truststore.location": certs.caFile,
      "sasl.enabled.mechanisms": "SCRAM-SHA-512",
      "authorizer.class.name": STANDARD_AUTHORIZER,
      "super.users": "User:broker"
    }
    const scram = (name: string, password: string) => [
      "--add-scram",
      `SCRAM-SHA-512=[name=${name},password=${password}]`
    ]
    cluster = await startCluster({
      brokers: 3,
      brokerListener: "SASL_SSL",
      secondBrokerListener: "MTLS",
      controllerArgs: [
        ...scram("broker", BROKER_PASSWORD),
        ...scram("alice", ALICE_PASSWORD),
        ...scram("bob", BOB_PASSWORD),
        ...scram("carol", CAROL_PASSWORD)
      ],
      controllerConfig: { ...security, "broker.session.timeout.ms": 3000 },
      brokerConfig: {
        ...security,
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scramJaas("broker", BROKER_PASSWORD),
        "listener.name.controller.scram-sha-512.sasl.jaas.config": scramJaas("broker", BROKER_PASSWORD),
        "broker.heartbeat.interval.ms": 300,
        "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3
      }
    })
    bootstrap = cluster.brokers.map((b) => `127.0.0.1:${b.port}`).join(",")
    mtlsBootstrap = cluster.brokers.map((b) => `127.0.0.1:${cluster.cluster.node(b.nodeId).secondPort}`).join(",")
    // alice may do everything with topics and groups; bob may write and describe "secured" only; carol nothing.
    const admin = await open("broker", BROKER_PASSWORD)
    try {
      const { TOPIC, GROUP } = Acl.ResourceType
      const Op = Acl.AclOperation
      const creations = [
        allow("User:alice", TOPIC, "*", Op.ALL),
        allow("User:alice", GROUP, "*", Op.ALL),
        allow("User:bob", TOPIC, "secured", Op.WRITE),
        allow("User:bob", TOPIC, "secured", Op.DESCRIBE),
        // The client certificate's subject (RFC 2253), mapped by the default rule: topics "mtls-*", any group.
        { ...allow(MTLS_PRINCIPAL, TOPIC, "mtls-", Op.ALL), resourcePatternType: Acl.PatternType.PREFIXED },
        allow(MTLS_PRINCIPAL, GROUP, "*", Op.ALL)
      ]
      const created = await admin.call(CreateAcls.api, { creations })
      expect(created.results.map((r) => r.errorCode)).toEqual(creations.map(() => 0))
      // Every broker serves the ACLs once it replayed them.
      for (const b of cluster.brokers) {
        const conn = await Connection.open({
          host: "127.0.0.1",
          port: b.port,
          requestTimeoutMs: 60_000,
          security: {
            tls: { ca: [fs.readFileSync(certs.caFile)] },
            sasl: { mechanism: "SCRAM-SHA-512", username: "broker", password: BROKER_PASSWORD }
          }
        })
        try {
          await Wait.eventually("the ACLs on broker", async () => {
            const res = await conn.call(DescribeAcls.api, {
              resourceTypeFilter: Acl.ResourceType.ANY,
              resourceNameFilter: null,
              patternTypeFilter: Acl.PatternType.ANY,
              principalFilter: null,
              hostFilter: null,
              operation: Acl.AclOperation.ANY,
              permissionType: Acl.AclPermissionType.ANY
            })
            return res.resources.reduce((n, r) => n + r.acls.length, 0) === creations.length ? true : undefined
          })
        } finally {
          await conn.close()
        }
      }
    } finally {
      await admin.close()
    }
  }, 240_000)

  afterAll(async () => {
    await cluster?.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("kcat produces and consumes over SASL_SSL, replicated to all three brokers", async () => {
    const md = JSON.parse((await kcat([...kcatSaslSsl("alice", ALICE_PASSWORD), "-L", "-J"])).stdout) as KcatMetadata
    expect(md.brokers.map((b) => b.name).sort()).toEqual(cluster.brokers.map((b) => `127.0.0.1:${b.port}`).sort())
    const values = Array.from({ length: 100 }, (_, i) => `sasl-ssl-${i}`)
    await kcat(
      [...kcatSaslSsl("alice", ALICE_PASSWORD), "-P", "-t", "kcat-ssl", "-X", "acks=all"],
      `${values.join("\n")}\n`
    )
    const conn = await open("alice", ALICE_PASSWORD)
    try {
      // Every replica in the ISR: the followers fetched from the leader over SASL_SSL.
      await Wait.eventually("three in-sync replicas", async () => {
        const res = await conn.call(Metadata.api, {
          topics: [{ name: "kcat-ssl", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false
        })
        return res.topics[0]?.partitions[0]?.isrNodes.length === 3 ? true : undefined
      })
    } finally {
      await conn.close()
    }
    const consumed = await kcat([
      ...kcatSaslSsl("alice", ALICE_PASSWORD),
      "-C",
      "-t",
      "kcat-ssl",
      "-o",
      "beginning",
      "-e",
      "-c",
      String(values.length)
    ])
    expect(lines(consumed.stdout)).toEqual(values)
  }, 120_000)

  it("kafkajs produces and consumes over SASL_SSL", async () => {
    const { Kafka, logLevel } = await import("kafkajs")
    const kafka = new Kafka({
      clientId: "sasl-ssl-kafkajs",
      brokers: [bootstrap.split(",")[0]!],
      logLevel: logLevel.NOTHING,
      ssl: { ca: [fs.readFileSync(certs.caFile, "utf8")] },
      sasl: { mechanism: "scram-sha-512", username: "alice", password: ALICE_PASSWORD }
    })
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({
      topic: "kafkajs-ssl",
      acks: -1,
      messages: Array.from({ length: 20 }, (_, i) => ({ value: `kjs-${i}` }))
    })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: "sasl-ssl-kafkajs-group" })
    await consumer.connect()
    await consumer.subscribe({ topic: "kafkajs-ssl", fromBeginning: true })
    const seen: string[] = []
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString())
          if (seen.length === 20) resolve()
        }
      })
    })
    await consumer.disconnect()
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `kjs-${i}`))
  }, 120_000)

  it("Kafka's console producer and consumer work over SASL_SSL", async () => {
    const clientConfig = path.join(dir, "alice.properties")
    fs.writeFileSync(
      clientConfig,
      [
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        `sasl.jaas.config=${scramJaas("alice", ALICE_PASSWORD)}`,
        "ssl.truststore.type=PEM",
        `ssl.truststore.location=${certs.caFile}`,
        ""
      ].join("\n")
    )
    JavaTools.expectSuccess(
      "console producer",
      await JavaTools.consoleProducer(
        ["--bootstrap-server", bootstrap, "--topic", "console-ssl", "--command-config", clientConfig],
        "a\nb\nc\n"
      )
    )
    const consumed = JavaTools.expectSuccess(
      "console consumer",
      await JavaTools.consoleConsumer([
        "--bootstrap-server",
        bootstrap,
        "--topic",
        "console-ssl",
        "--from-beginning",
        "--max-messages",
        "3",
        "--command-config",
        clientConfig
      ])
    )
    expect(JavaTools.lines(consumed.stdout)).toEqual(["a", "b", "c"])
  }, 180_000)

  it("a wrong password gets SASL_AUTHENTICATION_FAILED after the TLS handshake", async () => {
    await expect(kcat([...kcatSaslSsl("alice", WRONG_PASSWORD), "-L", "-m", "5"])).rejects.toThrow()
    let error: ClientError.ClientError | undefined
    try {
      await (await open("alice", WRONG_PASSWORD)).close()
    } catch (e) {
      error = e as ClientError.ClientError
    }
    expect(error?._tag).toBe("KafkaError")
    expect(error?.message).toContain("SASL_AUTHENTICATION_FAILED")
    expect(error?.message).not.toContain(WRONG_PASSWORD)
  }, 60_000)

  it("a principal without READ gets TOPIC_AUTHORIZATION_FAILED; one without DESCRIBE does not see the topic", async () => {
    // alice (ALL on topics) creates "secured"; bob may write to it (WRITE) but not read it.
    await kcat([...kcatSaslSsl("alice", ALICE_PASSWORD), "-P", "-t", "secured", "-X", "acks=all"], "s0\n")
    await kcat([...kcatSaslSsl("bob", BOB_PASSWORD), "-P", "-t", "secured", "-X", "acks=all"], "s1\ns2\n")
    const bob = await open("bob", BOB_PASSWORD)
    try {
      const md = await bob.call(Metadata.api, {
        topics: [{ name: "secured", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false
      })
      expect(md.topics[0]?.errorCode).toBe(Errors.ErrorCode.NONE)
      // Fetch v12 names its topics (v13+ takes ids).
      const fetched = await bob.request(Fetch.api, 12, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        topics: [{ topic: "secured", partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20 }] }]
      })
      expect(fetched.responses.flatMap((t) => t.partitions.map((p) => p.errorCode))).toEqual([
        Errors.ErrorCode.TOPIC_AUTHORIZATION_FAILED
      ])
    } finally {
      await bob.close()
    }
    const topicsSeenBy = async (user: string, password: string) =>
      (JSON.parse((await kcat([...kcatSaslSsl(user, password), "-L", "-J"])).stdout) as KcatMetadata).topics.map(
        (t) => t.topic
      )
    expect(await topicsSeenBy("bob", BOB_PASSWORD)).toContain("secured")
    expect(await topicsSeenBy("alice", ALICE_PASSWORD)).toContain("secured")
    expect(await topicsSeenBy("carol", CAROL_PASSWORD)).not.toContain("secured")
  }, 120_000)

  it("no password appears in any node's output", () => {
    for (const node of [cluster.cluster.controller, ...cluster.cluster.brokers]) {
      const output = fs.readFileSync(node.logFile, "utf8")
      expect(output, node.logFile).toContain("listening on")
      for (const secret of SECRETS) expect(output, node.logFile).not.toContain(secret)
    }
  })

  it("kcat, kafkajs and Kafka's console clients work over mTLS on the second listener, as the certificate's principal", async () => {
    const kcatMtls = [
      ...["-X", "security.protocol=ssl", "-X", `ssl.ca.location=${certs.caFile}`],
      ...["-X", `ssl.certificate.location=${certs.client.certFile}`, "-X", `ssl.key.location=${certs.client.keyFile}`]
    ]
    const mkcat = (args: ReadonlyArray<string>, input?: string) =>
      Kcat.kcat(["-b", mtlsBootstrap, ...kcatMtls, ...args], {
        timeoutMs: 60_000,
        ...(input === undefined ? {} : { input })
      })
    const values = Array.from({ length: 30 }, (_, i) => `mtls-${i}`)
    await mkcat(["-P", "-t", "mtls-kcat", "-X", "request.required.acks=-1"], `${values.join("\n")}\n`)
    const consumed = await mkcat(["-C", "-t", "mtls-kcat", "-o", "beginning", "-e", "-q"])
    expect(lines(consumed.stdout).sort()).toEqual([...values].sort())
    // Metadata on the MTLS listener names the brokers' MTLS endpoints.
    const meta = JSON.parse((await mkcat(["-L", "-J"])).stdout) as KcatMetadata
    expect(meta.brokers.map((b) => b.name).sort()).toEqual(mtlsBootstrap.split(",").sort())
    // Without a certificate the MTLS listener refuses the client.
    await expect(
      Kcat.kcat([
        "-b",
        mtlsBootstrap,
        "-X",
        "security.protocol=ssl",
        "-X",
        `ssl.ca.location=${certs.caFile}`,
        "-L",
        "-m",
        "5"
      ])
    ).rejects.toThrow()

    const { Kafka, logLevel } = await import("kafkajs")
    const kafka = new Kafka({
      clientId: "mtls-kafkajs",
      brokers: [mtlsBootstrap.split(",")[0]!],
      logLevel: logLevel.NOTHING,
      ssl: {
        ca: [fs.readFileSync(certs.caFile, "utf8")],
        cert: fs.readFileSync(certs.client.certFile, "utf8"),
        key: fs.readFileSync(certs.client.keyFile, "utf8")
      }
    })
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic: "mtls-kafkajs", acks: -1, messages: values.map((value) => ({ value })) })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: "mtls-kafkajs-group" })
    await consumer.connect()
    await consumer.subscribe({ topic: "mtls-kafkajs", fromBeginning: true })
    const seen: string[] = []
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString())
          if (seen.length === values.length) resolve()
        }
      })
    })
    await consumer.disconnect()
    expect(seen).toEqual(values)

    const tls = [
      "security.protocol=SSL",
      "ssl.truststore.type=PEM",
      `ssl.truststore.location=${certs.caFile}`,
      "ssl.keystore.type=PEM",
      `ssl.keystore.location=${certs.client.pemKeystore}`
    ]
    JavaTools.expectSuccess(
      "kafka-console-producer",
      await JavaTools.consoleProducer(
        [
          ...["--bootstrap-server", mtlsBootstrap, "--topic", "mtls-java"],
          ...["acks=all", ...tls].flatMap((p) => ["--producer-property", p])
        ],
        `${values.join("\n")}\n`,
        { timeoutMs: 180_000 }
      )
    )
    const java = JavaTools.expectSuccess(
      "kafka-console-consumer",
      await JavaTools.consoleConsumer(
        [
          ...["--bootstrap-server", mtlsBootstrap, "--topic", "mtls-java", "--from-beginning"],
          ...["--max-messages", String(values.length), ...tls.flatMap((p) => ["--command-property", p])]
        ],
        { timeoutMs: 180_000 }
      )
    )
    expect([...JavaTools.lines(java.stdout)].sort()).toEqual([...values].sort())
  }, 300_000)
})
