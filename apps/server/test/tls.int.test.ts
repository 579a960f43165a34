/**
 * TLS end to end with real peers:
 * - a controller and 3 brokers as processes where every listener is SSL with `ssl.client.auth=required`
 *   (client, inter-broker and controller traffic all mutual TLS; brokers hold PKCS12 key- and
 *   truststores, the controller PEM ones): kcat produces and consumes over mTLS across replicated partitions, a client
 *   without a certificate or with one from another CA is refused, kafkajs works over mTLS, and a
 *   plaintext client on the TLS port does not harm the broker;
 * - a single node with a PLAINTEXT and an SSL listener answers Metadata on each with that listener's
 *   endpoints, and kcat produces and consumes over SSL without a client certificate.
 */
import { Certificates, JavaTools, Kcat, Ports, ServerProcess } from "@clustermirror/testkit"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Kafka, logLevel } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, startCluster } from "./harness.js"

let certs: Certificates.Certificates
beforeAll(() => {
  certs = Certificates.make(fs.mkdtempSync(path.join(os.tmpdir(), "clustermirror-tls-")))
})
afterAll(() => {
  if (certs !== undefined) fs.rmSync(certs.dir, { recursive: true, force: true })
})

interface KcatMetadata {
  readonly brokers: ReadonlyArray<{ readonly id: number; readonly name: string }>
  readonly topics: ReadonlyArray<{
    readonly topic: string
    readonly partitions: ReadonlyArray<{ readonly partition: number; readonly leader: number }>
  }>
}

const lines = (stdout: string): string[] => stdout.split("\n").filter((l) => l !== "")

/** librdkafka's TLS settings: the CA, and a client certificate when given. */
const kcatTls = (client?: Certificates.Identity): string[] => [
  "-X",
  "security.protocol=ssl",
  "-X",
  `ssl.ca.location=${certs.caFile}`,
  ...(client === undefined
    ? []
    : ["-X", `ssl.certificate.location=${client.certFile}`, "-X", `ssl.key.location=${client.keyFile}`])
]

describe("a 3-broker cluster with mutual TLS on every listener", () => {
  let cluster: Cluster
  let bootstrap: string
  const kcat = (args: ReadonlyArray<string>, input?: string) =>
    Kcat.kcat(["-b", bootstrap, ...args], input === undefined ? { timeoutMs: 60_000 } : { input, timeoutMs: 60_000 })

  beforeAll(async () => {
    const ssl = {
      "listener.security.protocol.map": "SSL:SSL,CONTROLLER:SSL",
      "controller.listener.names": "CONTROLLER",
      "ssl.truststore.type": "PEM",
      "ssl.truststore.location": certs.caFile,
      "ssl.client.auth": "required"
    }
    cluster = await startCluster({
      brokers: 3,
      brokerListener: "SSL",
      controllerConfig: {
        ...ssl,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": certs.server.pemKeystore
      },
      brokerConfig: {
        ...ssl,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": certs.pkcs12Truststore,
        "ssl.truststore.password": certs.truststorePassword,
        "inter.broker.listener.name": "SSL",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": certs.server.pkcs12Keystore,
        "ssl.keystore.password": certs.server.password,
        "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3,
        "num.partitions": 3
      }
    })
    bootstrap = cluster.brokers.map((b) => `127.0.0.1:${b.port}`).join(",")
  }, 180_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it("kcat lists every broker at its SSL endpoint and produces and consumes over mTLS, replicated", async () => {
    const md = JSON.parse((await kcat([...kcatTls(certs.client), "-L", "-J"])).stdout) as KcatMetadata
    expect(md.brokers.map((b) => b.name).sort()).toEqual(cluster.brokers.map((b) => `127.0.0.1:${b.port}`).sort())
    const values = Array.from({ length: 300 }, (_, i) => `tls-record-${i}`)
    await kcat([...kcatTls(certs.client), "-P", "-t", "tls-topic", "-X", "acks=all"], `${values.join("\n")}\n`)
    const consumed = await kcat([...kcatTls(certs.client), "-C", "-t", "tls-topic", "-o", "beginning", "-e", "-q"])
    expect(lines(consumed.stdout).sort()).toEqual([...values].sort())
    // acks=all succeeded on 3 partitions with 3 replicas each: the followers fetched over the SSL inter-broker listener.
    const topic = JSON.parse(
      (await kcat([...kcatTls(certs.client), "-L", "-J", "-t", "tls-topic"])).stdout
    ) as KcatMetadata
    expect(topic.topics[0]?.partitions.length).toBe(3)
  })

  it("refuses a client without a certificate, and one whose certificate another CA signed", async () => {
    await expect(kcat([...kcatTls(), "-L", "-m", "5"])).rejects.toThrow()
    await expect(kcat([...kcatTls(certs.untrustedClient), "-L", "-m", "5"])).rejects.toThrow()
    const log = cluster.brokers.map((b) => fs.readFileSync(cluster.cluster.node(b.nodeId).logFile, "utf8")).join("")
    expect(log).toMatch(/TLS handshake failed: .*peer did not return a certificate/)
  })

  it("kafkajs produces and consumes over mTLS", async () => {
    const kafka = new Kafka({
      clientId: "tls-kafkajs",
      brokers: [bootstrap.split(",")[0]!],
      logLevel: logLevel.NOTHING,
      ssl: {
        ca: [fs.readFileSync(certs.caFile, "utf8")],
        cert: fs.readFileSync(certs.client.certFile, "utf8"),
        key: fs.readFileSync(certs.client.keyFile, "utf8")
      }
    })
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({
      topic: "tls-kafkajs",
      acks: -1,
      messages: Array.from({ length: 50 }, (_, i) => ({ value: `kjs-${i}` }))
    })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: "tls-kafkajs-group" })
    await consumer.connect()
    await consumer.subscribe({ topic: "tls-kafkajs", fromBeginning: true })
    const got: string[] = []
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            got.push(message.value?.toString() ?? "")
            if (got.length === 50) resolve()
          }
        })
        .catch(reject)
    })
    await consumer.disconnect()
    expect(got.sort()).toEqual(Array.from({ length: 50 }, (_, i) => `kjs-${i}`).sort())
  })

  it("Kafka's console producer and consumer work over mTLS with PEM trust- and keystores", async () => {
    const tls = [
      "security.protocol=SSL",
      "ssl.truststore.type=PEM",
      `ssl.truststore.location=${certs.caFile}`,
      "ssl.keystore.type=PEM",
      `ssl.keystore.location=${certs.client.pemKeystore}`
    ]
    const values = Array.from({ length: 100 }, (_, i) => `java-${i}`)
    JavaTools.expectSuccess(
      "kafka-console-producer",
      await JavaTools.consoleProducer(
        [
          "--bootstrap-server",
          bootstrap,
          "--topic",
          "tls-java",
          ...["acks=all", ...tls].flatMap((p) => ["--producer-property", p])
        ],
        `${values.join("\n")}\n`,
        { timeoutMs: 180_000 }
      )
    )
    const consumed = JavaTools.expectSuccess(
      "kafka-console-consumer",
      await JavaTools.consoleConsumer(
        [
          "--bootstrap-server",
          bootstrap,
          "--topic",
          "tls-java",
          "--from-beginning",
          "--max-messages",
          String(values.length),
          ...tls.flatMap((p) => ["--command-property", p])
        ],
        { timeoutMs: 180_000 }
      )
    )
    expect([...JavaTools.lines(consumed.stdout)].sort()).toEqual([...values].sort())
  })

  it("a plaintext client on the TLS port fails and the broker keeps serving", async () => {
    await expect(
      Kcat.kcat(["-b", `127.0.0.1:${cluster.brokers[0]!.port}`, "-L", "-m", "5"], { timeoutMs: 30_000 })
    ).rejects.toThrow()
    expect(cluster.cluster.isAlive(1)).toBe(true)
    const md = JSON.parse(
      (await Kcat.kcat(["-b", `127.0.0.1:${cluster.brokers[0]!.port}`, ...kcatTls(certs.client), "-L", "-J"])).stdout
    ) as KcatMetadata
    expect(md.brokers.length).toBe(3)
    expect(fs.readFileSync(cluster.cluster.node(1).logFile, "utf8")).toContain("TLS handshake failed")
  })
})

