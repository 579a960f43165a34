/**
 * The rest of Apache Kafka 4.4's API surface, against our `--embedded 3` cluster and a Kafka 4.4 node in the
 * same test, with Kafka's own tools: delegation tokens refused as by Kafka without a secret key (same
 * exception, same non-zero exit), client quotas validated, stored and described like Kafka (every quota key), `kafka-cluster unregister` of an unknown id, ListConfigResources and `kafka-client-metrics
 * --list`, share and streams groups (not advertised by us; Kafka with share.version/streams.version off
 * still advertises them and answers UNSUPPORTED_VERSION), and a well-formed frame of an API neither side
 * advertises closing the connection on both.
 */
import { Connection } from "@clustermirror/client"
import { ApiVersions, CreateTopics, ListConfigResources } from "@clustermirror/protocol"
import { ApacheKafka, JavaTools, KafkaPeer, Ports, ServerProcess } from "@clustermirror/testkit"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const TOOLS = {
  delegationTokens: "org.apache.kafka.tools.DelegationTokenCommand",
  cluster: "org.apache.kafka.tools.ClusterTool",
  clientMetrics: "org.apache.kafka.tools.ClientMetricsCommand",
  shareGroups: "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
  streamsGroups: "org.apache.kafka.tools.streams.StreamsGroupCommand",
  features: "org.apache.kafka.tools.FeatureCommand"
} as const

/** The first line of a tool's output naming a Kafka exception (`org.apache.kafka.common.errors.X: message`). */
const exceptionLine = (output: string): string | undefined => {
  for (const line of output.split("\n")) {
    const m = /(org\.apache\.kafka\.common\.errors\.\w+: .*)$/.exec(line.trim())
    if (m !== null) return m[1]
  }
  return undefined
}

/**
 * Sends one request frame of `apiKey` v`version` (header v2) with `body` (default: a flexible body with no
 * fields); resolves with what the server did.
 */
const rawFrame = (
  port: number,
  apiKey: number,
  version: number,
  body: Buffer = Buffer.from([0])
): Promise<"closed" | "answered"> =>
  new Promise((resolve, reject) => {
    const clientId = Buffer.from("api-surface")
    // Request header v2: key, version, correlation id, client id, no tagged fields.
    const header = Buffer.alloc(10)
    header.writeInt16BE(apiKey, 0)
    header.writeInt16BE(version, 2)
    header.writeInt32BE(7, 4)
    header.writeInt16BE(clientId.length, 8)
    const frame = Buffer.concat([header, clientId, Buffer.from([0]), body])
    const size = Buffer.alloc(4)
    size.writeInt32BE(frame.length)
    const socket = net.connect(port, "127.0.0.1", () => socket.write(Buffer.concat([size, frame])))
    socket.on("data", () => {
      socket.destroy()
      resolve("answered")
    })
    socket.on("close", () => resolve("closed"))
    socket.on("error", reject)
  })

