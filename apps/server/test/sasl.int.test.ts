/**
 * SASL against the server process, with real clients: Kafka's ConfigCommand (over SASL/PLAIN as the
 * admin of the listener's JAAS entry) creates and describes SCRAM users in the metadata log; kcat,
 * kafkajs and Kafka's console producer and consumer produce and consume as those users with
 * SCRAM-SHA-512; a wrong password gets SASL_AUTHENTICATION_FAILED (kcat fails, our client's error names
 * it); no password reaches the server's output. Then a controller and three brokers whose client,
 * inter-broker and controller traffic is all SASL_PLAINTEXT replicate a topic: once with PLAIN between
 * the nodes, once with SCRAM-SHA-512, its broker user bootstrapped with the controller's `--add-scram`. A
 * mirror writes into a SASL destination; confluent-kafka re-authenticates within `connections.max.reauth.ms`.
 */
import { type ClientError, ClusterClient, Connection, MirrorAdmin } from "@clustermirror/client"
import { Errors, Metadata } from "@clustermirror/protocol"
import { ConfluentKafka, JavaTools, Kcat, Wait } from "@clustermirror/testkit"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, type ServerHandle, startCluster, startServer } from "./harness.js"

const ADMIN_PASSWORD = "admin-secret-7d1f"
const ALICE_PASSWORD = "alice-secret-93ac"
const WRONG_PASSWORD = "not-alices-password-5be0"
const BROKER_PASSWORD = "broker-secret-41c2"
const SECRETS = [ADMIN_PASSWORD, ALICE_PASSWORD, WRONG_PASSWORD, BROKER_PASSWORD]

const plainJaas = (extraUsers = "") =>
  `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="${ADMIN_PASSWORD}" user_admin="${ADMIN_PASSWORD}"${extraUsers};`

const scramJaas = (user: string, password: string) =>
  `org.apache.kafka.common.security.scram.ScramLoginModule required username="${user}" password="${password}";`

/** The settings of a SASL_PLAINTEXT client listener with PLAIN (for the admin) and SCRAM. */
const saslListener = {
  listeners: "SASL_PLAINTEXT://127.0.0.1:9092",
  "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
  "sasl.mechanism.inter.broker.protocol": "PLAIN",
  "listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJaas()
}

const kcatScram = (user: string, password: string) => [
  "-X",
  "security.protocol=sasl_plaintext",
  "-X",
  "sasl.mechanisms=SCRAM-SHA-512",
  "-X",
  `sasl.username=${user}`,
  "-X",
  `sasl.password=${password}`
]

const lines = (stdout: string) => stdout.split("\n").filter((l) => l !== "")