describe("a node with a PLAINTEXT and an SSL listener", () => {
  let server: ServerProcess.ServerHandle
  let plainPort: number
  let sslPort: number

  beforeAll(async () => {
    ;[plainPort, sslPort] = (await Ports.freePorts(2)) as [number, number]
    server = await ServerProcess.start({
      config: {
        ...ServerProcess.TEST_DEFAULTS,
        listeners: `PLAINTEXT://127.0.0.1:${plainPort},SSL://127.0.0.1:${sslPort}`,
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": certs.server.pemKeystore
      },
      port: false,
      tempPrefix: "clustermirror-tls-listeners-"
    })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
  })

  it("answers Metadata on each listener with that listener's endpoint", async () => {
    const plain = JSON.parse((await Kcat.kcat(["-b", `127.0.0.1:${plainPort}`, "-L", "-J"])).stdout) as KcatMetadata
    const ssl = JSON.parse(
      (await Kcat.kcat(["-b", `127.0.0.1:${sslPort}`, ...kcatTls(), "-L", "-J"])).stdout
    ) as KcatMetadata
    expect(plain.brokers.map((b) => b.name)).toEqual([`127.0.0.1:${plainPort}`])
    expect(ssl.brokers.map((b) => b.name)).toEqual([`127.0.0.1:${sslPort}`])
  })

  it("kcat produces and consumes over SSL without a client certificate", async () => {
    const b = ["-b", `127.0.0.1:${sslPort}`, ...kcatTls()]
    const values = Array.from({ length: 100 }, (_, i) => `ssl-${i}`)
    await Kcat.kcat([...b, "-P", "-t", "ssl-only"], { input: `${values.join("\n")}\n` })
    const consumed = await Kcat.kcat([...b, "-C", "-t", "ssl-only", "-o", "beginning", "-e", "-q"])
    expect(lines(consumed.stdout)).toEqual(values)
    // The same records over the PLAINTEXT listener.
    const plain = await Kcat.kcat([
      "-b",
      `127.0.0.1:${plainPort}`,
      "-C",
      "-t",
      "ssl-only",
      "-o",
      "beginning",
      "-e",
      "-q"
    ])
    expect(lines(plain.stdout)).toEqual(values)
  })
})