describe("Kafka 4.4's API surface: ours and Kafka's side by side", () => {
  let ours: ServerProcess.ServerHandle | undefined
  let kafka: ApacheKafka.KafkaNode | undefined
  let oursBootstrap: string
  let kafkaBootstrap: string
  const dir = mkdtempSync(join(tmpdir(), "cm-api-surface-"))
  const noConfig = join(dir, "empty.properties")

  beforeAll(async () => {
    writeFileSync(noConfig, "")
    await KafkaPeer.libs()
    const port = await Ports.freePort()
    const started = await Promise.allSettled([
      ServerProcess.start({
        tempPrefix: "cm-api-surface-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        config: { ...ServerProcess.TEST_DEFAULTS }
      }).then((s) => (ours = s)),
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES }
      }).then((k) => (kafka = k))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    oursBootstrap = ours!.bootstrap
    kafkaBootstrap = kafka!.bootstrap
    // Kafka as it runs with the share and streams group features off, which is what we implement.
    JavaTools.expectSuccess(
      "kafka-features disable",
      await JavaTools.run(TOOLS.features, [
        "--bootstrap-server",
        kafkaBootstrap,
        "disable",
        "--feature",
        "share.version",
        "--feature",
        "streams.version"
      ])
    )
  }, 180_000)

  afterAll(async () => {
    await Promise.allSettled([ours?.stop(), kafka?.stop()])
    rmSync(dir, { recursive: true, force: true })
  })

  /** Runs the same tool against Kafka and against us, at once. */
  const both = (mainClass: string, args: ReadonlyArray<string>) =>
    Promise.all([
      JavaTools.run(mainClass, ["--bootstrap-server", kafkaBootstrap, ...args]),
      JavaTools.run(mainClass, ["--bootstrap-server", oursBootstrap, ...args])
    ])

  const withConnection = async <A>(bootstrap: string, f: (c: Connection.Connection) => Promise<A>): Promise<A> => {
    const [host, port] = bootstrap.split(":")
    const c = await Connection.open({ host: host!, port: Number(port), requestTimeoutMs: 30_000 })
    try {
      return await f(c)
    } finally {
      await c.close()
    }
  }

  it("advertises the delegation token, client quota, UnregisterBroker and ListConfigResources versions Kafka does", async () => {
    const table = (b: string) =>
      withConnection(b, async (c) => {
        const res = await c.request(ApiVersions.api, 3, {
          clientSoftwareName: "api-surface",
          clientSoftwareVersion: "1"
        })
        return new Map(res.apiKeys.map((k) => [k.apiKey, `${k.minVersion}-${k.maxVersion}`]))
      })
    const [theirs, mine] = await Promise.all([table(kafkaBootstrap), table(oursBootstrap)])
    for (const key of [38, 39, 40, 41, 48, 49, 64, 74])
      expect(`${key}: ${mine.get(key)}`).toBe(`${key}: ${theirs.get(key)}`)
    // Share groups, streams groups and the Raft voter APIs are not ours to serve.
    for (const key of [76, 77, 78, 79, 80, 81, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93])
      expect(mine.has(key)).toBe(false)
  })

  it("refuses every delegation token operation as Kafka without a secret key, with the same error and exit", async () => {
    for (const op of [
      ["--create", "--max-life-time-period", "-1", "--renewer-principal", "User:renewer"],
      ["--describe"],
      ["--renew", "--hmac", "aG1hYw==", "--renew-time-period", "-1"],
      ["--expire", "--hmac", "aG1hYw==", "--expiry-time-period", "-1"]
    ]) {
      const [k, o] = await both(TOOLS.delegationTokens, ["--command-config", noConfig, ...op])
      expect(k.code, `${op[0]} on Kafka: ${k.stdout}${k.stderr}`).not.toBe(0)
      expect(o.code, `${op[0]} on ours: ${o.stdout}${o.stderr}`).toBe(k.code)
      const expected = exceptionLine(k.stdout + k.stderr)
      expect(expected).toContain("UnsupportedByAuthenticationException: Delegation Token requests are not allowed")
      expect(exceptionLine(o.stdout + o.stderr)).toBe(expected)
    }
  }, 120_000)

  it("validates client quotas like Kafka and stores and describes every quota key as Kafka", async () => {
    const configs = (args: ReadonlyArray<string>) => both(JavaTools.MainClass.configs, args)
    // The same validation errors as Kafka.
    const [kNegative, oNegative] = await configs([
      "--alter",
      "--entity-type",
      "users",
      "--entity-name",
      "quota-user",
      "--add-config",
      "producer_byte_rate=-5"
    ])
    expect(kNegative.code).not.toBe(0)
    expect(oNegative.code).toBe(kNegative.code)
    expect(exceptionLine(oNegative.stdout + oNegative.stderr)).toBe(exceptionLine(kNegative.stdout + kNegative.stderr))
    expect(exceptionLine(oNegative.stdout + oNegative.stderr)).toContain(
      "Quota producer_byte_rate must be greater than 0"
    )

    // The byte rates are stored and described as on Kafka.
    for (const [type, name, quota] of [
      ["users", "quota-user", "producer_byte_rate=1048576"],
      ["clients", "quota-client", "consumer_byte_rate=1048576"]
    ] as const) {
      const [k, o] = await configs(["--alter", "--entity-type", type, "--entity-name", name, "--add-config", quota])
      expect(k.code, k.stderr).toBe(0)
      expect(o.code, o.stdout + o.stderr).toBe(0)
      expect(o.stdout).toBe(k.stdout)
    }
    for (const [type, name] of [
      ["users", "quota-user"],
      ["clients", "quota-client"]
    ] as const) {
      const [k, o] = await configs(["--describe", "--entity-type", type, "--entity-name", name])
      expect(o.code).toBe(0)
      expect(o.stdout).toBe(k.stdout)
    }
    // The other quota keys are stored and described as on Kafka too (an IP no test connects from).
    for (const [type, name, quota] of [
      ["users", "quota-user", "request_percentage=50"],
      ["clients", "quota-client", "controller_mutation_rate=2.5"],
      ["ips", "10.20.30.40", "connection_creation_rate=10"]
    ] as const) {
      const [k, o] = await configs(["--alter", "--entity-type", type, "--entity-name", name, "--add-config", quota])
      expect(k.code, k.stderr).toBe(0)
      expect(o.code, o.stdout + o.stderr).toBe(0)
      expect(o.stdout).toBe(k.stdout)
      const [kd, od] = await configs(["--describe", "--entity-type", type, "--entity-name", name])
      expect(od.stdout).toBe(kd.stdout)
    }
    // Kafka's validation of their values: an IP's rate is a whole number, the others' keys are not an IP's.
    for (const [type, name, quota] of [
      ["ips", "10.20.30.40", "connection_creation_rate=1.5"],
      ["ips", "10.20.30.40", "request_percentage=5"]
    ] as const) {
      const [k, o] = await configs(["--alter", "--entity-type", type, "--entity-name", name, "--add-config", quota])
      expect(k.code).not.toBe(0)
      expect(o.code).toBe(k.code)
      expect(exceptionLine(o.stdout + o.stderr)).toBe(exceptionLine(k.stdout + k.stderr))
    }
    const [kPercent, oPercent] = await configs([
      ...["--alter", "--entity-type", "users", "--entity-name", "quota-user", "--delete-config", "request_percentage"]
    ])
    expect(oPercent.code, oPercent.stdout + oPercent.stderr).toBe(kPercent.code)
    // Removing a quota succeeds on both; on an entity without quotas the tool refuses the same way on both.
    const remove = ["--alter", "--entity-type", "users", "--delete-config", "producer_byte_rate"]
    const [kRemoved, oRemoved] = await configs([...remove, "--entity-name", "quota-user"])
    expect(kRemoved.code).toBe(0)
    expect(oRemoved.code, oRemoved.stdout + oRemoved.stderr).toBe(0)
    const [, oGone] = await configs(["--describe", "--entity-type", "users", "--entity-name", "quota-user"])
    expect(oGone.stdout.trim()).toBe("")
    const [kNone, oNone] = await configs([...remove, "--entity-name", "no-quota-user"])
    expect(oNone.code).toBe(kNone.code)
    expect(oNone.stdout + oNone.stderr).toBe(kNone.stdout + kNone.stderr)
  }, 120_000)

  it("kafka-cluster unregister of an unknown broker id fails as on Kafka", async () => {
    const unregister = (b: string) => JavaTools.run(TOOLS.cluster, ["unregister", "--bootstrap-server", b, "--id", "7"])
    const [k, o] = await Promise.all([unregister(kafkaBootstrap), unregister(oursBootstrap)])
    expect(k.code).not.toBe(0)
    expect(o.code).toBe(k.code)
    expect(exceptionLine(o.stdout + o.stderr)).toBe(exceptionLine(k.stdout + k.stderr))
    expect(exceptionLine(o.stdout + o.stderr)).toBe(
      "org.apache.kafka.common.errors.BrokerIdNotRegisteredException: Broker ID 7 is not currently registered"
    )
  }, 60_000)

  it("lists config resources from the metadata; kafka-client-metrics --list lists none, as Kafka", async () => {
    const topic = "api-surface-topic"
    const list = (b: string) =>
      withConnection(b, async (c) => {
        const created = await c.request(CreateTopics.api, 7, {
          topics: [{ name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
          timeoutMs: 30_000,
          validateOnly: false
        })
        expect(created.topics[0]!.errorCode).toBe(0)
        const all = await c.request(ListConfigResources.api, 1, { resourceTypes: [] })
        const some = await c.request(ListConfigResources.api, 1, { resourceTypes: [2, 4] })
        const bad = await c.request(ListConfigResources.api, 1, { resourceTypes: [1] })
        const loggers = await c.request(ListConfigResources.api, 1, { resourceTypes: [8] })
        const v0 = await c.request(ListConfigResources.api, 0, { resourceTypes: [] })
        return { all, some, bad, loggers, v0 }
      })
    const [k, o] = await Promise.all([list(kafkaBootstrap), list(oursBootstrap)])
    const names = (r: ListConfigResources.Response, type: number) =>
      r.configResources.filter((c) => c.resourceType === type).map((c) => c.resourceName)
    for (const r of [k.all, o.all, k.some, o.some]) {
      expect(r.errorCode).toBe(0)
      expect(names(r, 2)).toContain(topic)
    }
    expect(names(o.some, 4)).toEqual(["1", "2", "3"])
    expect(names(k.some, 4)).toEqual([String(kafka!.nodeId)])
    expect(new Set(o.some.configResources.map((c) => c.resourceType))).toEqual(
      new Set(k.some.configResources.map((c) => c.resourceType))
    )
    expect(o.bad.errorCode).toBe(k.bad.errorCode)
    expect(o.loggers.errorCode).toBe(k.loggers.errorCode)
    expect([k.v0.configResources, o.v0.configResources]).toEqual([[], []])

    const [kMetrics, oMetrics] = await both(TOOLS.clientMetrics, ["--list"])
    expect([kMetrics.code, kMetrics.stdout.trim()]).toEqual([0, ""])
    expect([oMetrics.code, oMetrics.stdout.trim()]).toEqual([0, ""])
  }, 60_000)

  it("share and streams group tools fail with UnsupportedVersionException on both", async () => {
    const [kDescribe, oDescribe] = await both(TOOLS.shareGroups, ["--describe", "--group", "share-group"])
    expect(exceptionLine(kDescribe.stdout + kDescribe.stderr)).toMatch(/UnsupportedVersionException/)
    expect(exceptionLine(oDescribe.stdout + oDescribe.stderr)).toBe(
      "org.apache.kafka.common.errors.UnsupportedVersionException: The node does not support SHARE_GROUP_DESCRIBE"
    )
    expect(oDescribe.code).toBe(kDescribe.code)
    const [kList, oList] = await both(TOOLS.shareGroups, ["--list"])
    expect([oList.code, oList.stdout]).toEqual([kList.code, kList.stdout])
    const [kStreams, oStreams] = await both(TOOLS.streamsGroups, ["--describe", "--group", "streams-group"])
    expect(exceptionLine(kStreams.stdout + kStreams.stderr)).toMatch(/UnsupportedVersionException/)
    expect(exceptionLine(oStreams.stdout + oStreams.stderr)).toMatch(/UnsupportedVersionException/)
    expect(oStreams.code).toBe(kStreams.code)
  }, 90_000)

  it("a well-formed request of an API not advertised closes the connection, as on Kafka", async () => {
    const kafkaPort = kafka!.port
    const oursPort = ours!.port
    // GetTelemetrySubscriptions (71): neither side advertises it.
    expect(await rawFrame(kafkaPort, 71, 0)).toBe("closed")
    expect(await rawFrame(oursPort, 71, 0)).toBe("closed")
    // ShareGroupHeartbeat (76) at a version neither serves; and on ours it is not advertised at all.
    expect(await rawFrame(kafkaPort, 76, 0)).toBe("closed")
    expect(await rawFrame(oursPort, 76, 1)).toBe("closed")
    // The same frame shape for an advertised API is answered: ApiVersions v3 naming the client "a" version "1".
    const apiVersionsV3 = Buffer.from([2, 0x61, 2, 0x31, 0])
    expect(await rawFrame(oursPort, ApiVersions.api.key, 3, apiVersionsV3)).toBe("answered")
    expect(await rawFrame(kafkaPort, ApiVersions.api.key, 3, apiVersionsV3)).toBe("answered")
  })
})
