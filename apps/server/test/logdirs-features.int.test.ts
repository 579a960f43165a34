/**
 * Log dirs and features with Kafka's own tools, on our 3-broker cluster (`--embedded 3`) beside Apache
 * Kafka 4.4, each running the same commands:
 *
 * 1. `kafka-log-dirs --describe --topic-list`: every replica of a topic with data is listed on its broker,
 *    in that broker's one log dir, with a size > 0 equal to its segment files on disk, offset lag 0, no
 *    future replica. DescribeLogDirs v4 answers the volume's total and usable bytes.
 * 2. AlterReplicaLogDirs to a directory the broker does not have: LOG_DIR_NOT_FOUND on both.
 * 3. `kafka-features describe` lists metadata.version and mirror.version with their supported ranges and
 *    finalized levels; the controller listener's ApiVersions carries the same features.
 * 4. `kafka-features upgrade/downgrade` of metadata.version: the refusals Kafka prints, printed by ours
 *    (the levels and node ids aside); `--dry-run` changes nothing; mirror.version goes down and back up.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { ClusterClient } from "@clustermirror/client"
import { AlterReplicaLogDirs, ApiVersions, DescribeLogDirs, Errors } from "@clustermirror/protocol"
import { ApacheKafka, JavaTools, KafkaPeer, Kcat, Ports, ServerProcess } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const TOPIC = "sized"
const PARTITIONS = 3

interface LogDirsJson {
  readonly brokers: ReadonlyArray<{
    readonly broker: number
    readonly logDirs: ReadonlyArray<{
      readonly logDir: string
      readonly error: string | null
      readonly partitions: ReadonlyArray<{
        readonly partition: string
        readonly size: number
        readonly offsetLag: number
        readonly isFuture: boolean
      }>
    }>
  }>
  readonly version: number
}

/** Bytes of a partition's segment files (`*.log`), which is what Kafka reports as its size. */
const segmentBytes = (dir: string): number =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".log"))
    .reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0)

/** The tool's output without log4j noise. */
const printed = (r: JavaTools.ToolResult): string =>
  `${r.stdout}\n${r.stderr}`
    .split("\n")
    .filter((l) =>
      /^(Feature:|Could not|Can not|.* was (upgraded|downgraded) to|.* can be (upgraded|downgraded) to)/.test(l)
    )
    .join("\n")

/** A refusal with what differs between two clusters (their current and latest levels, node ids) masked. */
const masked = (text: string): string =>
  text
    .replace(/downgrade from \d+ to/g, "downgrade from <current> to")
    .replace(/only supports versions (\d+)-\d+/g, "only supports versions $1-<latest>")
    .replace(/Local controller \d+/g, "Local controller <id>")

const featureLines = (r: JavaTools.ToolResult) =>
  new Map(
    printed(r)
      .split("\n")
      .filter((l) => l.startsWith("Feature:"))
      .map((l) => {
        const m =
          /^Feature: (\S+)\s+SupportedMinVersion: (\S+)\s+SupportedMaxVersion: (\S+)\s+FinalizedVersionLevel: (\S+)\s+Epoch: (\S+)/.exec(
            l
          )
        if (m === null) throw new Error(`unexpected kafka-features line: ${l}`)
        return [m[1]!, { min: m[2]!, max: m[3]!, finalized: m[4]!, epoch: m[5]! }] as const
      })
  )

