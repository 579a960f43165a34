/**
 * The request, controller mutation and IP connection quotas end to end with Kafka's own tools and
 * clients, on a controller process and a broker process:
 * - `kafka-configs` sets `request_percentage` on a (user, client-id): `kafka-producer-perf-test` with that
 *   client-id reports produce throttle time (the broker throttled it), one with another client-id none.
 * - `controller_mutation_rate=1` on a client-id with `controller.quota.window.num=5` (a burst of 5):
 *   `kafka-topics --create --partitions 10` passes (the bucket goes into debt), then Kafka's Admin client
 *   with retries off gets THROTTLING_QUOTA_EXCEEDED (`ThrottlingQuotaExceededException`) with a throttle
 *   time for a second 10-partition topic, which is not created.
 * - `connection_creation_rate=2` for 127.0.0.1: of 30 quick connections from 127.0.0.1 some are held and
 *   closed unanswered, while 30 from 127.0.0.2 (an IP without a quota) are all answered.
 * - `kafka-configs --describe --entity-type users/clients/ips` shows the values.
 * Assertions are on throttling happening, never on timings.
 */
import { Api, ApiVersions, Header } from "@clustermirror/protocol"
import { CreateTopicNoRetry, JavaTools, KafkaPeer } from "@clustermirror/testkit"
import { Either } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, startCluster } from "./harness.js"

const PERF_JVM = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m"]

/** Opens a connection from `localAddress`, sends ApiVersions, and says whether it was answered or closed. */
const probe = (host: string, port: number, localAddress: string) =>
  new Promise<"answered" | "closed">((resolve) => {
    const socket = net.connect({ host, port, localAddress })
    const decoder = new Header.FrameDecoder()
    socket.on("connect", () =>
      socket.write(
        Either.getOrThrow(
          Api.encodeRequest(ApiVersions.api, 3, 1, "probe", { clientSoftwareName: "probe", clientSoftwareVersion: "1" })
        )
      )
    )
    socket.on("data", (chunk) => {
      const frames = decoder.push(chunk)
      if (Either.isRight(frames) && frames.right.length > 0) {
        socket.destroy()
        resolve("answered")
      }
    })
    socket.on("close", () => resolve("closed"))
    socket.on("error", () => resolve("closed"))
  })

