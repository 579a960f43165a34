import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as ApacheKafka from "../src/ApacheKafka.js"
import * as Certificates from "../src/Certificates.js"
import * as IsolatedConsumer from "../src/IsolatedConsumer.js"
import * as JavaTools from "../src/JavaTools.js"
import * as KafkaPeer from "../src/KafkaPeer.js"
import * as Kcat from "../src/Kcat.js"
import { PeerStartError } from "../src/TestkitError.js"
import * as TransactionalProducer from "../src/TransactionalProducer.js"

const COUNT = 1_000
const messages = Array.from({ length: COUNT }, (_, i) => `message-${String(i).padStart(4, "0")}`)
/** Functional tests start quickly and restart quickly; neither matters to what they check. */
const quick = {
  jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
  properties: ApacheKafka.QUICK_SESSION_PROPERTIES
} as const

const sorted = (xs: ReadonlyArray<string>): ReadonlyArray<string> => [...xs].sort()

describe("Apache Kafka single node", () => {
  let kafka: ApacheKafka.KafkaNode | undefined
  const node = (): ApacheKafka.KafkaNode => {
    if (kafka === undefined) throw new Error("kafka did not start")
    return kafka
  }

  beforeAll(async () => {
    // The first run resolves the jars from Maven Central; later runs find them in the cache.
    await KafkaPeer.libs()
    kafka = await ApacheKafka.startKafka(quick)
  }, 300_000)

  afterAll(async () => {
    await kafka?.stop()
  })

  it("Kafka's tools create a topic, write 1,000 records and read them back; kcat reads the same records", async () => {
    const b = node().bootstrap
    const topic = "testkit-roundtrip"
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "3",
        "--replication-factor",
        "1"
      ])
    )
    const described = JavaTools.expectSuccess(
      "kafka-topics --describe",
      await JavaTools.kafkaTopics(["--bootstrap-server", b, "--describe", "--topic", topic])
    )
    expect(described.stdout).toMatch(/PartitionCount:\s*3/)
    expect(described.stdout).toMatch(/Leader:\s*1\s+Replicas:\s*1\s+Isr:\s*1/)

    JavaTools.expectSuccess(
      "console-producer",
      await JavaTools.consoleProducer(
        ["--bootstrap-server", b, "--topic", topic, "--producer-property", "acks=all"],
        messages.join("\n") + "\n"
      )
    )

    const consumed = JavaTools.expectSuccess(
      "console-consumer",
      await JavaTools.consoleConsumer([
        "--bootstrap-server",
        b,
        "--topic",
        topic,
        "--group",
        "testkit-group",
        "--from-beginning",
        "--max-messages",
        String(COUNT),
        "--timeout-ms",
        "30000"
      ])
    )
    expect(sorted(JavaTools.lines(consumed.stdout))).toEqual(messages)

    const viaKcat = await Kcat.kcat(["-b", b, "-C", "-t", topic, "-e", "-q", "-f", "%s\\n"])
    expect(sorted(JavaTools.lines(viaKcat.stdout))).toEqual(messages)

    const groups = JavaTools.expectSuccess(
      "consumer-groups --describe",
      await JavaTools.consumerGroups(["--bootstrap-server", b, "--describe", "--group", "testkit-group"])
    )
    // Every partition's committed offset is at its end: the LAG column reads 0 on each of the three rows.
    const table = JavaTools.lines(groups.stdout).map((l) => l.trim().split(/\s+/))
    const lagColumn = table.find((row) => row.includes("LAG"))?.indexOf("LAG") ?? -1
    const rows = table.filter((row) => row[1] === topic)
    expect(rows).toHaveLength(3)
    expect(rows.map((row) => row[lagColumn])).toEqual(["0", "0", "0"])

    JavaTools.expectSuccess(
      "kafka-configs --alter",
      await JavaTools.configs([
        "--bootstrap-server",
        b,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--add-config",
        "retention.ms=86400000"
      ])
    )
    const configs = JavaTools.expectSuccess(
      "kafka-configs --describe",
      await JavaTools.configs([
        "--bootstrap-server",
        b,
        "--describe",
        "--entity-type",
        "topics",
        "--entity-name",
        topic
      ])
    )
    expect(configs.stdout).toContain("retention.ms=86400000")
  })

  it("the performance tools run against the node", async () => {
    const b = node().bootstrap
    const produced = JavaTools.expectSuccess(
      "producer-perf",
      await JavaTools.producerPerf([
        "--topic",
        "testkit-perf",
        "--num-records",
        "2000",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        `bootstrap.servers=${b}`,
        "acks=all"
      ])
    )
    expect(produced.stdout).toMatch(/2000 records sent/)
    const consumed = JavaTools.expectSuccess(
      "consumer-perf",
      await JavaTools.consumerPerf(["--bootstrap-server", b, "--topic", "testkit-perf", "--messages", "2000"])
    )
    // One CSV data row after the header: start, end, MB, MB/s, nMsg, ...
    const row = JavaTools.lines(consumed.stdout).at(-1)?.split(",")
    expect(Number(row?.[4])).toBe(2000)
  })

  it("a tool's failure is a result with its exit code and stderr", async () => {
    const result = await JavaTools.kafkaTopics([
      "--bootstrap-server",
      node().bootstrap,
      "--describe",
      "--topic",
      "no-such-topic"
    ])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/no-such-topic/)
  })

  it("the transactional producer commits, aborts and leaves a transaction open; read_committed stops at it", async () => {
    const b = node().bootstrap
    const topic = "testkit-txn"
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics(["--bootstrap-server", b, "--create", "--topic", topic, "--partitions", "2"])
    )
    const plan: ReadonlyArray<TransactionalProducer.Step> = [
      { kind: "commit", records: 6 },
      { kind: "abort", records: 4 },
      { kind: "open", records: 2 }
    ]
    const producer = await TransactionalProducer.start({
      bootstrap: b,
      topic,
      partitions: 2,
      transactionalId: "testkit-txn",
      compression: "zstd",
      prefix: "t",
      plan
    })
    try {
      const read = async (isolationLevel: IsolatedConsumer.IsolationLevel) =>
        IsolatedConsumer.consume({ bootstrap: b, topic, partitions: 2, isolationLevel })
      const values = (c: IsolatedConsumer.Consumed) => sorted(c.records.map((r) => r.value))
      const step = (i: number) => TransactionalProducer.values("t", 2, plan, i).flat()
      const [committed, uncommitted] = await Promise.all([read("read_committed"), read("read_uncommitted")])
      expect(values(committed)).toEqual(sorted(step(0)))
      expect(values(uncommitted)).toEqual(sorted([...step(0), ...step(1), ...step(2)]))
      // Per partition: 3 committed + COMMIT, 2 aborted + ABORT, then the open transaction's first record.
      expect(committed.endOffsets).toEqual([7, 7])
      expect(uncommitted.endOffsets).toEqual([8, 8])
      await producer.commit()
      expect(producer.isAlive()).toBe(false)
      expect(values(await read("read_committed"))).toEqual(sorted([...step(0), ...step(2)]))
    } finally {
      await producer.stop()
    }
  })

  it("kill and restart keep the data; stop() then ends the JVM and removes its data dir", async () => {
    const k = node()
    const topic = "testkit-restart"
    await Kcat.kcat(["-b", k.bootstrap, "-P", "-t", topic], { input: "a\nb\nc\n" })
    const pidBefore = k.pid
    const exit = await k.kill("SIGKILL")
    expect(exit.signal).toBe("SIGKILL")
    expect(k.isAlive()).toBe(false)
    await k.restart()
    expect(k.pid).not.toBe(pidBefore)
    const read = await Kcat.kcat(["-b", k.bootstrap, "-C", "-t", topic, "-e", "-q", "-f", "%s\\n"])
    expect(JavaTools.lines(read.stdout)).toEqual(["a", "b", "c"])
    expect(existsSync(k.dataDir)).toBe(true)
    await k.stop()
    expect(k.isAlive()).toBe(false)
    expect(existsSync(k.dataDir)).toBe(false)
  })
})