describe("SASL on a server (PLAIN admin, SCRAM users from the metadata log)", () => {
  let server: ServerHandle
  let dir: string
  let logFile: string
  let adminConfig: string

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "clustermirror-sasl-"))
    logFile = join(dir, "server.log")
    adminConfig = join(dir, "admin.properties")
    writeFileSync(
      adminConfig,
      `security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=${plainJaas()}\n`
    )
    server = await startServer({ config: saslListener, logFile })
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  const configs = (args: ReadonlyArray<string>) =>
    JavaTools.configs(["--bootstrap-server", server.bootstrap, "--command-config", adminConfig, ...args])

  it("kafka-configs adds SCRAM credentials for users and describes them (mechanism and iterations only)", async () => {
    JavaTools.expectSuccess(
      "kafka-configs --alter",
      await configs([
        "--alter",
        "--add-config",
        `SCRAM-SHA-256=[iterations=8192,password=${ALICE_PASSWORD}]`,
        "--entity-type",
        "users",
        "--entity-name",
        "alice"
      ])
    )
    const added = JavaTools.expectSuccess(
      "kafka-configs --alter",
      await configs([
        "--alter",
        "--add-config",
        `SCRAM-SHA-512=[password=${ALICE_PASSWORD}]`,
        "--entity-type",
        "users",
        "--entity-name",
        "alice"
      ])
    )
    expect(added.stdout).toContain("Completed updating config for user alice.")
    const described = JavaTools.expectSuccess(
      "kafka-configs --describe",
      await configs(["--describe", "--entity-type", "users"])
    )
    expect(described.stdout).toContain(
      "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    // A user of its own to delete from: alice's credentials are used by the tests below. Two mechanisms of
    // one user in one request are refused as Kafka refuses them (one AlterUserScramCredentials per user).
    const twice = await configs([
      "--alter",
      "--add-config",
      "SCRAM-SHA-256=[password=carol-pw-1],SCRAM-SHA-512=[password=carol-pw-2]",
      "--entity-type",
      "users",
      "--entity-name",
      "carol"
    ])
    expect(twice.stderr).toContain(
      "DuplicateResourceException: A user credential cannot be altered twice in the same request"
    )
    for (const mechanism of ["SCRAM-SHA-256", "SCRAM-SHA-512"])
      JavaTools.expectSuccess(
        "kafka-configs --alter",
        await configs([
          "--alter",
          "--add-config",
          `${mechanism}=[password=carol-pw]`,
          "--entity-type",
          "users",
          "--entity-name",
          "carol"
        ])
      )
    JavaTools.expectSuccess(
      "kafka-configs --delete-config",
      await configs(["--alter", "--delete-config", "SCRAM-SHA-256", "--entity-type", "users", "--entity-name", "carol"])
    )
    const carol = JavaTools.expectSuccess(
      "kafka-configs --describe",
      await configs(["--describe", "--entity-type", "users", "--entity-name", "carol"])
    )
    expect(carol.stdout).toContain(
      "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=4096"
    )
    expect(carol.stdout).not.toContain("SCRAM-SHA-256")
    const tooMany = await configs([
      "--alter",
      "--add-config",
      "SCRAM-SHA-512=[iterations=16385,password=x]",
      "--entity-type",
      "users",
      "--entity-name",
      "bob"
    ])
    expect(tooMany.code).not.toBe(0)
    expect(tooMany.stderr + tooMany.stdout).toContain("Too many iterations")
  }, 120_000)

  it("kcat produces and consumes as alice with SCRAM-SHA-512", async () => {
    const values = Array.from({ length: 200 }, (_, i) => `scram-${i}`)
    await server.kcat([...kcatScram("alice", ALICE_PASSWORD), "-P", "-t", "sasl-kcat"], {
      input: `${values.join("\n")}\n`
    })
    const consumed = await server.kcat([
      ...kcatScram("alice", ALICE_PASSWORD),
      "-C",
      "-t",
      "sasl-kcat",
      "-o",
      "beginning",
      "-e",
      "-c",
      String(values.length)
    ])
    expect(lines(consumed.stdout)).toEqual(values)
  }, 60_000)

  it("a wrong password gets SASL_AUTHENTICATION_FAILED: kcat fails, our client's error names it", async () => {
    let stderr = ""
    try {
      await Kcat.kcat(["-b", server.bootstrap, ...kcatScram("alice", WRONG_PASSWORD), "-L", "-m", "10"])
    } catch (e) {
      stderr = (e as { stderr: string }).stderr
    }
    expect(stderr).toContain(
      "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    let error: ClientError.ClientError | undefined
    try {
      await Connection.open({
        host: "127.0.0.1",
        port: server.port,
        security: { sasl: { mechanism: "SCRAM-SHA-512", username: "alice", password: WRONG_PASSWORD } }
      })
    } catch (e) {
      error = e as ClientError.ClientError
    }
    expect(error?._tag).toBe("KafkaError")
    expect(error?.message).toContain("SASL_AUTHENTICATION_FAILED")
    expect(error?.message).not.toContain(WRONG_PASSWORD)
  }, 60_000)

  it("kafkajs produces and consumes with sasl scram-sha-512", async () => {
    const { Kafka, logLevel } = await import("kafkajs")
    const kafka = new Kafka({
      clientId: "sasl-kafkajs",
      brokers: [server.bootstrap],
      logLevel: logLevel.NOTHING,
      sasl: { mechanism: "scram-sha-512", username: "alice", password: ALICE_PASSWORD }
    })
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic: "sasl-kafkajs", messages: [{ value: "one" }, { value: "two" }, { value: "three" }] })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: "sasl-kafkajs-group" })
    await consumer.connect()
    await consumer.subscribe({ topic: "sasl-kafkajs", fromBeginning: true })
    const seen: string[] = []
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.push(message.value!.toString())
          if (seen.length === 3) resolve()
        }
      })
    })
    await consumer.disconnect()
    expect(seen).toEqual(["one", "two", "three"])
  }, 120_000)

  it("Kafka's console producer and consumer work with ScramLoginModule", async () => {
    const clientConfig = join(dir, "alice.properties")
    writeFileSync(
      clientConfig,
      `security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=${scramJaas("alice", ALICE_PASSWORD)}\n`
    )
    JavaTools.expectSuccess(
      "console producer",
      await JavaTools.consoleProducer(
        ["--bootstrap-server", server.bootstrap, "--topic", "sasl-console", "--command-config", clientConfig],
        "a\nb\nc\n"
      )
    )
    const consumed = JavaTools.expectSuccess(
      "console consumer",
      await JavaTools.consoleConsumer([
        "--bootstrap-server",
        server.bootstrap,
        "--topic",
        "sasl-console",
        "--from-beginning",
        "--max-messages",
        "3",
        "--command-config",
        clientConfig
      ])
    )
    expect(JavaTools.lines(consumed.stdout)).toEqual(["a", "b", "c"])
  }, 120_000)

  it("no password appears in the broker's described configs nor in the server's output", async () => {
    const described = JavaTools.expectSuccess(
      "kafka-configs --describe brokers",
      await configs(["--describe", "--entity-type", "brokers", "--entity-name", "0", "--all"])
    )
    expect(described.stdout).toContain("All configs for broker 0 are:")
    for (const secret of SECRETS) expect(described.stdout).not.toContain(secret)
    const output = readFileSync(logFile, "utf8")
    expect(output).toContain("Failed authentication with")
    for (const secret of SECRETS) expect(output).not.toContain(secret)
  })
})