describe("request, controller mutation and connection quotas", () => {
  let cluster: Cluster
  let bootstrap: string
  let dir: string

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-quota-types-"))
    await KafkaPeer.libs()
    cluster = await startCluster({
      brokers: 1,
      controllerConfig: { "default.replication.factor": 1, "num.partitions": 1 },
      brokerConfig: {
        "offsets.topic.replication.factor": 1,
        "default.replication.factor": 1,
        "num.partitions": 1,
        "controller.quota.window.num": 5
      }
    })
    bootstrap = cluster.brokers[0]!.bootstrap
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  const configs = async (args: ReadonlyArray<string>) =>
    JavaTools.expectSuccess(
      `kafka-configs ${args.join(" ")}`,
      await JavaTools.configs(["--bootstrap-server", bootstrap, ...args])
    )
  const produceThrottleMax = async (clientId: string) => {
    const r = JavaTools.expectSuccess(
      `kafka-producer-perf-test as ${clientId}`,
      await JavaTools.producerPerf(
        [
          ...["--topic", `requests-${clientId}`, "--num-records", "10", "--record-size", "100", "--throughput", "-1"],
          "--print-metrics",
          ...["--producer-props", `bootstrap.servers=${bootstrap}`, `client.id=${clientId}`, "acks=1"],
          ...["batch.size=1", "linger.ms=0"]
        ],
        { jvmFlags: PERF_JVM, timeoutMs: 120_000 }
      )
    )
    const m = new RegExp(`produce-throttle-time-max:\\{client-id=${clientId}\\}\\s*:\\s*([\\d.]+)`).exec(r.stdout)
    expect(m, r.stdout).not.toBeNull()
    return Number(m![1])
  }

  it("throttles a (user, client-id) over its request_percentage, and not another client-id", async () => {
    await configs([
      ...["--alter", "--add-config", "request_percentage=0.01"],
      ...["--entity-type", "users", "--entity-name", "ANONYMOUS", "--entity-type", "clients", "--entity-name", "busy"]
    ])
    const described = await configs([
      ...["--describe", "--entity-type", "users", "--entity-name", "ANONYMOUS"],
      ...["--entity-type", "clients", "--entity-name", "busy"]
    ])
    expect(described.stdout.trim()).toBe(
      "Quota configs for user-principal 'ANONYMOUS', client-id 'busy' are request_percentage=0.01"
    )
    expect(await produceThrottleMax("busy")).toBeGreaterThan(0)
    expect(await produceThrottleMax("free")).toBe(0)
  }, 240_000)

  it("refuses a topic over the controller_mutation_rate with THROTTLING_QUOTA_EXCEEDED", async () => {
    await configs([
      "--alter",
      "--add-config",
      "controller_mutation_rate=1",
      "--entity-type",
      "clients",
      "--entity-name",
      "admin"
    ])
    const described = await configs(["--describe", "--entity-type", "clients", "--entity-name", "admin"])
    expect(described.stdout.trim()).toBe("Quota configs for client-id 'admin' are controller_mutation_rate=1.0")
    const props = path.join(dir, "admin.properties")
    fs.writeFileSync(props, "client.id=admin\n")
    // A burst of 1/s x 5 windows: the first 10 partitions pass (the bucket goes to -5) ...
    JavaTools.expectSuccess(
      "kafka-topics --create mutations-1",
      await JavaTools.kafkaTopics([
        ...["--bootstrap-server", bootstrap, "--command-config", props],
        ...["--create", "--topic", "mutations-1", "--partitions", "10", "--replication-factor", "1"]
      ])
    )
    // ... and the next is refused while it is in debt.
    const second = await CreateTopicNoRetry.create({
      bootstrap,
      clientId: "admin",
      topic: "mutations-2",
      partitions: 10
    })
    expect(second).toMatchObject({ _tag: "Failed", exception: "ThrottlingQuotaExceededException" })
    expect(second._tag === "Failed" && second.throttleTimeMs).toBeGreaterThan(0)
    // Another client-id is not limited.
    expect(
      await CreateTopicNoRetry.create({ bootstrap, clientId: "other", topic: "mutations-3", partitions: 10 })
    ).toEqual({
      _tag: "Created"
    })
    const listed = JavaTools.expectSuccess(
      "kafka-topics --list",
      await JavaTools.kafkaTopics(["--bootstrap-server", bootstrap, "--list"])
    )
    expect(JavaTools.lines(listed.stdout).filter((t) => t.startsWith("mutations-"))).toEqual([
      "mutations-1",
      "mutations-3"
    ])
  }, 240_000)

  it("holds and closes connections over an IP's connection_creation_rate, not those of another IP", async () => {
    const [host, port] = [bootstrap.split(":")[0]!, Number(bootstrap.split(":")[1])]
    await configs([
      "--alter",
      "--add-config",
      "connection_creation_rate=2",
      "--entity-type",
      "ips",
      "--entity-name",
      "127.0.0.1"
    ])
    const described = await configs(["--describe", "--entity-type", "ips"])
    expect(described.stdout.trim()).toMatch(
      /^Quota configs for ip '127\.0\.0\.1' are connection_creation_rate=2(\.0)?$/
    )
    // 2/s over the first 10 s lets about 20 through; the rest are held, then closed without an answer.
    const limited = await Promise.all(Array.from({ length: 30 }, () => probe(host, port, "127.0.0.1")))
    const free = await Promise.all(Array.from({ length: 30 }, () => probe(host, port, "127.0.0.2")))
    expect(limited.filter((r) => r === "closed").length).toBeGreaterThan(0)
    expect(limited.filter((r) => r === "answered").length).toBeGreaterThan(0)
    expect(free.filter((r) => r === "closed")).toEqual([])
  }, 120_000)
})