describe("Apache Kafka with an extra SSL listener", () => {
  let kafka: ApacheKafka.KafkaNode | undefined
  let certs: Certificates.Certificates | undefined
  const dir = mkdtempSync(join(tmpdir(), "clustermirror-testkit-tls-"))

  beforeAll(async () => {
    await KafkaPeer.libs()
    const c = Certificates.make(dir)
    certs = c
    kafka = await ApacheKafka.startKafka({
      ...quick,
      extraListeners: [{ name: "SSL", protocol: "SSL" }],
      properties: {
        ...quick.properties,
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.key": readFileSync(c.server.keyFile, "utf8"),
        "listener.name.ssl.ssl.keystore.certificate.chain":
          readFileSync(c.server.certFile, "utf8") + readFileSync(c.caFile, "utf8")
      }
    })
  }, 300_000)

  afterAll(async () => {
    await kafka?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it("records written over PLAINTEXT are read over SSL by kcat trusting the CA, and refused to kcat trusting an unrelated certificate", async () => {
    const k = kafka!
    const ssl = `127.0.0.1:${k.listenerPorts["SSL"]}`
    expect(k.listenerPorts["SSL"]).not.toBe(k.port)
    const topic = "testkit-tls"
    await Kcat.kcat(["-b", k.bootstrap, "-P", "-t", topic], { input: "x\ny\nz\n" })
    const overTls = await Kcat.kcat([
      "-b",
      ssl,
      "-X",
      "security.protocol=ssl",
      "-X",
      `ssl.ca.location=${certs!.caFile}`,
      "-C",
      "-t",
      topic,
      "-e",
      "-q",
      "-f",
      "%s\\n"
    ])
    expect(JavaTools.lines(overTls.stdout)).toEqual(["x", "y", "z"])
    const metadata = await Kcat.kcat([
      "-b",
      ssl,
      "-X",
      "security.protocol=ssl",
      "-X",
      `ssl.ca.location=${certs!.caFile}`,
      "-L",
      "-J"
    ])
    // Kafka answers with the broker's endpoint on the listener the request came in on.
    expect(JSON.parse(metadata.stdout).brokers).toEqual([{ id: 1, name: ssl }])
    const distrusted = Kcat.kcat(
      ["-b", ssl, "-X", "security.protocol=ssl", "-X", `ssl.ca.location=${certs!.untrustedClient.certFile}`, "-L"],
      { timeoutMs: 30_000 }
    )
    await expect(distrusted).rejects.toThrow(/certificate verify failed|SSL handshake failed/i)
  })
})

describe("Apache Kafka lifecycle", () => {
  it("a node that cannot start fails with its output and leaves no process or temp dir behind", async () => {
    const scratch = mkdtempSync(join(tmpdir(), "testkit-failstart-"))
    const before = process.env["TMPDIR"]
    process.env["TMPDIR"] = scratch
    try {
      const error = await ApacheKafka.startKafka({ properties: { "num.network.threads": "not-a-number" } }).then(
        () => undefined,
        (e: unknown) => e
      )
      expect(error).toBeInstanceOf(PeerStartError)
      expect(String((error as PeerStartError).output)).toMatch(/num\.network\.threads/)
      expect(readdirSync(scratch)).toEqual([])

      // Formatted and launched, but not answering in time: the JVM is killed and its dir removed.
      const slow = await ApacheKafka.startKafka({ ...quick, readyTimeoutMs: 1 }).then(
        () => undefined,
        (e: unknown) => e
      )
      expect(slow).toBeInstanceOf(PeerStartError)
      expect(String(slow)).toMatch(/not ready within 1 ms/)
      expect(readdirSync(scratch)).toEqual([])
    } finally {
      if (before === undefined) delete process.env["TMPDIR"]
      else process.env["TMPDIR"] = before
      rmSync(scratch, { recursive: true, force: true })
    }
  })
})

describe("Apache Kafka 3-broker cluster", () => {
  let cluster: ApacheKafka.KafkaCluster | undefined
  beforeAll(async () => {
    cluster = await ApacheKafka.startKafkaCluster({ ...quick, brokers: 3 })
  }, 300_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it("serves an RF=3 topic with every broker in the ISR, and acks=all writes are read back", async () => {
    if (cluster === undefined) throw new Error("cluster did not start")
    const b = cluster.bootstrap
    const topic = "testkit-rf3"
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        b,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "2",
        "--replication-factor",
        "3"
      ])
    )
    const described = JavaTools.expectSuccess(
      "kafka-topics --describe",
      await JavaTools.kafkaTopics(["--bootstrap-server", b, "--describe", "--topic", topic])
    )
    const rows = described.stdout.split("\n").filter((l) => /Partition:\s*\d/.test(l))
    expect(rows).toHaveLength(2)
    for (const row of rows) {
      const isr = /Isr:\s*([\d,]+)/.exec(row)?.[1]?.split(",").sort()
      expect(isr).toEqual(["1", "2", "3"])
    }
    JavaTools.expectSuccess(
      "console-producer",
      await JavaTools.consoleProducer(
        ["--bootstrap-server", b, "--topic", topic, "--producer-property", "acks=all"],
        messages.join("\n") + "\n"
      )
    )
    const read = await Kcat.kcat(["-b", b, "-C", "-t", topic, "-e", "-q", "-f", "%s\\n"])
    expect(sorted(JavaTools.lines(read.stdout))).toEqual(messages)
  })
})