describe("kafka-log-dirs and kafka-features against our cluster and Apache Kafka 4.4", () => {
  let kafka: ApacheKafka.KafkaNode
  let ours: ServerProcess.ServerHandle
  let oursBootstrap: string
  let client: ClusterClient.Client
  let kafkaClient: ClusterClient.Client

  beforeAll(async () => {
    await KafkaPeer.libs()
    const port = await Ports.freePort()
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "num.partitions": PARTITIONS }
      }).then((k) => (kafka = k)),
      ServerProcess.start({
        tempPrefix: "cm-logdirs-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          ...ServerProcess.TEST_DEFAULTS,
          "num.partitions": PARTITIONS,
          "default.replication.factor": 3,
          "broker.heartbeat.interval.ms": 300
        }
      }).then((s) => (ours = s))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    oursBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
    client = new ClusterClient.Client({ bootstrapServers: oursBootstrap.split(","), requestTimeoutMs: 30_000 })
    kafkaClient = new ClusterClient.Client({ bootstrapServers: [kafka.bootstrap], requestTimeoutMs: 30_000 })
    // Records in every partition, acknowledged by every in-sync replica (librdkafka's default acks=all).
    for (const bootstrap of [oursBootstrap, kafka.bootstrap])
      for (let p = 0; p < PARTITIONS; p++)
        await Kcat.forBootstrap(bootstrap)(["-P", "-t", TOPIC, "-p", String(p)], {
          input: Array.from({ length: 50 * (p + 1) }, (_, i) => `record-${p}-${i}`).join("\n")
        })
  }, 180_000)

  afterAll(async () => {
    await client?.close()
    await kafkaClient?.close()
    await Promise.allSettled([ours?.stop(), kafka?.stop()])
  })

  const logDirs = async (bootstrap: string): Promise<LogDirsJson> => {
    const r = JavaTools.expectSuccess(
      "kafka-log-dirs",
      await JavaTools.logDirs(["--bootstrap-server", bootstrap, "--describe", "--topic-list", TOPIC])
    )
    const json = r.stdout.split("\n").find((l) => l.startsWith("{"))
    if (json === undefined) throw new Error(`no JSON in kafka-log-dirs output:\n${r.stdout}`)
    return JSON.parse(json)
  }

  it("kafka-log-dirs lists every replica in its broker's log dir, sized as its segment files on disk", async () => {
    const [oursDirs, kafkaDirs] = await Promise.all([logDirs(oursBootstrap), logDirs(kafka.bootstrap)])
    for (const [json, brokers, dirOf] of [
      [oursDirs, [1, 2, 3], (id: number) => path.join(ours.dataDir!, `broker-${id}`)],
      [kafkaDirs, [1], () => kafka.dataDir]
    ] as const) {
      expect(json.version).toBe(1)
      expect(json.brokers.map((b) => b.broker).sort()).toEqual(brokers)
      for (const b of json.brokers) {
        expect(b.logDirs).toHaveLength(1)
        const [dir] = b.logDirs
        expect(dir!.error).toBeNull()
        expect(fs.realpathSync(dir!.logDir)).toBe(fs.realpathSync(dirOf(b.broker)))
        // Every partition (RF 3 on ours: each broker holds all three), the same shape on both.
        expect(dir!.partitions.map((p) => p.partition).sort()).toEqual([0, 1, 2].map((p) => `${TOPIC}-${p}`))
        for (const p of dir!.partitions) {
          expect(Object.keys(p).sort()).toEqual(["isFuture", "offsetLag", "partition", "size"])
          expect(p.size).toBeGreaterThan(0)
          expect(p.size).toBe(segmentBytes(path.join(dir!.logDir, p.partition)))
          expect([p.offsetLag, p.isFuture]).toEqual([0, false])
        }
      }
    }
    // The same records take the same bytes on every replica of ours.
    const sizes = (b: LogDirsJson["brokers"][number]) =>
      Object.fromEntries(b.logDirs[0]!.partitions.map((p) => [p.partition, p.size]))
    expect(sizes(oursDirs.brokers[1]!)).toEqual(sizes(oursDirs.brokers[0]!))
    expect(sizes(oursDirs.brokers[2]!)).toEqual(sizes(oursDirs.brokers[0]!))
  })

  it("DescribeLogDirs v4 answers the volume's total and usable bytes; a move to an unknown dir is LOG_DIR_NOT_FOUND on both", async () => {
    const move = { dirs: [{ path: "/nonexistent/dir", topics: [{ name: TOPIC, partitions: [0] }] }] }
    for (const [c, nodeId] of [
      [client, 2],
      [kafkaClient, 1]
    ] as const) {
      const described = await c.sendToNode(nodeId, DescribeLogDirs.api, { topics: null }, { version: 4 })
      expect(described.errorCode).toBe(0)
      const [dir] = described.results
      const fsStats = fs.statfsSync(dir!.logDir)
      expect(dir!.totalBytes).toBe(BigInt(fsStats.blocks) * BigInt(fsStats.bsize))
      expect(dir!.usableBytes).toBeGreaterThan(0n)
      expect(dir!.usableBytes).toBeLessThanOrEqual(dir!.totalBytes)
      const moved = await c.sendToNode(nodeId, AlterReplicaLogDirs.api, move)
      expect(moved.results).toEqual([
        { topicName: TOPIC, partitions: [{ partitionIndex: 0, errorCode: Errors.ErrorCode.LOG_DIR_NOT_FOUND }] }
      ])
    }
  })

  const features = (bootstrap: string, args: ReadonlyArray<string>) =>
    JavaTools.features(["--bootstrap-server", bootstrap, ...args])

  /** ApiVersions on our controller listener: the committed finalized levels (level 0 is not listed). */
  const controllerVersions = () =>
    client.sendToAddress({ host: "127.0.0.1", port: ours.ports()[0]! }, ApiVersions.api, {
      clientSoftwareName: "test",
      clientSoftwareVersion: "1"
    })
  const finalized = async () =>
    new Map((await controllerVersions()).finalizedFeatures.map((f) => [f.name, f.maxVersionLevel]))

  it("kafka-features describe lists metadata.version and mirror.version; the controller listener answers them too", async () => {
    const [oursOut, kafkaOut] = await Promise.all([
      features(oursBootstrap, ["describe"]),
      features(kafka.bootstrap, ["describe"])
    ])
    const oursFeatures = featureLines(oursOut)
    expect([...oursFeatures.keys()]).toEqual(["metadata.version", "mirror.version"])
    expect(oursFeatures.get("metadata.version")).toMatchObject({ min: "3.3-IV3" })
    const mv = oursFeatures.get("metadata.version")!
    expect(mv.finalized).toBe(mv.max)
    expect(oursFeatures.get("mirror.version")).toMatchObject({ min: "0", max: "1", finalized: "1" })
    expect(Number(mv.epoch)).toBeGreaterThan(0)
    // Kafka names metadata.version levels the same way and has no mirror.version.
    const kafkaFeatures = featureLines(kafkaOut)
    expect(kafkaFeatures.get("metadata.version")).toMatchObject({ min: "3.3-IV3" })
    expect(kafkaFeatures.has("mirror.version")).toBe(false)

    const versions = await controllerVersions()
    expect(versions.supportedFeatures.map((f) => [f.name, f.minVersion, f.maxVersion])).toEqual([
      [
        "metadata.version",
        7,
        Number(versions.finalizedFeatures.find((f) => f.name === "metadata.version")!.maxVersionLevel)
      ],
      ["mirror.version", 0, 1]
    ])
    expect(versions.finalizedFeatures.map((f) => [f.name, f.maxVersionLevel]).sort()).toEqual([
      ["metadata.version", versions.supportedFeatures[0]!.maxVersion],
      ["mirror.version", 1]
    ])
    expect(versions.finalizedFeaturesEpoch).toBeGreaterThan(0n)
  })

  it("refuses metadata.version changes as Kafka does, and --dry-run changes nothing", async () => {
    const cases: ReadonlyArray<ReadonlyArray<string>> = [
      ["upgrade", "--metadata", "3.9"],
      ["downgrade", "--metadata", "3.9"],
      ["downgrade", "--metadata", "3.9", "--unsafe"],
      ["upgrade", "--feature", "metadata.version=99"],
      ["upgrade", "--feature", "no.such.feature=1"],
      ["downgrade", "--feature", "metadata.version=20", "--dry-run"]
    ]
    for (const args of cases) {
      const [o, k] = await Promise.all([features(oursBootstrap, args), features(kafka.bootstrap, args)])
      const kafkaSays = masked(printed(k))
      expect(kafkaSays, `Kafka: ${args.join(" ")}`).toMatch(/^(Could not|Can not) /)
      expect(masked(printed(o)), args.join(" ")).toBe(kafkaSays)
    }
    const before = await finalized()
    const dry = await features(oursBootstrap, ["downgrade", "--feature", "mirror.version=0", "--dry-run"])
    expect(printed(dry)).toBe("mirror.version can be downgraded to 0.")
    expect(await finalized()).toEqual(before)
  })

  it("mirror.version goes down to 0 and back up to 1", async () => {
    const down = await features(oursBootstrap, ["downgrade", "--feature", "mirror.version=0"])
    expect(printed(down)).toBe("mirror.version was downgraded to 0.")
    expect((await finalized()).get("mirror.version")).toBeUndefined()
    const up = await features(oursBootstrap, ["upgrade", "--feature", "mirror.version=1"])
    expect(printed(up)).toBe("mirror.version was upgraded to 1.")
    expect((await finalized()).get("mirror.version")).toBe(1)
  })
})