describe("a cluster whose client, inter-broker and controller traffic is SASL_PLAINTEXT", () => {
  let cluster: Cluster

  beforeAll(async () => {
    const controllerListener = {
      "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
      "listener.name.controller.plain.sasl.jaas.config": plainJaas()
    }
    cluster = await startCluster({
      brokers: 3,
      brokerListener: "SASL_PLAINTEXT",
      controllerConfig: {
        ...controllerListener,
        "sasl.enabled.mechanisms": "PLAIN",
        "broker.session.timeout.ms": 3000
      },
      brokerConfig: {
        ...controllerListener,
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJaas(),
        "broker.heartbeat.interval.ms": 300,
        "offsets.topic.replication.factor": 3,
        "default.replication.factor": 3
      }
    })
  }, 240_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it("replicates a topic to all three brokers and serves it to a SCRAM client", async () => {
    const bootstrap = cluster.brokers.map((b) => b.bootstrap).join(",")
    const admin = { mechanism: "PLAIN" as const, username: "admin", password: ADMIN_PASSWORD }
    const conn = await Connection.open({
      host: "127.0.0.1",
      port: cluster.brokers[0]!.port,
      requestTimeoutMs: 60_000,
      security: { sasl: admin }
    })
    try {
      const { AlterUserScramCredentials, Scram } = await import("@clustermirror/protocol")
      const salt = Scram.randomSalt()
      const altered = await conn.call(AlterUserScramCredentials.api, {
        deletions: [],
        upsertions: [
          {
            name: "alice",
            mechanism: Scram.mechanismId("SCRAM-SHA-512"),
            iterations: 4096,
            salt,
            saltedPassword: Scram.saltedPassword("SCRAM-SHA-512", ALICE_PASSWORD, salt, 4096)
          }
        ]
      })
      expect(altered.results).toEqual([{ user: "alice", errorCode: 0, errorMessage: null }])
      const values = Array.from({ length: 100 }, (_, i) => `replicated-${i}`)
      await Kcat.kcat(
        ["-b", bootstrap, ...kcatScram("alice", ALICE_PASSWORD), "-P", "-t", "sasl-cluster", "-X", "acks=all"],
        {
          input: `${values.join("\n")}\n`
        }
      )
      // Every replica in the ISR: the followers fetched from the leader over SASL.
      for (;;) {
        const md = await conn.call(Metadata.api, {
          topics: [{ name: "sasl-cluster", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false
        })
        const p = md.topics[0]?.partitions[0]
        expect(md.topics[0]?.errorCode).toBe(Errors.ErrorCode.NONE)
        if (p !== undefined && p.isrNodes.length === 3) break
        await new Promise((r) => setTimeout(r, 200))
      }
      const consumed = await Kcat.kcat([
        "-b",
        bootstrap,
        ...kcatScram("alice", ALICE_PASSWORD),
        "-C",
        "-t",
        "sasl-cluster",
        "-o",
        "beginning",
        "-e",
        "-c",
        String(values.length)
      ])
      expect(lines(consumed.stdout)).toEqual(values)
    } finally {
      await conn.close()
    }
  }, 180_000)

  it("no password appears in any node's output", () => {
    for (const node of [cluster.cluster.controller, ...cluster.cluster.brokers]) {
      const output = readFileSync(node.logFile, "utf8")
      expect(output, node.logFile).toContain("listening on")
      for (const secret of SECRETS) expect(output, node.logFile).not.toContain(secret)
    }
  })
})

describe("a cluster whose inter-broker and controller traffic authenticates with SCRAM-SHA-512", () => {
  let cluster: Cluster

  beforeAll(async () => {
    const scramListener = (listener: string) => ({
      [`listener.name.${listener}.scram-sha-512.sasl.jaas.config`]: scramJaas("broker", BROKER_PASSWORD)
    })
    const map = { "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT" }
    cluster = await startCluster({
      brokers: 3,
      brokerListener: "SASL_PLAINTEXT",
      controllerArgs: ["--add-scram", `SCRAM-SHA-512=[name=broker,password=${BROKER_PASSWORD}]`],
      controllerConfig: { ...map, "sasl.enabled.mechanisms": "SCRAM-SHA-512", "broker.session.timeout.ms": 3000 },
      brokerConfig: {
        ...map,
        ...scramListener("controller"),
        ...scramListener("sasl_plaintext"),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
        "broker.heartbeat.interval.ms": 300,
        "default.replication.factor": 3
      }
    })
  }, 240_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it("replicates a topic to all three brokers, and no node logs the password", async () => {
    const bootstrap = cluster.brokers.map((b) => b.bootstrap).join(",")
    const values = Array.from({ length: 100 }, (_, i) => `scram-replicated-${i}`)
    await Kcat.kcat(
      ["-b", bootstrap, ...kcatScram("broker", BROKER_PASSWORD), "-P", "-t", "scram-cluster", "-X", "acks=all"],
      { input: `${values.join("\n")}\n` }
    )
    const conn = await Connection.open({
      host: "127.0.0.1",
      port: cluster.brokers[0]!.port,
      requestTimeoutMs: 60_000,
      security: { sasl: { mechanism: "SCRAM-SHA-512", username: "broker", password: BROKER_PASSWORD } }
    })
    try {
      for (;;) {
        const md = await conn.call(Metadata.api, {
          topics: [{ name: "scram-cluster", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false
        })
        if (md.topics[0]?.partitions[0]?.isrNodes.length === 3) break
        await new Promise((r) => setTimeout(r, 200))
      }
    } finally {
      await conn.close()
    }
    const consumed = await Kcat.kcat([
      "-b",
      bootstrap,
      ...kcatScram("broker", BROKER_PASSWORD),
      "-C",
      "-t",
      "scram-cluster",
      "-o",
      "beginning",
      "-e",
      "-c",
      String(values.length)
    ])
    expect(lines(consumed.stdout)).toEqual(values)
    for (const node of [cluster.cluster.controller, ...cluster.cluster.brokers])
      for (const secret of SECRETS) expect(readFileSync(node.logFile, "utf8"), node.logFile).not.toContain(secret)
  }, 180_000)
})

describe("a mirror into a SASL_PLAINTEXT destination", () => {
  let source: ServerHandle
  let destination: ServerHandle
  let dst: ClusterClient.Client

  beforeAll(async () => {
    source = await startServer()
    destination = await startServer({ config: { ...saslListener, "mirror.metadata.refresh.interval.ms": 1000 } })
    dst = new ClusterClient.Client({
      bootstrapServers: [destination.bootstrap],
      requestTimeoutMs: 30_000,
      security: { sasl: { mechanism: "PLAIN", username: "admin", password: ADMIN_PASSWORD } }
    })
  }, 120_000)

  afterAll(async () => {
    await dst?.close()
    await destination?.stop()
    await source?.stop()
  })

  it("mirrors a topic, and the periodic refresh grows its partitions over the destination's SASL listener", async () => {
    const values = Array.from({ length: 20 }, (_, i) => `mirrored-${i}`)
    await source.kcat(["-P", "-t", "mt"], { input: `${values.join("\n")}\n` })
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    await admin.createClusterMirror("m", new Map([["bootstrap.servers", source.bootstrap]]))
    const started = await admin.startMirrorTopics("m", ["mt"])
    expect(started.map((t) => [t.name, t.error, t.source])).toEqual([["mt", null, "present"]])
    const plainAdmin = [
      "-X",
      "security.protocol=sasl_plaintext",
      "-X",
      "sasl.mechanisms=PLAIN",
      "-X",
      "sasl.username=admin",
      "-X",
      `sasl.password=${ADMIN_PASSWORD}`
    ]
    const consumed = await Wait.eventually("the mirrored records on the destination", async () => {
      const r = await destination
        .kcat([...plainAdmin, "-C", "-t", "mt", "-o", "beginning", "-e"])
        .catch(() => ({ stdout: "" }))
      const got = lines(r.stdout)
      return got.length === values.length ? got : undefined
    })
    expect(consumed).toEqual(values)
    JavaTools.expectSuccess(
      "kafka-topics --alter",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        source.bootstrap,
        "--alter",
        "--topic",
        "mt",
        "--partitions",
        "2"
      ])
    )
    await Wait.eventually("2 partitions of mt on the destination", async () => {
      const md = await dst.metadata(["mt"])
      return md.topics.get("mt")?.partitions.size === 2 ? true : undefined
    })
  }, 180_000)
})

const reauthScript = `
import json, sys, time
from confluent_kafka import Producer

bootstrap, password, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
delivered, errors = [0], []
def on_delivery(err, msg):
    if err is None:
        delivered[0] += 1
    else:
        errors.append(str(err))
producer = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                     "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": password,
                     "acks": "all"})
sent = 0
deadline = time.time() + seconds
while time.time() < deadline:
    producer.produce("reauth", value=f"r-{sent}".encode(), on_delivery=on_delivery)
    sent += 1
    producer.poll(0.25)
producer.flush(60)
print(json.dumps({"sent": sent, "delivered": delivered[0], "errors": errors}))
`

describe("connections.max.reauth.ms with confluent-kafka 2.16 (librdkafka re-authenticates)", () => {
  let server: ServerHandle
  let dir: string
  let logFile: string

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "clustermirror-reauth-"))
    logFile = join(dir, "server.log")
    server = await startServer({ config: { ...saslListener, "connections.max.reauth.ms": 2000 }, logFile })
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("a producer running for three session lifetimes keeps its connections: it re-authenticates in time", async () => {
    const { result } = await ConfluentKafka.run<{ sent: number; delivered: number; errors: string[] }>(reauthScript, [
      server.bootstrap,
      ADMIN_PASSWORD,
      "6"
    ])
    expect(result.errors).toEqual([])
    expect(result.delivered).toBe(result.sent)
    const output = readFileSync(logFile, "utf8")
    // Sessions of 2 s over 6 s: the producer re-authenticated (a log line each time), no session expired.
    expect(output.match(/Re-authenticated User:admin on /g)?.length ?? 0).toBeGreaterThanOrEqual(2)
    expect(output).not.toContain("its SASL session expired")
    expect(output).not.toContain("Failed authentication")
    expect(output).not.toContain(ADMIN_PASSWORD)
  }, 120_000)
})
